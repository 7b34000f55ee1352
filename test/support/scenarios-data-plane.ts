/**
 * The standard-queue data-plane scenarios, written once and registered by each client's test file:
 * test/e2e/sdk.test.ts (SDK v3, JSON 1.0) and test/e2e/cli.test.ts (aws-cli 2.9, Query). Only the
 * action under test goes through the client; set-up and checks go through the fixture (the SDK over
 * JSON), since an aws-cli call is a Python process. Each returns the file's fixture, for the file's
 * own client-specific tests. The tests have the same names in both files.
 */
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import {
  expectServiceError,
  sdkClient,
  SQS_ERRORS as E,
  type ClientKind,
  type ErrorExpectation,
  type Output,
  type Protocol,
  type ScenarioContext,
  type SqsTestClient,
} from './clients.js';
import { md5Hex, md5OfAttributes, type AttributeValue } from './md5.js';
import type { FileTests } from './requires.js';
import { uniqueName, waitForLongPollWaiters } from './server.js';
import { sharedServer, type SharedServer } from './sqs.js';

const MIB = 1024 * 1024;
const TRACE_HEADER = 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1';

interface Scenario {
  readonly name: string;
  readonly timeout?: number;
  /** Only over this protocol's client: what the other's client cannot send. */
  readonly only?: Protocol;
  run(s: Steps): Promise<void>;
}

/** What a scenario body works with: the client under test, and fixture shortcuts for set-up. */
class Steps {
  constructor(
    readonly ctx: ScenarioContext,
    private readonly setUp: () => SqsTestClient,
  ) {}
  call(action: string, input: Record<string, unknown>): Promise<Output> {
    return this.ctx.client.call(action, input);
  }
  fails(action: string, input: Record<string, unknown>, want: ErrorExpectation): Promise<unknown> {
    return expectServiceError(this.call(action, input), want);
  }
  /** Set-up: a new queue (through the fixture). */
  queue(prefix: string, attributes?: Record<string, string>): Promise<string> {
    return this.ctx.sqs.createQueue(uniqueName(`${this.ctx.kind.protocol}-${prefix}`), attributes);
  }
  /** Set-up: messages sent through the fixture. */
  async send(url: string, ...bodies: string[]): Promise<void> {
    for (const body of bodies) await this.fixture('SendMessage', { QueueUrl: url, MessageBody: body });
  }
  /** Set-up through the fixture's SDK client, whatever the client under test. */
  fixture(action: string, input: Record<string, unknown>): Promise<Output> {
    return this.setUp().call(action, input);
  }
  /** Receives (through the fixture) until `n` receipt handles are in hand (bounded). */
  async handles(url: string, n: number, visibilityTimeout?: number): Promise<string[]> {
    const handles: string[] = [];
    for (let i = 0; i < 10 && handles.length < n; i++) {
      const got = await this.fixture('ReceiveMessage', {
        QueueUrl: url,
        MaxNumberOfMessages: n - handles.length,
        ...(visibilityTimeout === undefined ? {} : { VisibilityTimeout: visibilityTimeout }),
      });
      for (const m of (got.Messages ?? []) as Array<{ ReceiptHandle: string }>) handles.push(m.ReceiptHandle);
    }
    assert.equal(handles.length, n, 'receipt handles received');
    return handles;
  }
  counts(url: string): ReturnType<ScenarioContext['sqs']['counts']> {
    return this.ctx.sqs.counts(url);
  }
}

function queueName(url: string): string {
  return url.slice(url.lastIndexOf('/') + 1);
}

const ids = (entries: unknown): string[] =>
  ((entries ?? []) as Array<{ Id: string }>).map((e) => e.Id).sort();

/** Creates `n` queues `${prefix}-${i}` through the fixture; returns their URLs. */
async function queues(s: Steps, prefix: string, n: number): Promise<string[]> {
  const made: string[] = [];
  for (let i = 0; i < n; i++) made.push(await s.ctx.sqs.createQueue(`${prefix}-${i}`));
  return made;
}

