/**
 * --active-active with two servers embedded in this process (startServer) on a real
 * redis-server: they split the 256 shards, each answers for the other's queues (SDK v3, JSON),
 * dead letters and move tasks cross from one owner to the other (standard and FIFO), and the admin
 * API's shard routes list the map, move a shard with everything in it, and drain an instance,
 * which goes on routing.
 */
import assert from 'node:assert/strict';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ListMessageMoveTasksCommand,
  ListQueuesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  StartMessageMoveTaskCommand,
  type ListMessageMoveTasksResultEntry,
} from '@aws-sdk/client-sqs';
import type { RunningServer } from '../../src/index.js';
import { shardOf } from '../../src/shard/hash.js';
import { until } from '../support/layout-v1.js';
import { admin, shardsView, sqsAt, pairFor } from '../support/active-active.js';
import { testsRequiring } from '../support/requires.js';
import { queryOk, xmlText } from '../support/wire.js';

const { after, before, test } = testsRequiring('redis-server');
const servers = pairFor({ before, after });

void test("Given two instances, then they split the 256 shards and each answers for the other's queues", async () => {
  const [a, b] = servers as [RunningServer, RunningServer];
  const [va, vb] = [await shardsView(a), await shardsView(b)];
  const heldA = va.shards.filter((s) => s.here !== null).length;
  const heldB = vb.shards.filter((s) => s.here !== null).length;
  assert.equal(heldA + heldB, 256);
  assert.ok(heldA > 0 && heldB > 0);
  // Queues until one is owned by each instance; all made through a, then used through b.
  const urls: string[] = [];
  for (let i = 0; i < 6; i++) {
    const { QueueUrl } = await sqsAt(a).send(new CreateQueueCommand({ QueueName: `split-${i}` }));
    assert.ok(QueueUrl);
    urls.push(QueueUrl);
  }
  const owners = new Set(
    urls.map((_, i) => va.shards[shardOf('000000000000', 'us-east-1', `split-${i}`)]?.owner),
  );
  assert.equal(owners.size, 2, 'the queues have both owners');
  for (const QueueUrl of urls) await sqsAt(b).send(new SendMessageCommand({ QueueUrl, MessageBody: 'x' }));
  for (const QueueUrl of urls) {
    const got = await sqsAt(a).send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 1 }));
    assert.equal(got.Messages?.[0]?.Body, 'x');
  }
  // Half the sends went through b to a's queues (or the other way): counted as forwarded.
  // The gauge says what /admin/shards says, read around it (shards may still be settling).
  const metrics = await until(
    'the serving gauge matches the shards b serves',
    async () => {
      const text = await (await fetch(`${b.controlUrl}/metrics`)).text();
      const held = (await shardsView(b)).shards.filter((x) => x.here?.state === 'serving').length;
      return { text, held };
    },
    ({ text, held }) => Number(/^sqs_owner_shards\{state="serving"\} (\d+)$/m.exec(text)?.[1]) === held,
  ).then((r) => r.text);
  assert.ok(Number(/^sqs_forwarded_requests_total\{outcome="answered"\} (\d+)$/m.exec(metrics)?.[1]) > 0);
  assert.match(metrics, /^sqs_owner_members 2$/m);
  await until(
    'b lists every queue',
    async () => (await sqsAt(b).send(new ListQueuesCommand({ QueueNamePrefix: 'split-' }))).QueueUrls ?? [],
    (listed) => listed.length === 6,
  );
});

void test('Given a queue with messages, when its shard is moved to the other instance, then the other serves it with its messages', async () => {
  const [a, b] = servers as [RunningServer, RunningServer];
  const { QueueUrl } = await sqsAt(a).send(new CreateQueueCommand({ QueueName: 'mover' }));
  for (let i = 0; i < 5; i++) await sqsAt(a).send(new SendMessageCommand({ QueueUrl, MessageBody: `m${i}` }));
  const shard = shardOf('000000000000', 'us-east-1', 'mover');
  const before = await shardsView(a);
  const from = before.shards[shard]?.owner;
  const to = before.members.find((m) => m.id !== from)?.id;
  assert.ok(from && to);
  const moved = await admin(a, `/admin/shards/${shard}/move`, {
    method: 'POST',
    body: JSON.stringify({ to }),
  });
  assert.equal(moved.status, 202);
  const target = (await shardsView(a)).instanceId === to ? a : b;
  await until(
    'the new owner serves the shard',
    async () => (await shardsView(target)).shards[shard],
    (row) => row?.here?.state === 'serving' && row.pinnedTo === to,
  );
  const bodies: string[] = [];
  for (let i = 0; i < 5 && bodies.length < 5; i++) {
    const got = await sqsAt(a).send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }));
    for (const m of got.Messages ?? []) bodies.push(m.Body ?? '');
  }
  assert.deepEqual(bodies.sort(), ['m0', 'm1', 'm2', 'm3', 'm4']);
  const unknown = await admin(a, `/admin/shards/${shard}/move`, {
    method: 'POST',
    body: JSON.stringify({ to: 'nobody' }),
  });
  assert.equal(unknown.status, 404);
});

