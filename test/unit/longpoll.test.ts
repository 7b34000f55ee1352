import assert from 'node:assert/strict';
import { afterEach, beforeEach, mock, test } from 'node:test';
import { ManualClock } from '../../src/core/clock.js';
import type { Message } from '../../src/core/message.js';
import type { Queue } from '../../src/core/queue.js';
import { QueueStore } from '../../src/core/store.js';
import { receiveMessage } from '../../src/sqs/actions/receive-message.js';
import { LongPoller } from '../../src/sqs/longpoll.js';
import { MoveTaskRunner } from '../../src/sqs/movetasks.js';
import type { RequestContext, SqsServices } from '../../src/sqs/service.js';
import { msg, sendOne } from '../support/queue.js';

/*
 * Time here is two things moved together: the ManualClock the core and the poller read, and
 * node:test's mocked setTimeout the poller arms. `advance` moves both, then lets the microtasks
 * (the poller drains a queue on one) and the promise callbacks run.
 */

const S = 1000;
const WAIT = 20 * S;

let clock: ManualClock;
let store: QueueStore;
let poller: LongPoller;

beforeEach(() => {
  mock.timers.enable({ apis: ['setTimeout'] });
  clock = new ManualClock();
  store = new QueueStore(clock);
  poller = new LongPoller(store, clock);
});

afterEach(() => {
  poller.closeAll();
  mock.timers.reset();
});

async function flush(): Promise<void> {
  await Promise.resolve();
  await new Promise(setImmediate);
}

async function advance(ms: number): Promise<void> {
  clock.advance(ms);
  mock.timers.tick(ms);
  await flush();
}

function queue(name = 'q1', attributes: Record<string, string> = {}): Queue {
  return store.create({ accountId: '000000000000', region: 'us-east-1', name }, attributes, {}).queue;
}

/** A waiting ReceiveMessage: its answer once it has one, and how to abort it. */
interface Pending {
  result: Message[] | undefined;
  abort: () => void;
}

function wait(q: Queue, waitMs = WAIT, max = 1, visibilityTimeoutMs?: number): Pending {
  const p: Pending = { result: undefined, abort: () => assert.fail('onAbort was not called') };
  poller
    .wait(q, max, visibilityTimeoutMs, waitMs, (abort) => {
      p.abort = abort;
    })
    .then(
      (r) => {
        p.result = r;
      },
      (e: unknown) => assert.fail(`wait rejected: ${String(e)}`),
    );
  return p;
}

/** Read through a call, so an earlier assertion does not narrow it for the code after an await. */
function resultOf(p: Pending): Message[] | undefined {
  return p.result;
}

/** Unanswered until 1 ms before `ms` from now; at `ms`, answered with messages of these bodies. */
async function answeredAt(w: Pending, ms: number, expected: string[]): Promise<void> {
  await advance(ms - 1);
  assert.equal(resultOf(w), undefined, `answered before ${ms} ms`);
  await advance(1);
  assert.deepEqual(bodies(resultOf(w)), expected);
}

function bodies(messages: Message[] | undefined): string[] | undefined {
  return messages?.map((m) => m.body);
}

void test('Given a waiter on an empty queue, when a message is sent, then the waiter gets it', async () => {
  const q = queue();
  const w = wait(q);
  await advance(3 * S);
  assert.equal(resultOf(w), undefined);
  sendOne(q, msg('hello'), clock.now());
  await flush();
  assert.deepEqual(bodies(resultOf(w)), ['hello']);
  assert.equal(poller.waiting, 0);
});

void test('Given a waiter that got a message, when it is served, then the message is in flight with receiveCount 1', async () => {
  const q = queue();
  const w = wait(q);
  sendOne(q, msg(), clock.now());
  await flush();
  const [m] = resultOf(w) ?? [];
  assert.equal(m?.state, 'inflight');
  assert.equal(m.receiveCount, 1);
  assert.deepEqual(q.counts(clock.now()), { visible: 0, inflight: 1, delayed: 0 });
});

