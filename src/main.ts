/**
 * The command line: `shared-sqs [flags]` parses its flags (src/config.ts) and starts the server
 * (src/server.ts) until SIGTERM or SIGINT; `shared-sqs admin ...` is the admin API's client.
 */
import { loadConfigOrExit } from './config.js';
import { start } from './server.js';
import { StartupConfigError } from './startup-config.js';

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
