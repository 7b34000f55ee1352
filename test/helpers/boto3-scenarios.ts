/**
 * The boto3 scenarios, written once and registered by each protocol's test file:
 * test/e2e/boto3-query.test.ts (Debian's boto3 1.26, Query) and test/e2e/boto3-json.test.ts (a
 * current boto3, JSON 1.0). A few calls, each checked with what botocore surfaces: the parsed
 * response, or the error code, type and HTTP status.
 *
 * Where the protocols differ, the expectation is per protocol, not loosened. Errors: over Query,
 * botocore's Error.Code is the XML <Code>; over JSON, botocore takes Code from the
 * `x-amzn-query-error` header (the same Query code) and keeps the JSON `__type` (after `#`) as
 * Error.QueryErrorCode, which Query never sets. docs/errors.md lists both per error.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { b64, boto3Calls, ok, type Boto3Result, type Boto3Run } from './boto3.js';
import { md5Hex, md5OfAttributes } from './md5.js';
import { startServer, uniqueName, type RunningServer } from './server.js';
import { metricValue } from './prometheus.js';

export type Boto3Protocol = 'query' | 'json';

export interface Boto3ScenarioOptions {
  /** The interpreter that runs test/fixtures/boto3_calls.py. */
  readonly python: string;
  /** The protocol its botocore's SQS model must speak. */
  readonly protocol: Boto3Protocol;
  /** e.g. "Debian boto3 1.26": names the tests. */
  readonly client: string;
  /** Checks the boto3 and botocore versions the script reports. */
  readonly expectVersions: (run: Boto3Run) => void;
  /** When set, every test is registered as skipped with this reason, and no server is started. */
  readonly skip?: string;
  /** Runs before the server starts (e.g. fails when a required client is missing). */
  readonly require?: () => void;
}

/** One error as both protocols carry it (docs/errors.md): the Query code and the JSON `__type`. */
interface ExpectedError {
  readonly status: number;
  readonly query: string;
  /** The JSON `__type` after its `#`. */
  readonly jsonType: string;
}

const E = {
  queueDoesNotExist: {
    status: 400,
    query: 'AWS.SimpleQueueService.NonExistentQueue',
    jsonType: 'QueueDoesNotExist',
  },
  queueNameExists: { status: 400, query: 'QueueAlreadyExists', jsonType: 'QueueNameExists' },
  receiptHandleIsInvalid: {
    status: 404,
    query: 'ReceiptHandleIsInvalid',
    jsonType: 'ReceiptHandleIsInvalid',
  },
  tooManyEntries: {
    status: 400,
    query: 'AWS.SimpleQueueService.TooManyEntriesInBatchRequest',
    jsonType: 'TooManyEntriesInBatchRequest',
  },
  batchEntryIdsNotDistinct: {
    status: 400,
    query: 'AWS.SimpleQueueService.BatchEntryIdsNotDistinct',
    jsonType: 'BatchEntryIdsNotDistinct',
  },
  invalidParameterValue: {
    status: 400,
    query: 'InvalidParameterValue',
    jsonType: 'InvalidParameterValueException',
  },
  invalidAttributeValue: { status: 400, query: 'InvalidAttributeValue', jsonType: 'InvalidAttributeValue' },
  purgeQueueInProgress: {
    status: 403,
    query: 'AWS.SimpleQueueService.PurgeQueueInProgress',
    jsonType: 'PurgeQueueInProgress',
  },
} as const satisfies Record<string, ExpectedError>;

