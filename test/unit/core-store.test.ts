import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ManualClock } from '../../src/core/clock.js';
import type { ChangeEvent } from '../../src/core/events.js';
import type { Message } from '../../src/core/message.js';
import type { QueueIdentity } from '../../src/core/queue.js';
import { QueueStore } from '../../src/core/store.js';
import { throwsCode } from '../support/assertions.js';
import { msg, sendOne } from '../support/queue.js';

const ACCOUNT = '000000000000';
const OTHER_ACCOUNT = '111111111111';
const S = 1000;

function id(name: string, accountId = ACCOUNT): QueueIdentity {
  return { accountId, region: 'us-east-1', name };
}

function setup(deletedRecentlyMs = 60_000): { store: QueueStore; clock: ManualClock } {
  const clock = new ManualClock();
  return { store: new QueueStore(clock, { deletedRecentlyMs }), clock };
}

// ---- create -------------------------------------------------------------------------------

void test('Given no queue, when one is created, then it is new, has the default attributes overlaid with the given ones, and is found by name', () => {
  const { store, clock } = setup();
  const { queue, created } = store.create(id('orders'), { VisibilityTimeout: '60' }, { team: 'a' });
  assert.equal(created, true);
  assert.equal(queue.attributes.VisibilityTimeout, '60');
  assert.equal(queue.attributes.DelaySeconds, '0');
  assert.equal(queue.visibilityTimeoutMs, 60 * S);
  assert.deepEqual(queue.tags, { team: 'a' });
  assert.equal(queue.createdAt, clock.now());
  assert.equal(queue.arn, `arn:aws:sqs:us-east-1:${ACCOUNT}:orders`);
  assert.equal(store.get(ACCOUNT, 'orders'), queue);
  assert.equal(store.require(ACCOUNT, 'orders'), queue);
});

void test('Given a queue, when created again with the same attributes, then the existing queue is returned and not created', () => {
  const { store } = setup();
  const first = store.create(id('orders'), { VisibilityTimeout: '60', DelaySeconds: '5' }, {}).queue;
  const again = store.create(id('orders'), { DelaySeconds: '5', VisibilityTimeout: '60' }, {});
  assert.equal(again.created, false);
  assert.equal(again.queue, first);
  assert.equal(store.size, 1);
});

void test('Given a queue, when created again with a value written differently but equal (030 and 30), then it is the same queue', () => {
  const { store } = setup();
  const first = store.create(id('orders'), { VisibilityTimeout: '30' }, {}).queue;
  assert.equal(store.create(id('orders'), { VisibilityTimeout: '030' }, {}).queue, first);
});

void test('Given a queue, when created again with a different attribute value, then QueueNameExists', () => {
  const { store } = setup();
  store.create(id('orders'), { VisibilityTimeout: '60' }, {});
  throwsCode(() => store.create(id('orders'), { VisibilityTimeout: '61' }, {}), 'QueueNameExists');
});

void test('Given a queue with default attributes, when created again giving a non-default value, then QueueNameExists', () => {
  const { store } = setup();
  store.create(id('orders'), {}, {});
  throwsCode(() => store.create(id('orders'), { DelaySeconds: '10' }, {}), 'QueueNameExists');
});

void test('Given queues of the same name in two accounts, when created, then they are separate queues', () => {
  const { store } = setup();
  const a = store.create(id('orders'), { VisibilityTimeout: '60' }, {}).queue;
  const b = store.create(id('orders', OTHER_ACCOUNT), { VisibilityTimeout: '10' }, {}).queue;
  assert.notEqual(a, b);
  assert.equal(store.size, 2);
});

void test('Given a name of 80 allowed characters, when a queue is created, then it is accepted', () => {
  const { store } = setup();
  const name = 'a-_Z9'.repeat(16);
  assert.equal(name.length, 80);
  assert.equal(store.create(id(name), {}, {}).created, true);
});

void test('Given a name of 81 characters, when a queue is created, then InvalidParameterValue', () => {
  const { store } = setup();
  throwsCode(() => store.create(id('a'.repeat(81)), {}, {}), 'InvalidParameterValue');
});

void test('Given an empty name or one with characters outside [A-Za-z0-9_-], when a queue is created, then InvalidParameterValue', () => {
  const { store } = setup();
  for (const name of ['', 'has space', 'dot.name', 'slash/name', 'ünicode', 'star*']) {
    throwsCode(() => store.create(id(name), {}, {}), 'InvalidParameterValue', JSON.stringify(name));
  }
});

