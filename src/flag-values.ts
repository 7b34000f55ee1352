/**
 * The checks that turn one flag's text into its value, and the formats of sizes and durations:
 * each throws {@link Invalid} with what is wrong, and the caller (src/config.ts) names the flag or
 * the environment variable the text came from.
 */
import { checkPrefix } from './persistence/keys.js';

export interface RedisHostPort {
  readonly host: string;
  readonly port: number;
}

/** A check's complaint, without the flag's name: `must be exactly 12 digits`. */
export class Invalid extends Error {
  constructor(
    problem: string,
    /** False where the value may be a secret (a password in a URL): it is not echoed. */
    readonly echo = true,
  ) {
    super(problem);
  }
}

export function invalid(problem: string, echo = true): never {
  throw new Invalid(problem, echo);
}

/** A whole number from 0 to `most`, written in digits only (no sign, point or exponent). */
export const whole =
  (most: number, problem: string) =>
  (text: string): number => {
    const n = new RegExp(`^\\d{1,${String(most).length}}$`).test(text.trim()) ? Number(text.trim()) : NaN;
    return n >= 0 && n <= most ? n : invalid(problem);
  };

export const port = whole(65535, 'must be a port number from 0 to 65535');

/** One of `values`, in any case. */
export const oneOf =
  <T extends string>(values: readonly T[]) =>
  (text: string): T =>
    values.find((v) => v === text.trim().toLowerCase()) ?? invalid(`must be one of ${values.join(', ')}`);

/** The flag's text trimmed; blank unsets it. */
export const trimmed = (text: string): string | undefined => (text.trim() === '' ? undefined : text.trim());

/** true/false, 1/0, yes/no, on/off, as a variable or `--switch=<value>` gives it. */
export function booleanOf(text: string): boolean {
  const value = text.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(value)) return true;
  if (['false', '0', 'no', 'off'].includes(value)) return false;
  return invalid('must be true or false');
}