export function boto3Scenarios(opts: Boto3ScenarioOptions): void {
  const { python, protocol, client } = opts;
  const testOpts = opts.skip === undefined ? {} : { skip: opts.skip };
  let server: RunningServer;
  const calls = (c: Parameters<typeof boto3Calls>[1]): Promise<Boto3Run> => boto3Calls(server.url, c, python);

  before(async () => {
    if (opts.skip !== undefined) return;
    opts.require?.();
    server = await startServer();
  });

  after(async () => {
    await server?.stop();
  });

  function expectError(result: Boto3Result | undefined, want: ExpectedError): void {
    assert.ok(result !== undefined, 'a result');
    assert.ok(!result.ok, `expected ${want.query}, got success: ${JSON.stringify(result)}`);
    assert.equal(result.code, want.query, `error code (${result.message})`);
    assert.equal(result.status, want.status, `HTTP status (${result.code})`);
    assert.equal(result.type, 'Sender', `error type (${result.code})`);
    assert.equal(
      result.queryErrorCode,
      protocol === 'json' ? want.jsonType : null,
      `QueryErrorCode (${result.code})`,
    );
  }

  test(
    `${client}: its SQS model speaks the ${protocol} protocol, and the server saw ${protocol}`,
    testOpts,
    async () => {
      const run = await calls([{ op: 'list_queues' }]);
      assert.equal(run.protocol, protocol);
      opts.expectVersions(run);
      assert.equal(run.results[0]?.ok, true);
      const res = await fetch(`${server.controlUrl}/metrics`);
      assert.equal(res.status, 200);
      const text = await res.text();
      const other = protocol === 'json' ? 'query' : 'json';
      const seen = (p: string): number =>
        metricValue(text, 'sqs_requests_total', { action: 'ListQueues', protocol: p, status: '200' });
      assert.ok(seen(protocol) >= 1, `ListQueues counted under protocol="${protocol}"`);
      assert.equal(seen(other), 0, `ListQueues counted under protocol="${other}"`);
    },
  );

  test(
    `${client}: Given a queue with attributes and tags, When sending String, Number, Binary and custom attributes, Then receive returns them with the documented MD5s, and delete removes the message`,
    testOpts,
    async () => {
      const name = uniqueName('boto3-msg');
      const binary = Buffer.from([0, 1, 2, 3, 250, 255]);
      const attributes = {
        s: { DataType: 'String', StringValue: 'ünïcödé' },
        n: { DataType: 'Number', StringValue: '42' },
        b: { DataType: 'Binary', BinaryValue: binary },
        c: { DataType: 'Binary.custom', BinaryValue: Buffer.from('xyz') },
      };
      // Both protocols hand Binary values back as bytes (base64 on the wire, XML text or JSON blob).
      const wireAttributes = {
        s: attributes.s,
        n: attributes.n,
        b: { DataType: 'Binary', BinaryValue: b64(binary) },
        c: { DataType: 'Binary.custom', BinaryValue: b64(Buffer.from('xyz')) },
      };
      const trace = 'Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1';
      const run = await calls([
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
    },
  );

  test(
    `${client}: Given a mixed batch, When send_message_batch, Then Successful and Failed are parsed per entry`,
    testOpts,
    async () => {
      const run = await calls([
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
      // A failed entry's Code is the Query code over both protocols (docs/errors.md).
      const failed = out.Failed as Array<{ Id: string; SenderFault: boolean; Code: string }>;
      assert.deepEqual(
        failed.map((e) => [e.Id, e.SenderFault, e.Code]),
        [['bad', true, 'InvalidParameterValue']],
      );
    },
  );

  test(
    `${client}: error codes, types and HTTP statuses as botocore (${protocol}) surfaces them`,
    testOpts,
    async () => {
      const name = uniqueName('boto3-err');
      const tooMany = Array.from({ length: 11 }, (_, i) => ({ Id: `e${i}`, MessageBody: 'x' }));
      const run = await calls([
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
      expectError(r[1], E.queueNameExists);
      expectError(r[2], E.queueDoesNotExist);
      expectError(r[3], E.receiptHandleIsInvalid);
      expectError(r[4], E.tooManyEntries);
      expectError(r[5], E.batchEntryIdsNotDistinct);
      expectError(r[6], E.invalidParameterValue);
      expectError(r[7], E.invalidAttributeValue);
      ok(r[8]);
      expectError(r[9], E.purgeQueueInProgress);
      ok(r[10]);
      expectError(r[11], E.queueDoesNotExist);
    },
  );

  test(
    `${client}: Given standard-queue receipt handles, When their visibility is changed, Then a deleted message is refused in AWS's words and an older or expired handle works (issue 21, items 8 and 10)`,
    testOpts,
    async () => {
      const run = await calls([
        /* 0 */ { op: 'create_queue', params: { QueueName: uniqueName('boto3-vis') } },
        /* 1 */ { op: 'send_message', params: { QueueUrl: '$0.QueueUrl', MessageBody: 'm' } },
        // Timeout 0: this handle's visibility has expired at once.
        /* 2 */ { op: 'receive_message', params: { QueueUrl: '$0.QueueUrl', VisibilityTimeout: 0 } },
        /* 3 */ {
          op: 'change_message_visibility',
          params: {
            QueueUrl: '$0.QueueUrl',
            ReceiptHandle: '$2.Messages.0.ReceiptHandle',
            VisibilityTimeout: 60,
          },
        },
        /* 4 */ { op: 'receive_message', params: { QueueUrl: '$0.QueueUrl' } },
        /* 5 */ {
          op: 'change_message_visibility',
          params: {
            QueueUrl: '$0.QueueUrl',
            ReceiptHandle: '$2.Messages.0.ReceiptHandle',
            VisibilityTimeout: 0,
          },
        },
        /* 6 */ { op: 'receive_message', params: { QueueUrl: '$0.QueueUrl', AttributeNames: ['All'] } },
        /* 7 */ {
          op: 'delete_message',
          params: { QueueUrl: '$0.QueueUrl', ReceiptHandle: '$6.Messages.0.ReceiptHandle' },
        },
        /* 8 */ {
          op: 'change_message_visibility',
          params: {
            QueueUrl: '$0.QueueUrl',
            ReceiptHandle: '$6.Messages.0.ReceiptHandle',
            VisibilityTimeout: 10,
          },
        },
      ]);
      const r = run.results;
      ok(r[3]);
      // Hidden again by the expired handle.
      assert.deepEqual(ok(r[4]).Messages ?? [], []);
      ok(r[5]);
      const again = (
        ok(r[6]).Messages as Array<{ Attributes: Record<string, string>; ReceiptHandle: string }>
      )[0];
      assert.equal(again?.Attributes.ApproximateReceiveCount, '2');
      ok(r[7]);
      expectError(r[8], E.invalidParameterValue);
      assert.equal(
        r[8]?.ok === false ? r[8].message : '',
        `Value ${again?.ReceiptHandle} for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.`,
      );
    },
  );

  test(
    `${client}: Given FIFO queues, When purged, turned to high throughput, or a group's message comes back, Then deduplication and group order follow AWS (issue 21, items 12-14)`,
    testOpts,
    async () => {
      const fifo = { FifoQueue: 'true' };
      const send = (queue: number, body: string, group: string, dedup: string) => ({
        op: 'send_message',
        params: {
          QueueUrl: `$${queue}.QueueUrl`,
          MessageBody: body,
          MessageGroupId: group,
          MessageDeduplicationId: dedup,
        },
      });
      const run = await calls([
        /* 0 */ {
          op: 'create_queue',
          params: { QueueName: `${uniqueName('boto3-fp')}.fifo`, Attributes: fifo },
        },
        /* 1 */ send(0, 'a', 'g', 'd'),
        /* 2 */ { op: 'purge_queue', params: { QueueUrl: '$0.QueueUrl' } },
        /* 3 */ send(0, 'a', 'g', 'd'),
        /* 4 */ {
          op: 'create_queue',
          params: { QueueName: `${uniqueName('boto3-ht')}.fifo`, Attributes: fifo },
        },
        /* 5 */ {
          op: 'set_queue_attributes',
          params: {
            QueueUrl: '$4.QueueUrl',
            Attributes: { DeduplicationScope: 'messageGroup', FifoThroughputLimit: 'perMessageGroupId' },
          },
        },
        /* 6 */ send(4, 'a', 'g1', 'd'),
        /* 7 */ send(4, 'a', 'g2', 'd'),
        /* 8 */ {
          op: 'create_queue',
          params: { QueueName: `${uniqueName('boto3-go')}.fifo`, Attributes: fifo },
        },
        /* 9-11 */ send(8, 'g1-a', 'g1', 'g1-a'),
        send(8, 'g1-b', 'g1', 'g1-b'),
        send(8, 'g3-c', 'g3', 'g3-c'),
        /* 12 */ { op: 'receive_message', params: { QueueUrl: '$8.QueueUrl', VisibilityTimeout: 0 } },
        /* 13 */ { op: 'receive_message', params: { QueueUrl: '$8.QueueUrl', MaxNumberOfMessages: 10 } },
      ]);
      const r = run.results;
      assert.notEqual(ok(r[3]).MessageId, ok(r[1]).MessageId, 'a new message after the purge');
      ok(r[5]);
      assert.notEqual(ok(r[7]).MessageId, ok(r[6]).MessageId, 'the same id in another group is new');
      assert.deepEqual(
        (ok(r[12]).Messages as Array<{ Body: string }>).map((m) => m.Body),
        ['g1-a'],
      );
      // g1 came back (VisibilityTimeout 0) after g3 was waiting: g3 first.
      assert.deepEqual(
        (ok(r[13]).Messages as Array<{ Body: string }>).map((m) => m.Body),
        ['g3-c', 'g1-a', 'g1-b'],
      );
    },
  );
}