void test('Given a .fifo name of 80 characters in all with FifoQueue=true, when created, then it is a FIFO queue', () => {
  const { store } = setup();
  const name = `${'f'.repeat(75)}.fifo`;
  const { queue } = store.create(id(name), { FifoQueue: 'true' }, {});
  assert.equal(queue.fifo, true);
  assert.equal(queue.attributes.FifoQueue, 'true');
  assert.equal(queue.attributes.ContentBasedDeduplication, 'false');
});

void test('Given a .fifo name of 81 characters in all, when created, then InvalidParameterValue', () => {
  const { store } = setup();
  throwsCode(
    () => store.create(id(`${'f'.repeat(76)}.fifo`), { FifoQueue: 'true' }, {}),
    'InvalidParameterValue',
  );
});

void test('Given a .fifo name without FifoQueue=true, when created, then InvalidParameterValue', () => {
  const { store } = setup();
  throwsCode(() => store.create(id('jobs.fifo'), {}, {}), 'InvalidParameterValue');
  throwsCode(() => store.create(id('jobs.fifo'), { FifoQueue: 'false' }, {}), 'InvalidParameterValue');
});

void test('Given FifoQueue=true on a name without .fifo, when created, then InvalidParameterValue', () => {
  const { store } = setup();
  throwsCode(() => store.create(id('jobs'), { FifoQueue: 'true' }, {}), 'InvalidParameterValue');
});

void test('Given a standard queue name, when created with a FIFO-only attribute, then InvalidAttributeName', () => {
  const { store } = setup();
  throwsCode(
    () => store.create(id('jobs'), { ContentBasedDeduplication: 'true' }, {}),
    'InvalidAttributeName',
  );
  assert.equal(store.size, 0);
});

void test('Given an attribute value out of range, when a queue is created, then InvalidAttributeValue and no queue exists', () => {
  const { store } = setup();
  throwsCode(() => store.create(id('jobs'), { DelaySeconds: '901' }, {}), 'InvalidAttributeValue');
  assert.equal(store.get(ACCOUNT, 'jobs'), undefined);
});

// ---- delete and QueueDeletedRecently ------------------------------------------------------

void test('Given a queue, when deleted, then it is marked deleted and no longer found', () => {
  const { store } = setup();
  const { queue } = store.create(id('orders'), {}, {});
  store.delete(queue);
  assert.equal(queue.deleted, true);
  assert.equal(store.get(ACCOUNT, 'orders'), undefined);
  throwsCode(() => store.require(ACCOUNT, 'orders'), 'QueueDoesNotExist');
});

void test('Given a queue deleted less than 60 s ago, when one of the same name is created, then QueueDeletedRecently', () => {
  const { store, clock } = setup();
  store.delete(store.create(id('orders'), {}, {}).queue);
  clock.advance(60 * S - 1);
  throwsCode(() => store.create(id('orders'), {}, {}), 'QueueDeletedRecently');
});

void test('Given a queue deleted 60 s ago, when one of the same name is created, then it is a new queue', () => {
  const { store, clock } = setup();
  const old = store.create(id('orders'), {}, {}).queue;
  store.delete(old);
  clock.advance(60 * S);
  const { queue, created } = store.create(id('orders'), {}, {});
  assert.equal(created, true);
  assert.notEqual(queue, old);
  assert.notEqual(queue.uid, old.uid);
});

void test('Given a queue deleted less than 60 s ago, when a queue of another name is created, then it is allowed', () => {
  const { store } = setup();
  store.delete(store.create(id('orders'), {}, {}).queue);
  assert.equal(store.create(id('invoices'), {}, {}).created, true);
});

void test('Given deletedRecentlyMs 0, when a queue is created again right after its deletion, then it is allowed', () => {
  const { store } = setup(0);
  store.delete(store.create(id('orders'), {}, {}).queue);
  assert.equal(store.create(id('orders'), {}, {}).created, true);
});

void test('Given a queue replaced by a newer one of the same name, when the old object is deleted, then the new queue stays', () => {
  const { store, clock } = setup();
  const old = store.create(id('orders'), {}, {}).queue;
  store.delete(old);
  clock.advance(60 * S);
  const current = store.create(id('orders'), {}, {}).queue;
  store.delete(old);
  assert.equal(store.get(ACCOUNT, 'orders'), current);
  assert.equal(current.deleted, false);
});

// ---- list ---------------------------------------------------------------------------------

