/**
 * The loader against a real redis-server (no AOF: only what it reads matters here), loading the
 * whole layout as a start does: chunks bounded by bytes from the first request, on a client with
 * the writer's 1 s command timeout; what cannot fit the memory budget refused up front, or as soon
 * as loading passes it, naming the shard; progress totals known before anything is read.
 */
import assert from 'node:assert/strict';
import { MESSAGE_OVERHEAD } from '../../src/core/budget.js';
import { ManualClock } from '../../src/core/clock.js';
import { QueueStore } from '../../src/core/store.js';
import { layoutFor } from '../../src/persistence/layout.js';
import { LoadProgress, StoreTooBigError } from '../../src/persistence/loader.js';
import { connectRedis } from '../../src/persistence/redis.js';
import { shardOf } from '../../src/shard/hash.js';
import { fillQueue } from '../support/fill.js';
import { loadLayout, shardKeysOf } from '../support/persistence.js';
import { uniquePrefix } from '../support/redis.js';
import { testsRequiring } from '../support/requires.js';
import type { Redis } from 'ioredis';
import { sharedRedis } from '../support/sqs.js';

const { after, before, test } = testsRequiring('redis-server');

const MiB = 2 ** 20;
/** The shard of fillQueue's queue, which the refusals name. */
const SHARD = shardOf('000000000000', 'us-east-1', 'loaded');
const redis = sharedRedis({ before, after }, { aof: false });

/**
 * Records each HSCAN of a message hash of SHARD under `prefix`: its COUNT and the bytes of records
 * its reply held. The loader reads message hashes as Buffers (hscanBuffer); it also scans other
 * hashes of every shard (move tasks), which are not what the chunk sizes are about.
 */
function spyHscan(c: Redis, prefix: string): { count: number; bytes: number }[] {
  const messageHashes = shardKeysOf(layoutFor(prefix), { shard: SHARD }).messages('');
  const calls: { count: number; bytes: number }[] = [];
  type Scan = (...args: unknown[]) => Promise<[Buffer, Buffer[]]>;
  const original = c.hscanBuffer.bind(c) as Scan;
  (c as unknown as { hscanBuffer: Scan }).hscanBuffer = async (...args) => {
    const reply = await original(...args);
    const bytes = reply[1].reduce((n, b, i) => (i % 2 === 1 ? n + b.length : n), 0);
    if (String(args[0]).startsWith(messageHashes)) calls.push({ count: Number(args[3]), bytes });
    return reply;
  };
  return calls;
}

test('Given a queue of 1 MiB messages, when it is loaded with a 1 s command timeout, then every reply stays near the chunk size from the first request on', async () => {
  const prefix = uniquePrefix();
  const ids = await fillQueue(redis.client, { prefix, messages: 40, bodySize: MiB, inflight: 3 });
  const reader = await connectRedis({ url: redis.url, commandTimeoutMs: 1000 });
  try {
    const calls = spyHscan(reader, prefix);
    const store = new QueueStore(new ManualClock(Date.now()));
    const progress = new LoadProgress();
    const stats = await loadLayout(reader, layoutFor(prefix), store, { chunkBytes: 4 * MiB, progress });
    assert.equal(stats.messages, 40);
    assert.deepEqual(
      [...(store.get('000000000000', 'loaded')?.allMessages() ?? [])].map((m) => m.id).sort(),
      [...ids].sort(),
    );
    assert.ok(calls.length > 0, 'the message hash was read with HSCAN');
    assert.ok((calls[0]?.count ?? Infinity) <= 4, `first HSCAN asked for ${calls[0]?.count}`);
    for (const c of calls) assert.ok(c.bytes <= 8 * MiB, `an HSCAN reply held ${c.bytes} bytes`);
    assert.equal(progress.messagesTotal, 40);
    assert.equal(progress.messages, 40);
    assert.equal(progress.queues, 1);
    assert.ok(Math.abs(progress.bytesTotal - progress.bytes) < 0.01 * progress.bytes);
  } finally {
    reader.disconnect();
  }
});

test('Given Redis holds more 1 MiB messages than the budget, when loading, then it is refused before a message is read, naming both sizes', async () => {
  const prefix = uniquePrefix();
  await fillQueue(redis.client, { prefix, messages: 24, bodySize: MiB });
  const calls = spyHscan(redis.client, prefix);
  const store = new QueueStore(new ManualClock(Date.now()), { deletedRecentlyMs: 0, maxMemory: 16 * MiB });
  const progress = new LoadProgress();
  await assert.rejects(loadLayout(redis.client, layoutFor(prefix), store, { progress }), (e: unknown) => {
    assert.ok(e instanceof StoreTooBigError);
    assert.match(
      e.message,
      new RegExp(`^shard ${SHARD} holds 24 messages in 1 queues \\(24\\.\\d MiB of records\\)`),
    );
    assert.match(e.message, /memory budget \(--max-memory\) of 16\.0 MiB/);
    return true;
  });
  assert.deepEqual(calls, []);
  assert.equal(progress.bytes, 0);
});

test('Given small messages that pass the up-front estimate but not the budget, when loading, then it stops as soon as loading passes the budget', async () => {
  const prefix = uniquePrefix();
  // Each counts MESSAGE_OVERHEAD + 272 B against the budget; the up-front bound takes off the
  // record's header and counts about MESSAGE_OVERHEAD: a budget between the two.
  await fillQueue(redis.client, { prefix, messages: 20_000, bodySize: 256 });
  const maxMemory = 20_000 * (MESSAGE_OVERHEAD + 136);
  const store = new QueueStore(new ManualClock(Date.now()), { deletedRecentlyMs: 0, maxMemory });
  const progress = new LoadProgress();
  await assert.rejects(loadLayout(redis.client, layoutFor(prefix), store, { progress }), (e: unknown) => {
    assert.ok(e instanceof StoreTooBigError);
    assert.match(
      e.message,
      new RegExp(`^loading shard ${SHARD} passed [\\d.]+ MiB after \\d+ of 20000 messages`),
    );
    return true;
  });
  assert.ok(progress.messages < 20_000, `read ${progress.messages} messages before stopping`);
});

test('Given no budget, when Redis holds more than the heap can, then it is refused naming the heap limit', async () => {
  const prefix = uniquePrefix();
  await fillQueue(redis.client, { prefix, messages: 8, bodySize: MiB });
  const store = new QueueStore(new ManualClock(Date.now()));
  await assert.rejects(
    loadLayout(redis.client, layoutFor(prefix), store, { heapLimit: 8 * MiB }),
    (e: unknown) => {
      assert.ok(e instanceof StoreTooBigError);
      assert.match(e.message, /80 % of the V8 heap limit of 8\.0 MiB/);
      return true;
    },
  );
});