void test('Given a waiter for up to 10 messages, when several are sent in one go, then it gets them all in one answer', async () => {
  const q = queue();
  const w = wait(q, WAIT, 10);
  for (const b of ['a', 'b', 'c']) sendOne(q, msg(b), clock.now());
  await flush();
  assert.deepEqual(bodies(resultOf(w)), ['a', 'b', 'c']);
});

void test('Given a waiter and no message, when its wait time is reached, then it is answered with no messages', async () => {
  const q = queue();
  const w = wait(q, 5 * S);
  await advance(5 * S - 1);
  assert.equal(resultOf(w), undefined);
  await advance(1);
  assert.deepEqual(resultOf(w), []);
  assert.equal(poller.waiting, 0);
});

void test('Given a message delayed 5 s before the waiter came, when its delay ends, then the deadline timer wakes the waiter with it', async () => {
  const q = queue();
  sendOne(q, msg('late', { delaySeconds: 5 }), clock.now());
  const w = wait(q);
  await answeredAt(w, 5 * S, ['late']);
});

void test('Given a waiter and a message delayed 5 s, when the delay runs, then the queue is not polled before the deadline', async () => {
  const q = queue();
  sendOne(q, msg('late', { delaySeconds: 5 }), clock.now());
  const tick = mock.method(q, 'tick');
  const w = wait(q);
  for (let i = 0; i < 49; i++) await advance(100);
  assert.equal(tick.mock.callCount(), 0);
  await advance(100);
  assert.deepEqual(bodies(resultOf(w)), ['late']);
});

void test('Given a waiter, when a message delayed 5 s is sent after it started, then it is woken with the message when the delay ends', async () => {
  const q = queue();
  const w = wait(q);
  await advance(1 * S);
  sendOne(q, msg('late', { delaySeconds: 5 }), clock.now());
  await answeredAt(w, 5 * S, ['late']);
});

void test('Given a waiter and a delayed message, when an earlier-delayed message is sent, then the waiter is woken at the earlier deadline', async () => {
  const q = queue();
  sendOne(q, msg('slow', { delaySeconds: 15 }), clock.now());
  const w = wait(q);
  sendOne(q, msg('fast', { delaySeconds: 3 }), clock.now());
  await advance(3 * S);
  assert.deepEqual(bodies(resultOf(w)), ['fast']);
});

void test('Given an in-flight message, when its visibility timeout expires while someone waits, then the waiter gets it with receiveCount 2', async () => {
  const q = queue();
  sendOne(q, msg('again'), clock.now());
  q.receive(1, 5 * S, clock.now());
  const w = wait(q);
  await answeredAt(w, 5 * S, ['again']);
  assert.equal(resultOf(w)?.[0]?.receiveCount, 2);
});

void test('Given a waiter and an in-flight message, when its visibility is shortened to 2 s, then the waiter gets it after 2 s', async () => {
  const q = queue('q1', { VisibilityTimeout: '300' });
  sendOne(q, msg('shortened'), clock.now());
  const [m] = q.receive(1, undefined, clock.now());
  assert.ok(m);
  const w = wait(q);
  q.changeVisibility(q.receiptHandle(m), 2 * S, clock.now());
  await advance(2 * S);
  assert.deepEqual(bodies(resultOf(w)), ['shortened']);
});

void test('Given a waiter and an in-flight message, when its visibility is set to 0, then the waiter gets it at once', async () => {
  const q = queue();
  sendOne(q, msg('now'), clock.now());
  const [m] = q.receive(1, undefined, clock.now());
  assert.ok(m);
  const w = wait(q);
  q.changeVisibility(q.receiptHandle(m), 0, clock.now());
  await flush();
  assert.deepEqual(bodies(resultOf(w)), ['now']);
});

void test('Given two waiters, when one message is sent, then the one that waited longest gets it and the other keeps waiting', async () => {
  const q = queue();
  const older = wait(q);
  await advance(1 * S);
  const newer = wait(q);
  sendOne(q, msg('first'), clock.now());
  await flush();
  assert.deepEqual(bodies(resultOf(older)), ['first']);
  assert.equal(resultOf(newer), undefined);
  sendOne(q, msg('second'), clock.now());
  await flush();
  assert.deepEqual(bodies(resultOf(newer)), ['second']);
});

