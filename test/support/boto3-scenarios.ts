/**
 * The boto3 scenarios, written once and registered by each client's test file:
 * test/e2e/boto3-query.test.ts (Debian's boto3 1.26, Query), test/e2e/boto3-json.test.ts (a
 * current boto3, JSON 1.0) and test/e2e/sdk-scenarios.test.ts (@aws-sdk/client-sqs, JSON 1.0, by
 * way of test/support/sdk-calls.ts). A few calls, each checked with what the client surfaces: the
 * parsed response, or the error code, type and HTTP status.
 *
 * Where the protocols differ, the expectation is per protocol, not loosened. Errors: over Query,
 * botocore's Error.Code is the XML <Code>; over JSON, botocore takes Code from the
 * `x-amzn-query-error` header (the same Query code) and keeps the JSON `__type` (after `#`) as
 * Error.QueryErrorCode, which Query never sets. docs/errors.md lists both per error.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { b64, boto3Calls, ok, type Boto3Call, type Boto3Result, type Boto3Run } from './boto3.js';
import { md5Hex, md5OfAttributes, type AttributeValue } from './md5.js';
import { startServer, uniqueName, type RunningServer } from './server.js';
import { metricValue } from './prometheus.js';

export type Boto3Protocol = 'query' | 'json';

export interface Boto3ScenarioOptions {
  /** The interpreter that runs test/fixtures/boto3_calls.py (Debian's unless told). */
  readonly python?: string;
  /** Runs the calls through another client instead of boto3 (test/support/sdk-calls.ts). */
  readonly run?: (endpoint: string, calls: readonly Boto3Call[]) => Promise<Boto3Run>;
  /** The protocol its botocore's SQS model must speak. */
  readonly protocol: Boto3Protocol;
  /** e.g. "Debian boto3 1.26": names the tests. */
  readonly client: string;
  /** Checks the boto3 and botocore versions the script reports. */
  readonly expectVersions: (run: Boto3Run) => void;
  /** When set, every test is registered as skipped with this reason, and no server is started. */
  readonly skip?: string;
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
  invalidAttributeName: { status: 400, query: 'InvalidAttributeName', jsonType: 'InvalidAttributeName' },
  missingParameter: {
    status: 400,
    query: 'MissingParameter',
    jsonType: 'MissingRequiredParameterException',
  },
  batchRequestTooLong: {
    status: 400,
    query: 'AWS.SimpleQueueService.BatchRequestTooLong',
    jsonType: 'BatchRequestTooLong',
  },
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
  const calls = (c: readonly Boto3Call[]): Promise<Boto3Run> =>
    opts.run === undefined ? boto3Calls(server.url, c, python) : opts.run(server.url, c);

  before(async () => {
    if (opts.skip !== undefined) return;
    server = await startServer();
  });

  after(async () => {
    await server?.stop();
  });

  /** `message`: AWS's recorded wording, when the test pins it. */
  function expectError(result: Boto3Result | undefined, want: ExpectedError, message?: string): void {
    assert.ok(result !== undefined, 'a result');
    assert.ok(!result.ok, `expected ${want.query}, got success: ${JSON.stringify(result)}`);
    assert.equal(result.code, want.query, `error code (${result.message})`);
    if (message !== undefined) assert.equal(result.message, message, `message of ${want.query}`);
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
      // AWS words it per protocol (recorded): Query adds "for this wsdl version".
      const noQueue =
        protocol === 'query'
          ? 'The specified queue does not exist for this wsdl version.'
          : 'The specified queue does not exist.';
      expectError(r[2], E.queueDoesNotExist, noQueue);
      expectError(r[3], E.receiptHandleIsInvalid);
      expectError(r[4], E.tooManyEntries);
      expectError(r[5], E.batchEntryIdsNotDistinct);
      expectError(r[6], E.invalidParameterValue);
      expectError(r[7], E.invalidAttributeValue);
      ok(r[8]);
      expectError(r[9], E.purgeQueueInProgress);
      ok(r[10]);
      expectError(r[11], E.queueDoesNotExist, noQueue);
    },
  );

  test(
    `${client}: Given an empty body, an empty String attribute value and attribute names of other scripts, When sent, Then AWS's answers (recorded from AWS)`,
    testOpts,
    async () => {
      const unicode = { 'attr.1øßä': { DataType: 'String', StringValue: 'v' } };
      const longest = { ['ø'.repeat(256)]: { DataType: 'Number', StringValue: '1' } };
      const send = (
        attributes: Record<string, unknown>,
      ): { op: string; params: Record<string, unknown> } => ({
        op: 'send_message',
        params: { QueueUrl: '$0.QueueUrl', MessageBody: 'b', MessageAttributes: attributes },
      });
      const badNames = ['AWS.x', 'amazon.y', '.a', 'a.', 'a..b', 'a b', 'a/b', 'x'.repeat(257)];
      const run = await calls([
        /* 0 */ { op: 'create_queue', params: { QueueName: uniqueName('boto3-texts') } },
        /* 1 */ { op: 'send_message', params: { QueueUrl: '$0.QueueUrl', MessageBody: '' } },
        /* 2 */ send({ s: { DataType: 'String', StringValue: '' } }),
        /* 3 */ send(unicode),
        /* 4 */ send(longest),
        ...badNames.map((n) => send({ [n]: { DataType: 'String', StringValue: 'v' } })),
      ]);
      const r = run.results;
      expectError(r[1], E.missingParameter, 'The request must contain the parameter MessageBody.');
      expectError(
        r[2],
        E.invalidParameterValue,
        "Message (user) attribute 's' must contain a non-empty value of type 'String'.",
      );
      assert.equal(ok(r[3]).MD5OfMessageAttributes, md5OfAttributes(unicode));
      assert.equal(ok(r[4]).MD5OfMessageAttributes, md5OfAttributes(longest));
      badNames.forEach((n, i) =>
        expectError(r[5 + i], E.invalidParameterValue, `Message attribute name '${n}' is invalid.`),
      );
    },
  );

  test(
    `${client}: SetQueueAttributes FifoQueue on a FIFO queue: Given FIFO-only attributes on a standard queue and FifoQueue on either kind, When created or set, Then AWS's errors, except that FifoQueue=true on a FIFO queue is 200 and changes nothing`,
    testOpts,
    async () => {
      const create = (attributes: Record<string, string>, name = uniqueName('boto3-std')): Boto3Call => ({
        op: 'create_queue',
        params: { QueueName: name, Attributes: attributes },
      });
      const set = (url: string, attributes: Record<string, string>): Boto3Call => ({
        op: 'set_queue_attributes',
        params: { QueueUrl: url, Attributes: attributes },
      });
      const run = await calls([
        /* 0 */ create({}),
        /* 1 */ create({ FifoQueue: 'true' }, `${uniqueName('boto3-fifo')}.fifo`),
        /* 2 */ create({ FifoQueue: 'false' }),
        /* 3 */ create({ ContentBasedDeduplication: 'false' }),
        /* 4 */ create({ DeduplicationScope: 'queue' }),
        /* 5 */ create({ FifoThroughputLimit: 'perQueue' }),
        /* 6 */ set('$0.QueueUrl', { FifoQueue: 'true' }),
        /* 7 */ set('$0.QueueUrl', { ContentBasedDeduplication: 'false' }),
        /* 8 */ set('$1.QueueUrl', { FifoQueue: 'true' }),
        /* 9 */ set('$1.QueueUrl', { FifoQueue: 'false' }),
        /* 10 */ { op: 'get_queue_attributes', params: { QueueUrl: '$1.QueueUrl', AttributeNames: ['All'] } },
      ]);
      const r = run.results;
      ok(r[0]);
      ok(r[1]);
      expectError(r[2], E.invalidAttributeName, 'Unknown Attribute FifoQueue.');
      expectError(r[3], E.invalidAttributeName, 'Unknown Attribute ContentBasedDeduplication.');
      for (const [i, name] of [
        [4, 'DeduplicationScope'],
        [5, 'FifoThroughputLimit'],
      ] as const) {
        expectError(
          r[i],
          E.invalidAttributeName,
          `You can specify the ${name} only when FifoQueue is set to true.`,
        );
      }
      expectError(r[6], E.invalidAttributeName, 'Unknown Attribute FifoQueue.');
      expectError(r[7], E.invalidAttributeName, 'Unknown Attribute ContentBasedDeduplication.');
      assert.equal(r[8]?.status, 200, JSON.stringify(r[8]));
      expectError(
        r[9],
        E.invalidAttributeValue,
        'Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not supported.',
      );
      const after = ok(r[10]).Attributes as Record<string, string>;
      assert.equal(after.FifoQueue, 'true', 'still a FIFO queue');
      assert.equal(after.ContentBasedDeduplication, 'false');
    },
  );

  test(
    `${client}: Given queues whose attributes were changed (SSE-KMS on), When every documented default is set back (KmsMasterKeyId ""), Then GetQueueAttributes shows a new queue's attributes`,
    testOpts,
    async () => {
      const standardDefaults = {
        DelaySeconds: '0',
        MaximumMessageSize: '1048576',
        MessageRetentionPeriod: '345600',
        ReceiveMessageWaitTimeSeconds: '0',
        VisibilityTimeout: '30',
        KmsMasterKeyId: '',
        KmsDataKeyReusePeriodSeconds: '300',
        SqsManagedSseEnabled: 'true',
        Policy: '',
        RedrivePolicy: '',
        RedriveAllowPolicy: '',
      };
      const fifoDefaults = {
        ...standardDefaults,
        ContentBasedDeduplication: 'false',
        DeduplicationScope: 'queue',
        FifoThroughputLimit: 'perQueue',
      };
      const changed = {
        DelaySeconds: '5',
        MaximumMessageSize: '2048',
        MessageRetentionPeriod: '600',
        ReceiveMessageWaitTimeSeconds: '2',
        VisibilityTimeout: '60',
        KmsMasterKeyId: 'alias/aws/sqs',
        KmsDataKeyReusePeriodSeconds: '600',
        Policy: JSON.stringify({ Version: '2012-10-17', Statement: [] }),
        RedriveAllowPolicy: JSON.stringify({ redrivePermission: 'denyAll' }),
      };
      const fifoChanged = {
        ...changed,
        DelaySeconds: '0',
        ContentBasedDeduplication: 'true',
        DeduplicationScope: 'messageGroup',
        FifoThroughputLimit: 'perMessageGroupId',
      };
      const all = (ref: string): Boto3Call => ({
        op: 'get_queue_attributes',
        params: { QueueUrl: ref, AttributeNames: ['All'] },
      });
      const set = (ref: string, attributes: Record<string, string>): Boto3Call => ({
        op: 'set_queue_attributes',
        params: { QueueUrl: ref, Attributes: attributes },
      });
      const run = await calls([
        /* 0 */ { op: 'create_queue', params: { QueueName: uniqueName('boto3-defaults') } },
        /* 1 */ {
          op: 'create_queue',
          params: { QueueName: `${uniqueName('boto3-defaults')}.fifo`, Attributes: { FifoQueue: 'true' } },
        },
        /* 2 */ all('$0.QueueUrl'),
        /* 3 */ all('$1.QueueUrl'),
        /* 4 */ set('$0.QueueUrl', changed),
        /* 5 */ set('$1.QueueUrl', fifoChanged),
        /* 6 */ all('$0.QueueUrl'),
        /* 7 */ set('$0.QueueUrl', standardDefaults),
        /* 8 */ set('$1.QueueUrl', fifoDefaults),
        /* 9 */ all('$0.QueueUrl'),
        /* 10 */ all('$1.QueueUrl'),
      ]);
      const r = run.results;
      // LastModifiedTimestamp moves with every change; everything else must be as it was.
      const attributes = (i: number): Record<string, string> => {
        const all = { ...(ok(r[i]).Attributes as Record<string, string>) };
        delete all.LastModifiedTimestamp;
        return all;
      };
      for (const i of [4, 5, 7, 8]) ok(r[i]);
      assert.equal(attributes(6).KmsMasterKeyId, 'alias/aws/sqs', 'SSE-KMS was on');
      assert.deepEqual(attributes(9), attributes(2), 'standard queue back to its defaults');
      assert.deepEqual(attributes(10), attributes(3), 'FIFO queue back to its defaults');
    },
  );

  test(
    `${client}: SendMessageBatch applies the queue's MaximumMessageSize to each entry: Given MaximumMessageSize 1024, When entries of 1,024 and 1,025 bytes are sent in one batch, Then only the second fails; raised to 2048, an entry of 2,040 bytes plus an 8-byte attribute fits; a batch over 1 MiB is refused whole`,
    testOpts,
    async () => {
      const attribute = { k: { DataType: 'String', StringValue: 'x' } };
      const half = 'y'.repeat(600 * 1024);
      const run = await calls([
        /* 0 */ {
          op: 'create_queue',
          params: { QueueName: uniqueName('boto3-size'), Attributes: { MaximumMessageSize: '1024' } },
        },
        /* 1 */ {
          op: 'send_message_batch',
          params: {
            QueueUrl: '$0.QueueUrl',
            Entries: [
              { Id: 'A', MessageBody: 'a'.repeat(1024) },
              { Id: 'B', MessageBody: 'a'.repeat(1025) },
            ],
          },
        },
        /* 2 */ {
          op: 'set_queue_attributes',
          params: { QueueUrl: '$0.QueueUrl', Attributes: { MaximumMessageSize: '2048' } },
        },
        // 2,040 bytes of body + name 1 + data type 6 + value 1 = 2,048: the limit itself fits.
        /* 3 */ {
          op: 'send_message_batch',
          params: {
            QueueUrl: '$0.QueueUrl',
            Entries: [
              { Id: 'full', MessageBody: 'a'.repeat(2040), MessageAttributes: attribute },
              { Id: 'small', MessageBody: 'a' },
            ],
          },
        },
        /* 4 */ { op: 'send_message', params: { QueueUrl: '$0.QueueUrl', MessageBody: 'a'.repeat(2049) } },
        /* 5 */ {
          op: 'send_message_batch',
          params: {
            QueueUrl: '$0.QueueUrl',
            Entries: [
              { Id: 'a', MessageBody: half },
              { Id: 'b', MessageBody: half },
            ],
          },
        },
      ]);
      const r = run.results;
      const first = ok(r[1]);
      assert.deepEqual(
        (first.Successful as Array<{ Id: string; MD5OfMessageBody: string }>).map((e) => [
          e.Id,
          e.MD5OfMessageBody,
        ]),
        [['A', md5Hex('a'.repeat(1024))]],
      );
      assert.deepEqual(first.Failed, [
        {
          Id: 'B',
          SenderFault: true,
          Code: 'InvalidParameterValue',
          Message:
            'One or more parameters cannot be validated. Reason: Message must be shorter than 1024 bytes.',
        },
      ]);
      ok(r[2]);
      const second = ok(r[3]);
      assert.deepEqual(
        (second.Successful as Array<{ Id: string; MD5OfMessageAttributes?: string }>).map((e) => [
          e.Id,
          e.MD5OfMessageAttributes,
        ]),
        [
          ['full', md5OfAttributes(attribute)],
          ['small', undefined],
        ],
      );
      assert.ok(!('Failed' in second), `no Failed when no entry failed: ${JSON.stringify(second)}`);
      // SendMessage words the same refusal differently.
      expectError(
        r[4],
        E.invalidParameterValue,
        'One or more parameters are invalid. Reason: Message must be shorter than 2048 bytes.',
      );
      expectError(
        r[5],
        E.batchRequestTooLong,
        `Batch requests cannot be longer than 1048576 bytes. You have sent ${2 * half.length} bytes.`,
      );
    },
  );

  test(
    `${client}: SendMessageBatch, DeleteMessageBatch and ChangeMessageVisibilityBatch: Given batches whose every entry succeeds, Then the reply has no Failed (JSON: no key at all; Query: no BatchResultErrorEntry)`,
    testOpts,
    async () => {
      const entries = (path: string, extra: Record<string, unknown> = {}): Array<Record<string, unknown>> =>
        [0, 1].map((i) => ({ Id: `e${i}`, ReceiptHandle: `${path}.${i}.ReceiptHandle`, ...extra }));
      const run = await calls([
        /* 0 */ { op: 'create_queue', params: { QueueName: uniqueName('boto3-nofailed') } },
        /* 1 */ {
          op: 'send_message_batch',
          params: {
            QueueUrl: '$0.QueueUrl',
            Entries: [
              { Id: 'a', MessageBody: 'a' },
              { Id: 'b', MessageBody: 'b' },
            ],
          },
        },
        /* 2 */ {
          op: 'receive_message',
          params: { QueueUrl: '$0.QueueUrl', MaxNumberOfMessages: 10, WaitTimeSeconds: 1 },
        },
        /* 3 */ {
          op: 'change_message_visibility_batch',
          params: { QueueUrl: '$0.QueueUrl', Entries: entries('$2.Messages', { VisibilityTimeout: 60 }) },
        },
        /* 4 */ {
          op: 'delete_message_batch',
          params: { QueueUrl: '$0.QueueUrl', Entries: entries('$2.Messages') },
        },
      ]);
      const r = run.results;
      assert.equal((ok(r[2]).Messages as unknown[]).length, 2, 'both messages received at once');
      for (const [action, i] of [
        ['SendMessageBatch', 1],
        ['ChangeMessageVisibilityBatch', 3],
        ['DeleteMessageBatch', 4],
      ] as const) {
        const out = ok(r[i]);
        assert.equal((out.Successful as unknown[]).length, 2, action);
        assert.ok(!('Failed' in out), `${action}: no Failed: ${JSON.stringify(out)}`);
      }
    },
  );

  test(
    `${client}: MessageAttributeNames: a prefix filter is everything before .*: Given attributes Help.Me, Hello and General, When received with Hel.*, Then Hello and Help.Me with the MD5 of those two; All, *, .*, plain and unknown names as before`,
    testOpts,
    async () => {
      const attributes = {
        'Help.Me': { DataType: 'String', StringValue: 'me' },
        Hello: { DataType: 'Number', StringValue: '2' },
        General: { DataType: 'String', StringValue: 'g' },
      };
      const filters = [['Hel.*'], ['All'], ['*'], ['.*'], ['General'], ['Nope'], ['Help.*', 'General']];
      const run = await calls([
        { op: 'create_queue', params: { QueueName: uniqueName('boto3-filter') } },
        {
          op: 'send_message',
          params: { QueueUrl: '$0.QueueUrl', MessageBody: 'b', MessageAttributes: attributes },
        },
        // VisibilityTimeout 0: the one message is there for every receive.
        ...filters.map((names) => ({
          op: 'receive_message',
          params: { QueueUrl: '$0.QueueUrl', VisibilityTimeout: 0, MessageAttributeNames: names },
        })),
      ]);
      const pick = (...names: Array<keyof typeof attributes>): Record<string, AttributeValue> =>
        Object.fromEntries(names.map((n) => [n, attributes[n]]));
      const expected = [
        pick('Help.Me', 'Hello'),
        attributes,
        attributes,
        attributes,
        pick('General'),
        undefined,
        pick('Help.Me', 'General'),
      ];
      expected.forEach((want, i) => {
        const [m] = ok(run.results[2 + i]).Messages as Array<Record<string, unknown>>;
        const what = `filter ${JSON.stringify(filters[i])}`;
        assert.deepEqual(m?.MessageAttributes, want, what);
        assert.equal(m?.MD5OfMessageAttributes, want && md5OfAttributes(want), `MD5 for ${what}`);
      });
    },
  );

  test(
    `${client}: Given X-Amzn-Trace-Id on SendMessage and SendMessageBatch, When received, Then it is the AWSTraceHeader, unless the message sets its own`,
    testOpts,
    async () => {
      const header = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1';
      const own = 'Root=1-67891233-abcdef012345678912345678;Sampled=0';
      const traced = { 'X-Amzn-Trace-Id': header };
      const run = await calls([
        { op: 'create_queue', params: { QueueName: uniqueName('boto3-trace') } },
        { op: 'send_message', params: { QueueUrl: '$0.QueueUrl', MessageBody: 'one' }, headers: traced },
        {
          op: 'send_message',
          params: {
            QueueUrl: '$0.QueueUrl',
            MessageBody: 'own',
            MessageSystemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: own } },
          },
          headers: traced,
        },
        {
          op: 'send_message_batch',
          params: {
            QueueUrl: '$0.QueueUrl',
            Entries: [
              { Id: 'a', MessageBody: 'batch-a' },
              { Id: 'b', MessageBody: 'batch-b' },
            ],
          },
          headers: traced,
        },
        { op: 'send_message', params: { QueueUrl: '$0.QueueUrl', MessageBody: 'untraced' } },
        {
          op: 'receive_message',
          params: { QueueUrl: '$0.QueueUrl', MaxNumberOfMessages: 10, AttributeNames: ['AWSTraceHeader'] },
        },
      ]);
      const messages = ok(run.results[5]).Messages as Array<{
        Body: string;
        Attributes?: Record<string, string>;
      }>;
      const traces = Object.fromEntries(messages.map((m) => [m.Body, m.Attributes?.AWSTraceHeader]));
      assert.deepEqual(traces, {
        one: header,
        own,
        'batch-a': header,
        'batch-b': header,
        untraced: undefined,
      });
    },
  );

  test(
    `${client}: Given any reply, success or error, Then its Content-Type is exactly AWS's (${protocol})`,
    testOpts,
    async () => {
      const run = await calls([
        { op: 'list_queues' },
        { op: 'get_queue_url', params: { QueueName: uniqueName('boto3-nosuch') } },
      ]);
      const want = protocol === 'json' ? 'application/x-amz-json-1.0' : 'text/xml';
      for (const r of run.results) assert.equal(r.contentType, want);
      expectError(run.results[1], E.queueDoesNotExist);
    },
  );

  test(
    `${client}: Given standard-queue receipt handles, When their visibility is changed, Then a deleted message is refused in AWS's words and an older or expired handle works`,
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
    `${client}: Given FIFO queues, When purged, turned to high throughput (a duplicate across groups for 60 s more), or a group's message comes back, Then deduplication and group order follow AWS`,
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
        // g3 waits from its send's millisecond; g1 comes back in a later one (ties go by send order).
        /* 12 */ {
          op: 'receive_message',
          params: { QueueUrl: '$8.QueueUrl', VisibilityTimeout: 0 },
          nextMillisecond: true,
        },
        /* 13 */ { op: 'receive_message', params: { QueueUrl: '$8.QueueUrl', MaxNumberOfMessages: 10 } },
      ]);
      const r = run.results;
      assert.notEqual(ok(r[3]).MessageId, ok(r[1]).MessageId, 'a new message after the purge');
      ok(r[5]);
      // A DeduplicationScope change applies 60 s after it is made (docs/compatibility.md, FIFO).
      assert.equal(
        ok(r[7]).MessageId,
        ok(r[6]).MessageId,
        'within 60 s of the switch, the same id in another group is still a duplicate',
      );
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
