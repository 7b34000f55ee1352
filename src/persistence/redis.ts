/**
 * The Redis client the writer and the loader use, built from whichever of the connection flags
 * were given: `--redis-addr host:port`, `--redis-url redis[s]://...`, or Sentinel
 * (`--redis-sentinels host:port,...` + `--redis-master-name`).
 *
 * A fenced writer must never have a write applied later than it believes (docs/faults.md rows 3 and 10): so no
 * offline queue (a command sent while disconnected fails at once instead of waiting), no resend of
 * unanswered commands after a reconnect, and a command timeout of about a second after which the
 * outcome is unknown and the request gets a 503. Reconnection itself goes on in the background,
 * with a backoff capped at 2 s.
 */
import { Redis, type RedisOptions } from 'ioredis';

export interface RedisTarget {
  /** `host:port`, or a `redis://` / `rediss://` (TLS) URL with optional user, password and db. */
  readonly url?: string | undefined;
  /** Used when the URL carries none; for Sentinel, the master's password. */
  readonly password?: string | undefined;
  /** Sentinel mode when non-empty: these are asked for the master named `masterName`. */
  readonly sentinels?: readonly { readonly host: string; readonly port: number }[] | undefined;
  readonly masterName?: string | undefined;
  /** Default 1000 ms. */
  readonly commandTimeoutMs?: number | undefined;
  /** CLIENT SETNAME, so CLIENT LIST tells the connections apart; default `shared-sqs`. */
  readonly connectionName?: string | undefined;
}

export const COMMAND_TIMEOUT_MS = 1000;

export function redisOptions(t: RedisTarget): RedisOptions {
  const base: RedisOptions = {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    commandTimeout: t.commandTimeoutMs ?? COMMAND_TIMEOUT_MS,
    connectTimeout: 2000,
    enableReadyCheck: true,
    connectionName: t.connectionName ?? 'shared-sqs',
    retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2000),
    // After a Sentinel failover the old master answers writes with READONLY: reconnect (the
    // Sentinel connector then finds the new master), but never resend the refused command.
    reconnectOnError: (err) => err.message.startsWith('READONLY'),
  };
  if (t.password !== undefined) base.password = t.password;
  if (t.sentinels !== undefined && t.sentinels.length > 0) {
    if (t.masterName === undefined || t.masterName === '') {
      throw new Error('Redis Sentinel needs the master name (--redis-master-name)');
    }
    return {
      ...base,
      sentinels: t.sentinels.map((s) => ({ host: s.host, port: s.port })),
      name: t.masterName,
      role: 'master',
      sentinelRetryStrategy: (times) => Math.min(100 * 2 ** Math.min(times, 5), 2000),
    };
  }
  if (t.url === undefined || t.url === '') throw new Error('no Redis address given');
  if (/^rediss?:\/\//i.test(t.url)) {
    const u = new URL(t.url);
    const opts: RedisOptions = {
      ...base,
      host: u.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: u.port === '' ? 6379 : Number(u.port),
    };
    if (u.username !== '') opts.username = decodeURIComponent(u.username);
    if (u.password !== '') opts.password = decodeURIComponent(u.password);
    const db = u.pathname.replace(/^\//, '');
    if (db !== '') {
      if (!/^\d+$/.test(db)) throw new Error('the path of a Redis URL is the database number');
      opts.db = Number(db);
    }
    // tls.connect takes the server name for SNI and the certificate check from the host.
    if (u.protocol === 'rediss:') opts.tls = {};
    return opts;
  }
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(t.url);
  if (m === null) throw new Error('the Redis address must be host:port or a redis:// or rediss:// URL');
  return { ...base, host: m[1] ?? '', port: Number(m[2]) };
}

export function createRedis(t: RedisTarget): Redis {
  // RESP2-compatible reply shapes (ioredis' default), spelled out for its typings.
  return new Redis({ ...redisOptions(t), replyMapping: 'legacy' });
}

/** A client that is connected (for tools and tests; the server lets Persistence wait for Redis). */
export async function connectRedis(t: RedisTarget): Promise<Redis> {
  const redis = createRedis(t);
  redis.on('error', () => undefined);
  await redis.connect();
  return redis;
}
