/**
 * The loader: Redis → a fresh QueueStore, at start and after the store diverged from Redis.
 *
 * No keyspace SCAN: the `queues` hash lists every queue, and each queue's messages are one hash
 * (`m:<uid>`), read with HSCAN in chunks of up to ~1000 messages (fewer when they are large).
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
import type { Message } from '../core/message.js';
import type { QueueStore } from '../core/store.js';
import { CodecError, deserializeMessage, deserializeQueue, deserializeTenant } from './codec.js';
import { loadMoveTasks, loadQueueRecords } from './load-records.js';
import { LAYOUT_VERSION, type Keys } from './keys.js';
import { FencedError, ScriptCode, scripts } from './scripts.js';
import type { Redis } from 'ioredis';

/** The layout in Redis is not the one this version reads: refuse to start (not retryable). */
export class LayoutError extends Error {
  override readonly name = 'LayoutError';
}

export interface LoadOptions {
  /** The fencing token ('' or absent: no leader election). */
  readonly token?: string | undefined;
  /** Messages asked for per HSCAN; default 1000. */
  readonly chunk?: number | undefined;
  /** Aim for at most this many bytes of records per reply; default 4 MiB. */
  readonly chunkBytes?: number | undefined;
  /** How long one synchronous piece of work may run before yielding; default 10 ms. */
  readonly sliceMs?: number | undefined;
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
  redis: Redis,
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
  redis: Redis,
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
  for (const [uid, record] of Object.entries(records)) {
    let queue;
    try {
      queue = deserializeQueue(record, store, Number(seqs[uid] ?? 0));
    } catch (e) {
      throw withContext(e, `queue ${uid} in ${keys.queues}`);
    }
    const key = keys.messages(uid);
    // Sized once: growing an array of a million by push copies it in one long step near the end.
    const hlen = await redis.hlen(key);
    const messages = new Array<Message>(hlen);
    let loaded = 0;
    let count = maxChunk;
    let next = prefetch(redis.hscan(key, '0', 'COUNT', count));
    for (;;) {
      const [cursor, flat] = await next;
      if (cursor !== '0') next = prefetch(redis.hscan(key, cursor, 'COUNT', count));
      let bytes = 0;
      for (let i = 0; i + 1 < flat.length; i += 2) {
        const id = flat[i] as string;
        const rec = flat[i + 1] as string;
        bytes += rec.length;
        try {
          messages[loaded++] = deserializeMessage(id, rec);
        } catch (e) {
          throw withContext(e, `message ${id} in ${key}`);
        }
      }
      stats.bytes += bytes;
      // Large messages: ask for fewer at a time, so one reply stays a few MiB.
      const perMessage = flat.length > 0 ? bytes / (flat.length / 2) : 0;
      count = Math.max(10, Math.min(maxChunk, Math.floor(chunkBytes / Math.max(perMessage, 1))));
      if (cursor === '0') break;
    }
    // HSCAN may return an entry twice; nothing writes meanwhile, so there are never fewer than
    // HLEN, and more only when there are copies. Never trust a count for the array's end.
    messages.length = loaded;
    if (loaded > hlen) dropRepeatedIds(messages);
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
