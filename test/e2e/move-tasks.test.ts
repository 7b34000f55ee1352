/**
 * Message move tasks (DLQ redrive) through @aws-sdk/client-sqs (JSON 1.0) and raw Query requests:
 * StartMessageMoveTask, ListMessageMoveTasks, CancelMessageMoveTask, and AWS's errors. Debian's
 * aws-cli 2.9 (and its botocore 1.29) predates these three actions, so the Query protocol is driven
 * by form POSTs here, as the CLI would send them.
 *
 * Tasks run in the background; the tests wait for a state by polling ListMessageMoveTasks, bounded
 * (10 s), and assert states, never durations.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  CancelMessageMoveTaskCommand,
  GetQueueAttributesCommand,
  ListMessageMoveTasksCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  StartMessageMoveTaskCommand,
  type ListMessageMoveTasksResultEntry,
} from '@aws-sdk/client-sqs';
import { expectSdkError } from '../support/assertions.js';
import { uniqueName } from '../support/server.js';
import { queryErrorCode, queryOk, queryPost, xmlText, xmlTexts } from '../support/wire.js';
import { redrivePolicy, sharedServer } from '../support/sqs.js';

const sqs = sharedServer();

const queue = (name: string, attributes?: Record<string, string>): Promise<{ url: string; arn: string }> =>
  sqs.createQueueWithArn(name, attributes);

/** A source whose `n` messages have all moved to its DLQ (maxReceiveCount 1, two receives each). */
async function deadLetters(
  n: number,
): Promise<{ src: { url: string; arn: string }; dlq: { url: string; arn: string }; ids: string[] }> {
  const dlq = await queue(uniqueName('dlq'));
  const src = await queue(uniqueName('src'), {
    RedrivePolicy: redrivePolicy(dlq.arn, 1),
  });
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const out = await sqs.client.send(new SendMessageCommand({ QueueUrl: src.url, MessageBody: `m${i}` }));
    ids.push(out.MessageId ?? '');
  }
  // Each message is delivered on its first receive (visible again at once), moved on its second.
  for (let i = 0; i < 2 * n + 2; i++) {
    const out = await sqs.client.send(
      new ReceiveMessageCommand({ QueueUrl: src.url, MaxNumberOfMessages: 10, VisibilityTimeout: 0 }),
    );
    if ((out.Messages?.length ?? 0) === 0) break;
  }
  const counts = await sqs.client.send(
    new GetQueueAttributesCommand({ QueueUrl: dlq.url, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
  assert.equal(counts.Attributes?.ApproximateNumberOfMessages, String(n), 'every message is in the DLQ');
  return { src, dlq, ids };
}

async function tasks(sourceArn: string, max = 10): Promise<ListMessageMoveTasksResultEntry[]> {
  const out = await sqs.client.send(
    new ListMessageMoveTasksCommand({ SourceArn: sourceArn, MaxResults: max }),
  );
  return out.Results ?? [];
}

/** Polls until the newest task of the source has `status` (bounded). */
async function until(sourceArn: string, status: string): Promise<ListMessageMoveTasksResultEntry> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const [latest] = await tasks(sourceArn, 1);
    if (latest?.Status === status) return latest;
    if (Date.now() > deadline) throw new Error(`task not ${status} within 10 s: ${JSON.stringify(latest)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const drain = async (url: string): Promise<string[]> => (await sqs.drain(url)).sort();

/** The ARN of a queue that does not exist, beside the queue `arn` names. */
const missingQueueArn = (arn: string): string => arn.replace(/[^:]+$/, uniqueName('nope'));

const invalidParameterValue = (call: Promise<unknown>): Promise<void> =>
  expectSdkError(call, { name: 'InvalidParameterValue', code: 'InvalidParameterValue', status: 400 });

const resourceNotFound = (call: Promise<unknown>): Promise<void> =>
  expectSdkError(call, { name: 'ResourceNotFoundException', code: 'ResourceNotFoundException', status: 404 });

/** A source ARN of no queue must be ResourceNotFoundException (404) to `command`. */
async function unknownSource(
  command: (sourceArn: string) => StartMessageMoveTaskCommand | ListMessageMoveTasksCommand,
): Promise<void> {
  const q = await queue(uniqueName('any'));
  await resourceNotFound(sqs.client.send(command(missingQueueArn(q.arn))));
}

describe('StartMessageMoveTask errors', () => {
  test('Given a queue that is no DLQ, When a move task is started on it, Then InvalidParameterValue (400)', async () => {
    const q = await queue(uniqueName('plain'));
    await invalidParameterValue(sqs.client.send(new StartMessageMoveTaskCommand({ SourceArn: q.arn })));
  });

  test('Given a source ARN of no queue, When a move task is started, Then ResourceNotFoundException (404)', async () => {
    await unknownSource((SourceArn) => new StartMessageMoveTaskCommand({ SourceArn }));
  });

  test('Given a DestinationArn of no queue, When a move task is started, Then ResourceNotFoundException (404)', async () => {
    const { dlq } = await deadLetters(1);
    await resourceNotFound(
      sqs.client.send(
        new StartMessageMoveTaskCommand({ SourceArn: dlq.arn, DestinationArn: missingQueueArn(dlq.arn) }),
      ),
    );
  });

  test('Given MaxNumberOfMessagesPerSecond 501, When a move task is started, Then InvalidParameterValue (400)', async () => {
    const { dlq } = await deadLetters(1);
    await invalidParameterValue(
      sqs.client.send(
        new StartMessageMoveTaskCommand({ SourceArn: dlq.arn, MaxNumberOfMessagesPerSecond: 501 }),
      ),
    );
  });
});

describe('moving messages', () => {
  test('Given a DLQ of three messages, When a task moves them back, Then it completes with its counts and the source holds them as new messages', async () => {
    const { src, dlq, ids } = await deadLetters(3);
    const { TaskHandle } = await sqs.client.send(new StartMessageMoveTaskCommand({ SourceArn: dlq.arn }));
    assert.ok(TaskHandle);
    const done = await until(dlq.arn, 'COMPLETED');
    assert.equal(done.ApproximateNumberOfMessagesMoved, 3);
    assert.equal(done.ApproximateNumberOfMessagesToMove, 3);
    assert.equal(done.SourceArn, dlq.arn);
    assert.equal(done.TaskHandle, undefined, 'a handle only while RUNNING');
    assert.equal(done.DestinationArn, undefined);
    assert.ok(typeof done.StartedTimestamp === 'number' && done.StartedTimestamp > 0);
    const out = await sqs.client.send(
      new ReceiveMessageCommand({ QueueUrl: src.url, MaxNumberOfMessages: 10 }),
    );
    assert.deepEqual((out.Messages ?? []).map((m) => m.Body).sort(), ['m0', 'm1', 'm2']);
    for (const m of out.Messages ?? [])
      assert.ok(!ids.includes(m.MessageId ?? ''), 'redriven messages are new messages');
  });

  test('Given a DestinationArn, When the task runs, Then the messages go there', async () => {
    const { src, dlq } = await deadLetters(2);
    const dest = await queue(uniqueName('dest'));
    await sqs.client.send(new StartMessageMoveTaskCommand({ SourceArn: dlq.arn, DestinationArn: dest.arn }));
    const done = await until(dlq.arn, 'COMPLETED');
    assert.equal(done.DestinationArn, dest.arn);
    assert.deepEqual(await drain(dest.url), ['m0', 'm1']);
    assert.deepEqual(await drain(src.url), []);
  });

  test('Given a slow running task, When listed, started again and cancelled, Then it shows its handle, refuses a second task, and ends CANCELLED', async () => {
    const { dlq } = await deadLetters(30);
    const { TaskHandle } = await sqs.client.send(
      new StartMessageMoveTaskCommand({ SourceArn: dlq.arn, MaxNumberOfMessagesPerSecond: 1 }),
    );
    const [running] = await tasks(dlq.arn, 1);
    assert.equal(running?.Status, 'RUNNING');
    assert.equal(running?.TaskHandle, TaskHandle);
    assert.equal(running?.MaxNumberOfMessagesPerSecond, 1);
    await invalidParameterValue(sqs.client.send(new StartMessageMoveTaskCommand({ SourceArn: dlq.arn })));
    const cancel = await sqs.client.send(new CancelMessageMoveTaskCommand({ TaskHandle }));
    assert.equal(typeof cancel.ApproximateNumberOfMessagesMoved, 'number');
    const cancelled = await until(dlq.arn, 'CANCELLED');
    assert.ok((cancelled.ApproximateNumberOfMessagesMoved ?? 0) < 30);
  });

  test('Given a handle that is not one, When cancelled, Then InvalidParameterValue (400)', async () => {
    await invalidParameterValue(
      sqs.client.send(new CancelMessageMoveTaskCommand({ TaskHandle: 'not-a-handle' })),
    );
  });

  test('Given a source ARN of no queue, When its tasks are listed, Then ResourceNotFoundException (404)', async () => {
    await unknownSource((SourceArn) => new ListMessageMoveTasksCommand({ SourceArn }));
  });
});

describe('the Query protocol', () => {
  test('Given a queue that is no DLQ, When StartMessageMoveTask is posted, Then InvalidParameterValue (400) in XML', async () => {
    const q = await queue(uniqueName('plain'));
    const res = await queryPost(sqs.server.url, { Action: 'StartMessageMoveTask', SourceArn: q.arn });
    assert.equal(res.status, 400);
    assert.equal(queryErrorCode(res.text), 'InvalidParameterValue');
  });

  test('Given a DLQ, When a task is started, listed and cancelled over Query, Then the XML carries the handle, status and counts', async () => {
    const { dlq } = await deadLetters(20);
    const started = await queryOk(sqs.server.url, {
      Action: 'StartMessageMoveTask',
      SourceArn: dlq.arn,
      MaxNumberOfMessagesPerSecond: '1',
    });
    const handle = xmlText(started, 'TaskHandle');
    assert.ok(handle);
    const listed = await queryOk(sqs.server.url, {
      Action: 'ListMessageMoveTasks',
      SourceArn: dlq.arn,
      MaxResults: '10',
    });
    assert.deepEqual(xmlTexts(listed, 'Status'), ['RUNNING']);
    assert.equal(xmlText(listed, 'TaskHandle'), handle);
    assert.equal(xmlText(listed, 'ApproximateNumberOfMessagesToMove'), '20');
    const cancelled = await queryOk(sqs.server.url, { Action: 'CancelMessageMoveTask', TaskHandle: handle });
    assert.match(xmlText(cancelled, 'ApproximateNumberOfMessagesMoved') ?? '', /^\d+$/);
    await until(dlq.arn, 'CANCELLED');
  });
});