void test('Given a queue whose dead-letter queue another instance owns, when a message passes its maxReceiveCount, then it moves there once', async () => {
  const [a, b] = servers as [RunningServer, RunningServer];
  const v = await shardsView(a);
  const ownerOf = (name: string): string | null | undefined =>
    v.shards[shardOf('000000000000', 'us-east-1', name)]?.owner;
  let i = 0;
  while (ownerOf(`dlq-src-${i}`) === ownerOf('dlq-far')) i++;
  const { QueueUrl: dlqUrl } = await sqsAt(a).send(new CreateQueueCommand({ QueueName: 'dlq-far' }));
  assert.ok(dlqUrl);
  const dlqArn = `arn:aws:sqs:us-east-1:000000000000:dlq-far`;
  // The source's owner learns of the DLQ through the catalog mirror: retried until it does.
  const { QueueUrl } = await until(
    'the source can name the remote dead-letter queue',
    () =>
      sqsAt(b)
        .send(
          new CreateQueueCommand({
            QueueName: `dlq-src-${i}`,
            Attributes: {
              RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 1 }),
              VisibilityTimeout: '0',
            },
          }),
        )
        .catch(() => ({ QueueUrl: undefined })),
    (r) => r.QueueUrl !== undefined,
  );
  assert.ok(QueueUrl);
  const sent = await sqsAt(a).send(new SendMessageCommand({ QueueUrl, MessageBody: 'poison' }));
  const first = await sqsAt(b).send(new ReceiveMessageCommand({ QueueUrl }));
  assert.equal(first.Messages?.[0]?.MessageId, sent.MessageId);
  // Received once already: the next receive sends it to the dead-letter queue instead.
  const second = await sqsAt(a).send(new ReceiveMessageCommand({ QueueUrl }));
  assert.deepEqual(second.Messages ?? [], []);
  const moved = await until(
    'the message is in the dead-letter queue',
    async () =>
      (
        await sqsAt(b).send(
          new ReceiveMessageCommand({ QueueUrl: dlqUrl, AttributeNames: ['All'], VisibilityTimeout: 30 }),
        )
      ).Messages ?? [],
    (ms) => ms.length > 0,
  );
  assert.equal(moved.length, 1);
  assert.equal(moved[0]?.MessageId, sent.MessageId, 'the same message id');
  assert.equal(moved[0]?.Body, 'poison');
  assert.equal(
    moved[0]?.Attributes?.DeadLetterQueueSourceArn,
    `arn:aws:sqs:us-east-1:000000000000:dlq-src-${i}`,
  );
  const left = await sqsAt(a).send(new ReceiveMessageCommand({ QueueUrl }));
  assert.deepEqual(left.Messages ?? [], [], 'gone from the source');
});

/**
 * A dead-letter queue `dlq` made through a, and a source queue of the other owner whose
 * RedrivePolicy names it (maxReceiveCount 1, VisibilityTimeout 0), made through b once b's catalog
 * mirror knows the dead-letter queue; the source's name is `<stem>-<i>`.
 */
async function pairAcrossOwners(
  dlq: string,
  stem: string,
  fifo: boolean,
): Promise<{ dlqUrl: string; dlqArn: string; url: string; arn: string }> {
  const [a, b] = servers as [RunningServer, RunningServer];
  const v = await shardsView(a);
  const ownerOf = (name: string): string | null | undefined =>
    v.shards[shardOf('000000000000', 'us-east-1', name)]?.owner;
  const suffix = fifo ? '.fifo' : '';
  let i = 0;
  while (ownerOf(`${stem}-${i}${suffix}`) === ownerOf(dlq)) i++;
  const kind: Record<string, string> = fifo ? { FifoQueue: 'true' } : {};
  const { QueueUrl: dlqUrl } = await sqsAt(a).send(
    new CreateQueueCommand({ QueueName: dlq, Attributes: kind }),
  );
  assert.ok(dlqUrl);
  const dlqArn = `arn:aws:sqs:us-east-1:000000000000:${dlq}`;
  const name = `${stem}-${i}${suffix}`;
  const { QueueUrl: url } = await until(
    'the source can name the remote dead-letter queue',
    () =>
      sqsAt(b)
        .send(
          new CreateQueueCommand({
            QueueName: name,
            Attributes: {
              ...kind,
              RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 1 }),
              VisibilityTimeout: '0',
            },
          }),
        )
        .catch(() => ({ QueueUrl: undefined })),
    (r) => r.QueueUrl !== undefined,
  );
  assert.ok(url);
  return { dlqUrl, dlqArn, url, arn: `arn:aws:sqs:us-east-1:000000000000:${name}` };
}

