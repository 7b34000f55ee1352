/**
 * The data plane's seam for a router (DataPlaneOptions.executor, src/owners/executor.ts): given
 * one, the plane hands it every decoded, authenticated request over both protocols, with the
 * context the action would have had, encodes what it answers, and answers what it throws as AWS
 * would (the same bytes as the plane's own answer for that error); it does not gate on
 * `durability.serving` and does not commit.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { CoreError } from '../../src/core/errors.js';
import type { Durability } from '../../src/core/durability.js';
import { buildDataPlane } from '../../src/http/data.js';
import { createLogger } from '../../src/log.js';
import type { Executor } from '../../src/owners/executor.js';
import { SqsError } from '../../src/sqs/errors.js';
import type { ActionName } from '../../src/sqs/model.generated.js';
import type { RequestContext, SqsServices } from '../../src/sqs/service.js';
import { memoryServices } from '../support/services.js';

const BASE = 'http://localhost:4100';
const QUEUE_URL = `${BASE}/000000000000/q`;

interface Call {
  readonly action: ActionName;
  readonly ctx: RequestContext;
  readonly input: unknown;
}

/** An executor that records its calls and answers with `answer` (or throws what it throws). */
function fakeExecutor(answer: (call: Call) => unknown): Executor & { calls: Call[] } {
  const calls: Call[] = [];
  return {
    calls,
    execute: (action, ctx, input) => {
      const call = { action, ctx, input };
      calls.push(call);
      // What answer throws rejects the promise, as an async executor's failure would.
      return new Promise((resolve) => resolve(answer(call)));
    },
  };
}

function plane(
  t: TestContext,
  extra: { executor?: Executor; durability?: Durability } = {},
): { app: ReturnType<typeof buildDataPlane>; services: SqsServices } {
  const services = memoryServices();
  const app = buildDataPlane({
    services,
    logger: createLogger('silent'),
    accountId: '000000000000',
    region: 'us-east-1',
    baseUrl: BASE,
    ...extra,
  });
  t.after(async () => {
    services.poller.closeAll();
    services.mover.close();
    await app.close();
  });
  return { app, services };
}

function json(app: ReturnType<typeof buildDataPlane>, action: string, input: object, headers = {}) {
  return app.inject({
    method: 'POST',
    url: '/',
    headers: {
      'content-type': 'application/x-amz-json-1.0',
      'x-amz-target': `AmazonSQS.${action}`,
      ...headers,
    },
    payload: JSON.stringify(input),
  });
}

function query(app: ReturnType<typeof buildDataPlane>, path: string, form: string, headers = {}) {
  return app.inject({
    method: 'POST',
    url: path,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: form,
  });
}

function errorType(r: { body: string }): string {
  return (JSON.parse(r.body) as { __type: string }).__type;
}

const SENT = { MessageId: 'm-1', MD5OfMessageBody: 'acbd18db4cc2f85cedef654fccc4a4d8' };

void test('Given an executor, when SendMessage comes over JSON, then the executor gets the decoded action, input and context, and its output is the reply', async (t) => {
  const executor = fakeExecutor(() => SENT);
  const { app, services } = plane(t, { executor });
  const r = await json(
    app,
    'SendMessage',
    { QueueUrl: QUEUE_URL, MessageBody: 'foo' },
    { 'x-amzn-trace-id': 'Root=1-a' },
  );
  assert.equal(r.statusCode, 200, r.body);
  assert.deepEqual(JSON.parse(r.body), SENT);
  assert.equal(executor.calls.length, 1);
  const [call] = executor.calls;
  assert.ok(call !== undefined);
  assert.equal(call.action, 'SendMessage');
  assert.deepEqual(call.input, { QueueUrl: QUEUE_URL, MessageBody: 'foo' });
  assert.equal(typeof call.ctx.onAbort, 'function');
  // JSON drops onAbort and keeps every other member.
  assert.deepEqual(JSON.parse(JSON.stringify(call.ctx)), {
    requestId: r.headers['x-amzn-requestid'],
    accountId: '000000000000',
    region: 'us-east-1',
    defaultRegion: 'us-east-1',
    baseUrl: BASE,
    anyAccount: true,
    senderId: '000000000000',
    traceHeader: 'Root=1-a',
  });
  // The plane did not run the action itself: there is no queue to send to.
  assert.equal(services.store.size, 0);
});

