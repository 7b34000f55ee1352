/**
 * Query protocol through Debian's python3-boto3 1.26 (`/usr/bin/python3`, botocore 1.29, whose SQS
 * model says `"protocol": "query"`), by way of test/fixtures/boto3_query.py. A few calls, each checked
 * with what botocore surfaces: the parsed response, or the error code and HTTP status.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { b64, boto3Calls, ok, type Boto3Result } from '../helpers/boto3.js';
import { md5Hex, md5OfAttributes } from '../helpers/md5.js';
import { requireDebianBoto3, startServer, uniqueName, type RunningServer } from '../helpers/server.js';

let server: RunningServer;

before(async () => {
  requireDebianBoto3();
  server = await startServer();
});

after(async () => {
  await server?.stop();
});

function expectError(result: Boto3Result | undefined, code: string, status: number): void {
  assert.ok(result !== undefined, 'a result');
  assert.ok(!result.ok, `expected ${code}, got success: ${JSON.stringify(result)}`);
  assert.equal(result.code, code, `error code (${result.message})`);
  assert.equal(result.status, status, `HTTP status (${result.code})`);
}

test('Debian boto3 is 1.26 and its SQS model speaks the Query protocol', async () => {
  const run = await boto3Calls(server.url, [{ op: 'list_queues' }]);
  assert.equal(run.protocol, 'query');
  assert.match(run.boto3, /^1\.26\./);
  assert.equal(run.results[0]?.ok, true);
});

test('Given a queue with attributes and tags, When sending String, Number, Binary and custom attributes, Then receive returns them with the documented MD5s, and delete removes the message', async () => {
  const name = uniqueName('boto3-msg');
  const binary = Buffer.from([0, 1, 2, 3, 250, 255]);
  const attributes = {
    s: { DataType: 'String', StringValue: 'ünïcödé' },
    n: { DataType: 'Number', StringValue: '42' },
    b: { DataType: 'Binary', BinaryValue: binary },
    c: { DataType: 'Binary.custom', BinaryValue: Buffer.from('xyz') },
  };
  const wireAttributes = {
    s: attributes.s,
    n: attributes.n,
    b: { DataType: 'Binary', BinaryValue: b64(binary) },
    c: { DataType: 'Binary.custom', BinaryValue: b64(Buffer.from('xyz')) },
  };
  const trace = 'Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1';
  const run = await boto3Calls(server.url, [
    {
      op: 'create_queue',
      params: { QueueName: name, Attributes: { VisibilityTimeout: '60' }, tags: { owner: 'boto3' } },
    },
    {
      op: 'send_message',
      params: {
        QueueUrl: '$0.QueueUrl',
        MessageBody: 'hello from boto3',
        MessageAttributes: wireAttributes,
        MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: trace } },
      },
    },
    {
      op: 'receive_message',
      params: { QueueUrl: '$0.QueueUrl', AttributeNames: ['All'], MessageAttributeNames: ['All'] },
    },
    {
      op: 'delete_message',
      params: { QueueUrl: '$0.QueueUrl', ReceiptHandle: '$2.Messages.0.ReceiptHandle' },
    },
    {
      op: 'get_queue_attributes',
      params: {
        QueueUrl: '$0.QueueUrl',
        AttributeNames: ['VisibilityTimeout', 'ApproximateNumberOfMessages'],
      },
    },
    { op: 'list_queue_tags', params: { QueueUrl: '$0.QueueUrl' } },
  ]);
  const [created, sent, received, deleted, attrs, tags] = run.results;
  assert.match(String(ok(created).QueueUrl), new RegExp(`/${name}$`));
  assert.equal(ok(sent).MD5OfMessageBody, md5Hex('hello from boto3'));
  assert.equal(ok(sent).MD5OfMessageAttributes, md5OfAttributes(attributes));
  assert.equal(
    ok(sent).MD5OfMessageSystemAttributes,
    md5OfAttributes({ AWSTraceHeader: { DataType: 'String', StringValue: trace } }),
  );
  const messages = ok(received).Messages as Array<Record<string, unknown>>;
  assert.equal(messages.length, 1);
  const m = messages[0] ?? {};
  assert.equal(m.Body, 'hello from boto3');
  assert.equal(m.MD5OfMessageAttributes, md5OfAttributes(attributes));
  assert.deepEqual(m.MessageAttributes, wireAttributes);
  assert.equal((m.Attributes as Record<string, string>).AWSTraceHeader, trace);
  assert.equal(deleted?.ok, true);
  assert.deepEqual(ok(attrs).Attributes, { VisibilityTimeout: '60', ApproximateNumberOfMessages: '0' });
  assert.deepEqual(ok(tags).Tags, { owner: 'boto3' });
});

test('Given a mixed batch, When send_message_batch, Then Successful and Failed are parsed per entry', async () => {
  const run = await boto3Calls(server.url, [
    { op: 'create_queue', params: { QueueName: uniqueName('boto3-batch') } },
    {
      op: 'send_message_batch',
      params: {
        QueueUrl: '$0.QueueUrl',
        Entries: [
          { Id: 'ok', MessageBody: 'fine' },
          { Id: 'bad', MessageBody: 'delayed too long', DelaySeconds: 901 },
        ],
      },
    },
  ]);
  const out = ok(run.results[1]);
  assert.deepEqual(
    (out.Successful as Array<{ Id: string; MD5OfMessageBody: string }>).map((e) => [
      e.Id,
      e.MD5OfMessageBody,
    ]),
    [['ok', md5Hex('fine')]],
  );
  const failed = out.Failed as Array<{ Id: string; SenderFault: boolean; Code: string }>;
  assert.deepEqual(
    failed.map((e) => [e.Id, e.SenderFault, e.Code]),
    [['bad', true, 'InvalidParameterValue']],
  );
});

test('Error codes and HTTP statuses as botocore (Query) surfaces them', async () => {
  const name = uniqueName('boto3-err');
  const tooMany = Array.from({ length: 11 }, (_, i) => ({ Id: `e${i}`, MessageBody: 'x' }));
  const run = await boto3Calls(server.url, [
    /* 0 */ { op: 'create_queue', params: { QueueName: name, Attributes: { DelaySeconds: '1' } } },
    /* 1 */ { op: 'create_queue', params: { QueueName: name, Attributes: { DelaySeconds: '2' } } },
    /* 2 */ { op: 'get_queue_url', params: { QueueName: uniqueName('boto3-nosuch') } },
    /* 3 */ { op: 'delete_message', params: { QueueUrl: '$0.QueueUrl', ReceiptHandle: 'garbage' } },
    /* 4 */ { op: 'send_message_batch', params: { QueueUrl: '$0.QueueUrl', Entries: tooMany } },
    /* 5 */ {
      op: 'send_message_batch',
      params: {
        QueueUrl: '$0.QueueUrl',
        Entries: [
          { Id: 'a', MessageBody: '1' },
          { Id: 'a', MessageBody: '2' },
        ],
      },
    },
    /* 6 */ {
      op: 'send_message',
      params: { QueueUrl: '$0.QueueUrl', MessageBody: 'x'.repeat(1024 * 1024 + 1) },
    },
    /* 7 */ {
      op: 'set_queue_attributes',
      params: { QueueUrl: '$0.QueueUrl', Attributes: { DelaySeconds: '901' } },
    },
    /* 8 */ { op: 'purge_queue', params: { QueueUrl: '$0.QueueUrl' } },
    /* 9 */ { op: 'purge_queue', params: { QueueUrl: '$0.QueueUrl' } },
    /* 10 */ { op: 'delete_queue', params: { QueueUrl: '$0.QueueUrl' } },
    /* 11 */ { op: 'send_message', params: { QueueUrl: '$0.QueueUrl', MessageBody: 'x' } },
  ]);
  const r = run.results;
  ok(r[0]);
  expectError(r[1], 'QueueAlreadyExists', 400);
  expectError(r[2], 'AWS.SimpleQueueService.NonExistentQueue', 400);
  expectError(r[3], 'ReceiptHandleIsInvalid', 404);
  expectError(r[4], 'AWS.SimpleQueueService.TooManyEntriesInBatchRequest', 400);
  expectError(r[5], 'AWS.SimpleQueueService.BatchEntryIdsNotDistinct', 400);
  expectError(r[6], 'InvalidParameterValue', 400);
  expectError(r[7], 'InvalidAttributeValue', 400);
  ok(r[8]);
  expectError(r[9], 'AWS.SimpleQueueService.PurgeQueueInProgress', 403);
  ok(r[10]);
  expectError(r[11], 'AWS.SimpleQueueService.NonExistentQueue', 400);
});
