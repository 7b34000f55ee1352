/**
 * `--active-active` (docs/operations.md, "Active/active"): every instance serves and routes, and
 * the 256 shards spread over the live ones. Assembled here from src/owners/:
 *
 * - membership, the shard map and the coordinator that writes it (instance.ts);
 * - the ShardOwner that takes and gives away this process's shards as the map says, with a
 *   Persistence that reads in only those (owner.ts, src/persistence/persistence.ts `owned`);
 * - the catalog mirror that lists the other processes' queues (src/persistence/catalog-mirror.ts),
 *   and the tenants mirror that brings their tenant and key changes (tenants-mirror.ts);
 * - the Router, the data plane's executor, and the forwarding channel it answers on (router.ts,
 *   rpc.ts).
 *
 * A stop (SIGTERM) leaves the membership first, so the coordinator moves this process's shards at
 * once, then gives every shard away (drain, flush, release): the next owners read all that was
 * acknowledged here, and the routers hold the shard's requests until they serve it.
 */
import { hostname } from 'node:os';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import type { ShardsAdmin, ShardRow } from '../http/admin-shards.js';
import { parseToken } from '../ha/lock.js';
import type { Logger } from '../log.js';
import { SHARD_COUNT } from '../shard/hash.js';
import { OwnersInstance } from '../owners/instance.js';
import { ShardOwner } from '../owners/owner.js';
import { Router } from '../owners/router.js';
import { runHere, type AdminCall, type AdminRoute } from '../http/admin-route.js';
import { RpcServer } from '../owners/rpc.js';
import { CatalogMirror } from '../persistence/catalog-mirror.js';
import { TenantsMirror } from '../persistence/tenants-mirror.js';
import type { Layout } from '../persistence/layout.js';
import { PRUNE_EVERY_MS } from '../persistence/marks.js';
import { Persistence } from '../persistence/persistence.js';
import { createClient, type RedisTarget } from '../persistence/redis.js';
import type { ReplicaWait } from '../persistence/writer.js';
import type { QueueStore } from '../core/store.js';
import { SqsError } from '../sqs/errors.js';
import type { ServedStore } from './stores.js';

export interface OwnersOptions {
  readonly stores: ServedStore;
  readonly logger: Logger;
  readonly instanceId: string;
  readonly target: RedisTarget;
  readonly layout: Layout;
  readonly replicaWait: ReplicaWait | undefined;
  readonly fatal: (e: Error) => void;
}

export interface Owners {
  readonly persistence: Persistence;
  readonly router: Router;
  readonly owner: ShardOwner;
  readonly instance: OwnersInstance;
  /** The admin API's shard routes. */
  readonly admin: ShardsAdmin;
  /** Where the admin API's queue calls run (src/http/admin-route.ts). */
  readonly adminRoute: AdminRoute;
  /** Runs the admin calls other members pass here on `app`, this instance's control plane. */
  serveAdmin(app: FastifyInstance): void;
  /**
   * /ready: a member the others count as live, with a shard map to route by and its store
   * served; false from the moment it leaves (a stop, a drain). Owning shards is not asked: an
   * instance that owns none still answers every request by routing it.
   */
  readonly ready: () => boolean;
  /** Joins, loads and starts following the map; after both planes listen. */
  start(): Promise<void>;
  /**
   * Leaves and gives every shard away; goes on routing (to the shards' next owners) until stop(),
   * so that requests still arriving while the data plane closes are answered, not refused.
   */
  handOver(): Promise<void>;
  /** Hands over (if not done yet), then closes the router, the forwarding channel and the connections. */
  stop(): Promise<void>;
}

