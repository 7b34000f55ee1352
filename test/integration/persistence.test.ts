/**
 * The writer and the loader against a real redis-server (AOF always), started by this file on a
 * free port. Each test has its own key prefix. The core runs on a ManualClock, so deadlines are
 * moved by advancing it, never by waiting.
 */
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/core/clock.js';
import type { Message } from '../../src/core/message.js';
import type { Queue } from '../../src/core/queue.js';
import { QueueStore } from '../../src/core/store.js';
import { layoutFor, type Layout } from '../../src/persistence/layout.js';
import { LayoutError, loadShard } from '../../src/persistence/loader.js';
import { connectRedis, createRedis } from '../../src/persistence/redis.js';
import { FencedError } from '../../src/persistence/scripts.js';
import { Writer } from '../../src/persistence/writer.js';
import { SqsError } from '../../src/sqs/errors.js';
import { isSqsError } from '../support/assertions.js';
import { keysUnder, startRedis, uniquePrefix } from '../support/redis.js';
import { snapshot } from '../support/snapshot.js';
import type { Redis } from 'ioredis';
import { testsRequiring } from '../support/requires.js';
import { sharedRedis } from '../support/sqs.js';
import { msg, sendOne } from '../support/queue.js';
import { loadLayout, shardKeysOf, watchedPersistence } from '../support/persistence.js';

const { after, before, test } = testsRequiring('redis-server');

const ACCOUNT = '000000000000';
const REGION = 'us-east-1';
const S = 1000;

const redis = sharedRedis({ before, after }, { aof: true });

const client = (): Promise<Redis> => redis.connect();

const unavailable = (cause: Error): Error =>
  new SqsError('ServiceUnavailable', `The change could not be stored: ${cause.message}`);

interface Opened {
  readonly store: QueueStore;
  readonly writer: Writer;
  readonly clock: ManualClock;
  readonly failures: Error[];
}

/** Loads the state in `layout` into a fresh store and subscribes a writer, as the server does. */
async function open(c: Redis, layout: Layout, clock = new ManualClock(), token?: string): Promise<Opened> {
  const store = new QueueStore(clock, { deletedRecentlyMs: 0 });
  await loadLayout(c, layout, store, token === undefined ? {} : { token });
  const failures: Error[] = [];
  const writer = new Writer({
    layout,
    connectionFor: () => c,
    token: () => token ?? '',
    unavailable,
    onFailure: (_scope, e) => failures.push(e),
  });
  writer.attach(store);
  return { store, writer, clock, failures };
}

/** A connection, a fresh key prefix, and a server's store and writer opened on it. */
async function fresh(): Promise<Opened & { c: Redis; layout: Layout }> {
  const c = await client();
  const layout = layoutFor(uniquePrefix());
  return { ...(await open(c, layout)), c, layout };
}

function create(store: QueueStore, name: string, attrs: Record<string, string> = {}, tags = {}): Queue {
  return store.create({ accountId: ACCOUNT, region: REGION, name }, attrs, tags).queue;
}

/** A fresh load of what Redis holds in `layout`, at the same moment as `clock`. */
async function reload(c: Redis, layout: Layout, clock: ManualClock): Promise<QueueStore> {
  const store = new QueueStore(new ManualClock(clock.now()), { deletedRecentlyMs: 0 });
  await loadLayout(c, layout, store);
  return store;
}

/** Every fencing key of the layout (the meta lock and each shard's lease) set to `token`. */
async function holdAll(c: Redis, layout: Layout, token: string): Promise<void> {
  await c.mset(layout.meta.lock, token, ...layout.shards.flatMap((k) => [k.lease, token]));
}

// Queues, messages, receipt handles across a restart: test/support/scenarios-persistence.ts, over one
// Redis and over a Cluster (persistence-backends.test.ts).

