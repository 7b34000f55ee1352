import { systemClock } from './core/clock.js';
import { QueueStore } from './core/store.js';
import { loadConfigOrExit, type Config } from './config.js';
import { buildControlPlane } from './http/control.js';
import { buildDataPlane } from './http/data.js';
import { Metrics } from './http/metrics.js';
import { createLogger, flushLogger } from './log.js';
import { keysFor } from './persistence/keys.js';
import { Persistence } from './persistence/persistence.js';
import { createRedis, type RedisTarget } from './persistence/redis.js';
import { SqsError } from './sqs/errors.js';
import { LongPoller } from './sqs/longpoll.js';
import type { SqsServices } from './sqs/service.js';

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
  const newStore = (): QueueStore =>
    new QueueStore(clock, { deletedRecentlyMs: config.queueDeletedRecently ? 60_000 : 0 });
  let current = serving(newStore());
  function serving(store: QueueStore): { store: QueueStore; poller: LongPoller } {
    return { store, poller: new LongPoller(store, clock) };
  }
  const services: SqsServices = {
    get store() {
      return current.store;
    },
    get poller() {
      return current.poller;
    },
    clock,
  };
  const metrics = new Metrics();
  metrics.setQueueStatsProvider(() => {
    const now = clock.now();
    return [...current.store.all()].map((q) => ({ queue: q.name, ...q.counts(now) }));
  });
  metrics.setLongPollWaitersProvider(() => current.poller.waiting);

  const target = redisTarget(config);
  const persistence =
    target === undefined
      ? undefined
      : new Persistence({
          redis: createRedis(target),
          keys: keysFor(config.redisPrefix),
          createStore: newStore,
          unavailable: () =>
            new SqsError('ServiceUnavailable', 'The change could not be stored durably; please retry.'),
          // Waiting long polls of the store being replaced are answered (empty) before it goes.
          onStore: (store) => {
            current.poller.closeAll();
            current = serving(store);
          },
          onDiverged: () => {
            current.poller.closeAll();
            current = serving(newStore());
          },
          log: logger.child({ component: 'persistence' }),
        });
  if (persistence !== undefined) await persistence.start();

  const data = buildDataPlane({
    services,
    logger: logger.child({ plane: 'data' }),
    accountId: config.accountId,
    region: config.region,
    baseUrl: config.baseUrl,
    observe: (action, protocol, status, seconds) => metrics.observeRequest(action, protocol, status, seconds),
    ...(persistence === undefined
      ? {}
      : { isServing: () => persistence.serving, commit: () => persistence.commit() }),
  });
  const control = buildControlPlane({
    logger: logger.child({ plane: 'control' }),
    metrics,
    isReady: () => persistence?.serving ?? true,
  });

  await data.listen({ port: config.port, host: config.host });
  await control.listen({ port: config.controlPort, host: config.host });
  logger.info(
    {
      port: config.port,
      controlPort: config.controlPort,
      host: config.host,
      persistence: persistence === undefined ? 'memory' : 'redis',
    },
    persistence === undefined
      ? 'shared-sqs serving (memory only: state is lost on restart)'
      : 'shared-sqs serving (every change is written to Redis before it is acknowledged)',
  );

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      logger.info('stopping: answering long polls, then closing both planes');
      // Waiting polls are answered first (with no messages), so close() does not wait 20 s on them.
      current.poller.closeAll();
      await data.close();
      await persistence?.close();
      await control.close();
      await flushLogger(logger);
    })();
    return stopping;
  };
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
  const code = (e as { code?: string }).code;
  if (code === 'EADDRINUSE' || code === 'EACCES') {
    console.error(`shared-sqs: cannot listen: ${(e as Error).message}`);
    process.exit(1);
  }
  console.error('shared-sqs: failed to start:', e);
  process.exit(1);
});
