import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CoreError } from '../../src/core/errors.js';
import type { ChangeEvent, CoreListener } from '../../src/core/events.js';
import type { Message, NewMessage } from '../../src/core/message.js';
import { Queue } from '../../src/core/queue.js';
import { throwsCode } from '../support/assertions.js';
import { msg, sendOne } from '../support/queue.js';

const T0 = Date.UTC(2026, 0, 1);
const S = 1000;

interface Recorder {
  readonly listener: CoreListener;
  readonly events: ChangeEvent[];
  availableCount: number;
}

function recorder(): Recorder {
  const r: Recorder = {
    events: [],
    availableCount: 0,
    listener: {
      change: (e) => r.events.push(e),
      available: () => {
        r.availableCount++;
      },
    },
  };
  return r;
}

function newQueue(attributes: Record<string, string> = {}, listener: CoreListener = {}, name = 'q1'): Queue {
  const noQueues = (): undefined => undefined;
  return new Queue(
    { accountId: '000000000000', region: 'us-east-1', name },
    attributes,
    {},
    T0,
    listener,
    noQueues,
  );
}

function only(messages: Message[]): Message {
  assert.equal(messages.length, 1, `expected one message, got ${messages.length}`);
  return messages[0] as Message;
}

// ---- send and receive -------------------------------------------------------------------

void test('Given a sent message, when received, then it comes back once with receiveCount 1 and goes in flight', () => {
  const q = newQueue();
  const sent = sendOne(q, msg('a'), T0);
  const got = only(q.receive(10, undefined, T0));
  assert.equal(got, sent);
  assert.equal(got.receiveCount, 1);
  assert.equal(got.state, 'inflight');
  assert.deepEqual(q.receive(10, undefined, T0), []);
});

void test('Given several sent messages, when received with a maximum, then they come in send order and no more than the maximum', () => {
  const q = newQueue();
  const bodies = ['a', 'b', 'c', 'd'];
  for (const b of bodies) sendOne(q, msg(b), T0);
  assert.deepEqual(
    q.receive(3, undefined, T0).map((m) => m.body),
    ['a', 'b', 'c'],
  );
  assert.deepEqual(
    q.receive(3, undefined, T0).map((m) => m.body),
    ['d'],
  );
});

void test('Given a received message, when its visibility timeout has not yet expired, then it is not receivable', () => {
  const q = newQueue({ VisibilityTimeout: '30' });
  sendOne(q, msg(), T0);
  q.receive(1, undefined, T0);
  assert.deepEqual(q.receive(1, undefined, T0 + 30 * S - 1), []);
});

void test('Given a received message, when its visibility timeout expires, then it is receivable again with receiveCount 2 and a new receipt handle', () => {
  const q = newQueue({ VisibilityTimeout: '30' });
  sendOne(q, msg(), T0);
  const first = only(q.receive(1, undefined, T0));
  const firstHandle = q.receiptHandle(first);
  const again = only(q.receive(1, undefined, T0 + 30 * S));
  assert.equal(again.id, first.id);
  assert.equal(again.receiveCount, 2);
  assert.notEqual(q.receiptHandle(again), firstHandle);
});

void test('Given a receive with its own VisibilityTimeout, when that time passes, then the queue default is not used', () => {
  const q = newQueue({ VisibilityTimeout: '30' });
  sendOne(q, msg(), T0);
  q.receive(1, 5 * S, T0);
  assert.equal(only(q.receive(1, undefined, T0 + 5 * S)).receiveCount, 2);
});

void test('Given visible messages, when received with VisibilityTimeout 0, then one call never returns a message twice', () => {
  const q = newQueue();
  for (const b of ['a', 'b', 'c']) sendOne(q, msg(b), T0);
  const got = q.receive(10, 0, T0);
  assert.deepEqual(
    got.map((m) => m.body),
    ['a', 'b', 'c'],
  );
});

