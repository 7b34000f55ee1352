/**
 * Dead-letter queues through @aws-sdk/client-sqs (JSON 1.0): RedrivePolicy checks, the move at
 * maxReceiveCount + 1 receives and what the moved message keeps, RedriveAllowPolicy, and
 * ListDeadLetterSourceQueues with its pagination.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ListDeadLetterSourceQueuesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
} from '@aws-sdk/client-sqs';
import { expectSdkError } from '../support/assertions.js';
import { uniqueName } from '../support/server.js';
import { redrivePolicy, sharedServer } from '../support/sqs.js';

const sqs = sharedServer();

const queue = (name: string, attributes?: Record<string, string>): Promise<{ url: string; arn: string }> =>
  sqs.createQueueWithArn(name, attributes);

const policy = redrivePolicy;

/** SetQueueAttributes with this RedrivePolicy must fail with InvalidParameterValue (400). */
const redriveRefused = (url: string, redrive: string): Promise<void> =>
  expectSdkError(
    sqs.client.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: { RedrivePolicy: redrive } })),
    { name: 'InvalidParameterValue', code: 'InvalidParameterValue', status: 400 },
  );

async function receiveOnce(url: string): Promise<number> {
  const out = await sqs.client.send(
    new ReceiveMessageCommand({ QueueUrl: url, VisibilityTimeout: 0, MaxNumberOfMessages: 10 }),
  );
  return out.Messages?.length ?? 0;
}

describe('RedrivePolicy', () => {
  test('Given a RedrivePolicy naming a queue that does not exist, When set, Then InvalidParameterValue (400)', async () => {
    const src = await queue(uniqueName('src'));
    const missing = src.arn.replace(/[^:]+$/, uniqueName('missing'));
    await redriveRefused(src.url, policy(missing, 3));
  });

  test('Given CreateQueue with a RedrivePolicy naming a missing queue, When called, Then InvalidParameterValue (400)', async () => {
    const dlq = await queue(uniqueName('dlq'));
    const missing = dlq.arn.replace(/[^:]+$/, uniqueName('missing'));
    await expectSdkError(
      sqs.client.send(
        new CreateQueueCommand({
          QueueName: uniqueName('src'),
          Attributes: { RedrivePolicy: policy(missing, 3) },
        }),
      ),
      { name: 'InvalidParameterValue', code: 'InvalidParameterValue', status: 400 },
    );
  });

  test('Given maxReceiveCount 0, When set, Then InvalidParameterValue (400)', async () => {
    const dlq = await queue(uniqueName('dlq'));
    const src = await queue(uniqueName('src'));
    await redriveRefused(src.url, policy(dlq.arn, 0));
  });

  test('Given a FIFO source, When its RedrivePolicy names a standard queue, Then InvalidParameterValue (400)', async () => {
    const dlq = await queue(uniqueName('dlq'));
    const src = await queue(`${uniqueName('src')}.fifo`, { FifoQueue: 'true' });
    await redriveRefused(src.url, policy(dlq.arn, 3));
  });

  test('Given a RedrivePolicy with maxReceiveCount as a string, When read back, Then it is in AWS form', async () => {
    const dlq = await queue(uniqueName('dlq'));
    const src = await queue(uniqueName('src'), {
      RedrivePolicy: JSON.stringify({ maxReceiveCount: '4', deadLetterTargetArn: dlq.arn }),
    });
    const out = await sqs.client.send(
      new GetQueueAttributesCommand({ QueueUrl: src.url, AttributeNames: ['RedrivePolicy'] }),
    );
    assert.equal(out.Attributes?.RedrivePolicy, `{"deadLetterTargetArn":"${dlq.arn}","maxReceiveCount":4}`);
  });
});

