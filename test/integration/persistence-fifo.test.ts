/**
 * The state FIFO queues, dead-letter queues and move tasks add, written by the writer and read
 * back by the loader against a real redis-server (started by this file): deduplication records and
 * a pending DeduplicationScope change, groups held back by a message in flight, sequence numbers, ReceiveRequestAttemptId records, DeadLetterQueueSourceArn and
 * move tasks. Each test has its own key prefix; time is a ManualClock.
 */
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/core/clock.js';
import type { Queue } from '../../src/core/queue.js';
import { QueueStore } from '../../src/core/store.js';
import { layoutFor, type Layout } from '../../src/persistence/layout.js';
import { Writer } from '../../src/persistence/writer.js';
import { SqsError } from '../../src/sqs/errors.js';
import { keysUnder, uniquePrefix } from '../support/redis.js';
import { testsRequiring } from '../support/requires.js';
import { sharedRedis } from '../support/sqs.js';
import { msg, sendOne } from '../support/queue.js';
import { loadLayout, shardKeysOf } from '../support/persistence.js';

const { after, before, test } = testsRequiring('redis-server');

const ACCOUNT = '000000000000';
const S = 1000;

const redis = sharedRedis({ before, after }, { aof: true });

interface Opened {
  readonly store: QueueStore;
  readonly writer: Writer;
}

async function open(layout: Layout, clock: ManualClock): Promise<Opened> {
  const store = new QueueStore(clock, { deletedRecentlyMs: 0 });
  await loadLayout(redis.client, layout, store);
  const writer = new Writer({
    layout,
    connectionFor: () => redis.client,
    unavailable: (cause) => new SqsError('ServiceUnavailable', cause.message),
  });
  writer.attach(store);
  return { store, writer };
}

function create(store: QueueStore, name: string, attrs: Record<string, string> = {}): Queue {
  const fifo = name.endsWith('.fifo') ? { FifoQueue: 'true' } : {};
  return store.create({ accountId: ACCOUNT, region: 'us-east-1', name }, { ...fifo, ...attrs }, {}).queue;
}

/** A fresh prefix holding `src`, whose messages go to `dlq` on their second receive. */
async function openWithRedrive(): Promise<{
  layout: Layout;
  clock: ManualClock;
  a: Opened;
  dlq: Queue;
  src: Queue;
}> {
  const layout = layoutFor(uniquePrefix());
  const clock = new ManualClock();
  const a = await open(layout, clock);
  const dlq = create(a.store, 'dlq');
  const src = create(a.store, 'src', {
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 1 }),
    VisibilityTimeout: '0',
  });
  return { layout, clock, a, dlq, src };
}

/** A fresh prefix holding FIFO queue `q` with one message sent, so one deduplication record. */
async function openWithRecord(): Promise<{
  layout: Layout;
  clock: ManualClock;
  a: Opened;
  q: Queue;
}> {
  const layout = layoutFor(uniquePrefix());
  const clock = new ManualClock();
  const a = await open(layout, clock);
  const q = create(a.store, 'q.fifo');
  q.sendMessage(msg('x', { groupId: 'g', deduplicationId: 'd' }), clock.now());
  return { layout, clock, a, q };
}

function queue(store: QueueStore, name: string): Queue {
  const q = store.get(ACCOUNT, name);
  assert.ok(q, `${name} was loaded`);
  return q;
}

void test('Given a FIFO message sent and deleted, when the state is reloaded, then its deduplication id is still a duplicate within 5 minutes', async () => {
  const layout = layoutFor(uniquePrefix());
  const clock = new ManualClock();
  const a = await open(layout, clock);
  const q = create(a.store, 'q.fifo');
  const first = q.sendMessage(msg('x', { groupId: 'g', deduplicationId: 'd' }), clock.now());
  const [got] = q.receive(1, undefined, clock.now());
  assert.ok(got);
  q.deleteMessage(q.receiptHandle(got), clock.now());
  await a.writer.commit();

  clock.advance(60 * S);
  const b = await open(layout, clock);
  const again = queue(b.store, 'q.fifo').sendMessage(
    msg('x', { groupId: 'g', deduplicationId: 'd' }),
    clock.now(),
  );
  assert.equal(again.message, undefined);
  assert.equal(again.messageId, first.messageId);
  assert.equal(again.sequenceNumber, first.sequenceNumber);
});

