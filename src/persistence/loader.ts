/**
 * The loader: Redis → a QueueStore, at start and after the store diverged from Redis.
 *
 * Layout 2 (layout.ts) is loaded in two parts into one store: {@link loadMeta} checks the layout
 * (claiming an empty keyspace, or telling that layout 1 must be migrated first, migrate.ts) and
 * puts back the tenants; {@link loadShard} puts back one shard's queues and move tasks, all or
 * nothing, beside the shards the store holds already. {@link loadStore} reads layout 1 whole.
 *
 * No keyspace SCAN: the `queues` hash lists every queue, and each queue's messages are one hash
 * (`m:<uid>`), read with HSCAN in chunks of about `chunkBytes` (4 MiB) and at most 1000 messages.
 * HSCAN's COUNT is in entries, so before a queue is read a few of its records are sampled
 * (HRANDFIELD, HSTRLEN): the first chunk is sized by the largest sample, later ones by the mean
 * of what was read, and a queue of 1 MiB messages is read a few at a time from its first request.
 * The same samples give what Redis holds before anything is read: a store that cannot fit the
 * memory budget (or the heap) is refused up front, and again as soon as loading passes it
 * ({@link StoreTooBigError}), never by a full heap. {@link LoadProgress} tells how far it got.
 * The next chunk is requested before the current one is decoded, so Redis and this process work
 * at the same time. Each chunk becomes Message objects right away (nothing else keeps the
 * records); between chunks, and every few milliseconds in the sorting and linking that follow,
 * the loader yields to the event loop, so no single piece of work blocks it for long.
 *
 * HSCAN returns a hash in no useful order and may return an entry twice; messages are put back in
 * `seq` (send) order, the order retention drops them in and the order visible messages are
 * delivered in, and a repeated id is skipped (dropRepeatedIds). That order is what a restart
 * changes: a message that had become visible again behind newer ones is delivered in send order.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { getHeapStatistics } from 'node:v8';
import { MESSAGE_OVERHEAD, messageCost, QUEUE_OVERHEAD } from '../core/budget.js';
import type { Message } from '../core/message.js';
import type { MoveTask } from '../core/movetasks.js';
import type { Queue } from '../core/queue.js';
import type { QueueStore } from '../core/store.js';
import { SHARD_COUNT } from '../shard/hash.js';
import { CodecError, deserializeMessage, deserializeQueue } from './codec.js';
import { loadQueueRecords, loadTenants, readMoveTasks } from './load-records.js';
import { LAYOUT_VERSION, type Keys } from './keys.js';
import { LAYOUT_V2, type Layout, type ShardKeys } from './layout.js';
import { FencedError, ScriptCode, scripts } from './scripts.js';
import type { RedisClient } from './redis.js';

/** What Redis holds cannot be loaded by this process, however often it tries: exit. */
export class UnloadableError extends Error {}

/** The layout in Redis is not the one this version reads: refuse to start (not retryable). */
export class LayoutError extends UnloadableError {
  override readonly name = 'LayoutError';
}

/** What Redis holds does not fit this process's memory budget or heap (not retryable). */
export class StoreTooBigError extends UnloadableError {
  override readonly name = 'StoreTooBigError';
}

/**
 * The most of the V8 heap limit loaded messages may take when no smaller budget is given: the
 * same bound --max-memory has (src/config.ts), for the same reason (room for the collector).
 */
export const HEAP_FRACTION = 0.8;

/**
 * Bytes of a message record that do not count against the budget, at most: the header's fixed
 * fields (numbers, state, nonce, MD5s, sender, FIFO sequence number, dead-letter source ARN).
 * The up-front check takes them off each record, so it refuses only what cannot fit.
 */
const RECORD_FIXED_MAX = 384;

/** Records sampled per queue before it is read. */
const SAMPLES = 16;

/**
 * How far a load got; read by the log and /metrics while it runs. One load's totals are known
 * before it reads a message; a progress shared by the loads of several shards adds up the totals
 * of each as it begins.
 */
