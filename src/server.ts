import { hostname } from 'node:os';
import type { AddressInfo } from 'node:net';
import { getHeapStatistics } from 'node:v8';
import { systemClock, type Clock } from './core/clock.js';
import { memoryOnly, type Durability } from './core/durability.js';
import { PURGE_INTERVAL_MS } from './core/limits.js';
import { QueueStore } from './core/store.js';
import { formatBytes, type Config } from './config.js';
import { MessageMetrics } from './http/message-metrics.js';
import { deadLetterStats, keyOwnerIn, memoryStats, queueStats, tenantLabel } from './http/tenancy.js';
import { applyStartupConfig, StartupConfigError, type StartupConfig } from './startup-config.js';
import { buildDataPlane } from './http/data.js';
import type { WarmUp } from './ha/warmup.js';
import type { ActivePassive } from './ha/active.js';
import { Metrics } from './http/metrics.js';
import { createLogger, flushLogger } from './log.js';
import { keysFor } from './persistence/keys.js';
import type { Persistence } from './persistence/persistence.js';
import type { RedisTarget } from './persistence/redis.js';
import { SqsError } from './sqs/errors.js';
import { servicesFor, type SqsServices } from './sqs/service.js';

export interface Server {
  /** The data plane (SQS API), as `http://host:port`. */
  readonly url: string;
  /** The control plane (/health, /ready, /metrics, /admin). */
  readonly controlUrl: string;
  /** Stops everything started: the election (after a drain), both planes, Redis, the logger. */
  stop(): Promise<void>;
}

export interface StartOptions {
  /**
   * What Redis holds cannot be loaded here (LayoutError, StoreTooBigError): it is logged, the
   * server stops, and then this is called. Default: exit 1, for the command line.
   */
  readonly onFatal?: (e: Error) => void;
  /** The time SQS rules run on (default: the system's); a test suite moves it instead of sleeping. */
  readonly clock?: Clock;
}

/**
 * Wiring: one store, one long-poll scheduler, one {@link Durability}, two planes. Used by the
 * command line (src/main.ts) and by `startServer` (src/index.ts).
 *
 * The Durability says what a 200 promises (src/core/durability.ts): memory only (a restart loses
 * every queue and message), a Persistence (every reply waits for its changes to be in Redis, and a
 * failed write stops serving until the state is reloaded from Redis into a new store), or an
 * ActivePassive (the same, per leader term). The store and its long-poll scheduler sit behind
 * `services`, whose getters the data plane reads on every request: a swap of stores is one
 * assignment, and no request ever sees half of it.
 */
