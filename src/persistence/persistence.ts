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
import type { Queue } from '../core/queue.js';
import type { QueueStore } from '../core/store.js';
import { deserializeMessage } from './codec.js';
import { quietLog, type LogSink } from '../log.js';
import type { Layout } from './layout.js';
import {
  LayoutError,
  LoadProgress,
  loadMeta,
  loadShard,
  StoreTooBigError,
  UnloadableError,
  type LoadStats,
} from './loader.js';
import { repairCatalog } from './catalog-repair.js';
import { MarkPruner, type MarkedQueue, type PruneStep } from './marks.js';
import { migrateV1, MigrationProgress } from './migrate.js';
import { FencedError } from './scripts.js';
import { writeConnections, type WriteConnections } from './write-connections.js';
import { ReplicaWaitError, Writer, type ReplicaWait, type Scope } from './writer.js';
import type { Redis } from 'ioredis';
import { connectionName, duplicateClient, mastersConnected, type RedisClient } from './redis.js';

export type PersistenceState = 'connecting' | 'loading' | 'serving' | 'diverged' | 'closed';

export interface PersistenceOptions {
  readonly redis: RedisClient;
  readonly layout: Layout;
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
  /** A shard could not be loaded into this process's memory budget: refused by name (its queues 503). */
  readonly onShardRefused?: ((shard: number, cause: Error) => void) | undefined;
  /**
   * Many owners (src/owners/owner.ts): the shards whose lease this process holds, each with the
   * token its writes fence on. Only they are loaded (at start, after a divergence, and one by one
   * with {@link Persistence.takeShard}); a fenced write gives up that shard alone
   * (`onShardFenced`). Absent: this process serves every shard, with `token`.
   */
  readonly owned?: OwnedShards | undefined;
  /** With `owned`: a write of this shard was fenced, its lease is another's; the shard was dropped. */
  readonly onShardFenced?: ((shard: number) => void) | undefined;
  /** With `owned`: the shards the store served owns changed (taken or given away). */
  readonly onOwnedChanged?: ((changed: readonly number[]) => void) | undefined;
  /**
   * While serving, one step of pruning the transfer marks too old to answer anything (marks.ts)
   * every this many ms; undefined: none but those {@link Persistence.pruneMarks} is asked for.
   */
  readonly pruneMarksEveryMs?: number | undefined;
  /** Marks one pruning step looks at (HSCAN's COUNT); default marks.ts PRUNE_COUNT. */
  readonly pruneMarksCount?: number | undefined;
}

/** The shards a process owns among many (src/owners/owner.ts), as its Persistence asks. */
export interface OwnedShards {
  has(shard: number): boolean;
  /** The token the shard's lease holds for this process: its writes and its load fence on it. */
  token(shard: number): string;
}

/** How often a shard refused for want of memory is tried again. */
const REFUSED_RETRY_MS = 60_000;

