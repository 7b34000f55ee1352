/**
 * Command-line flags and environment variables, parsed once at start into a plain {@link Config}.
 *
 * One table, {@link FLAGS}, declares every flag: its environment variable, type, help, group and
 * the parser that turns the text into the config's value. yargs reads the command line and writes
 * --help from it (src/flags.ts); the parsers here validate.
 *
 * Sources, strongest first: the command line, then `SHARED_SQS_<FLAG_IN_UPPER_SNAKE>`, then the
 * Go predecessor's plain names (`REDIS_ADDR`, `REDIS_PASSWORD`), then the default (which `--dev`
 * changes for the test-environment switches). An empty environment variable counts as unset; an
 * empty value for an optional flag (`--redis-addr=`) unsets it, overriding the environment.
 * Go-style single-dash long flags (`-port=4100`) are accepted, since units written for the
 * predecessor use them. Environment variables with the prefix that match no flag are ignored.
 *
 * The environment is read from the `env` argument only, so tests can pass their own.
 */
import { readFileSync } from 'node:fs';
import { getHeapStatistics } from 'node:v8';
import yargs from 'yargs';
import { AUTH_MODES, type AuthMode } from './auth/authenticate.js';
import { fromEnv, HELP_WIDTH, PARSER_CONFIGURATION, yargsOptions, type FlagSpec } from './flags.js';
import { isLogLevel, LOG_LEVELS, type LogLevel } from './log.js';
import { checkPrefix } from './persistence/keys.js';

export interface Config {
  /** Data plane (SQS API) port; 0 = any free port. */
  readonly port: number;
  /** Control plane (/health, /ready, /metrics, admin) port; 0 = any free port. */
  readonly controlPort: number;
  /** Listen address of both planes; IPv6 without brackets. */
  readonly host: string;
  readonly region: string;
  /** 12 digits. */
  readonly accountId: string;
  /**
   * `scheme://host[:port]`, no path and no trailing slash (a URL's origin). Undefined: queue URLs
   * are built per request from Host / X-Forwarded-Proto / X-Forwarded-Host.
   */
  readonly baseUrl: string | undefined;
  readonly logLevel: LogLevel;
  /** Origins whose browser pages may call the data plane (CORS); empty: no CORS headers. */
  readonly corsOrigins: readonly string[];
  /** As given: `host:port` or a `redis://` / `rediss://` URL. Undefined: memory only. */
  readonly redisAddr: string | undefined;
  /** A `redis://` or `rediss://` (TLS) URL: the same as a URL in --redis-addr; give one of the two. */
  readonly redisUrl: string | undefined;
  readonly redisPassword: string | undefined;
  /** Redis Sentinel addresses; with them the master is the one named {@link redisMasterName}. */
  readonly redisSentinels: readonly RedisHostPort[] | undefined;
  readonly redisMasterName: string | undefined;
  /** The prefix of every Redis key; it holds a hash tag (`{...}`) so all keys share one slot. */
  readonly redisPrefix: string;
  /** Replicas that must acknowledge each group commit (Redis WAIT) before its replies; 0: no wait. */
  readonly redisWaitReplicas: number;
  /** WAIT's timeout: fewer replicas by then and the replies are 503s. */
  readonly redisWaitTimeoutMs: number;
  /** WAITAOF instead of WAIT: the replicas fsynced the writes (Redis 7.2+, checked at start). */
  readonly redisWaitAof: boolean;
  readonly leaderElection: boolean;
  readonly leaderTtlMs: number;
  readonly leaderIntervalMs: number;
  /** Never log it: see {@link configForLog}. Undefined: the admin API is closed. */
  readonly adminToken: string | undefined;
  /** Refuse to recreate a queue of the same name for 60 s after DeleteQueue, as AWS does. */
  readonly queueDeletedRecently: boolean;
  /** Refuse a second PurgeQueue of a queue within 60 s, as AWS does. */
  readonly purgeCooldown: boolean;
  /** The test-environment preset: the two rules above off unless set, warnings only in the log. */
  readonly dev: boolean;
  /** off: requests act in the default account (or their 12-digit key's); on: SigV4 with a tenant's key. */
  readonly auth: AuthMode;
  /** A JSON or YAML file of tenants and queues to create at start (src/startup-config.ts); undefined: none. */
  readonly configFile: string | undefined;
  /** Validate {@link configFile} and exit instead of starting. */
  readonly checkConfig: boolean;
  /** Requests the process sends itself after start so its hot code is compiled (src/http/warmup.ts); 0: none. */
  readonly warmupRequests: number;
  /**
   * Bytes the store may hold (bodies, attributes, per-message and per-queue overhead, as
   * src/core/budget.ts counts them); sends over it are refused. Default: {@link defaultMaxMemory}.
   */
  readonly maxMemory: number;
}

export interface RedisHostPort {
  readonly host: string;
  readonly port: number;
}

