/**
 * routeOf (src/owners/route.ts) against the actions themselves: for every action and every way of
 * naming a queue (other accounts under anyAccount, region-qualified URLs, FIFO names, GetQueueUrl's
 * QueueOwnerAWSAccountId, task handles), the shard routeOf gives is the `Queue.shard` of the queue
 * the action, run on a real in-memory store, acts on. A request routeOf gives no shard must be one
 * whose answer no store can change: it fails alike on the store holding every queue and on an
 * empty one.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ManualClock } from '../../src/core/clock.js';
import type { Queue } from '../../src/core/queue.js';
import { routeOf, type RouteContext } from '../../src/owners/route.js';
import { shardOf } from '../../src/shard/hash.js';
import { actions } from '../../src/sqs/actions/index.js';
import { SqsError } from '../../src/sqs/errors.js';
import { actionNames, type ActionName } from '../../src/sqs/model.generated.js';
import { queueUrlOf, type Action, type RequestContext, type SqsServices } from '../../src/sqs/service.js';
import { memoryServices } from '../support/services.js';

const A = '111111111111';
const B = '222222222222';
const HOME = 'us-east-1';
const AWAY = 'eu-west-1';
const BASE = 'http://localhost:4100';

/** Every queue of the fixture, by `<account>/<region>/<name>`: one name in 2 accounts and 2 regions. */
interface Fixture {
  readonly svc: SqsServices;
  readonly queue: (accountId: string, region: string, name: string) => Queue;
}

function fixture(): Fixture {
  const svc = memoryServices(undefined, new ManualClock());
  for (const accountId of [A, B]) {
    for (const region of [HOME, AWAY]) {
      const id = (name: string): { accountId: string; region: string; name: string } => ({
        accountId,
        region,
        name,
      });
      const dlq = svc.store.create(id('dlq'), {}, {}).queue;
      const RedrivePolicy = JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 5 });
      svc.store.create(id('q'), { RedrivePolicy }, {});
      svc.store.create(id('q.fifo'), { FifoQueue: 'true' }, {});
    }
  }
  const queue = (accountId: string, region: string, name: string): Queue => {
    const q = svc.store.get(accountId, name, region);
    assert.ok(q !== undefined, `${accountId}/${region}/${name} is in the fixture`);
    return q;
  };
  return { svc, queue };
}

function close(svc: SqsServices): void {
  svc.poller.closeAll();
  svc.mover.close();
}

interface Caller {
  readonly accountId: string;
  readonly region: string;
  readonly anyAccount?: boolean;
}

function context(caller: Caller): RequestContext & RouteContext {
  return {
    requestId: 'r',
    accountId: caller.accountId,
    region: caller.region,
    defaultRegion: HOME,
    baseUrl: BASE,
    ...(caller.anyAccount === true ? { anyAccount: true } : {}),
    senderId: caller.accountId,
    onAbort: () => undefined,
  };
}

async function run(svc: SqsServices, action: ActionName, caller: Caller, input: unknown) {
  const ctx = context(caller);
  const output: unknown = await (actions[action] as Action<ActionName>)(svc, ctx, input as never);
  return { ctx, output };
}

/** The error code the action fails with, or 'ok'. */
async function outcome(
  svc: SqsServices,
  action: ActionName,
  caller: Caller,
  input: unknown,
): Promise<string> {
  try {
    await run(svc, action, caller, input);
    return 'ok';
  } catch (e) {
    if (e instanceof SqsError) return e.errorName;
    throw e;
  }
}

function owner(q: Queue): Caller {
  return { accountId: q.accountId, region: q.region };
}

/** The URL the action's own replies give the queue. */
function urlOf(q: Queue): string {
  return queueUrlOf(BASE, q, HOME);
}

/** A receipt handle of a message of q, sent and received by its owner. */
async function receiptOf(svc: SqsServices, q: Queue): Promise<string> {
  const fifo = q.fifo ? { MessageGroupId: 'g', MessageDeduplicationId: 'd' } : {};
  await run(svc, 'SendMessage', owner(q), { QueueUrl: urlOf(q), MessageBody: 'm', ...fifo });
  const { output } = await run(svc, 'ReceiveMessage', owner(q), { QueueUrl: urlOf(q) });
  const handle = (output as { Messages?: { ReceiptHandle?: string }[] }).Messages?.[0]?.ReceiptHandle;
  assert.ok(handle !== undefined);
  return handle;
}

type UrlAction = Exclude<
  ActionName,
  | 'CreateQueue'
  | 'GetQueueUrl'
  | 'ListQueues'
  | 'StartMessageMoveTask'
  | 'ListMessageMoveTasks'
  | 'CancelMessageMoveTask'
