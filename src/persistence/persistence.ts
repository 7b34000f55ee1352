/**
 * Persistence: the Redis connection, the store loaded from it, the writer that keeps Redis in
 * step with it, and what happens when the two fall out of step.
 *
 *   connecting ──► loading ──► serving ──(a write fails)──► diverged ──(backoff)──► connecting ...
 *
 * - connecting: waits until Redis answers (ioredis reconnects in the background, with backoff).
 * - loading: the whole state is read into a fresh QueueStore (loader.ts), on a connection of its
 *   own whose commands may take {@link LOAD_COMMAND_TIMEOUT_MS} (a busy Redis answering a chunk in
 *   more than the writer's 1 s must not start the load over, forever). Progress is logged every
 *   few seconds and readable as `loading`. A layout this version cannot read stops the first start
 *   (a LayoutError); a store too big for this process stops it at any time (StoreTooBigError,
 *   `onFatal`), and so does a Redis without WAITAOF when --redis-wait-aof asks for it
 *   (UnsupportedError) at the first start; everything else is retried.
 * - serving: the store is handed over (`onStore`) with a writer subscribed to it; `commit()` is
 *   the writer's.
 * - diverged: a write failed, timed out (outcome unknown) or was fenced, so the store handed over
 *   no longer matches Redis. `onDiverged` is told at once (the data plane answers 503, waiting long
 *   polls are answered); the store is dropped, never repaired in place: the next `onStore` hands
 *   over one loaded from Redis, so nothing answered as failed survives in memory and nothing that
 *   was answered 200 is missing. (A write that timed out may still have reached Redis: its request
 *   got a 503, and a retry by the SDK may then store the message twice; SQS standard queues are
 *   at-least-once, and docs/persistence.md says so.)
 *
 * Why a request that ran against a dropped store cannot get a 200: it awaits `commit()` in the
 * same turn of the event loop as its action, i.e. before the failing write's callback can run,
 * so it holds the failing writer's promise, which rejects. Long polls that were waiting on the
 * dropped store are answered with no messages by `onDiverged` (their commit then rejects too).
 */
import { once } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import type { Durability } from '../core/durability.js';
import type { QueueStore } from '../core/store.js';
import { quietLog, type LogSink } from '../log.js';
import type { Keys } from './keys.js';
import {
  LayoutError,
  LoadProgress,
  loadStore,
  StoreTooBigError,
  UnloadableError,
  type LoadStats,
} from './loader.js';
import { FencedError } from './scripts.js';
import { Writer, type ReplicaWait } from './writer.js';
import type { Redis } from 'ioredis';
import { connectionName, duplicateClient, writeConnection, type RedisClient } from './redis.js';

export type PersistenceState = 'connecting' | 'loading' | 'serving' | 'diverged' | 'closed';

export interface PersistenceOptions {
  readonly redis: RedisClient;
  readonly keys: Keys;
  /** A new, empty store for the loader to fill. */
  readonly createStore: () => QueueStore;
  /** What commit() rejects with when a change could not be stored (an SqsError: a 503). */
  readonly unavailable: (cause: Error) => Error;
  /** A loaded store is ready to serve: at start and after every recovery. */
  readonly onStore: (store: QueueStore, stats: LoadStats) => void;
  /** The store handed over last no longer matches Redis: stop serving it now. */
  readonly onDiverged: (cause: Error) => void;
  /** The fencing token for every write ('' or absent: no leader election). */
  readonly token?: (() => string) | undefined;
  readonly log?: LogSink | undefined;
  /** Upper bound of the backoff between recovery attempts; default 2000 ms. */
  readonly maxBackoffMs?: number | undefined;
  /** What Redis holds can never be loaded here (a StoreTooBigError while recovering): exit. */
  readonly onFatal?: ((e: UnloadableError) => void) | undefined;
  /** How often loading logs its progress; default 5000 ms. */
  readonly progressEveryMs?: number | undefined;
  /**
   * close() leaves the connection open: with leader election one Persistence serves one term
   * (src/ha/active.ts), and the next term's Persistence uses the same connection.
   */
  readonly keepConnection?: boolean | undefined;
  /** --redis-wait-replicas and friends: every batch waits for replicas (writer.ts); undefined: none. */
  readonly replicaWait?: ReplicaWait | undefined;
}

