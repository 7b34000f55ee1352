/**
 * Command-line flags and environment variables, parsed once at start into a plain {@link Config}.
 *
 * Sources, strongest first: the command line, then `SHARED_SQS_<FLAG_IN_UPPER_SNAKE>`, then the
 * Go predecessor's plain names (`REDIS_ADDR`, `REDIS_PASSWORD`), then the default. An empty
 * environment variable counts as unset; an empty value for an optional flag (`--redis-addr=`) unsets
 * it, overriding the environment. Go-style single-dash long flags (`-port=4100`) are accepted, since
 * units written for the predecessor use them. Environment variables with the prefix that match no flag
 * are ignored.
 *
 * The environment is read from the `env` argument only, so tests can pass their own.
 *
 * The command line is read by yargs-parser, the parser inside yargs, with the options yargs gave it;
 * yargs' own checks and --help layout are done here. Loading yargs took about 150 ms of a 0.8 s
 * start (`shared-sqs admin` still uses it).
 */
import { readFileSync } from 'node:fs';
import { getHeapStatistics } from 'node:v8';
import yargsParser from 'yargs-parser';
import { AUTH_MODES, type AuthMode } from './auth/authenticate.js';
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
  /** off: requests act in the default account (or their 12-digit key's); on: SigV4 with a tenant's key. */
  readonly auth: AuthMode;
  /** A JSON file of tenants and queues to create at start (src/startup-config.ts); undefined: none. */
  readonly configFile: string | undefined;
  /** Requests the process sends itself after start so its hot code is compiled (src/http/warmup.ts); 0: none. */
  readonly warmupRequests: number;
  /**
   * Bytes the store may hold (bodies, attributes, per-message and per-queue overhead, as
   * src/core/budget.ts counts them); sends over it are refused. Default: {@link defaultMaxMemory}.
   */
  readonly maxMemory: number;
  /**
   * Origins (`scheme://host[:port]`) whose pages may call the data plane from a browser (CORS),
   * or `['*']` for any; empty: no CORS headers, as without the flag (src/http/cors.ts).
   */
  readonly corsOrigins: readonly string[];
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

export const ENV_PREFIX = 'SHARED_SQS';

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

