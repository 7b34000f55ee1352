/**
 * Query protocol (form POST `Action=...&Version=2012-11-05`, XML replies) through Debian's aws-cli
 * 2.9 at /usr/bin/aws: every action of the standard-queue data plane, and its error cases with the
 * error code the CLI prints and the HTTP status (read from `--debug`). The `aws` first on PATH may
 * be a newer one that speaks JSON, so the full path is used (test/support/requires.ts checks for it).
 *
 * Each aws-cli call costs about a second of CPU (Python start-up), so set-up and checks that are not
 * the action under test go through raw Query requests (still the Query protocol), not the CLI.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe } from 'node:test';
import { md5Hex, md5OfAttributes, type AttributeValue } from '../support/md5.js';
import {
  awsCli,
  awsCliOk,
  startServer,
  uniqueName,
  waitForLongPollWaiters,
  type RunningServer,
} from '../support/server.js';
import { queryErrorCode, queryOk, queryPost, xmlAttributes, xmlText, xmlTexts } from '../support/wire.js';
import { testsRequiring } from '../support/requires.js';
import { expectCliError } from '../support/assertions.js';
import { queryCreateQueue } from '../support/sqs.js';

const { after, before, test } = testsRequiring('aws');

const MIB = 1024 * 1024;
const TRACE_HEADER = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1';

let server: RunningServer;
let tmp: string;

before(async () => {
  server = await startServer();
  tmp = mkdtempSync(join(tmpdir(), 'shared-sqs-cli-'));
});

after(async () => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  await server?.stop();
});

const aws = (args: string[]): Promise<Record<string, unknown>> => awsCliOk(server.url, args);

const awsError = (args: string[], code: string, status: number, message?: string): Promise<void> =>
  expectCliError(server.url, args, code, status, message);

/** Set-up through a raw Query CreateQueue. */
const createQueue = (prefix: string): Promise<string> => queryCreateQueue(server.url, uniqueName(prefix));

/** Set-up through raw Query SendMessage calls. */
async function sendRaw(url: string, ...bodies: string[]): Promise<void> {
  for (const body of bodies)
    await queryOk(server.url, { Action: 'SendMessage', QueueUrl: url, MessageBody: body });
}

/** Raw Query ReceiveMessage until `n` receipt handles are in hand (bounded). */
async function receiveHandlesRaw(url: string, n: number, visibilityTimeout?: number): Promise<string[]> {
  const handles: string[] = [];
  for (let i = 0; i < 10 && handles.length < n; i++) {
    const xml = await queryOk(server.url, {
      Action: 'ReceiveMessage',
      QueueUrl: url,
      MaxNumberOfMessages: String(n - handles.length),
      ...(visibilityTimeout === undefined ? {} : { VisibilityTimeout: String(visibilityTimeout) }),
    });
    handles.push(...xmlTexts(xml, 'ReceiptHandle'));
  }
  assert.equal(handles.length, n, 'receipt handles received');
  return handles;
}

/** Checks through a raw Query GetQueueAttributes. */
async function counts(url: string): Promise<{ visible: number; notVisible: number; delayed: number }> {
  const xml = await queryOk(server.url, {
    Action: 'GetQueueAttributes',
    QueueUrl: url,
    'AttributeName.1': 'ApproximateNumberOfMessages',
    'AttributeName.2': 'ApproximateNumberOfMessagesNotVisible',
    'AttributeName.3': 'ApproximateNumberOfMessagesDelayed',
  });
  const a = xmlAttributes(xml);
  return {
    visible: Number(a.ApproximateNumberOfMessages),
    notVisible: Number(a.ApproximateNumberOfMessagesNotVisible),
    delayed: Number(a.ApproximateNumberOfMessagesDelayed),
  };
}

interface CliMessage {
  MessageId?: string;
  ReceiptHandle?: string;
  Body?: string;
  MD5OfBody?: string;
  MD5OfMessageAttributes?: string;
  Attributes?: Record<string, string>;
  MessageAttributes?: Record<string, { DataType: string; StringValue?: string; BinaryValue?: string }>;
}

async function receive(url: string, ...extra: string[]): Promise<CliMessage[]> {
  const out = await aws(['receive-message', '--queue-url', url, ...extra]);
  return (out.Messages ?? []) as CliMessage[];
}

