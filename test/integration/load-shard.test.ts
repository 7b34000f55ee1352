/**
 * Loading layout 2 against a real redis-server: loadMeta's layout checks (an empty keyspace
 * claimed, layout 1 sent to the migration, what is neither refused) and loadShard into a store
 * holding other shards (fenced by the shard's lease; all or nothing when a shard does not fit).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MESSAGE_OVERHEAD, QUEUE_OVERHEAD } from '../../src/core/budget.js';
import { ManualClock } from '../../src/core/clock.js';
import type { Queue } from '../../src/core/queue.js';
import { QueueStore } from '../../src/core/store.js';
import { CodecError, serializeMessage, serializeQueue } from '../../src/persistence/codec.js';
import { keysFor } from '../../src/persistence/keys.js';
import { layoutFor, type Layout, type ShardKeys } from '../../src/persistence/layout.js';
import {
  LayoutError,
  LoadProgress,
  loadMeta,
  loadShard,
  loadStore,
  StoreTooBigError,
  V1_FENCE_MARKER,
} from '../../src/persistence/loader.js';
import { FencedError, ScriptCode, scripts } from '../../src/persistence/scripts.js';
import { shardOf } from '../../src/shard/hash.js';
import { sendOne } from '../support/queue.js';
import { uniquePrefix } from '../support/redis.js';
import { testsRequiring } from '../support/requires.js';
import { sharedRedis } from '../support/sqs.js';

const { after, before, test } = testsRequiring('redis-server');

const redis = sharedRedis({ before, after }, { aof: false });
const ACCOUNT = '000000000000';
const REGION = 'us-east-1';

const newStore = (maxMemory?: number): QueueStore =>
  new QueueStore(new ManualClock(Date.now()), {
    deletedRecentlyMs: 0,
    ...(maxMemory === undefined ? {} : { maxMemory }),
  });

/** The first names `<stem><i>` whose queues fall in `shard` (any shard when undefined). */
function namesIn(stem: string, count: number, shard?: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < count; i++) {
    const name = `${stem}${i}`;
    if (shard === undefined || shardOf(ACCOUNT, REGION, name) === shard) out.push(name);
  }
  return out;
}

/**
 * A queue of `messages` messages of `bodySize` bytes, written to its shard's keys (or `into`) in
 * one apply call, as the shard writer would have written them.
 */
async function writeQueue(
  layout: Layout,
  name: string,
  messages: number,
  bodySize: number,
  into?: ShardKeys,
): Promise<Queue> {
  const clock = new ManualClock(Date.now());
  const scratch = newStore();
  const q = scratch.create({ accountId: ACCOUNT, region: REGION, name }, {}, {}).queue;
  const fields: string[] = [];
  for (let i = 0; i < messages; i++) {
    const m = sendOne(
      q,
      { id: randomUUID(), body: 'x'.repeat(bodySize), md5OfBody: 'md5', senderId: ACCOUNT },
      clock.now(),
    );
    fields.push(m.id, serializeMessage(m));
  }
  const keys = into ?? layout.shards[q.shard];
  assert.ok(keys);
  const ops = [
    'Q',
    q.uid,
    serializeQueue(q),
    'M',
    q.uid,
    String(q.nextSequence),
    String(messages),
    ...fields,
  ];
  const r = await scripts.apply.run(
    redis.client,
    [keys.lock, keys.queues, keys.seq, keys.commit],
    ['', keys.prefix, '', randomUUID(), ...ops],
  );
  assert.equal(r, ScriptCode.OK);
  return q;
}

function shardOfQueue(layout: Layout, q: Queue): ShardKeys {
  const s = layout.shards[q.shard];
  assert.ok(s);
  return s;
}