void test('Given deduplication records past their 5 minutes, when reloaded and ticked, then they are dropped from memory and from Redis', async () => {
  const { layout, clock, a, q } = await openWithRecord();
  await a.writer.commit();
  assert.equal(await redis.client.hlen(shardKeysOf(layout, q).dedup(q.uid)), 1);

  clock.advance(5 * 60 * S);
  const b = await open(layout, clock);
  const back = queue(b.store, 'q.fifo');
  back.tick(clock.now());
  assert.deepEqual([...(back.fifoState?.dedupRecords() ?? [])], []);
  await b.writer.commit();
  assert.equal(await redis.client.hlen(shardKeysOf(layout, q).dedup(q.uid)), 0);
});

void test('Given a FIFO group whose first message is in flight, and SequenceNumbers, when reloaded, then the group is still held back, the order kept, and new numbers are higher', async () => {
  const layout = layoutFor(uniquePrefix());
  const clock = new ManualClock();
  const a = await open(layout, clock);
  const q = create(a.store, 'q.fifo', { VisibilityTimeout: '60' });
  let last = '';
  for (const b of ['a1', 'a2', 'a3']) {
    last = q.sendMessage(msg(b, { groupId: 'a', deduplicationId: b }), clock.now()).sequenceNumber ?? '';
  }
  q.sendMessage(msg('b1', { groupId: 'b', deduplicationId: 'b1' }), clock.now());
  const [a1] = q.receive(1, undefined, clock.now());
  assert.equal(a1?.body, 'a1');
  await a.writer.commit();

  const b = await open(layout, clock);
  const back = queue(b.store, 'q.fifo');
  const other = back.receive(10, undefined, clock.now());
  assert.deepEqual(
    other.map((m) => m.body),
    ['b1'],
  );
  for (const m of other) back.deleteMessage(back.receiptHandle(m), clock.now());
  clock.advance(60 * S);
  assert.deepEqual(
    back.receive(10, undefined, clock.now()).map((m) => m.body),
    ['a1', 'a2', 'a3'],
  );
  const next = back.sendMessage(msg('a4', { groupId: 'a', deduplicationId: 'a4' }), clock.now());
  assert.ok(BigInt(next.sequenceNumber ?? '0') > BigInt(last));
});

void test('Given a group whose first message is visible again and its second in flight, when reloaded, then a receive serves the first and stops at the second', async () => {
  const layout = layoutFor(uniquePrefix());
  const clock = new ManualClock();
  const a = await open(layout, clock);
  const q = create(a.store, 'q.fifo', { VisibilityTimeout: '60' });
  for (const b of ['a1', 'a2', 'a3'])
    q.sendMessage(msg(b, { groupId: 'a', deduplicationId: b }), clock.now());
  const got = q.receive(2, undefined, clock.now());
  assert.deepEqual(
    got.map((m) => m.body),
    ['a1', 'a2'],
  );
  q.changeVisibility(q.receiptHandle(got[0] as (typeof got)[number]), 0, clock.now());
  await a.writer.commit();

  const b = await open(layout, clock);
  assert.deepEqual(
    queue(b.store, 'q.fifo')
      .receive(10, undefined, clock.now())
      .map((m) => m.body),
    ['a1'],
  );
});