export class LoadProgress {
  queues = 0;
  queuesTotal = 0;
  messages = 0;
  messagesTotal = 0;
  /** Bytes of message records read. */
  bytes = 0;
  /** Bytes of message records in Redis, estimated from samples before reading. */
  bytesTotal = 0;
  readonly startedAt = performance.now();

  /** Share of the records read, 0..100, by bytes (by messages when Redis holds no bytes). */
  get percent(): number {
    if (this.bytesTotal > 0) return Math.min(100, (100 * this.bytes) / this.bytesTotal);
    return this.messagesTotal > 0 ? Math.min(100, (100 * this.messages) / this.messagesTotal) : 100;
  }

  /** Seconds since the load began. */
  get seconds(): number {
    return (performance.now() - this.startedAt) / 1000;
  }

  /** Messages and bytes read per second since the start. */
  rate(now = performance.now()): { messagesPerSec: number; bytesPerSec: number } {
    const s = Math.max(now - this.startedAt, 1) / 1000;
    return { messagesPerSec: this.messages / s, bytesPerSec: this.bytes / s };
  }
}

export interface LoadOptions {
  /** The fencing token ('' or absent: no leader election). */
  readonly token?: string | undefined;
  /** Messages asked for per HSCAN at most; default 1000. */
  readonly chunk?: number | undefined;
  /** Aim for at most this many bytes of records per reply; default 4 MiB. */
  readonly chunkBytes?: number | undefined;
  /** How long one synchronous piece of work may run before yielding; default 10 ms. */
  readonly sliceMs?: number | undefined;
  /** Updated as the load goes on (for the log and /metrics). */
  readonly progress?: LoadProgress | undefined;
  /** The V8 heap limit to check against; default this process's. */
  readonly heapLimit?: number | undefined;
}

export interface LoadStats {
  queues: number;
  messages: number;
  /** Bytes of message records read. */
  bytes: number;
  ms: number;
  /** The longest the event loop was held up while loading (sampled every 5 ms), in ms. */
  maxBlockMs: number;
}

/**
 * Loads layout 1 (keys.ts: everything under one tag) into a fresh store: the layout check (stamped
 * on an empty keyspace), the queues and their move tasks, the tenants. What reads layout 1 until
 * the migration (migrate.ts) replaces it, and the reference the migration tests compare with.
 */
export async function loadStore(
  redis: RedisClient,
  keys: Keys,
  store: QueueStore,
  opts: LoadOptions = {},
): Promise<LoadStats> {
  return measured(async (stats) => {
    const layout = await scripts.init.run(
      redis,
      [keys.lock, keys.layout, keys.queues],
      [opts.token ?? '', LAYOUT_VERSION],
    );
    if (layout === ScriptCode.FENCED) throw new FencedError();
    if (layout === ScriptCode.UNVERSIONED) throw unversioned(keys);
    if (layout !== LAYOUT_VERSION) {
      throw new LayoutError(
        `Redis layout version ${String(layout)} at ${keys.layout}; this version of shared-sqs reads ` +
          `layout ${LAYOUT_VERSION} only: upgrade shared-sqs, or migrate the data (docs/persistence.md)`,
      );
    }
    await loadQueues(redis, keys, store, opts, stats, undefined);
    await loadTenants(redis, keys.tenants, store);
  });
}

/**
 * Loads one shard of layout 2 (layout.ts) into `store`, which may hold other shards already: its
 * queues with their messages and FIFO records, and the move tasks whose source is in it. Tenants
 * are not a shard's ({@link loadMeta}), nor is the layout check: call loadMeta first.
 *
 * All or nothing: the shard's queues and tasks enter the store only once all of them are read,
 * so a shard that fails (too big, a bad record, Redis gone) leaves the store as it was, the other
 * shards and their share of the budget included. The budget checks count what the store holds
 * already. With `opts.token`, the shard's lease must hold it ({@link FencedError}): one GET
 * before reading, as a lease lost during the load is caught by the first write anyway.
 */