const queueScenarios: Scenario[] = [
  {
    name: 'Given attributes and tags, When CreateQueue, Then GetQueueAttributes and ListQueueTags show them',
    async run(s) {
      const name = uniqueName(`${s.ctx.kind.protocol}-create`);
      const out = await s.call('CreateQueue', {
        QueueName: name,
        Attributes: { VisibilityTimeout: '45', DelaySeconds: '2', MessageRetentionPeriod: '3600' },
        tags: { team: 'queues', env: 'test' },
      });
      const url = String(out.QueueUrl);
      assert.ok(url.endsWith(`/${name}`), `queue URL ends with the name: ${url}`);
      const attrs = (await s.fixture('GetQueueAttributes', { QueueUrl: url, AttributeNames: ['All'] }))
        .Attributes as Record<string, string | undefined>;
      assert.equal(attrs.VisibilityTimeout, '45');
      assert.equal(attrs.DelaySeconds, '2');
      assert.equal(attrs.MessageRetentionPeriod, '3600');
      assert.equal(attrs.MaximumMessageSize, String(MIB));
      assert.equal(attrs.ReceiveMessageWaitTimeSeconds, '0');
      assert.equal(attrs.QueueArn, `arn:aws:sqs:us-east-1:000000000000:${name}`);
      assert.match(attrs.CreatedTimestamp ?? '', /^\d+$/);
      assert.match(attrs.LastModifiedTimestamp ?? '', /^\d+$/);
      assert.equal(attrs.ApproximateNumberOfMessages, '0');
      const tags = await s.fixture('ListQueueTags', { QueueUrl: url });
      assert.deepEqual(tags.Tags, { team: 'queues', env: 'test' });
    },
  },
  {
    name: 'Given a queue, When CreateQueue again with the same attributes, Then it answers the same URL',
    async run(s) {
      const name = uniqueName(`${s.ctx.kind.protocol}-idem`);
      const first = await s.ctx.sqs.createQueue(name, { VisibilityTimeout: '40' });
      const again = await s.call('CreateQueue', { QueueName: name, Attributes: { VisibilityTimeout: '40' } });
      assert.equal(again.QueueUrl, first);
    },
  },
  {
    name: 'Given a queue, When GetQueueUrl by name, Then the CreateQueue URL comes back',
    async run(s) {
      const url = await s.queue('geturl');
      assert.equal((await s.call('GetQueueUrl', { QueueName: queueName(url) })).QueueUrl, url);
    },
  },
  {
    name: 'Given a deleted queue, When it is used, Then QueueDoesNotExist and ListQueues no longer lists it',
    async run(s) {
      const url = await s.queue('del');
      const name = queueName(url);
      await s.call('DeleteQueue', { QueueUrl: url });
      await s.fails('SendMessage', { QueueUrl: url, MessageBody: 'x' }, E.noQueue);
      await s.fails('GetQueueUrl', { QueueName: name }, E.noQueue);
      const list = await s.call('ListQueues', { QueueNamePrefix: name });
      assert.deepEqual(list.QueueUrls ?? [], []);
    },
  },
  {
    name: 'Given queues under a prefix, When ListQueues with the prefix, Then exactly those are listed',
    async run(s) {
      const prefix = uniqueName(`${s.ctx.kind.protocol}-list`);
      const made = await queues(s, prefix, 3);
      await s.queue('other');
      const out = await s.call('ListQueues', { QueueNamePrefix: prefix });
      assert.deepEqual([...(out.QueueUrls as string[])].sort(), [...made].sort());
      assert.equal(out.NextToken, undefined);
    },
  },
  {
    name: 'Given 5 queues, When ListQueues pages with MaxResults 2, Then NextToken walks all 5 exactly once',
    // aws-cli pages through NextToken itself unless told --no-paginate (cli.test.ts does that).
    only: 'json',
    async run(s) {
      const prefix = uniqueName(`${s.ctx.kind.protocol}-page`);
      const made = await queues(s, prefix, 5);
      const seen: string[] = [];
      let token: string | undefined;
      let pages = 0;
      do {
        const out = await s.call('ListQueues', {
          QueueNamePrefix: prefix,
          MaxResults: 2,
          ...(token ? { NextToken: token } : {}),
        });
        pages++;
        const urls = (out.QueueUrls ?? []) as string[];
        assert.ok(urls.length <= 2, 'at most MaxResults per page');
        seen.push(...urls);
        token = out.NextToken as string | undefined;
      } while (token !== undefined && pages < 10);
      assert.equal(pages, 3);
      assert.deepEqual([...seen].sort(), [...made].sort());
    },
  },
  {
    name: 'Given a queue, When GetQueueAttributes names one attribute, Then only that one is returned',
    async run(s) {
      const url = await s.queue('oneattr', { VisibilityTimeout: '33' });
      const out = await s.call('GetQueueAttributes', {
        QueueUrl: url,
        AttributeNames: ['VisibilityTimeout'],
      });
      assert.deepEqual(out.Attributes, { VisibilityTimeout: '33' });
    },
  },
  {
    name: 'Given visible, in-flight and delayed messages, Then ApproximateNumberOfMessages* count each',
    async run(s) {
      const url = await s.queue('counts');
      await s.send(url, 'one', 'two');
      await s.fixture('SendMessage', { QueueUrl: url, MessageBody: 'later', DelaySeconds: 600 });
      await s.handles(url, 1, 600);
      const out = await s.call('GetQueueAttributes', {
        QueueUrl: url,
        AttributeNames: [
          'ApproximateNumberOfMessages',
          'ApproximateNumberOfMessagesNotVisible',
          'ApproximateNumberOfMessagesDelayed',
        ],
      });
      assert.deepEqual(out.Attributes, {
        ApproximateNumberOfMessages: '1',
        ApproximateNumberOfMessagesNotVisible: '1',
        ApproximateNumberOfMessagesDelayed: '1',
      });
    },
  },
  {
    name: 'Given a queue, When SetQueueAttributes, Then GetQueueAttributes shows the new values',
    async run(s) {
      const url = await s.queue('set');
      const want = {
        VisibilityTimeout: '120',
        MaximumMessageSize: '2048',
        ReceiveMessageWaitTimeSeconds: '5',
      };
      await s.call('SetQueueAttributes', { QueueUrl: url, Attributes: want });
      const out = await s.fixture('GetQueueAttributes', { QueueUrl: url, AttributeNames: Object.keys(want) });
      assert.deepEqual(out.Attributes, want);
    },
  },
  {
    name: 'Given an out-of-range VisibilityTimeout, When SetQueueAttributes, Then InvalidAttributeValue (400)',
    async run(s) {
      const url = await s.queue('badattr');
      await s.fails(
        'SetQueueAttributes',
        { QueueUrl: url, Attributes: { VisibilityTimeout: '43201' } },
        E.badAttrValue,
      );
      await s.fails(
        'SetQueueAttributes',
        { QueueUrl: url, Attributes: { MessageRetentionPeriod: '59' } },
        E.badAttrValue,
      );
      const out = await s.fixture('GetQueueAttributes', { QueueUrl: url, AttributeNames: ['All'] });
      const attrs = out.Attributes as Record<string, string>;
      assert.equal(attrs.VisibilityTimeout, '30', 'the refused value was not applied');
      assert.equal(attrs.MessageRetentionPeriod, '345600', 'the refused value was not applied');
    },
  },
  {
    name: 'Given a queue, When TagQueue and UntagQueue, Then ListQueueTags follows',
    async run(s) {
      const url = await s.queue('tags');
      const tags = async (): Promise<unknown> =>
        (await s.fixture('ListQueueTags', { QueueUrl: url })).Tags ?? {};
      await s.call('TagQueue', { QueueUrl: url, Tags: { a: '1', b: '2', c: '3' } });
      const listed = await s.call('ListQueueTags', { QueueUrl: url });
      assert.deepEqual(listed.Tags, { a: '1', b: '2', c: '3' });
      await s.fixture('TagQueue', { QueueUrl: url, Tags: { a: 'one' } });
      await s.call('UntagQueue', { QueueUrl: url, TagKeys: ['b'] });
      assert.deepEqual(await tags(), { a: 'one', c: '3' });
      await s.call('UntagQueue', { QueueUrl: url, TagKeys: ['a', 'c'] });
      assert.deepEqual(await tags(), {});
    },
  },
];

