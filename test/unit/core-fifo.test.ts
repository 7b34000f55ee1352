import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { ManualClock } from '../../src/core/clock.js';
import type { ChangeEvent } from '../../src/core/events.js';
import { DEDUP_WINDOW_MS, RECEIVE_ATTEMPT_WINDOW_MS } from '../../src/core/limits.js';
import type { Message } from '../../src/core/message.js';
import type { Queue } from '../../src/core/queue.js';
import { QueueStore } from '../../src/core/store.js';
import { throwsCode } from '../support/assertions.js';
import { inGroup, msg } from '../support/queue.js';

/**
 * FIFO queues in the core: deduplication and its scope, groups and their order, sequence numbers and
 * ReceiveRequestAttemptId. Time is a ManualClock; nothing sleeps.
 */

const ACCOUNT = '000000000000';
const S = 1000;

let queues = 0;

function fifo(attributes: Record<string, string> = {}): { q: Queue; clock: ManualClock; store: QueueStore } {
  const clock = new ManualClock();
  const store = new QueueStore(clock);
  const { queue } = store.create(
    { accountId: ACCOUNT, region: 'us-east-1', name: `q${++queues}.fifo` },
    { FifoQueue: 'true', ...attributes },
    {},
  );
  return { q: queue, clock, store };
}

/** Sends messages named `group:name` in order: deduplication id and body the name. */
function sendAs(q: Queue, clock: ManualClock, messages: string): void {
  for (const m of messages.split(' ')) {
    const [group = '', name = ''] = m.split(':');
    q.sendMessage(msg(name, inGroup(group, name)), clock.now());
  }
}

/** The bodies a receive of up to `max` messages returns now. */
function receiveBodies(q: Queue, clock: ManualClock, max: number): string[] {
  return bodies(q.receive(max, undefined, clock.now()));
}

function bodies(messages: Message[]): string[] {
  return messages.map((m) => m.body);
}

// ---- what a send needs ----------------------------------------------------------------------

void test('Given a FIFO queue, when a message is sent without MessageGroupId, then MissingParameter', () => {
  const { q, clock } = fifo();
  throwsCode(() => q.sendMessage(msg({ deduplicationId: 'd' }), clock.now()), 'MissingParameter');
});

void test('Given a FIFO queue without content-based deduplication, when a message is sent without a deduplication id, then InvalidParameterValue', () => {
  const { q, clock } = fifo();
  throwsCode(() => q.sendMessage(msg(inGroup('g')), clock.now()), 'InvalidParameterValue');
  assert.equal(q.size, 0);
});

// ---- deduplication --------------------------------------------------------------------------

void test('Given a sent message, when the same deduplication id is sent again within 5 minutes, then the original MessageId and SequenceNumber come back and nothing is stored', () => {
  const { q, clock } = fifo();
  const first = q.sendMessage(msg('one', inGroup('g', 'dup')), clock.now());
  clock.advance(DEDUP_WINDOW_MS - 1);
  const again = q.sendMessage(msg('two', inGroup('g', 'dup')), clock.now());
  assert.equal(again.message, undefined);
  assert.equal(again.messageId, first.messageId);
  assert.equal(again.sequenceNumber, first.sequenceNumber);
  assert.equal(q.size, 1);
});

void test('Given a message that was received and deleted, when its deduplication id is sent again within 5 minutes, then it is still a duplicate', () => {
  const { q, clock } = fifo();
  const first = q.sendMessage(msg(inGroup('g', 'dup')), clock.now());
  const [got] = q.receive(1, undefined, clock.now());
  assert.ok(got);
  q.deleteMessage(q.receiptHandle(got), clock.now());
  assert.equal(q.size, 0);
  clock.advance(60 * S);
  const again = q.sendMessage(msg(inGroup('g', 'dup')), clock.now());
  assert.equal(again.message, undefined);
  assert.equal(again.messageId, first.messageId);
  assert.equal(q.size, 0);
});

void test('Given a deduplication id sent 5 minutes ago, when it is sent again, then it is a new message', () => {
  const { q, clock } = fifo();
  const first = q.sendMessage(msg(inGroup('g', 'dup')), clock.now());
  clock.advance(DEDUP_WINDOW_MS);
  const again = q.sendMessage(msg(inGroup('g', 'dup')), clock.now());
  assert.ok(again.message);
  assert.notEqual(again.messageId, first.messageId);
  assert.equal(q.size, 2);
});