export async function loadShard(
  redis: RedisClient,
  keys: ShardKeys,
  store: QueueStore,
  opts: LoadOptions = {},
): Promise<LoadStats> {
  return measured(async (stats) => {
    const token = opts.token ?? '';
    if (token !== '' && (await redis.get(keys.lease)) !== token) throw new FencedError();
    await loadQueues(redis, keys, store, opts, stats, keys.shard);
  });
}

/** What {@link loadMeta} found. */
export interface MetaLoad {
  /**
   * 'ready': layout 2 is stamped, the tenants are in the store, and the shards can be loaded.
   * 'needs-migration': layout 1 data is there, or a migration has not finished (copying, or
   * deleting the layout 1 keys): run migrateV1 (migrate.ts), then loadMeta again. Nothing was
   * put in the store.
   */
  readonly state: 'ready' | 'needs-migration';
  /** Tenants put in the store (0 unless ready). */
  readonly tenants: number;
  /** This call found the keyspace empty and stamped layout 2 on it. */
  readonly claimed: boolean;
}

export interface MetaLoadOptions {
  /** Fences the stamp on the meta leader lock (`layout.meta.lock`); '' or absent: unchecked. */
  readonly token?: string | undefined;
}

/**
 * The first step of a start on layout 2: checks the layout and loads the tenants.
 *
 * The meta stamp is read (fenced on `opts.token`), then layout 1 is checked (its keys under the
 * same prefix, `layout.v1`). An empty keyspace is claimed for layout 2 in one script on the v1
 * tag ({@link fenceV1}, 'fresh'): layout 1's `layout` gets '2' and its lock and commit a marker,
 * as a migration leaves them, so an older release started on it later refuses to load instead of
 * writing where no one reads; then the meta `layout` hash is stamped {version 2, shards 256}.
 * Two starts racing for an empty keyspace both end up stamped alike: the claim is atomic, the
 * stamp writes only where there is none.
 *
 * Refused ({@link LayoutError}): layout 1 keys without a layout version (another program's),
 * another version in either layout key, a stamp whose shard count is not {@link SHARD_COUNT},
 * and layout 1 data unfenced beside a layout 2 stamp (an older release wrote it after the
 * migration: neither can be trusted to hold everything).
 */
export async function loadMeta(
  redis: RedisClient,
  layout: Layout,
  store: QueueStore,
  opts: MetaLoadOptions = {},
): Promise<MetaLoad> {
  const token = opts.token ?? '';
  // Read first, fenced: a start that lost the meta lock claims nothing.
  const stamped = (await metaLayout(redis, layout, token, false)) === 'stamped';
  const v1 = await fenceV1(redis, layout.v1, 'fresh');
  if (v1 === 'v1') {
    if (stamped) throw bothLayouts(layout);
    return { state: 'needs-migration', tenants: 0, claimed: false };
  }
  const claimed = v1 === 'claimed';
  // Claimed but not stamped (a crash, or the lock lost, in between) looks like a migration that
  // has not copied yet: migrateV1 then finishes it, with nothing to copy.
  if (claimed) await metaLayout(redis, layout, token, true);
  else if (!stamped) {
    // Layout 1 is fenced but nothing is stamped: a migration has not finished copying.
    return { state: 'needs-migration', tenants: 0, claimed: false };
  }
  const v1Data = [layout.v1.queues, layout.v1.seq, layout.v1.tasks, layout.v1.tenants];
  if (!claimed && (await redis.exists(...v1Data)) > 0) {
    // Stamped, but a migration was stopped before it had deleted layout 1's keys.
    return { state: 'needs-migration', tenants: 0, claimed: false };
  }
  const tenants = await loadTenants(redis, layout.meta.tenants, store);
  return { state: 'ready', tenants, claimed };
}

/** What layout 1's lock and commit hold once layout 2 owns the keyspace; never a token or call id. */
export const V1_FENCE_MARKER = 'fenced:layout-2';

/**
 * What {@link fenceV1} found: 'fenced' (before this call), 'claimed' (no layout 1 there: fenced
 * now), 'migrating' ('fence' only: layout 1, fenced now), 'v1' ('fresh' only: layout 1, left as
 * it was).
 */