void test('Given messages received with VisibilityTimeout 0, when received again at once, then they are visible and delivered again', () => {
  const q = newQueue();
  for (const b of ['a', 'b']) sendOne(q, msg(b), T0);
  q.receive(10, 0, T0);
  assert.deepEqual(q.counts(T0), { visible: 2, inflight: 0, delayed: 0 });
  const again = q.receive(10, 0, T0);
  assert.deepEqual(
    again.map((m) => [m.body, m.receiveCount]),
    [
      ['a', 2],
      ['b', 2],
    ],
  );
});

void test('Given a message received once with VisibilityTimeout 0, when others are waiting, then it goes behind them', () => {
  const q = newQueue();
  for (const b of ['a', 'b', 'c']) sendOne(q, msg(b), T0);
  q.receive(1, 0, T0);
  assert.deepEqual(
    q.receive(10, undefined, T0).map((m) => m.body),
    ['b', 'c', 'a'],
  );
});

void test('Given a message received several times, when received again, then the first-receive timestamp stays that of the first receive', () => {
  const q = newQueue({ VisibilityTimeout: '10' });
  sendOne(q, msg(), T0);
  const m = only(q.receive(1, undefined, T0 + 1 * S));
  assert.equal(m.firstReceiveAt, T0 + 1 * S);
  q.receive(1, undefined, T0 + 11 * S);
  q.receive(1, undefined, T0 + 21 * S);
  assert.equal(m.receiveCount, 3);
  assert.equal(m.firstReceiveAt, T0 + 1 * S);
  assert.equal(m.lastReceiveAt, T0 + 21 * S);
});

void test('Given message attributes named "__proto__" and "a", when sent, then the message keeps both as own entries and the prototype is untouched', () => {
  const q = newQueue();
  const attributes = JSON.parse(
    '{"__proto__":{"DataType":"String","StringValue":"p"},"a":{"DataType":"String.x","StringListValues":["v"]}}',
  ) as NewMessage['attributes'];
  const sent = sendOne(q, msg('a', { attributes, md5OfAttributes: 'm' }), T0);
  assert.deepEqual(Object.entries(sent.attributes ?? {}), [
    ['__proto__', { DataType: 'String', StringValue: 'p' }],
    ['a', { DataType: 'String.x', StringListValues: ['v'] }],
  ]);
  assert.equal(Object.getPrototypeOf(sent.attributes), Object.prototype);
  assert.equal(sent.md5OfAttributes, 'm');
});

// ---- delays -------------------------------------------------------------------------------

void test('Given a queue with DelaySeconds 10, when a message is sent, then it is delayed and not receivable before 10 s', () => {
  const q = newQueue({ DelaySeconds: '10' });
  sendOne(q, msg(), T0);
  assert.deepEqual(q.counts(T0), { visible: 0, inflight: 0, delayed: 1 });
  assert.deepEqual(q.receive(1, undefined, T0 + 10 * S - 1), []);
});

void test('Given a queue with DelaySeconds 10, when 10 s have passed since the send, then the message is receivable', () => {
  const q = newQueue({ DelaySeconds: '10' });
  sendOne(q, msg('late'), T0);
  assert.equal(only(q.receive(1, undefined, T0 + 10 * S)).body, 'late');
});

void test('Given a queue without delay, when a message is sent with DelaySeconds 5, then it becomes receivable after 5 s only', () => {
  const q = newQueue();
  sendOne(q, msg('late', { delaySeconds: 5 }), T0);
  assert.deepEqual(q.receive(1, undefined, T0 + 5 * S - 1), []);
  assert.equal(only(q.receive(1, undefined, T0 + 5 * S)).body, 'late');
});

void test('Given a queue with DelaySeconds 60, when a message is sent with DelaySeconds 0, then the message delay wins and it is receivable at once', () => {
  const q = newQueue({ DelaySeconds: '60' });
  sendOne(q, msg('now', { delaySeconds: 0 }), T0);
  assert.equal(only(q.receive(1, undefined, T0)).body, 'now');
});

void test('Given delayed messages, when their delays end out of send order, then they become visible in the order their delays end', () => {
  const q = newQueue();
  sendOne(q, msg('slow', { delaySeconds: 20 }), T0);
  sendOne(q, msg('fast', { delaySeconds: 10 }), T0);
  assert.deepEqual(
    q.receive(10, undefined, T0 + 20 * S).map((m) => m.body),
    ['fast', 'slow'],
  );
});