/** `host:port` (IPv6 in brackets) with a port from 1; undefined if it is not. */
function hostPort(text: string): RedisHostPort | undefined {
  const match = /^(\[[0-9A-Fa-f:.%a-z]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/.exec(text);
  const port = Number(match?.[2]);
  if (match === null || !(port >= 1 && port <= 65535)) return undefined;
  return { host: (match[1] ?? '').replace(/^\[(.*)\]$/, '$1'), port };
}

/** A redis:// or rediss:// URL with a host; undefined if it is not. Never echoed: it may hold a password. */
function redisUrl(text: string): URL | undefined {
  try {
    const url = new URL(text);
    return (url.protocol === 'redis:' || url.protocol === 'rediss:') && url.hostname !== '' ? url : undefined;
  } catch {
    return undefined;
  }
}

export function redisAddr(text: string): string | undefined {
  text = text.trim();
  if (text === '') return undefined;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    return redisUrl(text) !== undefined
      ? text
      : invalid('must be host:port or a redis:// or rediss:// URL', false);
  }
  return hostPort(text) !== undefined
    ? text
    : invalid('must be host:port (e.g. 127.0.0.1:6379) or a redis:// URL');
}

export function redisUrlFlag(text: string): string | undefined {
  text = text.trim();
  if (text === '') return undefined;
  const url = redisUrl(text) ?? invalid('must be a redis:// or rediss:// URL', false);
  if (!/^\/?\d*$/.test(url.pathname) || url.search !== '' || url.hash !== '') {
    invalid('takes no path but a database number (redis://host:port/0)', false);
  }
  return text;
}

/** --redis-sentinels and --redis-cluster: `host:port,host:port...`. */
export function hostPortList(text: string): RedisHostPort[] | undefined {
  if (text.trim() === '') return undefined;
  const problem = 'must be a comma-separated list of host:port';
  const parts = text.split(',').map((part) => part.trim());
  const out = parts.filter((part) => part !== '').map((part) => hostPort(part) ?? invalid(problem));
  return out.length > 0 ? out : invalid(problem);
}

export function region(text: string): string {
  const region = text.trim();
  return /^[a-z0-9]+(?:-[a-z0-9]+)*$/.test(region) && region.length <= 64
    ? region
    : invalid('must look like a region name such as us-east-1 (lower-case letters, digits, dashes)');
}

export function redisPrefix(text: string): string {
  return checkPrefix(text) === undefined && !/[\s\p{Cc}]/u.test(text)
    ? text
    : invalid('must hold a hash tag such as {ssq} (all keys in one Cluster slot) and no spaces');
}

export function host(text: string): string {
  const host = text.trim().replace(/^\[(.*)\]$/, '$1');
  return /^[A-Za-z0-9._:%-]+$/.test(host)
    ? host
    : invalid('must be an IP address or host name without a port');
}

export function baseUrl(text: string): string | undefined {
  if (text === '') return undefined;
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    return invalid('must be an absolute URL like https://sqs.example.com');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') invalid('must start with http:// or https://');
  if (url.username !== '' || url.password !== '') invalid('must not contain credentials', false);
  if (url.pathname !== '/' || url.search !== '' || url.hash !== '') {
    invalid(
      'must be scheme://host[:port] with no path, query or fragment (queue URLs add /<account>/<queue>)',
    );
  }
  return url.origin;
}

/**
 * `*`, or origins as a browser sends them in `Origin` (http(s) ones normalized the way browsers
 * serialize them: lower case, no default port, no trailing slash).
 */
export function corsOrigins(text: string): string[] {
  const origins: string[] = [];
  for (const part of text.split(',')) {
    const origin = part.trim().replace(/\/$/, '');
    if (origin === '') continue;
    const normal = origin === '*' ? origin : (normalizeOrigin(origin) ?? invalid(CORS_PROBLEM));
    if (!origins.includes(normal)) origins.push(normal);
  }
  if (origins.includes('*') && origins.length > 1) invalid('gives * (any origin) with others: give it alone');
  return origins;
}

const CORS_PROBLEM = 'must be * or origins like http://localhost:3000 (scheme://host[:port], no path)';

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

export function secret(text: string): string | undefined {
  if (text === '') return undefined;
  // Such a value could never match an HTTP header (or is a stray newline from a file).
  return /[\s\p{Cc}]/u.test(text)
    ? invalid('must not contain spaces, newlines or control characters', false)
    : text;
}

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

const SIZE_UNITS: Readonly<Record<string, number>> = {
  ...{ '': 1, b: 1 },
  ...{ k: 1024, kb: 1024, kib: 1024 },
  ...{ m: 1024 ** 2, mb: 1024 ** 2, mib: 1024 ** 2 },
  ...{ g: 1024 ** 3, gb: 1024 ** 3, gib: 1024 ** 3 },
};

/** Parses `512mb`, `4gb`, `1.5g`, `64 MiB`, `65536` into bytes (units are powers of 1024); undefined if not a size. */
export function parseSize(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(text.trim());
  const unit = SIZE_UNITS[(match?.[2] ?? '').toLowerCase()];
  return match === null || unit === undefined ? undefined : Math.floor(Number(match[1]) * unit);
}

/** Bytes as an operator reads them: 64.0 MiB, 1.50 GiB. */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 ** 3) return `${(bytes / 1024 ** 3).toFixed(2)} GiB`;
  if (bytes >= 1024 ** 2) return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${bytes} B`;
}

export function maxMemory(text: string, heapLimit: number): number {
  const bytes = parseSize(text) ?? invalid('must be a size like 512mb or 4gb');
  // Below this a single 1 MiB message could not be stored with its overhead.
  if (bytes < 2 * 1024 ** 2) invalid('must be at least 2mb');
  if (bytes > Math.floor(heapLimit * MAX_MEMORY_FRACTION)) {
    invalid(
      `(${formatBytes(bytes)}) is more than ${MAX_MEMORY_FRACTION * 100} % of this process's V8 heap limit ` +
        `(${formatBytes(heapLimit)}): lower it, or give node a larger --max-old-space-size`,
      false,
    );
  }
  return bytes;
}

const DURATION_UNITS_MS: Readonly<Record<string, number>> = {
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

/** Longest timer Node can set (setTimeout clamps anything above to 1 ms). */
const MAX_DURATION_MS = 2 ** 31 - 1;

export const duration =
  (most = MAX_DURATION_MS) =>
  (text: string): number => {
    const ms = parseDurationMs(text) ?? invalid('must be a duration like 10s, 500ms or 1m30s');
    return ms >= 1 && ms <= most ? ms : invalid(`must be between 1ms and ${formatDuration(most)}`);
  };