/** Bad flags or environment: the message is one line, fit to print after `shared-sqs: `. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** `--help` or `--version` was given: print `text` to stdout and exit 0. */
export class HelpRequested extends Error {
  override readonly name = 'HelpRequested';
  constructor(
    readonly kind: 'help' | 'version',
    readonly text: string,
  ) {
    super(`--${kind} requested`);
  }
}

export const DEFAULTS = {
  port: 4100,
  controlPort: 4101,
  host: '0.0.0.0',
  region: 'us-east-1',
  accountId: '000000000000',
  logLevel: 'info',
  leaderElection: false,
  leaderTtlMs: 10_000,
  leaderIntervalMs: 3_000,
  queueDeletedRecently: true,
  purgeCooldown: true,
  redisPrefix: '{ssq}:',
  redisWaitReplicas: 0,
  redisWaitTimeoutMs: 250,
  redisWaitAof: false,
  auth: 'off',
  warmupRequests: 3000,
} as const satisfies Partial<Config>;

/**
 * The default budget's share of V8's heap limit. The rest is for what the budget does not count
 * and the heap needs anyway: request bodies and their parsed copies (up to 1 MiB each, times the
 * requests in flight), replies being built, the Redis writer's pending commands and the loader's
 * chunks, the accounting's own error (docs/operations.md), and free space for the collector to
 * work in: V8 slows to back-to-back full collections well before the heap is full.
 */
export const DEFAULT_MEMORY_FRACTION = 0.5;

/** A budget above this share of the heap limit is refused at start: it could not be reached safely. */
export const MAX_MEMORY_FRACTION = 0.8;

/** The default --max-memory for a heap limit (v8.getHeapStatistics().heap_size_limit). */
export function defaultMaxMemory(heapLimit: number): number {
  return Math.floor(heapLimit * DEFAULT_MEMORY_FRACTION);
}

const SIZE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1024,
  kb: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1024 ** 3,
  gib: 1024 ** 3,
};

/** Parses `512mb`, `4gb`, `1.5g`, `65536` into bytes (units are powers of 1024); undefined if not a size. */
export function parseSize(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(text.trim());
  const unit = SIZE_UNITS[(match?.[2] ?? '').toLowerCase()];
  if (match === null || unit === undefined) return undefined;
  return Math.floor(Number(match[1]) * unit);
}

/** Bytes as an operator reads them: 64.0 MiB, 1.50 GiB. */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 ** 3) return `${(bytes / 1024 ** 3).toFixed(2)} GiB`;
  if (bytes >= 1024 ** 2) return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${bytes} B`;
}

function parseMaxMemory(raw: Raw | undefined, heapLimit: number): number {
  if (raw === undefined) return defaultMaxMemory(heapLimit);
  const bytes = parseSize(raw.value);
  if (bytes === undefined) fail(raw, 'must be a size like 512mb or 4gb');
  // Below this a single 1 MiB message could not be stored with its overhead.
  if (bytes < 2 * 1024 ** 2) fail(raw, 'must be at least 2mb');
  const most = Math.floor(heapLimit * MAX_MEMORY_FRACTION);
  if (bytes > most) {
    throw new ConfigError(
      `${raw.from} (${formatBytes(bytes)}) is more than ${MAX_MEMORY_FRACTION * 100} % of this process's ` +
        `V8 heap limit (${formatBytes(heapLimit)}): lower it, or give node a larger --max-old-space-size`,
    );
  }
  return bytes;
}

/** Longest timer Node can set (setTimeout clamps anything above to 1 ms). */
const MAX_DURATION_MS = 2 ** 31 - 1;

const VERSION = readVersion();

function readVersion(): string {
  try {
    // src/config.ts and dist/config.js both sit one level below package.json.
    const pkg: unknown = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    if (typeof pkg === 'object' && pkg !== null && 'version' in pkg && typeof pkg.version === 'string') {
      return pkg.version;
    }
  } catch {
    // fall through
  }
  return 'unknown';
}

// ---------------------------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------------------------

/** A raw value and where it came from (`--port` or `SHARED_SQS_PORT`), for error messages. */
interface Raw {
  readonly value: string;
  readonly from: string;
}

/** What a flag's parser may depend on besides its own value. */
interface Context {
  readonly heapLimit: number;
  /** --dev, parsed first: it moves the defaults of the test-environment switches. */
  readonly dev: boolean;
}

interface Flag<T> extends FlagSpec {
  readonly parse: (raw: Raw | undefined, context: Context) => T;
}

const GROUP_SERVER = 'Server:';
const GROUP_TESTS = 'Test environments:';
const GROUP_REDIS = 'Redis and high availability:';
const GROUP_OTHER = 'Other:';

/** A switch: `--x`, `--no-x`, `--x=false`, or its variable set to true/false (also 1/0, yes/no, on/off). */
function switchFlag(
  flag: string,
  group: string,
  describe: string,
  fallback: (context: Context) => boolean,
  shownDefault: string,
): Flag<boolean> {
  return {
    flag,
    type: 'boolean',
    group,
    describe,
    shownDefault,
    parse: (raw, context) => (raw === undefined ? fallback(context) : booleanOf(raw)),
  };
}