void test("Given an executor, when SendMessage comes over Query at a queue's URL, then the executor gets the queue's URL as QueueUrl, and its output is the XML reply", async (t) => {
  const executor = fakeExecutor(() => SENT);
  const { app } = plane(t, { executor });
  const r = await query(app, '/000000000000/q', 'Action=SendMessage&Version=2012-11-05&MessageBody=foo');
  assert.equal(r.statusCode, 200, r.body);
  assert.match(r.body, /<SendMessageResult>.*<MessageId>m-1<\/MessageId>.*<\/SendMessageResult>/);
  assert.match(r.body, new RegExp(`<RequestId>${String(r.headers['x-amzn-requestid'])}</RequestId>`));
  const [call] = executor.calls;
  assert.equal(call?.action, 'SendMessage');
  assert.deepEqual(call.input, { QueueUrl: QUEUE_URL, MessageBody: 'foo' });
  assert.equal(call.ctx.requestId, r.headers['x-amzn-requestid']);
  assert.equal(call.ctx.accountId, '000000000000');
});

/** The reply without its request id, which differs between two requests. */
function shape(r: Awaited<ReturnType<typeof json>>) {
  return {
    status: r.statusCode,
    type: r.headers['content-type'],
    queryError: r.headers['x-amzn-query-error'],
    body: r.body.replace(/<RequestId>[^<]*<\/RequestId>/, ''),
  };
}

void test('Given an executor that throws QueueDoesNotExist, then both protocols answer exactly as the plane answers a missing queue itself', async (t) => {
  const executor = fakeExecutor(() => {
    throw new SqsError('QueueDoesNotExist', 'The specified queue does not exist.');
  });
  const { app } = plane(t, { executor });
  const { app: own } = plane(t);
  const input = { QueueUrl: QUEUE_URL, AttributeNames: ['All'] };
  const viaJson = await json(app, 'GetQueueAttributes', input);
  assert.equal(viaJson.statusCode, 400);
  assert.equal(errorType(viaJson), 'com.amazonaws.sqs#QueueDoesNotExist');
  assert.deepEqual(shape(viaJson), shape(await json(own, 'GetQueueAttributes', input)));

  const form = 'Action=GetQueueAttributes&Version=2012-11-05&AttributeName.1=All';
  const viaQuery = await query(app, '/000000000000/q', form);
  assert.match(viaQuery.body, /<Code>AWS\.SimpleQueueService\.NonExistentQueue<\/Code>/);
  assert.deepEqual(shape(viaQuery), shape(await query(own, '/000000000000/q', form)));
  assert.equal(executor.calls.length, 2);
});

void test('Given an executor that throws a core error, then the client gets its own code (a 503 for a shard being loaded), in both protocols', async (t) => {
  const executor = fakeExecutor(() => {
    throw new CoreError('ServiceUnavailable', 'The queue is being loaded; please retry.');
  });
  const { app } = plane(t, { executor });
  const viaJson = await json(app, 'ReceiveMessage', { QueueUrl: QUEUE_URL });
  assert.equal(viaJson.statusCode, 503);
  assert.deepEqual(JSON.parse(viaJson.body), {
    __type: 'com.amazon.coral.service#ServiceUnavailableException',
    message: 'The queue is being loaded; please retry.',
  });
  const viaQuery = await query(app, '/000000000000/q', 'Action=ReceiveMessage&Version=2012-11-05');
  assert.equal(viaQuery.statusCode, 503);
  assert.match(viaQuery.body, /<Type>Receiver<\/Type><Code>ServiceUnavailable<\/Code>/);
});

void test('Given an executor that throws anything else, then the client gets InternalFailure and nothing of its text', async (t) => {
  const executor = fakeExecutor(() => {
    throw new Error('secret detail');
  });
  const { app } = plane(t, { executor });
  const r = await json(app, 'ListQueues', {});
  assert.equal(r.statusCode, 500);
  assert.equal(errorType(r), 'com.amazon.coral.service#InternalFailure');
  assert.doesNotMatch(r.body, /secret/);
});

void test('Given an executor and a durability that is not serving, then requests still reach the executor and none waits for a commit', async (t) => {
  let commits = 0;
  const durability: Durability = {
    kind: 'redis',
    serving: false,
    commit: () => {
      commits++;
      return Promise.resolve();
    },
  };
  const executor = fakeExecutor(() => ({ QueueUrls: [] }));
  const { app } = plane(t, { executor, durability });
  const r = await json(app, 'ListQueues', {});
  assert.equal(r.statusCode, 200, r.body);
  assert.equal(executor.calls.length, 1);
  assert.equal(commits, 0);
  // The same durability without an executor gates.
  const { app: gated } = plane(t, { durability });
  assert.equal((await json(gated, 'ListQueues', {})).statusCode, 503);
});

void test('Given an executor, when a request fails to decode, then the executor is not called and the client gets the decoding error', async (t) => {
  const executor = fakeExecutor(() => ({}));
  const { app } = plane(t, { executor });
  const r = await json(app, 'NoSuchAction', {});
  assert.equal(r.statusCode, 400);
  assert.equal(errorType(r), 'com.amazon.coral.service#UnknownOperationException');
  assert.equal(executor.calls.length, 0);
});
