import { hostname } from 'node:os';
import { systemClock } from './core/clock.js';
import { QueueStore } from './core/store.js';
import { getHeapStatistics } from 'node:v8';
import { formatBytes, loadConfigOrExit, type Config } from './config.js';
import { MessageMetrics } from './http/message-metrics.js';
import {
  deadLetterStats,
  keyOwnerIn,
  memoryStats,
  queueStats,
  tenantLabel,
  timedCommit,
} from './http/tenancy.js';
import { applyStartupConfig, loadStartupConfig, StartupConfigError } from './startup-config.js';
import { buildDataPlane } from './http/data.js';
import type { WarmUp } from './http/warmup.js';
import type { ActivePassive } from './ha/active.js';
import { Metrics } from './http/metrics.js';
import { createLogger, flushLogger } from './log.js';
import { keysFor } from './persistence/keys.js';
import type { Persistence } from './persistence/persistence.js';
import type { RedisTarget } from './persistence/redis.js';
import { SqsError } from './sqs/errors.js';
import { servicesFor, type SqsServices } from './sqs/service.js';

/**
 * Wiring: one store, one long-poll scheduler, two planes. Without Redis the state lives in this
 * process only: a restart loses every queue and message (README and docs/operations.md say so).
 *
 * With Redis, the state is loaded before the planes listen, every reply waits for its changes to
 * be in Redis (`commit`), and a failed write stops serving (503) until the state is reloaded from
 * Redis into a new store (src/persistence/persistence.ts). So the store and its long-poll
 * scheduler sit behind `services`, whose getters the data plane reads on every request: the
 * swap is one assignment, and no request ever sees half of it.
 */
export async function start(config: Config): Promise<{ stop: () => Promise<void> }> {
  const logger = createLogger(config.logLevel);
  const clock = systemClock;
  const newStore = (): QueueStore => {
    const store: QueueStore = new QueueStore(clock, {
      deletedRecentlyMs: config.queueDeletedRecently ? 60_000 : 0,
      maxMemory: config.maxMemory,
      onRefused: (accountId, scope) => {
        metrics.observeRefusedSend(tenantLabel(store, accountId), scope);
      },
    });
    return store;
  };
  // --config: what it names is created in every store this process serves (created or loaded).
  const startup = config.configFile === undefined ? undefined : loadStartupConfig(config.configFile);
  let firstStore = true;
  let current = serving(newStore());
  function serving(store: QueueStore): SqsServices {
    if (startup !== undefined) {
      try {
        applyStartupConfig(store, startup, config, logger.child({ component: 'config' }));
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
  /** What gates the data plane and /ready: the leader term, or the plain persistence. */
  const gate = ha ?? persistence;

  const data = buildDataPlane({
    services,
    logger: logger.child({ plane: 'data' }),
    accountId: config.accountId,
    region: config.region,
    baseUrl: config.baseUrl,
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
    ...(gate === undefined
      ? {}
      : { isServing: () => gate.serving, commit: timedCommit(() => gate.commit(), messageMetrics) }),
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
    isReady: () => gate?.serving ?? true,
  });
  registerAdminHa(control, { adminToken: config.adminToken, ha });
  registerAdmin(control, {
    adminToken: config.adminToken,
    services,
    messageTotals: messageMetrics,
    isServing: () => gate?.serving ?? true,
    commit: gate === undefined ? undefined : () => gate.commit(),
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
      persistence: target === undefined ? 'memory' : 'redis',
      leaderElection: ha !== undefined,
      ...(ha === undefined ? {} : { instanceId }),
      maxMemory: config.maxMemory,
      memoryBudget: `${formatBytes(config.maxMemory)} of a ${formatBytes(getHeapStatistics().heap_size_limit)} V8 heap limit`,
    },
    target === undefined
      ? 'shared-sqs serving (memory only: state is lost on restart)'
      : ha !== undefined
        ? 'shared-sqs listening as a follower: serving once it holds the leader lock'
        : 'shared-sqs listening: serving once the state is loaded from Redis (every change is written to Redis before it is acknowledged)',
  );

  // A follower warms its code while it waits to lead, so that a takeover does not hand the full
  // load to a cold process; a serving instance does not, as its own traffic does it and the
  // warm-up would compete with it (src/http/warmup.ts).
  let warmUp: WarmUp | undefined;
  if (ha !== undefined && config.warmupRequests > 0) {
    const leader = ha;
    const { startWarmUp } = await import('./http/warmup.js');
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
    void stop().finally(() => process.exit(1));
  }
  ha?.start();
  // Loading runs with both planes listening: /ready answers 503 and /metrics shows the progress.
  void persistence?.start().then(
    () => undefined,
    (e: unknown) => {
      if (stopping === undefined) fatal(e instanceof Error ? e : new Error(String(e)));
    },
  );
  return { stop };
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

async function main(): Promise<void> {
  if (process.argv[2] === 'admin') {
    // `shared-sqs admin ...` is the admin API's command line (src/cli/admin.ts), not a server.
    const { runAdminCli } = await import('./cli/admin.js');
    process.exitCode = await runAdminCli(process.argv.slice(3), process.env);
    return;
  }
  const config = loadConfigOrExit(process.argv.slice(2), process.env);
  const server = await start(config);
  const onSignal = (signal: NodeJS.Signals): void => {
    server.stop().then(
      () => process.exit(0),
      (e: unknown) => {
        console.error(`shared-sqs: error while stopping after ${signal}:`, e);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
}

main().catch((e: unknown) => {
  if (e instanceof StartupConfigError) {
    console.error(`shared-sqs: ${e.message}`);
    process.exit(2);
  }
  const code = (e as { code?: string }).code;
  if (code === 'EADDRINUSE' || code === 'EACCES') {
    console.error(`shared-sqs: cannot listen: ${(e as Error).message}`);
    process.exit(1);
  }
  console.error('shared-sqs: failed to start:', e);
  process.exit(1);
});