/**
 * Every flag, keyed by the {@link Config} field it sets, in the order of --help. `dev` is parsed
 * before the others, since it changes defaults.
 */
const FLAGS: { readonly [K in keyof Config]: Flag<Config[K]> } = {
  port: {
    flag: 'port',
    type: 'string',
    group: GROUP_SERVER,
    describe: 'Data plane (SQS API) port; 0 picks a free port',
    shownDefault: String(DEFAULTS.port),
    parse: (raw) => parsePort(raw, DEFAULTS.port),
  },
  controlPort: {
    flag: 'control-port',
    type: 'string',
    group: GROUP_SERVER,
    describe: 'Control plane port (/health, /ready, /metrics, admin); 0 picks a free port',
    shownDefault: String(DEFAULTS.controlPort),
    parse: (raw) => parsePort(raw, DEFAULTS.controlPort),
  },
  host: {
    flag: 'host',
    type: 'string',
    group: GROUP_SERVER,
    describe: 'Address both planes listen on: 0.0.0.0 is every interface; 127.0.0.1 keeps them local',
    shownDefault: DEFAULTS.host,
    parse: parseHost,
  },
  region: {
    flag: 'region',
    type: 'string',
    group: GROUP_SERVER,
    describe: 'Region in queue ARNs and URLs',
    shownDefault: DEFAULTS.region,
    parse: parseRegion,
  },
  accountId: {
    flag: 'account-id',
    type: 'string',
    group: GROUP_SERVER,
    describe: 'Account id (12 digits) in queue ARNs and URLs when auth is off',
    shownDefault: DEFAULTS.accountId,
    parse: parseAccountId,
  },
  baseUrl: {
    flag: 'base-url',
    type: 'string',
    group: GROUP_SERVER,
    describe:
      'Public scheme://host[:port] of the data plane, used in queue URLs; unset: taken from each ' +
      "request's Host, X-Forwarded-Proto and X-Forwarded-Host",
    parse: parseBaseUrl,
  },
  logLevel: {
    flag: 'log-level',
    type: 'string',
    group: GROUP_SERVER,
    describe: `One of ${LOG_LEVELS.join(', ')}`,
    shownDefault: `${DEFAULTS.logLevel} (warn with --dev)`,
    parse: (raw, { dev }) => parseLogLevel(raw, dev ? 'warn' : DEFAULTS.logLevel),
  },
  auth: {
    flag: 'auth',
    type: 'string',
    group: GROUP_SERVER,
    describe:
      'off: no signature checked, requests act in --account-id (or in the account their 12-digit access ' +
      "key id names); on: every request needs a valid SigV4 signature made with a tenant's key",
    shownDefault: DEFAULTS.auth,
    parse: parseAuth,
  },
  configFile: {
    flag: 'config',
    type: 'string',
    group: GROUP_SERVER,
    describe:
      'JSON or YAML file of tenants (with keys) and queues to create at start if missing; its schema ' +
      'is docs/config.schema.json (docs/admin.md)',
    parse: (raw) => (raw === undefined || raw.value.trim() === '' ? undefined : raw.value.trim()),
  },
  checkConfig: switchFlag(
    'check-config',
    GROUP_SERVER,
    'Validate the --config file, print every problem and exit (0: valid, 2: not) without starting',
    () => false,
    'false',
  ),
  warmupRequests: {
    flag: 'warmup-requests',
    type: 'string',
    group: GROUP_SERVER,
    describe:
      'Requests the process sends to a private copy of its data plane after start, so that a failover ' +
      'or a restart under load does not meet cold code; 0 turns the warm-up off',
    shownDefault: String(DEFAULTS.warmupRequests),
    parse: parseWarmupRequests,
  },
  corsOrigins: {
    flag: 'cors-origin',
    type: 'string',
    group: GROUP_SERVER,
    describe:
      'Origin whose pages may call the data plane from a browser (CORS), e.g. http://localhost:3000, ' +
      'or * for any; repeat the flag or separate origins with commas; unset: no CORS headers',
    parse: (raw) => parseCorsOrigins(raw),
  },
  maxMemory: {
    flag: 'max-memory',
    type: 'string',
    group: GROUP_SERVER,
    describe:
      'Memory budget of the stored messages, e.g. 512mb or 4gb (k/m/g are powers of 1024); sends over it ' +
      'are refused with RequestThrottled, which the SDKs retry. Must stay under the V8 heap limit ' +
      '(node --max-old-space-size)',
    shownDefault: `${Math.round(DEFAULT_MEMORY_FRACTION * 100)} % of the V8 heap limit, here ${formatBytes(
      defaultMaxMemory(getHeapStatistics().heap_size_limit),
    )}`,
    parse: (raw, { heapLimit }) => parseMaxMemory(raw, heapLimit),
  },
  dev: switchFlag(
    'dev',
    GROUP_TESTS,
    'Preset for test suites and development: --no-queue-deleted-recently, --no-purge-cooldown and ' +
      '--log-level warn, unless given otherwise',
    () => false,
    'false',
  ),
  queueDeletedRecently: switchFlag(
    'queue-deleted-recently',
    GROUP_TESTS,
    'Refuse to recreate a queue for 60 s after DeleteQueue, as AWS does; ' +
      '--no-queue-deleted-recently for test environments',
    ({ dev }) => !dev && DEFAULTS.queueDeletedRecently,
    'true (false with --dev)',
  ),
  purgeCooldown: switchFlag(
    'purge-cooldown',
    GROUP_TESTS,
    'Refuse a second PurgeQueue of a queue within 60 s (PurgeQueueInProgress), as AWS does; ' +
      '--no-purge-cooldown for test environments',
    ({ dev }) => !dev && DEFAULTS.purgeCooldown,
    'true (false with --dev)',
  ),
  redisAddr: {
    flag: 'redis-addr',
    type: 'string',
    group: GROUP_REDIS,
    describe: 'Redis as host:port or redis[s]://[user:password@]host:port; unset: state lives in memory only',
    env: ['SHARED_SQS_REDIS_ADDR', 'REDIS_ADDR'],
    parse: parseRedisAddr,
  },
  redisUrl: {
    flag: 'redis-url',
    type: 'string',
    group: GROUP_REDIS,
    describe:
      'Redis as a redis:// or rediss:// (TLS) URL with optional user, password and db; instead of --redis-addr',
    parse: parseRedisUrl,
  },
  redisPassword: {
    flag: 'redis-password',
    type: 'string',
    group: GROUP_REDIS,
    describe: 'Redis password (prefer the environment: flags show in ps)',
    env: ['SHARED_SQS_REDIS_PASSWORD', 'REDIS_PASSWORD'],
    parse: parseSecret,
  },
  redisSentinels: {
    flag: 'redis-sentinels',
    type: 'string',
    group: GROUP_REDIS,
    describe:
      'Redis Sentinel addresses, host:port,host:port...; instead of --redis-addr (needs --redis-master-name)',
    parse: parseRedisSentinels,
  },
  redisMasterName: {
    flag: 'redis-master-name',
    type: 'string',
    group: GROUP_REDIS,
    describe: 'The master name the Sentinels know (with --redis-sentinels)',
    parse: (raw) => (raw === undefined || raw.value.trim() === '' ? undefined : raw.value.trim()),
  },
  redisPrefix: {
    flag: 'redis-prefix',
    type: 'string',
    group: GROUP_REDIS,
    describe: 'Prefix of every Redis key; must hold a hash tag such as {ssq}',
    shownDefault: DEFAULTS.redisPrefix,
    parse: parseRedisPrefix,
  },
  redisWaitReplicas: {
    flag: 'redis-wait-replicas',
    type: 'string',
    group: GROUP_REDIS,
    describe:
      'Replicas that must acknowledge each write (Redis WAIT) before it is answered 200, so that a ' +
      'Sentinel failover loses nothing acknowledged; fewer within --redis-wait-timeout: 503',
    shownDefault: String(DEFAULTS.redisWaitReplicas),
    parse: parseWaitReplicas,
  },
  redisWaitTimeoutMs: {
    flag: 'redis-wait-timeout',
    type: 'string',
    group: GROUP_REDIS,
    describe: 'How long a write waits for --redis-wait-replicas, 1ms to 500ms',
    shownDefault: formatDuration(DEFAULTS.redisWaitTimeoutMs),
    // A wait holds up the calls pipelined behind it, and each has the 1 s command timeout.
    parse: (raw) => parseDuration(raw, DEFAULTS.redisWaitTimeoutMs, MAX_WAIT_TIMEOUT_MS),
  },
  redisWaitAof: switchFlag(
    'redis-wait-aof',
    GROUP_REDIS,
    'Wait until the replicas fsynced each write to their AOF (WAITAOF, Redis 7.2 or newer)',
    () => DEFAULTS.redisWaitAof,
    'false',
  ),
  leaderElection: switchFlag(
    'leader-election',
    GROUP_REDIS,
    'Active/passive: serve only while holding the Redis lock (needs Redis)',
    () => DEFAULTS.leaderElection,
    'false',
  ),
  leaderTtlMs: {
    flag: 'leader-ttl',
    type: 'string',
    group: GROUP_REDIS,
    describe: 'Leader lock lifetime, e.g. 10s or 1500ms; must exceed 3 x --leader-interval',
    shownDefault: formatDuration(DEFAULTS.leaderTtlMs),
    parse: (raw) => parseDuration(raw, DEFAULTS.leaderTtlMs, MAX_DURATION_MS),
  },
  leaderIntervalMs: {
    flag: 'leader-interval',
    type: 'string',
    group: GROUP_REDIS,
    describe: 'How often the lock is renewed or tried',
    shownDefault: formatDuration(DEFAULTS.leaderIntervalMs),
    parse: (raw) => parseDuration(raw, DEFAULTS.leaderIntervalMs, MAX_DURATION_MS),
  },
  adminToken: {
    flag: 'admin-token',
    type: 'string',
    group: GROUP_OTHER,
    describe:
      'Bearer token of the admin API; unset: admin API closed (prefer the environment: flags show in ps)',
    parse: parseSecret,
  },
};

