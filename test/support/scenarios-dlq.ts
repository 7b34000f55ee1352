/**
 * The dead-letter queue scenarios, written once and registered by each client's test file:
 * test/e2e/dlq-sdk.test.ts (@aws-sdk/client-sqs, JSON 1.0) and test/e2e/dlq-cli.test.ts (aws-cli
 * 2.9, Query). RedrivePolicy checks, the move at maxReceiveCount + 1 receives and what the moved
 * message keeps, RedriveAllowPolicy, and ListDeadLetterSourceQueues with its pagination.
 *
 * Only the action a scenario is about goes through `ctx.client`; the rest goes through the
 * fixture, as an aws-cli call costs a process.
 */
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { GetQueueAttributesCommand, SendMessageCommand, type Message } from '@aws-sdk/client-sqs';
import { expectServiceError, SQS_ERRORS, type ScenarioContext, type ServiceError } from './clients.js';
import type { FileTests } from './requires.js';
import { uniqueName } from './server.js';
import { redrivePolicy as policy } from './sqs.js';

/** The ARN of another queue in the same account and region as `arn`. */
const sibling = (arn: string, name: string): string => arn.replace(/[^:]+$/, name);

export function dlqScenarios(ctx: ScenarioContext, { test }: FileTests): void {
  const { sqs } = ctx;
  const queue = (name: string, attributes?: Record<string, string>): Promise<{ url: string; arn: string }> =>
    sqs.createQueueWithArn(name, attributes);

  /** The SetQueueAttributes under test, refused. */
  const refused = (url: string, attributes: Record<string, string>): Promise<ServiceError> =>
    expectServiceError(
      ctx.client.call('SetQueueAttributes', { QueueUrl: url, Attributes: attributes }),
      SQS_ERRORS.badParam,
    );

  const redriveRefused = (url: string, redrive: string): Promise<ServiceError> =>
    refused(url, { RedrivePolicy: redrive });

  /** The receive under test, leaving what it got visible again. */
  async function receive(url: string, extra: Record<string, unknown> = {}): Promise<Message[]> {
    const out = await ctx.client.call('ReceiveMessage', {
      QueueUrl: url,
      VisibilityTimeout: 0,
      MaxNumberOfMessages: 10,
      ...extra,
    });
    return (out.Messages as Message[] | undefined) ?? [];
  }

  const sourceNames = (urls: unknown): string[] =>
    ((urls as string[] | undefined) ?? []).map((u) => u.slice(u.lastIndexOf('/') + 1));

  describe('RedrivePolicy', () => {
    test('Given a RedrivePolicy naming a queue that does not exist, When set, Then InvalidParameterValue (400)', async () => {
      const src = await queue(uniqueName('src'));
      await redriveRefused(src.url, policy(sibling(src.arn, uniqueName('missing')), 3));
    });

    test('Given CreateQueue with a RedrivePolicy naming a missing queue, When called, Then InvalidParameterValue (400)', async () => {
      const dlq = await queue(uniqueName('dlq'));
      await expectServiceError(
        ctx.client.call('CreateQueue', {
          QueueName: uniqueName('src'),
          Attributes: { RedrivePolicy: policy(sibling(dlq.arn, uniqueName('missing')), 3) },
        }),
        SQS_ERRORS.badParam,
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
      const out = await ctx.client.call('GetQueueAttributes', {
        QueueUrl: src.url,
        AttributeNames: ['RedrivePolicy'],
      });
      const attributes = out.Attributes as Record<string, string> | undefined;
      assert.equal(attributes?.RedrivePolicy, `{"deadLetterTargetArn":"${dlq.arn}","maxReceiveCount":4}`);
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
      assert.equal((await receive(src.url)).length, 1);
      assert.equal((await receive(src.url)).length, 1);
      assert.deepEqual(
        await receive(src.url, { MessageSystemAttributeNames: ['SentTimestamp'] }),
        [],
        'the third receive moved it instead of delivering it',
      );
      const [m, ...more] = await receive(dlq.url, {
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      });
      assert.ok(m);
      assert.deepEqual(more, []);
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
      const src = await queue(uniqueName('src'));
      const dlq = await queue(uniqueName('dlq'), {
        RedriveAllowPolicy: JSON.stringify({ redrivePermission: 'byQueue', sourceQueueArns: [src.arn] }),
      });
      await ctx.client.call('SetQueueAttributes', {
        QueueUrl: src.url,
        Attributes: { RedrivePolicy: policy(dlq.arn, 3) },
      });
      const out = await sqs.client.send(
        new GetQueueAttributesCommand({ QueueUrl: src.url, AttributeNames: ['All'] }),
      );
      assert.ok(out.Attributes?.RedrivePolicy?.includes(dlq.arn));
    });

    test('Given a RedriveAllowPolicy byQueue with 11 source ARNs, When set, Then InvalidParameterValue (400)', async () => {
      const dlq = await queue(uniqueName('dlq'));
      const arns = Array.from({ length: 11 }, (_, i) => sibling(dlq.arn, `s${i}`));
      await refused(dlq.url, {
        RedriveAllowPolicy: JSON.stringify({ redrivePermission: 'byQueue', sourceQueueArns: arns }),
      });
    });
  });

  describe('ListDeadLetterSourceQueues', () => {
    test('Given three sources of a DLQ, When listed one at a time, Then the pages hold all three in name order, with NextToken between', async () => {
      const dlq = await queue(uniqueName('dlq'));
      const base = uniqueName('srcs');
      const names = [`${base}-a`, `${base}-b`, `${base}-c`];
      for (const n of names.slice().reverse()) await queue(n, { RedrivePolicy: policy(dlq.arn, 3) });
      await queue(uniqueName('unrelated'));
      const pages: string[][] = [];
      let token: string | undefined;
      for (let page = 0; page < 5; page++) {
        const out = await ctx.client.call('ListDeadLetterSourceQueues', {
          QueueUrl: dlq.url,
          MaxResults: 1,
          ...(token ? { NextToken: token } : {}),
        });
        pages.push(sourceNames(out.queueUrls));
        token = out.NextToken as string | undefined;
        if (token === undefined) break;
      }
      assert.deepEqual(
        pages,
        names.map((n) => [n]),
      );
    });

    test('Given a queue no queue names, When its sources are listed, Then the list is empty', async () => {
      const q = await queue(uniqueName('lonely'));
      const out = await ctx.client.call('ListDeadLetterSourceQueues', { QueueUrl: q.url });
      assert.deepEqual(sourceNames(out.queueUrls), []);
    });

    test('Given a queue that does not exist, When its sources are listed, Then QueueDoesNotExist (400)', async () => {
      const q = await queue(uniqueName('gone'));
      await expectServiceError(
        ctx.client.call('ListDeadLetterSourceQueues', { QueueUrl: `${q.url}-nope` }),
        SQS_ERRORS.noQueue,
      );
    });
  });
}