void test('Given queues in two accounts, when listed with a prefix, then only the account’s queues with that prefix come, sorted by name', () => {
  const { store } = setup();
  for (const name of ['prod-b', 'dev-a', 'prod-a', 'prod-C', 'prodx']) store.create(id(name), {}, {});
  store.create(id('prod-z', OTHER_ACCOUNT), {}, {});
  assert.deepEqual(
    store.list(ACCOUNT, 'prod-').map((q) => q.name),
    ['prod-C', 'prod-a', 'prod-b'],
  );
  assert.deepEqual(
    store.list(ACCOUNT).map((q) => q.name),
    ['dev-a', 'prod-C', 'prod-a', 'prod-b', 'prodx'],
  );
  assert.deepEqual(store.list(ACCOUNT, 'none'), []);
});

void test('Given a deleted queue, when listed, then it is not there', () => {
  const { store } = setup();
  store.create(id('keep'), {}, {});
  store.delete(store.create(id('gone'), {}, {}).queue);
  assert.deepEqual(
    store.list(ACCOUNT).map((q) => q.name),
    ['keep'],
  );
});

// ---- listeners ----------------------------------------------------------------------------

void test('Given a change subscriber, when a queue is created, receives a message and is deleted, then it hears every change in order', () => {
  const { store, clock } = setup();
  const events: ChangeEvent[] = [];
  store.onChange((e) => events.push(e));
  const { queue } = store.create(id('orders'), {}, {});
  const m = sendOne(queue, msg('b', { id: 'm1' }), clock.now());
  const [got] = queue.receive(1, undefined, clock.now());
  assert.equal(got, m);
  queue.deleteMessage(queue.receiptHandle(m), clock.now());
  store.delete(queue);
  assert.deepEqual(
    events.map((e) => e.type),
    ['queue-put', 'message-put', 'message-put', 'message-delete', 'queue-delete'],
  );
});

void test('Given a queue created before anyone subscribed, when a change subscriber is added, then that queue reports to it', () => {
  const { store, clock } = setup();
  const { queue } = store.create(id('orders'), {}, {});
  const events: ChangeEvent[] = [];
  store.onChange((e) => events.push(e));
  sendOne(queue, msg('b', { id: 'm1' }), clock.now());
  assert.deepEqual(
    events.map((e) => e.type),
    ['message-put'],
  );
});

void test('Given two change subscribers, when a change happens, then both hear it', () => {
  const { store } = setup();
  const a: string[] = [];
  const b: string[] = [];
  store.onChange((e) => a.push(e.type));
  store.onChange((e) => b.push(e.type));
  store.create(id('orders'), {}, {});
  assert.deepEqual(a, ['queue-put']);
  assert.deepEqual(b, ['queue-put']);
});

void test('Given an available subscriber, when a visible message is sent, then it hears the queue', () => {
  const { store, clock } = setup();
  const heard: string[] = [];
  store.onAvailable((q) => heard.push(q.name));
  const { queue } = store.create(id('orders'), {}, {});
  sendOne(queue, msg('b', { id: 'm1' }), clock.now());
  assert.deepEqual(heard, ['orders']);
});

void test('Given an available subscriber, when a queue is deleted, then it hears that queue once (its waiters are answered)', () => {
  const { store } = setup();
  const { queue } = store.create(id('orders'), {}, {});
  const heard: boolean[] = [];
  store.onAvailable((q) => {
    assert.equal(q, queue);
    heard.push(q.deleted);
  });
  store.delete(queue);
  assert.deepEqual(heard, [true]);
});

void test('Given a deadline subscriber, when a delayed message is sent to an otherwise empty queue, then it hears the queue', () => {
  const { store, clock } = setup();
  const heard: string[] = [];
  store.onDeadline((q) => heard.push(q.name));
  const { queue } = store.create(id('orders'), {}, {});
  sendOne(queue, msg('b', { id: 'm1', delaySeconds: 5 }), clock.now());
  assert.deepEqual(heard, ['orders']);
});

void test('Given a restored queue, when looked up, then it is found and nothing was reported', () => {
  const { store, clock } = setup();
  const events: ChangeEvent[] = [];
  store.onChange((e) => events.push(e));
  const queue = store.newQueue(id('orders'), { VisibilityTimeout: '45' }, {}, clock.now(), 'abc123');
  store.restore(queue);
  assert.equal(store.get(ACCOUNT, 'orders'), queue);
  assert.equal(queue.uid, 'abc123');
  assert.equal(queue.visibilityTimeoutMs, 45 * S);
  assert.deepEqual(events, []);
  // Bound to the store's listeners: it reports like any other queue.
  const m: Message = sendOne(queue, msg('b', { id: 'm1' }), clock.now());
  assert.deepEqual(events, [{ type: 'message-put', queue, message: m }]);
});
