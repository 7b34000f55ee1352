import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { Queue } from '../../src/core/queue.js';

import { throwsCode } from '../support/assertions.js';
import { manualStore } from '../support/services.js';
import { msg, sendOne } from '../support/queue.js';

/**
 * Dead-letter queues in the core: the move at maxReceiveCount + 1 receives, what the moved
 * message keeps, retention in the DLQ, and the RedrivePolicy / RedriveAllowPolicy checks.
 */

const ACCOUNT = '000000000000';
const S = 1000;

const setup = manualStore;

function redrive(dlq: Queue, maxReceiveCount: number | string): string {
  return JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount });
}

/**
 * A source queue `src` that moves a message to `dlq` after `maxReceiveCount` receives (visibility 0
 * unless given, so each receive can take it again), and `receive()`: one message from `src`.
 */
function redriven(
  maxReceiveCount: number,
  o: { visibility?: string; dlq?: Record<string, string> } = {},
): ReturnType<typeof setup> & { dlq: Queue; src: Queue; receive: () => ReturnType<Queue['receive']> } {
  const s = setup();
  const dlq = s.create('dlq', o.dlq);
  const src = s.create('src', {
    RedrivePolicy: redrive(dlq, maxReceiveCount),
    VisibilityTimeout: o.visibility ?? '0',
  });
  return { ...s, dlq, src, receive: () => src.receive(1, undefined, s.clock.now()) };
}

// ---- the move -------------------------------------------------------------------------------

void test('Given maxReceiveCount 2, when a message is received twice, then it is delivered both times and stays in the source', () => {
  const { clock, dlq, src, receive } = redriven(2);
  sendOne(src, msg('poison'), clock.now());
  assert.equal(receive().length, 1);
  assert.equal(receive().length, 1);
  assert.equal(src.size, 1);
  assert.equal(dlq.size, 0);
});

void test('Given maxReceiveCount 2, when a message is received the third time, then it moves to the DLQ instead of being delivered', () => {
  const { clock, dlq, src, receive } = redriven(2);
  sendOne(src, msg('poison'), clock.now());
  receive();
  receive();
  assert.deepEqual(receive(), []);
  assert.equal(src.size, 0);
  assert.equal(dlq.size, 1);
});

void test('Given a message moved to the DLQ, when received there, then it keeps its id, body, attributes, SentTimestamp and receive count, and names its source', () => {
  const { clock, dlq, src, receive } = redriven(1);
  const attributes = { a: { DataType: 'String', StringValue: 'v' } };
  const sent = sendOne(src, msg('poison', { attributes, md5OfAttributes: 'md5-attrs' }), clock.now());
  receive();
  clock.advance(5 * S);
  receive();
  const [moved] = dlq.receive(1, undefined, clock.now());
  assert.ok(moved);
  assert.equal(moved.id, sent.id);
  assert.equal(moved.body, 'poison');
  assert.deepEqual(moved.attributes, attributes);
  assert.equal(moved.md5OfAttributes, 'md5-attrs');
  assert.equal(moved.sentAt, sent.sentAt);
  assert.equal(moved.deadLetterSourceArn, src.arn);
  assert.equal(moved.receiveCount, 2, 'one receive in the source, one in the DLQ');
});

void test('Given a message over the count ahead of a fresh one, when received, then the first moves and the fresh one is delivered in the same call', () => {
  const { clock, dlq, src, receive } = redriven(1);
  sendOne(src, msg('poison'), clock.now());
  receive();
  sendOne(src, msg('fresh'), clock.now());
  assert.deepEqual(
    src.receive(10, undefined, clock.now()).map((m) => m.body),
    ['fresh'],
  );
  assert.equal(dlq.size, 1);
});

void test('Given a RedrivePolicy whose DLQ was deleted since, when a message goes over the count, then it is delivered as usual', () => {
  const { store, clock, dlq, src, receive } = redriven(1);
  sendOne(src, msg('poison'), clock.now());
  receive();
  store.delete(dlq);
  assert.equal(receive().length, 1);
});

void test('Given a message moved to a standard DLQ, when its retention (counted from the original send) passes, then it expires there though newer messages stay', () => {
  const { clock, dlq, src, receive } = redriven(1, {
    visibility: '30',
    dlq: { MessageRetentionPeriod: '120' },
  });
  sendOne(src, msg('old'), clock.now());
  receive();
  clock.advance(60 * S);
  sendOne(dlq, msg('direct'), clock.now());
  receive(); // moves 'old', sent 60 s ago, behind 'direct'
  assert.equal(dlq.size, 2);
  clock.advance(59 * S);
  assert.equal(dlq.counts(clock.now()).visible, 2);
  clock.advance(1 * S);
  dlq.tick(clock.now());
  assert.deepEqual(
    [...dlq.allMessages()].map((m) => m.body),
    ['direct'],
  );
});

