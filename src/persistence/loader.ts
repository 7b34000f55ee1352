/**
 * The loader: Redis → a fresh QueueStore, at start and after the store diverged from Redis.
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
import type { QueueStore } from '../core/store.js';
import { CodecError, deserializeMessage, deserializeQueue, deserializeTenant } from './codec.js';
import { loadMoveTasks, loadQueueRecords } from './load-records.js';
import { LAYOUT_VERSION, type Keys } from './keys.js';
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

/** How far a load got; read by the log and /metrics while it runs. Totals are known up front. */
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

export async function loadStore(
  redis: RedisClient,
  keys: Keys,
  store: QueueStore,
  opts: LoadOptions = {},
): Promise<LoadStats> {
  const started = performance.now();
  const stats: LoadStats = { queues: 0, messages: 0, bytes: 0, ms: 0, maxBlockMs: 0 };
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  try {
    await load(redis, keys, store, opts, stats);
  } finally {
    loop.disable();
  }
  stats.ms = performance.now() - started;
  stats.maxBlockMs = loop.count > 0 ? loop.max / 1e6 : 0;
  return stats;
}

async function load(
  redis: RedisClient,
  keys: Keys,
  store: QueueStore,
  opts: LoadOptions,
  stats: LoadStats,
): Promise<void> {
  const maxChunk = opts.chunk ?? 1000;
  const chunkBytes = opts.chunkBytes ?? 4 * 1024 * 1024;
  const sliceMs = opts.sliceMs ?? 10;

  const layout = await scripts.init.run(
    redis,
    [keys.lock, keys.layout, keys.queues],
    [opts.token ?? '', LAYOUT_VERSION],
  );
  if (layout === ScriptCode.FENCED) throw new FencedError();
  if (layout === ScriptCode.UNVERSIONED) {
    throw new LayoutError(
      `Redis holds keys under ${keys.prefix} but no ${keys.layout}: they were not written by shared-sqs ` +
        'of this layout; choose another --redis-prefix or remove them',
    );
  }
  if (layout !== LAYOUT_VERSION) {
    throw new LayoutError(
      `Redis layout version ${String(layout)} at ${keys.layout}; this version of shared-sqs reads ` +
        `layout ${LAYOUT_VERSION} only: upgrade shared-sqs, or migrate the data (docs/persistence.md)`,
    );
  }

  const [records, seqs] = await Promise.all([redis.hgetall(keys.queues), redis.hgetall(keys.seq)]);
  const uids = Object.keys(records);
  const sizes = await sampleSizes(
    redis,
    uids.map((uid) => keys.messages(uid)),
  );
  const progress = opts.progress ?? new LoadProgress();
  progress.queuesTotal = uids.length;
  for (const s of sizes.values()) {
    progress.messagesTotal += s.count;
    progress.bytesTotal += Math.round(s.count * s.mean);
  }
  const fit = fitLimit(store, opts.heapLimit);
  checkFits(lowerBound(sizes), fit, progress, 'Redis holds');

  for (const uid of uids) {
    const record = records[uid] as string;
    let queue;
    try {
      queue = deserializeQueue(record, store, Number(seqs[uid] ?? 0));
    } catch (e) {
      throw withContext(e, `queue ${uid} in ${keys.queues}`);
    }
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
    let next = prefetch(redis.hscan(key, '0', 'COUNT', size.max > 0 ? chunkOf(size.max) : 1));
    for (;;) {
      const [cursor, flat] = await next;
      if (cursor !== '0') {
        const perRecord = read > 0 ? readBytes / read : size.mean;
        next = prefetch(redis.hscan(key, cursor, 'COUNT', chunkOf(perRecord)));
      }
      let bytes = 0;
      for (let i = 0; i + 1 < flat.length; i += 2) {
        const id = flat[i] as string;
        const rec = flat[i + 1] as string;
        bytes += Buffer.byteLength(rec);
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
      progress.bytes += bytes;
      progress.messages += flat.length / 2;
      checkFits(store.budget.used + pending, fit, progress, 'loading passed');
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
    store.restore(queue);
    stats.queues++;
    progress.queues++;
    await yieldToLoop();
  }
  await loadMoveTasks(redis, keys, store);
  // Tenants and their keys (src/core/tenants.ts): a few records, one HGETALL.
  for (const [name, record] of Object.entries(await redis.hgetall(keys.tenants))) {
    try {
      store.tenants.restore(deserializeTenant(record));
    } catch (e) {
      throw withContext(e, `tenant ${name} in ${keys.tenants}`);
    }
  }
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

function checkFits(bytes: number, fit: Fit, p: LoadProgress, what: string): void {
  if (bytes <= fit.bytes) return;
  const limit =
    fit.budget <= fit.heapLimit * HEAP_FRACTION
      ? `the memory budget (--max-memory) of ${mib(fit.budget)}`
      : `${HEAP_FRACTION * 100} % of the V8 heap limit of ${mib(fit.heapLimit)}`;
  const held =
    what === 'Redis holds'
      ? `Redis holds ${p.messagesTotal} messages in ${p.queuesTotal} queues (${mib(p.bytesTotal)} of records), ` +
        `which need at least ${mib(bytes)}`
      : `loading passed ${mib(bytes)} after ${p.messages} of ${p.messagesTotal} messages ` +
        `(${mib(p.bytes)} of about ${mib(p.bytesTotal)} of records)`;
  throw new StoreTooBigError(
    `${held}: more than this process can hold, ${limit}; raise --max-memory (and node's ` +
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
