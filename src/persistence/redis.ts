/**
 * The Redis client the writer and the loader use, built from whichever of the connection flags
 * were given: `--redis-addr host:port`, `--redis-url redis[s]://...`, Sentinel
 * (`--redis-sentinels host:port,...` + `--redis-master-name`), or a Redis Cluster
 * (`--redis-cluster host:port,...`).
 *
 * A fenced writer must never have a write applied later than it believes (docs/faults.md rows 3 and 10): so no
 * offline queue (a command sent while disconnected fails at once instead of waiting), no resend of
 * unanswered commands after a reconnect, and a command timeout of about a second after which the
 * outcome is unknown and the request gets a 503. Reconnection itself goes on in the background,
 * with a backoff capped at 2 s.
 */
import { once } from 'node:events';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { keySlot } from '../shard/slot.js';

/** One Redis (directly or through Sentinel) or a Redis Cluster: what the persistence and HA code talk to. */
export type RedisClient = Redis | Cluster;

export interface RedisTarget {
  /** `host:port`, or a `redis://` / `rediss://` (TLS) URL with optional user, password and db. */
  readonly url?: string | undefined;
  /** Used when the URL carries none; for Sentinel, the master's password. */
  readonly password?: string | undefined;
  /** Sentinel mode when non-empty: these are asked for the master named `masterName`. */
  readonly sentinels?: readonly { readonly host: string; readonly port: number }[] | undefined;
  readonly masterName?: string | undefined;
  /** Cluster mode when non-empty: seed nodes, from which the client learns the others. */
  readonly cluster?: readonly { readonly host: string; readonly port: number }[] | undefined;
  /** Default 1000 ms. */
  readonly commandTimeoutMs?: number | undefined;
  /** CLIENT SETNAME, so CLIENT LIST tells the connections apart; default `shared-sqs`. */
  readonly connectionName?: string | undefined;
}

export const COMMAND_TIMEOUT_MS = 1000;

const reconnectDelay = (times: number): number => Math.min(50 * 2 ** Math.min(times, 6), 2000);

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
    retryStrategy: reconnectDelay,
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

/**
 * A Cluster client with the same rules. Its node connections take MOVED and slot refreshes instead
 * of reconnecting (ioredis gives them no retryStrategy), and two of its defaults would resend
 * a command whose outcome is unknown or late: `retryDelayOnFailover` sends a command again when
 * its node's connection closed under it (up to 16 times), and `retryDelayOnClusterDown` after a
 * CLUSTERDOWN, well past the command timeout. Both 0: such a command fails at once, a 503. MOVED
 * and ASK are still followed: the node refused the command, so sending it to the owner is safe.
 */
export function createCluster(t: RedisTarget): Cluster {
  const nodes = t.cluster ?? [];
  if (nodes.length === 0) throw new Error('no Redis Cluster node given');
  return new Cluster(
    nodes.map((n) => ({ host: n.host, port: n.port })),
    {
      lazyConnect: true,
      enableOfflineQueue: false,
      enableReadyCheck: true,
      retryDelayOnFailover: 0,
      retryDelayOnClusterDown: 0,
      clusterRetryStrategy: reconnectDelay,
      redisOptions: {
        maxRetriesPerRequest: 0,
        autoResendUnfulfilledCommands: false,
        commandTimeout: t.commandTimeoutMs ?? COMMAND_TIMEOUT_MS,
        connectTimeout: 2000,
        connectionName: t.connectionName ?? 'shared-sqs',
        ...(t.password === undefined ? {} : { password: t.password }),
      },
    },
  );
}

/** A Cluster client when the target names cluster nodes, else a Redis client. */
export function createClient(t: RedisTarget): RedisClient {
  return t.cluster !== undefined && t.cluster.length > 0 ? createCluster(t) : createRedis(t);
}

/** Another client of the same Redis or Cluster with its own connections, e.g. the loader's. */
export function duplicateClient(
  c: RedisClient,
  o: { readonly commandTimeout: number; readonly connectionName: string },
): RedisClient {
  return c instanceof Cluster ? c.duplicate([], { redisOptions: o }) : c.duplicate(o);
}

/** CLIENT SETNAME of the client's connections. */
export function connectionName(c: RedisClient): string | undefined {
  return c instanceof Cluster ? c.options.redisOptions?.connectionName : c.options.connectionName;
}

/**
 * The connection a writer sends its scripts and its WAIT on: the client itself, or on a Cluster
 * the connection to the master that owns `key`'s slot. WAIT counts what replicas acknowledged of
 * the writes of the connection it is sent on, and has no key: sent through the Cluster client it
 * goes to any node and says nothing about ours. So a writer on a Cluster writes on this one node
 * connection, where WAIT follows its own writes; once the slot moves (a failover, a resharding)
 * that node refuses with MOVED or the connection is gone, the write fails (503), and the
 * Persistence that reloads asks again. `key` is read through the Cluster client first, so that a
 * slot that moved since the client last looked is learnt from the MOVED reply.
 */
export async function writeConnection(c: RedisClient, key: string): Promise<Redis> {
  if (!(c instanceof Cluster)) return c;
  await c.exists(key);
  const owner = c.slots[keySlot(key)]?.[0];
  const node = c.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === owner);
  if (node === undefined) throw new Error(`no connection to the master of ${key} (${owner ?? 'unknown'})`);
  return node;
}

/**
 * Waits until each master's connection is up or has failed. A Cluster client connects to a node at
 * the first command for it, and without an offline queue (redis.ts) it refuses every other command
 * for that node while the connection is being made: 256 calls at once would mostly fail.
 */
export async function mastersConnected(c: RedisClient): Promise<void> {
  if (!(c instanceof Cluster)) return;
  await Promise.all(
    c.nodes('master').map((node) => {
      if (node.status === 'ready') return Promise.resolve();
      if (node.status === 'wait') return node.connect().catch(() => undefined);
      return new Promise<void>((resolve) => {
        const done = (): void => {
          for (const e of ['ready', 'end', 'close'] as const) node.off(e, done);
          resolve();
        };
        for (const e of ['ready', 'end', 'close'] as const) node.once(e, done);
      });
    }),
  );
}

/**
 * Connects `c` when it is idle and resolves once it is ready; false when connecting failed (an
 * 'error') or `ms` passed first, and then the caller's next command fails and says why. The
 * clients are lazy and keep no offline queue, so a command sent before 'ready' fails at once:
 * whoever must not log that expected failure waits here.
 */
export async function readyWithin(c: RedisClient, ms: number): Promise<boolean> {
  if (c.status === 'wait' || c.status === 'end') c.connect().catch(() => undefined);
  if (c.status !== 'ready') {
    await once(c, 'ready', { signal: AbortSignal.timeout(ms) }).catch(() => undefined);
  }
  if (c.status !== 'ready') return false;
  await mastersConnected(c);
  return true;
}

/** A client that is connected (for tools and tests; the server lets Persistence wait for Redis). */
export async function connectRedis(t: RedisTarget): Promise<Redis> {
  const redis = createRedis(t);
  redis.on('error', () => undefined);
  await redis.connect();
  return redis;
}
