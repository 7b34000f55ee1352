import type { AddressInfo, Server as NetServer } from 'node:net';
import { getHeapStatistics } from 'node:v8';
import type { Config } from './config.js';
import { systemClock, type Clock } from './core/clock.js';
import { formatBytes } from './flag-values.js';
import { MessageMetrics } from './http/message-metrics.js';
import { Metrics } from './http/metrics.js';
import { deadLetterStats, memoryStats, queueStats, tenantLabel } from './http/tenancy.js';
import { createLogger, flushLogger, type Logger } from './log.js';
import type { Seed } from './seed.js';
import { durabilityFor, type Durable } from './wiring/durability.js';
import { listenPlanes } from './wiring/planes.js';
import { ServedStore } from './wiring/stores.js';
import type { WarmUp } from './wiring/warmup.js';

export interface Server {
  /** The data plane (SQS API), as `http://host:port`. */
  readonly url: string;
  /** The control plane (/health, /ready, /metrics, /admin). */
  readonly controlUrl: string;
  /** Stops everything started: the election (after a drain), both planes, Redis, the logger. */
  stop(): Promise<void>;
  /** What /metrics shows; a --workers primary sums it over its workers (src/wiring/workers.ts). */
  readonly metrics: Metrics;
}

export interface StartOptions {
  /**
   * What Redis holds cannot be loaded here (LayoutError, StoreTooBigError): it is logged, the
   * server stops, and then this is called. Default: exit 1, for the command line.
   */
  readonly onFatal?: (e: Error) => void;
  /** The time SQS rules run on (default: the system's); a test suite moves it instead of sleeping. */
  readonly clock?: Clock;
  /** Where the control plane listens instead of --host (a --workers worker: 127.0.0.1). */
  readonly controlHost?: string;
}

/**
 * Wiring: one served store (src/wiring/stores.ts), one {@link Durability} (src/wiring/durability.ts),
 * two planes (src/wiring/planes.ts), and a follower's warm-up (src/wiring/warmup.ts). Used by the
 * command line (src/main.ts) and by `startServer` (src/index.ts).
 */
export async function start(config: Config, options: StartOptions = {}): Promise<Server> {
  const logger = createLogger(config.logLevel);
  const stores = new ServedStore({
    clock: options.clock ?? systemClock,
    queueDeletedRecently: config.queueDeletedRecently,
    purgeCooldown: config.purgeCooldown,
    maxMemory: config.maxMemory,
    seed: await readSeedFile(config),
    log: logger.child({ component: 'config' }),
    onRefused: (store, accountId, scope) => metrics.observeRefusedSend(tenantLabel(store, accountId), scope),
  });
  const { services } = stores;

  const durable = await durabilityFor(config, {
    stores,
    logger,
    fatal: (e) => fatal(e),
    observeReplicaWait: (seconds, acknowledged) => messageMetrics.observeReplicaWait(seconds, acknowledged),
  });
  const { durability, persistence, ha, owners } = durable;
  // Built once `ha` and `persistence` are known; the closures above read it only when they run.
  const metrics = new Metrics({
    providers: {
      queues: () => queueStats(services.store, services.clock.now()),
      longPollWaiters: () => services.poller.waiting,
      leader: () => ha?.stats(),
      loading: () => (ha ?? persistence)?.loading,
      migration: () => (ha ?? persistence)?.migrating,
      shardsDown: () => (ha ?? persistence)?.shardsDown,
      owners: () =>
        owners === undefined
          ? undefined
          : {
              shards: owners.owner.counts(),
              members: owners.instance.membership.members.length,
              coordinator: owners.instance.coordinator.coordinating,
              mapVersion: owners.instance.map.version,
              forwarded: owners.router.forwarded,
            },
      memory: () => memoryStats(services.store),
      deadLetters: () => deadLetterStats(services.store),
    },
  });
  const messageMetrics = new MessageMetrics(metrics);

  const { data, control } = await listenPlanes(config, {
    services,
    durability,
    ha,
    metrics,
    messageMetrics,
    logger,
    executor: owners?.router,
    owners,
    controlHost: options.controlHost,
  });
  // Loads prom-client and starts its process metrics, which nothing needed before (metrics.ts).
  metrics.build();
  logStarted(logger, config, durable);
  const warmUp = ha === undefined ? undefined : await warmUpFollower(config, logger, () => ha.serving);

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      await warmUp?.stop();
      // The leader drains, flushes, releases the lock and announces it before the planes close.
      await ha?.stop();
      // Leaves, and gives every shard away while the planes still take requests (and route them).
      await owners?.handOver();
      logger.info('stopping: answering long polls, then closing both planes');
      // Waiting polls are answered first (with no messages), so close() does not wait 20 s on them.
      stores.close();
      // The router outlives the data plane: what still arrives on open connections meanwhile is
      // forwarded to the shards' new owners (src/http/serve.ts), not refused.
      if (owners !== undefined) await connectionsEnded(data, LEAVE_GRACE_MS);
      await data.close();
      await owners?.stop();
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
  void (owners?.start() ?? persistence?.start())?.then(
    () => undefined,
    (e: unknown) => {
      if (stopping === undefined) fatal(e instanceof Error ? e : new Error(String(e)));
    },
  );
  return {
    url: urlOf(data.server.address()),
    controlUrl: urlOf(control.server.address()),
    stop,
    metrics,
  };
}

/**
 * --active-active: how long a leaving instance goes on taking requests on its open connections,
 * each reply closing its connection, before the data plane closes. A proxy's idle keep-alive
 * connections are closed by the proxy in that time (nginx/shared-sqs-active-active.conf:
 * `keepalive_timeout 2s`), not by us under a request it may just be sending, which it could not
 * send again (docs/operations.md, "Active/active").
 */
const LEAVE_GRACE_MS = 3000;

/** Resolves once the plane has no connection open, or after `ms`. */
async function connectionsEnded(data: { server: NetServer }, ms: number): Promise<void> {
  const until = performance.now() + ms;
  for (;;) {
    const open = await new Promise<number>((resolve) =>
      data.server.getConnections((e, n) => resolve(e === null ? n : 0)),
    );
    if (open === 0 || performance.now() >= until) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

function logStarted(logger: Logger, config: Config, { durability, ha, instanceId }: Durable): void {
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
}

/**
 * A follower warms its code while it waits to lead, so that a takeover does not hand the full load
 * to a cold process; a serving instance does not, as its own traffic does it and the warm-up would
 * compete with it (src/wiring/warmup.ts, docs/decisions/005-follower-warm-up.md).
 */
async function warmUpFollower(
  config: Config,
  logger: Logger,
  leading: () => boolean,
): Promise<WarmUp | undefined> {
  if (config.warmupRequests === 0) return undefined;
  const { startWarmUp } = await import('./wiring/warmup.js');
  logger.info({ requests: config.warmupRequests }, 'warm-up started');
  const warmUp = startWarmUp({
    requests: config.warmupRequests,
    accountId: config.accountId,
    region: config.region,
    until: leading,
  });
  void warmUp.done.then(({ error, ...done }) => {
    if (error === undefined) logger.info(done, 'warm-up done');
    else logger.warn({ ...done, error }, 'warm-up failed: the first requests as leader may be slow');
  });
  return warmUp;
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

/** The --config file, read and checked (src/seed-file.ts, loaded only when a file is given). */
export async function readSeedFile(config: Config): Promise<Seed | undefined> {
  if (config.config === undefined) return undefined;
  const { loadSeedFile } = await import('./seed-file.js');
  return await loadSeedFile(config.config, config);
}