const attributes: Record<string, AttributeValue> = {
  str: { DataType: 'String', StringValue: 'héllo wörld ✓ <&>' },
  num: { DataType: 'Number', StringValue: '-12.5e3' },
  bin: { DataType: 'Binary', BinaryValue: Buffer.from([0, 1, 2, 254, 255]) },
  'custom.str': { DataType: 'String.json', StringValue: '{"k":1}' },
  'custom.num': { DataType: 'Number.float', StringValue: '3.14' },
  'custom.bin': { DataType: 'Binary.gif', BinaryValue: Buffer.from('GIF8') },
};
const trace = { AWSTraceHeader: { DataType: 'String', StringValue: TRACE_HEADER } };

interface Message {
  MessageId?: string;
  ReceiptHandle?: string;
  Body?: string;
  MD5OfBody?: string;
  MD5OfMessageAttributes?: string;
  Attributes?: Record<string, string>;
  MessageAttributes?: Record<string, AttributeValue>;
}
const messages = (out: Output): Message[] => (out.Messages ?? []) as Message[];

/** A batch whose first two entries hold the handles and whose last holds a malformed one. */
function handleBatch(handles: string[], extra: Record<string, unknown> = {}): Array<Record<string, unknown>> {
  return [
    { Id: 'h0', ReceiptHandle: handles[0], ...extra },
    { Id: 'h1', ReceiptHandle: handles[1], ...extra },
    { Id: 'bogus', ReceiptHandle: 'garbage', ...extra },
  ];
}

