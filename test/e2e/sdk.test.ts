/**
 * JSON 1.0 protocol (`X-Amz-Target: AmazonSQS.*`, `application/x-amz-json-1.0`) through
 * @aws-sdk/client-sqs: every action of the standard-queue data plane, and its error cases with the
 * error name, Query code (`x-amzn-query-error`) and HTTP status the SDK surfaces.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListQueuesCommand,
  ListQueueTagsCommand,
  PurgeQueueCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
  TagQueueCommand,
  UntagQueueCommand,
  type MessageAttributeValue,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { expectSdkError } from '../support/assertions.js';
import { md5Hex, md5OfAttributes, MD5_SELF_CHECK } from '../support/md5.js';
import { uniqueName, waitForLongPollWaiters } from '../support/server.js';
import { jsonPost } from '../support/wire.js';
import { sharedServer } from '../support/sqs.js';

const MIB = 1024 * 1024;
const TRACE_HEADER = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1';

const sqs = sharedServer();

/** Receives the one message `url` holds, with this VisibilityTimeout; returns its receipt handle. */
async function receiveHandle(url: string, visibilityTimeout: number): Promise<string> {
  const out = await sqs.client.send(
    new ReceiveMessageCommand({ QueueUrl: url, VisibilityTimeout: visibilityTimeout }),
  );
  const handle = out.Messages?.[0]?.ReceiptHandle;
  assert.ok(handle, 'a message received');
  return handle;
}

function setVisibility(url: string, handle: string, seconds: number): Promise<unknown> {
  return sqs.client.send(
    new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: handle, VisibilityTimeout: seconds }),
  );
}

const createQueue = (prefix: string, attributes?: Record<string, string>): Promise<string> =>
  sqs.createQueue(uniqueName(prefix), attributes);

function queueName(url: string): string {
  return url.slice(url.lastIndexOf('/') + 1);
}

test('the test MD5 helper matches the documented byte layout (JSON protocol suite self-check)', () => {
  assert.equal(md5OfAttributes(MD5_SELF_CHECK.input), md5Hex(Buffer.from(MD5_SELF_CHECK.bytesHex, 'hex')));
});