test('Given an in-flight message, when the state is reloaded, then it stays hidden until its deadline and then comes back', async () => {
  const { c, layout, store, writer, clock } = await fresh();
  const q = create(store, 'inflight');
  sendOne(q, msg('hidden'), clock.now());
  sendOne(q, msg('visible'), clock.now());
  const [first] = q.receive(1, 30 * S, clock.now());
  assert.equal(first?.body, 'hidden');
  await writer.commit();

  const later = new ManualClock(clock.now() + 10 * S);
  const restored = await open(c, layout, later);
  const q2 = restored.store.require(ACCOUNT, 'inflight');
  assert.deepEqual(
    q2.receive(10, undefined, later.now()).map((m) => m.body),
    ['visible'],
  );
  later.advance(19 * S);
  assert.deepEqual(q2.receive(10, undefined, later.now()), []);
  later.advance(1 * S);
  const back = q2.receive(10, undefined, later.now());
  assert.deepEqual(
    back.map((m) => [m.body, m.receiveCount]),
    [['hidden', 2]],
  );
  await restored.writer.commit();
});

test('Given acknowledged sends, when Redis is killed -9 mid-stream and restarted with AOF always, then none of them is lost', async () => {
  const { layout, store, writer, clock } = await fresh();
  const q = create(store, 'aof');
  await writer.commit();

  const acked: string[] = [];
  const failed: string[] = [];
  let sent = 0;
  const send = async (): Promise<void> => {
    const m = sendOne(q, msg(`n${sent++}`), clock.now());
    try {
      await writer.commit();
      acked.push(m.id);
    } catch (e) {
      assert.ok(isSqsError('ServiceUnavailable')(e), String(e));
      failed.push(m.id);
    }
  };
  // Eight senders, each awaiting its commit; Redis dies after the first 300 acknowledgements.
  const senders = Array.from({ length: 8 }, async () => {
    while (writer.failure(q.shard) === undefined) {
      await send();
      if (acked.length >= 300 && redis.server.alive()) await redis.server.kill9();
    }
  });
  await Promise.all(senders);
  assert.ok(acked.length >= 300 && failed.length > 0);

  await redis.server.restart();
  const c2 = await client();
  const restored = await reload(c2, layout, clock);
  const ids = new Set([...restored.require(ACCOUNT, 'aof').allMessages()].map((m) => m.id));
  const lost = acked.filter((id) => !ids.has(id));
  assert.deepEqual(lost, [], `${lost.length} acknowledged of ${acked.length} lost`);
});

/** The commit timeout bounds how long a request waits on a Redis that is gone or frozen. */
async function rejectsUnavailableWithin2s(commit: Promise<void>): Promise<void> {
  const t0 = performance.now();
  await assert.rejects(commit, isSqsError('ServiceUnavailable'));
  const ms = performance.now() - t0;
  assert.ok(ms < 2000, `rejected after ${ms} ms`);
}

test('Given Redis is down, when a change is committed, then it is rejected with ServiceUnavailable within 2 s', async () => {
  const own = await startRedis({ aof: false });
  try {
    const c = await connectRedis({ url: own.url });
    try {
      const { store, writer, clock, failures } = await open(c, layoutFor(uniquePrefix()));
      const q = create(store, 'down');
      await writer.commit();
      await own.kill9();
      sendOne(q, msg('unstored'), clock.now());
      await rejectsUnavailableWithin2s(writer.commit());
      assert.equal(failures.length, 1);
      // And every later commit of that shard too, at once.
      await assert.rejects(writer.commit([q.shard]), SqsError);
    } finally {
      c.disconnect();
    }
  } finally {
    await own.stop();
  }
});

test('Given Redis stops answering (SIGSTOP), when a change is committed, then it is rejected with ServiceUnavailable within 2 s', async () => {
  const own = await startRedis({ aof: false });
  const c = await connectRedis({ url: own.url });
  try {
    const { store, writer, clock } = await open(c, layoutFor(uniquePrefix()));
    const q = create(store, 'frozen');
    await writer.commit();
    own.pause();
    sendOne(q, msg('unknown outcome'), clock.now());
    await rejectsUnavailableWithin2s(writer.commit());
  } finally {
    own.resume();
    c.disconnect();
    await own.stop();
  }
});