void test('Given deduplication records, when their 5 minutes pass, then tick drops them oldest first and reports each', () => {
  const events: ChangeEvent[] = [];
  const { q, clock, store } = fifo();
  store.onChange((e) => events.push(e));
  q.sendMessage(msg(inGroup('g', 'a')), clock.now());
  clock.advance(10 * S);
  q.sendMessage(msg(inGroup('g', 'b')), clock.now());
  clock.advance(DEDUP_WINDOW_MS - 10 * S);
  q.tick(clock.now());
  assert.deepEqual(
    [...(q.fifoState?.dedupRecords() ?? [])].map(([k]) => k),
    ['q:b'],
  );
  assert.deepEqual(
    events.filter((e) => e.type === 'dedup-delete').map((e) => (e.type === 'dedup-delete' ? e.key : '')),
    ['q:a'],
  );
});

void test('Given content-based deduplication, when the same body is sent twice without deduplication ids, then the second is a duplicate and its deduplication id is the SHA-256 of the body', () => {
  const { q, clock } = fifo({ ContentBasedDeduplication: 'true' });
  const first = q.sendMessage(msg('same body', inGroup('g')), clock.now());
  const second = q.sendMessage(msg('same body', inGroup('g')), clock.now());
  assert.equal(second.message, undefined);
  assert.equal(second.messageId, first.messageId);
  const sha = createHash('sha256').update('same body').digest('hex');
  assert.equal(first.message?.deduplicationId, sha);
});

void test('Given content-based deduplication, when two different bodies are sent, then both are stored', () => {
  const { q, clock } = fifo({ ContentBasedDeduplication: 'true' });
  q.sendMessage(msg('one', inGroup('g')), clock.now());
  q.sendMessage(msg('two', inGroup('g')), clock.now());
  assert.equal(q.size, 2);
});

void test('Given content-based deduplication, when an explicit deduplication id equals the hash of an earlier body, then it is a duplicate of that message', () => {
  const { q, clock } = fifo({ ContentBasedDeduplication: 'true' });
  const first = q.sendMessage(msg('hello', inGroup('g')), clock.now());
  const sha = createHash('sha256').update('hello').digest('hex');
  const second = q.sendMessage(msg('other body', inGroup('g', sha)), clock.now());
  assert.equal(second.messageId, first.messageId);
});

const SCOPE_CASES = [
  { scope: 'queue', groups: ['group-a', 'group-b'], when: 'is sent in two groups', duplicate: true },
  { scope: 'messageGroup', groups: ['group-a', 'group-b'], when: 'is sent in two groups', duplicate: false },
  {
    scope: 'messageGroup',
    groups: ['group-a', 'group-a'],
    when: 'is sent twice in the same group',
    duplicate: true,
  },
] as const;

for (const c of SCOPE_CASES) {
  void test(`Given DeduplicationScope ${c.scope}, when one deduplication id ${c.when}, then ${c.duplicate ? 'the second is a duplicate' : 'both are stored'}`, () => {
    const { q, clock } = fifo({ DeduplicationScope: c.scope });
    const [first, second] = c.groups.map((g) => q.sendMessage(msg(inGroup(g, 'same')), clock.now()));
    assert.equal(second?.messageId === first?.messageId, c.duplicate);
    assert.equal(q.size, c.duplicate ? 1 : 2);
  });
}

void test('Given DeduplicationScope messageGroup, when group ids and deduplication ids could spell the same pair, then they are still told apart', () => {
  const { q, clock } = fifo({ DeduplicationScope: 'messageGroup' });
  q.sendMessage(msg(inGroup('ab', 'c')), clock.now());
  q.sendMessage(msg(inGroup('a', 'bc')), clock.now());
  assert.equal(q.size, 2);
});

// ---- sequence numbers -----------------------------------------------------------------------