function expectOneBadHandle(out: Output): void {
  assert.deepEqual(ids(out.Successful), ['h0', 'h1']);
  const failed = (out.Failed ?? []) as Array<{ Id: string; Code: string; SenderFault: boolean }>;
  assert.deepEqual(
    failed.map((e) => [e.Id, e.Code, e.SenderFault]),
    [['bogus', 'ReceiptHandleIsInvalid', true]],
  );
}

const messageScenarios: Scenario[] = [
  {
    name: 'Given String, Number, Binary and custom attributes and AWSTraceHeader, When SendMessage, Then every MD5 is the documented one and ReceiveMessage returns them all',
    async run(s) {
      const url = await s.queue('attrs');
      const body = 'body with ünïcödé, \u{1F600}, <xml attr="1"/> & ]]> stuff';
      const sent = await s.call('SendMessage', {
        QueueUrl: url,
        MessageBody: body,
        MessageAttributes: attributes,
        MessageSystemAttributes: trace,
      });
      assert.ok(sent.MessageId);
      assert.equal(sent.MD5OfMessageBody, md5Hex(body));
      assert.equal(sent.MD5OfMessageAttributes, md5OfAttributes(attributes));
      assert.equal(sent.MD5OfMessageSystemAttributes, md5OfAttributes(trace));
      const got = messages(
        await s.call('ReceiveMessage', {
          QueueUrl: url,
          MessageAttributeNames: ['All'],
          MessageSystemAttributeNames: ['All'],
        }),
      );
      assert.equal(got.length, 1);
      const m = got[0];
      assert.equal(m?.MessageId, sent.MessageId);
      assert.equal(m?.Body, body);
      assert.equal(m?.MD5OfBody, md5Hex(body));
      assert.equal(m?.MD5OfMessageAttributes, md5OfAttributes(attributes));
      assert.ok(m?.ReceiptHandle);
      assert.deepEqual(m?.MessageAttributes, attributes);
      const sys = m?.Attributes ?? {};
      assert.equal(sys.AWSTraceHeader, TRACE_HEADER);
      assert.equal(sys.ApproximateReceiveCount, '1');
      assert.match(sys.SentTimestamp ?? '', /^\d{13}$/);
      assert.match(sys.ApproximateFirstReceiveTimestamp ?? '', /^\d{13}$/);
      assert.ok(sys.SenderId, 'SenderId');
    },
  },
  {
    name: 'Given attributes a.one, a.two, b.one, When ReceiveMessage asks for "a.*", Then only the a.* ones come back with their MD5',
    async run(s) {
      const url = await s.queue('prefix');
      const returned = {
        'a.one': { DataType: 'String', StringValue: '1' },
        'a.two': { DataType: 'Number', StringValue: '2' },
      };
      const all = { ...returned, 'b.one': { DataType: 'String', StringValue: '3' } };
      await s.call('SendMessage', { QueueUrl: url, MessageBody: 'prefixed', MessageAttributes: all });
      const [m] = messages(await s.call('ReceiveMessage', { QueueUrl: url, MessageAttributeNames: ['a.*'] }));
      assert.deepEqual(m?.MessageAttributes, returned);
      assert.equal(m?.MD5OfMessageAttributes, md5OfAttributes(returned), 'MD5 over the attributes returned');
    },
  },
  {
    name: 'Given a message with attributes, When ReceiveMessage names none, Then no attributes and no system attributes come back',
    async run(s) {
      const url = await s.queue('noattrs');
      await s.fixture('SendMessage', { QueueUrl: url, MessageBody: 'x', MessageAttributes: attributes });
      const [m] = messages(await s.call('ReceiveMessage', { QueueUrl: url }));
      assert.equal(m?.Body, 'x');
      assert.deepEqual(Object.keys(m?.MessageAttributes ?? {}), []);
      assert.deepEqual(Object.keys(m?.Attributes ?? {}), []);
    },
  },
  {
    name: 'Given a body of exactly 1 MiB, When SendMessage, Then it is accepted and received whole',
    async run(s) {
      const url = await s.queue('1mib');
      const body = 'm'.repeat(MIB);
      const sent = await s.call('SendMessage', { QueueUrl: url, MessageBody: body });
      assert.equal(sent.MD5OfMessageBody, md5Hex(body));
      assert.deepEqual(await s.ctx.sqs.drain(url), [body]);
    },
  },
  {
    name: 'Given a body over 1 MiB, When SendMessage, Then InvalidParameterValue (400)',
    async run(s) {
      const url = await s.queue('toolong');
      await s.fails('SendMessage', { QueueUrl: url, MessageBody: 'x'.repeat(MIB + 1) }, E.badParam);
      assert.deepEqual(await s.counts(url), { visible: 0, notVisible: 0, delayed: 0 });
    },
  },
  {
    name: 'Given 3 entries, When SendMessageBatch, Then all are Successful with the right MD5s',
    async run(s) {
      const url = await s.queue('batch');
      const k = { k: { DataType: 'String', StringValue: 'v' } };
      const out = await s.call('SendMessageBatch', {
        QueueUrl: url,
        Entries: [
          { Id: 'a', MessageBody: 'first' },
          { Id: 'b', MessageBody: 'second', MessageAttributes: k },
          { Id: 'c', MessageBody: 'third', DelaySeconds: 0 },
        ],
      });
      assert.deepEqual(out.Failed ?? [], []);
      const byId = new Map((out.Successful as Array<Record<string, string>>).map((e) => [e.Id, e]));
      assert.deepEqual([...byId.keys()].sort(), ['a', 'b', 'c']);
      assert.equal(byId.get('a')?.MD5OfMessageBody, md5Hex('first'));
      assert.equal(byId.get('b')?.MD5OfMessageAttributes, md5OfAttributes(k));
      assert.equal((await s.counts(url)).visible, 3);
    },
  },
  {
    name: 'Given a batch with one entry out of range, When SendMessageBatch, Then that entry is in Failed and the others are sent',
    async run(s) {
      const url = await s.queue('batch-mixed');
      const out = await s.call('SendMessageBatch', {
        QueueUrl: url,
        Entries: [
          { Id: 'good1', MessageBody: 'ok 1' },
          // DelaySeconds is 0 to 900.
          { Id: 'bad', MessageBody: 'not ok', DelaySeconds: 901 },
          { Id: 'good2', MessageBody: 'ok 2' },
        ],
      });
      assert.deepEqual(ids(out.Successful), ['good1', 'good2']);
      const failed = (out.Failed ?? []) as Array<{ Id: string; Code: string; SenderFault: boolean }>;
      assert.deepEqual(
        failed.map((e) => [e.Id, e.Code, e.SenderFault]),
        [['bad', 'InvalidParameterValue', true]],
      );
      assert.equal((await s.counts(url)).visible, 2);
    },
  },
  {
    name: 'Given 5 messages, When ReceiveMessage with MaxNumberOfMessages 3, Then at most 3 come back, and all 5 over several receives',
    async run(s) {
      const url = await s.queue('max');
      await s.send(url, 'm0', 'm1', 'm2', 'm3', 'm4');
      const first = messages(await s.call('ReceiveMessage', { QueueUrl: url, MaxNumberOfMessages: 3 }));
      assert.ok(first.length >= 1 && first.length <= 3, `got ${first.length}`);
      const bodies = new Set(first.map((m) => m.Body));
      for (let i = 0; i < 10 && bodies.size < 5; i++) {
        for (const m of messages(
          await s.fixture('ReceiveMessage', { QueueUrl: url, MaxNumberOfMessages: 10 }),
        )) {
          assert.ok(!bodies.has(m.Body), `in-flight message ${m.Body} received twice`);
          bodies.add(m.Body);
        }
      }
      assert.deepEqual([...bodies].sort(), ['m0', 'm1', 'm2', 'm3', 'm4']);
    },
  },
  {
    name: 'Given a message received with VisibilityTimeout 600, When received again, Then it is hidden; after ChangeMessageVisibility 0 it is back',
    async run(s) {
      const url = await s.queue('vis');
      await s.send(url, 'hide me');
      const [m] = messages(await s.call('ReceiveMessage', { QueueUrl: url, VisibilityTimeout: 600 }));
      const handle = m?.ReceiptHandle;
      assert.ok(handle, 'a message received');
      assert.deepEqual(messages(await s.fixture('ReceiveMessage', { QueueUrl: url })), []);
      assert.deepEqual(await s.counts(url), { visible: 0, notVisible: 1, delayed: 0 });
      await s.call('ChangeMessageVisibility', { QueueUrl: url, ReceiptHandle: handle, VisibilityTimeout: 0 });
      // AttributeNames: the older, deprecated name of MessageSystemAttributeNames.
      const [again] = messages(await s.call('ReceiveMessage', { QueueUrl: url, AttributeNames: ['All'] }));
      assert.equal(again?.Body, 'hide me');
      assert.equal(again?.Attributes?.ApproximateReceiveCount, '2');
      assert.notEqual(again?.ReceiptHandle, handle, 'a new receipt handle on every receive');
    },
  },
  {
    name: 'Given an expired handle, an older handle and a deleted message, When ChangeMessageVisibility, Then the first two act on the message and the last is InvalidParameterValue in AWS words',
    async run(s) {
      const url = await s.queue('vis-handles');
      await s.send(url, 'm');
      const setVisibility = (handle: string, seconds: number): Promise<Output> =>
        s.call('ChangeMessageVisibility', {
          QueueUrl: url,
          ReceiptHandle: handle,
          VisibilityTimeout: seconds,
        });
      // VisibilityTimeout 0: this handle's timeout has passed at once.
      const [old = ''] = await s.handles(url, 1, 0);
      await setVisibility(old, 600);
      assert.deepEqual(await s.counts(url), { visible: 0, notVisible: 1, delayed: 0 });
      await setVisibility(old, 0);
      const [current = ''] = await s.handles(url, 1, 600);
      // The older handle still moves the message received since.
      await setVisibility(old, 0);
      assert.deepEqual(await s.counts(url), { visible: 1, notVisible: 0, delayed: 0 });
      await s.fixture('DeleteMessage', { QueueUrl: url, ReceiptHandle: current });
      await expectServiceError(setVisibility(current, 5), {
        ...E.badParam,
        message: `Value ${current} for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.`,
      });
    },
  },
  {
    name: 'Given two in-flight messages, When ChangeMessageVisibilityBatch to 0 with one bad handle, Then two succeed, one fails, and both are receivable',
    async run(s) {
      const url = await s.queue('visbatch');
      await s.send(url, 'v1', 'v2');
      const handles = await s.handles(url, 2, 600);
      const out = await s.call('ChangeMessageVisibilityBatch', {
        QueueUrl: url,
        Entries: handleBatch(handles, { VisibilityTimeout: 0 }),
      });
      expectOneBadHandle(out);
      assert.deepEqual(await s.counts(url), { visible: 2, notVisible: 0, delayed: 0 });
    },
  },
  {
    name: 'Given a received message, When DeleteMessage, Then it is gone',
    async run(s) {
      const url = await s.queue('delete');
      await s.send(url, 'bye');
      const [handle] = await s.handles(url, 1, 0);
      await s.call('DeleteMessage', { QueueUrl: url, ReceiptHandle: handle });
      assert.deepEqual(await s.counts(url), { visible: 0, notVisible: 0, delayed: 0 });
    },
  },
  {
    name: 'Given two received messages, When DeleteMessageBatch with one bad handle, Then two are deleted and one is Failed',
    async run(s) {
      const url = await s.queue('delbatch');
      await s.send(url, 'd1', 'd2');
      const handles = await s.handles(url, 2);
      expectOneBadHandle(
        await s.call('DeleteMessageBatch', { QueueUrl: url, Entries: handleBatch(handles) }),
      );
      assert.deepEqual(await s.counts(url), { visible: 0, notVisible: 0, delayed: 0 });
    },
  },
  {
    name: 'Given an empty queue, When ReceiveMessage with WaitTimeSeconds 1, Then 200 with no messages',
    async run(s) {
      const url = await s.queue('empty-poll');
      assert.deepEqual(messages(await s.call('ReceiveMessage', { QueueUrl: url, WaitTimeSeconds: 1 })), []);
    },
  },
  {
    name: 'Given a long poll waiting on an empty queue, When a message is sent meanwhile, Then the poll returns it',
    timeout: 25_000,
    async run(s) {
      const url = await s.queue('longpoll');
      const poll = s.call('ReceiveMessage', { QueueUrl: url, WaitTimeSeconds: 10 });
      await waitForLongPollWaiters(s.ctx.sqs.server, 1, 15_000);
      await s.send(url, 'wake up');
      assert.deepEqual(
        messages(await poll).map((m) => m.Body),
        ['wake up'],
      );
    },
  },
  {
    name: 'Given messages, When PurgeQueue, Then the queue is empty; a second purge within 60 s is PurgeQueueInProgress (403)',
    async run(s) {
      const url = await s.queue('purge');
      await s.send(url, 'p0', 'p1', 'p2');
      await s.handles(url, 1, 600);
      await s.call('PurgeQueue', { QueueUrl: url });
      assert.deepEqual(await s.counts(url), { visible: 0, notVisible: 0, delayed: 0 });
      assert.deepEqual(messages(await s.fixture('ReceiveMessage', { QueueUrl: url })), []);
      await s.fails('PurgeQueue', { QueueUrl: url }, E.purging);
    },
  },
];