test('Debian aws-cli speaks the Query protocol (form-encoded Action=..., not X-Amz-Target)', async () => {
  const res = await awsCli(server.url, ['list-queues'], { debug: true });
  assert.equal(res.code, 0, res.stderr.slice(-2000));
  assert.match(res.stdout + res.stderr, /aws-cli\/2\.9\./, 'aws-cli 2.9');
  assert.match(res.stderr, /'Action': 'ListQueues'/, 'the request body is Query parameters');
  assert.doesNotMatch(res.stderr, /X-Amz-Target/i, 'no JSON-protocol target header');
  assert.equal(res.status, 200);
});

describe('Query protocol (aws-cli): queues', () => {
  test('Given attributes and tags, When create-queue, Then get-queue-attributes All and list-queue-tags show them', async () => {
    const name = uniqueName('cli-create');
    const out = await aws([
      'create-queue',
      '--queue-name',
      name,
      '--attributes',
      JSON.stringify({ VisibilityTimeout: '45', DelaySeconds: '2', MessageRetentionPeriod: '3600' }),
      '--tags',
      JSON.stringify({ team: 'queues', env: 'test' }),
    ]);
    const url = out.QueueUrl as string;
    assert.ok(url.endsWith(`/${name}`), url);
    const attrs = (await aws(['get-queue-attributes', '--queue-url', url, '--attribute-names', 'All']))
      .Attributes as Record<string, string>;
    assert.equal(attrs.VisibilityTimeout, '45');
    assert.equal(attrs.DelaySeconds, '2');
    assert.equal(attrs.MessageRetentionPeriod, '3600');
    assert.equal(attrs.MaximumMessageSize, String(MIB));
    assert.equal(attrs.QueueArn, `arn:aws:sqs:us-east-1:000000000000:${name}`);
    assert.equal(attrs.ApproximateNumberOfMessages, '0');
    const tags = await aws(['list-queue-tags', '--queue-url', url]);
    assert.deepEqual(tags.Tags, { team: 'queues', env: 'test' });
  });

  test('Given a queue, When create-queue again with the same attributes, Then the same URL; with other attributes, QueueAlreadyExists (400)', async () => {
    const name = uniqueName('cli-idem');
    const attrs = JSON.stringify({ VisibilityTimeout: '40' });
    const first = await aws(['create-queue', '--queue-name', name, '--attributes', attrs]);
    const again = await aws(['create-queue', '--queue-name', name, '--attributes', attrs]);
    assert.equal(again.QueueUrl, first.QueueUrl);
    await awsError(
      ['create-queue', '--queue-name', name, '--attributes', JSON.stringify({ VisibilityTimeout: '41' })],
      'QueueAlreadyExists',
      400,
    );
  });

  test('Given a queue, When get-queue-url, Then its URL; for no such queue, AWS.SimpleQueueService.NonExistentQueue (400)', async () => {
    const url = await createQueue('cli-geturl');
    const name = url.slice(url.lastIndexOf('/') + 1);
    assert.equal((await aws(['get-queue-url', '--queue-name', name])).QueueUrl, url);
    await awsError(
      ['get-queue-url', '--queue-name', uniqueName('cli-nosuch')],
      'AWS.SimpleQueueService.NonExistentQueue',
      400,
    );
  });

  test('Given no such queue, When the raw Query request is sent, Then an XML ErrorResponse with Type Sender and a RequestId', async () => {
    const res = await queryPost(server.url, {
      Action: 'GetQueueUrl',
      QueueName: uniqueName('cli-raw-nosuch'),
    });
    assert.equal(res.status, 400);
    assert.match(res.headers.get('content-type') ?? '', /xml/);
    assert.equal(queryErrorCode(res.text), 'AWS.SimpleQueueService.NonExistentQueue');
    assert.equal(xmlText(res.text, 'Type'), 'Sender');
    assert.match(res.text, /<ErrorResponse xmlns="http:\/\/queue\.amazonaws\.com\/doc\/2012-11-05\/">/);
    assert.ok(xmlText(res.text, 'RequestId'), 'RequestId');
  });

  test('Given a deleted queue, When it is used, Then AWS.SimpleQueueService.NonExistentQueue (400)', async () => {
    const url = await createQueue('cli-del');
    await aws(['delete-queue', '--queue-url', url]);
    await awsError(
      ['send-message', '--queue-url', url, '--message-body', 'x'],
      'AWS.SimpleQueueService.NonExistentQueue',
      400,
    );
  });

  test('Given 5 queues under a prefix, When list-queues pages with --max-results 2, Then NextToken walks all 5', async () => {
    const prefix = uniqueName('cli-page');
    const made: string[] = [];
    for (let i = 0; i < 5; i++) {
      made.push(
        xmlText(
          await queryOk(server.url, { Action: 'CreateQueue', QueueName: `${prefix}-${i}` }),
          'QueueUrl',
        ) ?? '',
      );
    }
    await createQueue('cli-other');
    const all = await aws(['list-queues', '--queue-name-prefix', prefix]);
    assert.deepEqual([...(all.QueueUrls as string[])].sort(), [...made].sort());

    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const args = ['list-queues', '--no-paginate', '--queue-name-prefix', prefix, '--max-results', '2'];
      if (token !== undefined) args.push('--next-token', token);
      const out = await aws(args);
      const urls = (out.QueueUrls ?? []) as string[];
      assert.ok(urls.length <= 2, `at most 2 per page, got ${urls.length}`);
      seen.push(...urls);
      token = out.NextToken as string | undefined;
      pages++;
    } while (token !== undefined && pages < 10);
    assert.equal(pages, 3);
    assert.deepEqual([...seen].sort(), [...made].sort());
  });

  test('Given a queue, When set-queue-attributes, Then get-queue-attributes of one name shows only it; an out-of-range value is InvalidAttributeValue (400)', async () => {
    const url = await createQueue('cli-set');
    await aws([
      'set-queue-attributes',
      '--queue-url',
      url,
      '--attributes',
      JSON.stringify({ VisibilityTimeout: '77' }),
    ]);
    const one = await aws([
      'get-queue-attributes',
      '--queue-url',
      url,
      '--attribute-names',
      'VisibilityTimeout',
    ]);
    assert.deepEqual(one.Attributes, { VisibilityTimeout: '77' });
    await awsError(
      [
        'set-queue-attributes',
        '--queue-url',
        url,
        '--attributes',
        JSON.stringify({ MessageRetentionPeriod: '59' }),
      ],
      'InvalidAttributeValue',
      400,
    );
  });

  test('Given a queue, When tag-queue and untag-queue, Then list-queue-tags follows', async () => {
    const url = await createQueue('cli-tags');
    await aws(['tag-queue', '--queue-url', url, '--tags', JSON.stringify({ a: '1', b: '2' })]);
    assert.deepEqual((await aws(['list-queue-tags', '--queue-url', url])).Tags, { a: '1', b: '2' });
    await aws(['untag-queue', '--queue-url', url, '--tag-keys', 'a']);
    assert.deepEqual((await aws(['list-queue-tags', '--queue-url', url])).Tags, { b: '2' });
  });
});