// ---- retention ----------------------------------------------------------------------------

void test('Given a message, when its retention period has not yet passed, then it is still there', () => {
  const q = newQueue({ MessageRetentionPeriod: '60' });
  sendOne(q, msg(), T0);
  assert.equal(q.size, 1);
  assert.equal(q.receive(1, undefined, T0 + 60 * S - 1).length, 1);
});

void test('Given a message, when its retention period passes, then it is gone and a message-delete event names it', () => {
  const r = recorder();
  const q = newQueue({ MessageRetentionPeriod: '60' }, r.listener);
  const sent = sendOne(q, msg(), T0);
  r.events.length = 0;
  assert.deepEqual(q.receive(1, undefined, T0 + 60 * S), []);
  assert.equal(q.size, 0);
  assert.equal(sent.state, 'deleted');
  assert.deepEqual(r.events, [{ type: 'message-delete', queue: q, message: sent }]);
});

void test('Given an in-flight message, when its retention period passes, then it is gone too', () => {
  const q = newQueue({ MessageRetentionPeriod: '60', VisibilityTimeout: '43200' });
  sendOne(q, msg(), T0);
  q.receive(1, undefined, T0);
  assert.deepEqual(q.counts(T0 + 60 * S), { visible: 0, inflight: 0, delayed: 0 });
  assert.equal(q.size, 0);
});

void test('Given messages sent at different times, when the oldest passes its retention, then only it is dropped', () => {
  const q = newQueue({ MessageRetentionPeriod: '60' });
  sendOne(q, msg('old'), T0);
  sendOne(q, msg('new'), T0 + 30 * S);
  assert.deepEqual(
    q.receive(10, undefined, T0 + 60 * S).map((m) => m.body),
    ['new'],
  );
});

void test('Given a message past its retention period in a queue nothing touched since, when the period is raised, then the message stays gone', () => {
  const q = newQueue({ MessageRetentionPeriod: '60' });
  sendOne(q, msg(), T0);
  q.setAttributes({ MessageRetentionPeriod: '120' }, T0 + 90 * S);
  assert.deepEqual(q.counts(T0 + 90 * S), { visible: 0, inflight: 0, delayed: 0 });
});

// ---- counts and purge ---------------------------------------------------------------------

void test('Given visible, in-flight and delayed messages, when counted, then each state is counted apart', () => {
  const q = newQueue();
  for (let i = 0; i < 4; i++) sendOne(q, msg(), T0);
  sendOne(q, msg('d1', { delaySeconds: 30 }), T0);
  sendOne(q, msg('d2', { delaySeconds: 30 }), T0);
  sendOne(q, msg('d3', { delaySeconds: 30 }), T0);
  q.receive(1, undefined, T0);
  assert.deepEqual(q.counts(T0), { visible: 3, inflight: 1, delayed: 3 });
  assert.equal(q.size, 7);
});

void test('Given messages in every state, when the queue is purged, then no message is left and a queue-purge event is emitted', () => {
  const r = recorder();
  const q = newQueue({}, r.listener);
  const visible = sendOne(q, msg(), T0);
  sendOne(q, msg(), T0);
  sendOne(q, msg('d', { delaySeconds: 30 }), T0);
  q.receive(1, undefined, T0);
  r.events.length = 0;
  q.purge(T0);
  assert.deepEqual(q.counts(T0), { visible: 0, inflight: 0, delayed: 0 });
  assert.equal(q.size, 0);
  assert.equal(visible.state, 'deleted');
  assert.deepEqual(r.events, [{ type: 'queue-purge', queue: q }]);
  assert.equal(q.nextTransitionAt(), Number.POSITIVE_INFINITY);
});

void test('Given a purged queue, when purged again within 60 s, then PurgeQueueInProgress', () => {
  const q = newQueue();
  q.purge(T0);
  throwsCode(() => q.purge(T0 + 60 * S - 1), 'PurgeQueueInProgress');
});