/** The Redis connected to cannot do what the configuration asks (WAITAOF before Redis 7.2). */
export class UnsupportedError extends UnloadableError {
  override readonly name = 'UnsupportedError';
}

/**
 * Refuses a Redis without WAITAOF when it is asked for: asked of the server (COMMAND INFO names no
 * such command before 7.2), not assumed from a version, and again after every reconnect, since a
 * failover can land on another server. `redis` is the writer's connection: on a Cluster, the
 * master the writes go to (redis.ts, writeConnection).
 */
export async function checkReplicaWait(redis: Redis, wait: ReplicaWait | undefined): Promise<void> {
  if (wait?.aof !== true) return;
  const info = (await redis.call('COMMAND', 'INFO', 'WAITAOF')) as unknown[];
  if (Array.isArray(info[0])) return;
  const server = await redis.info('server');
  const version = /^redis_version:(\S+)/m.exec(server)?.[1] ?? 'unknown';
  throw new UnsupportedError(
    `--redis-wait-aof needs WAITAOF (Redis 7.2 or newer); this Redis is ${version} and has no WAITAOF. ` +
      'Upgrade Redis, or use --redis-wait-replicas without --redis-wait-aof',
  );
}

/** A chunk is a few MiB: this is for a Redis that is busy (an AOF rewrite, a slow disk), not slow. */
export const LOAD_COMMAND_TIMEOUT_MS = 60_000;

export class Persistence implements Durability {
  readonly kind = 'redis';
  private current: Writer | undefined;
  private stateNow: PersistenceState = 'connecting';
  private readonly stopping = new AbortController();
  private recovering: Promise<void> | undefined;
  private readonly log: LogSink;
  private progress: LoadProgress | undefined;

  constructor(private readonly opts: PersistenceOptions) {
    this.log = opts.log ?? quietLog;
    // Without a listener ioredis prints every connection error; the loop below reports them.
    if (opts.redis.listenerCount('error') === 0) opts.redis.on('error', () => undefined);
  }

  get state(): PersistenceState {
    return this.stateNow;
  }

  get serving(): boolean {
    return this.stateNow === 'serving';
  }

  /** How far the load in progress got; undefined while not loading. */
  get loading(): LoadProgress | undefined {
    return this.progress;
  }

  /**
   * Connects and loads; resolves once the first store was handed over. Keeps retrying while Redis
   * is unreachable; rejects with a LayoutError when the data is of another layout.
   */
  async start(): Promise<void> {
    await this.cycle(true);
  }

  /** Resolves when every change so far is in Redis; rejects with `unavailable` otherwise. */
  commit(): Promise<void> {
    const w = this.current;
    if (w === undefined) {
      return Promise.reject(this.opts.unavailable(new Error(`persistence is ${this.stateNow}`)));
    }
    return w.commit();
  }

  /** Waits for the changes made so far (when it can), then closes the connection. */
  async close(): Promise<void> {
    if (this.stateNow === 'closed') return;
    this.stateNow = 'closed';
    this.stopping.abort();
    const w = this.current;
    this.current = undefined;
    if (w !== undefined) await w.close().catch(() => undefined);
    await this.recovering?.catch(() => undefined);
    if (this.opts.keepConnection === true) return;
    try {
      await this.opts.redis.quit();
    } catch {
      this.opts.redis.disconnect();
    }
  }

