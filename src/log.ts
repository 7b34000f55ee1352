/**
 * The process logger: pino, JSON lines on stdout, asynchronous writes.
 *
 * Logs are data (test/unit/log.test.ts holds this file to it): a fixed set of fields, and never a secret or a message
 * body. Redaction is therefore done here, once, instead of trusting every call site:
 *
 * - every object passed to a log call is walked (any depth, arrays, flattened Query keys such as
 *   `SendMessageBatchRequestEntry.1.MessageBody`), and the value of each sensitive key (see
 *   {@link SENSITIVE_KEYS}, matched case-insensitively on the part after the last dot) becomes
 *   `[Redacted]`. The walk copies only what it changes, so the caller's objects are never mutated;
 * - `err` goes through pino's error serializer first, then the same walk (an ioredis error carries
 *   the command's `args`, i.e. message bodies);
 * - `req` is serialized to method, url, host and peer only, with the value of sensitive query
 *   parameters (`MessageBody`, `X-Amz-Signature`, `X-Amz-Security-Token`, ...) redacted from the url;
 * - pino's own `redact` covers the same keys at the top level of child-logger bindings, which the
 *   walk cannot see.
 *
 * What it cannot catch: a secret interpolated into the message string itself (`log.info(`${body}`)`)
 * or hidden under an innocent key name. Log ids, names, sizes and MD5s instead.
 */
import { once } from 'node:events';
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger } from 'pino';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export function isLogLevel(value: string): value is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(value);
}

/**
 * The part of a pino logger that the elector, active/passive, persistence and the startup config
 * use, so that their tests can pass a recorder, or {@link quietLog}, instead of a pino instance.
 */
export interface LogSink {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Logs nothing: what a component given no logger uses. */
export const quietLog: LogSink = { info: () => undefined, warn: () => undefined, error: () => undefined };

export const REDACTED = '[Redacted]';

/**
 * Lower-case key names whose values are never logged. Message content (body and attribute values)
 * is the customer's data; the rest are credentials. `args`/`argv` cover Redis commands (which carry
 * message bodies) and command lines (which may carry --admin-token).
 */
export const SENSITIVE_KEYS: ReadonlySet<string> = new Set([
  // credentials
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'x-amz-security-token',
  'x-amz-signature',
  'signature',
  'securitytoken',
  'sessiontoken',
  'secretaccesskey',
  'secret_access_key',
  'secretkey',
  'secret',
  'password',
  'redispassword',
  'redis_password',
  'redis-password',
  'admintoken',
  'admin_token',
  'admin-token',
  'x-admin-token',
  'accesstoken',
  'refreshtoken',
  'apikey',
  'api_key',
  'x-api-key',
  // message content
  'body',
  'messagebody',
  'stringvalue',
  'binaryvalue',
  'stringlistvalues',
  'binarylistvalues',
  'payload',
  // commands and command lines
  'args',
  'argv',
]);

export function isSensitiveKey(key: string): boolean {
  const dot = key.lastIndexOf('.');
  const last = dot === -1 ? key : key.slice(dot + 1);
  return SENSITIVE_KEYS.has(last.toLowerCase());
}

/** Deeper than this, a nested object is replaced by a marker instead of being walked. */
const MAX_DEPTH = 10;
/** Objects visited per log call; past it the rest is replaced by a marker. */
const MAX_NODES = 2000;
const TRUNCATED = '[Truncated]';
const CIRCULAR = '[Circular]';

interface WalkState {
  nodes: number;
  /** The objects on the path from the root to the current one. */
  readonly seen: WeakSet<object>;
}

/**
 * Returns `value` with every sensitive key's value replaced by `[Redacted]`. Returns the very same
 * object when nothing had to change (the common case, no allocation); otherwise copies only the
 * objects on the path to a redacted key.
 */
export function redactValue(value: unknown): unknown {
  return walk(value, 0, { nodes: 0, seen: new WeakSet() });
}

function walk(value: unknown, depth: number, state: WalkState): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer || value instanceof Date) return value;
  // A cycle. Returning the object itself would let pino print it once more, unredacted, before it
  // notices the cycle (its copy of the parent is a different object): print pino's marker instead.
  if (state.seen.has(value)) return CIRCULAR;
  if (depth >= MAX_DEPTH || ++state.nodes > MAX_NODES) return TRUNCATED;
  state.seen.add(value);
  try {
    if (Array.isArray(value)) return walkArray(value, depth, state);
    if (value instanceof Error) {
      const changed = walkObject(value, depth, state);
      // An Error's message and stack are not enumerable: serialize it before copying.
      return changed === value ? value : walkObject(pino.stdSerializers.err(value), depth, state);
    }
    return walkObject(value, depth, state);
  } finally {
    state.seen.delete(value);
  }
}

function walkArray(value: readonly unknown[], depth: number, state: WalkState): unknown {
  let out: unknown[] | undefined;
  for (let i = 0; i < value.length; i++) {
    const item = value[i];
    const redacted = walk(item, depth + 1, state);
    if (redacted !== item) {
      out ??= value.slice();
      out[i] = redacted;
    }
  }
  return out ?? value;
}