void test('Given a cooldown of 0 (--no-purge-cooldown), when a queue is purged twice at once, then both purges succeed', () => {
  const q = newQueue();
  q.purge(T0, 0);
  sendOne(q, msg(), T0);
  q.purge(T0, 0);
  assert.equal(q.size, 0);
});

void test('Given a purged queue, when purged again 60 s later, then the purge is allowed', () => {
  const q = newQueue();
  q.purge(T0);
  sendOne(q, msg(), T0 + 30 * S);
  q.purge(T0 + 60 * S);
  assert.equal(q.size, 0);
});

void test('Given a purged queue, when messages are sent after the purge, then they are receivable', () => {
  const q = newQueue();
  sendOne(q, msg('before'), T0);
  q.purge(T0);
  sendOne(q, msg('after'), T0);
  assert.equal(only(q.receive(10, undefined, T0)).body, 'after');
});

// ---- deleteMessage ------------------------------------------------------------------------

void test('Given a received message, when deleted with its current receipt handle, then it is gone', () => {
  const q = newQueue();
  sendOne(q, msg(), T0);
  const m = only(q.receive(1, undefined, T0));
  q.deleteMessage(q.receiptHandle(m), T0);
  assert.equal(q.size, 0);
  assert.equal(m.state, 'deleted');
  assert.deepEqual(q.counts(T0 + 3600 * S), { visible: 0, inflight: 0, delayed: 0 });
});

void test('Given a message received twice, when deleted with the handle of the first receive, then it is deleted (AWS accepts older handles)', () => {
  const q = newQueue({ VisibilityTimeout: '30' });
  sendOne(q, msg(), T0);
  const first = only(q.receive(1, undefined, T0));
  const oldHandle = q.receiptHandle(first);
  only(q.receive(1, undefined, T0 + 30 * S));
  q.deleteMessage(oldHandle, T0 + 31 * S);
  assert.equal(q.size, 0);
});

void test('Given a deleted message, when deleted again with the same handle, then the call succeeds and emits nothing', () => {
  const r = recorder();
  const q = newQueue({}, r.listener);
  sendOne(q, msg(), T0);
  const handle = q.receiptHandle(only(q.receive(1, undefined, T0)));
  q.deleteMessage(handle, T0);
  r.events.length = 0;
  q.deleteMessage(handle, T0);
  assert.deepEqual(r.events, []);
});

void test('Given a malformed receipt handle, when used to delete, then ReceiptHandleIsInvalid', () => {
  const q = newQueue();
  throwsCode(() => q.deleteMessage('not-a-receipt-handle', T0), 'ReceiptHandleIsInvalid');
  throwsCode(() => q.deleteMessage('', T0), 'ReceiptHandleIsInvalid');
  throwsCode(() => q.deleteMessage(Buffer.from('a:b:c').toString('base64'), T0), 'ReceiptHandleIsInvalid');
});

void test('Given a handle whose receive count is not a positive integer, when used to delete, then ReceiptHandleIsInvalid', () => {
  const q = newQueue();
  sendOne(q, msg(), T0);
  const real = Buffer.from(q.receiptHandle(only(q.receive(1, undefined, T0))), 'base64').toString('latin1');
  const [uid, id, , nonce] = real.split(':');
  for (const count of ['0', '-1', 'x', '1.5']) {
    const forged = Buffer.from(`${uid}:${id}:${count}:${nonce}`, 'latin1').toString('base64');
    throwsCode(() => q.deleteMessage(forged, T0), 'ReceiptHandleIsInvalid');
  }
});

void test('Given a receipt handle from another queue, when used to delete, then ReceiptHandleIsInvalid and the other message stays', () => {
  const a = newQueue({}, {}, 'a');
  const b = newQueue({}, {}, 'b');
  sendOne(a, msg(), T0);
  const handle = a.receiptHandle(only(a.receive(1, undefined, T0)));
  throwsCode(() => b.deleteMessage(handle, T0), 'ReceiptHandleIsInvalid');
  assert.equal(a.size, 1);
});