test('Given an empty keyspace, when loadMeta runs, then it claims it for layout 2 and fences layout 1 against an older release', async () => {
  const prefix = uniquePrefix();
  const layout = layoutFor(prefix);
  const c = redis.client;
  const first = await loadMeta(c, layout, newStore());
  assert.deepEqual(first, { state: 'ready', tenants: 0, claimed: true });
  assert.deepEqual(await c.hgetall(layout.meta.layout), { version: '2', shards: '256' });
  assert.equal(await c.get(layout.v1.layout), '2');
  assert.equal(await c.get(layout.v1.lock), V1_FENCE_MARKER);
  assert.deepEqual(await loadMeta(c, layout, newStore()), { state: 'ready', tenants: 0, claimed: false });
  // An older release started on it now: its load refuses layout 2 instead of stamping layout 1.
  await assert.rejects(loadStore(c, keysFor(prefix), newStore()), LayoutError);
});

test('Given layout 1 data, when loadMeta runs, then it asks for the migration and writes nothing', async () => {
  const prefix = uniquePrefix();
  const layout = layoutFor(prefix);
  const c = redis.client;
  await loadStore(c, keysFor(prefix), newStore());
  await c.hset(layout.v1.queues, 'uid', '{}');
  assert.deepEqual(await loadMeta(c, layout, newStore()), {
    state: 'needs-migration',
    tenants: 0,
    claimed: false,
  });
  assert.equal(await c.get(layout.v1.layout), '1');
  assert.equal(await c.exists(layout.meta.layout, layout.v1.lock), 0);
});

test('Given layouts neither version reads, when loadMeta runs, then each is refused with a LayoutError', async () => {
  const c = redis.client;
  const cases: [string, (l: Layout) => Promise<unknown>][] = [
    ['layout 1 keys without a version', (l) => c.hset(l.v1.queues, 'uid', '{}')],
    ['another layout 1 version', (l) => c.set(l.v1.layout, '7')],
    ['another shard count', (l) => c.hset(l.meta.layout, 'version', '2', 'shards', '255')],
    ['another layout 2 version', (l) => c.hset(l.meta.layout, 'version', '3', 'shards', '256')],
    ['a meta layout that is not a hash', (l) => c.set(l.meta.layout, '2')],
    [
      'layout 1 unfenced beside a stamp',
      (l) => Promise.all([c.set(l.v1.layout, '1'), c.hset(l.meta.layout, 'version', '2', 'shards', '256')]),
    ],
  ];
  for (const [what, setUp] of cases) {
    const layout = layoutFor(uniquePrefix());
    await setUp(layout);
    await assert.rejects(loadMeta(c, layout, newStore()), LayoutError, what);
  }
  // The control: the same calls on a keyspace stamped alike pass.
  const ok = layoutFor(uniquePrefix());
  await c.hset(ok.meta.layout, 'version', '2', 'shards', '256');
  await c.set(ok.v1.layout, '2');
  assert.equal((await loadMeta(c, ok, newStore())).state, 'ready');
});

test('Given the meta lock held by another token, when loadMeta runs with its token, then it is fenced', async () => {
  const layout = layoutFor(uniquePrefix());
  await redis.client.set(layout.meta.lock, 'tok-a');
  await assert.rejects(loadMeta(redis.client, layout, newStore(), { token: 'tok-b' }), FencedError);
  assert.equal(await redis.client.exists(layout.meta.layout), 0);
  assert.equal((await loadMeta(redis.client, layout, newStore(), { token: 'tok-a' })).state, 'ready');
});

test("Given a shard's lease held by another token, when the shard is loaded with ours, then it is fenced; with the holder's, it loads", async () => {
  const layout = layoutFor(uniquePrefix());
  const [name] = namesIn('fenced', 1);
  const q = await writeQueue(layout, name as string, 3, 10);
  const shard = shardOfQueue(layout, q);
  await redis.client.set(shard.lease, 'tok-a');
  const store = newStore();
  await assert.rejects(loadShard(redis.client, shard, store, { token: 'tok-b' }), FencedError);
  assert.equal(store.size, 0);
  const stats = await loadShard(redis.client, shard, store, { token: 'tok-a' });
  assert.equal(stats.messages, 3);
  assert.equal(store.get(ACCOUNT, q.name, REGION)?.uid, q.uid);
});