test('Given a served store, when Redis dies and comes back, then serving stops, the state is reloaded from Redis and serving resumes', async () => {
  const own = await startRedis({ aof: true });
  const {
    p,
    clock,
    stores,
    diverged,
    reloaded: nextStore,
  } = watchedPersistence(createRedis({ url: own.url }));
  try {
    await p.start();
    assert.equal(p.state, 'serving');
    const q = (stores[0] as QueueStore).create(
      { accountId: ACCOUNT, region: REGION, name: 'r' },
      {},
      {},
    ).queue;
    const kept = sendOne(q, msg('kept'), clock.now());
    await p.commit();

    await own.kill9();
    const lostInMemory = sendOne(q, msg('answered 503'), clock.now());
    await assert.rejects(p.commit(), isSqsError('ServiceUnavailable'));
    assert.equal(p.serving, false);
    assert.equal(diverged.length, 1);
    await assert.rejects(p.commit(), SqsError);

    const reloaded = nextStore();
    await own.restart();
    const s2 = await reloaded;
    assert.equal(p.state, 'serving');
    const q2 = s2.require(ACCOUNT, 'r');
    const ids = [...q2.allMessages()].map((m) => m.id);
    assert.deepEqual(ids, [kept.id], 'the acknowledged message is back, the failed one is not');
    assert.notEqual(lostInMemory.id, kept.id);
    sendOne(q2, msg('after recovery'), clock.now());
    await p.commit();
  } finally {
    await p.close();
    await own.stop();
  }
});

test('Given deleted, expired and purged messages and a deleted queue, when committed, then no key is left behind', async () => {
  const c = await client();
  const layout = layoutFor(uniquePrefix());
  const { store, writer, clock } = await open(c, layout);
  const q = create(store, 'leaks', { MessageRetentionPeriod: '60' });
  const other = create(store, 'other');
  const keys = shardKeysOf(layout, q);
  const otherKeys = shardKeysOf(layout, other);
  for (let i = 0; i < 50; i++) sendOne(q, msg(`e${i}`), clock.now());
  for (let i = 0; i < 50; i++) sendOne(other, msg(`o${i}`), clock.now());
  await writer.commit();
  assert.equal(await c.hlen(keys.messages(q.uid)), 50);

  // Half received and deleted by handle, the rest expire.
  for (const m of q.receive(10, undefined, clock.now())) q.deleteMessage(q.receiptHandle(m), clock.now());
  await writer.commit();
  assert.equal(await c.hlen(keys.messages(q.uid)), 40);
  clock.advance(61 * S);
  assert.deepEqual(q.counts(clock.now()), { visible: 0, inflight: 0, delayed: 0 });
  other.purge(clock.now());
  await writer.commit();
  // Every key of the layout starts with its namespace, whatever its tag; the catalog is meta's.
  const { meta } = layout;
  const catalog = meta.catalog(ACCOUNT, REGION);
  const shardKeys = [keys, otherKeys].flatMap((k) => [k.queues, k.seq, k.commit]);
  assert.deepEqual(
    await keysUnder(c, layout.namespace),
    [...new Set([meta.layout, meta.commit, catalog, meta.catalogIndex, ...shardKeys])].sort(),
  );

  store.delete(q);
  store.delete(other);
  await writer.commit();
  assert.deepEqual(
    await keysUnder(c, layout.namespace),
    [...new Set([meta.layout, meta.commit, meta.catalogIndex, keys.commit, otherKeys.commit])].sort(),
  );
});

test('Given the leases hold another token, when a write is fenced, then nothing is written and commit rejects', async () => {
  const c = await client();
  const layout = layoutFor(uniquePrefix());
  await holdAll(c, layout, 'token-a');
  const { store, writer, clock, failures } = await open(c, layout, new ManualClock(), 'token-a');
  const q = create(store, 'fenced');
  sendOne(q, msg('written'), clock.now());
  await writer.commit();
  await holdAll(c, layout, 'token-b');
  const before = await dump(c, layout.namespace);

  sendOne(q, msg('refused'), clock.now());
  create(store, 'refused-queue');
  await assert.rejects(writer.commit(), isSqsError('ServiceUnavailable'));
  // The message's shard, the new queue's shard and meta (its catalog entry): each refused alone.
  assert.ok(failures.length > 0 && failures.every((e) => e instanceof FencedError), String(failures));
  assert.deepEqual(await dump(c, layout.namespace), before);

  // A loader with the wrong token refuses too: meta's, and a shard's on its own.
  await assert.rejects(loadLayout(c, layout, new QueueStore(clock), { token: 'token-a' }), FencedError);
  await assert.rejects(
    loadShard(c, shardKeysOf(layout, q), new QueueStore(clock), { token: 'token-a' }),
    FencedError,
  );
});