void test('Given a queue deleted and created again under the same name, when an old receipt handle is used, then ReceiptHandleIsInvalid', () => {
  const before = newQueue({}, {}, 'same');
  sendOne(before, msg(), T0);
  const handle = before.receiptHandle(only(before.receive(1, undefined, T0)));
  const after = newQueue({}, {}, 'same');
  throwsCode(() => after.deleteMessage(handle, T0), 'ReceiptHandleIsInvalid');
});

// ---- changeVisibility ---------------------------------------------------------------------

void test('Given an in-flight message, when its visibility is extended with the current handle, then it stays hidden until the new time', () => {
  const q = newQueue({ VisibilityTimeout: '30' });
  sendOne(q, msg(), T0);
  const m = only(q.receive(1, undefined, T0));
  q.changeVisibility(q.receiptHandle(m), 120 * S, T0 + 10 * S);
  assert.deepEqual(q.receive(1, undefined, T0 + 130 * S - 1), []);
  assert.equal(only(q.receive(1, undefined, T0 + 130 * S)).receiveCount, 2);
});

void test('Given a message received again (VisibilityTimeout 0), when its visibility is set to 0 with the older handle, then it is visible at once (AWS, recorded)', () => {
  const q = newQueue({ VisibilityTimeout: '30' });
  sendOne(q, msg(), T0);
  const oldHandle = q.receiptHandle(only(q.receive(1, 0, T0)));
  only(q.receive(1, undefined, T0));
  assert.deepEqual(q.counts(T0), { visible: 0, inflight: 1, delayed: 0 });
  q.changeVisibility(oldHandle, 0, T0 + 1 * S);
  assert.equal(only(q.receive(1, undefined, T0 + 1 * S)).receiveCount, 3);
});

void test('Given a message received twice, when its visibility is extended with the older handle, then the message stays hidden until the new time', () => {
  const q = newQueue({ VisibilityTimeout: '30' });
  sendOne(q, msg(), T0);
  const oldHandle = q.receiptHandle(only(q.receive(1, undefined, T0)));
  only(q.receive(1, undefined, T0 + 30 * S));
  q.changeVisibility(oldHandle, 100 * S, T0 + 31 * S);
  assert.deepEqual(q.receive(1, undefined, T0 + 131 * S - 1), []);
  assert.equal(only(q.receive(1, undefined, T0 + 131 * S)).receiveCount, 3);
});

void test('Given a deleted message, when its visibility is changed, then InvalidParameterValue saying it does not exist', () => {
  const q = newQueue();
  sendOne(q, msg(), T0);
  const handle = q.receiptHandle(only(q.receive(1, undefined, T0)));
  q.deleteMessage(handle, T0);
  assert.throws(
    () => q.changeVisibility(handle, 60 * S, T0),
    (e: unknown) =>
      e instanceof CoreError &&
      e.code === 'InvalidParameterValue' &&
      e.message ===
        `Value ${handle} for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.`,
  );
});

void test('Given a message whose visibility timeout expired, when its visibility is changed with its last handle, then it succeeds and hides the message again (AWS, recorded)', () => {
  const q = newQueue({ VisibilityTimeout: '30' });
  sendOne(q, msg(), T0);
  const handle = q.receiptHandle(only(q.receive(1, undefined, T0)));
  q.changeVisibility(handle, 60 * S, T0 + 30 * S);
  assert.deepEqual(q.counts(T0 + 30 * S), { visible: 0, inflight: 1, delayed: 0 });
  assert.deepEqual(q.receive(1, undefined, T0 + 90 * S - 1), []);
  assert.equal(only(q.receive(1, undefined, T0 + 90 * S)).receiveCount, 2);
});

void test('Given a message whose visibility timeout expired, when its visibility is set to 0 with its last handle, then it succeeds and the message stays visible', () => {
  const q = newQueue({ VisibilityTimeout: '30' });
  sendOne(q, msg(), T0);
  const handle = q.receiptHandle(only(q.receive(1, undefined, T0)));
  q.changeVisibility(handle, 0, T0 + 30 * S);
  assert.deepEqual(q.counts(T0 + 30 * S), { visible: 1, inflight: 0, delayed: 0 });
});

