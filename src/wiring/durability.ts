/**
 * What a 200 promises, picked from the flags (src/core/durability.ts): memory only (no Redis; a
 * restart loses every queue and message), a Persistence (every reply waits for its changes to be
 * in Redis, and a failed write stops serving until the state is reloaded into a new store), or,
 * with --leader-election, an ActivePassive (the same, per leader term, fenced by the term's token).
 *
 * Loading ioredis, the Lua scripts and the persistence and HA code took about a fifth of a
 * memory-only start (spawn to first reply): they are imported only when Redis is configured.
 */
import { hostname } from 'node:os';
import { memoryOnly, type Durability } from '../core/durability.js';
import type { Config } from '../config.js';
import type { ActivePassive } from '../ha/active.js';
import type { Logger } from '../log.js';
import { layoutFor } from '../persistence/layout.js';
import type { Persistence } from '../persistence/persistence.js';
import type { RedisTarget } from '../persistence/redis.js';
import { SqsError } from '../sqs/errors.js';
import type { Owners } from './owners.js';
import type { ServedStore } from './stores.js';

export interface Durable {
  readonly durability: Durability;
  /** Without leader election, with Redis. */
  readonly persistence?: Persistence;
  /** With leader election. */
  readonly ha?: ActivePassive;
  /** With --active-active: this process's shards, the router and the forwarding channel. */
  readonly owners?: Owners;
  /** `<hostname>-<pid>`: the leader lock's holder and the Redis connections' names. */
  readonly instanceId: string;
}

export interface DurableOptions {
  readonly stores: ServedStore;
  readonly logger: Logger;
  /** What Redis holds cannot be loaded here (LayoutError, StoreTooBigError). */
  readonly fatal: (e: Error) => void;
  readonly observeReplicaWait: (seconds: number, acknowledged: boolean) => void;
}

/** Servers started in this process so far. */
let started = 0;

export async function durabilityFor(config: Config, opts: DurableOptions): Promise<Durable> {
  // A second server started in the same process (startServer, twice) must not share the first's id.
  const instanceId = `${hostname()}-${process.pid}${++started === 1 ? '' : `-${started}`}`;
  const target = redisTarget(config);
  if (target === undefined) return { durability: memoryOnly, instanceId };
  const { stores, logger } = opts;
  // What a Persistence and an ActivePassive share: the stores they load into and how they fail.
  const common = {
    layout: layoutFor(config.redisPrefix),
    createStore: stores.newStore,
    onStore: stores.replace,
    onFatal: opts.fatal,
    replicaWait:
      config.redisWaitReplicas === 0
        ? undefined
        : {
            count: config.redisWaitReplicas,
            timeoutMs: config.redisWaitTimeout,
            aof: config.redisWaitAof,
            observe: opts.observeReplicaWait,
          },
  };
  if (config.activeActive) {
    const { ownersFor } = await import('./owners.js');
    const owners = await ownersFor(config, {
      stores,
      logger,
      instanceId,
      target,
      layout: common.layout,
      replicaWait: common.replicaWait,
      fatal: opts.fatal,
    });
    return { durability: owners.persistence, persistence: owners.persistence, owners, instanceId };
  }
  // The marks an earlier active/active run left (relays from other owners) are pruned in every
  // mode that reads them: nothing else would ever delete them (src/persistence/marks.ts).
  const { PRUNE_EVERY_MS } = await import('../persistence/marks.js');
  if (!config.leaderElection) {
    const [{ Persistence }, { createClient }] = await Promise.all([
      import('../persistence/persistence.js'),
      import('../persistence/redis.js'),
    ]);
    const persistence = new Persistence({
      ...common,
      pruneMarksEveryMs: PRUNE_EVERY_MS,
      redis: createClient(target),
      unavailable: () =>
        new SqsError('ServiceUnavailable', 'The change could not be stored durably; please retry.'),
      onDiverged: () => stores.replace(stores.newStore()),
      log: logger.child({ component: 'persistence' }),
    });
    return { durability: persistence, persistence, instanceId };
  }
  // Each leader term loads the state with a Persistence of its own (src/ha/active.ts); the
  // elector starts once both planes listen.
  const [{ ActivePassive }, { createClient }] = await Promise.all([
    import('../ha/active.js'),
    import('../persistence/redis.js'),
  ]);
  const connection = (role: string): ReturnType<typeof createClient> =>
    createClient({ ...target, connectionName: `shared-sqs:${role}:${instanceId}` });
  const ha = new ActivePassive({
    ...common,
    redis: connection('data'),
    lockRedis: connection('lock'),
    subscriber: connection('events'),
    instanceId,
    ttlMs: config.leaderTtl,
    intervalMs: config.leaderInterval,
    pruneMarksEveryMs: PRUNE_EVERY_MS,
    unavailable: () =>
      new SqsError('ServiceUnavailable', 'This instance is not serving; retry against the active one.'),
    onDrop: () => stores.replace(stores.newStore()),
    onDrain: () => stores.services.poller.closeAll(),
    log: logger.child({ component: 'ha' }),
  });
  return { durability: ha, ha, instanceId };
}

/** Where Redis is, from the flags; undefined: memory only. */
function redisTarget(config: Config): RedisTarget | undefined {
  const { redisAddr, redisUrl, redisSentinels, redisCluster, redisPassword } = config;
  if (redisCluster !== undefined) return { cluster: redisCluster, password: redisPassword };
  if (redisSentinels !== undefined) {
    return { sentinels: redisSentinels, masterName: config.redisMasterName, password: redisPassword };
  }
  const url = redisUrl ?? redisAddr;
  return url === undefined ? undefined : { url, password: redisPassword };
}