void test('Given sends in the same millisecond and later, when their SequenceNumbers are compared, then they are 20-digit decimals that always increase', () => {
  const { q, clock } = fifo();
  const seqs: string[] = [];
  for (let i = 0; i < 3; i++)
    seqs.push(q.sendMessage(msg(inGroup('g', `d${i}`)), clock.now()).sequenceNumber ?? '');
  clock.advance(1);
  seqs.push(q.sendMessage(msg(inGroup('g', 'later')), clock.now()).sequenceNumber ?? '');
  for (const s of seqs) assert.match(s, /^\d{20}$/);
  for (let i = 1; i < seqs.length; i++)
    assert.ok(BigInt(seqs[i] ?? '') > BigInt(seqs[i - 1] ?? ''), seqs.join());
});

void test('Given a clock that goes back, when messages are sent, then SequenceNumbers still increase', () => {
  const { q, clock } = fifo();
  const a = q.sendMessage(msg(inGroup('g', 'a')), clock.now()).sequenceNumber ?? '';
  clock.advance(-60 * S);
  const b = q.sendMessage(msg(inGroup('g', 'b')), clock.now()).sequenceNumber ?? '';
  assert.ok(BigInt(b) > BigInt(a));
});

// ---- order, and a group held back by its first message in flight ----------------------------

void test('Given several messages in one group, when received with room for all, then they come in send order', () => {
  const { q, clock } = fifo();
  for (const b of ['1', '2', '3']) q.sendMessage(msg(b, inGroup('g', b)), clock.now());
  assert.deepEqual(receiveBodies(q, clock, 10), ['1', '2', '3']);
});

void test('Given two groups, when received with room for all, then the older group comes first, all its messages in order, then the other', () => {
  const { q, clock } = fifo();
  sendAs(q, clock, 'a:a1 b:b1 a:a2');
  assert.deepEqual(receiveBodies(q, clock, 10), ['a1', 'a2', 'b1']);
});

void test('Given a group whose first message is in flight, when received again, then nothing of that group comes but other groups do', () => {
  const { q, clock } = fifo();
  sendAs(q, clock, 'a:a1 a:a2 b:b1');
  assert.deepEqual(receiveBodies(q, clock, 1), ['a1']);
  assert.deepEqual(receiveBodies(q, clock, 10), ['b1']);
  assert.deepEqual(q.receive(10, undefined, clock.now()), []);
});

void test('Given a group whose first message is in flight, when its in-flight message is deleted, then the next message of the group is received', () => {
  const { q, clock } = fifo();
  sendAs(q, clock, 'a:a1 a:a2');
  const [a1] = q.receive(1, undefined, clock.now());
  assert.ok(a1);
  q.deleteMessage(q.receiptHandle(a1), clock.now());
  assert.deepEqual(receiveBodies(q, clock, 10), ['a2']);
});

void test('Given a group whose first message is in flight, when the visibility timeout of its message expires, then that message is redelivered first, before the later ones', () => {
  const { q, clock } = fifo({ VisibilityTimeout: '30' });
  sendAs(q, clock, 'a:a1 a:a2');
  assert.deepEqual(receiveBodies(q, clock, 1), ['a1']);
  clock.advance(30 * S);
  const again = q.receive(10, undefined, clock.now());
  assert.deepEqual(bodies(again), ['a1', 'a2']);
  assert.equal(again[0]?.receiveCount, 2);
});

void test('Given a group whose first message is in flight, when its message is made visible with ChangeMessageVisibility 0, then the group is receivable again, in order', () => {
  const { q, clock } = fifo();
  sendAs(q, clock, 'a:a1 a:a2');
  const [a1] = q.receive(1, undefined, clock.now());
  assert.ok(a1);
  q.changeVisibility(q.receiptHandle(a1), 0, clock.now());
  assert.deepEqual(receiveBodies(q, clock, 10), ['a1', 'a2']);
});

void test('Given two in-flight messages of one group, when the first is deleted, then nothing of the group is received while the second is in flight', () => {
  const { q, clock } = fifo();
  for (const b of ['a1', 'a2', 'a3']) q.sendMessage(msg(b, inGroup('a', b)), clock.now());
  const [a1] = q.receive(2, undefined, clock.now());
  assert.ok(a1);
  q.deleteMessage(q.receiptHandle(a1), clock.now());
  assert.deepEqual(q.receive(10, undefined, clock.now()), []);
});