const SPECS: readonly Flag<unknown>[] = Object.values(FLAGS);
const BOOLEAN_FLAGS: ReadonlySet<string> = new Set(
  SPECS.filter((s) => s.type === 'boolean').map((s) => s.flag),
);
const LONG_FLAGS: ReadonlySet<string> = new Set([
  ...SPECS.map((s) => s.flag),
  ...[...BOOLEAN_FLAGS].map((flag) => `no-${flag}`),
  'help',
  'version',
]);

const USAGE =
  'Usage: shared-sqs [options]\n\n' +
  'An Amazon SQS server (Query and JSON protocols) with optional Redis persistence and ' +
  'active/passive high availability.';

const EPILOG =
  'Every flag can also be set with its environment variable; the command line wins. ' +
  'Durations take the units ms, s, m, h (Go syntax: 1m30s). Empty environment variables are ignored.';

// ---------------------------------------------------------------------------------------------
// The command line
// ---------------------------------------------------------------------------------------------

/**
 * What yargs' parser does not do as this server always did: `-port=1` (Go's flag package) becomes
 * `--port=1`; `--leader-election=<v>` takes the values the environment takes (the parser reads
 * anything but "true", even "1", as false); `--no-port` is unknown (the parser would set the
 * string flag to false, and the default would quietly stand).
 */