export type V1State = 'fenced' | 'claimed' | 'migrating' | 'v1';

/**
 * Runs scripts/v1-fence-4.lua on layout 1's keys. 'fence' fences whatever layout 1 holds (the
 * migration's first step); 'fresh' fences an empty keyspace only. Refuses what is neither layout
 * 1 nor fenced ({@link LayoutError}).
 */
export async function fenceV1(redis: RedisClient, v1: Keys, mode: 'fence' | 'fresh'): Promise<V1State> {
  const r = await scripts.v1Fence.run(
    redis,
    [v1.lock, v1.layout, v1.commit, v1.queues],
    [mode, V1_FENCE_MARKER, String(LAYOUT_V2)],
  );
  if (r === 'fenced' || r === 'claimed' || r === 'migrating' || r === 'v1') return r;
  if (r === 'unversioned') throw unversioned(v1);
  throw new LayoutError(
    `Redis layout version ${String(r).replace(/^layout:/, '')} at ${v1.layout}; this version of ` +
      `shared-sqs reads layout ${LAYOUT_V2} and migrates layout ${LAYOUT_VERSION}: upgrade shared-sqs`,
  );
}

/**
 * Reads the meta layout stamp, or writes it where there is none (`stamp`); 'absent' when there is
 * none and `stamp` is false. Refuses another version or shard count ({@link LayoutError}) and a
 * token the meta lock does not hold ({@link FencedError}).
 */
export async function metaLayout(
  redis: RedisClient,
  layout: Layout,
  token: string,
  stamp: boolean,
): Promise<'stamped' | 'absent'> {
  const key = layout.meta.layout;
  const r = await scripts.layout.run(
    redis,
    [layout.meta.lock, key],
    [token, String(LAYOUT_V2), String(SHARD_COUNT), stamp ? '1' : '0'],
  );
  if (r === ScriptCode.FENCED) throw new FencedError();
  if (r === ScriptCode.UNVERSIONED) {
    throw new LayoutError(`${key} is not a hash: not written by shared-sqs of layout ${LAYOUT_V2}`);
  }
  const [version, shards] = r as [string, string];
  if (version === '' && shards === '') return 'absent';
  if (version !== String(LAYOUT_V2)) {
    throw new LayoutError(
      `Redis layout version ${version || '(none)'} at ${key}; this version of shared-sqs reads ` +
        `layout ${LAYOUT_V2} only: upgrade shared-sqs`,
    );
  }
  if (shards !== String(SHARD_COUNT)) {
    throw new LayoutError(
      `${key} says ${shards || '(no)'} shards; this version of shared-sqs has ${SHARD_COUNT}: ` +
        'the data was written by another build and cannot be read by this one',
    );
  }
  return 'stamped';
}

function unversioned(keys: Keys): LayoutError {
  return new LayoutError(
    `Redis holds keys under ${keys.prefix} but no ${keys.layout}: they were not written by shared-sqs ` +
      'of this layout; choose another --redis-prefix or remove them',
  );
}

function bothLayouts(layout: Layout): LayoutError {
  return new LayoutError(
    `Redis holds layout ${LAYOUT_VERSION} data under ${layout.v1.prefix} (${layout.v1.layout} is ` +
      `${LAYOUT_VERSION}) beside a layout ${LAYOUT_V2} stamp at ${layout.meta.layout}: an older ` +
      'shared-sqs wrote it after the migration; stop it, and remove one of the two',
  );
}

/** Runs a load with its statistics: time taken, and the longest the event loop was held up. */
async function measured(load: (stats: LoadStats) => Promise<void>): Promise<LoadStats> {
  const started = performance.now();
  const stats: LoadStats = { queues: 0, messages: 0, bytes: 0, ms: 0, maxBlockMs: 0 };
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  try {
    await load(stats);
  } finally {
    loop.disable();
  }
  stats.ms = performance.now() - started;
  stats.maxBlockMs = loop.count > 0 ? loop.max / 1e6 : 0;
  return stats;
}