describe('JSON protocol: queues', () => {
  test('Given attributes and tags, When CreateQueue, Then GetQueueAttributes and ListQueueTags show them', async () => {
    const name = uniqueName('sdk-create');
    const out = await sqs.client.send(
      new CreateQueueCommand({
        QueueName: name,
        Attributes: { VisibilityTimeout: '45', DelaySeconds: '2', MessageRetentionPeriod: '3600' },
        tags: { team: 'queues', env: 'test' },
      }),
    );
    assert.ok(out.QueueUrl?.endsWith(`/${name}`), `queue URL ends with the name: ${out.QueueUrl}`);
    const attrs = await sqs.client.send(
      new GetQueueAttributesCommand({ QueueUrl: out.QueueUrl, AttributeNames: ['All'] }),
    );
    assert.equal(attrs.Attributes?.VisibilityTimeout, '45');
    assert.equal(attrs.Attributes?.DelaySeconds, '2');
    assert.equal(attrs.Attributes?.MessageRetentionPeriod, '3600');
    assert.equal(attrs.Attributes?.MaximumMessageSize, String(MIB));
    assert.equal(attrs.Attributes?.ReceiveMessageWaitTimeSeconds, '0');
    assert.equal(attrs.Attributes?.QueueArn, `arn:aws:sqs:us-east-1:000000000000:${name}`);
    assert.match(attrs.Attributes?.CreatedTimestamp ?? '', /^\d+$/);
    assert.match(attrs.Attributes?.LastModifiedTimestamp ?? '', /^\d+$/);
    assert.equal(attrs.Attributes?.ApproximateNumberOfMessages, '0');
    const tags = await sqs.client.send(new ListQueueTagsCommand({ QueueUrl: out.QueueUrl }));
    assert.deepEqual(tags.Tags, { team: 'queues', env: 'test' });
  });

  test('Given a queue, When CreateQueue again with the same attributes, Then it answers the same URL', async () => {
    const name = uniqueName('sdk-idem');
    const first = await sqs.client.send(
      new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: '40' } }),
    );
    const again = await sqs.client.send(
      new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: '40' } }),
    );
    assert.equal(again.QueueUrl, first.QueueUrl);
  });

  test('Given a queue, When CreateQueue with other attributes, Then QueueNameExists (QueueAlreadyExists, 400)', async () => {
    const name = uniqueName('sdk-exists');
    await sqs.client.send(
      new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: '40' } }),
    );
    await expectSdkError(
      sqs.client.send(new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: '41' } })),
      { name: 'QueueNameExists', code: 'QueueAlreadyExists', status: 400 },
    );
  });

  test('Given a queue, When GetQueueUrl by name, Then the CreateQueue URL comes back', async () => {
    const url = await createQueue('sdk-geturl');
    const out = await sqs.client.send(new GetQueueUrlCommand({ QueueName: queueName(url) }));
    assert.equal(out.QueueUrl, url);
  });

  test('Given no such queue, When GetQueueUrl, Then QueueDoesNotExist (AWS.SimpleQueueService.NonExistentQueue, 400)', async () => {
    await expectSdkError(sqs.client.send(new GetQueueUrlCommand({ QueueName: uniqueName('sdk-nosuch') })), {
      name: 'QueueDoesNotExist',
      code: 'AWS.SimpleQueueService.NonExistentQueue',
      status: 400,
    });
  });

  test('Given no such queue, When the raw JSON request is sent, Then __type and x-amzn-query-error are exact', async () => {
    const res = await jsonPost(sqs.server.url, 'AmazonSQS.GetQueueUrl', {
      QueueName: uniqueName('sdk-raw-nosuch'),
    });
    assert.equal(res.status, 400);
    // Exactly, as AWS sends it: no `; charset=utf-8`.
    assert.equal(res.headers.get('content-type'), 'application/x-amz-json-1.0');
    const body = JSON.parse(res.text) as { __type?: unknown; message?: unknown };
    assert.equal(body.__type, 'com.amazonaws.sqs#QueueDoesNotExist');
    // JSON keeps the plain wording; only Query adds "for this wsdl version" (AWS recorded).
    assert.equal(body.message, 'The specified queue does not exist.');
    assert.equal(res.headers.get('x-amzn-query-error'), 'AWS.SimpleQueueService.NonExistentQueue;Sender');
    assert.ok(res.headers.get('x-amzn-requestid'), 'x-amzn-RequestId header');
  });

  test('Given a deleted queue, When it is used, Then QueueDoesNotExist and ListQueues no longer lists it', async () => {
    const prefix = uniqueName('sdk-del');
    const url = (await sqs.client.send(new CreateQueueCommand({ QueueName: prefix }))).QueueUrl ?? '';
    await sqs.client.send(new DeleteQueueCommand({ QueueUrl: url }));
    await expectSdkError(sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'x' })), {
      name: 'QueueDoesNotExist',
      code: 'AWS.SimpleQueueService.NonExistentQueue',
      status: 400,
    });
    await expectSdkError(sqs.client.send(new GetQueueUrlCommand({ QueueName: prefix })), {
      name: 'QueueDoesNotExist',
      code: 'AWS.SimpleQueueService.NonExistentQueue',
      status: 400,
    });
    const list = await sqs.client.send(new ListQueuesCommand({ QueueNamePrefix: prefix }));
    assert.deepEqual(list.QueueUrls ?? [], []);
  });

  test('Given queues under a prefix, When ListQueues with the prefix, Then exactly those are listed', async () => {
    const prefix = uniqueName('sdk-list');
    const made: string[] = [];
    for (let i = 0; i < 3; i++) {
      made.push(
        (await sqs.client.send(new CreateQueueCommand({ QueueName: `${prefix}-${i}` }))).QueueUrl ?? '',
      );
    }
    await createQueue('sdk-other');
    const out = await sqs.client.send(new ListQueuesCommand({ QueueNamePrefix: prefix }));
    assert.deepEqual([...(out.QueueUrls ?? [])].sort(), [...made].sort());
    assert.equal(out.NextToken, undefined);
  });

  test('Given 5 queues, When ListQueues pages with MaxResults 2, Then NextToken walks all 5 exactly once', async () => {
    const prefix = uniqueName('sdk-page');
    const made: string[] = [];
    for (let i = 0; i < 5; i++) {
      made.push(
        (await sqs.client.send(new CreateQueueCommand({ QueueName: `${prefix}-${i}` }))).QueueUrl ?? '',
      );
    }
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const out = await sqs.client.send(
        new ListQueuesCommand({
          QueueNamePrefix: prefix,
          MaxResults: 2,
          ...(token ? { NextToken: token } : {}),
        }),
      );
      pages++;
      assert.ok((out.QueueUrls ?? []).length <= 2, 'at most MaxResults per page');
      seen.push(...(out.QueueUrls ?? []));
      token = out.NextToken;
    } while (token !== undefined && pages < 10);
    assert.equal(pages, 3);
    assert.deepEqual([...seen].sort(), [...made].sort());
  });

  test('Given a queue, When GetQueueAttributes names one attribute, Then only that one is returned', async () => {
    const url = await createQueue('sdk-oneattr', { VisibilityTimeout: '33' });
    const out = await sqs.client.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['VisibilityTimeout'] }),
    );
    assert.deepEqual(out.Attributes, { VisibilityTimeout: '33' });
  });

  test('Given visible, in-flight and delayed messages, Then ApproximateNumberOfMessages* count each', async () => {
    const url = await createQueue('sdk-counts');
    await sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'one' }));
    await sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'two' }));
    await sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'later', DelaySeconds: 600 }));
    const got = await sqs.client.send(
      new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 1, VisibilityTimeout: 600 }),
    );
    assert.equal(got.Messages?.length, 1);
    assert.deepEqual(await sqs.counts(url), { visible: 1, notVisible: 1, delayed: 1 });
  });

  test('Given a queue, When SetQueueAttributes, Then GetQueueAttributes shows the new values', async () => {
    const url = await createQueue('sdk-set');
    await sqs.client.send(
      new SetQueueAttributesCommand({
        QueueUrl: url,
        Attributes: {
          VisibilityTimeout: '120',
          MaximumMessageSize: '2048',
          ReceiveMessageWaitTimeSeconds: '5',
        },
      }),
    );
    const out = await sqs.client.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: ['VisibilityTimeout', 'MaximumMessageSize', 'ReceiveMessageWaitTimeSeconds'],
      }),
    );
    assert.deepEqual(out.Attributes, {
      VisibilityTimeout: '120',
      MaximumMessageSize: '2048',
      ReceiveMessageWaitTimeSeconds: '5',
    });
  });

  test('Given an out-of-range VisibilityTimeout, When SetQueueAttributes, Then InvalidAttributeValue (400)', async () => {
    const url = await createQueue('sdk-badattr');
    await expectSdkError(
      sqs.client.send(
        new SetQueueAttributesCommand({ QueueUrl: url, Attributes: { VisibilityTimeout: '43201' } }),
      ),
      { name: 'InvalidAttributeValue', code: 'InvalidAttributeValue', status: 400 },
    );
    const out = await sqs.client.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['VisibilityTimeout'] }),
    );
    assert.equal(out.Attributes?.VisibilityTimeout, '30', 'the refused value was not applied');
  });

  test('Given an unknown attribute name, When SetQueueAttributes, Then InvalidAttributeName (400)', async () => {
    const url = await createQueue('sdk-badattrname');
    await expectSdkError(
      sqs.client.send(
        new SetQueueAttributesCommand({
          QueueUrl: url,
          Attributes: { NoSuchAttribute: '1' } as Record<string, string>,
        }),
      ),
      { name: 'InvalidAttributeName', code: 'InvalidAttributeName', status: 400 },
    );
  });

  test('Given a queue, When TagQueue and UntagQueue, Then ListQueueTags follows', async () => {
    const url = await createQueue('sdk-tags');
    await sqs.client.send(new TagQueueCommand({ QueueUrl: url, Tags: { a: '1', b: '2', c: '3' } }));
    assert.deepEqual((await sqs.client.send(new ListQueueTagsCommand({ QueueUrl: url }))).Tags, {
      a: '1',
      b: '2',
      c: '3',
    });
    await sqs.client.send(new TagQueueCommand({ QueueUrl: url, Tags: { a: 'one' } }));
    await sqs.client.send(new UntagQueueCommand({ QueueUrl: url, TagKeys: ['b'] }));
    assert.deepEqual((await sqs.client.send(new ListQueueTagsCommand({ QueueUrl: url }))).Tags, {
      a: 'one',
      c: '3',
    });
    await sqs.client.send(new UntagQueueCommand({ QueueUrl: url, TagKeys: ['a', 'c'] }));
    const none = await sqs.client.send(new ListQueueTagsCommand({ QueueUrl: url }));
    assert.deepEqual(none.Tags ?? {}, {});
  });
});