export async function ownersFor(config: Config, opts: OwnersOptions): Promise<Owners> {
  const { stores, logger, instanceId, layout } = opts;
  const connection = (role: string): ReturnType<typeof createClient> =>
    createClient({ ...opts.target, connectionName: `shared-sqs:${role}:${instanceId}` });
  const data = connection('data');
  const control = connection('lock');
  const events = connection('events');
  const mirrorEvents = connection('catalog');
  const log = logger.child({ component: 'owners' });
  const ttlMs = config.leaderTtl;
  const intervalMs = config.leaderInterval;

  // The channel listens first (its port goes into the member record); until the router exists,
  // every request is answered "not the owner", which its sender retries.
  const routing: { router?: Router; admin?: FastifyInstance } = {};
  const rpc = new RpcServer({
    handle: (payload, signal): Promise<unknown> => {
      if (isAdminCall(payload)) return adminHere(payload);
      return routing.router === undefined
        ? Promise.resolve({ n: 1 })
        : routing.router.handle(payload, signal);
    },
  });
  // An admin call another member passed here (src/http/admin-route.ts): about a queue of shard
  // `s`, run only while that shard is served here; without `s`, about what this instance holds.
  const adminHere = async (p: { h: AdminCall; s?: number }): Promise<unknown> => {
    if (routing.admin === undefined) return { n: 1 };
    // Refused for want of memory: answered at once, as the router answers its requests.
    if (p.s !== undefined && !owner.serves(p.s)) return owner.refused(p.s) ? { r: 1 } : { n: 1 };
    return { o: await runHere(routing.admin, p.h) };
  };
  const listening = await rpc.listen({ host: config.host, port: config.internalPort });
  const address = `${advertised(config)}:${'port' in listening ? listening.port : config.internalPort}`;

  const instance = new OwnersInstance({
    redis: control,
    sub: events,
    layout,
    id: instanceId,
    address,
    memberTtlMs: ttlMs,
    intervalMs,
    log,
  });
  const owner = new ShardOwner({
    redis: control,
    layout,
    instanceId,
    ttlMs,
    intervalMs,
    map: instance.map,
    onGive: (shard) => stores.services.poller.closeShard(shard),
    log,
  });

  let mirror: CatalogMirror | undefined;
  let mirrorRead: NodeJS.Timeout | undefined;
  const mirrorFor = (store: QueueStore): void => {
    const previous = mirror;
    mirror = new CatalogMirror({
      redis: data,
      subscriber: mirrorEvents,
      layout,
      catalog: store.catalog,
      onError: (e) => log.warn({ error: e.message }, 'reading the catalog of the other shards failed'),
    });
    void previous?.stop().catch(() => undefined);
    void mirror.start().catch((e: unknown) => {
      log.warn({ error: e instanceof Error ? e.message : String(e) }, 'the catalog mirror did not start');
    });
  };

  // Made before the Persistence, whose onStore hands it each store; while none is served (a load
  // in progress reads the tenants itself) it reads nothing.
  const tenants: TenantsMirror = new TenantsMirror({
    redis: data,
    channels: instance.channels,
    layout,
    store: () => (persistence.serving ? stores.services.store : undefined),
    commit: () => persistence.commit(),
    onApplied: (n) => log.info({ tenants: n }, 'tenants changed at another instance: read again'),
    onError: (e) => log.warn({ error: e.message }, 'reading the tenants failed'),
  });

  const persistence: Persistence = new Persistence({
    redis: data,
    layout,
    createStore: stores.newStore,
    unavailable: (cause) =>
      new SqsError(
        'ServiceUnavailable',
        `The change could not be stored durably; please retry. (${cause.message})`,
      ),
    onStore: (store) => {
      // Dead-letter queues and move tasks' destinations of other owners' shards get their
      // messages through the router.
      store.onDeadLetterAway((queue, message, target) =>
        routing.router?.relayDeadLetter(queue, message, target),
      );
      store.onMoveAway((away) => routing.router?.relayMove(store, away));
      tenants.watch(store);
      stores.replace(store);
      mirrorFor(store);
    },
    onDiverged: () => stores.replace(stores.newStore()),
    onFatal: opts.fatal,
    replicaWait: opts.replicaWait,
    owned: owner,
    onShardFenced: (shard) => owner.lost(shard),
    // Shards change hands in bursts (a start takes a few dozen at once): one full read after them.
    onOwnedChanged: () => {
      clearTimeout(mirrorRead);
      mirrorRead = setTimeout(() => void mirror?.owned([]).catch(() => undefined), 200);
    },
    log: log.child({ component: 'persistence' }),
    // The marks of messages other owners sent here are settled by nothing else (marks.ts).
    pruneMarksEveryMs: PRUNE_EVERY_MS,
  });

  const router: Router = new Router({
    instanceId,
    services: stores.services,
    owner,
    persistence,
    map: instance.map,
    addressOf: (member) => {
      const m = instance.membership.members.find((r) => r.id === member);
      return m === undefined ? undefined : m.address;
    },
    holdMs: ttlMs + intervalMs,
    log,
  });
  routing.router = router;

  let draining: Promise<number> | undefined;
  const admin: ShardsAdmin = {
    async status() {
      const pins = await instance.store.pins();
      const store = stores.services.store;
      const counts = store.catalog.shardCounts(SHARD_COUNT);
      const bytes = new Array<number>(SHARD_COUNT).fill(0);
      for (const q of store.all()) bytes[q.shard] = (bytes[q.shard] ?? 0) + q.bytes;
      const held = owner.held();
      const shards: ShardRow[] = [];
      for (let s = 0; s < SHARD_COUNT; s++) {
        const h = held.get(s);
        shards.push({
          shard: s,
          owner: instance.map.ownerOf(s) ?? null,
          pinnedTo: pins.get(s) ?? null,
          here: h === undefined ? null : { state: h.state, epoch: parseToken(h.token)?.epoch ?? null },
          queues: counts[s] ?? 0,
          bytes: h === undefined ? null : (bytes[s] ?? 0),
        });
      }
      return {
        instanceId,
        coordinator: instance.coordinator.coordinating,
        mapVersion: instance.map.version,
        members: instance.membership.members.map((m) => ({
          id: m.id,
          address: m.address,
          startedAt: new Date(m.startedAt).toISOString(),
        })),
        shards,
      };
    },
    async move(shard, to) {
      const live = await instance.membership.live();
      if (!live.some((m) => m.id === to)) return false;
      await instance.store.pin(shard, to);
      return true;
    },
    drain() {
      draining ??= (async () => {
        const held = owner.held().size;
        await instance.coordinator.stop().catch(() => undefined);
        await instance.membership.leave().catch(() => undefined);
        await owner.stop();
        return held;
      })();
      return draining;
    },
  };

  let stopping: Promise<void> | undefined;
  let handingOver: Promise<void> | undefined;
  const handOver = (): Promise<void> => {
    handingOver ??= (async () => {
      router.leaving = true;
      await instance.coordinator.stop().catch(() => undefined);
      await instance.membership.leave().catch(() => undefined);
      await owner.stop();
    })();
    return handingOver;
  };
  return {
    admin,
    adminRoute: {
      atOwner: (shard, call) => router.adminAtOwner(shard, call),
      atOthers: (call) =>
        Promise.all(
          instance.membership.members
            .filter((m) => m.id !== instanceId)
            .map((m) => router.adminAt(m.address, call)),
        ),
    },
    serveAdmin(app) {
      routing.admin = app;
    },
    ready: () =>
      handingOver === undefined &&
      stopping === undefined &&
      draining === undefined &&
      persistence.serving &&
      instance.membership.isLive &&
      instance.map.version > 0,
    persistence,
    router,
    owner,
    instance,
    async start() {
      await instance.start().catch((e: unknown) => {
        log.warn({ error: e instanceof Error ? e.message : String(e) }, 'joining failed; retrying');
      });
      await persistence.start();
      tenants.start();
      owner.start(persistence);
      log.info(
        { address, members: instance.membership.members.length },
        'active/active: serving and routing',
      );
    },
    handOver,
    stop() {
      stopping ??= (async () => {
        await handOver();
        await tenants.stop();
        instance.map.stop();
        instance.channels.close();
        clearTimeout(mirrorRead);
        await mirror?.stop().catch(() => undefined);
        await router.close();
        await rpc.close();
        for (const c of [control, events, mirrorEvents]) {
          try {
            await c.quit();
          } catch {
            c.disconnect();
          }
        }
      })();
      return stopping;
    },
  };
}

/** What the others reach this instance at: --advertise-host, --host, or the hostname. */
function advertised(config: Config): string {
  if (config.advertiseHost !== undefined) return config.advertiseHost;
  if (config.host !== '0.0.0.0' && config.host !== '::') return config.host;
  return hostname();
}

function isAdminCall(payload: unknown): payload is { h: AdminCall; s?: number } {
  const h = (payload as { h?: unknown } | null)?.h;
  return typeof h === 'object' && h !== null;
}