/**
 * The queues of one `queues` hash (layout 1's, or one shard's) with their messages and FIFO
 * records, and the move tasks of its `tasks` hash, into `store`, all at once at the end (see
 * {@link loadShard}). `shard`: the shard the keys are, whose queues and tasks they must be.
 */
async function loadQueues(
  redis: RedisClient,
  keys: Keys,
  store: QueueStore,
  opts: LoadOptions,
  stats: LoadStats,
  shard: number | undefined,
): Promise<void> {
  const maxChunk = opts.chunk ?? 1000;
  const chunkBytes = opts.chunkBytes ?? 4 * 1024 * 1024;
  const sliceMs = opts.sliceMs ?? 10;
  const label = shard === undefined ? '' : ` shard ${shard}`;

  const [records, seqs] = await Promise.all([redis.hgetall(keys.queues), redis.hgetall(keys.seq)]);
  const uids = Object.keys(records);
  const sizes = await sampleSizes(
    redis,
    uids.map((uid) => keys.messages(uid)),
  );
  // This load's own counts name what was refused; a progress shared by several loads adds them up.
  const own = new LoadProgress();
  const shared = opts.progress;
  const tally = (f: (p: LoadProgress) => void): void => {
    f(own);
    if (shared !== undefined) f(shared);
  };
  tally((p) => {
    p.queuesTotal += uids.length;
    for (const s of sizes.values()) {
      p.messagesTotal += s.count;
      p.bytesTotal += Math.round(s.count * s.mean);
    }
  });
  const fit = fitLimit(store, opts.heapLimit);
  const held = store.budget.used;
  const atLeast = lowerBound(sizes);
  checkFits(held + atLeast, fit, () => {
    const beside = held > 0 ? ` beside the ${mib(held)} the store holds already` : '';
    return (
      `${shard === undefined ? 'Redis' : `shard ${shard}`} holds ${own.messagesTotal} messages in ` +
      `${own.queuesTotal} queues (${mib(own.bytesTotal)} of records), which need at least ` +
      `${mib(atLeast)}${beside}`
    );
  });

  // Read, but not in the store yet: their messages count against the budget already (restoreMessage).
  const staged: Queue[] = [];
  let tasks: MoveTask[];
  try {
    for (const uid of uids) {
      const record = records[uid] as string;
      let queue;
      try {
        queue = deserializeQueue(record, store, Number(seqs[uid] ?? 0));
      } catch (e) {
        throw withContext(e, `queue ${uid} in ${keys.queues}`);
      }
      if (shard !== undefined && queue.shard !== shard) {
        throw new LayoutError(
          `queue ${queue.name} (${queue.accountId}, ${queue.region}, uid ${uid}) is in ${keys.queues} ` +
            `but belongs to shard ${queue.shard}: the keys were not written by shared-sqs`,
        );
      }
      staged.push(queue);
      const key = keys.messages(uid);
      const size = sizes.get(key) ?? { count: 0, mean: 0, max: 0 };
      // Sized once: growing an array of a million by push copies it in one long step near the end.
      const messages = new Array<Message>(size.count);
      let loaded = 0;
      let read = 0;
      let readBytes = 0;
      // Counted against the budget once restored; until then the loader counts them itself.
      let pending = QUEUE_OVERHEAD;
      const chunkOf = (perRecord: number): number =>
        Math.max(1, Math.min(maxChunk, Math.floor(chunkBytes / Math.max(perRecord, 1))));
      // No sample (a queue emptied since): ask for one, it may be the largest there is.
      let next = prefetch(redis.hscanBuffer(key, '0', 'COUNT', size.max > 0 ? chunkOf(size.max) : 1));
      for (;;) {
        const [cursorBytes, flat] = await next;
        const cursor = cursorBytes.toString('latin1');
        if (cursor !== '0') {
          const perRecord = read > 0 ? readBytes / read : size.mean;
          next = prefetch(redis.hscanBuffer(key, cursor, 'COUNT', chunkOf(perRecord)));
        }
        let bytes = 0;
        for (let i = 0; i + 1 < flat.length; i += 2) {
          // As Buffers: the codec reads each field from the record's bytes (codec.ts, Cursor).
          const id = (flat[i] as Buffer).toString();
          const rec = flat[i + 1] as Buffer;
          bytes += rec.length;
          let m;
          try {
            m = deserializeMessage(id, rec);
          } catch (e) {
            throw withContext(e, `message ${id} in ${key}`);
          }
          messages[loaded++] = m;
          pending += messageCost(m);
        }
        read += flat.length / 2;
        readBytes += bytes;
        stats.bytes += bytes;
        tally((p) => {
          p.bytes += bytes;
          p.messages += flat.length / 2;
        });
        const now = store.budget.used + pending;
        checkFits(
          now,
          fit,
          () =>
            `loading${label} passed ${mib(now)} after ${own.messages} of ${own.messagesTotal} messages ` +
            `(${mib(own.bytes)} of about ${mib(own.bytesTotal)} of records)`,
        );
        if (cursor === '0') break;
      }
      // HSCAN may return an entry twice; nothing writes meanwhile, so there are never fewer than
      // HLEN, and more only when there are copies. Never trust a count for the array's end.
      messages.length = loaded;
      if (loaded > size.count) dropRepeatedIds(messages);
      await sortBySeq(messages, sliceMs);
      let t = performance.now();
      for (let i = 0; i < messages.length; i++) {
        if (queue.restoreMessage(messages[i] as Message)) stats.messages++;
        if ((i & 1023) === 1023 && performance.now() - t > sliceMs) {
          await yieldToLoop();
          t = performance.now();
        }
      }
      messages.length = 0;
      await loadQueueRecords(redis, keys, queue);
      tally((p) => p.queues++);
      await yieldToLoop();
    }
    tasks = await readMoveTasks(redis, keys, shard);
  } catch (e) {
    // Out of the budget again, and marked so that nothing it still does counts.
    for (const q of staged) {
      store.budget.add(q.accountId, -q.bytes);
      q.deleted = true;
    }
    throw e;
  }
  for (const q of staged) {
    store.restore(q);
    stats.queues++;
  }
  for (const task of tasks) store.moveTasks.restore(task);
}