/**
 * A scenario whose one call under test, on a fresh queue (made with `attributes`), is refused with
 * `want`, and nothing is sent.
 */
function refused(
  name: string,
  action: string,
  input: (url: string) => Record<string, unknown>,
  want: ErrorExpectation,
  attributes?: Record<string, string>,
): Scenario {
  return {
    name,
    async run(s) {
      const url = await s.queue(action, attributes);
      await s.fails(action, input(url), want);
      assert.equal((await s.counts(url)).visible, 0, 'nothing is sent');
    },
  };
}

const refusals: Scenario[] = [
  refused(
    'Given a queue, When CreateQueue with other attributes, Then QueueNameExists (QueueAlreadyExists, 400)',
    'CreateQueue',
    (url) => ({ QueueName: queueName(url), Attributes: { VisibilityTimeout: '41' } }),
    E.queueExists,
    { VisibilityTimeout: '40' },
  ),
  refused(
    'Given no such queue, When GetQueueUrl, Then QueueDoesNotExist (AWS.SimpleQueueService.NonExistentQueue, 400)',
    'GetQueueUrl',
    () => ({ QueueName: uniqueName('nosuch') }),
    E.noQueue,
  ),
  refused(
    'Given an unknown attribute name, When SetQueueAttributes, Then InvalidAttributeName (400)',
    'SetQueueAttributes',
    (url) => ({ QueueUrl: url, Attributes: { NoSuchAttribute: '1' } }),
    E.badAttrName,
  ),
  refused(
    'Given no such queue, When SendMessage, Then QueueDoesNotExist (400)',
    'SendMessage',
    (url) => ({ QueueUrl: `${url}-gone`, MessageBody: 'x' }),
    E.noQueue,
  ),
  ...(
    [
      [
        'Given 11 entries',
        E.tooMany,
        Array.from({ length: 11 }, (_, i) => ({ Id: `e${i}`, MessageBody: `m${i}` })),
      ],
      [
        'Given two entries with one Id',
        E.idsNotDistinct,
        [
          { Id: 'same', MessageBody: '1' },
          { Id: 'same', MessageBody: '2' },
        ],
      ],
      ['Given no entries', E.empty, []],
    ] as const
  ).map(([given, want, Entries]) =>
    refused(
      `${given}, When SendMessageBatch, Then ${want.name} (400)`,
      'SendMessageBatch',
      (url) => ({ QueueUrl: url, Entries }),
      want,
    ),
  ),
  refused(
    'Given entries adding up to more than 1 MiB, When SendMessageBatch, Then BatchRequestTooLong (400) and nothing is sent',
    'SendMessageBatch',
    (url) => ({
      QueueUrl: url,
      Entries: ['a', 'b'].map((Id) => ({ Id, MessageBody: 'h'.repeat(600 * 1024) })),
    }),
    E.tooLong,
  ),
  ...(
    [
      ['DeleteMessage', {}],
      ['ChangeMessageVisibility', { VisibilityTimeout: 5 }],
    ] as const
  ).map(([action, extra]) =>
    refused(
      `Given a malformed receipt handle, When ${action}, Then ReceiptHandleIsInvalid (404)`,
      action,
      (url) => ({ QueueUrl: url, ReceiptHandle: 'garbage', ...extra }),
      E.badHandle,
    ),
  ),
];