function normalizeArgs(argv: readonly string[]): string[] {
  const out: string[] = [];
  let i = 0;
  for (; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--') break;
    const match = /^(--?)([a-z][a-z0-9-]*)(=[^]*)?$/.exec(arg);
    if (!match) {
      out.push(arg);
      continue;
    }
    const [, dashes = '', name = '', assigned] = match;
    if (dashes === '-' && (name.length === 1 || !LONG_FLAGS.has(name))) {
      out.push(arg); // a short flag like -h, or something yargs reports as unknown
      continue;
    }
    if (name.startsWith('no-') && !BOOLEAN_FLAGS.has(name.slice(3))) {
      throw new ConfigError(`Unknown argument: ${dashes}${name}`);
    }
    if (assigned !== undefined && BOOLEAN_FLAGS.has(name.replace(/^no-/, ''))) {
      if (name.startsWith('no-')) throw new ConfigError(`--${name} takes no value`);
      const value = booleanOf({ value: assigned.slice(1), from: `--${name}` });
      out.push(value ? `--${name}` : `--no-${name}`);
      continue;
    }
    out.push(`--${name}${assigned ?? ''}`);
  }
  return out.concat(argv.slice(i));
}

/** The flags given on the command line, by flag name; throws for --help, --version and bad usage. */
function parseArgs(args: readonly string[]): Map<string, string> {
  let parsed: Record<string, unknown> = {};
  let output = '';
  // Synchronous: no command or middleware is async, so the callback has run when parse returns.
  void yargs()
    .scriptName('shared-sqs')
    .usage(USAGE)
    .epilog(EPILOG)
    .locale('en')
    .wrap(HELP_WIDTH)
    .strict()
    .exitProcess(false)
    .parserConfiguration(PARSER_CONFIGURATION)
    .options(yargsOptions(SPECS))
    .alias('h', 'help')
    .group(['help', 'version'], GROUP_OTHER)
    .version(VERSION)
    .fail((message: string | null, err: Error | undefined) => {
      throw new ConfigError(oneLine(message ?? err?.message ?? 'bad command line'));
    })
    .parse([...args], {}, (_err, argv, text) => {
      parsed = argv;
      output = text;
    });
  if (parsed['help'] === true) throw new HelpRequested('help', output);
  if (parsed['version'] === true) throw new HelpRequested('version', output);
  const rest = parsed['_'];
  // yargs reports positional arguments, but not those after `--`.
  if (Array.isArray(rest) && rest.length > 0) {
    throw new ConfigError(`unexpected argument ${quote(String(rest[0]))}: shared-sqs takes only options`);
  }
  const given = new Map<string, string>();
  for (const spec of SPECS) {
    const value = parsed[spec.flag];
    if (typeof value === 'string' || typeof value === 'boolean') given.set(spec.flag, String(value));
  }
  // The one repeatable flag: every occurrence counts, where other flags keep their last value.
  if (given.has('cors-origin')) {
    const all: unknown = yargs()
      .parserConfiguration({ ...PARSER_CONFIGURATION, 'duplicate-arguments-array': true })
      .options(yargsOptions(SPECS))
      .parseSync([...args])['cors-origin'];
    given.set('cors-origin', (Array.isArray(all) ? all : [all]).map(String).join(','));
  }
  return given;
}