interface QueueSize {
  /** HLEN of the queue's message hash. */
  count: number;
  /** Mean and largest length in bytes of the sampled records. */
  mean: number;
  max: number;
}

/** HLEN and a few records' lengths of each message hash, in pipelines of a few hundred queues. */
async function sampleSizes(redis: RedisClient, hashes: string[]): Promise<Map<string, QueueSize>> {
  const out = new Map<string, QueueSize>();
  for (let i = 0; i < hashes.length; i += 256) {
    const batch = hashes.slice(i, i + 256);
    const first = redis.pipeline();
    for (const key of batch) first.hlen(key).hrandfield(key, SAMPLES);
    const replies = await pipelineResults(first.exec());
    const second = redis.pipeline();
    const sampled: [string, number][] = [];
    batch.forEach((key, j) => {
      const fields = (replies[2 * j + 1] as string[] | null) ?? [];
      for (const f of fields) second.hstrlen(key, f);
      sampled.push([key, fields.length]);
    });
    const lengths = sampled.some(([, n]) => n > 0) ? await pipelineResults(second.exec()) : [];
    let k = 0;
    sampled.forEach(([key, n], j) => {
      const ls = lengths.slice(k, k + n) as number[];
      k += n;
      const sum = ls.reduce((a, b) => a + b, 0);
      out.set(key, {
        count: replies[2 * j] as number,
        mean: n > 0 ? sum / n : 0,
        max: Math.max(0, ...ls),
      });
    });
  }
  return out;
}

async function pipelineResults(p: Promise<[Error | null, unknown][] | null>): Promise<unknown[]> {
  const results = (await p) ?? [];
  return results.map(([err, value]) => {
    if (err !== null) throw err;
    return value;
  });
}