function parseMaxMemory(raw: Raw<string> | undefined, heapLimit: number): number {
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

const STRING_FLAGS = [
  'port',
  'control-port',
  'host',
  'region',
  'account-id',
  'base-url',
  'log-level',
  'redis-addr',
  'redis-url',
  'redis-password',
  'redis-sentinels',
  'redis-master-name',
  'redis-prefix',
  'redis-wait-replicas',
  'redis-wait-timeout',
  'leader-ttl',
  'leader-interval',
  'admin-token',
  'auth',
  'config',
  'warmup-requests',
  'max-memory',
  'cors-origin',
] as const;
const BOOLEAN_FLAGS = ['leader-election', 'queue-deleted-recently', 'redis-wait-aof'] as const;
type StringFlag = (typeof STRING_FLAGS)[number];
type BooleanFlag = (typeof BOOLEAN_FLAGS)[number];
type Flag = StringFlag | BooleanFlag;

export function envName(flag: Flag): string {
  return `${ENV_PREFIX}_${flag.toUpperCase().replace(/-/g, '_')}`;
}

const EXTRA_ENV: Partial<Record<Flag, readonly string[]>> = {
  'redis-addr': ['REDIS_ADDR'],
  'redis-password': ['REDIS_PASSWORD'],
};

function envNames(flag: Flag): readonly string[] {
  return [envName(flag), ...(EXTRA_ENV[flag] ?? [])];
}

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
// The command line and --help
// ---------------------------------------------------------------------------------------------

interface FlagHelp {
  readonly group: string;
  readonly describe: string;
  /** Shown as [default: ...]; omitted for flags without a default. */
  readonly shownDefault?: string;
}

const GROUP_SERVER = 'Server:';
const GROUP_REDIS = 'Redis and high availability:';
const GROUP_OTHER = 'Other:';

const FLAG_HELP: Record<Flag, FlagHelp> = {
  port: {
    group: GROUP_SERVER,
    describe: 'Data plane (SQS API) port; 0 picks a free port',
    shownDefault: '4100',
  },
  'control-port': {
    group: GROUP_SERVER,
    describe: 'Control plane port (/health, /ready, /metrics, admin); 0 picks a free port',
    shownDefault: '4101',
  },
  host: {
    group: GROUP_SERVER,
    describe: 'Address both planes listen on: 0.0.0.0 is every interface; 127.0.0.1 keeps them local',
    shownDefault: '0.0.0.0',
  },
  region: { group: GROUP_SERVER, describe: 'Region in queue ARNs and URLs', shownDefault: 'us-east-1' },
  'account-id': {
    group: GROUP_SERVER,
    describe: 'Account id (12 digits) in queue ARNs and URLs when auth is off',
    shownDefault: '000000000000',
  },
  'base-url': {
    group: GROUP_SERVER,
    describe:
      'Public scheme://host[:port] of the data plane, used in queue URLs; unset: taken from each ' +
      "request's Host, X-Forwarded-Proto and X-Forwarded-Host",
  },
  'log-level': { group: GROUP_SERVER, describe: `One of ${LOG_LEVELS.join(', ')}`, shownDefault: 'info' },
  'warmup-requests': {
    group: GROUP_SERVER,
    describe:
      'Requests the process sends to a private copy of its data plane after start, so that a failover ' +
      'or a restart under load does not meet cold code; 0 turns the warm-up off',
    shownDefault: String(DEFAULTS.warmupRequests),
  },
  'max-memory': {
    group: GROUP_SERVER,
    describe:
      'Memory budget of the stored messages, e.g. 512mb or 4gb (k/m/g are powers of 1024); sends over it ' +
      'are refused with RequestThrottled, which the SDKs retry. Must stay under the V8 heap limit ' +
      '(node --max-old-space-size)',
    shownDefault: `${Math.round(DEFAULT_MEMORY_FRACTION * 100)} % of the V8 heap limit, here ${formatBytes(
      defaultMaxMemory(getHeapStatistics().heap_size_limit),
    )}`,
  },
  'queue-deleted-recently': {
    group: GROUP_SERVER,
    describe:
      'Refuse to recreate a queue for 60 s after DeleteQueue, as AWS does; ' +
      '--no-queue-deleted-recently for test environments',
    shownDefault: 'true',
  },
  'redis-addr': {
    group: GROUP_REDIS,
    describe: 'Redis as host:port or redis[s]://[user:password@]host:port; unset: state lives in memory only',
  },
  'redis-url': {
    group: GROUP_REDIS,
    describe:
      'Redis as a redis:// or rediss:// (TLS) URL with optional user, password and db; instead of --redis-addr',
  },
  'redis-password': {
    group: GROUP_REDIS,
    describe: 'Redis password (prefer the environment: flags show in ps)',
  },
  'redis-sentinels': {
    group: GROUP_REDIS,
    describe:
      'Redis Sentinel addresses, host:port,host:port...; instead of --redis-addr (needs --redis-master-name)',
  },
  'redis-master-name': {
    group: GROUP_REDIS,
    describe: 'The master name the Sentinels know (with --redis-sentinels)',
  },
  'redis-prefix': {
    group: GROUP_REDIS,
    describe: 'Prefix of every Redis key; must hold a hash tag such as {ssq}',
    shownDefault: '{ssq}:',
  },
  'redis-wait-replicas': {
    group: GROUP_REDIS,
    describe:
      'Replicas that must acknowledge each write (Redis WAIT) before it is answered 200, so that a ' +
      'Sentinel failover loses nothing acknowledged; fewer within --redis-wait-timeout: 503',
    shownDefault: '0',
  },
  'redis-wait-timeout': {
    group: GROUP_REDIS,
    describe: 'How long a write waits for --redis-wait-replicas, 1ms to 500ms',
    shownDefault: '250ms',
  },
  'redis-wait-aof': {
    group: GROUP_REDIS,
    describe: 'Wait until the replicas fsynced each write to their AOF (WAITAOF, Redis 7.2 or newer)',
    shownDefault: 'false',
  },
  'leader-election': {
    group: GROUP_REDIS,
    describe: 'Active/passive: serve only while holding the Redis lock (needs Redis)',
    shownDefault: 'false',
  },
  'leader-ttl': {
    group: GROUP_REDIS,
    describe: 'Leader lock lifetime, e.g. 10s or 1500ms; must exceed 3 x --leader-interval',
    shownDefault: '10s',
  },
  'leader-interval': {
    group: GROUP_REDIS,
    describe: 'How often the lock is renewed or tried',
    shownDefault: '3s',
  },
  auth: {
    group: GROUP_SERVER,
    describe:
      'off: no signature checked, requests act in --account-id (or in the account their 12-digit access ' +
      "key id names); on: every request needs a valid SigV4 signature made with a tenant's key",
    shownDefault: 'off',
  },
  config: {
    group: GROUP_SERVER,
    describe: 'JSON file of tenants (with keys) and queues to create at start if missing (docs/admin.md)',
  },
  'cors-origin': {
    group: GROUP_SERVER,
    describe:
      'Origin whose pages may call the data plane from a browser (CORS), e.g. http://localhost:3000, ' +
      'or * for any; repeat the flag or separate origins with commas; unset: no CORS headers',
  },
  'admin-token': {
    group: GROUP_OTHER,
    describe:
      'Bearer token of the admin API; unset: admin API closed (prefer the environment: flags show in ps)',
  },
};

const USAGE =
  'Usage: shared-sqs [options]\n\n' +
  'An Amazon SQS server (Query and JSON protocols) with optional Redis persistence and ' +
  'active/passive high availability.';

const EPILOG =
  'Every flag can also be set with its environment variable; the command line wins. ' +
  'Durations take the units ms, s, m, h (Go syntax: 1m30s). Empty environment variables are ignored.';

const HELP_WIDTH = 100;

/** Splits `text` into lines of at most `width` characters at spaces (each paragraph on its own). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  for (const paragraph of text.split('\n')) {
    let line = '';
    for (const word of paragraph.split(' ')) {
      if (line !== '' && line.length + 1 + word.length > width) {
        lines.push(line);
        line = word;
      } else {
        line = line === '' ? word : `${line} ${word}`;
      }
    }
    lines.push(line);
  }
  return lines;
}

/** The --help text, laid out as yargs laid it out (groups, aligned columns, 100 wide). */
function helpText(): string {
  const groups = new Map<string, [label: string, text: string][]>();
  const row = (group: string, label: string, text: string): void => {
    const rows = groups.get(group) ?? [];
    rows.push([label, text]);
    groups.set(group, rows);
  };
  for (const flag of Object.keys(FLAG_HELP) as Flag[]) {
    const help = FLAG_HELP[flag];
    const notes = [
      help.shownDefault === undefined ? '' : `[default: ${help.shownDefault}]`,
      `[env: ${envNames(flag).join(', ')}]`,
    ]
      .filter(Boolean)
      .join(' ');
    // Long flags are indented past the `-h, ` of --help.
    row(help.group, `    --${flag}`, `${help.describe} ${notes}`);
  }
  row(GROUP_OTHER, '-h, --help', 'Show help');
  row(GROUP_OTHER, '    --version', 'Show version number');
  const out = [...wrap(USAGE, HELP_WIDTH), ''];
  for (const [group, rows] of groups) {
    out.push(group);
    const width = Math.max(...rows.map(([label]) => label.length)) + 4;
    for (const [label, text] of rows) {
      wrap(text, HELP_WIDTH - width).forEach((line, i) => {
        out.push((i === 0 ? `  ${label}` : '').padEnd(width) + line);
      });
    }
    out.push('');
  }
  out.push(...wrap(EPILOG, HELP_WIDTH));
  return out.join('\n');
}

const KNOWN_LONG_FLAGS: ReadonlySet<string> = new Set<string>([
  ...STRING_FLAGS,
  ...BOOLEAN_FLAGS,
  ...BOOLEAN_FLAGS.map((flag) => `no-${flag}`),
  'help',
  'version',
]);

/**
 * Before the parser: `-port=1` (Go's flag package) becomes `--port=1`, and `--leader-election=<v>`
 * is checked here, because the parser silently reads anything but "true" (even "1") as false.
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
    if (dashes === '-' && (name.length === 1 || !KNOWN_LONG_FLAGS.has(name))) {
      out.push(arg); // a short flag like -h, or something the parser reports as unknown
      continue;
    }
    if (name.startsWith('no-') && !(BOOLEAN_FLAGS as readonly string[]).includes(name.slice(3))) {
      // the parser would set a string flag to false and we would quietly use the default
      throw new ConfigError(`unknown argument: ${dashes}${name}`);
    }
    const negated = name.startsWith('no-');
    const booleanFlag = negated ? name.slice(3) : name;
    if (assigned !== undefined && (BOOLEAN_FLAGS as readonly string[]).includes(booleanFlag)) {
      if (negated) throw new ConfigError(`--${name} takes no value`);
      const value = parseBoolean(assigned.slice(1));
      if (value === undefined) {
        throw new ConfigError(`--${name} must be true or false (got ${quote(assigned.slice(1))})`);
      }
      out.push(value ? `--${name}` : `--no-${name}`);
      continue;
    }
    out.push(`--${name}${assigned ?? ''}`);
  }
  return out.concat(argv.slice(i));
}

type ParsedArgs = Partial<Record<StringFlag, string>> & Partial<Record<BooleanFlag, boolean>>;

const KNOWN_KEYS: ReadonlySet<string> = new Set<string>([
  ...STRING_FLAGS,
  ...BOOLEAN_FLAGS,
  'help',
  'h',
  'version',
]);

/**
 * Reads the command line as yargs (strict, `--help`, `--version`) did, in its order: help, then
 * version, then the parser's own error (a flag without its value), then unknown flags and
 * positional arguments; arguments after `--` are refused last.
 */
function parseArgs(args: readonly string[]): ParsedArgs {
  const { argv, error } = yargsParser.detailed([...args], parserOptions(false));
  const positional = argv._.map(String);
  if (argv['help'] === true) throw new HelpRequested('help', helpText());
  if (argv['version'] === true) throw new HelpRequested('version', VERSION);
  // yargs dropped a trailing `help` word and skipped its checks, without showing help: kept so.
  const checked = positional.at(-1) !== 'help';
  if (!checked) positional.pop();
  if (checked && error) {
    const missing = /^Not enough arguments following: (.*)$/.exec(error.message);
    throw new ConfigError(
      oneLine(missing?.[1] === undefined ? error.message : `--${missing[1]} needs a value`),
    );
  }
  const unknown = checked
    ? Object.keys(argv).filter((key) => key !== '_' && key !== '--' && !KNOWN_KEYS.has(key))
    : [];
  if (checked) for (const arg of positional) if (!unknown.includes(arg)) unknown.push(arg);
  if (unknown.length > 0) {
    // The parser names flags without their dashes: give them back as they were typed.
    const names = unknown.map((name) => {
      for (const dashes of ['--', '-']) {
        const typed = `${dashes}${name}`;
        if (args.some((arg) => arg === typed || arg.startsWith(`${typed}=`))) return typed;
      }
      return quote(name);
    });
    throw new ConfigError(
      oneLine(`unknown ${names.length === 1 ? 'argument' : 'arguments'}: ${names.join(', ')}`),
    );
  }
  const afterDashes: unknown = argv['--'];
  const rest = Array.isArray(afterDashes) ? [...positional, ...afterDashes.map(String)] : positional;
  if (rest[0] !== undefined) {
    throw new ConfigError(`unexpected argument ${quote(rest[0])}: shared-sqs takes only options`);
  }
  const result: ParsedArgs = {};
  for (const flag of STRING_FLAGS) {
    const value: unknown = argv[flag];
    if (typeof value === 'string') result[flag] = value;
  }
  // The one repeatable flag: every occurrence counts, where other flags keep their last value.
  if (result['cors-origin'] !== undefined) {
    const all: unknown = yargsParser([...args], parserOptions(true))['cors-origin'];
    result['cors-origin'] = (Array.isArray(all) ? all : [all]).map(String).join(',');
  }
  for (const flag of BOOLEAN_FLAGS) {
    const value: unknown = argv[flag];
    if (typeof value === 'boolean') result[flag] = value;
  }
  return result;
}

function parserOptions(duplicatesAsArray: boolean): yargsParser.Options {
  return {
    string: [...STRING_FLAGS],
    boolean: [...BOOLEAN_FLAGS, 'help', 'version'],
    alias: { help: ['h'] },
    narg: Object.fromEntries(STRING_FLAGS.map((flag) => [flag, 1])),
    configuration: {
      'camel-case-expansion': false,
      'dot-notation': false,
      'duplicate-arguments-array': duplicatesAsArray,
      'parse-numbers': false,
      'parse-positional-numbers': false,
      'populate--': true,
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Sources and validation
// ---------------------------------------------------------------------------------------------

/** A raw value and where it came from (`--port` or `SHARED_SQS_PORT`), for error messages. */
interface Raw<T> {
  readonly value: T;
  readonly from: string;
}

class Sources {
  constructor(
    private readonly args: ParsedArgs,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  string(flag: StringFlag): Raw<string> | undefined {
    const fromArgs = this.args[flag];
    if (fromArgs !== undefined) return { value: fromArgs, from: `--${flag}` };
    return this.fromEnv(flag);
  }

  boolean(flag: BooleanFlag): Raw<boolean> | undefined {
    const fromArgs = this.args[flag];
    if (fromArgs !== undefined) return { value: fromArgs, from: `--${flag}` };
    const raw = this.fromEnv(flag);
    if (raw === undefined) return undefined;
    const value = parseBoolean(raw.value);
    if (value === undefined)
      throw new ConfigError(`${raw.from} must be true or false (got ${quote(raw.value)})`);
    return { value, from: raw.from };
  }

  private fromEnv(flag: Flag): Raw<string> | undefined {
    for (const name of envNames(flag)) {
      const value = this.env[name];
      if (value !== undefined && value !== '') return { value, from: name };
    }
    return undefined;
  }
}

function parseBoolean(text: string): boolean | undefined {
  switch (text.trim().toLowerCase()) {
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
      return undefined;
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
function fail(raw: Raw<string>, problem: string): never {
  throw new ConfigError(`${raw.from} ${problem} (got ${quote(raw.value)})`);
}

function parsePort(raw: Raw<string> | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const text = raw.value.trim();
  const port = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(port >= 0 && port <= 65535)) fail(raw, 'must be a port number from 0 to 65535');
  return port;
}

function parseWarmupRequests(raw: Raw<string> | undefined): number {
  if (raw === undefined) return DEFAULTS.warmupRequests;
  const text = raw.value.trim();
  const n = /^\d{1,7}$/.test(text) ? Number(text) : NaN;
  if (!(n >= 0 && n <= 1_000_000)) fail(raw, 'must be a whole number from 0 to 1000000');
  return n;
}

const MAX_WAIT_TIMEOUT_MS = 500;

function parseWaitReplicas(raw: Raw<string> | undefined): number {
  if (raw === undefined) return DEFAULTS.redisWaitReplicas;
  const text = raw.value.trim();
  const n = /^\d{1,3}$/.test(text) ? Number(text) : NaN;
  if (!(n >= 0 && n <= 100)) fail(raw, 'must be a whole number of replicas from 0 to 100');
  return n;
}

function parseHost(raw: Raw<string> | undefined): string {
  if (raw === undefined) return DEFAULTS.host;
  let host = raw.value.trim();
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  if (!/^[A-Za-z0-9._:%-]+$/.test(host)) fail(raw, 'must be an IP address or host name without a port');
  return host;
}

function parseRegion(raw: Raw<string> | undefined): string {
  if (raw === undefined) return DEFAULTS.region;
  const region = raw.value.trim();
  if (!/^[a-z0-9]+(?:-[a-z0-9]+)*$/.test(region) || region.length > 64) {
    fail(raw, 'must look like a region name such as us-east-1 (lower-case letters, digits, dashes)');
  }
  return region;
}

function parseAccountId(raw: Raw<string> | undefined): string {
  if (raw === undefined) return DEFAULTS.accountId;
  const id = raw.value.trim();
  if (!/^\d{12}$/.test(id)) fail(raw, 'must be exactly 12 digits');
  return id;
}

function parseBaseUrl(raw: Raw<string> | undefined): string | undefined {
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

function parseLogLevel(raw: Raw<string> | undefined): LogLevel {
  if (raw === undefined) return DEFAULTS.logLevel;
  const level = raw.value.trim().toLowerCase();
  if (!isLogLevel(level)) fail(raw, `must be one of ${LOG_LEVELS.join(', ')}`);
  return level;
}

function parseRedisAddr(raw: Raw<string> | undefined): string | undefined {
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
function parseRedisUrl(raw: Raw<string> | undefined): string | undefined {
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

function parseRedisSentinels(raw: Raw<string> | undefined): RedisHostPort[] | undefined {
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

function parseRedisPrefix(raw: Raw<string> | undefined): string {
  if (raw === undefined) return DEFAULTS.redisPrefix;
  const problem = checkPrefix(raw.value);
  if (problem !== undefined || /[\s\p{Cc}]/u.test(raw.value)) {
    fail(raw, 'must hold a hash tag such as {ssq} (all keys in one Cluster slot) and no spaces');
  }
  return raw.value;
}

function parseAuth(raw: Raw<string> | undefined): AuthMode {
  if (raw === undefined) return DEFAULTS.auth;
  const mode = raw.value.trim().toLowerCase();
  const found = AUTH_MODES.find((m) => m === mode);
  if (found === undefined) fail(raw, `must be one of ${AUTH_MODES.join(', ')}`);
  return found;
}

function parseConfigFile(raw: Raw<string> | undefined): string | undefined {
  if (raw === undefined || raw.value.trim() === '') return undefined;
  return raw.value.trim();
}

/**
 * --cors-origin: `*`, or origins as a browser sends them in `Origin` (http(s) ones normalized the
 * way browsers serialize them: lower case, no default port, no trailing slash).
 */
function parseCorsOrigins(raw: Raw<string> | undefined): string[] {
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

function parseSecret(raw: Raw<string> | undefined): string | undefined {
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

function parseDuration(raw: Raw<string> | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const ms = parseDurationMs(raw.value);
  if (ms === undefined) fail(raw, 'must be a duration like 10s, 500ms or 1m30s');
  if (ms < 1 || ms > MAX_DURATION_MS) fail(raw, `must be between 1ms and ${formatDuration(MAX_DURATION_MS)}`);
  return ms;
}

/**
 * Parses flags (`argv` without node and the script, i.e. `process.argv.slice(2)`) and environment.
 * Throws {@link ConfigError} for anything invalid and {@link HelpRequested} for --help / --version.
 */
export function parseConfig(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  heapLimit: number = getHeapStatistics().heap_size_limit,
): Config {
  const src = new Sources(parseArgs(normalizeArgs(argv)), env);

  const portRaw = src.string('port');
  const controlPortRaw = src.string('control-port');
  const port = parsePort(portRaw, DEFAULTS.port);
  const controlPort = parsePort(controlPortRaw, DEFAULTS.controlPort);
  if (port !== 0 && port === controlPort) {
    throw new ConfigError(
      `${portRaw?.from ?? '--port'} and ${controlPortRaw?.from ?? '--control-port'} must differ (both ${port})`,
    );
  }

  const redisAddrRaw = src.string('redis-addr');
  const redisUrlRaw = src.string('redis-url');
  const sentinelsRaw = src.string('redis-sentinels');
  const redisAddr = parseRedisAddr(redisAddrRaw);
  const redisUrl = parseRedisUrl(redisUrlRaw);
  const redisSentinels = parseRedisSentinels(sentinelsRaw);
  const given = [
    redisAddr === undefined ? undefined : (redisAddrRaw?.from ?? '--redis-addr'),
    redisUrl === undefined ? undefined : (redisUrlRaw?.from ?? '--redis-url'),
    redisSentinels === undefined ? undefined : (sentinelsRaw?.from ?? '--redis-sentinels'),
  ].filter((from) => from !== undefined);
  if (given.length > 1) {
    throw new ConfigError(`${given.join(' and ')} both name Redis: give one of them`);
  }
  const masterRaw = src.string('redis-master-name');
  const redisMasterName =
    masterRaw === undefined || masterRaw.value.trim() === '' ? undefined : masterRaw.value.trim();
  if (redisSentinels !== undefined && redisMasterName === undefined) {
    throw new ConfigError(`${sentinelsRaw?.from ?? '--redis-sentinels'} needs --redis-master-name`);
  }
  const waitReplicasRaw = src.string('redis-wait-replicas');
  const redisWaitReplicas = parseWaitReplicas(waitReplicasRaw);
  const waitTimeoutRaw = src.string('redis-wait-timeout');
  const redisWaitTimeoutMs = parseDuration(waitTimeoutRaw, DEFAULTS.redisWaitTimeoutMs);
  if (waitTimeoutRaw !== undefined && redisWaitTimeoutMs > MAX_WAIT_TIMEOUT_MS) {
    // A wait holds up the calls pipelined behind it, and each has the 1 s command timeout.
    fail(waitTimeoutRaw, `must be between 1ms and ${MAX_WAIT_TIMEOUT_MS}ms`);
  }
  const waitAofRaw = src.boolean('redis-wait-aof');
  const redisWaitAof = waitAofRaw?.value ?? DEFAULTS.redisWaitAof;
  if (redisWaitAof && redisWaitReplicas === 0) {
    throw new ConfigError(
      `${waitAofRaw?.from ?? '--redis-wait-aof'} needs --redis-wait-replicas of 1 or more`,
    );
  }
  if (redisWaitReplicas > 0 && given.length === 0) {
    throw new ConfigError(
      `${waitReplicasRaw?.from ?? '--redis-wait-replicas'} needs Redis: set --redis-addr`,
    );
  }
  const leaderElection = src.boolean('leader-election')?.value ?? DEFAULTS.leaderElection;
  if (leaderElection && given.length === 0) {
    throw new ConfigError('leader election needs Redis: set REDIS_ADDR or --redis-addr');
  }

  const ttlRaw = src.string('leader-ttl');
  const intervalRaw = src.string('leader-interval');
  const leaderTtlMs = parseDuration(ttlRaw, DEFAULTS.leaderTtlMs);
  const leaderIntervalMs = parseDuration(intervalRaw, DEFAULTS.leaderIntervalMs);
  if (!(leaderTtlMs > 3 * leaderIntervalMs)) {
    throw new ConfigError(
      `${ttlRaw?.from ?? '--leader-ttl'} (${formatDuration(leaderTtlMs)}) must be more than 3 x ` +
        `${intervalRaw?.from ?? '--leader-interval'} (${formatDuration(leaderIntervalMs)}), ` +
        'so that one slow renewal does not cost the lock',
    );
  }

  return {
    port,
    controlPort,
    host: parseHost(src.string('host')),
    region: parseRegion(src.string('region')),
    accountId: parseAccountId(src.string('account-id')),
    baseUrl: parseBaseUrl(src.string('base-url')),
    logLevel: parseLogLevel(src.string('log-level')),
    redisAddr,
    redisUrl,
    redisPassword: parseSecret(src.string('redis-password')),
    redisSentinels,
    redisMasterName,
    redisPrefix: parseRedisPrefix(src.string('redis-prefix')),
    redisWaitReplicas,
    redisWaitTimeoutMs,
    redisWaitAof,
    leaderElection,
    leaderTtlMs,
    leaderIntervalMs,
    adminToken: parseSecret(src.string('admin-token')),
    queueDeletedRecently: src.boolean('queue-deleted-recently')?.value ?? DEFAULTS.queueDeletedRecently,
    auth: parseAuth(src.string('auth')),
    configFile: parseConfigFile(src.string('config')),
    warmupRequests: parseWarmupRequests(src.string('warmup-requests')),
    maxMemory: parseMaxMemory(src.string('max-memory'), heapLimit),
    corsOrigins: parseCorsOrigins(src.string('cors-origin')),
  };
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