void test('Given FIFO queues, when a message goes over the count, then it moves with its group, the DLQ gives it a new SequenceNumber and its id as deduplication id, and retention restarts', () => {
  const { clock, create } = setup();
  const dlq = create('dlq.fifo');
  const src = create('src.fifo', { RedrivePolicy: redrive(dlq, 1), VisibilityTimeout: '0' });
  const sent = sendOne(src, msg('poison', { groupId: 'g', deduplicationId: 'd-1' }), clock.now());
  src.receive(1, undefined, clock.now());
  clock.advance(10 * S);
  src.receive(1, undefined, clock.now());
  const [moved] = dlq.receive(1, undefined, clock.now());
  assert.ok(moved);
  assert.equal(moved.id, sent.id);
  assert.equal(moved.groupId, 'g');
  assert.equal(moved.deduplicationId, sent.id);
  assert.ok(BigInt(moved.sequenceNumber ?? '0') > 0n);
  assert.equal(moved.sentAt, clock.now());
});

void test('Given a FIFO group whose first message goes over the count, when received, then the next message of the group is delivered in its place', () => {
  const { clock, create } = setup();
  const dlq = create('dlq.fifo');
  const src = create('src.fifo', { RedrivePolicy: redrive(dlq, 1), VisibilityTimeout: '0' });
  sendOne(src, msg('a1', { groupId: 'g', deduplicationId: 'a1' }), clock.now());
  src.receive(1, undefined, clock.now());
  sendOne(src, msg('a2', { groupId: 'g', deduplicationId: 'a2' }), clock.now());
  assert.deepEqual(
    src.receive(10, undefined, clock.now()).map((m) => m.body),
    ['a2'],
  );
});

// ---- RedrivePolicy checks ---------------------------------------------------------------------

void test('Given a RedrivePolicy naming a queue that does not exist, when set, then InvalidParameterValue: dead letter target does not exist', () => {
  const { store, create } = setup();
  const src = create('src');
  throwsCode(
    () =>
      store.setAttributes(src, {
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: `arn:aws:sqs:us-east-1:${ACCOUNT}:missing`,
          maxReceiveCount: 3,
        }),
      }),
    'InvalidParameterValue',
    /Dead letter target does not exist/,
  );
  assert.equal(src.attributes.RedrivePolicy, undefined);
});

void test('Given CreateQueue with a RedrivePolicy naming a missing queue, when created, then InvalidParameterValue and no queue', () => {
  const { store } = setup();
  throwsCode(
    () =>
      store.create(
        { accountId: ACCOUNT, region: 'us-east-1', name: 'src' },
        {
          RedrivePolicy: JSON.stringify({
            deadLetterTargetArn: `arn:aws:sqs:us-east-1:${ACCOUNT}:missing`,
            maxReceiveCount: 3,
          }),
        },
        {},
      ),
    'InvalidParameterValue',
  );
  assert.equal(store.size, 0);
});

void test('Given a FIFO source and a standard DLQ (or the reverse), when the RedrivePolicy is set, then InvalidParameterValue', () => {
  const { store, create } = setup();
  const std = create('std');
  const fifo = create('f.fifo');
  throwsCode(
    () => store.setAttributes(fifo, { RedrivePolicy: redrive(std, 3) }),
    'InvalidParameterValue',
    /same type/,
  );
  throwsCode(
    () => store.setAttributes(std, { RedrivePolicy: redrive(fifo, 3) }),
    'InvalidParameterValue',
    /same type/,
  );
});

void test('Given maxReceiveCount 1 and 1000, when set, then accepted; 0 and 1001 are InvalidParameterValue', () => {
  const { store, create } = setup();
  const dlq = create('dlq');
  const src = create('src');
  store.setAttributes(src, { RedrivePolicy: redrive(dlq, 1) });
  store.setAttributes(src, { RedrivePolicy: redrive(dlq, 1000) });
  for (const bad of [0, 1001, 2.5, 'x']) {
    throwsCode(() => store.setAttributes(src, { RedrivePolicy: redrive(dlq, bad) }), 'InvalidParameterValue');
  }
});

void test('Given a RedrivePolicy without one of its two keys, when set, then InvalidParameterValue naming the missing one', () => {
  const { store, create } = setup();
  const dlq = create('dlq');
  const src = create('src');
  throwsCode(
    () => store.setAttributes(src, { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn }) }),
    'InvalidParameterValue',
    /mandatory attribute: maxReceiveCount/,
  );
  throwsCode(
    () => store.setAttributes(src, { RedrivePolicy: '{"maxReceiveCount":3}' }),
    'InvalidParameterValue',
    /mandatory attribute: deadLetterTargetArn/,
  );
});