export async function start(config: Config, options: StartOptions = {}): Promise<Server> {
  const logger = createLogger(config.logLevel);
  const clock = options.clock ?? systemClock;
  const newStore = (): QueueStore => {
    const store: QueueStore = new QueueStore(clock, {
      deletedRecentlyMs: config.queueDeletedRecently ? 60_000 : 0,
      purgeCooldownMs: config.purgeCooldown ? PURGE_INTERVAL_MS : 0,
      maxMemory: config.maxMemory,
      onRefused: (accountId, scope) => {
        metrics.observeRefusedSend(tenantLabel(store, accountId), scope);
      },
    });
    return store;
  };
  // --config: what it names is created in every store this process serves (created or loaded).
  const startup = await readConfigFile(config);
  let firstStore = true;
  let current = serving(newStore());
  function serving(store: QueueStore): SqsServices {
    if (startup !== undefined) {
      try {
        applyStartupConfig(store, startup, logger.child({ component: 'config' }));
      } catch (e) {
        // At start (an empty store) a bad file stops the process; later it conflicts with state.
        if (firstStore || !(e instanceof StartupConfigError)) throw e;
        logger.error({ error: e.message }, '--config could not be applied to the loaded state');
      }
    }
    firstStore = false;
    // The runner picks up move tasks that were RUNNING in a store loaded from Redis.
    return servicesFor(store, clock);
  }
  const services: SqsServices = {
    get store() {
      return current.store;
    },
    get poller() {
      return current.poller;
    },
    get mover() {
      return current.mover;
    },
    clock,
  };
  const metrics = new Metrics();
  metrics.setQueueStatsProvider(() => {
    const now = clock.now();
    return queueStats(current.store, now);
  });
  const messageMetrics = new MessageMetrics(metrics);
  messageMetrics.setDeadLetterProvider(() => deadLetterStats(current.store));
  metrics.setLongPollWaitersProvider(() => current.poller.waiting);
  metrics.setMemoryStatsProvider(() => memoryStats(current.store));

  /** Serves `store` from now on; waiting long polls of the store being replaced are answered (empty). */
  function replaceStore(store: QueueStore): void {
    current.poller.closeAll();
    current.mover.close();
    current = serving(store);
  }

  const target = redisTarget(config);
  const replicaWait =
    config.redisWaitReplicas === 0
      ? undefined
      : {
          count: config.redisWaitReplicas,
          timeoutMs: config.redisWaitTimeoutMs,
          aof: config.redisWaitAof,
          observe: (seconds: number, acknowledged: boolean) =>
            messageMetrics.observeReplicaWait(seconds, acknowledged),
        };
  const instanceId = `${hostname()}-${process.pid}`;
  // Loading ioredis, the Lua scripts and the persistence and HA code took about a fifth of a
  // memory-only start (spawn to first reply): they are imported only when Redis is configured.
  let persistence: Persistence | undefined;
  let ha: ActivePassive | undefined;
  if (target !== undefined && !config.leaderElection) {
    const [{ Persistence }, { createRedis }] = await Promise.all([
      import('./persistence/persistence.js'),
      import('./persistence/redis.js'),
    ]);
    persistence = new Persistence({
      redis: createRedis(target),
      keys: keysFor(config.redisPrefix),
      createStore: newStore,
      unavailable: () =>
        new SqsError('ServiceUnavailable', 'The change could not be stored durably; please retry.'),
      onStore: replaceStore,
      onDiverged: () => replaceStore(newStore()),
      onFatal: (e) => fatal(e),
      log: logger.child({ component: 'persistence' }),
      replicaWait,
    });
  }
  if (target !== undefined && config.leaderElection) {
    // Active/passive (src/ha/active.ts): each leader term loads the state with a Persistence of its
    // own, fenced by the term's token; the elector starts once both planes listen.
    const [{ ActivePassive }, { createRedis }] = await Promise.all([
      import('./ha/active.js'),
      import('./persistence/redis.js'),
    ]);
    const connection = (role: string): ReturnType<typeof createRedis> =>
      createRedis({ ...target, connectionName: `shared-sqs:${role}:${instanceId}` });
    ha = new ActivePassive({
      redis: connection('data'),
      lockRedis: connection('lock'),
      subscriber: connection('events'),
      keys: keysFor(config.redisPrefix),
      instanceId,
      ttlMs: config.leaderTtlMs,
      intervalMs: config.leaderIntervalMs,
      createStore: newStore,
      unavailable: () =>
        new SqsError('ServiceUnavailable', 'This instance is not serving; retry against the active one.'),
      onStore: replaceStore,
      onDrop: () => replaceStore(newStore()),
      onDrain: () => current.poller.closeAll(),
      onFatal: (e) => fatal(e),
      log: logger.child({ component: 'ha' }),
      replicaWait,
    });
  }
  if (ha !== undefined) metrics.setLeaderStatsProvider(() => ha.stats());
  metrics.setLoadingProvider(() => (ha ?? persistence)?.loading);
  const durability: Durability = ha ?? persistence ?? memoryOnly;

  const data = buildDataPlane({
    services,
    logger: logger.child({ plane: 'data' }),
    accountId: config.accountId,
    region: config.region,
    baseUrl: config.baseUrl,
    corsOrigins: config.corsOrigins,
    observe: (action, protocol, status, seconds) => metrics.observeRequest(action, protocol, status, seconds),
    auth: { mode: config.auth, keyOwner: keyOwnerIn(() => current.store), now: () => clock.now() },
    onResult: (action, principal, queue, output) =>
      messageMetrics.countResult(
        action,
        principal.tenant ?? tenantLabel(current.store, principal.accountId),
        principal.region,
        queue,
        output,
      ),
    durability,
    observeCommit: (seconds, durable) => messageMetrics.observeCommit(seconds, durable),
  });
  if (ha !== undefined) {
    // Counts the requests that passed the gate, so that a drain knows when they are all answered.
    data.addHook('onRequest', (_req, reply, done) => {
      reply.raw.once('close', ha.enter());
      done();
    });
  }

  await data.listen({ port: config.port, host: config.host });
  // The control plane and the admin API (with its page and OpenAPI document) are loaded and built
  // once the data plane listens: a first SQS request is not kept waiting for them.
  const [{ buildControlPlane }, { registerAdminHa }, { registerAdmin }] = await Promise.all([
    import('./http/control.js'),
    import('./http/admin-ha.js'),
    import('./http/admin.js'),
  ]);
  const control = buildControlPlane({
    logger: logger.child({ plane: 'control' }),
    metrics,
    isReady: () => durability.serving,
  });
  registerAdminHa(control, { adminToken: config.adminToken, ha });
  registerAdmin(control, {
    adminToken: config.adminToken,
    services,
    messageTotals: messageMetrics,
    durability,
    baseUrl: config.baseUrl,
    defaultAccountId: config.accountId,
    defaultRegion: config.region,
  });
  await control.listen({ port: config.controlPort, host: config.host });
  // Loads prom-client and starts its process metrics, which nothing needed before (metrics.ts).
  metrics.build();
  logger.info(
    {
      port: config.port,
      controlPort: config.controlPort,
      host: config.host,
      persistence: durability.kind === 'memory' ? 'memory' : 'redis',
      leaderElection: ha !== undefined,
      ...(ha === undefined ? {} : { instanceId }),
      maxMemory: config.maxMemory,
      memoryBudget: `${formatBytes(config.maxMemory)} of a ${formatBytes(getHeapStatistics().heap_size_limit)} V8 heap limit`,
    },
    durability.kind === 'memory'
      ? 'shared-sqs serving (memory only: state is lost on restart)'
      : ha !== undefined
        ? 'shared-sqs listening as a follower: serving once it holds the leader lock'
        : 'shared-sqs listening: serving once the state is loaded from Redis (every change is written to Redis before it is acknowledged)',
  );

  if (config.dev) {
    logger.warn(
      { queueDeletedRecently: config.queueDeletedRecently, purgeCooldown: config.purgeCooldown },
      '--dev: a test-environment preset, not for production (AWS refuses a second purge or a deleted name for 60 s)',
    );
  }

  // A follower warms its code while it waits to lead, so that a takeover does not hand the full
  // load to a cold process; a serving instance does not, as its own traffic does it and the
  // warm-up would compete with it (src/ha/warmup.ts).
  let warmUp: WarmUp | undefined;
  if (ha !== undefined && config.warmupRequests > 0) {
    const leader = ha;
    const { startWarmUp } = await import('./ha/warmup.js');
    logger.info({ requests: config.warmupRequests }, 'warm-up started');
    warmUp = startWarmUp({
      requests: config.warmupRequests,
      accountId: config.accountId,
      region: config.region,
      until: () => leader.serving,
    });
    void warmUp.done.then(({ error, ...done }) => {
      if (error === undefined) logger.info(done, 'warm-up done');
      else logger.warn({ ...done, error }, 'warm-up failed: the first requests as leader may be slow');
    });
  }

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      await warmUp?.stop();
      // The leader drains, flushes, releases the lock and announces it before the planes close.
      await ha?.stop();
      logger.info('stopping: answering long polls, then closing both planes');
      // Waiting polls are answered first (with no messages), so close() does not wait 20 s on them.
      current.poller.closeAll();
      current.mover.close();
      await data.close();
      await persistence?.close();
      await control.close();
      await flushLogger(logger);
    })();
    return stopping;
  };
  /** What Redis holds cannot be loaded here (LayoutError, StoreTooBigError): one line, exit 1. */
  function fatal(e: Error): void {
    logger.fatal({ error: e.name }, `${e.message}: exiting`);
    // Also the one plain line a person starting it by hand reads, as for a failure before listening.
    console.error(`shared-sqs: ${e.message}`);
    void stop().finally(() => (options.onFatal ?? (() => process.exit(1)))(e));
  }
  ha?.start();
  // Loading runs with both planes listening: /ready answers 503 and /metrics shows the progress.
  void persistence?.start().then(
    () => undefined,
    (e: unknown) => {
      if (stopping === undefined) fatal(e instanceof Error ? e : new Error(String(e)));
    },
  );
  return { url: urlOf(data.server.address()), controlUrl: urlOf(control.server.address()), stop };
}

/** The URL a client on this host reaches a listening plane at. */
function urlOf(address: AddressInfo | string | null): string {
  if (address === null || typeof address === 'string') throw new Error(`not listening on TCP: ${address}`);
  const host =
    address.address === '0.0.0.0'
      ? '127.0.0.1'
      : address.address === '::'
        ? '[::1]'
        : address.family === 'IPv6'
          ? `[${address.address}]`
          : address.address;
  return `http://${host}:${address.port}`;
}

/** The --config file, read and checked (src/config-file.ts, loaded only when a file is given). */
export async function readConfigFile(config: Config): Promise<StartupConfig | undefined> {
  if (config.configFile === undefined) return undefined;
  const { loadConfigFile } = await import('./config-file.js');
  return await loadConfigFile(config.configFile, config);
}

/** Where Redis is, from the flags; undefined: memory only. */
function redisTarget(config: Config): RedisTarget | undefined {
  const { redisAddr, redisUrl, redisSentinels, redisPassword } = config;
  if (redisSentinels !== undefined) {
    return { sentinels: redisSentinels, masterName: config.redisMasterName, password: redisPassword };
  }
  const url = redisUrl ?? redisAddr;
  return url === undefined ? undefined : { url, password: redisPassword };
}