// ---------------------------------------------------------------------------------------------
// Parsing and the checks across flags
// ---------------------------------------------------------------------------------------------

/**
 * Parses flags (`argv` without node and the script, i.e. `process.argv.slice(2)`) and environment.
 * Throws {@link ConfigError} for anything invalid and {@link HelpRequested} for --help / --version.
 */
export function parseConfig(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  heapLimit: number = getHeapStatistics().heap_size_limit,
): Config {
  const args = parseArgs(normalizeArgs(argv));
  const rawOf = (spec: FlagSpec): Raw | undefined => {
    const fromArgs = args.get(spec.flag);
    return fromArgs === undefined ? fromEnv(spec, env) : { value: fromArgs, from: `--${spec.flag}` };
  };
  const dev = FLAGS.dev.parse(rawOf(FLAGS.dev), { heapLimit, dev: false });
  const context: Context = { heapLimit, dev };
  const from = (key: keyof Config): string => rawOf(FLAGS[key])?.from ?? `--${FLAGS[key].flag}`;
  const values: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(FLAGS) as [keyof Config, Flag<unknown>][]) {
    values[key] = spec.parse(rawOf(spec), context);
  }
  const config = values as unknown as Config;
  checkTogether(config, from);
  return config;
}

/** The rules that join flags; `from` names the flag or variable a value came from. */
function checkTogether(config: Config, from: (key: keyof Config) => string): void {
  if (config.port !== 0 && config.port === config.controlPort) {
    throw new ConfigError(`${from('port')} and ${from('controlPort')} must differ (both ${config.port})`);
  }
  const redis = (['redisAddr', 'redisUrl', 'redisSentinels'] as const)
    .filter((key) => config[key] !== undefined)
    .map(from);
  if (redis.length > 1) throw new ConfigError(`${redis.join(' and ')} both name Redis: give one of them`);
  if (config.redisSentinels !== undefined && config.redisMasterName === undefined) {
    throw new ConfigError(`${from('redisSentinels')} needs --redis-master-name`);
  }
  if (config.redisWaitAof && config.redisWaitReplicas === 0) {
    throw new ConfigError(`${from('redisWaitAof')} needs --redis-wait-replicas of 1 or more`);
  }
  if (config.redisWaitReplicas > 0 && redis.length === 0) {
    throw new ConfigError(`${from('redisWaitReplicas')} needs Redis: set --redis-addr`);
  }
  if (config.leaderElection && redis.length === 0) {
    throw new ConfigError('leader election needs Redis: set REDIS_ADDR or --redis-addr');
  }
  if (!(config.leaderTtlMs > 3 * config.leaderIntervalMs)) {
    throw new ConfigError(
      `${from('leaderTtlMs')} (${formatDuration(config.leaderTtlMs)}) must be more than 3 x ` +
        `${from('leaderIntervalMs')} (${formatDuration(config.leaderIntervalMs)}), ` +
        'so that one slow renewal does not cost the lock',
    );
  }
  if (config.checkConfig && config.configFile === undefined) {
    throw new ConfigError(`${from('checkConfig')} needs --config FILE`);
  }
}

// ---------------------------------------------------------------------------------------------
// The parsers of single values
// ---------------------------------------------------------------------------------------------

/** true/false, 1/0, yes/no, on/off, as a variable or `--switch=<value>` gives it. */
function booleanOf(raw: Raw): boolean {
  switch (raw.value.trim().toLowerCase()) {
    case 'true':
    case '1':
    case 'yes':
    case 'on':
      return true;
    case 'false':
    case '0':
    case 'no':
    case 'off':
      return false;
    default:
      return fail(raw, 'must be true or false');
  }
}

/** Quotes a user-given value for an error message: JSON escapes keep it on one line. */
function quote(value: string): string {
  return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

/** Never for secrets: it echoes the value. */
function fail(raw: Raw, problem: string): never {
  throw new ConfigError(`${raw.from} ${problem} (got ${quote(raw.value)})`);
}

function parsePort(raw: Raw | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const text = raw.value.trim();
  const port = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(port >= 0 && port <= 65535)) fail(raw, 'must be a port number from 0 to 65535');
  return port;
}

function parseWarmupRequests(raw: Raw | undefined): number {
  if (raw === undefined) return DEFAULTS.warmupRequests;
  const text = raw.value.trim();
  const n = /^\d{1,7}$/.test(text) ? Number(text) : NaN;
  if (!(n >= 0 && n <= 1_000_000)) fail(raw, 'must be a whole number from 0 to 1000000');
  return n;
}

const MAX_WAIT_TIMEOUT_MS = 500;

