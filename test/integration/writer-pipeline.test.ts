/**
 * The writer of layout v2 against a real redis-server: a tick's calls for several shards (and
 * meta) in one MULTI/EXEC round trip, landing under each shard's tag; several bundles in flight at
 * once; the chain of each shard, which makes every call behind a failed one write nothing; a
 * failure that stops one shard only, until resetShard; the catalog, tenants and move tasks in
 * their scopes; the script loaded again on a new connection. Calls are held in Redis with CLIENT
 * PAUSE WRITE (reads still answer, so the test can see that nothing was applied yet), and a
 * wrapper around the connection's `pipeline` counts the pipelines (one per connection per
 * bundle) sent and unanswered.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { ManualClock } from '../../src/core/clock.js';
import type { Queue } from '../../src/core/queue.js';
import { QueueStore } from '../../src/core/store.js';
import {
  deserializeCatalogEntry,
  deserializeMoveTask,
  deserializeTenant,
} from '../../src/persistence/codec.js';
import { layoutFor, type Layout } from '../../src/persistence/layout.js';
import { FencedError } from '../../src/persistence/scripts.js';
import { Writer, type Scope } from '../../src/persistence/writer.js';
import { shardOf } from '../../src/shard/hash.js';
import { SqsError } from '../../src/sqs/errors.js';
import { isSqsError } from '../support/assertions.js';
import { uniquePrefix } from '../support/redis.js';
import type { Redis } from 'ioredis';
import { testsRequiring } from '../support/requires.js';
import { sharedRedis } from '../support/sqs.js';
import { msg, sendOne } from '../support/queue.js';

const { after, before, test } = testsRequiring('redis-server');

const redis = sharedRedis({ before, after }, { aof: true });

const ACCOUNT = '000000000000';
const REGION = 'us-east-1';

const unavailable = (cause: Error): Error =>
  new SqsError('ServiceUnavailable', `The change could not be stored: ${cause.message}`);

const is503 = isSqsError('ServiceUnavailable');

/** Bundles the writer sent on the connection (a pipeline, or one lone EVALSHA): in all, unanswered now, and the most at once. */
interface Tap {
  sent: number;
  pending: number;
  maxPending: number;
}

function tap(c: Redis): Tap {
  const t: Tap = { sent: 0, pending: 0, maxPending: 0 };
  // A bundle of one call goes without a pipeline: its EVALSHA, written alone, is the bundle.
  const sendCommand = c.sendCommand.bind(c);
  c.sendCommand = (command, stream) => {
    const sent = sendCommand(command, stream);
    if (command.name === 'evalsha' && stream === undefined && !inPipeline) {
      t.sent++;
      t.maxPending = Math.max(t.maxPending, ++t.pending);
      void command.promise.then(
        () => t.pending--,
        () => t.pending--,
      );
    }
    return sent;
  };
  let inPipeline = false;
  const original = c.pipeline.bind(c);
  c.pipeline = (...args: Parameters<Redis['pipeline']>) => {
    const p = original(...args);
    const exec = p.exec.bind(p);
    p.exec = () => {
      t.sent++;
      t.maxPending = Math.max(t.maxPending, ++t.pending);
      inPipeline = true;
      const done = exec();
      inPipeline = false;
      void done.then(
        () => t.pending--,
        () => t.pending--,
      );
      return done;
    };
    return p;
  };
  return t;
}

/** `n` queue names whose shards all differ. */
function namesInShards(n: number): string[] {
  const names: string[] = [];
  const shards = new Set<number>();
  for (let i = 0; names.length < n; i++) {
    const s = shardOf(ACCOUNT, REGION, `q${i}`);
    if (shards.has(s)) continue;
    shards.add(s);
    names.push(`q${i}`);
  }
  return names;
}

interface Opened {
  readonly c: Redis;
  readonly t: Tap;
  readonly layout: Layout;
  readonly store: QueueStore;
  readonly writer: Writer;
  readonly queues: Queue[];
  readonly clock: ManualClock;
  readonly failures: [Scope, Error][];
  /** The token each scope writes with: '' (no fencing) unless set here. */
  readonly tokens: Map<Scope, string>;
}

/**
 * A tapped connection, an empty store with a writer over a fresh layout, and `n` queues in
 * different shards whose creation is committed.
 */