function walkObject(value: object, depth: number, state: WalkState): unknown {
  let out: Record<string, unknown> | undefined;
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    const item = record[key];
    let redacted: unknown;
    if (isSensitiveKey(key)) {
      redacted = item === undefined || item === null ? item : REDACTED;
    } else {
      redacted = walk(item, depth + 1, state);
    }
    if (redacted !== item) {
      out ??= { ...record };
      out[key] = redacted;
    }
  }
  return out ?? value;
}

/** Redacts the values of sensitive query parameters (and SigV4 presigning parameters) in a url. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const hash = url.indexOf('#', q);
  const query = hash === -1 ? url.slice(q + 1) : url.slice(q + 1, hash);
  let changed = false;
  const parts = query.split('&').map((part) => {
    const eq = part.indexOf('=');
    const rawName = eq === -1 ? part : part.slice(0, eq);
    let name = rawName;
    try {
      name = decodeURIComponent(rawName.replace(/\+/g, ' '));
    } catch {
      // keep the raw name
    }
    if (eq !== -1 && isSensitiveKey(name)) {
      changed = true;
      return `${rawName}=${REDACTED}`;
    }
    return part;
  });
  if (!changed) return url;
  return `${url.slice(0, q)}?${parts.join('&')}${hash === -1 ? '' : url.slice(hash)}`;
}

interface RequestLike {
  method?: string;
  url?: string;
  host?: string;
  hostname?: string;
  ip?: string;
  socket?: { remoteAddress?: string; remotePort?: number } | null;
}

function serializeReq(req: RequestLike): Record<string, unknown> {
  return {
    method: req.method,
    url: typeof req.url === 'string' ? redactUrl(req.url) : undefined,
    host: req.host ?? req.hostname,
    remoteAddress: req.ip ?? req.socket?.remoteAddress,
    remotePort: req.socket?.remotePort,
  };
}

function serializeRes(res: { statusCode?: number }): Record<string, unknown> {
  return { statusCode: res.statusCode };
}

function serializeErr(err: unknown): unknown {
  return redactValue(err instanceof Error ? pino.stdSerializers.err(err) : err);
}

/** Keys the walk leaves to their serializers (walking a request would walk its socket). */
const SERIALIZED_KEYS = new Set(['req', 'res', 'err']);

function formatLogObject(obj: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  const state: WalkState = { nodes: 0, seen: new WeakSet([obj]) };
  for (const key of Object.keys(obj)) {
    if (SERIALIZED_KEYS.has(key)) continue;
    const item = obj[key];
    const redacted = isSensitiveKey(key)
      ? item === undefined || item === null
        ? item
        : REDACTED
      : walk(item, 1, state);
    if (redacted !== item) {
      out ??= { ...obj };
      out[key] = redacted;
    }
  }
  return out ?? obj;
}

/** fast-redact paths are case-sensitive: the spellings a binding would plausibly use. */
const BINDING_REDACT_PATHS = [
  'authorization',
  'Authorization',
  'x-amz-security-token',
  'X-Amz-Security-Token',
  'adminToken',
  'admin_token',
  'password',
  'redisPassword',
  'body',
  'Body',
  'MessageBody',
  'messageBody',
  'args',
].map((key) => (/^[A-Za-z_$][\w$]*$/.test(key) ? key : `["${key}"]`));

/**
 * The process logger: JSON lines with `level` (label), ISO `time`, `service`, `pid`, `msg`.
 * `destination` defaults to an asynchronous stdout (`pino.destination({ sync: false })`), which pino
 * flushes synchronously when the process exits; call {@link flushLogger} on graceful shutdown.
 */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'shared-sqs', pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: {
        level: (label) => ({ level: label }),
        log: formatLogObject,
      },
      serializers: { req: serializeReq, res: serializeRes, err: serializeErr },
      redact: { paths: BINDING_REDACT_PATHS, censor: REDACTED },
    },
    destination ?? pino.destination({ dest: 1, sync: false }),
  );
}

interface AsyncStreamLike {
  _writing?: unknown;
  once?: unknown;
}

/**
 * Resolves once everything logged so far has been handed to the OS. With `minLength: 0` (our
 * default), SonicBoom's own flush() answers at once even while a write is in flight, so this also
 * waits for that write's 'drain'. Never rejects, never waits more than `timeoutMs`: a stuck stdout
 * must not block shutdown.
 */
export async function flushLogger(logger: Logger, timeoutMs = 2000): Promise<void> {
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), timeoutMs);
  timer.unref();
  try {
    await Promise.race([
      new Promise<void>((resolve) => logger.flush(() => resolve())),
      once(deadline.signal, 'abort'),
    ]);
    const stream = (logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] as
      AsyncStreamLike | undefined;
    if (stream?._writing === true && typeof stream.once === 'function') {
      await Promise.race([
        once(stream as unknown as NodeJS.EventEmitter, 'drain', { signal: deadline.signal }),
        once(deadline.signal, 'abort'),
      ]);
    }
  } catch {
    // a destroyed stream or the timeout: nothing more can be done
  } finally {
    clearTimeout(timer);
  }
}