void test('Given a RedrivePolicy with maxReceiveCount as a string, when read back, then it is in AWS form with a number', () => {
  const { store, create } = setup();
  const dlq = create('dlq');
  const src = create('src');
  store.setAttributes(src, { RedrivePolicy: redrive(dlq, '5') });
  assert.equal(src.attributes.RedrivePolicy, `{"deadLetterTargetArn":"${dlq.arn}","maxReceiveCount":5}`);
  assert.equal(src.redrive?.maxReceiveCount, 5);
});

void test('Given a queue with a RedrivePolicy, when it is set to the empty string, then the policy is removed', () => {
  const { store, create } = setup();
  const dlq = create('dlq');
  const src = create('src', { RedrivePolicy: redrive(dlq, 3) });
  store.setAttributes(src, { RedrivePolicy: '' });
  assert.equal(src.attributes.RedrivePolicy, undefined);
  assert.equal(src.redrive, null);
});

// ---- RedriveAllowPolicy ---------------------------------------------------------------------

const ALLOW_CASES: ReadonlyArray<{
  readonly name: string;
  /** The DLQ's RedriveAllowPolicy, given the ARNs of the source and of another queue. */
  readonly policy: (arns: { src: string; other: string }) => object;
  /** The refusal's message, or null when the source may name the DLQ. */
  readonly refused: RegExp | null;
}> = [
  {
    name: 'Given a DLQ with RedriveAllowPolicy denyAll, when a source names it, then InvalidParameterValue',
    policy: () => ({ redrivePermission: 'denyAll' }),
    refused: /denyAll/,
  },
  {
    name: 'Given a DLQ allowing byQueue other sources, when a source not in its list names it, then InvalidParameterValue',
    policy: ({ other }) => ({ redrivePermission: 'byQueue', sourceQueueArns: [other] }),
    refused: /byQueue/,
  },
  {
    name: 'Given a DLQ allowing byQueue a source, when that source names it, then the policy is set',
    policy: ({ src }) => ({ redrivePermission: 'byQueue', sourceQueueArns: [src] }),
    refused: null,
  },
  {
    name: 'Given a DLQ with RedriveAllowPolicy allowAll, when any source names it, then the policy is set',
    policy: () => ({ redrivePermission: 'allowAll' }),
    refused: null,
  },
];

for (const c of ALLOW_CASES) {
  void test(c.name, () => {
    const { store, create } = setup();
    const src = create('src');
    const other = create('other');
    const dlq = create('dlq', {
      RedriveAllowPolicy: JSON.stringify(c.policy({ src: src.arn, other: other.arn })),
    });
    const set = (): void => store.setAttributes(src, { RedrivePolicy: redrive(dlq, 3) });
    if (c.refused !== null) {
      throwsCode(set, 'InvalidParameterValue', c.refused);
    } else {
      set();
      assert.equal(src.redrive?.deadLetterTargetArn, dlq.arn);
    }
  });
}

void test('Given a RedriveAllowPolicy, when byQueue has no ARNs, more than 10, or another permission has ARNs, then InvalidParameterValue', () => {
  const { store, create } = setup();
  const dlq = create('dlq');
  const arns = (n: number): string[] =>
    Array.from({ length: n }, (_, i) => `arn:aws:sqs:us-east-1:${ACCOUNT}:s${i}`);
  for (const bad of [
    { redrivePermission: 'byQueue' },
    { redrivePermission: 'byQueue', sourceQueueArns: [] },
    { redrivePermission: 'byQueue', sourceQueueArns: arns(11) },
    { redrivePermission: 'allowAll', sourceQueueArns: arns(1) },
    { redrivePermission: 'sometimes' },
    {},
  ]) {
    throwsCode(
      () => store.setAttributes(dlq, { RedriveAllowPolicy: JSON.stringify(bad) }),
      'InvalidParameterValue',
    );
  }
  store.setAttributes(dlq, {
    RedriveAllowPolicy: JSON.stringify({ redrivePermission: 'byQueue', sourceQueueArns: arns(10) }),
  });
});

// ---- ListDeadLetterSourceQueues -------------------------------------------------------------

void test('Given three queues of which two name a DLQ, when its sources are listed, then those two come, sorted by name', () => {
  const { store, create } = setup();
  const dlq = create('dlq');
  create('b-src', { RedrivePolicy: redrive(dlq, 3) });
  create('unrelated');
  create('a-src', { RedrivePolicy: redrive(dlq, 3) });
  assert.deepEqual(
    store.deadLetterSources(dlq).map((q) => q.name),
    ['a-src', 'b-src'],
  );
});