describe('the move to the dead-letter queue', () => {
  test('Given maxReceiveCount 2, When a message is received three times, Then it is delivered twice and then found in the DLQ with its id, body, SentTimestamp and source', async () => {
    const dlq = await queue(uniqueName('dlq'));
    const src = await queue(uniqueName('src'), { RedrivePolicy: policy(dlq.arn, 2) });
    const sent = await sqs.client.send(
      new SendMessageCommand({
        QueueUrl: src.url,
        MessageBody: 'poison',
        MessageAttributes: { kind: { DataType: 'String', StringValue: 'bad' } },
      }),
    );
    assert.equal(await receiveOnce(src.url), 1);
    assert.equal(await receiveOnce(src.url), 1);
    const first = await sqs.client.send(
      new ReceiveMessageCommand({
        QueueUrl: src.url,
        VisibilityTimeout: 0,
        MessageSystemAttributeNames: ['SentTimestamp'],
      }),
    );
    assert.equal(first.Messages, undefined, 'the third receive moved it instead of delivering it');
    const out = await sqs.client.send(
      new ReceiveMessageCommand({
        QueueUrl: dlq.url,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
    const [m] = out.Messages ?? [];
    assert.ok(m);
    assert.equal(m.MessageId, sent.MessageId);
    assert.equal(m.Body, 'poison');
    assert.equal(m.MessageAttributes?.kind?.StringValue, 'bad');
    assert.equal(m.MD5OfMessageAttributes, sent.MD5OfMessageAttributes);
    assert.equal(m.Attributes?.DeadLetterQueueSourceArn, src.arn);
    assert.ok(Number(m.Attributes?.SentTimestamp) <= Date.now());
  });

  test('Given a DLQ with RedriveAllowPolicy denyAll, When a source names it, Then InvalidParameterValue (400)', async () => {
    const dlq = await queue(uniqueName('dlq'), { RedriveAllowPolicy: '{"redrivePermission":"denyAll"}' });
    const src = await queue(uniqueName('src'));
    await redriveRefused(src.url, policy(dlq.arn, 3));
  });

  test('Given a DLQ allowing byQueue one source, When that source names it, Then the policy is set', async () => {
    const srcName = uniqueName('src');
    const src = await queue(srcName);
    const dlq = await queue(uniqueName('dlq'), {
      RedriveAllowPolicy: JSON.stringify({ redrivePermission: 'byQueue', sourceQueueArns: [src.arn] }),
    });
    await sqs.client.send(
      new SetQueueAttributesCommand({ QueueUrl: src.url, Attributes: { RedrivePolicy: policy(dlq.arn, 3) } }),
    );
    const out = await sqs.client.send(
      new GetQueueAttributesCommand({ QueueUrl: src.url, AttributeNames: ['All'] }),
    );
    assert.ok(out.Attributes?.RedrivePolicy?.includes(dlq.arn));
  });

  test('Given a RedriveAllowPolicy byQueue with 11 source ARNs, When set, Then InvalidParameterValue (400)', async () => {
    const dlq = await queue(uniqueName('dlq'));
    const arns = Array.from({ length: 11 }, (_, i) => dlq.arn.replace(/[^:]+$/, `s${i}`));
    await expectSdkError(
      sqs.client.send(
        new SetQueueAttributesCommand({
          QueueUrl: dlq.url,
          Attributes: {
            RedriveAllowPolicy: JSON.stringify({ redrivePermission: 'byQueue', sourceQueueArns: arns }),
          },
        }),
      ),
      { name: 'InvalidParameterValue', code: 'InvalidParameterValue', status: 400 },
    );
  });
});

describe('ListDeadLetterSourceQueues', () => {
  test('Given three sources of a DLQ, When listed one at a time, Then the pages hold all three in name order, with NextToken between', async () => {
    const dlq = await queue(uniqueName('dlq'));
    const base = uniqueName('srcs');
    const names = [`${base}-a`, `${base}-b`, `${base}-c`];
    for (const n of names.slice().reverse()) await queue(n, { RedrivePolicy: policy(dlq.arn, 3) });
    await queue(uniqueName('unrelated'));
    const urls: string[] = [];
    let token: string | undefined;
    for (let page = 0; page < 5; page++) {
      const out = await sqs.client.send(
        new ListDeadLetterSourceQueuesCommand({
          QueueUrl: dlq.url,
          MaxResults: 1,
          ...(token ? { NextToken: token } : {}),
        }),
      );
      urls.push(...(out.queueUrls ?? []));
      token = out.NextToken;
      if (token === undefined) break;
    }
    assert.deepEqual(
      urls.map((u) => u.slice(u.lastIndexOf('/') + 1)),
      names,
    );
  });

  test('Given a queue no queue names, When its sources are listed, Then the list is empty', async () => {
    const q = await queue(uniqueName('lonely'));
    const out = await sqs.client.send(new ListDeadLetterSourceQueuesCommand({ QueueUrl: q.url }));
    assert.deepEqual(out.queueUrls ?? [], []);
  });

  test('Given a queue that does not exist, When its sources are listed, Then QueueDoesNotExist (400)', async () => {
    const q = await queue(uniqueName('gone'));
    await expectSdkError(
      sqs.client.send(new ListDeadLetterSourceQueuesCommand({ QueueUrl: `${q.url}-nope` })),
      {
        name: 'QueueDoesNotExist',
        code: 'AWS.SimpleQueueService.NonExistentQueue',
        status: 400,
      },
    );
  });
});