void test('Given a group with waiting messages behind its in-flight first one, when that one is deleted, then the listener hears that messages are available', () => {
  const { q, clock, store } = fifo();
  let available = 0;
  store.onAvailable(() => available++);
  q.sendMessage(msg(inGroup('a', 'a1')), clock.now());
  q.sendMessage(msg(inGroup('a', 'a2')), clock.now());
  const [a1] = q.receive(1, undefined, clock.now());
  assert.ok(a1);
  available = 0;
  q.deleteMessage(q.receiptHandle(a1), clock.now());
  assert.equal(available, 1);
});

void test('Given a receive with a zero visibility timeout, when it returns a group, then it does not return that group twice in the same call', () => {
  const { q, clock } = fifo();
  sendAs(q, clock, 'a:a1 a:a2');
  assert.deepEqual(bodies(q.receive(10, 0, clock.now())), ['a1', 'a2']);
  assert.deepEqual(bodies(q.receive(10, 0, clock.now())), ['a1', 'a2']);
});

void test('Given a FIFO message whose visibility expired, when it is deleted with its old receipt handle, then InvalidParameterValue and the group stays as it was', () => {
  const { q, clock } = fifo({ VisibilityTimeout: '30' });
  sendAs(q, clock, 'a:a1');
  const [a1] = q.receive(1, undefined, clock.now());
  assert.ok(a1);
  const stale = q.receiptHandle(a1);
  clock.advance(30 * S);
  throwsCode(() => q.deleteMessage(stale, clock.now()), 'InvalidParameterValue');
  assert.deepEqual(receiveBodies(q, clock, 1), ['a1']);
});

void test('Given a FIFO queue with a queue delay, when the first message of a group is still delayed, then later messages of the group wait for it', () => {
  const { q, clock } = fifo({ DelaySeconds: '10' });
  sendAs(q, clock, 'a:a1');
  q.setAttributes({ DelaySeconds: '0' }, clock.now());
  sendAs(q, clock, 'a:a2');
  assert.deepEqual(q.receive(10, undefined, clock.now()), []);
  clock.advance(10 * S);
  assert.deepEqual(receiveBodies(q, clock, 10), ['a1', 'a2']);
});

void test('Given a purged FIFO queue, when a deduplication id sent before the purge is sent again, then it is a new message (AWS, recorded)', () => {
  const { q, clock } = fifo();
  const first = q.sendMessage(msg(inGroup('a', 'd')), clock.now());
  q.purge(clock.now());
  assert.equal(q.fifoState?.groupCount, 0);
  assert.deepEqual([...(q.fifoState?.dedupRecords() ?? [])], []);
  const again = q.sendMessage(msg(inGroup('a', 'd')), clock.now());
  assert.notEqual(again.messageId, first.messageId);
  assert.notEqual(again.message, undefined);
});

// ---- a change of DeduplicationScope takes effect 60 s after it is made (docs/compatibility.md) ----

/** The six recorded steps, in one millisecond: the scope before the change still applies. */
function recordedScopeSteps(): { q: Queue; clock: ManualClock; changedAt: number } {
  const { q, clock } = fifo({ DeduplicationScope: 'queue', ContentBasedDeduplication: 'false' });
  // 1. Test1 (group1, D): received and deleted.
  q.sendMessage(msg('Test1', inGroup('group1', 'D')), clock.now());
  const [t1] = q.receive(1, undefined, clock.now());
  assert.equal(t1?.body, 'Test1');
  q.deleteMessage(q.receiptHandle(t1), clock.now());
  // 2. Test2 (group2, D): a duplicate.
  assert.equal(q.sendMessage(msg('Test2', inGroup('group2', 'D')), clock.now()).message, undefined);
  assert.deepEqual(q.receive(10, 0, clock.now()), []);
  // 3. The switch to high throughput: the attributes show it at once.
  clock.advance(1);
  const changedAt = clock.now();
  q.setAttributes(
    { DeduplicationScope: 'messageGroup', FifoThroughputLimit: 'perMessageGroupId' },
    changedAt,
  );
  assert.equal(q.attributes.DeduplicationScope, 'messageGroup');
  assert.equal(q.attributes.FifoThroughputLimit, 'perMessageGroupId');
  // 4. Nothing to receive; Test3 (group3, D) is still a duplicate.
  assert.deepEqual(q.receive(10, undefined, clock.now()), []);
  assert.equal(q.sendMessage(msg('Test3', inGroup('group3', 'D')), clock.now()).message, undefined);
  assert.deepEqual(q.receive(10, 0, clock.now()), []);
  // 5. Test4 (group4, E): new, received, deleted.
  assert.ok(q.sendMessage(msg('Test4', inGroup('group4', 'E')), clock.now()).message);
  const [t4] = q.receive(10, undefined, clock.now());
  assert.equal(t4?.body, 'Test4');
  q.deleteMessage(q.receiptHandle(t4), clock.now());
  // 6. Test5 (group5, E): a duplicate, though its group differs.
  assert.equal(q.sendMessage(msg('Test5', inGroup('group5', 'E')), clock.now()).message, undefined);
  assert.deepEqual(q.receive(10, 0, clock.now()), []);
  return { q, clock, changedAt };
}