describe('Query protocol (aws-cli): messages', () => {
  const binary = Buffer.from([0, 1, 2, 254, 255]);
  const gif = Buffer.from('GIF8');
  const attributes: Record<string, AttributeValue> = {
    str: { DataType: 'String', StringValue: 'héllo wörld ✓ <&>' },
    num: { DataType: 'Number', StringValue: '-12.5e3' },
    bin: { DataType: 'Binary', BinaryValue: binary },
    'custom.str': { DataType: 'String.json', StringValue: '{"k":1}' },
    'custom.num': { DataType: 'Number.float', StringValue: '3.14' },
    'custom.bin': { DataType: 'Binary.gif', BinaryValue: gif },
  };
  /** The CLI takes (and prints) blobs as base64. */
  const cliAttributes = Object.fromEntries(
    Object.entries(attributes).map(([k, v]) => [
      k,
      v.BinaryValue !== undefined
        ? { DataType: v.DataType, BinaryValue: Buffer.from(v.BinaryValue).toString('base64') }
        : { DataType: v.DataType, StringValue: v.StringValue },
    ]),
  );

  test('Given String, Number, Binary and custom attributes and AWSTraceHeader, When send-message, Then every MD5 is the documented one and receive-message returns them all', async () => {
    const url = await createQueue('cli-attrs');
    const body = 'body with ünïcödé, \u{1F600}, <xml attr="1"/> & ]]> stuff';
    const sent = await aws([
      'send-message',
      '--queue-url',
      url,
      '--message-body',
      body,
      '--message-attributes',
      JSON.stringify(cliAttributes),
      '--message-system-attributes',
      JSON.stringify({ AWSTraceHeader: { DataType: 'String', StringValue: TRACE_HEADER } }),
    ]);
    assert.equal(sent.MD5OfMessageBody, md5Hex(body));
    assert.equal(sent.MD5OfMessageAttributes, md5OfAttributes(attributes));
    assert.equal(
      sent.MD5OfMessageSystemAttributes,
      md5OfAttributes({ AWSTraceHeader: { DataType: 'String', StringValue: TRACE_HEADER } }),
    );
    const [m, ...rest] = await receive(url, '--attribute-names', 'All', '--message-attribute-names', 'All');
    assert.equal(rest.length, 0);
    assert.equal(m?.MessageId, sent.MessageId);
    assert.equal(m?.Body, body);
    assert.equal(m?.MD5OfBody, md5Hex(body));
    assert.equal(m?.MD5OfMessageAttributes, md5OfAttributes(attributes));
    assert.deepEqual(m?.MessageAttributes, cliAttributes);
    assert.equal(m?.Attributes?.AWSTraceHeader, TRACE_HEADER);
    assert.equal(m?.Attributes?.ApproximateReceiveCount, '1');
    assert.match(m?.Attributes?.SentTimestamp ?? '', /^\d{13}$/);
  });

  test('Given attributes a.one, a.two, b.one, When receive-message asks for "a.*", Then only the a.* ones come back', async () => {
    const url = await createQueue('cli-prefix');
    const all = {
      'a.one': { DataType: 'String', StringValue: '1' },
      'a.two': { DataType: 'Number', StringValue: '2' },
      'b.one': { DataType: 'String', StringValue: '3' },
    };
    await aws([
      'send-message',
      '--queue-url',
      url,
      '--message-body',
      'p',
      '--message-attributes',
      JSON.stringify(all),
    ]);
    const [m] = await receive(url, '--message-attribute-names', 'a.*');
    assert.deepEqual(m?.MessageAttributes, { 'a.one': all['a.one'], 'a.two': all['a.two'] });
    assert.equal(
      m?.MD5OfMessageAttributes,
      md5OfAttributes({ 'a.one': all['a.one'], 'a.two': all['a.two'] }),
    );
  });

  test('Given a mixed batch, When send-message-batch, Then the out-of-range entry is in Failed and the others are Successful', async () => {
    const url = await createQueue('cli-batch');
    const out = await aws([
      'send-message-batch',
      '--queue-url',
      url,
      '--entries',
      JSON.stringify([
        { Id: 'good1', MessageBody: 'one' },
        { Id: 'bad', MessageBody: 'two', DelaySeconds: 901 },
        {
          Id: 'good2',
          MessageBody: 'three',
          MessageAttributes: { k: { DataType: 'String', StringValue: 'v' } },
        },
      ]),
    ]);
    const ok = (out.Successful ?? []) as Array<Record<string, string>>;
    const failed = (out.Failed ?? []) as Array<Record<string, unknown>>;
    assert.deepEqual(ok.map((e) => e.Id).sort(), ['good1', 'good2']);
    assert.equal(ok.find((e) => e.Id === 'good1')?.MD5OfMessageBody, md5Hex('one'));
    assert.equal(
      ok.find((e) => e.Id === 'good2')?.MD5OfMessageAttributes,
      md5OfAttributes({ k: { DataType: 'String', StringValue: 'v' } }),
    );
    assert.equal(failed.length, 1);
    assert.equal(failed[0]?.Id, 'bad');
    assert.equal(failed[0]?.SenderFault, true);
    assert.equal(failed[0]?.Code, 'InvalidParameterValue');
    assert.equal((await counts(url)).visible, 2);
  });

  test('Given 11 entries, When send-message-batch, Then AWS.SimpleQueueService.TooManyEntriesInBatchRequest (400)', async () => {
    const url = await createQueue('cli-batch11');
    const entries = Array.from({ length: 11 }, (_, i) => ({ Id: `e${i}`, MessageBody: `m${i}` }));
    await awsError(
      ['send-message-batch', '--queue-url', url, '--entries', JSON.stringify(entries)],
      'AWS.SimpleQueueService.TooManyEntriesInBatchRequest',
      400,
    );
  });

  test('Given two entries with one Id, When send-message-batch, Then AWS.SimpleQueueService.BatchEntryIdsNotDistinct (400)', async () => {
    const url = await createQueue('cli-batchdup');
    const entries = [
      { Id: 'same', MessageBody: '1' },
      { Id: 'same', MessageBody: '2' },
    ];
    await awsError(
      ['send-message-batch', '--queue-url', url, '--entries', JSON.stringify(entries)],
      'AWS.SimpleQueueService.BatchEntryIdsNotDistinct',
      400,
    );
  });

  test('Given a body of 1 MiB + 1 byte, When send-message, Then InvalidParameterValue (400); exactly 1 MiB is accepted', async () => {
    const url = await createQueue('cli-big');
    const tooLong = join(tmp, 'too-long.txt');
    writeFileSync(tooLong, 'x'.repeat(MIB + 1));
    // Without --debug (which would log the whole megabyte): the code from the CLI, the status from
    // the same request sent raw.
    const res = await awsCli(server.url, [
      'send-message',
      '--queue-url',
      url,
      '--message-body',
      `file://${tooLong}`,
    ]);
    assert.notEqual(res.code, 0);
    assert.equal(res.errorCode, 'InvalidParameterValue', res.stderr.slice(-600));
    const raw = await queryPost(server.url, {
      Action: 'SendMessage',
      QueueUrl: url,
      MessageBody: 'x'.repeat(MIB + 1),
    });
    assert.equal(raw.status, 400);
    assert.equal(queryErrorCode(raw.text), 'InvalidParameterValue');
    const exact = join(tmp, 'exact.txt');
    writeFileSync(exact, 'y'.repeat(MIB));
    const sent = await aws(['send-message', '--queue-url', url, '--message-body', `file://${exact}`]);
    assert.equal(sent.MD5OfMessageBody, md5Hex('y'.repeat(MIB)));
  });

  test('Given 5 messages, When receive-message --max-number-of-messages 3, Then at most 3, and all 5 over several receives', async () => {
    const url = await createQueue('cli-max');
    await sendRaw(url, 'm0', 'm1', 'm2', 'm3', 'm4');
    const first = await receive(url, '--max-number-of-messages', '3');
    assert.ok(first.length >= 1 && first.length <= 3, `got ${first.length}`);
    const bodies = new Set(first.map((m) => m.Body));
    for (let i = 0; i < 10 && bodies.size < 5; i++) {
      const xml = await queryOk(server.url, {
        Action: 'ReceiveMessage',
        QueueUrl: url,
        MaxNumberOfMessages: '10',
      });
      for (const body of xmlTexts(xml, 'Body')) {
        assert.ok(!bodies.has(body), `in-flight message ${body} received twice`);
        bodies.add(body);
      }
    }
    assert.deepEqual([...bodies].sort(), ['m0', 'm1', 'm2', 'm3', 'm4']);
  });

  test('Given a message received with --visibility-timeout 600, Then it is hidden until change-message-visibility 0', async () => {
    const url = await createQueue('cli-vis');
    await sendRaw(url, 'hide me');
    const [m] = await receive(url, '--visibility-timeout', '600');
    assert.ok(m?.ReceiptHandle);
    const hidden = await queryOk(server.url, { Action: 'ReceiveMessage', QueueUrl: url });
    assert.deepEqual(xmlTexts(hidden, 'Body'), []);
    assert.deepEqual(await counts(url), { visible: 0, notVisible: 1, delayed: 0 });
    await aws([
      'change-message-visibility',
      '--queue-url',
      url,
      '--receipt-handle',
      m.ReceiptHandle,
      '--visibility-timeout',
      '0',
    ]);
    const [again] = await receive(url, '--attribute-names', 'All');
    assert.equal(again?.Body, 'hide me');
    assert.equal(again?.Attributes?.ApproximateReceiveCount, '2');
  });

  test('Given in-flight messages, When change-message-visibility-batch 0 and delete-message-batch, Then each entry reports; a bad handle is Failed', async () => {
    const url = await createQueue('cli-batches');
    await sendRaw(url, 'b1', 'b2');
    let handles = await receiveHandlesRaw(url, 2, 600);
    const vis = await aws([
      'change-message-visibility-batch',
      '--queue-url',
      url,
      '--entries',
      JSON.stringify([
        { Id: 'h0', ReceiptHandle: handles[0], VisibilityTimeout: 0 },
        { Id: 'h1', ReceiptHandle: handles[1], VisibilityTimeout: 0 },
        { Id: 'bogus', ReceiptHandle: 'garbage', VisibilityTimeout: 0 },
      ]),
    ]);
    assert.deepEqual(((vis.Successful ?? []) as Array<{ Id: string }>).map((e) => e.Id).sort(), ['h0', 'h1']);
    assert.deepEqual(
      ((vis.Failed ?? []) as Array<{ Id: string; Code: string }>).map((e) => [e.Id, e.Code]),
      [['bogus', 'ReceiptHandleIsInvalid']],
    );
    assert.deepEqual(await counts(url), { visible: 2, notVisible: 0, delayed: 0 });

    handles = await receiveHandlesRaw(url, 2);
    const del = await aws([
      'delete-message-batch',
      '--queue-url',
      url,
      '--entries',
      JSON.stringify([
        { Id: 'x', ReceiptHandle: handles[0] },
        { Id: 'y', ReceiptHandle: handles[1] },
        { Id: 'z', ReceiptHandle: 'garbage' },
      ]),
    ]);
    assert.deepEqual(((del.Successful ?? []) as Array<{ Id: string }>).map((e) => e.Id).sort(), ['x', 'y']);
    assert.deepEqual(
      ((del.Failed ?? []) as Array<{ Id: string; Code: string }>).map((e) => [e.Id, e.Code]),
      [['z', 'ReceiptHandleIsInvalid']],
    );
    assert.deepEqual(await counts(url), { visible: 0, notVisible: 0, delayed: 0 });
  });

  test('Given a received message, When delete-message, Then it is gone; a malformed handle is ReceiptHandleIsInvalid (404)', async () => {
    const url = await createQueue('cli-delete');
    await sendRaw(url, 'bye');
    const [handle = ''] = await receiveHandlesRaw(url, 1);
    await aws(['delete-message', '--queue-url', url, '--receipt-handle', handle]);
    assert.deepEqual(await counts(url), { visible: 0, notVisible: 0, delayed: 0 });
    await awsError(
      ['delete-message', '--queue-url', url, '--receipt-handle', 'garbage'],
      'ReceiptHandleIsInvalid',
      404,
    );
  });

  test('Given delayed and in-flight messages, Then ApproximateNumberOfMessages* count each', async () => {
    const url = await createQueue('cli-counts');
    await sendRaw(url, 'a', 'b');
    await aws(['send-message', '--queue-url', url, '--message-body', 'c', '--delay-seconds', '600']);
    await receiveHandlesRaw(url, 1, 600);
    const out = await aws([
      'get-queue-attributes',
      '--queue-url',
      url,
      '--attribute-names',
      'ApproximateNumberOfMessages',
      'ApproximateNumberOfMessagesNotVisible',
      'ApproximateNumberOfMessagesDelayed',
    ]);
    assert.deepEqual(out.Attributes, {
      ApproximateNumberOfMessages: '1',
      ApproximateNumberOfMessagesNotVisible: '1',
      ApproximateNumberOfMessagesDelayed: '1',
    });
  });

  test(
    'Given a long poll waiting on an empty queue, When a message is sent meanwhile, Then the poll returns it',
    { timeout: 25_000 },
    async () => {
      const url = await createQueue('cli-longpoll');
      const poll = awsCli(server.url, ['receive-message', '--queue-url', url, '--wait-time-seconds', '10']);
      await waitForLongPollWaiters(server, 1, 15_000);
      await sendRaw(url, 'wake up');
      const res = await poll;
      assert.equal(res.code, 0, res.stderr);
      const messages = ((res.json as { Messages?: CliMessage[] } | undefined)?.Messages ?? []).map(
        (m) => m.Body,
      );
      assert.deepEqual(messages, ['wake up']);
    },
  );

  test('Given messages, When purge-queue, Then the queue is empty; a second purge is AWS.SimpleQueueService.PurgeQueueInProgress (403)', async () => {
    const url = await createQueue('cli-purge');
    await sendRaw(url, 'p1', 'p2');
    await aws(['purge-queue', '--queue-url', url]);
    assert.deepEqual(await counts(url), { visible: 0, notVisible: 0, delayed: 0 });
    await awsError(['purge-queue', '--queue-url', url], 'AWS.SimpleQueueService.PurgeQueueInProgress', 403);
  });
});