void test('Given two waiters, when two messages are sent at once, then each waiter gets one, oldest waiter first', async () => {
  const q = queue();
  const older = wait(q);
  const newer = wait(q);
  sendOne(q, msg('first'), clock.now());
  sendOne(q, msg('second'), clock.now());
  await flush();
  assert.deepEqual(bodies(resultOf(older)), ['first']);
  assert.deepEqual(bodies(resultOf(newer)), ['second']);
});

void test('Given an aborted waiter, when a message is sent, then it takes nothing and the message stays visible for the next receive', async () => {
  const q = queue();
  const w = wait(q);
  w.abort();
  await flush();
  assert.deepEqual(resultOf(w), []);
  sendOne(q, msg('kept'), clock.now());
  await flush();
  assert.deepEqual(resultOf(w), []);
  const [m] = q.receive(1, undefined, clock.now());
  assert.equal(m?.body, 'kept');
  assert.equal(m.receiveCount, 1);
});

void test('Given a waiter aborted after a send but before its drain ran, when the drain runs, then the message stays visible', async () => {
  const q = queue();
  const w = wait(q);
  sendOne(q, msg('kept'), clock.now());
  w.abort();
  await flush();
  assert.deepEqual(resultOf(w), []);
  assert.deepEqual(q.counts(clock.now()), { visible: 1, inflight: 0, delayed: 0 });
});

void test('Given an aborted waiter and a live one, when a message is sent, then the live one gets it', async () => {
  const q = queue();
  const gone = wait(q);
  const live = wait(q);
  gone.abort();
  sendOne(q, msg('for-live'), clock.now());
  await flush();
  assert.deepEqual(resultOf(gone), []);
  assert.deepEqual(bodies(resultOf(live)), ['for-live']);
});

void test('Given waiters on two queues, when closeAll is called, then everyone is answered with no messages', async () => {
  const a = queue('a');
  const b = queue('b');
  const ws = [wait(a), wait(a), wait(b)];
  poller.closeAll();
  await flush();
  for (const w of ws) assert.deepEqual(resultOf(w), []);
  assert.equal(poller.waiting, 0);
});

void test("Given waiters on queues of two shards, when one shard is closed, then only its queues' waiters are answered", async () => {
  let i = 0;
  const a = queue('a');
  let b = queue(`b${i}`);
  while (b.shard === a.shard) b = queue(`b${++i}`);
  const mine = [wait(a), wait(a)];
  const other = wait(b);
  poller.closeShard(a.shard);
  await flush();
  for (const w of mine) assert.deepEqual(resultOf(w), []);
  assert.equal(other.result, undefined, 'the other shard still waits');
  assert.equal(poller.waiting, 1);
});

void test('Given a closed poller, when someone waits, then they are answered at once with no messages', async () => {
  const q = queue();
  poller.closeAll();
  const w = wait(q);
  await flush();
  assert.deepEqual(resultOf(w), []);
});

void test('Given waiters on a queue, when the queue is deleted, then they are answered with no messages', async () => {
  const q = queue();
  const other = queue('other');
  const ws = [wait(q), wait(q)];
  const elsewhere = wait(other);
  store.delete(q);
  await flush();
  for (const w of ws) assert.deepEqual(resultOf(w), []);
  assert.equal(resultOf(elsewhere), undefined);
  assert.equal(poller.waiting, 1);
});

void test('Given 1,000 waiters on one queue, when one message is sent, then exactly one waiter, the oldest, gets it', async () => {
  const q = queue();
  const ws: Pending[] = [];
  for (let i = 0; i < 1000; i++) ws.push(wait(q));
  sendOne(q, msg('only'), clock.now());
  await flush();
  const served = ws.filter((w) => (resultOf(w)?.length ?? 0) > 0);
  assert.equal(served.length, 1);
  assert.equal(served[0], ws[0]);
  assert.equal(poller.waiting, 999);
  await advance(WAIT);
  assert.equal(ws.filter((w) => resultOf(w) === undefined).length, 0);
  assert.equal(ws.filter((w) => (resultOf(w)?.length ?? 0) > 0).length, 1);
  assert.equal(poller.waiting, 0);
  assert.deepEqual(q.counts(clock.now()), { visible: 0, inflight: 1, delayed: 0 });
});