void test('Given a message whose visibility timeout expired and a message sent after it, when received, then the expired one comes first (AWS, recorded)', () => {
  const q = newQueue();
  sendOne(q, msg('m1'), T0);
  only(q.receive(1, 3 * S, T0));
  sendOne(q, msg('m2'), T0 + 1500);
  const got = q.receive(1, undefined, T0 + 4500);
  assert.deepEqual(
    got.map((m) => m.body),
    ['m1'],
  );
  assert.deepEqual(
    q.receive(10, undefined, T0 + 4500).map((m) => m.body),
    ['m2'],
  );
});

void test('Given visible messages and several whose timeouts expired, when received, then they come in send order', () => {
  const q = newQueue();
  for (const b of ['a', 'b', 'c', 'd', 'e']) sendOne(q, msg(b), T0);
  const got = q.receive(3, 10 * S, T0);
  // b expires first, then a: send order still decides.
  q.changeVisibility(q.receiptHandle(got[1] as Message), 5 * S, T0);
  sendOne(q, msg('f'), T0 + 20 * S);
  assert.deepEqual(
    q.receive(10, undefined, T0 + 20 * S).map((m) => m.body),
    ['a', 'b', 'c', 'd', 'e', 'f'],
  );
});

void test('Given a malformed receipt handle, when used to change visibility, then ReceiptHandleIsInvalid', () => {
  const q = newQueue();
  throwsCode(() => q.changeVisibility('garbage', 60 * S, T0), 'ReceiptHandleIsInvalid');
});

void test('Given an in-flight message and other visible ones, when its visibility is set to 0, then it is the next one received', () => {
  const r = recorder();
  const q = newQueue({}, r.listener);
  sendOne(q, msg('first'), T0);
  sendOne(q, msg('second'), T0);
  sendOne(q, msg('third'), T0);
  const m = only(q.receive(1, undefined, T0));
  r.availableCount = 0;
  q.changeVisibility(q.receiptHandle(m), 0, T0 + 1 * S);
  assert.equal(r.availableCount, 1);
  assert.deepEqual(q.counts(T0 + 1 * S), { visible: 3, inflight: 0, delayed: 0 });
  const next = only(q.receive(1, undefined, T0 + 1 * S));
  assert.equal(next.body, 'first');
  assert.equal(next.receiveCount, 2);
});

void test('Given a message received at t, when its visibility is set to end exactly 12 h after t, then it is accepted', () => {
  const q = newQueue();
  sendOne(q, msg(), T0);
  const m = only(q.receive(1, 2 * 3600 * S, T0));
  q.changeVisibility(q.receiptHandle(m), 11 * 3600 * S, T0 + 3600 * S);
  assert.deepEqual(q.counts(T0 + 12 * 3600 * S - 1), { visible: 0, inflight: 1, delayed: 0 });
  assert.deepEqual(q.counts(T0 + 12 * 3600 * S), { visible: 1, inflight: 0, delayed: 0 });
});

void test('Given a message received at t, when its visibility is set to end beyond 12 h after t, then InvalidParameterValue', () => {
  const q = newQueue();
  sendOne(q, msg(), T0);
  const m = only(q.receive(1, 2 * 3600 * S, T0));
  const handle = q.receiptHandle(m);
  throwsCode(() => q.changeVisibility(handle, 11 * 3600 * S + 1 * S, T0 + 3600 * S), 'InvalidParameterValue');
  // The refused change left the message as it was: visible again when its first timeout ends.
  assert.equal(only(q.receive(1, undefined, T0 + 2 * 3600 * S)).receiveCount, 2);
});

// ---- events and deadlines -----------------------------------------------------------------

void test('Given a listener, when a message is sent, received and deleted, then the events are put, put, delete for that message', () => {
  const r = recorder();
  const q = newQueue({}, r.listener);
  const sent = sendOne(q, msg(), T0);
  const got = only(q.receive(1, undefined, T0));
  q.deleteMessage(q.receiptHandle(got), T0);
  assert.deepEqual(
    r.events.map((e) => e.type),
    ['message-put', 'message-put', 'message-delete'],
  );
  for (const e of r.events) {
    assert.ok(e.type === 'message-put' || e.type === 'message-delete');
    assert.equal(e.queue, q);
    assert.equal(e.message, sent);
  }
});

