import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ManualClock } from '../../src/core/clock.js';
import { CoreError } from '../../src/core/errors.js';
import { encodeTaskHandle } from '../../src/core/movetasks.js';
import type { Queue } from '../../src/core/queue.js';
import { QueueStore } from '../../src/core/store.js';
import { msg, sendOne } from '../support/queue.js';

/**
 * docs/faults.md row 19 in the core: a queue named by ARN is found only in the caller's own account and
 * region. Another account's queue is answered exactly as a missing one (same code, same text),
 * nothing is stored, and a policy that names one anyway (stored before the check) moves nothing.
 */

const A = '111111111111';
const B = '222222222222';
const REGION = 'us-east-1';

function setup(): {
  store: QueueStore;
  clock: ManualClock;
  create: (account: string, name: string, region?: string) => Queue;
} {
  const clock = new ManualClock();
  const store = new QueueStore(clock);
  const create = (account: string, name: string, region = REGION): Queue =>
    store.create({ accountId: account, region, name }, {}, {}).queue;
  return { store, clock, create };
}

/** The CoreError `fn` throws, with the ARN it names replaced, so two answers can be compared. */
function refusal(fn: () => unknown, arn: string): { code: string; message: string } {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof CoreError, String(e));
    return { code: e.code, message: e.message.replaceAll(arn, '<arn>') };
  }
  assert.fail('accepted');
}

const policy = (arn: string): string => JSON.stringify({ deadLetterTargetArn: arn, maxReceiveCount: 1 });

void test("docs/faults.md row 19: Given B's queue, when B names A's existing queue (or a missing one, or one in another region) as its dead-letter target, then the same refusal and nothing stored", () => {
  const { store, create } = setup();
  const a = create(A, 'a');
  create(A, 'far', 'eu-west-1');
  const b = create(B, 'b');
  const missing = `arn:aws:sqs:${REGION}:${A}:no-such-queue`;
  const own = `arn:aws:sqs:${REGION}:${B}:no-such-queue`;
  const answers = [a.arn, missing, own, `arn:aws:sqs:eu-west-1:${A}:far`].map((arn) =>
    refusal(() => store.setAttributes(b, { RedrivePolicy: policy(arn) }), arn),
  );
  for (const answer of answers) assert.deepEqual(answer, answers[2]);
  assert.match(answers[0]?.message ?? '', /Dead letter target does not exist/);
  assert.equal(b.attributes.RedrivePolicy, undefined);
  // CreateQueue with the same policy: refused, and no queue.
  const arn = a.arn;
  assert.deepEqual(
    refusal(
      () => store.create({ accountId: B, region: REGION, name: 'b2' }, { RedrivePolicy: policy(arn) }, {}),
      arn,
    ),
    answers[2],
  );
  assert.equal(store.get(B, 'b2', REGION), undefined);
  // A queue in the same account but another region is not a target either.
  const farArn = `arn:aws:sqs:eu-west-1:${B}:b-eu`;
  create(B, 'b-eu', 'eu-west-1');
  assert.deepEqual(
    refusal(() => store.setAttributes(b, { RedrivePolicy: policy(farArn) }), farArn),
    answers[2],
  );
});

void test("docs/faults.md row 19: Given a RedriveAllowPolicy naming another account's or region's queue as a source, when set, then InvalidParameterValue whether that queue exists or not", () => {
  const { store, create } = setup();
  const a = create(A, 'a');
  const b = create(B, 'b-dlq');
  for (const arn of [a.arn, `arn:aws:sqs:${REGION}:${A}:missing`, `arn:aws:sqs:eu-west-1:${B}:b`]) {
    const allow = JSON.stringify({ redrivePermission: 'byQueue', sourceQueueArns: [arn] });
    const answer = refusal(() => store.setAttributes(b, { RedriveAllowPolicy: allow }), arn);
    assert.equal(answer.code, 'InvalidParameterValue');
    assert.match(answer.message, /Invalid value for sourceQueueArns: <arn>\./);
    assert.equal(b.attributes.RedriveAllowPolicy, undefined);
  }
  const mine = JSON.stringify({
    redrivePermission: 'byQueue',
    sourceQueueArns: [`arn:aws:sqs:${REGION}:${B}:x`],
  });
  store.setAttributes(b, { RedriveAllowPolicy: mine });
  assert.equal(b.attributes.RedriveAllowPolicy, mine);
});