async function open(n = 1): Promise<Opened> {
  const c = await redis.connect({ commandTimeoutMs: 10_000 });
  const t = tap(c);
  const layout = layoutFor(uniquePrefix());
  const clock = new ManualClock();
  const store = new QueueStore(clock, { deletedRecentlyMs: 0 });
  const failures: [Scope, Error][] = [];
  const tokens = new Map<Scope, string>();
  const writer = new Writer({
    layout,
    connectionFor: () => c,
    token: (s) => tokens.get(s) ?? '',
    unavailable,
    onFailure: (s, e) => failures.push([s, e]),
  });
  writer.attach(store);
  const names = namesInShards(n);
  const queues = names.map(
    (name) => store.create({ accountId: ACCOUNT, region: REGION, name }, {}, {}).queue,
  );
  await writer.commit();
  return { c, t, layout, store, writer, queues, clock, failures, tokens };
}

let ids = 0;
/** Sends one message to `q` in this tick; its id. */
function send(o: Opened, q: Queue, body: string): string {
  return sendOne(q, msg(body, { id: `m-${++ids}`, senderId: ACCOUNT }), o.clock.now()).id;
}

/** The ids of a queue's messages in Redis, under its shard's tag. */
async function stored(o: Opened, q: Queue): Promise<string[]> {
  const keys = o.layout.shards[q.shard];
  assert.ok(keys !== undefined);
  return (await redis.server.client.hkeys(keys.messages(q.uid))).sort();
}

/** Lets the writer's setImmediate flush run: the next tick. */
const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Holds every client's write commands (and what each sends after one) until unpaused. */
async function pauseWrites(): Promise<void> {
  await redis.server.client.call('CLIENT', 'PAUSE', '10000', 'WRITE');
}

async function unpause(): Promise<void> {
  await redis.server.client.call('CLIENT', 'UNPAUSE');
}

/** How each promise settled, in the order they did. */
function settledOrder(promises: Record<string, Promise<void>>): string[] {
  const order: string[] = [];
  for (const [name, p] of Object.entries(promises)) {
    p.then(
      () => order.push(`${name} ok`),
      (e: unknown) => order.push(is503(e) ? `${name} 503` : `${name} ${String(e)}`),
    );
  }
  return order;
}