describe("Query protocol (aws-cli): AWS's recorded answers in validation corners (issue 21)", () => {
  test('Given an empty body, an empty String value, a Unicode attribute name and a missing queue, When sent, Then the codes and messages AWS gives over Query', async () => {
    const url = await createQueue('cli-texts');
    const send = (body: string, attributes?: Record<string, AttributeValue>): string[] => [
      'send-message',
      '--queue-url',
      url,
      '--message-body',
      body,
      ...(attributes === undefined ? [] : ['--message-attributes', JSON.stringify(attributes)]),
    ];
    await awsError(send(''), 'MissingParameter', 400, 'The request must contain the parameter MessageBody.');
    await awsError(
      send('b', { s: { DataType: 'String', StringValue: '' } }),
      'InvalidParameterValue',
      400,
      "Message (user) attribute 's' must contain a non-empty value of type 'String'.",
    );
    const unicode = { 'attr.1øßä': { DataType: 'String', StringValue: 'v' } };
    assert.equal((await aws(send('b', unicode))).MD5OfMessageAttributes, md5OfAttributes(unicode));
    await awsError(
      ['get-queue-url', '--queue-name', uniqueName('cli-nosuch')],
      'AWS.SimpleQueueService.NonExistentQueue',
      400,
      'The specified queue does not exist for this wsdl version.',
    );
  });

  test('Given FifoQueue=false for a standard queue and FifoQueue on a FIFO queue, When created or set, Then InvalidAttributeName / InvalidAttributeValue in AWS wording', async () => {
    await awsError(
      ['create-queue', '--queue-name', uniqueName('cli-std'), '--attributes', 'FifoQueue=false'],
      'InvalidAttributeName',
      400,
      'Unknown Attribute FifoQueue.',
    );
    const fifo = String(
      (
        await aws([
          'create-queue',
          '--queue-name',
          `${uniqueName('cli-type')}.fifo`,
          '--attributes',
          'FifoQueue=true',
        ])
      ).QueueUrl,
    );
    await awsError(
      ['set-queue-attributes', '--queue-url', fifo, '--attributes', 'FifoQueue=true'],
      'InvalidAttributeValue',
      400,
      'Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not supported.',
    );
  });

  test('Given SSE-KMS on, When KmsMasterKeyId is set back to "" with SqsManagedSseEnabled=true, Then the queue shows no key and SSE-SQS again', async () => {
    const url = await createQueue('cli-kms');
    await aws(['set-queue-attributes', '--queue-url', url, '--attributes', 'KmsMasterKeyId=alias/aws/sqs']);
    await aws([
      'set-queue-attributes',
      '--queue-url',
      url,
      '--attributes',
      JSON.stringify({ KmsMasterKeyId: '', SqsManagedSseEnabled: 'true' }),
    ]);
    const attrs = xmlAttributes(
      await queryOk(server.url, { Action: 'GetQueueAttributes', QueueUrl: url, 'AttributeName.1': 'All' }),
    );
    assert.equal(attrs.KmsMasterKeyId, undefined);
    assert.equal(attrs.KmsDataKeyReusePeriodSeconds, undefined);
    assert.equal(attrs.SqsManagedSseEnabled, 'true');
  });
});