/**
 * aws-cli 2.9 predates ReceiveMessage's MessageSystemAttributeNames: it sends the older
 * AttributeNames, which the server treats the same.
 */
function speakable(kind: ClientKind, client: SqsTestClient): SqsTestClient {
  if (kind.protocol !== 'query') return client;
  return {
    ...client,
    call(action, input) {
      const { MessageSystemAttributeNames, ...rest } = input;
      return client.call(
        action,
        MessageSystemAttributeNames === undefined
          ? input
          : { ...rest, AttributeNames: MessageSystemAttributeNames },
      );
    },
  };
}

/**
 * Registers the data-plane scenarios over `kind`'s client on one server for the file. The client
 * is made on first use, not in a before hook: under Node 20 a second file-level before hook may run
 * ahead of the fixture's, before the server is up.
 */
export function dataPlaneScenarios(tests: FileTests, kind: ClientKind): SharedServer {
  const sqs = sharedServer({ hooks: tests });
  let client: SqsTestClient | undefined;
  tests.after(() => client?.close());
  const ctx: ScenarioContext = {
    kind,
    get client(): SqsTestClient {
      client ??= speakable(kind, kind.connect(sqs.server.url));
      return client;
    },
    sqs,
  };
  let setUp: SqsTestClient | undefined;
  tests.after(() => setUp?.close());
  const steps = new Steps(ctx, () => (setUp ??= sdkClient(sqs.server.url)));
  for (const [group, scenarios] of [
    ['queues', queueScenarios],
    ['messages', messageScenarios],
    ['refusals', refusals],
  ] as const) {
    describe(`${kind.name}: ${group}`, () => {
      for (const scenario of scenarios) {
        if (scenario.only !== undefined && scenario.only !== kind.protocol) continue;
        const options = scenario.timeout === undefined ? {} : { timeout: scenario.timeout };
        tests.test(scenario.name, options, () => scenario.run(steps));
      }
    });
  }
  return sqs;
}