void test('Given a listener, when a visible message is sent, then available is called; when a delayed one is sent, then it is not', () => {
  const r = recorder();
  const q = newQueue({}, r.listener);
  sendOne(q, msg(), T0);
  assert.equal(r.availableCount, 1);
  sendOne(q, msg('later', { delaySeconds: 5 }), T0);
  assert.equal(r.availableCount, 1);
});

void test('Given a delayed message, when tick passes its delay, then available is called once', () => {
  const r = recorder();
  const q = newQueue({}, r.listener);
  sendOne(q, msg('later', { delaySeconds: 5 }), T0);
  q.tick(T0 + 5 * S - 1);
  assert.equal(r.availableCount, 0);
  q.tick(T0 + 5 * S);
  assert.equal(r.availableCount, 1);
});

void test('Given an in-flight message, when tick passes its visibility timeout, then a message-put event and available follow', () => {
  const r = recorder();
  const q = newQueue({ VisibilityTimeout: '30' }, r.listener);
  const m = sendOne(q, msg(), T0);
  q.receive(1, undefined, T0);
  r.events.length = 0;
  r.availableCount = 0;
  q.tick(T0 + 30 * S);
  assert.deepEqual(r.events, [{ type: 'message-put', queue: q, message: m }]);
  assert.equal(r.availableCount, 1);
  assert.equal(m.state, 'visible');
});

void test('Given a delayed message, when one with an earlier deadline is sent, then deadline is reported; when a later one, then not', () => {
  let deadlines = 0;
  const q = newQueue(
    {},
    {
      deadline: () => {
        deadlines++;
      },
    },
  );
  sendOne(q, msg('d20', { delaySeconds: 20 }), T0);
  assert.equal(deadlines, 1);
  sendOne(q, msg('d10', { delaySeconds: 10 }), T0);
  assert.equal(deadlines, 2);
  sendOne(q, msg('d30', { delaySeconds: 30 }), T0);
  assert.equal(deadlines, 2);
});

void test('Given a delayed message, when a receive or a visibility change sets an earlier in-flight deadline, then deadline is reported', () => {
  let deadlines = 0;
  const q = newQueue(
    { VisibilityTimeout: '300' },
    {
      deadline: () => {
        deadlines++;
      },
    },
  );
  sendOne(q, msg('visible'), T0);
  sendOne(q, msg('d', { delaySeconds: 60 }), T0);
  assert.equal(deadlines, 1);
  const m = only(q.receive(1, undefined, T0));
  assert.equal(deadlines, 1, 'in flight until +300 s: later than the delay');
  q.changeVisibility(q.receiptHandle(m), 10 * S, T0);
  assert.equal(deadlines, 2);
  assert.equal(q.nextTransitionAt(), T0 + 10 * S);
});

void test('Given no delayed or in-flight message, when asked for the next transition, then it is Infinity', () => {
  const q = newQueue();
  assert.equal(q.nextTransitionAt(), Number.POSITIVE_INFINITY);
  sendOne(q, msg(), T0);
  assert.equal(q.nextTransitionAt(), Number.POSITIVE_INFINITY);
});

void test('Given delayed and in-flight messages, when asked for the next transition, then it is the earliest of their deadlines', () => {
  const q = newQueue({ VisibilityTimeout: '30' });
  sendOne(q, msg(), T0);
  q.receive(1, undefined, T0);
  sendOne(q, msg('d', { delaySeconds: 40 }), T0);
  assert.equal(q.nextTransitionAt(), T0 + 30 * S);
  sendOne(q, msg('e', { delaySeconds: 10 }), T0);
  assert.equal(q.nextTransitionAt(), T0 + 10 * S);
  q.tick(T0 + 10 * S);
  assert.equal(q.nextTransitionAt(), T0 + 30 * S);
});