/** `cmdstat_<name>:calls` of the test's redis-server. */
async function calls(name: string): Promise<number> {
  const info = await redis.server.client.info('commandstats');
  return Number(new RegExp(`^cmdstat_${name}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
}

test('Given three queues in three shards, when one tick sends to each, then it is one MULTI/EXEC round trip and each message is under its shard', async () => {
  const o = await open(3);
  const shards = new Set(o.queues.map((q) => q.shard));
  assert.equal(shards.size, 3);
  const [exec, evalsha, pipelines] = [await calls('exec'), await calls('evalsha'), o.t.sent];
  const sent = o.queues.map((q) => send(o, q, `to ${q.name}`));
  await o.writer.commit();
  assert.equal(o.t.sent - pipelines, 1, 'one pipeline');
  assert.equal((await calls('exec')) - exec, 1, 'one transaction');
  assert.equal((await calls('evalsha')) - evalsha, 3, 'one call per shard');
  for (const [i, q] of o.queues.entries()) {
    assert.deepEqual(await stored(o, q), [sent[i]], q.name);
    const tag = o.layout.shards[q.shard]?.prefix ?? '';
    assert.equal((await redis.server.client.get(`${tag}commit`)) !== null, true, `${q.name}: its chain`);
  }
});

test('Given one queue, when one tick sends to it, then it is one script call and no transaction', async () => {
  const o = await open(1);
  const [q] = o.queues as [Queue];
  await o.writer.commit();
  const [multi, exec, evalsha] = [await calls('multi'), await calls('exec'), await calls('evalsha')];
  const sent = [send(o, q, 'a'), send(o, q, 'b')];
  await o.writer.commit();
  assert.equal((await calls('evalsha')) - evalsha, 1, 'one call');
  assert.deepEqual([(await calls('multi')) - multi, (await calls('exec')) - exec], [0, 0], 'no MULTI/EXEC');
  assert.deepEqual((await stored(o, q)).sort(), sent.sort());
});

test('Given Redis holds the calls, when six ticks each send a message, then four bundles are in flight at once and the rest wait in one batch', async () => {
  const o = await open(2);
  const [a, b] = o.queues as [Queue, Queue];
  const before = o.writer.stats.batches;
  const pipelines = o.t.sent;
  await pauseWrites();
  const commits: Promise<void>[] = [];
  const sent: string[] = [];
  try {
    for (let i = 0; i < 6; i++) {
      sent.push(send(o, i % 2 === 0 ? a : b, `b${i}`));
      commits.push(o.writer.commit(i % 2 === 0 ? [a.shard] : [b.shard]));
      await tick();
    }
    assert.equal(o.t.pending, 4, 'four bundles in flight');
    assert.equal(o.t.sent - pipelines, 4);
    assert.equal(commits[4], o.writer.commit([a.shard]), 'tick 5 waits in the open batch');
    // Read on another connection: on the writer's it would wait behind the held calls.
    assert.deepEqual(await stored(o, a), [], 'nothing applied while paused');
  } finally {
    await unpause();
  }
  await Promise.all(commits);
  assert.equal(o.writer.stats.batches - before, 5);
  assert.deepEqual(await stored(o, a), [sent[0], sent[2], sent[4]].sort());
  assert.deepEqual(await stored(o, b), [sent[1], sent[3], sent[5]].sort());
  assert.equal(o.t.maxPending, 4, 'never more than four');
});

test('Given a tick that makes a part of several calls, when it is written, then its calls go one bundle at a time', async () => {
  const o = await open();
  const q = o.queues[0] as Queue;
  for (let i = 0; i < 25_000; i++) send(o, q, 'x');
  const pipelines = o.t.sent;
  const evalsha = await calls('evalsha');
  await o.writer.commit();
  assert.equal(o.t.sent - pipelines, 3, 'three bundles');
  assert.equal((await calls('evalsha')) - evalsha, 3, 'cut into three calls');
  assert.equal(o.t.maxPending, 1, 'each alone: together they would risk the command timeout');
  assert.equal((await stored(o, q)).length, 25_000);
});

test("Given four bundles in flight over two shards, when shard A's second call is fenced, then A's later calls write nothing and are answered 503, and shard B's all resolve", async () => {
  const o = await open(2);
  const [a, b] = o.queues as [Queue, Queue];
  await o.c.set(o.layout.shards[a.shard]?.lease ?? '', 'tok');
  await pauseWrites();
  const inA: string[] = [];
  const inB: string[] = [];
  const commits: Record<string, Promise<void>> = {};
  let order: string[];
  try {
    for (const name of ['1', '2', '3', '4']) {
      // A's second call is flushed with a token its lease does not hold; its 3rd and 4th with the right one.
      o.tokens.set(a.shard, name === '2' ? 'stale' : 'tok');
      inA.push(send(o, a, `A${name}`));
      inB.push(send(o, b, `B${name}`));
      commits[`A${name}`] = o.writer.commit([a.shard]);
      commits[`B${name}`] = o.writer.commit([b.shard]);
      await tick();
    }
    o.tokens.set(a.shard, 'tok');
    order = settledOrder(commits);
    assert.equal(o.t.pending, 4);
  } finally {
    await unpause();
  }
  await Promise.allSettled(Object.values(commits));
  assert.deepEqual(
    order.filter((s) => s.startsWith('A')),
    ['A1 ok', 'A2 503', 'A3 503', 'A4 503'],
  );
  assert.deepEqual(
    order.filter((s) => s.startsWith('B')),
    ['B1 ok', 'B2 ok', 'B3 ok', 'B4 ok'],
  );
  assert.equal(o.failures.length, 1, 'told once');
  assert.equal(o.failures[0]?.[0], a.shard);
  assert.ok(o.failures[0]?.[1] instanceof FencedError, 'told the cause, not the refusals behind it');
  assert.deepEqual(await stored(o, a), [inA[0]], 'only A1 is in Redis');
  assert.deepEqual(await stored(o, b), [...inB].sort());
  await assert.rejects(o.writer.commit([a.shard]), is503);
  // A shard failed already is its owner's to read back: a commit of every scope (a request that
  // names no queue) waits for the others only.
  await o.writer.commit();
  await o.writer.commit([b.shard]);
});

test('Given a shard whose lease another instance holds, when a tick writes to three shards, then only that shard fails, until resetShard', async () => {
  const o = await open(3);
  const [bad, ...good] = o.queues as [Queue, Queue, Queue];
  await o.c.set(o.layout.shards[bad.shard]?.lease ?? '', 'another instance');
  o.tokens.set(bad.shard, 'tok');
  const sent = o.queues.map((q) => send(o, q, 'first'));
  const settled = await Promise.allSettled(o.queues.map((q) => o.writer.commit([q.shard])));
  assert.deepEqual(
    settled.map((s) => s.status),
    ['rejected', 'fulfilled', 'fulfilled'],
  );
  assert.ok(settled[0]?.status === 'rejected' && is503(settled[0].reason));
  assert.deepEqual(
    o.failures.map(([s, e]) => [s, e.name]),
    [[bad.shard, 'FencedError']],
  );
  assert.ok(o.writer.failure(bad.shard) instanceof FencedError);
  assert.equal(o.writer.failure(good[0].shard), undefined);
  for (const [i, q] of good.entries()) assert.deepEqual(await stored(o, q), [sent[i + 1]]);
  assert.deepEqual(await stored(o, bad), []);

  // Its events are dropped meanwhile; the others' are written.
  send(o, bad, 'dropped');
  const later = send(o, good[0], 'later');
  await assert.rejects(o.writer.commit([bad.shard]), is503);
  await o.writer.commit([good[0].shard]);
  assert.deepEqual(await stored(o, good[0]), [sent[1], later].sort());
  assert.deepEqual(await stored(o, bad), []);
  assert.equal(o.failures.length, 1, 'still told once');

  // The owner got the lease back and reloaded the shard: a fresh chain.
  await o.c.set(o.layout.shards[bad.shard]?.lease ?? '', 'tok');
  o.writer.resetShard(bad.shard);
  assert.equal(o.writer.failure(bad.shard), undefined);
  const again = send(o, bad, 'again');
  await o.writer.commit([bad.shard]);
  await o.writer.commit();
  assert.deepEqual(await stored(o, bad), [again]);
});

test('Given a shard this writer wrote, then another process held and wrote, when it is read in here again (resetShard), then the next call starts a fresh chain and is applied', async () => {
  const o = await open();
  const q = o.queues[0] as Queue;
  const keys = o.layout.shards[q.shard];
  assert.ok(keys !== undefined);
  const first = send(o, q, 'first');
  await o.writer.commit([q.shard]);
  // The other holder's writes: the chain key holds its call's id now.
  await o.c.set(keys.commit, 'another process');
  o.writer.resetShard(q.shard);
  const back = send(o, q, 'back here');
  await o.writer.commit([q.shard]);
  assert.deepEqual(o.failures, [], 'not refused as out of chain');
  assert.deepEqual(await stored(o, q), [first, back].sort());
  assert.notEqual(await o.c.get(keys.commit), 'another process');
});

test('Given the chain key changed behind the writer, when its next call runs, then it writes nothing', async () => {
  const o = await open();
  const q = o.queues[0] as Queue;
  const keys = o.layout.shards[q.shard];
  assert.ok(keys !== undefined);
  await o.c.set(keys.commit, 'someone else');
  send(o, q, 'refused');
  await assert.rejects(o.writer.commit([q.shard]), is503);
  assert.match(o.failures[0]?.[1].message ?? '', /not applied/);
  assert.deepEqual(await stored(o, q), []);
  assert.equal(await o.c.get(keys.commit), 'someone else');
});

test('Given queues created, changed and deleted, then the catalog in meta follows them, and a name deleted and created again in one tick keeps the new queue', async () => {
  const o = await open();
  const catalog = o.layout.meta.catalog(ACCOUNT, REGION);
  const entry = async (name: string): Promise<ReturnType<typeof deserializeCatalogEntry> | undefined> => {
    const r = await o.c.hget(catalog, name);
    return r === null ? undefined : deserializeCatalogEntry(name, r);
  };
  const first = o.queues[0] as Queue;
  assert.deepEqual(await entry(first.name), { shard: first.shard, uid: first.uid, fifo: false });

  const fifo = { FifoQueue: 'true' };
  const dlq = o.store.create({ accountId: ACCOUNT, region: REGION, name: 'dlq.fifo' }, fifo, {}).queue;
  const src = o.store.create({ accountId: ACCOUNT, region: REGION, name: 'src.fifo' }, fifo, {}).queue;
  o.store.setAttributes(src, {
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 3 }),
  });
  await o.writer.commit();
  assert.deepEqual(await entry('src.fifo'), {
    shard: src.shard,
    uid: src.uid,
    fifo: true,
    deadLetterTargetArn: dlq.arn,
  });

  o.store.delete(first);
  const again = o.store.create({ accountId: ACCOUNT, region: REGION, name: first.name }, {}, {}).queue;
  o.store.delete(dlq);
  await o.writer.commit();
  assert.notEqual(again.uid, first.uid);
  assert.deepEqual(await entry(first.name), { shard: first.shard, uid: again.uid, fifo: false });
  assert.equal(await entry('dlq.fifo'), undefined);
});

test('Given a tenant and a move task, then the tenant is in meta and the task in the shard of its source queue', async () => {
  const o = await open();
  o.store.tenants.create('team-a', '111111111111', [], o.clock.now());
  const dlq = o.store.create({ accountId: ACCOUNT, region: REGION, name: 'tasks-dlq' }, {}, {}).queue;
  const src = o.store.create({ accountId: ACCOUNT, region: REGION, name: 'tasks-src' }, {}, {}).queue;
  o.store.setAttributes(src, {
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 3 }),
  });
  await o.writer.commit();
  const task = o.store.startMoveTask(ACCOUNT, dlq.arn, undefined, undefined, REGION);
  await o.writer.commit([dlq.shard]);
  const record = await o.c.hget(o.layout.shards[dlq.shard]?.tasks ?? '', task.taskId);
  assert.ok(record !== null, 'in the shard of the source (the dead-letter queue)');
  assert.equal(deserializeMoveTask(record).sourceArn, dlq.arn);
  const tenant = await o.c.hget(o.layout.meta.tenants, 'team-a');
  assert.ok(tenant !== null);
  assert.equal(deserializeTenant(tenant).accountId, '111111111111');
});

test('Given Redis lost its scripts and the connection was made again, when the next tick is written, then the script is loaded first and nothing fails', async () => {
  const o = await open(2);
  await redis.server.client.call('SCRIPT', 'FLUSH');
  const ready = once(o.c, 'ready');
  await redis.server.client.call('CLIENT', 'KILL', 'ID', String(await o.c.client('ID')));
  await ready;
  const sent = o.queues.map((q) => send(o, q, 'after a reconnect'));
  await o.writer.commit();
  assert.deepEqual(o.failures, []);
  for (const [i, q] of o.queues.entries()) assert.deepEqual(await stored(o, q), [sent[i]]);
});

test('Given the scripts flushed on the same connection, when a tick is written, then its shards fail (NOSCRIPT), and after resetShard the script is loaded again', async () => {
  const o = await open(2);
  await redis.server.client.call('SCRIPT', 'FLUSH');
  for (const q of o.queues) send(o, q, 'refused');
  await assert.rejects(o.writer.commit(), is503);
  assert.deepEqual(
    o.failures.map(([s, e]) => [s, /NOSCRIPT/.test(e.message)]),
    o.queues.map((q) => [q.shard, true]),
  );
  for (const q of o.queues) o.writer.resetShard(q.shard);
  const sent = o.queues.map((q) => send(o, q, 'loaded again'));
  await o.writer.commit();
  for (const [i, q] of o.queues.entries()) assert.deepEqual(await stored(o, q), [sent[i]]);
});

test('Given a bundle over three shards in flight, when its connection is closed, then each of the three shards fails once and the other scopes do not', async () => {
  const o = await open(3);
  const id = String(await o.c.client('ID'));
  await pauseWrites();
  let commits: Promise<PromiseSettledResult<void>[]>;
  try {
    for (const q of o.queues) send(o, q, 'lost');
    commits = Promise.allSettled(o.queues.map((q) => o.writer.commit([q.shard])));
    await tick();
    assert.equal(o.t.pending, 1);
    await redis.server.client.call('CLIENT', 'KILL', 'ID', id);
  } finally {
    await unpause();
  }
  const settled = await commits;
  assert.ok(settled.every((s) => s.status === 'rejected' && is503(s.reason)));
  assert.deepEqual(o.failures.map(([s]) => s).sort(), o.queues.map((q) => q.shard).sort());
  assert.equal(o.writer.failure('meta'), undefined, 'meta had no call in it');
});
