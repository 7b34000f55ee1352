import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Budget, LOW_WATER, MESSAGE_OVERHEAD, QUEUE_OVERHEAD, sendCost } from '../../src/core/budget.js';
import { ManualClock } from '../../src/core/clock.js';
import type { Queue } from '../../src/core/queue.js';
import { QueueStore } from '../../src/core/store.js';
import { msg, sendOne } from '../support/queue.js';

/**
 * The memory budget (src/core/budget.ts): what the store counts as messages come and go, and the
 * refusal with its low-water mark, with a small budget and a manual clock.
 */

const A = '111111111111';
const B = '222222222222';
const KIB = 1024;

function setup(maxMemory = 1024 * KIB): {
  store: QueueStore;
  clock: ManualClock;
  create: (name: string, account?: string, attrs?: Record<string, string>) => Queue;
} {
  const clock = new ManualClock();
  const store = new QueueStore(clock, { deletedRecentlyMs: 0, maxMemory });
  const create = (name: string, account = A, attrs: Record<string, string> = {}): Queue =>
    store.create({ accountId: account, region: 'us-east-1', name }, attrs, {}).queue;
  return { store, clock, create };
}

/** Usage must equal what the queues hold: their overhead and their messages' costs. */
function assertConsistent(store: QueueStore): void {
  let total = 0;
  const perAccount = new Map<string, number>();
  for (const q of store.all()) {
    const n = QUEUE_OVERHEAD + q.bytes;
    total += n;
    perAccount.set(q.accountId, (perAccount.get(q.accountId) ?? 0) + n);
  }
  assert.equal(store.budget.used, total);
  for (const [account, used] of store.budget.usage()) assert.equal(used, perAccount.get(account) ?? 0);
}

const body = (kib: number): string => 'x'.repeat(kib * KIB);

void describe('budget accounting in the store', () => {
  void test('Given sends, receives and deletes, when counted, then usage follows the messages held', () => {
    const { store, clock, create } = setup();
    const q = create('q');
    assert.equal(store.budget.used, QUEUE_OVERHEAD);
    sendOne(q, msg(body(10)), clock.now());
    sendOne(q, msg(body(20)), clock.now());
    assert.ok(q.bytes >= 30 * KIB + 2 * MESSAGE_OVERHEAD, `${q.bytes}`);
    assertConsistent(store);
    const [first] = q.receive(1, undefined, clock.now());
    assert.ok(first);
    q.deleteMessage(q.receiptHandle(first), clock.now());
    assert.equal(q.size, 1);
    assert.ok(q.bytes >= 20 * KIB && q.bytes < 21 * KIB + MESSAGE_OVERHEAD, `${q.bytes}`);
    assertConsistent(store);
  });

  void test('Given retention passing, a purge and a queue delete, when counted, then usage falls to zero', () => {
    const { store, clock, create } = setup();
    const q = create('q', A, { MessageRetentionPeriod: '60' });
    const p = create('p');
    sendOne(q, msg(body(5)), clock.now());
    sendOne(p, msg(body(5)), clock.now());
    clock.advance(61_000);
    q.tick(clock.now());
    assert.equal(q.bytes, 0);
    assertConsistent(store);
    p.purge(clock.now());
    assert.equal(p.bytes, 0);
    assertConsistent(store);
    sendOne(p, msg(body(5)), clock.now());
    store.delete(p);
    store.delete(q);
    assert.equal(store.budget.used, 0);
    // A long poll may still hold a deleted queue: what happens to it no longer counts.
    p.tick(clock.now() + 10 ** 9);
    assert.equal(store.budget.used, 0);
  });

  void test('Given a message moved to its dead-letter queue, when counted, then usage is unchanged', () => {
    const { store, clock, create } = setup();
    const dlq = create('dlq');
    const q = create('q', A, {
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 1 }),
      VisibilityTimeout: '1',
    });
    sendOne(q, msg(body(8)), clock.now());
    q.receive(1, undefined, clock.now());
    const before = store.budget.used;
    clock.advance(2000);
    assert.equal(q.receive(1, undefined, clock.now()).length, 0);
    assert.equal(dlq.size, 1);
    assert.equal(q.bytes, 0);
    // The moved copy shares the body string; the small difference is its receive record.
    assert.ok(Math.abs(store.budget.used - before) <= MESSAGE_OVERHEAD, `${store.budget.used - before}`);
    assertConsistent(store);
  });

  void test('Given tenants, when counted, then each account has its own usage', () => {
    const { store, clock, create } = setup();
    sendOne(create('a'), msg(body(3)), clock.now());
    sendOne(create('b', B), msg(body(7)), clock.now());
    assert.ok(store.budget.usedBy(B) > store.budget.usedBy(A));
    assertConsistent(store);
  });
});

void describe('budget refusal', () => {
  void test('Given usage near the limit, when a send would cross it, then it is refused until usage is under the low-water mark', () => {
    const budget = new Budget(100 * KIB);
    budget.add(A, 95 * KIB);
    assert.equal(budget.wouldExceed(4 * KIB, A), undefined);
    assert.equal(budget.wouldExceed(6 * KIB, A), 'server');
    // Refusing now, even for what would fit: no flapping at the edge.
    assert.equal(budget.wouldExceed(1, A), 'server');
    assert.equal(budget.wouldExceed(1, B), 'server');
    budget.add(A, -4 * KIB);
    assert.equal(budget.wouldExceed(1, A), 'server');
    budget.add(A, -(91 * KIB - LOW_WATER * 100 * KIB));
    assert.equal(budget.used, LOW_WATER * 100 * KIB);
    assert.equal(budget.refusing(), false);
    assert.equal(budget.wouldExceed(1, A), undefined);
  });

  void test('Given a tenant with a share, when its queues fill the share, then only its sends are refused', () => {
    const shares = new Map<string, number>([[A, 0.25]]);
    const budget = new Budget(100 * KIB, (id) => shares.get(id));
    budget.add(A, 24 * KIB);
    assert.equal(budget.limitOf(A), 25 * KIB);
    assert.equal(budget.wouldExceed(2 * KIB, A), 'tenant');
    assert.equal(budget.wouldExceed(2 * KIB, B), undefined);
    assert.equal(budget.refusing(A), true);
    assert.equal(budget.refusing(B), false);
    budget.add(A, -KIB);
    assert.equal(budget.wouldExceed(1, A), 'tenant');
    budget.add(A, -KIB);
    assert.equal(budget.wouldExceed(1, A), undefined);
    // A larger share given while refusing applies at once.
    budget.add(A, 4 * KIB);
    assert.equal(budget.wouldExceed(5 * KIB, A), 'tenant');
    shares.set(A, 0.5);
    assert.equal(budget.wouldExceed(5 * KIB, A), undefined);
  });

  void test('Given a send estimate, when compared with the stored cost, then it is not below it', () => {
    const { clock, create } = setup();
    const q = create('q');
    const m = sendOne(q, msg(body(64)), clock.now());
    assert.ok(sendCost(Buffer.byteLength(m.body)) >= m.cost, `${sendCost(m.body.length)} < ${m.cost}`);
  });
});