test('Given a store holding one shard, when another shard passes the budget while loading, then it is refused and the store holds the first shard only, its budget as it was', async () => {
  const layout = layoutFor(uniquePrefix());
  const [a] = namesIn('held', 1);
  const qa = await writeQueue(layout, a as string, 50, 300);
  const other = (qa.shard + 1) % layout.shards.length;
  const [b1, b2] = namesIn('big', 2, other);
  const qb1 = await writeQueue(layout, b1 as string, 2000, 300);
  await writeQueue(layout, b2 as string, 2000, 300);
  const shardA = shardOfQueue(layout, qa);
  const shardB = shardOfQueue(layout, qb1);

  // Room for shard A and for either queue of shard B, not both: whichever is read second passes
  // the budget once the first is read. The up-front estimate (records of about 400 B count about
  // MESSAGE_OVERHEAD) lets the shard start.
  const probe = newStore();
  await loadShard(redis.client, shardA, probe);
  const heldA = probe.budget.used;
  await loadShard(redis.client, shardB, probe);
  const messagesB = probe.budget.used - heldA - 2 * QUEUE_OVERHEAD;
  const roomB = Math.round(0.85 * messagesB);
  assert.ok(roomB > 4000 * (MESSAGE_OVERHEAD + 20) && roomB > messagesB / 2, 'the test can tell');
  const store = newStore(heldA + 2 * QUEUE_OVERHEAD + roomB);
  const progress = new LoadProgress();
  await loadShard(redis.client, shardA, store, { progress });
  assert.equal(store.budget.used, heldA);

  await assert.rejects(loadShard(redis.client, shardB, store, { progress }), (e: unknown) => {
    assert.ok(e instanceof StoreTooBigError);
    assert.match(
      e.message,
      new RegExp(`loading shard ${other} passed [\\d.]+ MiB after \\d+ of 4000 messages`),
    );
    return true;
  });
  assert.ok(progress.messages > 2050, 'a whole queue of the refused shard was read before the refusal');
  assert.deepEqual(
    [...store.all()].map((q) => q.name),
    [a],
  );
  assert.equal(store.budget.used, heldA, 'what the refused shard had counted is taken back');
  assert.equal(progress.queuesTotal, 3, 'the totals of both loads add up');
  assert.equal(progress.messagesTotal, 4050);
});

test('Given a shard whose move task record is broken, when it is loaded after its queues, then none of its queues enter the store', async () => {
  const layout = layoutFor(uniquePrefix());
  const [a] = namesIn('kept', 1);
  const qa = await writeQueue(layout, a as string, 5, 10);
  const [b] = namesIn('broken', 1, (qa.shard + 1) % layout.shards.length);
  const qb = await writeQueue(layout, b as string, 5, 10);
  const shardB = shardOfQueue(layout, qb);
  await redis.client.hset(shardB.tasks, 'task-1', 'not a record');
  const store = newStore();
  await loadShard(redis.client, shardOfQueue(layout, qa), store);
  const held = store.budget.used;
  await assert.rejects(loadShard(redis.client, shardB, store), CodecError);
  assert.deepEqual(
    [...store.all()].map((q) => q.name),
    [a],
  );
  assert.equal(store.budget.used, held);
  // The control: without the broken record the same shard loads.
  await redis.client.hdel(shardB.tasks, 'task-1');
  await loadShard(redis.client, shardB, store);
  assert.equal(store.size, 2);
});

test("Given a queue in another shard's keys, when that shard is loaded, then it is refused", async () => {
  const layout = layoutFor(uniquePrefix());
  const [name] = namesIn('stray', 1);
  const home = shardOf(ACCOUNT, REGION, name as string);
  const wrong = layout.shards[(home + 7) % layout.shards.length];
  assert.ok(wrong);
  await writeQueue(layout, name as string, 1, 10, wrong);
  const store = newStore();
  await assert.rejects(loadShard(redis.client, wrong, store), (e: unknown) => {
    assert.ok(e instanceof LayoutError);
    assert.match(e.message, new RegExp(`belongs to shard ${home}`));
    return true;
  });
  assert.equal(store.size, 0);
});