function parseWaitReplicas(raw: Raw | undefined): number {
  if (raw === undefined) return DEFAULTS.redisWaitReplicas;
  const text = raw.value.trim();
  const n = /^\d{1,3}$/.test(text) ? Number(text) : NaN;
  if (!(n >= 0 && n <= 100)) fail(raw, 'must be a whole number of replicas from 0 to 100');
  return n;
}

function parseHost(raw: Raw | undefined): string {
  if (raw === undefined) return DEFAULTS.host;
  let host = raw.value.trim();
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  if (!/^[A-Za-z0-9._:%-]+$/.test(host)) fail(raw, 'must be an IP address or host name without a port');
  return host;
}

function parseRegion(raw: Raw | undefined): string {
  if (raw === undefined) return DEFAULTS.region;
  const region = raw.value.trim();
  if (!/^[a-z0-9]+(?:-[a-z0-9]+)*$/.test(region) || region.length > 64) {
    fail(raw, 'must look like a region name such as us-east-1 (lower-case letters, digits, dashes)');
  }
  return region;
}

function parseAccountId(raw: Raw | undefined): string {
  if (raw === undefined) return DEFAULTS.accountId;
  const id = raw.value.trim();
  if (!/^\d{12}$/.test(id)) fail(raw, 'must be exactly 12 digits');
  return id;
}

function parseBaseUrl(raw: Raw | undefined): string | undefined {
  if (raw === undefined || raw.value === '') return undefined;
  let url: URL;
  try {
    url = new URL(raw.value.trim());
  } catch {
    fail(raw, 'must be an absolute URL like https://sqs.example.com');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail(raw, 'must start with http:// or https://');
  if (url.username !== '' || url.password !== '')
    throw new ConfigError(`${raw.from} must not contain credentials`);
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '') {
    fail(
      raw,
      'must be scheme://host[:port] with no path, query or fragment (queue URLs add /<account>/<queue>)',
    );
  }
  return url.origin;
}

function parseLogLevel(raw: Raw | undefined, fallback: LogLevel): LogLevel {
  if (raw === undefined) return fallback;
  const level = raw.value.trim().toLowerCase();
  if (!isLogLevel(level)) fail(raw, `must be one of ${LOG_LEVELS.join(', ')}`);
  return level;
}

function parseRedisAddr(raw: Raw | undefined): string | undefined {
  if (raw === undefined || raw.value.trim() === '') return undefined;
  const addr = raw.value.trim();
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(addr)) {
    // A URL may hold a password: never echo it.
    let url: URL | undefined;
    try {
      url = new URL(addr);
    } catch {
      url = undefined;
    }
    if (
      url === undefined ||
      (url.protocol !== 'redis:' && url.protocol !== 'rediss:') ||
      url.hostname === ''
    ) {
      throw new ConfigError(`${raw.from} must be host:port or a redis:// or rediss:// URL`);
    }
    return addr;
  }
  const match = /^(\[[0-9A-Fa-f:.%a-z]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/.exec(addr);
  const port = Number(match?.[2]);
  if (match === null || !(port >= 1 && port <= 65535)) {
    fail(raw, 'must be host:port (e.g. 127.0.0.1:6379) or a redis:// URL');
  }
  return addr;
}

/** --redis-url: a redis:// or rediss:// URL; a URL may hold a password, so it is never echoed. */
function parseRedisUrl(raw: Raw | undefined): string | undefined {
  if (raw === undefined || raw.value.trim() === '') return undefined;
  const text = raw.value.trim();
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'redis:' && url.protocol !== 'rediss:') || url.hostname === '') {
    throw new ConfigError(`${raw.from} must be a redis:// or rediss:// URL`);
  }
  if (!/^\/?\d*$/.test(url.pathname) || url.search !== '' || url.hash !== '') {
    throw new ConfigError(`${raw.from} takes no path but a database number (redis://host:port/0)`);
  }
  return text;
}