test('Given Redis has another layout version or unversioned keys, when loading, then a LayoutError says so', async () => {
  const c = await client();
  const stamped = layoutFor(uniquePrefix());
  await c.hset(stamped.meta.layout, 'version', '3', 'shards', '256');
  await assert.rejects(loadLayout(c, stamped, new QueueStore(new ManualClock())), (e) => {
    assert.ok(e instanceof LayoutError);
    assert.match(e.message, /layout version 3 at .*\{ssq:meta\}:layout/);
    return true;
  });
  // Layout 1's key, which a start reads to tell whether to migrate.
  const v1 = layoutFor(uniquePrefix());
  await c.set(v1.v1.layout, '3');
  await assert.rejects(loadLayout(c, v1, new QueueStore(new ManualClock())), (e) => {
    assert.ok(e instanceof LayoutError);
    assert.match(e.message, /layout version 3 at /);
    return true;
  });
  const unversioned = layoutFor(uniquePrefix());
  await c.hset(unversioned.v1.queues, 'x', '{}');
  await assert.rejects(loadLayout(c, unversioned, new QueueStore(new ManualClock())), LayoutError);
});

test('Given a queue of 10,000 messages read in small chunks, when loaded, then every message is back in send order', async () => {
  const { c, layout, store, writer, clock } = await fresh();
  const q = create(store, 'many');
  const sent: string[] = [];
  for (let i = 0; i < 10_000; i++) sent.push(sendOne(q, msg(`b${i}`), clock.now()).id);
  // Some in flight and some deleted, so every structure is exercised.
  const taken = q.receive(10, 60 * S, clock.now());
  q.deleteMessage(q.receiptHandle(taken[0] as Message), clock.now());
  await writer.commit();

  const restored = new QueueStore(new ManualClock(clock.now()));
  const stats = await loadLayout(c, layout, restored, { chunk: 97, sliceMs: 1 });
  assert.equal(stats.messages, 9_999);
  assert.deepEqual(snapshot(restored), snapshot(store));
  const q2 = restored.require(ACCOUNT, 'many');
  assert.equal(q2.nextSequence, q.nextSequence);
  const order = q2.receive(10, undefined, clock.now()).map((m) => m.id);
  assert.deepEqual(order, sent.slice(10, 20));
});

test('Given a queue of 50,000 messages, when it is purged, then its hash is gone after one commit', async () => {
  const { c, layout, store, writer, clock } = await fresh();
  const q = create(store, 'big');
  const keys = shardKeysOf(layout, q);
  for (let i = 0; i < 50_000; i++) sendOne(q, msg('x'), clock.now());
  await writer.commit();
  assert.equal(await c.hlen(keys.messages(q.uid)), 50_000);
  q.purge(clock.now());
  sendOne(q, msg('after the purge'), clock.now());
  await writer.commit();
  assert.equal(await c.hlen(keys.messages(q.uid)), 1);
});

test('Given a queue whose deleted and sent messages collapse in one tick, when committed, then Redis holds exactly the survivors', async () => {
  const { c, layout, store, writer, clock } = await fresh();
  const q = create(store, 'collapse', { VisibilityTimeout: '0' });
  const m1 = sendOne(q, msg('m1'), clock.now());
  for (let i = 0; i < 5; i++) q.receive(1, undefined, clock.now());
  const m2 = sendOne(q, msg('m2'), clock.now());
  q.receive(10, undefined, clock.now());
  q.deleteMessage(q.receiptHandle(m2), clock.now());
  const flushes = writer.stats.batches;
  await writer.commit();
  assert.equal(writer.stats.batches, flushes + 1, 'one round trip for the whole tick');
  assert.deepEqual(await c.hkeys(shardKeysOf(layout, q).messages(q.uid)), [m1.id]);
  const restored = await reload(c, layout, clock);
  assert.equal([...restored.require(ACCOUNT, 'collapse').allMessages()][0]?.receiveCount, 6);
});

async function dump(c: Redis, namespace: string): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const k of await keysUnder(c, namespace)) {
    const type = await c.type(k);
    out[k] = type === 'hash' ? await c.hgetall(k) : await c.get(k);
  }
  return out;
}