>;

/** A request of each QueueUrl action that succeeds on q (its setup done by q's owner). */
const byUrl: { readonly [A in UrlAction]: (svc: SqsServices, q: Queue, url: string) => Promise<object> } = {
  AddPermission: (_svc, _q, QueueUrl) =>
    Promise.resolve({ QueueUrl, Label: 'l', AWSAccountIds: [B], Actions: ['SendMessage'] }),
  RemovePermission: async (svc, q, QueueUrl) => {
    await run(svc, 'AddPermission', owner(q), {
      QueueUrl: urlOf(q),
      Label: 'l',
      AWSAccountIds: [B],
      Actions: ['SendMessage'],
    });
    return { QueueUrl, Label: 'l' };
  },
  ChangeMessageVisibility: async (svc, q, QueueUrl) => ({
    QueueUrl,
    ReceiptHandle: await receiptOf(svc, q),
    VisibilityTimeout: 10,
  }),
  ChangeMessageVisibilityBatch: async (svc, q, QueueUrl) => ({
    QueueUrl,
    Entries: [{ Id: 'a', ReceiptHandle: await receiptOf(svc, q), VisibilityTimeout: 10 }],
  }),
  DeleteMessage: async (svc, q, QueueUrl) => ({ QueueUrl, ReceiptHandle: await receiptOf(svc, q) }),
  DeleteMessageBatch: async (svc, q, QueueUrl) => ({
    QueueUrl,
    Entries: [{ Id: 'a', ReceiptHandle: await receiptOf(svc, q) }],
  }),
  DeleteQueue: (_svc, _q, QueueUrl) => Promise.resolve({ QueueUrl }),
  GetQueueAttributes: (_svc, _q, QueueUrl) => Promise.resolve({ QueueUrl, AttributeNames: ['All'] }),
  ListDeadLetterSourceQueues: (_svc, _q, QueueUrl) => Promise.resolve({ QueueUrl }),
  ListQueueTags: (_svc, _q, QueueUrl) => Promise.resolve({ QueueUrl }),
  PurgeQueue: (_svc, _q, QueueUrl) => Promise.resolve({ QueueUrl }),
  ReceiveMessage: (_svc, _q, QueueUrl) => Promise.resolve({ QueueUrl }),
  SendMessage: (_svc, q, QueueUrl) =>
    Promise.resolve({
      QueueUrl,
      MessageBody: 'm',
      ...(q.fifo ? { MessageGroupId: 'g', MessageDeduplicationId: 'd' } : {}),
    }),
  SendMessageBatch: (_svc, q, QueueUrl) =>
    Promise.resolve({
      QueueUrl,
      Entries: [
        {
          Id: 'a',
          MessageBody: 'm',
          ...(q.fifo ? { MessageGroupId: 'g', MessageDeduplicationId: 'd' } : {}),
        },
      ],
    }),
  SetQueueAttributes: (_svc, _q, QueueUrl) =>
    Promise.resolve({ QueueUrl, Attributes: { VisibilityTimeout: '31' } }),
  TagQueue: (_svc, _q, QueueUrl) => Promise.resolve({ QueueUrl, Tags: { k: 'v' } }),
  UntagQueue: (_svc, _q, QueueUrl) => Promise.resolve({ QueueUrl, TagKeys: ['k'] }),
};
const urlActions = Object.keys(byUrl) as UrlAction[];

/** A URL, who sends it, and the queue (account, region, name) the actions find by it. */
const resolvable: { label: string; url: string; caller: Caller; queue: [string, string, string] }[] = [
  {
    label: 'its own URL',
    url: `${BASE}/${A}/q`,
    caller: { accountId: A, region: HOME },
    queue: [A, HOME, 'q'],
  },
  {
    label: 'a FIFO queue behind another host, with a trailing slash',
    url: `https://proxy.example/${A}/q.fifo/`,
    caller: { accountId: A, region: HOME },
    queue: [A, HOME, 'q.fifo'],
  },
  {
    label: 'a path without a host',
    url: `/${A}/dlq`,
    caller: { accountId: A, region: HOME },
    queue: [A, HOME, 'dlq'],
  },
  {
    label: "another account's queue, anyAccount",
    url: `${BASE}/${B}/q`,
    caller: { accountId: A, region: HOME, anyAccount: true },
    queue: [B, HOME, 'q'],
  },
  {
    label: 'a region-qualified URL, from a caller in that region',
    url: `${BASE}/${AWAY}/${A}/q`,
    caller: { accountId: A, region: AWAY },
    queue: [A, AWAY, 'q'],
  },
  {
    label: "another account's FIFO queue in another region, anyAccount",
    url: `${BASE}/${AWAY}/${B}/q.fifo`,
    caller: { accountId: A, region: AWAY, anyAccount: true },
    queue: [B, AWAY, 'q.fifo'],
  },
  {
    label: 'the default region spelt out',
    url: `${BASE}/${HOME}/${A}/q`,
    caller: { accountId: A, region: HOME },
    queue: [A, HOME, 'q'],
  },
  {
    label: 'a bare name, from a caller in another region',
    url: `${BASE}/q.fifo`,
    caller: { accountId: B, region: AWAY },
    queue: [B, AWAY, 'q.fifo'],
  },
];