describe('JSON protocol: messages', () => {
  const attributes: Record<string, MessageAttributeValue> = {
    str: { DataType: 'String', StringValue: 'héllo wörld ✓' },
    num: { DataType: 'Number', StringValue: '-12.5e3' },
    bin: { DataType: 'Binary', BinaryValue: new Uint8Array([0, 1, 2, 254, 255]) },
    'custom.str': { DataType: 'String.json', StringValue: '{"k":1}' },
    'custom.num': { DataType: 'Number.float', StringValue: '3.14' },
    'custom.bin': { DataType: 'Binary.gif', BinaryValue: new Uint8Array([71, 73, 70, 56]) },
  };

  test('Given String, Number, Binary and custom attributes and AWSTraceHeader, When SendMessage, Then every MD5 is the documented one and ReceiveMessage returns them all', async () => {
    const url = await createQueue('sdk-attrs');
    const body = 'body with ünïcödé and \u{1F600} and <xml/> & stuff';
    const sent = await sqs.client.send(
      new SendMessageCommand({
        QueueUrl: url,
        MessageBody: body,
        MessageAttributes: attributes,
        MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: TRACE_HEADER } },
      }),
    );
    assert.ok(sent.MessageId);
    assert.equal(sent.MD5OfMessageBody, md5Hex(body));
    assert.equal(sent.MD5OfMessageAttributes, md5OfAttributes(attributes));
    assert.equal(
      sent.MD5OfMessageSystemAttributes,
      md5OfAttributes({ AWSTraceHeader: { DataType: 'String', StringValue: TRACE_HEADER } }),
    );

    const got = await sqs.client.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['All'],
      }),
    );
    assert.equal(got.Messages?.length, 1);
    const m = got.Messages?.[0];
    assert.equal(m?.MessageId, sent.MessageId);
    assert.equal(m?.Body, body);
    assert.equal(m?.MD5OfBody, md5Hex(body));
    assert.equal(m?.MD5OfMessageAttributes, md5OfAttributes(attributes));
    assert.ok(m?.ReceiptHandle);
    const back = m?.MessageAttributes ?? {};
    assert.deepEqual(Object.keys(back).sort(), Object.keys(attributes).sort());
    for (const [name, want] of Object.entries(attributes)) {
      assert.equal(back[name]?.DataType, want.DataType, `${name} DataType`);
      if (want.BinaryValue !== undefined) {
        assert.deepEqual(
          Buffer.from(back[name]?.BinaryValue ?? []),
          Buffer.from(want.BinaryValue),
          `${name} value`,
        );
      } else {
        assert.equal(back[name]?.StringValue, want.StringValue, `${name} value`);
      }
    }
    const sys = m?.Attributes ?? {};
    assert.equal(sys.AWSTraceHeader, TRACE_HEADER);
    assert.equal(sys.ApproximateReceiveCount, '1');
    assert.match(sys.SentTimestamp ?? '', /^\d{13}$/);
    assert.match(sys.ApproximateFirstReceiveTimestamp ?? '', /^\d{13}$/);
    assert.ok(sys.SenderId, 'SenderId');
  });

  test('Given attributes a.one, a.two, b.one, When ReceiveMessage asks for "a.*", Then only the a.* ones come back with their MD5', async () => {
    const url = await createQueue('sdk-prefix');
    const all: Record<string, MessageAttributeValue> = {
      'a.one': { DataType: 'String', StringValue: '1' },
      'a.two': { DataType: 'Number', StringValue: '2' },
      'b.one': { DataType: 'String', StringValue: '3' },
    };
    await sqs.client.send(
      new SendMessageCommand({ QueueUrl: url, MessageBody: 'prefixed', MessageAttributes: all }),
    );
    const got = await sqs.client.send(
      new ReceiveMessageCommand({ QueueUrl: url, MessageAttributeNames: ['a.*'] }),
    );
    const m = got.Messages?.[0];
    assert.deepEqual(Object.keys(m?.MessageAttributes ?? {}).sort(), ['a.one', 'a.two']);
    const returned = {
      'a.one': all['a.one'] as MessageAttributeValue,
      'a.two': all['a.two'] as MessageAttributeValue,
    };
    assert.equal(m?.MD5OfMessageAttributes, md5OfAttributes(returned), 'MD5 over the attributes returned');
  });

  test('Given a message with attributes, When ReceiveMessage names none, Then no attributes and no system attributes come back', async () => {
    const url = await createQueue('sdk-noattrs');
    await sqs.client.send(
      new SendMessageCommand({ QueueUrl: url, MessageBody: 'x', MessageAttributes: attributes }),
    );
    const got = await sqs.client.send(new ReceiveMessageCommand({ QueueUrl: url }));
    const m = got.Messages?.[0];
    assert.equal(m?.Body, 'x');
    assert.deepEqual(Object.keys(m?.MessageAttributes ?? {}), []);
    assert.deepEqual(Object.keys(m?.Attributes ?? {}), []);
  });

  test('Given a body of exactly 1 MiB, When SendMessage, Then it is accepted and received whole', async () => {
    const url = await createQueue('sdk-1mib');
    const body = 'm'.repeat(MIB);
    const sent = await sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: body }));
    assert.equal(sent.MD5OfMessageBody, md5Hex(body));
    const got = await sqs.client.send(new ReceiveMessageCommand({ QueueUrl: url }));
    assert.equal(got.Messages?.[0]?.Body?.length, MIB);
  });

  test('Given a body over 1 MiB, When SendMessage, Then InvalidParameterValue (400)', async () => {
    const url = await createQueue('sdk-toolong');
    await expectSdkError(
      sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'x'.repeat(MIB + 1) })),
      {
        name: 'InvalidParameterValue',
        code: 'InvalidParameterValue',
        status: 400,
      },
    );
    assert.deepEqual(await sqs.counts(url), { visible: 0, notVisible: 0, delayed: 0 });
  });

  test('Given 3 entries, When SendMessageBatch, Then all are Successful with the right MD5s', async () => {
    const url = await createQueue('sdk-batch');
    const out = await sqs.client.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: 'a', MessageBody: 'first' },
          {
            Id: 'b',
            MessageBody: 'second',
            MessageAttributes: { k: { DataType: 'String', StringValue: 'v' } },
          },
          { Id: 'c', MessageBody: 'third', DelaySeconds: 0 },
        ],
      }),
    );
    assert.deepEqual(out.Failed ?? [], []);
    const byId = new Map((out.Successful ?? []).map((e) => [e.Id, e]));
    assert.deepEqual([...byId.keys()].sort(), ['a', 'b', 'c']);
    assert.equal(byId.get('a')?.MD5OfMessageBody, md5Hex('first'));
    assert.equal(
      byId.get('b')?.MD5OfMessageAttributes,
      md5OfAttributes({ k: { DataType: 'String', StringValue: 'v' } }),
    );
    assert.equal((await sqs.counts(url)).visible, 3);
  });

  test('Given a batch with one entry out of range, When SendMessageBatch, Then that entry is in Failed and the others are sent', async () => {
    const url = await createQueue('sdk-batch-mixed');
    const out = await sqs.client.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: 'good1', MessageBody: 'ok 1' },
          // DelaySeconds is 0 to 900.
          { Id: 'bad', MessageBody: 'not ok', DelaySeconds: 901 },
          { Id: 'good2', MessageBody: 'ok 2' },
        ],
      }),
    );
    assert.deepEqual((out.Successful ?? []).map((e) => e.Id).sort(), ['good1', 'good2']);
    assert.equal(out.Failed?.length, 1);
    assert.equal(out.Failed?.[0]?.Id, 'bad');
    assert.equal(out.Failed?.[0]?.SenderFault, true);
    assert.equal(out.Failed?.[0]?.Code, 'InvalidParameterValue');
    assert.equal((await sqs.counts(url)).visible, 2);
  });

  test('Given 11 entries, When SendMessageBatch, Then TooManyEntriesInBatchRequest (400)', async () => {
    const url = await createQueue('sdk-batch-11');
    const Entries = Array.from({ length: 11 }, (_, i) => ({ Id: `e${i}`, MessageBody: `m${i}` }));
    await expectSdkError(sqs.client.send(new SendMessageBatchCommand({ QueueUrl: url, Entries })), {
      name: 'TooManyEntriesInBatchRequest',
      code: 'AWS.SimpleQueueService.TooManyEntriesInBatchRequest',
      status: 400,
    });
  });

  test('Given two entries with one Id, When SendMessageBatch, Then BatchEntryIdsNotDistinct (400)', async () => {
    const url = await createQueue('sdk-batch-dup');
    await expectSdkError(
      sqs.client.send(
        new SendMessageBatchCommand({
          QueueUrl: url,
          Entries: [
            { Id: 'same', MessageBody: '1' },
            { Id: 'same', MessageBody: '2' },
          ],
        }),
      ),
      {
        name: 'BatchEntryIdsNotDistinct',
        code: 'AWS.SimpleQueueService.BatchEntryIdsNotDistinct',
        status: 400,
      },
    );
    assert.equal((await sqs.counts(url)).visible, 0);
  });

  test('Given entries adding up to more than 1 MiB, When SendMessageBatch, Then BatchRequestTooLong (400) and nothing is sent', async () => {
    const url = await createQueue('sdk-batch-long');
    const half = 'h'.repeat(600 * 1024);
    await expectSdkError(
      sqs.client.send(
        new SendMessageBatchCommand({
          QueueUrl: url,
          Entries: [
            { Id: 'a', MessageBody: half },
            { Id: 'b', MessageBody: half },
          ],
        }),
      ),
      { name: 'BatchRequestTooLong', code: 'AWS.SimpleQueueService.BatchRequestTooLong', status: 400 },
    );
    assert.equal((await sqs.counts(url)).visible, 0);
  });

  test('Given no entries, When SendMessageBatch, Then EmptyBatchRequest (400)', async () => {
    const url = await createQueue('sdk-batch-empty');
    await expectSdkError(sqs.client.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: [] })), {
      name: 'EmptyBatchRequest',
      code: 'AWS.SimpleQueueService.EmptyBatchRequest',
      status: 400,
    });
  });

  test('Given 5 messages, When ReceiveMessage with MaxNumberOfMessages 3, Then at most 3 come back, and all 5 over several receives', async () => {
    const url = await createQueue('sdk-max');
    for (let i = 0; i < 5; i++)
      await sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: `m${i}` }));
    const first = await sqs.client.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 3 }));
    const n = first.Messages?.length ?? 0;
    assert.ok(n >= 1 && n <= 3, `got ${n}`);
    const bodies = new Set((first.Messages ?? []).map((m) => m.Body));
    for (let i = 0; i < 10 && bodies.size < 5; i++) {
      const more = await sqs.client.send(
        new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10 }),
      );
      for (const m of more.Messages ?? []) {
        assert.ok(!bodies.has(m.Body), `in-flight message ${m.Body} received twice`);
        bodies.add(m.Body);
      }
    }
    assert.deepEqual([...bodies].sort(), ['m0', 'm1', 'm2', 'm3', 'm4']);
  });

  test('Given a message received with VisibilityTimeout 600, When received again, Then it is hidden; after ChangeMessageVisibility 0 it is back', async () => {
    const url = await createQueue('sdk-vis');
    await sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'hide me' }));
    const handle = await receiveHandle(url, 600);
    const hidden = await sqs.client.send(new ReceiveMessageCommand({ QueueUrl: url }));
    assert.deepEqual(hidden.Messages ?? [], []);
    assert.deepEqual(await sqs.counts(url), { visible: 0, notVisible: 1, delayed: 0 });

    await sqs.client.send(
      new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: handle, VisibilityTimeout: 0 }),
    );
    // AttributeNames: the older, deprecated name of MessageSystemAttributeNames.
    const again = await sqs.client.send(
      new ReceiveMessageCommand({ QueueUrl: url, AttributeNames: ['All'] }),
    );
    assert.equal(again.Messages?.[0]?.Body, 'hide me');
    assert.equal(again.Messages?.[0]?.Attributes?.ApproximateReceiveCount, '2');
    assert.notEqual(again.Messages?.[0]?.ReceiptHandle, handle, 'a new receipt handle on every receive');
  });

  test('Given an expired handle, an older handle and a deleted message, When ChangeMessageVisibility, Then the first two act on the message and the last is InvalidParameterValue in AWS words (issue 21)', async () => {
    const url = await createQueue('sdk-vis-handles');
    await sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'm' }));
    // VisibilityTimeout 0: this handle's timeout has passed at once.
    const old = await receiveHandle(url, 0);
    await setVisibility(url, old, 600);
    assert.deepEqual(await sqs.counts(url), { visible: 0, notVisible: 1, delayed: 0 });
    await setVisibility(url, old, 0);
    const current = await receiveHandle(url, 600);
    // The older handle still moves the message received since.
    await setVisibility(url, old, 0);
    assert.deepEqual(await sqs.counts(url), { visible: 1, notVisible: 0, delayed: 0 });
    await sqs.client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: current }));
    const err = await sqs.client
      .send(
        new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: current, VisibilityTimeout: 5 }),
      )
      .then(
        () => undefined,
        (e: unknown) => e as { name: string; message: string },
      );
    assert.equal(err?.name, 'InvalidParameterValue');
    assert.equal(
      err?.message,
      `Value ${current} for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.`,
    );
  });

  test('Given two in-flight messages, When ChangeMessageVisibilityBatch to 0 with one bad handle, Then two succeed, one fails, and both are receivable', async () => {
    const url = await createQueue('sdk-visbatch');
    await sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'v1' }));
    await sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'v2' }));
    const handles: string[] = [];
    for (let i = 0; i < 5 && handles.length < 2; i++) {
      const got = await sqs.client.send(
        new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 600 }),
      );
      for (const m of got.Messages ?? []) handles.push(m.ReceiptHandle ?? '');
    }
    assert.equal(handles.length, 2);
    const out = await sqs.client.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: 'h0', ReceiptHandle: handles[0], VisibilityTimeout: 0 },
          { Id: 'h1', ReceiptHandle: handles[1], VisibilityTimeout: 0 },
          { Id: 'bogus', ReceiptHandle: 'not-a-receipt-handle', VisibilityTimeout: 0 },
        ],
      }),
    );
    assert.deepEqual((out.Successful ?? []).map((e) => e.Id).sort(), ['h0', 'h1']);
    assert.equal(out.Failed?.length, 1);
    assert.equal(out.Failed?.[0]?.Id, 'bogus');
    assert.equal(out.Failed?.[0]?.Code, 'ReceiptHandleIsInvalid');
    assert.equal(out.Failed?.[0]?.SenderFault, true);
    assert.deepEqual(await sqs.counts(url), { visible: 2, notVisible: 0, delayed: 0 });
  });

  test('Given a received message, When DeleteMessage, Then it is gone', async () => {
    const url = await createQueue('sdk-delete');
    await sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'bye' }));
    const got = await sqs.client.send(new ReceiveMessageCommand({ QueueUrl: url, VisibilityTimeout: 0 }));
    const handle = got.Messages?.[0]?.ReceiptHandle;
    assert.ok(handle);
    await sqs.client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: handle }));
    assert.deepEqual(await sqs.counts(url), { visible: 0, notVisible: 0, delayed: 0 });
    const none = await sqs.client.send(new ReceiveMessageCommand({ QueueUrl: url }));
    assert.deepEqual(none.Messages ?? [], []);
  });

  test('Given two received messages, When DeleteMessageBatch with one bad handle, Then two are deleted and one is Failed', async () => {
    const url = await createQueue('sdk-delbatch');
    await sqs.client.send(
      new SendMessageBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: '1', MessageBody: 'd1' },
          { Id: '2', MessageBody: 'd2' },
        ],
      }),
    );
    const handles: string[] = [];
    for (let i = 0; i < 5 && handles.length < 2; i++) {
      const got = await sqs.client.send(
        new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10 }),
      );
      for (const m of got.Messages ?? []) handles.push(m.ReceiptHandle ?? '');
    }
    const out = await sqs.client.send(
      new DeleteMessageBatchCommand({
        QueueUrl: url,
        Entries: [
          { Id: 'x', ReceiptHandle: handles[0] },
          { Id: 'y', ReceiptHandle: handles[1] },
          { Id: 'z', ReceiptHandle: 'garbage' },
        ],
      }),
    );
    assert.deepEqual((out.Successful ?? []).map((e) => e.Id).sort(), ['x', 'y']);
    assert.equal(out.Failed?.[0]?.Id, 'z');
    assert.equal(out.Failed?.[0]?.Code, 'ReceiptHandleIsInvalid');
    assert.deepEqual(await sqs.counts(url), { visible: 0, notVisible: 0, delayed: 0 });
  });

  test('Given a malformed receipt handle, When DeleteMessage, Then ReceiptHandleIsInvalid (404)', async () => {
    const url = await createQueue('sdk-badhandle');
    await expectSdkError(
      sqs.client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: 'garbage' })),
      {
        name: 'ReceiptHandleIsInvalid',
        code: 'ReceiptHandleIsInvalid',
        status: 404,
      },
    );
  });

  test('Given a malformed receipt handle, When ChangeMessageVisibility, Then ReceiptHandleIsInvalid (404)', async () => {
    const url = await createQueue('sdk-badhandle-vis');
    await expectSdkError(
      sqs.client.send(
        new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: 'garbage', VisibilityTimeout: 5 }),
      ),
      { name: 'ReceiptHandleIsInvalid', code: 'ReceiptHandleIsInvalid', status: 404 },
    );
  });

  test('Given an empty queue, When ReceiveMessage with WaitTimeSeconds 1, Then 200 with no messages', async () => {
    const url = await createQueue('sdk-empty-poll');
    const out = await sqs.client.send(new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 1 }));
    assert.equal(out.$metadata.httpStatusCode, 200);
    assert.deepEqual(out.Messages ?? [], []);
  });

  test(
    'Given a long poll waiting on an empty queue, When a message is sent meanwhile, Then the poll returns it',
    { timeout: 20_000 },
    async () => {
      const url = await createQueue('sdk-longpoll');
      const poll = sqs.client.send(new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 10 }));
      await waitForLongPollWaiters(sqs.server, 1);
      await sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'wake up' }));
      const out = await poll;
      assert.equal(out.Messages?.length, 1);
      assert.equal(out.Messages?.[0]?.Body, 'wake up');
    },
  );

  test('Given messages, When PurgeQueue, Then the queue is empty; a second purge within 60 s is PurgeQueueInProgress (403)', async () => {
    const url = await createQueue('sdk-purge');
    for (let i = 0; i < 3; i++)
      await sqs.client.send(new SendMessageCommand({ QueueUrl: url, MessageBody: `p${i}` }));
    await sqs.client.send(new ReceiveMessageCommand({ QueueUrl: url, VisibilityTimeout: 600 }));
    await sqs.client.send(new PurgeQueueCommand({ QueueUrl: url }));
    assert.deepEqual(await sqs.counts(url), { visible: 0, notVisible: 0, delayed: 0 });
    const none = await sqs.client.send(new ReceiveMessageCommand({ QueueUrl: url }));
    assert.deepEqual(none.Messages ?? [], []);
    await expectSdkError(sqs.client.send(new PurgeQueueCommand({ QueueUrl: url })), {
      name: 'PurgeQueueInProgress',
      code: 'AWS.SimpleQueueService.PurgeQueueInProgress',
      status: 403,
    });
  });

  test('Given no such queue, When SendMessage, Then QueueDoesNotExist (400)', async () => {
    await expectSdkError(
      sqs.client.send(
        new SendMessageCommand({
          QueueUrl: `${sqs.server.url}/000000000000/${uniqueName('sdk-gone')}`,
          MessageBody: 'x',
        }),
      ),
      { name: 'QueueDoesNotExist', code: 'AWS.SimpleQueueService.NonExistentQueue', status: 400 },
    );
  });
});

