import { systemClock } from './core/clock.js';
import { QueueStore } from './core/store.js';
import { loadConfigOrExit, type Config } from './config.js';
import { buildControlPlane } from './http/control.js';
import { buildDataPlane } from './http/data.js';
import { Metrics } from './http/metrics.js';
import { createLogger, flushLogger } from './log.js';
import { LongPoller } from './sqs/longpoll.js';

/**
 * Wiring: one store, one long-poll scheduler, two planes. Without Redis the state lives in this
 * process only: a restart loses every queue and message (README and docs/operations.md say so).
 */
export async function start(config: Config): Promise<{ stop: () => Promise<void> }> {
  const logger = createLogger(config.logLevel);
  const clock = systemClock;
  const store = new QueueStore(clock, { deletedRecentlyMs: config.queueDeletedRecently ? 60_000 : 0 });
  const poller = new LongPoller(store, clock);
  const metrics = new Metrics();
  metrics.setQueueStatsProvider(() => {
    const now = clock.now();
    return [...store.all()].map((q) => ({ queue: q.name, ...q.counts(now) }));
  });
  metrics.setLongPollWaitersProvider(() => poller.waiting);

  const data = buildDataPlane({
    services: { store, clock, poller },
    logger: logger.child({ plane: 'data' }),
    accountId: config.accountId,
    region: config.region,
    baseUrl: config.baseUrl,
    observe: (action, protocol, status, seconds) => metrics.observeRequest(action, protocol, status, seconds),
  });
  const control = buildControlPlane({
    logger: logger.child({ plane: 'control' }),
    metrics,
    isReady: () => true,
  });

  await data.listen({ port: config.port, host: config.host });
  await control.listen({ port: config.controlPort, host: config.host });
  logger.info(
    { port: config.port, controlPort: config.controlPort, host: config.host, persistence: 'memory' },
    'shared-sqs serving (memory only: state is lost on restart)',
  );

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      logger.info('stopping: answering long polls, then closing both planes');
      // Waiting polls are answered first (with no messages), so close() does not wait 20 s on them.
      poller.closeAll();
      await data.close();
      await control.close();
      flushLogger(logger);
    })();
    return stopping;
  };
  return { stop };
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