void test('docs/faults.md row 19: Given a RedrivePolicy into another account stored before the check (loaded as it was), when a message goes over the count, then it is delivered as usual and never moved there', () => {
  const { store, clock, create } = setup();
  const a = create(A, 'a');
  const b = create(B, 'b');
  // Queue.setAttributes is what the loader's path applies: no store check.
  b.setAttributes({ RedrivePolicy: policy(a.arn), VisibilityTimeout: '0' }, clock.now());
  sendOne(b, msg('x', { id: 'm1', senderId: B }), clock.now());
  for (let i = 0; i < 3; i++) assert.equal(b.receive(1, undefined, clock.now()).length, 1);
  assert.equal(a.counts(clock.now()).visible, 0);
  assert.equal(store.deadLetterSources(a).length, 0);
});

void test("docs/faults.md row 19: Given A's dead-letter queue and a running task, when B starts, lists or cancels move tasks by its ARNs or handle, then ResourceNotFoundException as for a missing queue", () => {
  const { store, create } = setup();
  const dlq = create(A, 'dlq');
  const src = create(A, 'src');
  store.setAttributes(src, { RedrivePolicy: policy(dlq.arn) });
  const bDlq = create(B, 'b-dlq');
  store.setAttributes(create(B, 'b-src'), { RedrivePolicy: policy(bDlq.arn) });
  const missing = `arn:aws:sqs:${REGION}:${A}:gone`;
  const start = (source: string, dest?: string): { code: string; message: string } =>
    refusal(() => store.startMoveTask(B, source, dest, undefined, REGION), dest ?? source);
  assert.deepEqual(start(dlq.arn), start(missing));
  assert.equal(start(dlq.arn).code, 'ResourceNotFoundException');
  assert.deepEqual(start(bDlq.arn, src.arn), start(bDlq.arn, missing));
  assert.equal(start(bDlq.arn, src.arn).code, 'ResourceNotFoundException');
  assert.equal(store.moveTasks.list(bDlq.arn).length, 0);
  // The same account in another region is another home.
  assert.equal(
    refusal(() => store.startMoveTask(A, dlq.arn, undefined, undefined, 'eu-west-1'), dlq.arn).code,
    'ResourceNotFoundException',
  );

  const task = store.startMoveTask(A, dlq.arn, undefined, undefined, REGION);
  const cancel = (handle: string): { code: string; message: string } =>
    refusal(() => store.cancelMoveTask(B, handle, REGION), '');
  assert.deepEqual(cancel(task.handle), cancel(encodeTaskHandle(task.taskId, missing)));
  assert.equal(task.status, 'RUNNING');
});

void test("docs/faults.md row 19: Given messages in A's dead-letter queue whose source is B's queue, when A's task moves them back to their sources, then none goes to B", () => {
  const { store, clock, create } = setup();
  const dlq = create(A, 'dlq');
  const src = create(A, 'src');
  store.setAttributes(src, { RedrivePolicy: policy(dlq.arn) });
  const b = create(B, 'b');
  // As if dead-lettered from B by a policy stored before the check.
  const fromB = sendOne(b, msg('x', { id: 'm1', senderId: B }), clock.now());
  dlq.acceptDeadLetter(fromB, b.arn, clock.now());
  const task = store.startMoveTask(A, dlq.arn, undefined, undefined, REGION);
  assert.equal(store.stepMoveTask(task, 10), 0);
  assert.equal(task.status, 'FAILED');
  assert.equal(b.counts(clock.now()).visible, 1);
  assert.equal(dlq.counts(clock.now()).visible, 1);
});