void test('Given a waiter that timed out, when a message is sent afterwards, then the message stays visible', async () => {
  const q = queue();
  const w = wait(q, 1 * S);
  await advance(1 * S);
  assert.deepEqual(resultOf(w), []);
  sendOne(q, msg('unclaimed'), clock.now());
  await flush();
  assert.deepEqual(q.counts(clock.now()), { visible: 1, inflight: 0, delayed: 0 });
});

void test('Given waiters receiving with VisibilityTimeout 0, when one message is sent, then each of them gets it', async () => {
  const q = queue();
  const a = wait(q, WAIT, 1, 0);
  const b = wait(q, WAIT, 1, 0);
  sendOne(q, msg('shared'), clock.now());
  await flush();
  assert.deepEqual(bodies(resultOf(a)), ['shared']);
  assert.deepEqual(bodies(resultOf(b)), ['shared']);
});

void test('Given two ReceiveMessage long polls with VisibilityTimeout 0, when one message is sent, then each gets its own receipt handle and receive count', async () => {
  const svc: SqsServices = { store, clock, poller, mover: new MoveTaskRunner(store, clock) };
  const q = queue();
  const ctx: RequestContext = {
    requestId: 'r',
    accountId: '000000000000',
    region: 'us-east-1',
    defaultRegion: 'us-east-1',
    baseUrl: 'http://localhost:4100',
    senderId: '000000000000',
    onAbort: () => undefined,
  };
  const input = {
    QueueUrl: `http://localhost:4100/000000000000/${q.name}`,
    VisibilityTimeout: 0,
    WaitTimeSeconds: 20,
    AttributeNames: ['ApproximateReceiveCount'],
  };
  const first = receiveMessage(svc, ctx, input);
  const second = receiveMessage(svc, ctx, input);
  sendOne(q, msg('shared'), clock.now());
  const [a, b] = (await Promise.all([first, second])).map((r) => r.Messages?.[0]);
  assert.deepEqual(
    [a?.Attributes?.ApproximateReceiveCount, b?.Attributes?.ApproximateReceiveCount],
    ['1', '2'],
  );
  assert.notEqual(a?.ReceiptHandle, b?.ReceiptHandle);
});

void test('Given a waiter on a FIFO queue whose only group is locked, when the receive that locked it is retried with VisibilityTimeout 0, then the waiter gets the message', async () => {
  const q = queue('jobs.fifo', { FifoQueue: 'true' });
  sendOne(q, msg('locked', { groupId: 'g', deduplicationId: 'd1' }), clock.now());
  assert.equal(q.receive(1, 30 * S, clock.now(), 'attempt-1').length, 1);
  const w = wait(q);
  await flush();
  // The retry returns the same message and handle, and makes it visible again at once.
  assert.equal(q.receive(1, 0, clock.now(), 'attempt-1').length, 1);
  await flush();
  assert.deepEqual(bodies(resultOf(w)), ['locked']);
});

void test('Given a waiter behind a FIFO group locked by a message in flight, when that message reaches the end of its retention period, then the waiter gets the next message of the group', async () => {
  const q = queue('jobs.fifo', { FifoQueue: 'true', MessageRetentionPeriod: '60' });
  sendOne(q, msg('first', { groupId: 'g', deduplicationId: 'd1' }), clock.now());
  await advance(30 * S);
  sendOne(q, msg('second', { groupId: 'g', deduplicationId: 'd2' }), clock.now());
  assert.deepEqual(bodies(q.receive(1, 600 * S, clock.now())), ['first']);
  await advance(15 * S);
  const w = wait(q);
  await advance(15 * S - 1);
  assert.equal(resultOf(w), undefined);
  // 60 s after it was sent, 'first' is gone, in flight or not, and its group is unlocked.
  await advance(1);
  assert.deepEqual(bodies(resultOf(w)), ['second']);
});