void test('Given a FIFO queue switched to high throughput after creation, when the recorded six steps run, then old and new deduplication ids are still deduplicated queue-wide', () => {
  recordedScopeSteps();
});

void test('Given a DeduplicationScope change, when 1 ms short of 60 s later a deduplication id is sent in another group, then it is still a duplicate', () => {
  const { q, clock, changedAt } = recordedScopeSteps();
  clock.advance(changedAt + 60 * S - 1 - clock.now());
  assert.equal(q.sendMessage(msg('Test6', inGroup('group6', 'E')), clock.now()).message, undefined);
});

void test('Given a DeduplicationScope change, when 60 s later a deduplication id is sent in another group, then it is a new message, and again in its own group a duplicate', () => {
  const { q, clock, changedAt } = recordedScopeSteps();
  clock.advance(changedAt + 60 * S - clock.now());
  const t6 = q.sendMessage(msg('Test6', inGroup('group6', 'E')), clock.now());
  assert.ok(t6.message, 'E in group6 under scope messageGroup: new');
  assert.equal(q.sendMessage(msg('again', inGroup('group6', 'E')), clock.now()).messageId, t6.messageId);
});

void test('Given two DeduplicationScope changes 30 s apart, when sends follow, then each change takes effect 60 s after it was made', () => {
  const { q, clock } = fifo();
  const scopeAt = (): string => {
    // The same id in two new groups: one message under scope queue, two under messageGroup.
    const id = `probe-${clock.now()}`;
    const a = q.sendMessage(msg(inGroup(`a${clock.now()}`, id)), clock.now());
    const b = q.sendMessage(msg(inGroup(`b${clock.now()}`, id)), clock.now());
    return a.messageId === b.messageId ? 'queue' : 'messageGroup';
  };
  q.setAttributes({ DeduplicationScope: 'messageGroup' }, clock.now());
  clock.advance(30 * S);
  q.setAttributes({ DeduplicationScope: 'queue' }, clock.now());
  clock.advance(30 * S - 1);
  assert.equal(scopeAt(), 'queue', '59.999 s after the first change');
  clock.advance(1);
  assert.equal(scopeAt(), 'messageGroup', '60 s after the first change');
  clock.advance(30 * S - 1);
  assert.equal(scopeAt(), 'messageGroup', '59.999 s after the second change');
  clock.advance(1);
  assert.equal(scopeAt(), 'queue', '60 s after the second change');
});

void test('Given a queue created with DeduplicationScope messageGroup, when sent at once, then that scope applies from the start', () => {
  const { q, clock } = fifo({ DeduplicationScope: 'messageGroup', FifoThroughputLimit: 'perMessageGroupId' });
  const a = q.sendMessage(msg(inGroup('a', 'd')), clock.now());
  assert.notEqual(q.sendMessage(msg(inGroup('b', 'd')), clock.now()).messageId, a.messageId);
});

void test('Given a SetQueueAttributes that repeats the DeduplicationScope in effect, when sent at once, then nothing is pending', () => {
  const { q, clock } = fifo({ DeduplicationScope: 'messageGroup', FifoThroughputLimit: 'perMessageGroupId' });
  q.setAttributes({ DeduplicationScope: 'messageGroup' }, clock.now());
  assert.equal(q.fifoState?.pendingScope, undefined);
  const a = q.sendMessage(msg(inGroup('a', 'd')), clock.now());
  assert.notEqual(q.sendMessage(msg(inGroup('b', 'd')), clock.now()).messageId, a.messageId);
});