/** References every action refuses before it looks in a store. */
const unresolvable: { label: string; url: unknown; caller: Caller }[] = [
  {
    label: "another account's queue, without anyAccount",
    url: `${BASE}/${B}/q`,
    caller: { accountId: A, region: HOME },
  },
  {
    label: "a URL without a region (the server's), from a caller in another",
    url: `${BASE}/${A}/q`,
    caller: { accountId: A, region: AWAY, anyAccount: true },
  },
  {
    label: "another region's URL, from a caller in the server's",
    url: `${BASE}/${AWAY}/${A}/q`,
    caller: { accountId: A, region: HOME, anyAccount: true },
  },
  { label: 'a host without a path', url: 'http://localhost:4100', caller: { accountId: A, region: HOME } },
  { label: 'only slashes', url: '///', caller: { accountId: A, region: HOME } },
  { label: 'an empty QueueUrl', url: '', caller: { accountId: A, region: HOME } },
  { label: 'no QueueUrl', url: undefined, caller: { accountId: A, region: HOME } },
];

void test('Given the fixture, then its queues are in 12 different shards (so a wrong account or region shows)', () => {
  const { svc } = fixture();
  try {
    const shards = new Set([...svc.store.all()].map((q) => q.shard));
    assert.equal(svc.store.size, 12);
    assert.equal(shards.size, 12);
  } finally {
    close(svc);
  }
});

for (const action of urlActions) {
  for (const r of resolvable) {
    void test(`${action} by ${r.label}: routeOf gives the shard of the queue the action acts on`, async () => {
      const { svc, queue } = fixture();
      try {
        const q = queue(...r.queue);
        const input = await byUrl[action](svc, q, r.url);
        const route = routeOf(action, input, context(r.caller));
        const { ctx } = await run(svc, action, r.caller, input);
        // resolveQueue sets the shard of the queue it found.
        assert.equal(ctx.shard, q.shard);
        assert.equal(route, q.shard);
      } finally {
        close(svc);
      }
    });
  }

  for (const r of unresolvable) {
    void test(`${action} by ${r.label}: no shard, and the same error with or without the queues`, async () => {
      const { svc } = fixture();
      const empty = memoryServices(undefined, new ManualClock());
      try {
        const input = await byUrl[action](svc, svc.store.get(A, 'q', HOME) as Queue, r.url as string);
        assert.equal(routeOf(action, input, context(r.caller)), undefined);
        const here = await outcome(svc, action, r.caller, input);
        assert.notEqual(here, 'ok');
        assert.equal(await outcome(empty, action, r.caller, input), here);
      } finally {
        close(svc);
        close(empty);
      }
    });
  }
}

void test("Given a queue that does not exist, when it is named by a well-formed URL, then routeOf gives its name's shard: its owner says it does not exist", async () => {
  const { svc } = fixture();
  try {
    const caller = { accountId: B, region: AWAY };
    const input = { QueueUrl: `${BASE}/${AWAY}/${B}/nothing` };
    assert.equal(routeOf('GetQueueAttributes', input, context(caller)), shardOf(B, AWAY, 'nothing'));
    assert.equal(await outcome(svc, 'GetQueueAttributes', caller, input), 'QueueDoesNotExist');
  } finally {
    close(svc);
  }
});

void test('Given a dead-letter queue, when ListDeadLetterSourceQueues names it, then routeOf gives the DLQ’s shard, not its sources’', async () => {
  const { svc, queue } = fixture();
  try {
    const dlq = queue(B, AWAY, 'dlq');
    const caller = { accountId: B, region: AWAY };
    const input = { QueueUrl: urlOf(dlq) };
    const { output } = await run(svc, 'ListDeadLetterSourceQueues', caller, input);
    assert.deepEqual((output as { queueUrls: string[] }).queueUrls, [urlOf(queue(B, AWAY, 'q'))]);
    assert.notEqual(queue(B, AWAY, 'q').shard, dlq.shard);
    assert.equal(routeOf('ListDeadLetterSourceQueues', input, context(caller)), dlq.shard);
  } finally {
    close(svc);
  }
});