void test("Given a FIFO queue whose FIFO dead-letter queue another instance owns, when a group's first message passes its maxReceiveCount, then it moves there once with its group, and the group goes on after it, in order", async () => {
  const [a, b] = servers as [RunningServer, RunningServer];
  const { dlqUrl, url: QueueUrl, arn } = await pairAcrossOwners('fifo-dlq-far.fifo', 'fifo-src', true);
  const first = await sqsAt(a).send(
    new SendMessageCommand({
      QueueUrl,
      MessageBody: 'poison',
      MessageGroupId: 'g',
      MessageDeduplicationId: 'p',
    }),
  );
  const second = await sqsAt(b).send(
    new SendMessageCommand({
      QueueUrl,
      MessageBody: 'next',
      MessageGroupId: 'g',
      MessageDeduplicationId: 'n',
    }),
  );
  const got = await sqsAt(b).send(new ReceiveMessageCommand({ QueueUrl }));
  assert.equal(got.Messages?.[0]?.MessageId, first.MessageId);
  // Received once already: this receive sends it away, and the group waits for it meanwhile.
  const during = await sqsAt(a).send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }));
  assert.deepEqual(during.Messages ?? [], [], 'neither the message sent away nor the one behind it');
  const moved = await until(
    'the message is in the dead-letter queue',
    async () =>
      (
        await sqsAt(b).send(
          new ReceiveMessageCommand({
            QueueUrl: dlqUrl,
            MessageSystemAttributeNames: ['All'],
            VisibilityTimeout: 30,
          }),
        )
      ).Messages ?? [],
    (ms) => ms.length > 0,
  );
  assert.equal(moved.length, 1);
  const m = moved[0];
  assert.equal(m?.MessageId, first.MessageId, 'the same message id');
  assert.equal(m?.Body, 'poison');
  assert.equal(m?.Attributes?.MessageGroupId, 'g');
  assert.equal(m?.Attributes?.DeadLetterQueueSourceArn, arn);
  // As within one owner: the dead-letter queue's own sequence number, the message id as dedup id.
  assert.equal(m?.Attributes?.MessageDeduplicationId, first.MessageId);
  assert.ok(
    m?.Attributes?.SequenceNumber !== undefined && m.Attributes.SequenceNumber !== first.SequenceNumber,
  );
  const after = await until(
    'the group goes on',
    async () =>
      (await sqsAt(a).send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }))).Messages ?? [],
    (ms) => ms.length > 0,
  );
  assert.deepEqual(
    after.map((x) => x.MessageId),
    [second.MessageId],
  );
});

void test('Given a dead-letter queue whose source queue another instance owns, when a move task (Query, with a rate) sends its messages back, then each arrives there once as a new message and ListMessageMoveTasks (JSON) counts them', async () => {
  const [a, b] = servers as [RunningServer, RunningServer];
  const { dlqUrl, dlqArn, url: QueueUrl } = await pairAcrossOwners('move-dlq-far', 'move-src', false);
  const sent: string[] = [];
  for (let n = 0; n < 3; n++) {
    const r = await sqsAt(a).send(new SendMessageCommand({ QueueUrl, MessageBody: `m${n}` }));
    assert.ok(r.MessageId);
    sent.push(r.MessageId);
  }
  // Each received once, then sent to the dead-letter queue by the receives after.
  await deadLettered(b, QueueUrl, a, dlqUrl, 3);
  const started = await queryOk(b.url, {
    Action: 'StartMessageMoveTask',
    SourceArn: dlqArn,
    MaxNumberOfMessagesPerSecond: '10',
  });
  assert.ok(xmlText(started, 'TaskHandle'));
  const tasks = await until(
    'the task completes',
    async () => (await sqsAt(a).send(new ListMessageMoveTasksCommand({ SourceArn: dlqArn }))).Results ?? [],
    (r) => r[0]?.Status !== 'RUNNING',
  );
  assert.equal(tasks[0]?.Status, 'COMPLETED');
  assert.equal(tasks[0]?.ApproximateNumberOfMessagesMoved, 3);
  assert.equal(tasks[0]?.ApproximateNumberOfMessagesToMove, 3);
  assert.equal(tasks[0]?.MaxNumberOfMessagesPerSecond, 10);
  const back = await sqsAt(b).send(
    new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 30 }),
  );
  assert.deepEqual((back.Messages ?? []).map((m) => m.Body).sort(), ['m0', 'm1', 'm2']);
  for (const m of back.Messages ?? [])
    assert.ok(!sent.includes(m.MessageId ?? ''), 'redriven: a new message id');
  const left = await sqsAt(a).send(
    new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['All'] }),
  );
  assert.equal(left.Attributes?.ApproximateNumberOfMessages, '0');
  assert.equal(left.Attributes?.ApproximateNumberOfMessagesNotVisible, '0');
});