void test('Given many groups, when all their messages are received and deleted, then no group is left behind', () => {
  const { q, clock } = fifo();
  for (let i = 0; i < 50; i++) q.sendMessage(msg(inGroup(`g${i % 7}`, `d${i}`)), clock.now());
  for (
    let got = q.receive(10, undefined, clock.now());
    got.length > 0;
    got = q.receive(10, undefined, clock.now())
  ) {
    for (const m of got) q.deleteMessage(q.receiptHandle(m), clock.now());
  }
  assert.equal(q.size, 0);
  assert.equal(q.fifoState?.groupCount, 0);
});

// ---- ReceiveRequestAttemptId ----------------------------------------------------------------

void test('Given a receive with a ReceiveRequestAttemptId, when it is retried within 5 minutes, then the same messages and receipt handles come back', () => {
  const { q, clock } = fifo({ VisibilityTimeout: '600' });
  sendAs(q, clock, 'a:a1 b:b1');
  const first = q.receive(10, undefined, clock.now(), 'attempt-1');
  const handles = first.map((m) => q.receiptHandle(m));
  clock.advance(RECEIVE_ATTEMPT_WINDOW_MS - 1);
  const retry = q.receive(10, undefined, clock.now(), 'attempt-1');
  assert.deepEqual(bodies(retry), ['a1', 'b1']);
  assert.deepEqual(
    retry.map((m) => q.receiptHandle(m)),
    handles,
  );
});

void test('Given a retried ReceiveRequestAttemptId, when it returns the messages again, then their visibility timeout starts again', () => {
  const { q, clock } = fifo({ VisibilityTimeout: '30' });
  sendAs(q, clock, 'a:a1');
  q.receive(1, undefined, clock.now(), 'attempt-1');
  clock.advance(20 * S);
  q.receive(1, undefined, clock.now(), 'attempt-1');
  clock.advance(20 * S);
  // 40 s after the first receive, 20 s after the retry: still in flight.
  assert.deepEqual(q.counts(clock.now()), { visible: 0, inflight: 1, delayed: 0 });
});

void test('Given a ReceiveRequestAttemptId used 5 minutes ago, when it is used again, then it is a new receive, not a replay', () => {
  const { q, clock } = fifo({ VisibilityTimeout: '43200' });
  sendAs(q, clock, 'a:a1');
  assert.equal(q.receive(10, undefined, clock.now(), 'attempt-1').length, 1);
  clock.advance(RECEIVE_ATTEMPT_WINDOW_MS);
  // The message is still in flight (12 h) and its group locked: a new receive gets nothing.
  assert.deepEqual(q.receive(10, undefined, clock.now(), 'attempt-1'), []);
});

void test('Given a ReceiveRequestAttemptId whose message was deleted since, when retried, then it receives anew', () => {
  const { q, clock } = fifo();
  sendAs(q, clock, 'a:a1 b:b1');
  const [a1] = q.receive(1, undefined, clock.now(), 'attempt-1');
  assert.ok(a1);
  q.deleteMessage(q.receiptHandle(a1), clock.now());
  assert.deepEqual(bodies(q.receive(1, undefined, clock.now(), 'attempt-1')), ['b1']);
});

void test('Given a ReceiveRequestAttemptId whose message had its visibility changed since, when retried, then it receives anew', () => {
  const { q, clock } = fifo();
  sendAs(q, clock, 'a:a1');
  const [a1] = q.receive(1, undefined, clock.now(), 'attempt-1');
  assert.ok(a1);
  const handle = q.receiptHandle(a1);
  q.changeVisibility(handle, 120 * S, clock.now());
  assert.deepEqual(q.receive(1, undefined, clock.now(), 'attempt-1'), []);
});

void test('Given a ReceiveRequestAttemptId whose messages became visible again, when retried, then they come with new receipt handles', () => {
  const { q, clock } = fifo({ VisibilityTimeout: '30' });
  sendAs(q, clock, 'a:a1');
  const [first] = q.receive(1, undefined, clock.now(), 'attempt-1');
  assert.ok(first);
  const handle = q.receiptHandle(first);
  clock.advance(30 * S);
  const [again] = q.receive(1, undefined, clock.now(), 'attempt-1');
  assert.ok(again);
  assert.notEqual(q.receiptHandle(again), handle);
  assert.equal(again.receiveCount, 2);
});

