/**
 * The command line: `shared-sqs [flags]` parses its flags (src/config.ts) and starts the server
 * (src/server.ts) until SIGTERM or SIGINT; `shared-sqs admin ...` is the admin API's client. With
 * `--workers N` it forks N servers and watches them instead (src/wiring/workers.ts).
 */
import cluster from 'node:cluster';
import { loadConfigOrExit } from './config.js';
import { readSeedFile, start } from './server.js';
import { SeedError } from './seed.js';

async function main(): Promise<void> {
  if (process.argv[2] === 'admin') {
    // `shared-sqs admin ...` is the admin API's command line (src/cli/admin.ts), not a server.
    const { runAdminCli } = await import('./cli/admin.js');
    process.exitCode = await runAdminCli(process.argv.slice(3), process.env);
    return;
  }
  const config = loadConfigOrExit(process.argv.slice(2), process.env);
  if (config.checkConfig) {
    const file = await readSeedFile(config);
    process.stdout.write(
      `${config.config}: valid (${file?.tenants.length ?? 0} tenant(s), ${file?.queues.length ?? 0} queue(s))\n`,
    );
    return;
  }
  if (config.workers > 1 && cluster.isPrimary) {
    // --workers: this process forks and watches the workers, which run the lines below.
    const { runPrimary } = await import('./wiring/workers.js');
    return runPrimary(config);
  }
  const server = cluster.isWorker
    ? await (await import('./wiring/workers.js')).startWorker(config)
    : await start(config);
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
  if (e instanceof SeedError) {
    // Every problem of the file on a line of its own, so that one pass fixes them all.
    console.error(
      e.problems.length === 0
        ? `shared-sqs: ${e.message}`
        : [
            `shared-sqs: ${e.where}: ${e.problems.length} problem(s)`,
            ...e.problems.map((p) => `  ${p}`),
          ].join('\n'),
    );
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