void test("Given a move task across owners running at one message a second, when its dead-letter queue's shard moves to the other instance mid-task, then the new owner goes on and every message arrives once", async () => {
  const [a, b] = servers as [RunningServer, RunningServer];
  const { dlqUrl, dlqArn, url: QueueUrl } = await pairAcrossOwners('mid-dlq', 'mid-src', false);
  const bodies = ['m0', 'm1', 'm2', 'm3'];
  for (const MessageBody of bodies) await sqsAt(a).send(new SendMessageCommand({ QueueUrl, MessageBody }));
  await deadLettered(b, QueueUrl, a, dlqUrl, 4);
  await sqsAt(a).send(
    new StartMessageMoveTaskCommand({ SourceArn: dlqArn, MaxNumberOfMessagesPerSecond: 1 }),
  );
  const list = async (): Promise<ListMessageMoveTasksResultEntry[]> =>
    (await sqsAt(b).send(new ListMessageMoveTasksCommand({ SourceArn: dlqArn }))).Results ?? [];
  await until('one message moved', list, (r) => (r[0]?.ApproximateNumberOfMessagesMoved ?? 0) >= 1);

  const shard = shardOf('000000000000', 'us-east-1', 'mid-dlq');
  const v = await shardsView(a);
  const to = v.members.find((m) => m.id !== v.shards[shard]?.owner)?.id;
  assert.ok(to);
  const moved = await admin(a, `/admin/shards/${shard}/move`, {
    method: 'POST',
    body: JSON.stringify({ to }),
  });
  assert.equal(moved.status, 202);
  const tasks = await until(
    'the task completes at the new owner',
    list,
    (r) => r[0]?.Status !== 'RUNNING',
    20_000,
  );
  assert.equal(tasks[0]?.Status, 'COMPLETED');
  assert.equal(tasks[0]?.ApproximateNumberOfMessagesMoved, 4);
  assert.equal((await shardsView(a)).shards[shard]?.owner, to, 'the shard did change hands');

  const got: string[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await sqsAt(a).send(
      new ReceiveMessageCommand({
        QueueUrl,
        MaxNumberOfMessages: 10,
        VisibilityTimeout: 30,
        WaitTimeSeconds: 1,
      }),
    );
    for (const m of r.Messages ?? []) got.push(m.Body ?? '');
  }
  assert.deepEqual(got.sort(), bodies, 'each once');
  const left = await sqsAt(b).send(
    new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['All'] }),
  );
  assert.equal(left.Attributes?.ApproximateNumberOfMessages, '0');
  assert.equal(left.Attributes?.ApproximateNumberOfMessagesNotVisible, '0');
});

void test('Given an instance drained, then the other holds every shard and the drained one still answers by forwarding', async () => {
  const [a, b] = servers as [RunningServer, RunningServer];
  const drained = await admin(b, '/admin/shards/drain', { method: 'POST' });
  assert.equal(drained.status, 200);
  await until(
    'a holds all 256 shards',
    async () => (await shardsView(a)).shards.filter((s) => s.here?.state === 'serving').length,
    (n) => n === 256,
    20_000,
  );
  assert.equal((await shardsView(b)).shards.filter((s) => s.here !== null).length, 0);
  const { QueueUrl } = await sqsAt(b).send(new CreateQueueCommand({ QueueName: 'after-drain' }));
  await sqsAt(b).send(new SendMessageCommand({ QueueUrl, MessageBody: 'routed' }));
  const got = await sqsAt(a).send(new ReceiveMessageCommand({ QueueUrl }));
  assert.equal(got.Messages?.[0]?.Body, 'routed');
});

/**
 * Receives from the source (maxReceiveCount 1) through `via` until the dead-letter queue, read
 * through `at`, holds `count` messages.
 */
async function deadLettered(
  via: RunningServer,
  QueueUrl: string,
  at: RunningServer,
  dlqUrl: string,
  count: number,
): Promise<void> {
  await until(
    'every message is in the dead-letter queue',
    async () => {
      await sqsAt(via).send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }));
      const attrs = await sqsAt(at).send(
        new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
      );
      return Number(attrs.Attributes?.ApproximateNumberOfMessages);
    },
    (n) => n === count,
  );
}
