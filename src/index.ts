/**
 * The package's entry point for programs and test suites: `startServer` runs shared-sqs inside
 * the calling process, on a free port, memory only, auth off and silent unless told otherwise.
 *
 *   import { startServer } from 'shared-sqs';
 *   const sqs = await startServer();
 *   // ... point an SQS client at sqs.url ...
 *   await sqs.close();
 *
 * The options are the command line's flags in camelCase (README, "Options"; all but
 * --check-config), read by the same parser as the command line (src/config.ts), so they are
 * checked the same way and a bad one rejects with the same message (naming the flag);
 * test/unit/config.test.ts keeps `ServerOptions` and the flag table alike. The environment is not read: a test suite's server does
 * not change with the shell it runs in.
 */
import type { AuthMode } from './auth/authenticate.js';
import type { Clock } from './core/clock.js';
import { optionsArgv, parseConfig } from './config.js';
import { ConfigError } from './flags.js';
import type { LogLevel } from './log.js';
import { start } from './server.js';

export type { AuthMode, Clock, LogLevel };

/** A duration: a number of milliseconds, or as on the command line (`10s`, `500ms`, `1m30s`). */
export type Duration = number | string;

/** The command line's flags, in camelCase; each is optional, as the flag is; defaults as the flag's unless said. */
export interface ServerOptions {
  /** SQS API port. Default here: 0, a free port (see `url`). */
  readonly port?: number;
  /** /health, /ready, /metrics and /admin port. Default here: 0, a free port (see `controlUrl`). */
  readonly controlPort?: number;
  /** Default here: 127.0.0.1 (the command line's is 0.0.0.0). */
  readonly host?: string;
  readonly region?: string;
  readonly accountId?: string;
  readonly baseUrl?: string;
  /** Default here: 'silent' (the command line's is 'info'). Logs go to stdout. */
  readonly logLevel?: LogLevel;
  /** Redis (host:port or a redis:// URL); absent: memory only. */
  readonly redisAddr?: string;
  readonly redisUrl?: string;
  readonly redisPassword?: string;
  /** Sentinel addresses, `host:port` each. */
  readonly redisSentinels?: string | readonly string[];
  readonly redisMasterName?: string;
  /** Redis Cluster seed nodes, `host:port` each. */
  readonly redisCluster?: string | readonly string[];
  readonly redisPrefix?: string;
  readonly redisWaitReplicas?: number;
  readonly redisWaitTimeout?: Duration;
  readonly redisWaitAof?: boolean;
  readonly leaderElection?: boolean;
  /** Every instance serves; the shards spread over the live instances (needs Redis). */
  readonly activeActive?: boolean;
  /** With activeActive: where other instances forward requests to. Default here: 0, a free port. */
  readonly internalPort?: number;
  /** With activeActive: the address other instances reach this one at. */
  readonly advertiseHost?: string;
  /**
   * Only 1 here (the default): an embedded server is this one process; `--workers` runs several
   * processes and is the command line's. Anything else rejects with a ConfigError.
   */
  readonly workers?: number | 'auto';
  readonly leaderTtl?: Duration;
  readonly leaderInterval?: Duration;
  readonly adminToken?: string;
  /** False: a deleted queue's name can be used again at once (AWS waits 60 s). */
  readonly queueDeletedRecently?: boolean;
  /** False: PurgeQueue may follow PurgeQueue at once (AWS allows one a minute). */
  readonly purgeCooldown?: boolean;
  /** Origins whose browser pages may call the data plane (CORS), or '*'; absent: no CORS. */
  readonly corsOrigin?: string | readonly string[];
  /** The test-environment preset: both 60 s rules off, logs at warn. */
  readonly dev?: boolean;
  /** Default: 'off'. */
  readonly auth?: AuthMode;
  /** A file of tenants and queues to create at start (`--config`). */
  readonly config?: string;
  readonly warmupRequests?: number;
  /** Bytes, or as on the command line (`256mb`, `1gib`). */
  readonly maxMemory?: number | string;
}

export interface RunningServer {
  /** The SQS endpoint, `http://127.0.0.1:<port>`: give it to an SDK as its endpoint. */
  readonly url: string;
  /** The control plane: /health, /ready, /metrics, /admin. */
  readonly controlUrl: string;
  /** Stops everything it started: answers waiting long polls, closes both planes and Redis. */
  close(): Promise<void>;
}

const EMBEDDED_DEFAULTS: ServerOptions = {
  port: 0,
  controlPort: 0,
  internalPort: 0,
  host: '127.0.0.1',
  logLevel: 'silent',
};

/** What an embedding program gives that has no command-line flag. */
export interface EmbedOptions {
  /**
   * Milliseconds since the epoch, read for every SQS rule (visibility, delays, retention,
   * deduplication windows, move-task rates); default: the system clock. A test suite can move it
   * forward instead of sleeping; where it stands still, so does the server's SQS time.
   */
  readonly clock?: Clock;
}

export async function startServer(
  options: ServerOptions = {},
  embed: EmbedOptions = {},
): Promise<RunningServer> {
  // Before parsing: `workers: 2` without activeActive would otherwise be told to add activeActive.
  if (options.workers !== undefined && options.workers !== 1) {
    throw new ConfigError(
      `workers ${String(options.workers)}: startServer runs one server inside this process; ` +
        'the command line (shared-sqs --workers N) runs several',
    );
  }
  const config = parseConfig(optionsArgv({ ...EMBEDDED_DEFAULTS, ...options }), {});
  const server = await start(config, {
    ...(embed.clock === undefined ? {} : { clock: embed.clock }),
    // What Redis holds cannot be loaded: the server has stopped (and said why on stderr); the
    // process it runs in is not ours to end.
    onFatal: () => undefined,
  });
  return { url: server.url, controlUrl: server.controlUrl, close: () => server.stop() };
}
