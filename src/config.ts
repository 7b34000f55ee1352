/**
 * Command-line flags and environment variables, parsed once at start into a plain {@link Config}.
 *
 * One table, {@link FLAGS}, declares every flag: its name, type, group, help, environment
 * variables, default (as the command line would write it, so --help shows it as it is typed) and
 * the check that turns its text into the config's value. yargs reads the command line from it
 * (types, repeated flags, unknown flags, --help, --version; src/flags.ts); the environment fills in
 * what the command line does not give, and the default what neither gives.
 *
 * Sources, strongest first: the command line, then `SHARED_SQS_<FLAG_IN_UPPER_SNAKE>`, then the
 * Go predecessor's plain names (`REDIS_ADDR`, `REDIS_PASSWORD`), then the default (which `--dev`
 * changes for the test-environment switches). An empty environment variable counts as unset; an
 * empty value for a flag without a default (`--redis-addr=`) unsets it, overriding the
 * environment. Go-style single-dash long flags (`-port=4100`) are accepted, since units written
 * for the predecessor use them. Environment variables with the prefix that match no flag are
 * ignored. The environment is read from the `env` argument only, so tests can pass their own.
 *
 * yargs' own `.env()`, `choices` and `number` type are not used: they read process.env (the
 * embedded server reads none), cannot say which variable held a bad value, read an empty
 * variable as a value, and word or convert differently (`--port 0x10` would be 16) from what
 * this server has always answered (test/unit/config.test.ts).
 */
import { availableParallelism } from 'node:os';
import { getHeapStatistics } from 'node:v8';
import { AUTH_MODES } from './auth/authenticate.js';
import {
  ConfigError,
  fromEnv,
  HelpRequested,
  oneLine,
  quote,
  readCommandLine,
  type FlagSpec,
} from './flags.js';
import { LOG_LEVELS } from './log.js';
import {
  baseUrl,
  booleanOf,
  corsOrigins,
  DEFAULT_MEMORY_FRACTION,
  defaultMaxMemory,
  duration,
  formatBytes,
  formatDuration,
  host,
  hostPortList,
  Invalid,
  invalid,
  maxMemory,
  oneOf,
  port,
  redisAddr,
  redisPrefix,
  redisUrlFlag,
  region,
  secret,
  trimmed,
  whole,
} from './flag-values.js';

/** What a flag's check may depend on besides its own text. */
interface Context {
  readonly heapLimit: number;
  /** --dev, read first: it moves the defaults of the test-environment switches. */
  readonly dev: boolean;
}

interface Flag<T> extends FlagSpec {
  /** The text (from the command line or the environment) as the config's value; throws {@link Invalid}. */
  readonly read: (text: string, context: Context) => T;
  /**
   * When neither source gives the flag: text as the command line would give it (read by `read`,
   * shown by --help), or a value worked out at start. Absent: the value is undefined, and so is
   * an empty text.
   */
  readonly default?: string | ((context: Context) => T);
  /** The default text under --dev, when it differs. */
  readonly devDefault?: string;
  /** A number given to startServer means milliseconds (src/index.ts). */
  readonly duration?: boolean;
}

/** --workers: a count from 1, or `auto`, one per core this process may use. */
function workerCount(text: string): number {
  if (text.trim().toLowerCase() === 'auto') return availableParallelism();
  const n = whole(1024, 'must be auto or a whole number from 1 to 1024')(text);
  return n >= 1 ? n : invalid('must be auto or a whole number from 1 to 1024');
}

// ---------------------------------------------------------------------------------------------
// The table
// ---------------------------------------------------------------------------------------------

const SWITCH = { type: 'boolean', default: 'false', read: booleanOf } as const;
const SWITCH_ON_BUT_DEV = { type: 'boolean', default: 'true', devDefault: 'false', read: booleanOf } as const;