void describe('regions with auth off (issue 21 item 19)', () => {
  void test('Given a client configured for ap-southeast-2 and one for the default region, when both create queue "twin", then two queues with two URLs, each used from its own region', async () => {
    const ap = new SQSClient({
      region: 'ap-southeast-2',
      endpoint: sqs.server.url,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
      maxAttempts: 1,
    });
    const name = uniqueName('twin');
    const apUrl = (await ap.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl ?? '';
    const usUrl = (await sqs.client.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl ?? '';
    assert.equal(apUrl, `${sqs.server.url}/ap-southeast-2/000000000000/${name}`);
    assert.equal(usUrl, `${sqs.server.url}/000000000000/${name}`);
    await ap.send(new SendMessageCommand({ QueueUrl: apUrl, MessageBody: 'in ap' }));
    const got = await ap.send(new ReceiveMessageCommand({ QueueUrl: apUrl }));
    assert.equal(got.Messages?.[0]?.Body, 'in ap');
    const arn = await ap.send(
      new GetQueueAttributesCommand({ QueueUrl: apUrl, AttributeNames: ['QueueArn'] }),
    );
    assert.equal(arn.Attributes?.QueueArn, `arn:aws:sqs:ap-southeast-2:000000000000:${name}`);
    assert.equal((await sqs.client.send(new ReceiveMessageCommand({ QueueUrl: usUrl }))).Messages, undefined);
    await expectSdkError(sqs.client.send(new SendMessageCommand({ QueueUrl: apUrl, MessageBody: 'x' })), {
      name: 'QueueDoesNotExist',
      code: 'AWS.SimpleQueueService.NonExistentQueue',
      status: 400,
    });
  });
});