void test('Given two ReceiveRequestAttemptIds, when each is retried, then each gets its own messages', () => {
  const { q, clock } = fifo();
  sendAs(q, clock, 'a:a1 b:b1');
  assert.deepEqual(bodies(q.receive(1, undefined, clock.now(), 'x')), ['a1']);
  assert.deepEqual(bodies(q.receive(1, undefined, clock.now(), 'y')), ['b1']);
  assert.deepEqual(bodies(q.receive(1, undefined, clock.now(), 'x')), ['a1']);
  assert.deepEqual(bodies(q.receive(1, undefined, clock.now(), 'y')), ['b1']);
});

// ---- fair queues (standard queues with group ids) -------------------------------------------

void test('Given a standard queue, when messages carry MessageGroupIds, then they are kept and delivered without group locks', () => {
  const clock = new ManualClock();
  const store = new QueueStore(clock);
  const { queue } = store.create({ accountId: ACCOUNT, region: 'us-east-1', name: 'fair' }, {}, {});
  queue.sendMessage(msg('x', inGroup('tenant-a')), clock.now());
  queue.sendMessage(msg('y', inGroup('tenant-a')), clock.now());
  const got = queue.receive(1, undefined, clock.now());
  assert.equal(got[0]?.groupId, 'tenant-a');
  assert.equal(queue.receive(1, undefined, clock.now()).length, 1, 'the same group is not locked');
});

// ---- which group a receive serves first (docs/compatibility.md, "FIFO queues") -----------------

/** Sends messages named `group-x` in order: group and deduplication id from the name, body the name. */
function sendEach(q: Queue, clock: ManualClock, names: string): void {
  for (const name of names.split(' '))
    q.sendMessage(msg(name, inGroup(name.replace(/-.*/, ''), name)), clock.now());
}

void test('Given a group whose in-flight message came back by timeout, when received, then the group that was waiting before it comes first (AWS, recorded)', () => {
  const { q, clock } = fifo({ VisibilityTimeout: '30' });
  sendEach(q, clock, 'g1-a g1-b g3-c');
  assert.deepEqual(receiveBodies(q, clock, 1), ['g1-a']);
  clock.advance(30 * S);
  assert.deepEqual(receiveBodies(q, clock, 10), ['g3-c', 'g1-a', 'g1-b']);
});

void test('Given a group whose in-flight message is set visible (ChangeMessageVisibility 0), when received, then the waiting group comes first', () => {
  const { q, clock } = fifo();
  sendEach(q, clock, 'g1-a g2-b');
  const [m] = q.receive(1, undefined, clock.now());
  // Ties (the same millisecond) go by the first message's send order: the clock moves on here.
  clock.advance(1);
  q.changeVisibility(q.receiptHandle(m as Message), 0, clock.now());
  assert.deepEqual(receiveBodies(q, clock, 10), ['g2-b', 'g1-a']);
});

void test('Given receives with VisibilityTimeout 0, when received again, then the groups take turns', () => {
  const { q, clock } = fifo();
  sendEach(q, clock, 'g1-a g1-b g2-c g3-d');
  clock.advance(1);
  assert.deepEqual(bodies(q.receive(1, 0, clock.now())), ['g1-a']);
  clock.advance(1);
  assert.deepEqual(bodies(q.receive(1, 0, clock.now())), ['g2-c']);
  clock.advance(1);
  assert.deepEqual(bodies(q.receive(10, 0, clock.now())), ['g3-d', 'g1-a', 'g1-b', 'g2-c']);
});

void test('Given a group whose in-flight messages were deleted, when received, then it comes after the groups that were waiting', () => {
  const { q, clock } = fifo();
  sendEach(q, clock, 'g1-a g1-b g2-c');
  const [m] = q.receive(1, undefined, clock.now());
  clock.advance(1);
  q.deleteMessage(q.receiptHandle(m as Message), clock.now());
  assert.deepEqual(receiveBodies(q, clock, 10), ['g2-c', 'g1-b']);
});

// ---- within a group, messages are served up to the first one in flight ------------------