/** Gives each flag of `flags` the --help group `name`. */
function group<const T extends Readonly<Record<string, Omit<Flag<unknown>, 'flag' | 'group'>>>>(
  name: string,
  flags: T,
): { readonly [K in keyof T]: T[K] & { readonly group: string } } {
  return Object.fromEntries(Object.entries(flags).map(([key, flag]) => [key, { ...flag, group: name }])) as {
    readonly [K in keyof T]: T[K] & { readonly group: string };
  };
}

/**
 * Every flag, keyed by its name in camelCase (`controlPort` is --control-port), in the order of
 * --help. The key names the {@link Config} field and `startServer`'s option (src/index.ts); `read`
 * gives the field's type. test/unit/config.test.ts keeps `ServerOptions` and README's Options
 * table in step with it.
 */
const FLAGS = {
  ...group('Server:', {
    port: { default: '4100', read: port, describe: 'Data plane (SQS API) port; 0 picks a free port' },
    controlPort: {
      default: '4101',
      read: port,
      describe: 'Control plane port (/health, /ready, /metrics, admin); 0 picks a free port',
    },
    host: {
      default: '0.0.0.0',
      read: host,
      describe: 'Address both planes listen on: 0.0.0.0 is every interface; 127.0.0.1 keeps them local',
    },
    region: { default: 'us-east-1', read: region, describe: 'Region in queue ARNs and URLs' },
    accountId: {
      default: '000000000000',
      read: (text: string) =>
        /^\d{12}$/.test(text.trim()) ? text.trim() : invalid('must be exactly 12 digits'),
      describe: 'Account id (12 digits) in queue ARNs and URLs when auth is off',
    },
    baseUrl: {
      read: baseUrl,
      describe:
        'Public scheme://host[:port] of the data plane, used in queue URLs; unset: taken from each ' +
        "request's Host, X-Forwarded-Proto and X-Forwarded-Host",
    },
    logLevel: {
      default: 'info',
      devDefault: 'warn',
      read: oneOf(LOG_LEVELS),
      describe: `One of ${LOG_LEVELS.join(', ')}`,
    },
    auth: {
      default: 'off',
      read: oneOf(AUTH_MODES),
      describe:
        'off: no signature checked, requests act in --account-id (or in the account their 12-digit access ' +
        "key id names); on: every request needs a valid SigV4 signature made with a tenant's key",
    },
    // Tenants and queues to create in every store this process serves (src/seed-file.ts).
    config: {
      read: trimmed,
      describe:
        'JSON or YAML file of tenants (with keys) and queues to create at start if missing; its schema ' +
        'is docs/config.schema.json (docs/admin.md)',
    },
    checkConfig: {
      ...SWITCH,
      describe:
        'Validate the --config file, print every problem and exit (0: valid, 2: not) without starting',
    },
    warmupRequests: {
      default: '3000',
      read: whole(1_000_000, 'must be a whole number from 0 to 1000000'),
      describe:
        'With --leader-election: requests a follower sends to a private copy of its data plane while it ' +
        'waits to lead, so that a takeover does not meet cold code; 0 turns the warm-up off',
    },
    corsOrigin: {
      repeatable: true,
      default: () => [],
      read: corsOrigins,
      describe:
        'Origin whose pages may call the data plane from a browser (CORS), e.g. http://localhost:3000, ' +
        'or * for any; repeat the flag or separate origins with commas; unset: no CORS headers',
    },
    // Bytes, as src/core/budget.ts counts them.
    maxMemory: {
      default: ({ heapLimit }: Context) => defaultMaxMemory(heapLimit),
      shownDefault: `${DEFAULT_MEMORY_FRACTION * 100} % of the V8 heap limit, here ${formatBytes(
        defaultMaxMemory(getHeapStatistics().heap_size_limit),
      )}`,
      read: (text: string, { heapLimit }: Context) => maxMemory(text, heapLimit),
      describe:
        'Memory budget of the stored messages, e.g. 512mb or 4gb (k/m/g are powers of 1024); sends over ' +
        'it are refused with RequestThrottled, which the SDKs retry. Must stay under the V8 heap limit ' +
        '(node --max-old-space-size)',
    },
  }),
  ...group('Test environments:', {
    dev: {
      ...SWITCH,
      describe:
        'Preset for test suites and development: --no-queue-deleted-recently, --no-purge-cooldown and ' +
        '--log-level warn, unless given otherwise',
    },
    queueDeletedRecently: {
      ...SWITCH_ON_BUT_DEV,
      describe:
        'Refuse to recreate a queue for 60 s after DeleteQueue, as AWS does; ' +
        '--no-queue-deleted-recently for test environments',
    },
    purgeCooldown: {
      ...SWITCH_ON_BUT_DEV,
      describe:
        'Refuse a second PurgeQueue of a queue within 60 s (PurgeQueueInProgress), as AWS does; ' +
        '--no-purge-cooldown for test environments',
    },
  }),
  ...group('Redis and high availability:', {
    redisAddr: {
      env: ['SHARED_SQS_REDIS_ADDR', 'REDIS_ADDR'],
      read: redisAddr,
      describe:
        'Redis as host:port or redis[s]://[user:password@]host:port; unset: state lives in memory only',
    },
    redisUrl: {
      read: redisUrlFlag,
      describe:
        'Redis as a redis:// or rediss:// (TLS) URL with optional user, password and db; instead of --redis-addr',
    },
    redisPassword: {
      env: ['SHARED_SQS_REDIS_PASSWORD', 'REDIS_PASSWORD'],
      read: secret,
      describe: 'Redis password (prefer the environment: flags show in ps)',
    },
    redisSentinels: {
      read: hostPortList,
      describe:
        'Redis Sentinel addresses, host:port,host:port...; instead of --redis-addr (needs --redis-master-name)',
    },
    redisMasterName: {
      read: trimmed,
      describe: 'The master name the Sentinels know (with --redis-sentinels)',
    },
    redisCluster: {
      read: hostPortList,
      describe:
        'Redis Cluster seed nodes, host:port,host:port... (any few of its nodes); instead of --redis-addr. ' +
        'The 256 shards of the queues spread over its masters',
    },
    redisPrefix: {
      default: '{ssq}:',
      read: redisPrefix,
      describe:
        'Namespace of the Redis keys, written with a hash tag such as {ssq} (where layout 1 kept ' +
        'its keys); layout 2 puts its text without the braces before each shard tag, nothing for {ssq}:',
    },
    redisWaitReplicas: {
      default: '0',
      read: whole(100, 'must be a whole number of replicas from 0 to 100'),
      describe:
        'Replicas that must acknowledge each write (Redis WAIT) before it is answered 200, so that a ' +
        'Sentinel or Cluster failover loses nothing acknowledged; fewer within --redis-wait-timeout: 503',
    },
    redisWaitTimeout: {
      default: '250ms',
      // A wait holds up the calls pipelined behind it, and each has the 1 s command timeout.
      read: duration(500),
      duration: true,
      describe: 'How long a write waits for --redis-wait-replicas, 1ms to 500ms',
    },
    redisWaitAof: {
      ...SWITCH,
      describe: 'Wait until the replicas fsynced each write to their AOF (WAITAOF, Redis 7.2 or newer)',
    },
    leaderElection: {
      ...SWITCH,
      describe: 'Active/passive: serve only while holding the Redis lock (needs Redis)',
    },
    activeActive: {
      ...SWITCH,
      describe:
        'Active/active: every instance serves and routes; the 256 shards spread over the live instances, each on its own lease (needs Redis)',
    },
    internalPort: {
      default: '4102',
      read: port,
      describe: 'With --active-active: the port other instances forward requests to; 0 picks a free port',
    },
    advertiseHost: {
      read: (text: string): string | undefined => host(text),
      describe:
        'With --active-active: the address other instances reach this one at (default: --host, or the hostname when --host is 0.0.0.0)',
    },
    workers: {
      default: '1',
      read: workerCount,
      describe:
        'With --active-active: processes this command runs on this machine (auto: one per core), each an ' +
        'instance with its own shards and heap; the data port is shared, each has its own --internal-port',
    },
    leaderTtl: {
      default: '10s',
      read: duration(),
      duration: true,
      describe: 'Leader lock lifetime, e.g. 10s or 1500ms; must exceed 3 x --leader-interval',
    },
    leaderInterval: {
      default: '3s',
      read: duration(),
      duration: true,
      describe: 'How often the lock is renewed or tried',
    },
  }),
  ...group('Other:', {
    adminToken: {
      read: secret,
      describe:
        'Bearer token of the admin API; unset: admin API closed (prefer the environment: flags show in ps)',
    },
  }),
} as const;