/** `[s]` for each shard: what a request's commit passes, made once rather than per request. */
const ONE_SHARD: readonly (readonly Scope[])[] = Array.from({ length: 256 }, (_, s) => Object.freeze([s]));

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
  private migration: MigrationProgress | undefined;
  /** The store served now and its connections, while serving. */
  private served: { store: QueueStore; conns: WriteConnections } | undefined;
  /** Shards not served now: being loaded again after a failed write, or refused (too big). */
  private readonly down = new Map<number, 'reloading' | 'refused'>();
  private reloading: Promise<void> | undefined;
  /** With `owned`: the shards read into the store served (owned, and loaded or found empty). */
  private loaded = new Set<number>();
  private refusedTimer: NodeJS.Timeout | undefined;
  private readonly pruner: MarkPruner;
  /** Set from a step's start until the next one is due, so that two never overlap. */
  private pruneTimer: NodeJS.Timeout | undefined;
  /** What the pruning pass under way did so far, logged when it ends. */
  private pruned = { visited: 0, deleted: 0, stamped: 0 };

  constructor(private readonly opts: PersistenceOptions) {
    this.log = opts.log ?? quietLog;
    this.pruner = new MarkPruner({
      redis: opts.redis,
      layout: opts.layout,
      // Fenced as the shard's writes are: only the shard's holder prunes its marks.
      token: (shard) => this.shardToken(shard),
      count: opts.pruneMarksCount,
    });
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

  /** How far a migration from layout 1 got; undefined unless one runs. */
  get migrating(): MigrationProgress | undefined {
    return this.migration;
  }

  /** Shards not served now, and why (the others serve). */
  get shardsDown(): ReadonlyMap<number, 'reloading' | 'refused'> {
    return this.down;
  }

  /**
   * Connects and loads; resolves once the first store was handed over. Keeps retrying while Redis
   * is unreachable; rejects with a LayoutError when the data is of another layout.
   */
  async start(): Promise<void> {
    await this.cycle(true);
  }

  /**
   * This process may answer for the shard now: its store is served, the shard is loaded (with
   * `owned`: taken and read in) and not being read back.
   */
  serves(shard: number): boolean {
    if (this.stateNow !== 'serving' || this.down.has(shard)) return false;
    return this.opts.owned === undefined || this.loaded.has(shard);
  }

  /**
   * With `owned`: reads shards whose leases were just taken into the store served, one after the
   * other on one connection, then settles the transfers into and out of them. While no store is
   * served this does nothing: the load that serves next reads every owned shard. Resolves with
   * the shards read in (or found read in already); rejects when reading failed (the caller tries
   * again). A shard that does not fit is refused by name instead (`shardsDown`). `onRead` hears of
   * each shard as soon as it is read in: its queues can be served before the others' are read (a
   * message on its way into it from another shard's outbox arrives at the settling, moments later).
   */
  async takeShards(shards: readonly number[], onRead?: (shard: number) => void): Promise<number[]> {
    const writer = this.current;
    const served = this.served;
    if (writer === undefined || served === undefined || this.stateNow !== 'serving') return [];
    const done = shards.filter((s) => this.loaded.has(s));
    const todo = shards.filter((s) => !this.loaded.has(s) && this.opts.owned?.has(s) === true);
    if (todo.length === 0) return done;
    const reader = this.reader();
    const taken: number[] = [];
    // Its queues answer 503 until read in, and its remote catalog entries list them meanwhile.
    this.own(served.store);
    try {
      await connectReader(reader);
      for (const shard of todo) {
        const keys = this.opts.layout.shards[shard];
        if (keys === undefined || this.opts.owned?.has(shard) !== true) continue;
        await served.conns.refresh(keys);
        // A fresh chain: what this process wrote to the shard before (an earlier hold) is not its now.
        writer.resetShard(shard);
        try {
          const stats = await loadShard(reader, keys, served.store, { token: this.shardToken(shard) });
          // Before shardLoaded: a queue created after it would be taken for a stray record. (An
          // empty shard's stray records, if a crash left any, stay until it holds a queue again.)
          if (stats.queues > 0) {
            await repairCatalog(reader, this.opts.layout, shard, shardQueues(served.store, shard));
          }
        } catch (e) {
          if (e instanceof FencedError) {
            this.opts.onShardFenced?.(shard);
            this.own(served.store);
            continue;
          }
          if (!(e instanceof StoreTooBigError)) throw e;
          this.refuse(served.store, shard, e);
          this.retryRefusedLater();
          continue;
        }
        if (this.current !== writer) return done;
        served.store.shardLoaded(shard);
        this.down.delete(shard);
        this.loaded.add(shard);
        taken.push(shard);
        onRead?.(shard);
      }
      if (taken.length > 0) await this.replayTransfers(writer, served.store, new Set(taken));
      return [...done, ...taken];
    } finally {
      reader.disconnect();
    }
  }

  /**
   * With `owned`: the shard is given away. What was written of it is flushed first (waited for,
   * not retried: a write that failed was answered 503), then its queues leave the store.
   */
  async dropShard(shard: number): Promise<void> {
    this.loaded.delete(shard);
    this.down.delete(shard);
    const writer = this.current;
    if (writer !== undefined) await writer.commit(ONE_SHARD[shard]).catch(() => undefined);
    const store = this.served?.store;
    if (store !== undefined) this.own(store);
  }

  /**
   * With `owned`: whether a message another process sent to a queue of `shard` (a dead-letter
   * move or a move task's step across owners) arrived already: its mark, written with it (Writer.acceptedTransfer).
   */
  async transferMarked(shard: number, uid: string, id: string): Promise<boolean> {
    const keys = this.opts.layout.shards[shard];
    if (keys === undefined) return false;
    return (await this.opts.redis.hexists(`${keys.prefix}in:${uid}`, id)) === 1;
  }

  /** With `owned`: message `id` was put in `dest` for another process; marked with it (see above). */
  acceptedTransfer(dest: Queue, id: string): void {
    this.current?.acceptedTransfer(dest, id);
  }

  /**
   * One step of pruning the transfer marks of the queues served here (marks.ts, MarkPruner): one
   * bounded script call on one queue's marks. The time is the store's clock's, which is the one
   * the writer's marks carry. Undefined while nothing is served, or no queue is.
   */
  async pruneMarks(): Promise<PruneStep | undefined> {
    const served = this.served;
    if (served === undefined || this.stateNow !== 'serving') return undefined;
    const { store } = served;
    const step = await this.pruner.step(store.clock.now(), () => this.markedQueues(store));
    if (step === undefined) return undefined;
    this.pruned.visited += step.visited;
    this.pruned.deleted += step.deleted;
    this.pruned.stamped += step.stamped;
    if (step.passEnded) {
      if (this.pruned.deleted + this.pruned.stamped > 0) {
        this.log.info(this.pruned, 'transfer marks too old to answer a sending pruned');
      }
      this.pruned = { visited: 0, deleted: 0, stamped: 0 };
    }
    return step;
  }

  /** Resolves when every change so far is in Redis; rejects with `unavailable` otherwise. */
  commit(shard?: number): Promise<void> {
    const w = this.current;
    if (w === undefined) {
      return Promise.reject(this.opts.unavailable(new Error(`persistence is ${this.stateNow}`)));
    }
    return w.commit(shard === undefined ? undefined : ONE_SHARD[shard]);
  }

  /** Waits for the changes made so far (when it can), then closes the connection. */
  async close(): Promise<void> {
    if (this.stateNow === 'closed') return;
    this.stateNow = 'closed';
    this.stopping.abort();
    clearTimeout(this.refusedTimer);
    clearTimeout(this.pruneTimer);
    const w = this.current;
    this.current = undefined;
    this.served = undefined;
    if (w !== undefined) await w.close().catch(() => undefined);
    await this.recovering?.catch(() => undefined);
    await this.reloading?.catch(() => undefined);
    if (this.opts.keepConnection === true) return;
    try {
      await this.opts.redis.quit();
    } catch {
      this.opts.redis.disconnect();
    }
  }

  private async cycle(first: boolean): Promise<void> {
    const { redis, layout } = this.opts;
    const signal = this.stopping.signal;
    for (let attempt = 0; !signal.aborted; attempt++) {
      this.stateNow = 'connecting';
      try {
        await this.connected(signal);
        const conns = await writeConnections(redis, layout);
        await checkReplicaWait(conns.connectionFor(layout.meta), this.opts.replicaWait);
        this.stateNow = 'loading';
        const store = this.opts.createStore();
        this.down.clear();
        const stats = await this.load(store);
        if (signal.aborted) break;
        const writer: Writer = new Writer({
          layout,
          connectionFor: conns.connectionFor,
          multi: conns.multi,
          token: this.writerToken(),
          // Many owners: every process writes its queues' catalog records under the one meta tag.
          sharedMeta: this.opts.owned !== undefined,
          unavailable: this.opts.unavailable,
          onFailure: (scope, cause) => this.failed(writer, scope, cause),
          replicas: this.opts.replicaWait,
        });
        writer.attach(store);
        this.current = writer;
        this.served = { store, conns };
        try {
          await this.replayTransfers(writer, store);
        } catch (e) {
          this.current = undefined;
          this.served = undefined;
          throw e;
        }
        // A write failed meanwhile and dropped the store: the recovery it started serves.
        if (this.current !== writer) return;
        this.stateNow = 'serving';
        if (this.down.size > 0) this.retryRefusedLater();
        this.schedulePrune();
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

  /**
   * With `owned`: tells `store` which shards it owns now (those whose lease is held), so that a
   * shard given away leaves it and one taken answers 503 until read in.
   */
  private own(store: QueueStore): void {
    const owned = this.opts.owned;
    if (owned === undefined) return;
    const list: number[] = [];
    for (const keys of this.opts.layout.shards) if (owned.has(keys.shard)) list.push(keys.shard);
    const changed = store.setOwnedShards(list);
    if (changed.length > 0 && store === this.served?.store) this.opts.onOwnedChanged?.(changed);
  }

  /** The writer's fencing token per scope: with `owned`, each shard's lease's; meta is fenced by none. */
  private writerToken(): ((scope: Scope) => string) | undefined {
    const { owned, token } = this.opts;
    if (owned !== undefined) return (scope) => (scope === 'meta' ? '' : owned.token(scope));
    return token === undefined ? undefined : () => token();
  }

  private shardToken(shard: number): string {
    const owned = this.opts.owned;
    return owned === undefined ? (this.opts.token?.() ?? '') : owned.token(shard);
  }

  /** A connection for the loader, whose commands may take {@link LOAD_COMMAND_TIMEOUT_MS}. */
  private reader(): RedisClient {
    const redis = this.opts.redis;
    const reader = duplicateClient(redis, {
      commandTimeout: LOAD_COMMAND_TIMEOUT_MS,
      connectionName: `${connectionName(redis) ?? 'shared-sqs'}:loader`,
    });
    reader.on('error', () => undefined);
    return reader;
  }

  /**
   * Loads into `store` on a connection of its own, logging progress meanwhile: the layout and
   * tenants (migrating layout 1 first when that is what Redis holds), then every shard. A shard
   * too big for what is left of the budget is refused on its own (`down`); the rest load.
   */
  private async load(store: QueueStore): Promise<LoadStats> {
    const { layout } = this.opts;
    const reader = this.reader();
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
      await connectReader(reader);
      // Many owners: meta is nobody's lease (the coordinator's lock elects, it does not fence).
      const token = this.opts.owned === undefined ? (this.opts.token?.() ?? '') : '';
      while ((await loadMeta(reader, layout, store, { token })).state === 'needs-migration') {
        this.migration = new MigrationProgress();
        await migrateV1(reader, layout, { token, metaToken: token, log: this.log, progress: this.migration });
      }
      const stats: LoadStats = { queues: 0, messages: 0, bytes: 0, ms: 0, maxBlockMs: 0 };
      const started = performance.now();
      const inUse = await shardsInUse(reader, layout);
      const owned = this.opts.owned;
      const loaded = new Set<number>();
      if (owned !== undefined) this.own(store);
      for (const keys of layout.shards) {
        if (owned !== undefined && !owned.has(keys.shard)) continue;
        if (!inUse.has(keys.shard)) {
          loaded.add(keys.shard);
          continue;
        }
        try {
          const s = await loadShard(reader, keys, store, { token: this.shardToken(keys.shard), progress });
          loaded.add(keys.shard);
          stats.queues += s.queues;
          stats.messages += s.messages;
          stats.bytes += s.bytes;
          stats.maxBlockMs = Math.max(stats.maxBlockMs, s.maxBlockMs);
        } catch (e) {
          // Many owners: a lease lost while loading gives up that shard, not the load.
          if (owned !== undefined && e instanceof FencedError) {
            this.opts.onShardFenced?.(keys.shard);
            this.own(store);
            continue;
          }
          if (!(e instanceof StoreTooBigError)) throw e;
          this.refuse(store, keys.shard, e);
        }
      }
      stats.ms = performance.now() - started;
      this.loaded = loaded;
      return stats;
    } finally {
      clearInterval(timer);
      this.progress = undefined;
      this.migration = undefined;
      reader.disconnect();
    }
  }

  /**
   * Settles the transfers between shards that Redis still holds in an outbox (writer.ts,
   * Transfer): those of every shard at start, or after `only` was read back, those out of it and
   * into it. An entry whose destination has the mark was applied: its entry and mark are deleted.
   * One without is applied now, the message put in its queue as recorded. One whose queue is
   * gone is dropped, as its queue's messages were. Shards not served now are left for their load.
   */
  private async replayTransfers(
    writer: Writer,
    store: QueueStore,
    only?: ReadonlySet<number>,
  ): Promise<void> {
    const { layout } = this.opts;
    const reader = this.reader();
    try {
      await connectReader(reader);
      // Most outboxes are empty: their lengths first, all sent at once, then the entries of the others.
      const lengths = await Promise.all(layout.shards.map((k) => reader.hlen(`${k.prefix}out`)));
      const outboxes = await Promise.all(
        layout.shards.map((k, i) =>
          (lengths[i] ?? 0) > 0
            ? reader.hgetall(`${k.prefix}out`)
            : Promise.resolve<Record<string, string>>({}),
        ),
      );
      const byUid = new Map<string, Queue>();
      const pending: { source: number; dest: number; uid: string; id: string; record: string }[] = [];
      outboxes.forEach((entries, source) => {
        for (const [field, value] of Object.entries(entries)) {
          const colon = field.lastIndexOf(':');
          const sep = value.indexOf(':');
          const dest = Number(value.slice(0, sep));
          const t = {
            source,
            dest,
            uid: field.slice(0, colon),
            id: field.slice(colon + 1),
            record: value.slice(sep + 1),
          };
          if (only !== undefined && !only.has(source) && !only.has(dest)) continue;
          if (this.down.has(source) || this.down.has(dest) || writer.transferring(t.uid, t.id)) continue;
          pending.push(t);
        }
      });
      if (pending.length === 0) return;
      for (const q of store.all()) byUid.set(q.uid, q);
      const marked = await Promise.all(
        pending.map((t) => reader.hexists(`${layout.shards[t.dest]?.prefix ?? ''}in:${t.uid}`, t.id)),
      );
      if (this.current !== writer) return;
      let applied = 0;
      pending.forEach((t, i) => {
        const queue = byUid.get(t.uid);
        if (queue !== undefined && marked[i] === 0 && !writer.transferring(t.uid, t.id)) {
          const message = deserializeMessage(t.id, t.record);
          if (queue.adoptMessage(message, store.clock.now())) {
            writer.replayTransfer(t.source, queue, message);
            applied++;
            return;
          }
        }
        writer.settleTransfer(t.source, t.dest, t.uid, t.id);
      });
      this.log.info(
        { transfers: pending.length, applied, shards: only === undefined ? undefined : [...only] },
        'transfers between shards left by an earlier write settled',
      );
    } finally {
      reader.disconnect();
    }
  }

  /** The queues a pruning pass goes over: those of the shards served here. */
  private *markedQueues(store: QueueStore): Iterable<MarkedQueue> {
    for (const q of store.all()) if (this.serves(q.shard)) yield { shard: q.shard, uid: q.uid };
  }

  /**
   * The next pruning step, `pruneMarksEveryMs` after this one ended: paced, so that however many
   * marks there are, pruning takes a bounded share of Redis. A step that fails is only logged:
   * the next one goes on from the same place.
   */
  private schedulePrune(): void {
    const every = this.opts.pruneMarksEveryMs;
    if (every === undefined || this.pruneTimer !== undefined || this.stateNow === 'closed') return;
    this.pruneTimer = setTimeout(() => {
      void this.pruneMarks()
        .catch((e: unknown) => {
          if (this.stateNow === 'closed') return;
          this.log.warn(
            { error: e instanceof Error ? e.message : String(e) },
            'pruning transfer marks failed; trying again at the next step',
          );
        })
        .finally(() => {
          this.pruneTimer = undefined;
          this.schedulePrune();
        });
    }, every);
    this.pruneTimer.unref();
  }

  /** A shard that does not fit: its queues answer 503, the others serve; told by name. */
  private refuse(store: QueueStore, shard: number, cause: Error): void {
    store.evictShard(shard);
    this.loaded.delete(shard);
    this.down.set(shard, 'refused');
    this.log.error(
      { shard, error: cause.message, retryInMs: REFUSED_RETRY_MS },
      'a shard does not fit this process: its queues are not served, the other shards are',
    );
    this.opts.onShardRefused?.(shard, cause);
  }

  private retryRefusedLater(): void {
    // With `owned`, the owner reads a refused shard again (takeShards), so that it learns the
    // outcome: loaded here, this one would stay unserved and be read in a second time.
    if (this.opts.owned !== undefined) return;
    clearTimeout(this.refusedTimer);
    this.refusedTimer = setTimeout(() => {
      for (const [shard, why] of this.down) if (why === 'refused') this.reloadShard(shard);
    }, REFUSED_RETRY_MS);
    this.refusedTimer.unref();
  }

  /**
   * A write of one shard failed: only that shard's queues stop (503) while they are read back
   * from Redis; the others serve on. A failure that says nothing about one shard alone (meta,
   * fenced, a timeout or a closed connection, whose outcome is unknown) drops the whole store.
   */
  private failed(writer: Writer, scope: Scope, cause: Error): void {
    if (this.current !== writer || this.stateNow === 'closed') return;
    if (this.opts.owned !== undefined && scope !== 'meta' && cause instanceof FencedError) {
      // Another process holds the shard's lease now: this one's copy is stale, the rest is not.
      this.log.error({ shard: scope }, "a write of a shard was fenced: its lease is another's, dropping it");
      this.down.delete(scope);
      this.loaded.delete(scope);
      this.opts.onShardFenced?.(scope);
      if (this.served !== undefined) this.own(this.served.store);
      return;
    }
    if (scope === 'meta' || !shardLocal(cause)) {
      this.diverge(writer, cause);
      return;
    }
    const served = this.served;
    if (served === undefined) return;
    this.log.error(
      { shard: scope, error: cause.message },
      'a write of one shard failed: its queues are not served until it is read back from Redis',
    );
    served.store.evictShard(scope);
    this.reloadShard(scope);
  }

  /** Queues a shard to be loaded again into the store served; one shard at a time. */
  private reloadShard(shard: number): void {
    const previous = this.down.get(shard);
    this.down.set(shard, previous === 'refused' ? 'refused' : 'reloading');
    if (this.reloading !== undefined) return;
    this.reloading = this.reloadDown().finally(() => {
      this.reloading = undefined;
    });
  }

  private async reloadDown(): Promise<void> {
    const signal = this.stopping.signal;
    for (let attempt = 0; !signal.aborted;) {
      const writer = this.current;
      const served = this.served;
      if (writer === undefined || served === undefined) return;
      // With `owned`, a refused shard is its owner's to read again (retryRefusedLater).
      const next =
        [...this.down].find(([, why]) => why === 'reloading') ??
        (this.opts.owned === undefined ? [...this.down][0] : undefined);
      if (next === undefined) return;
      const [shard, why] = next;
      const keys = this.opts.layout.shards[shard];
      if (keys === undefined) return;
      const reader = this.reader();
      try {
        await served.conns.refresh(keys);
        // From here the shard's events are written again, on a fresh chain: it holds no queue
        // until the load restores them (evictShard), and nothing of it is created meanwhile.
        writer.resetShard(shard);
        await connectReader(reader);
        await loadShard(reader, keys, served.store, { token: this.shardToken(shard) });
        if (this.current !== writer) return;
        served.store.shardLoaded(shard);
        this.down.delete(shard);
        await this.replayTransfers(writer, served.store, new Set([shard])).catch((e: unknown) => {
          // What is left in the outboxes stays there: read the shard back again to settle it.
          if (this.current === writer) served.store.evictShard(shard);
          this.down.set(shard, 'reloading');
          throw e;
        });
        attempt = 0;
        this.log.info({ shard }, 'shard read back from Redis: serving its queues again');
      } catch (e) {
        if (this.current !== writer || signal.aborted) return;
        if (e instanceof StoreTooBigError) {
          if (why !== 'refused') this.refuse(served.store, shard, e);
          this.down.set(shard, 'refused');
          this.retryRefusedLater();
          if (![...this.down.values()].includes('reloading')) return;
          continue;
        }
        const wait = Math.min(100 * 2 ** Math.min(attempt++, 5), this.opts.maxBackoffMs ?? 2000);
        this.log.warn(
          { shard, error: e instanceof Error ? e.message : String(e), retryInMs: wait },
          'reading a shard back from Redis failed',
        );
        await delay(wait, undefined, { signal }).catch(() => undefined);
      } finally {
        reader.disconnect();
      }
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
    this.served = undefined;
    clearTimeout(this.refusedTimer);
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

/** The queues of `shard` in `store`. */
function shardQueues(store: QueueStore, shard: number): Queue[] {
  return [...store.all()].filter((q) => q.shard === shard);
}

/**
 * A failure whose effect is that shard's alone: the script refused the call or failed in it, so
 * the call's outcome is known and the other shards' calls are not concerned. A fenced call ends
 * the term, and a timeout, a closed connection or too few replicas leave the outcome unknown for
 * every call on that connection: those drop the whole store, as with one shard.
 */
function shardLocal(cause: Error): boolean {
  if (cause instanceof FencedError || cause instanceof ReplicaWaitError) return false;
  // Redis answered the call itself (an error reply, a script's refusal): its outcome is known.
  // Anything else (a closed connection, a timeout, ioredis giving up its retries) is not.
  return cause.name === 'ReplyError' || cause.name === 'ScriptRefusal';
}

/**
 * Connects a loader's client and, on a Cluster, every master's connection: a fresh Cluster client
 * refuses a command for a node whose connection is still being made (no offline queue).
 */
async function connectReader(reader: RedisClient): Promise<void> {
  await reader.connect();
  await mastersConnected(reader);
}

/**
 * The shards that hold anything to load (queues or move tasks): one HLEN of each hash per shard,
 * all sent at once, so that a start or a takeover pays the loader's round trips only for the
 * shards in use, not for all 256.
 */
async function shardsInUse(reader: RedisClient, layout: Layout): Promise<Set<number>> {
  const lengths = await Promise.all(
    layout.shards.map(async (k) => (await reader.hlen(k.queues)) + (await reader.hlen(k.tasks))),
  );
  const out = new Set<number>();
  lengths.forEach((n, shard) => {
    if (n > 0) out.add(shard);
  });
  return out;
}