function parseRedisSentinels(raw: Raw | undefined): RedisHostPort[] | undefined {
  if (raw === undefined || raw.value.trim() === '') return undefined;
  const out: RedisHostPort[] = [];
  for (const part of raw.value.split(',')) {
    const text = part.trim();
    if (text === '') continue;
    const match = /^(\[[0-9A-Fa-f:.%a-z]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/.exec(text);
    const port = Number(match?.[2]);
    if (match === null || !(port >= 1 && port <= 65535)) {
      fail(raw, 'must be a comma-separated list of host:port');
    }
    out.push({ host: (match[1] ?? '').replace(/^\[(.*)\]$/, '$1'), port });
  }
  if (out.length === 0) fail(raw, 'must be a comma-separated list of host:port');
  return out;
}

function parseRedisPrefix(raw: Raw | undefined): string {
  if (raw === undefined) return DEFAULTS.redisPrefix;
  const problem = checkPrefix(raw.value);
  if (problem !== undefined || /[\s\p{Cc}]/u.test(raw.value)) {
    fail(raw, 'must hold a hash tag such as {ssq} (all keys in one Cluster slot) and no spaces');
  }
  return raw.value;
}

function parseAuth(raw: Raw | undefined): AuthMode {
  if (raw === undefined) return DEFAULTS.auth;
  const mode = raw.value.trim().toLowerCase();
  const found = AUTH_MODES.find((m) => m === mode);
  if (found === undefined) fail(raw, `must be one of ${AUTH_MODES.join(', ')}`);
  return found;
}

/**
 * --cors-origin: `*`, or origins as a browser sends them in `Origin` (http(s) ones normalized the
 * way browsers serialize them: lower case, no default port, no trailing slash).
 */
function parseCorsOrigins(raw: Raw | undefined): string[] {
  if (raw === undefined) return [];
  const origins: string[] = [];
  for (const part of raw.value.split(',')) {
    const text = part.trim().replace(/\/$/, '');
    if (text === '') continue;
    const origin = text === '*' ? text : normalizeOrigin(text);
    if (origin === undefined) {
      fail(raw, 'must be * or origins like http://localhost:3000 (scheme://host[:port], no path)');
    }
    if (!origins.includes(origin)) origins.push(origin);
  }
  if (origins.includes('*') && origins.length > 1)
    fail(raw, 'gives * (any origin) with others: give it alone');
  return origins;
}

function normalizeOrigin(text: string): string | undefined {
  if (!/^[a-z][a-z0-9+.-]*:\/\/[^/?#\s@]+$/i.test(text)) return undefined;
  // Other schemes (an app's capacitor://localhost) have no origin in URL's sense: kept as given.
  if (!/^https?:/i.test(text)) return text.toLowerCase();
  try {
    return new URL(text).origin;
  } catch {
    return undefined;
  }
}

function parseSecret(raw: Raw | undefined): string | undefined {
  if (raw === undefined || raw.value === '') return undefined;
  // Such a value could never match an HTTP header (or is a stray newline from a file).
  if (/[\s\p{Cc}]/u.test(raw.value)) {
    throw new ConfigError(`${raw.from} must not contain spaces, newlines or control characters`);
  }
  return raw.value;
}

const DURATION_UNITS_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * Parses a Go duration (`10s`, `500ms`, `1m30s`, `1.5s`) into whole milliseconds (rounded).
 * Returns undefined for anything else, including a bare number: `10` could mean seconds or ms.
 */
export function parseDurationMs(text: string): number | undefined {
  const trimmed = text.trim();
  if (!/^(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$/.test(trimmed)) return undefined;
  let total = 0;
  for (const [, amount = '', unit = ''] of trimmed.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g)) {
    total += Number(amount) * (DURATION_UNITS_MS[unit] ?? NaN);
  }
  return Number.isFinite(total) ? Math.round(total) : undefined;
}

/** Formats milliseconds the way they are written on the command line: 10s, 1.5s, 500ms. */
export function formatDuration(ms: number): string {
  return ms >= 1000 && ms % 100 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

function parseDuration(raw: Raw | undefined, fallback: number, most: number): number {
  if (raw === undefined) return fallback;
  const ms = parseDurationMs(raw.value);
  if (ms === undefined) fail(raw, 'must be a duration like 10s, 500ms or 1m30s');
  if (ms < 1 || ms > most) fail(raw, `must be between 1ms and ${formatDuration(most)}`);
  return ms;
}

/** The config as it may be logged: secrets (and a password inside a Redis URL) replaced. */
export function configForLog(config: Config): Record<string, unknown> {
  return {
    ...config,
    redisAddr: redactUrlPassword(config.redisAddr),
    redisUrl: redactUrlPassword(config.redisUrl),
    redisPassword: config.redisPassword === undefined ? undefined : '[set]',
    adminToken: config.adminToken === undefined ? undefined : '[set]',
  };
}

function redactUrlPassword(addr: string | undefined): string | undefined {
  if (addr === undefined || !addr.includes('://')) return addr;
  try {
    const url = new URL(addr);
    if (url.password !== '') url.password = 'redacted';
    return url.toString();
  } catch {
    return '[unparsable]';
  }
}

/**
 * For main: parses, or prints `shared-sqs: <message> (see --help)` on one line to stderr and exits
 * 2 (no stack trace); --help and --version print to stdout and exit 0. Other errors (bugs) propagate.
 */
export function loadConfigOrExit(argv: readonly string[], env: NodeJS.ProcessEnv): Config {
  try {
    return parseConfig(argv, env);
  } catch (err) {
    if (err instanceof HelpRequested) {
      // Writes to pipes and files are synchronous on Linux, so nothing is lost by exiting now.
      process.stdout.write(`${err.text}\n`);
      process.exit(0);
    }
    if (err instanceof ConfigError) {
      process.stderr.write(`shared-sqs: ${oneLine(err.message)} (see shared-sqs --help)\n`);
      process.exit(2);
    }
    throw err;
  }
}