void test('Given a DeduplicationScope change made 10 s before a reload, when sent to after it, then the scope before the change applies until 60 s after it, the new one from then', async () => {
  const layout = layoutFor(uniquePrefix());
  const clock = new ManualClock();
  const a = await open(layout, clock);
  const q = create(a.store, 'q.fifo');
  const changedAt = clock.now();
  a.store.setAttributes(q, { DeduplicationScope: 'messageGroup', FifoThroughputLimit: 'perMessageGroupId' });
  await a.writer.commit();

  clock.advance(10 * S);
  const b = await open(layout, clock);
  const back = queue(b.store, 'q.fifo');
  /** One deduplication id in two new groups: two messages under scope messageGroup. */
  const twoMessages = (id: string): boolean =>
    back.sendMessage(msg(id, { groupId: `${id}-1`, deduplicationId: id }), clock.now()).messageId !==
    back.sendMessage(msg(id, { groupId: `${id}-2`, deduplicationId: id }), clock.now()).messageId;
  assert.equal(twoMessages('before'), false, 'scope queue 10 s after the change');
  clock.advance(changedAt + 60 * S - 1 - clock.now());
  assert.equal(twoMessages('just-before'), false, 'scope queue 1 ms before 60 s');
  clock.advance(1);
  assert.equal(twoMessages('after'), true, 'scope messageGroup 60 s after the change');
});

void test('Given a receive with a ReceiveRequestAttemptId, when reloaded and retried, then the same receipt handles come back', async () => {
  const layout = layoutFor(uniquePrefix());
  const clock = new ManualClock();
  const a = await open(layout, clock);
  const q = create(a.store, 'q.fifo', { VisibilityTimeout: '300' });
  q.sendMessage(msg('x', { groupId: 'g', deduplicationId: 'd' }), clock.now());
  const handles = q.receive(10, undefined, clock.now(), 'attempt').map((m) => q.receiptHandle(m));
  await a.writer.commit();

  clock.advance(10 * S);
  const b = await open(layout, clock);
  const back = queue(b.store, 'q.fifo');
  assert.deepEqual(
    back.receive(10, undefined, clock.now(), 'attempt').map((m) => back.receiptHandle(m)),
    handles,
  );
});

void test('Given a message moved to a DLQ, when reloaded, then it still names its source queue', async () => {
  const { layout, clock, a, src } = await openWithRedrive();
  sendOne(src, msg('poison'), clock.now());
  src.receive(1, undefined, clock.now());
  src.receive(1, undefined, clock.now());
  await a.writer.commit();

  const b = await open(layout, clock);
  const [moved] = queue(b.store, 'dlq').receive(1, undefined, clock.now());
  assert.equal(moved?.body, 'poison');
  assert.equal(moved?.deadLetterSourceArn, src.arn);
});

void test('Given a move task that ran part way, when reloaded, then it is listed with its progress and still RUNNING', async () => {
  const { layout, clock, a, dlq, src } = await openWithRedrive();
  for (let i = 0; i < 3; i++) sendOne(src, msg(`m${i}`), clock.now());
  src.receive(10, undefined, clock.now());
  src.receive(10, undefined, clock.now());
  const task = a.store.startMoveTask(ACCOUNT, dlq.arn, undefined, 1);
  a.store.stepMoveTask(task, 1);
  await a.writer.commit();

  const b = await open(layout, clock);
  const [listed] = b.store.moveTasks.list(dlq.arn);
  assert.ok(listed);
  assert.equal(listed.taskId, task.taskId);
  assert.equal(listed.status, 'RUNNING');
  assert.equal(listed.moved, 1);
  assert.equal(listed.toMove, 3);
  assert.equal(listed.maxNumberOfMessagesPerSecond, 1);
});

void test('Given a FIFO queue with records, when it is deleted, then none of its keys are left in Redis', async () => {
  const { layout, clock, a, q } = await openWithRecord();
  q.receive(1, undefined, clock.now(), 'attempt');
  await a.writer.commit();
  // Every key of the layout starts with its namespace, whatever its tag.
  const ofQueue = async (): Promise<string[]> =>
    (await keysUnder(redis.client, layout.namespace)).filter((k) => k.includes(q.uid));
  const keys = shardKeysOf(layout, q);
  assert.deepEqual(
    await ofQueue(),
    [keys.attempts(q.uid), keys.dedup(q.uid), keys.messages(q.uid)].sort(),
    'its messages, deduplication and receive-attempt records were written',
  );
  a.store.delete(q);
  await a.writer.commit();
  assert.deepEqual(await ofQueue(), []);
});