  private async cycle(first: boolean): Promise<void> {
    const { redis, keys } = this.opts;
    const signal = this.stopping.signal;
    for (let attempt = 0; !signal.aborted; attempt++) {
      this.stateNow = 'connecting';
      try {
        await this.connected(signal);
        const writeTo = await writeConnection(redis, keys.commit);
        await checkReplicaWait(writeTo, this.opts.replicaWait);
        this.stateNow = 'loading';
        const store = this.opts.createStore();
        const stats = await this.load(store);
        if (signal.aborted) break;
        const writer: Writer = new Writer({
          redis: writeTo,
          keys,
          token: this.opts.token,
          unavailable: this.opts.unavailable,
          onFailure: (cause) => this.diverge(writer, cause),
          replicas: this.opts.replicaWait,
        });
        writer.attach(store);
        this.current = writer;
        this.stateNow = 'serving';
        this.log.info(
          {
            queues: stats.queues,
            messages: stats.messages,
            ms: Math.round(stats.ms),
            maxBlockMs: Math.round(stats.maxBlockMs),
          },
          'state loaded from Redis',
        );
        this.opts.onStore(store, stats);
        return;
      } catch (e) {
        if (signal.aborted) break;
        if (
          e instanceof StoreTooBigError ||
          (first && (e instanceof LayoutError || e instanceof UnsupportedError))
        )
          throw e;
        const wait = Math.min(100 * 2 ** Math.min(attempt, 5), this.opts.maxBackoffMs ?? 2000);
        this.log.warn(
          { error: e instanceof Error ? e.message : String(e), retryInMs: wait },
          e instanceof UnsupportedError
            ? 'this Redis cannot do what the flags ask: not serving'
            : this.stateNow === 'loading'
              ? 'loading from Redis failed'
              : 'Redis is not answering',
        );
        await delay(wait, undefined, { signal }).catch(() => undefined);
      }
    }
    throw new Error('persistence closed');
  }

  /** Loads into `store` on a connection of its own, logging progress meanwhile. */
  private async load(store: QueueStore): Promise<LoadStats> {
    const { redis, keys } = this.opts;
    const reader = duplicateClient(redis, {
      commandTimeout: LOAD_COMMAND_TIMEOUT_MS,
      connectionName: `${connectionName(redis) ?? 'shared-sqs'}:loader`,
    });
    reader.on('error', () => undefined);
    const progress = new LoadProgress();
    this.progress = progress;
    const timer = setInterval(() => {
      const rate = progress.rate();
      this.log.info(
        {
          queues: `${progress.queues}/${progress.queuesTotal}`,
          messages: `${progress.messages}/${progress.messagesTotal}`,
          mib: `${Math.round(progress.bytes / 2 ** 20)}/${Math.round(progress.bytesTotal / 2 ** 20)}`,
          percent: Math.floor(progress.percent),
          messagesPerSec: Math.round(rate.messagesPerSec),
          mibPerSec: Math.round(rate.bytesPerSec / 2 ** 20),
        },
        'loading from Redis',
      );
    }, this.opts.progressEveryMs ?? 5000);
    try {
      await reader.connect();
      return await loadStore(reader, keys, store, { token: this.opts.token?.(), progress });
    } finally {
      clearInterval(timer);
      this.progress = undefined;
      reader.disconnect();
    }
  }

  /** Resolves once Redis answers a PING; waits for the client's `ready` at most 2 s at a time. */
  private async connected(signal: AbortSignal): Promise<void> {
    const redis = this.opts.redis;
    if (redis.status === 'wait' || redis.status === 'end') redis.connect().catch(() => undefined);
    while (redis.status !== 'ready') {
      signal.throwIfAborted();
      await once(redis, 'ready', { signal: AbortSignal.any([signal, AbortSignal.timeout(2000)]) }).catch(
        () => undefined,
      );
    }
    await redis.ping();
  }

  private diverge(writer: Writer, cause: Error): void {
    if (this.current !== writer || this.stateNow === 'closed') return;
    this.current = undefined;
    this.stateNow = 'diverged';
    this.log.error(
      { error: cause.message, fenced: cause instanceof FencedError },
      'a write to Redis failed: not serving until the state is reloaded from Redis',
    );
    this.opts.onDiverged(cause);
    // A command that timed out may still be in the socket or in Redis: drop the connection, so
    // nothing from it is taken for an answer to a later command, and reconnect.
    if (/timed out/i.test(cause.message)) this.opts.redis.disconnect(true);
    this.recovering = this.cycle(false).catch((e: unknown) => {
      if (e instanceof UnloadableError && this.opts.onFatal !== undefined) {
        this.opts.onFatal(e);
      } else if (!this.stopping.signal.aborted) {
        this.log.error({ error: e instanceof Error ? e.message : String(e) }, 'recovery stopped');
      }
    });
  }
}