const created: { label: string; caller: Caller; input: object; queue: [string, string, string] }[] = [
  {
    label: 'a queue',
    caller: { accountId: A, region: HOME },
    input: { QueueName: 'new' },
    queue: [A, HOME, 'new'],
  },
  {
    label: 'a FIFO queue in another region',
    caller: { accountId: B, region: AWAY, anyAccount: true },
    input: { QueueName: 'new.fifo', Attributes: { FifoQueue: 'true' } },
    queue: [B, AWAY, 'new.fifo'],
  },
  {
    label: 'a queue that exists already',
    caller: { accountId: B, region: HOME },
    input: { QueueName: 'q' },
    queue: [B, HOME, 'q'],
  },
];

for (const c of created) {
  void test(`CreateQueue of ${c.label}: routeOf gives the shard of the queue created (or found)`, async () => {
    const { svc, queue } = fixture();
    try {
      const route = routeOf('CreateQueue', c.input, context(c.caller));
      const { ctx, output } = await run(svc, 'CreateQueue', c.caller, c.input);
      const q = queue(...c.queue);
      assert.equal((output as { QueueUrl: string }).QueueUrl, urlOf(q));
      assert.equal(ctx.shard, q.shard);
      assert.equal(route, q.shard);
    } finally {
      close(svc);
    }
  });
}

const found: { label: string; caller: Caller; input: object; queue: [string, string, string] }[] = [
  {
    label: 'its own queue',
    caller: { accountId: A, region: HOME },
    input: { QueueName: 'q' },
    queue: [A, HOME, 'q'],
  },
  {
    label: 'its own queue, its account given',
    caller: { accountId: A, region: AWAY },
    input: { QueueName: 'q.fifo', QueueOwnerAWSAccountId: A },
    queue: [A, AWAY, 'q.fifo'],
  },
  {
    label: "another account's queue, anyAccount",
    caller: { accountId: A, region: HOME, anyAccount: true },
    input: { QueueName: 'q', QueueOwnerAWSAccountId: B },
    queue: [B, HOME, 'q'],
  },
  {
    label: "another account's FIFO queue in another region, anyAccount",
    caller: { accountId: A, region: AWAY, anyAccount: true },
    input: { QueueName: 'q.fifo', QueueOwnerAWSAccountId: B },
    queue: [B, AWAY, 'q.fifo'],
  },
];

for (const c of found) {
  void test(`GetQueueUrl of ${c.label}: routeOf gives the shard of the queue whose URL it answers`, async () => {
    const { svc, queue } = fixture();
    try {
      const q = queue(...c.queue);
      const { output } = await run(svc, 'GetQueueUrl', c.caller, c.input);
      assert.equal((output as { QueueUrl: string }).QueueUrl, urlOf(q));
      assert.equal(routeOf('GetQueueUrl', c.input, context(c.caller)), q.shard);
    } finally {
      close(svc);
    }
  });
}

/** A running move task on the DLQ of `caller`'s account and region; its handle. */
async function startTask(svc: SqsServices, dlq: Queue): Promise<string> {
  const { output } = await run(svc, 'StartMessageMoveTask', owner(dlq), { SourceArn: dlq.arn });
  return (output as { TaskHandle: string }).TaskHandle;
}

for (const [accountId, region] of [
  [A, HOME],
  [B, AWAY],
] as const) {
  const caller = { accountId, region, anyAccount: true };

  void test(`StartMessageMoveTask in ${accountId} ${region}: routeOf gives the source DLQ's shard`, async () => {
    const { svc, queue } = fixture();
    try {
      const dlq = queue(accountId, region, 'dlq');
      const input = { SourceArn: dlq.arn };
      const route = routeOf('StartMessageMoveTask', input, context(caller));
      await run(svc, 'StartMessageMoveTask', caller, input);
      assert.equal(svc.store.moveTasks.active(dlq.arn)?.status, 'RUNNING');
      assert.equal(route, dlq.shard);
    } finally {
      close(svc);
    }
  });

  void test(`ListMessageMoveTasks in ${accountId} ${region}: routeOf gives the source DLQ's shard`, async () => {
    const { svc, queue } = fixture();
    try {
      const dlq = queue(accountId, region, 'dlq');
      await startTask(svc, dlq);
      const input = { SourceArn: dlq.arn };
      const { output } = await run(svc, 'ListMessageMoveTasks', caller, input);
      assert.equal((output as { Results: { SourceArn: string }[] }).Results[0]?.SourceArn, dlq.arn);
      assert.equal(routeOf('ListMessageMoveTasks', input, context(caller)), dlq.shard);
    } finally {
      close(svc);
    }
  });

  void test(`CancelMessageMoveTask in ${accountId} ${region}: routeOf gives the shard of the source DLQ in the handle`, async () => {
    const { svc, queue } = fixture();
    try {
      const dlq = queue(accountId, region, 'dlq');
      const input = { TaskHandle: await startTask(svc, dlq) };
      await run(svc, 'CancelMessageMoveTask', caller, input);
      assert.equal(svc.store.moveTasks.list(dlq.arn)[0]?.status, 'CANCELLING');
      assert.equal(routeOf('CancelMessageMoveTask', input, context(caller)), dlq.shard);
    } finally {
      close(svc);
    }
  });
}