type Flags = typeof FLAGS;

/**
 * The flags' values, as {@link parseConfig} returns them: each field's type is what its flag's
 * `read` returns; durations are milliseconds, sizes bytes; undefined where a flag without a
 * default is unset.
 */
export type Config = {
  readonly [K in keyof Flags]: Flags[K] extends { readonly default: unknown }
    ? Exclude<ReturnType<Flags[K]['read']>, undefined>
    : ReturnType<Flags[K]['read']>;
};

const SPECS: readonly (Flag<unknown> & { readonly key: keyof Config })[] = Object.entries(FLAGS).map(
  ([key, spec]: [string, Omit<Flag<unknown>, 'flag'>]) => ({
    ...spec,
    key: key as keyof Config,
    flag: key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`),
  }),
);
const SPEC = Object.fromEntries(SPECS.map((s) => [s.key, s])) as Record<string, Flag<unknown>> as Readonly<
  Record<keyof Config, Flag<unknown>>
>;

/** Each flag's name and default text (README's Options table is checked against it). */
export const FLAG_TABLE: readonly { readonly flag: string; readonly default?: string }[] = SPECS.map((s) => ({
  flag: s.flag,
  ...(typeof s.default === 'string' ? { default: s.default } : {}),
}));

/**
 * Options as startServer takes them (src/index.ts: the flags in camelCase) as the command line
 * would give them: `--redis-wait-timeout=250ms`, `--no-queue-deleted-recently`, `--cors-origin=a,b`.
 * A number for a duration flag is milliseconds.
 */
export function optionsArgv(options: Readonly<Record<string, unknown>>): string[] {
  const argv: string[] = [];
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined) continue;
    const flag = key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    const duration = SPECS.some((s) => s.flag === flag && s.duration === true);
    if (typeof value === 'boolean') argv.push(value ? `--${flag}` : `--no-${flag}`);
    else if (typeof value === 'number') argv.push(`--${flag}=${value}${duration ? 'ms' : ''}`);
    else if (Array.isArray(value)) argv.push(`--${flag}=${value.join(',')}`);
    else if (typeof value === 'string') argv.push(`--${flag}=${value}`);
    else throw new TypeError(`startServer: option ${key} must be a string, number or boolean`);
  }
  return argv;
}

// ---------------------------------------------------------------------------------------------
// Parsing
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
  const args = readCommandLine(argv, SPECS.map(withShownDefault), { usage: USAGE, epilog: EPILOG });
  const rawOf = (spec: Flag<unknown>): { value: string; from: string } | undefined => {
    const given = args[spec.flag];
    return given === undefined ? fromEnv(spec, env) : { value: given, from: `--${spec.flag}` };
  };
  const sources = new Map<string, string>();
  const valueOf = (spec: Flag<unknown>, context: Context): unknown => {
    const raw = rawOf(spec);
    if (raw !== undefined) sources.set(spec.flag, raw.from);
    const text = raw?.value ?? (context.dev ? (spec.devDefault ?? spec.default) : spec.default);
    if (text === undefined || (text === '' && spec.default === undefined)) return undefined;
    if (typeof text !== 'string') return text(context);
    try {
      return spec.read(text, context);
    } catch (e) {
      if (!(e instanceof Invalid)) throw e;
      const from = raw?.from ?? `--${spec.flag}`;
      throw new ConfigError(`${from} ${e.message}${e.echo ? ` (got ${quote(text)})` : ''}`);
    }
  };
  const dev = valueOf(SPEC.dev, { heapLimit, dev: false }) === true;
  const values = Object.fromEntries(SPECS.map((spec) => [spec.key, valueOf(spec, { heapLimit, dev })]));
  const config = values as Config;
  checkTogether(config, (key) => sources.get(SPEC[key].flag) ?? `--${SPEC[key].flag}`);
  return config;
}

/** The rules that join flags; `from` names the flag or variable a value came from. */
function checkTogether(config: Config, from: (key: keyof Config) => string): void {
  if (config.port !== 0 && config.port === config.controlPort) {
    throw new ConfigError(`${from('port')} and ${from('controlPort')} must differ (both ${config.port})`);
  }
  const redis = (['redisAddr', 'redisUrl', 'redisSentinels', 'redisCluster'] as const).filter(
    (key) => config[key] !== undefined,
  );
  if (redis.length > 1)
    throw new ConfigError(`${redis.map(from).join(' and ')} both name Redis: give one of them`);
  const needs = (key: keyof Config, what: string): never => {
    throw new ConfigError(`${from(key)} needs ${what}`);
  };
  if (config.redisSentinels !== undefined && config.redisMasterName === undefined) {
    needs('redisSentinels', '--redis-master-name');
  }
  if (config.redisWaitAof && config.redisWaitReplicas === 0)
    needs('redisWaitAof', '--redis-wait-replicas of 1 or more');
  if (config.redisWaitReplicas > 0 && redis.length === 0)
    needs('redisWaitReplicas', 'Redis: set --redis-addr');
  if (config.activeActive && redis.length === 0) needs('activeActive', 'Redis: set --redis-addr');
  if (config.activeActive && config.leaderElection) {
    throw new ConfigError(
      `${from('activeActive')} and ${from('leaderElection')} are two ways to run: give one`,
    );
  }
  if (config.workers > 1 && !config.activeActive) {
    needs('workers', '--active-active: each worker is an instance of its own');
  }
  if (config.leaderElection && redis.length === 0) {
    throw new ConfigError('leader election needs Redis: set REDIS_ADDR or --redis-addr');
  }
  if (!(config.leaderTtl > 3 * config.leaderInterval)) {
    throw new ConfigError(
      `${from('leaderTtl')} (${formatDuration(config.leaderTtl)}) must be more than 3 x ` +
        `${from('leaderInterval')} (${formatDuration(config.leaderInterval)}), ` +
        'so that one slow renewal does not cost the lock',
    );
  }
  if (config.checkConfig && config.config === undefined) needs('checkConfig', '--config FILE');
}

const USAGE =
  'Usage: shared-sqs [options]\n\n' +
  'An Amazon SQS server (Query and JSON protocols) with optional Redis persistence and ' +
  'active/passive high availability.';

const EPILOG =
  'Every flag can also be set with its environment variable; the command line wins. ' +
  'Durations take the units ms, s, m, h (Go syntax: 1m30s). Empty environment variables are ignored.';

/** --help's `[default: ...]`, from the default text; `(warn with --dev)` where --dev changes it. */
function withShownDefault(spec: Flag<unknown>): FlagSpec {
  if (spec.shownDefault !== undefined || typeof spec.default !== 'string') return spec;
  const dev = spec.devDefault === undefined ? '' : ` (${spec.devDefault} with --dev)`;
  return { ...spec, shownDefault: `${spec.default}${dev}` };
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
