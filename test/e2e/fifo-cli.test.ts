/**
 * FIFO queues through Debian's aws-cli 2.9 at /usr/bin/aws (Query protocol: form POST, XML replies):
 * what a send needs, deduplication and SequenceNumber, the FIFO system attributes on receive,
 * ReceiveRequestAttemptId, group locks, and SendMessageBatch. Each CLI call costs about a second of
 * CPU, so set-up goes through raw Query requests (the same protocol).
 */
import assert from 'node:assert/strict';
import { awsCliOk, uniqueName } from '../support/server.js';
import { queryOk, xmlText } from '../support/wire.js';
import { testsRequiring } from '../support/requires.js';
import { queryCreateQueue, sharedServer } from '../support/sqs.js';
import { expectCliError } from '../support/assertions.js';

const { after, before, test } = testsRequiring('aws');

const sqs = sharedServer({ hooks: { before, after } });

const aws = (args: string[]): Promise<Record<string, unknown>> => awsCliOk(sqs.server.url, args);

const awsError = (args: string[], code: string, status: number, message?: string): Promise<void> =>
  expectCliError(sqs.server.url, args, code, status, message);

const fifoQueue = (contentBased = false): Promise<string> =>
  queryCreateQueue(sqs.server.url, `${uniqueName('fifo-cli')}.fifo`, {
    FifoQueue: 'true',
    ContentBasedDeduplication: String(contentBased),
  });

async function sendRaw(url: string, body: string, group: string, dedup: string): Promise<void> {
  await queryOk(sqs.server.url, {
    Action: 'SendMessage',
    QueueUrl: url,
    MessageBody: body,
    MessageGroupId: group,
    MessageDeduplicationId: dedup,
  });
}

interface CliMessage {
  Body: string;
  ReceiptHandle: string;
  Attributes?: Record<string, string>;
}

function messages(out: Record<string, unknown>): CliMessage[] {
  return (out.Messages as CliMessage[] | undefined) ?? [];
}

test('Given a FIFO queue, When aws sqs send-message is called without --message-group-id, Then MissingParameter (400)', async () => {
  const url = await fifoQueue(true);
  await awsError(['send-message', '--queue-url', url, '--message-body', 'x'], 'MissingParameter', 400);
});

test('Given a FIFO queue without content-based deduplication, When sent without a deduplication id, Then InvalidParameterValue (400)', async () => {
  const url = await fifoQueue();
  await awsError(
    ['send-message', '--queue-url', url, '--message-body', 'x', '--message-group-id', 'g'],
    'InvalidParameterValue',
    400,
  );
});

test('Given a FIFO queue, When sent with --delay-seconds, Then InvalidParameterValue (400)', async () => {
  const url = await fifoQueue(true);
  await awsError(
    [
      'send-message',
      '--queue-url',
      url,
      '--message-body',
      'x',
      '--message-group-id',
      'g',
      '--delay-seconds',
      '3',
    ],
    'InvalidParameterValue',
    400,
  );
});

test('Given a FIFO send, When the same deduplication id is sent again, Then the CLI prints the same MessageId and SequenceNumber', async () => {
  const url = await fifoQueue();
  const args = ['send-message', '--queue-url', url, '--message-body', 'x', '--message-group-id', 'g'];
  const first = await aws([...args, '--message-deduplication-id', 'same']);
  const again = await aws([...args, '--message-deduplication-id', 'same']);
  assert.ok(typeof first.SequenceNumber === 'string' && /^\d+$/.test(first.SequenceNumber));
  assert.equal(again.MessageId, first.MessageId);
  assert.equal(again.SequenceNumber, first.SequenceNumber);
});

test('Given two groups, When aws sqs receive-message asks for All attributes, Then a whole group comes in order with its FIFO attributes, then the other', async () => {
  const url = await fifoQueue();
  await sendRaw(url, 'a1', 'a', 'a1');
  await sendRaw(url, 'b1', 'b', 'b1');
  await sendRaw(url, 'a2', 'a', 'a2');
  const got = messages(
    await aws([
      'receive-message',
      '--queue-url',
      url,
      '--max-number-of-messages',
      '10',
      '--attribute-names',
      'All',
    ]),
  );
  assert.deepEqual(
    got.map((m) => m.Body),
    ['a1', 'a2', 'b1'],
  );
  assert.equal(got[0]?.Attributes?.MessageGroupId, 'a');
  assert.equal(got[0]?.Attributes?.MessageDeduplicationId, 'a1');
  assert.match(got[0]?.Attributes?.SequenceNumber ?? '', /^\d{20}$/);
});

test('Given a receive with --receive-request-attempt-id, When retried, Then the same receipt handles come back and the group stays locked for others', async () => {
  const url = await fifoQueue();
  await sendRaw(url, 'a1', 'a', 'a1');
  const args = ['receive-message', '--queue-url', url, '--receive-request-attempt-id', 'attempt-1'];
  const first = messages(await aws(args));
  const retry = messages(await aws(args));
  assert.equal(first.length, 1);
  assert.equal(retry[0]?.ReceiptHandle, first[0]?.ReceiptHandle);
  const other = await queryOk(sqs.server.url, { Action: 'ReceiveMessage', QueueUrl: url });
  assert.equal(xmlText(other, 'ReceiptHandle'), undefined, 'the group is locked while in flight');
});

test('Given a FIFO batch, When aws sqs send-message-batch sends it, Then every entry has a SequenceNumber', async () => {
  const url = await fifoQueue(true);
  const out = await aws([
    'send-message-batch',
    '--queue-url',
    url,
    '--entries',
    JSON.stringify([
      { Id: 'a', MessageBody: 'x', MessageGroupId: 'g' },
      { Id: 'b', MessageBody: 'y', MessageGroupId: 'g' },
    ]),
  ]);
  const ok = out.Successful as Array<{ SequenceNumber?: string }>;
  assert.equal(ok.length, 2);
  assert.ok(ok.every((e) => typeof e.SequenceNumber === 'string'));
});

test('Given a FIFO batch with an entry without MessageGroupId, When sent, Then the request fails with InvalidParameterValue (400)', async () => {
  const url = await fifoQueue(true);
  await awsError(
    [
      'send-message-batch',
      '--queue-url',
      url,
      '--entries',
      JSON.stringify([
        { Id: 'a', MessageBody: 'x', MessageGroupId: 'g' },
        { Id: 'b', MessageBody: 'y' },
      ]),
    ],
    'InvalidParameterValue',
    400,
  );
});