const otherHandle = Buffer.from(
  JSON.stringify({ taskId: 't', sourceArn: `arn:aws:sqs:${HOME}:${B}:dlq` }),
).toString('base64');

/** Requests whose queue reference is malformed or not the caller's to name. */
const refused: { label: string; action: ActionName; caller: Caller; input: object }[] = [
  {
    label: 'an empty name',
    action: 'CreateQueue',
    caller: { accountId: A, region: HOME },
    input: { QueueName: '' },
  },
  {
    label: 'an empty name',
    action: 'GetQueueUrl',
    caller: { accountId: A, region: HOME },
    input: { QueueName: '' },
  },
  {
    label: "another account's queue, without anyAccount",
    action: 'GetQueueUrl',
    caller: { accountId: A, region: HOME },
    input: { QueueName: 'q', QueueOwnerAWSAccountId: B },
  },
  {
    label: 'a source that is no ARN',
    action: 'StartMessageMoveTask',
    caller: { accountId: A, region: HOME },
    input: { SourceArn: 'dlq' },
  },
  {
    label: "another account's source, even under anyAccount",
    action: 'StartMessageMoveTask',
    caller: { accountId: A, region: HOME, anyAccount: true },
    input: { SourceArn: `arn:aws:sqs:${HOME}:${B}:dlq` },
  },
  {
    label: "another region's source",
    action: 'ListMessageMoveTasks',
    caller: { accountId: A, region: HOME },
    input: { SourceArn: `arn:aws:sqs:${AWAY}:${A}:dlq` },
  },
  {
    label: 'a handle that is no handle',
    action: 'CancelMessageMoveTask',
    caller: { accountId: A, region: HOME },
    input: { TaskHandle: 'not-a-handle' },
  },
  {
    label: "a handle of another account's task, under anyAccount",
    action: 'CancelMessageMoveTask',
    caller: { accountId: A, region: HOME, anyAccount: true },
    input: { TaskHandle: otherHandle },
  },
];

for (const c of refused) {
  void test(`${c.action} with ${c.label}: no shard, and the same error with or without the queues`, async () => {
    const { svc } = fixture();
    const empty = memoryServices(undefined, new ManualClock());
    try {
      assert.equal(routeOf(c.action, c.input, context(c.caller)), undefined);
      const here = await outcome(svc, c.action, c.caller, c.input);
      assert.notEqual(here, 'ok');
      assert.equal(await outcome(empty, c.action, c.caller, c.input), here);
    } finally {
      close(svc);
      close(empty);
    }
  });
}

void test('ListQueues names no queue: no shard, whatever its prefix', () => {
  const ctx = context({ accountId: A, region: HOME });
  assert.equal(routeOf('ListQueues', {}, ctx), undefined);
  assert.equal(routeOf('ListQueues', { QueueNamePrefix: 'q' }, ctx), undefined);
});

void test('Given a name with a lone surrogate (it has no hash), then no shard, and no queue is found by it', async () => {
  const { svc } = fixture();
  try {
    const caller = { accountId: A, region: HOME };
    const input = { QueueUrl: `${BASE}/${A}/q\ud800` };
    assert.equal(routeOf('GetQueueAttributes', input, context(caller)), undefined);
    assert.equal(await outcome(svc, 'GetQueueAttributes', caller, input), 'QueueDoesNotExist');
  } finally {
    close(svc);
  }
});

void test('Every action of the model is routed by one of the tests above', () => {
  const tested = new Set<string>([
    ...urlActions,
    'CreateQueue',
    'GetQueueUrl',
    'ListQueues',
    'StartMessageMoveTask',
    'ListMessageMoveTasks',
    'CancelMessageMoveTask',
  ]);
  assert.deepEqual([...tested].sort(), [...actionNames].sort());
});