/** What the messages sampled must count against the budget at least. */
function lowerBound(sizes: Map<string, QueueSize>): number {
  let n = 0;
  for (const s of sizes.values()) {
    n += QUEUE_OVERHEAD + s.count * (MESSAGE_OVERHEAD + Math.max(0, s.mean - RECORD_FIXED_MAX));
  }
  return n;
}

interface Fit {
  bytes: number;
  budget: number;
  heapLimit: number;
}

/** The most a load may count: the store's budget, and never more than {@link HEAP_FRACTION} of the heap. */
function fitLimit(store: QueueStore, heapLimit = getHeapStatistics().heap_size_limit): Fit {
  const budget = store.budget.limit;
  return { bytes: Math.min(budget, heapLimit * HEAP_FRACTION), budget, heapLimit };
}

/** Refuses `bytes` beyond the fit; `held` says what Redis holds or how far loading got. */
function checkFits(bytes: number, fit: Fit, held: () => string): void {
  if (bytes <= fit.bytes) return;
  const limit =
    fit.budget <= fit.heapLimit * HEAP_FRACTION
      ? `the memory budget (--max-memory) of ${mib(fit.budget)}`
      : `${HEAP_FRACTION * 100} % of the V8 heap limit of ${mib(fit.heapLimit)}`;
  throw new StoreTooBigError(
    `${held()}: more than this process can hold, ${limit}; raise --max-memory (and node's ` +
      '--max-old-space-size), or remove messages from Redis',
  );
}

function mib(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

/** A request made ahead: if decoding the current chunk throws, its failure is not unhandled. */
function prefetch<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}

function withContext(e: unknown, where: string): Error {
  if (e instanceof CodecError) return new CodecError(`${where}: ${e.message}`);
  return e instanceof Error ? e : new Error(String(e));
}

/** Keeps the first message of each id, in place. */
export function dropRepeatedIds(messages: Message[]): void {
  const seen = new Set<string>();
  let n = 0;
  for (const m of messages) {
    if (seen.has(m.id)) continue;
    seen.add(m.id);
    messages[n++] = m;
  }
  messages.length = n;
}

const RUN = 256;

/**
 * Sorts by `seq`, in place, yielding to the event loop every `sliceMs`: runs of 256 sorted with
 * Array#sort, then bottom-up merges. A million messages take a few hundred ms in total, which a
 * single Array#sort would spend in one block.
 */
export async function sortBySeq(a: Message[], sliceMs: number): Promise<void> {
  const n = a.length;
  const bySeq = (x: Message, y: Message): number => x.seq - y.seq;
  if (n <= 4 * RUN) {
    a.sort(bySeq);
    return;
  }
  let t = performance.now();
  const maybeYield = async (): Promise<void> => {
    if (performance.now() - t > sliceMs) {
      await yieldToLoop();
      t = performance.now();
    }
  };
  for (let lo = 0; lo < n; lo += RUN) {
    const hi = Math.min(lo + RUN, n);
    const run = a.slice(lo, hi).sort(bySeq);
    for (let i = 0; i < run.length; i++) a[lo + i] = run[i] as Message;
    if ((lo / RUN) % 64 === 63) await maybeYield();
  }
  let src = a;
  let dst: Message[] = new Array<Message>(n);
  for (let width = RUN; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(lo + width, n);
      const hi = Math.min(lo + 2 * width, n);
      let i = lo;
      let j = mid;
      let k = lo;
      while (i < mid && j < hi) {
        const x = src[i] as Message;
        const y = src[j] as Message;
        if (y.seq < x.seq) {
          dst[k++] = y;
          j++;
        } else {
          dst[k++] = x;
          i++;
        }
        // Check the clock now and then inside a long merge, not at every element.
        if ((k & 16383) === 0) await maybeYield();
      }
      while (i < mid) dst[k++] = src[i++] as Message;
      while (j < hi) dst[k++] = src[j++] as Message;
      await maybeYield();
    }
    [src, dst] = [dst, src];
  }
  if (src !== a) for (let i = 0; i < n; i++) a[i] = src[i] as Message;
}