/** (a)/(b): g1-m1 and g1-m2 received, g2-m1 waiting; g1-m1 then comes back by `back`. */
function firstOfTwoBack(back: (q: Queue, clock: ManualClock, handle: string) => void): string[] {
  const { q, clock } = fifo({ VisibilityTimeout: '30', ContentBasedDeduplication: 'true' });
  for (const [group, body] of [
    ['g1', 'g1-m1'],
    ['g1', 'g1-m2'],
    ['g2', 'g2-m1'],
  ] as const)
    q.sendMessage(msg(body, inGroup(group)), clock.now());
  const got = q.receive(2, undefined, clock.now());
  assert.deepEqual(bodies(got), ['g1-m1', 'g1-m2']);
  clock.advance(1);
  back(q, clock, q.receiptHandle(got[0] as Message));
  return receiveBodies(q, clock, 3);
}

void test('Given g1-m1 and g1-m2 in flight, when g1-m1 is set visible (ChangeMessageVisibility 0), then a receive returns exactly [g2-m1, g1-m1]', () => {
  const got = firstOfTwoBack((q, clock, handle) => q.changeVisibility(handle, 0, clock.now()));
  assert.deepEqual(got, ['g2-m1', 'g1-m1']);
});

void test('Given g1-m1 and g1-m2 in flight, when g1-m1 is set to 1 s and 2 s pass, then a receive returns exactly [g2-m1, g1-m1]', () => {
  const got = firstOfTwoBack((q, clock, handle) => {
    q.changeVisibility(handle, 1 * S, clock.now());
    clock.advance(2 * S);
  });
  assert.deepEqual(got, ['g2-m1', 'g1-m1']);
});

for (const [p, expected] of [
  [0, []],
  [1, ['foo']],
  [2, ['foo', 'bar']],
] as const) {
  void test(`Given foo, bar, baz of one group in flight for 1 s, when the one at position ${p} is extended to 4 s and 2.5 s pass, then a receive returns [${expected.join(', ')}]`, () => {
    const { q, clock } = fifo({ VisibilityTimeout: '1', ContentBasedDeduplication: 'true' });
    for (const body of ['foo', 'bar', 'baz']) q.sendMessage(msg(body, inGroup('1')), clock.now());
    const got = q.receive(5, undefined, clock.now());
    assert.deepEqual(bodies(got), ['foo', 'bar', 'baz']);
    q.changeVisibility(q.receiptHandle(got[p] as Message), 4 * S, clock.now());
    clock.advance(2500);
    assert.deepEqual(receiveBodies(q, clock, 5), expected);
  });
}

void test('Given g1 and g2 received at different moments and g3 waiting, when both time out, then a receive returns [g3-m1, g1-m1, g1-m2, g2-m1, g2-m2] (AWS, recorded)', () => {
  const { q, clock } = fifo({ VisibilityTimeout: '30' });
  sendEach(q, clock, 'g1-m1 g1-m2 g2-m1 g2-m2 g3-m1');
  assert.deepEqual(receiveBodies(q, clock, 1), ['g1-m1']);
  clock.advance(1);
  // g1 stops at its message in flight; g2 is next.
  assert.deepEqual(receiveBodies(q, clock, 2), ['g2-m1', 'g2-m2']);
  clock.advance(30 * S);
  assert.deepEqual(receiveBodies(q, clock, 10), ['g3-m1', 'g1-m1', 'g1-m2', 'g2-m1', 'g2-m2']);
});

void test('Given a group whose first message is visible again and its second in flight, when the second is deleted, then the group keeps its place', () => {
  const { q, clock } = fifo({ VisibilityTimeout: '30' });
  sendEach(q, clock, 'g1-a g1-b g2-c');
  const got = q.receive(2, undefined, clock.now());
  assert.deepEqual(bodies(got), ['g1-a', 'g1-b']);
  q.changeVisibility(q.receiptHandle(got[0] as Message), 0, clock.now());
  clock.advance(1);
  q.deleteMessage(q.receiptHandle(got[1] as Message), clock.now());
  // g1 became receivable in the same millisecond as g2's send, and its first message is older.
  assert.deepEqual(receiveBodies(q, clock, 10), ['g1-a', 'g2-c']);
});
