/**
 * SigV4 on the data plane (--auth on), end to end: tenants from --config, requests signed by the
 * real clients (@aws-sdk/client-sqs over JSON, Debian's aws-cli over Query) with a tenant's keys,
 * and the 403s a bad signature gets; tenants cannot reach each other's queues.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueUrlCommand,
  ListQueuesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { runToEnd } from '../support/process.js';
import {
  awsToolEnv,
  DEBIAN_AWS,
  startServer,
  tenantsConfigFile,
  type RunningServer,
} from '../support/server.js';
import { requires, testsRequiring } from '../support/requires.js';
import * as sqsCommands from '@aws-sdk/client-sqs';
import { boto3Calls, type Boto3Result } from '../support/boto3.js';
import { queryErrorCode, xmlText } from '../support/wire.js';
import { presignRequest, signRequest } from '../support/sigv4.js';

const cliTest = testsRequiring('aws').test;

const A = {
  name: 'team-a',
  accountId: '111111111111',
  accessKeyId: 'AKIATEAMA00000000001',
  secretAccessKey: 'secret-a/1+A',
};
const B = {
  name: 'team-b',
  accountId: '222222222222',
  accessKeyId: 'AKIATEAMB00000000001',
  secretAccessKey: 'secret-b/2+B',
};
const MINUTE = 60_000;

let server: RunningServer;
const config = tenantsConfigFile([A, B].map((t) => ({ ...t, queues: [`${t.name}-jobs`] })));

before(async () => {
  server = await startServer({ args: ['--auth', 'on', '--config', config.path] });
});
after(async () => {
  await server.stop();
  config.remove();
});

function client(
  t: { accessKeyId: string; secretAccessKey: string },
  opts: { region?: string; clockOffsetMs?: number } = {},
): SQSClient {
  return new SQSClient({
    region: opts.region ?? 'us-east-1',
    endpoint: server.url,
    credentials: { accessKeyId: t.accessKeyId, secretAccessKey: t.secretAccessKey },
    maxAttempts: 1,
    // Shifts the date the SDK signs with, as a skewed client clock would.
    systemClockOffset: opts.clockOffsetMs ?? 0,
  });
}

async function sdkError(
  p: Promise<unknown>,
): Promise<{ name: string; status: number | undefined; message: string }> {
  try {
    await p;
  } catch (e) {
    const err = e as { name: string; message: string; $metadata?: { httpStatusCode?: number } };
    return { name: err.name, status: err.$metadata?.httpStatusCode, message: err.message };
  }
  assert.fail('the call succeeded');
}

/** Debian's aws-cli (Query protocol) with a tenant's keys. */
function cli(
  t: { accessKeyId: string; secretAccessKey: string },
  args: string[],
  region = 'us-east-1',
): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...awsToolEnv(), AWS_ACCESS_KEY_ID: t.accessKeyId, AWS_SECRET_ACCESS_KEY: t.secretAccessKey };
  return runToEnd(
    DEBIAN_AWS,
    ['--endpoint-url', server.url, '--region', region, '--output', 'json', 'sqs', ...args],
    { env, timeout: 30_000 },
  );
}

void describe('auth on: signed by the real clients', () => {
  void test("Given tenant A's keys, when the SDK (JSON) creates, sends, receives and deletes, then it works in A's account", async () => {
    const sqs = client(A);
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'sdk-signed' }));
    assert.equal(QueueUrl, `${server.url}/${A.accountId}/sdk-signed`);
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'signed body ✓' }));
    const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 1 }));
    assert.equal(got.Messages?.[0]?.Body, 'signed body ✓');
    await sqs.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: got.Messages?.[0]?.ReceiptHandle }));
  });

  cliTest(
    "Given tenant B's keys, when Debian's aws-cli (Query) lists, creates and sends, then it works in B's account",
    async () => {
      const created = await cli(B, ['create-queue', '--queue-name', 'cli-signed']);
      assert.equal(created.code, 0, created.stderr);
      assert.equal(
        (JSON.parse(created.stdout) as { QueueUrl: string }).QueueUrl,
        `${server.url}/${B.accountId}/cli-signed`,
      );
      const sent = await cli(B, [
        'send-message',
        '--queue-url',
        `${server.url}/${B.accountId}/cli-signed`,
        '--message-body',
        'a b+c&d=é',
      ]);
      assert.equal(sent.code, 0, sent.stderr);
      const listed = await cli(B, ['list-queues']);
      assert.equal(listed.code, 0, listed.stderr);
      assert.deepEqual((JSON.parse(listed.stdout) as { QueueUrls: string[] }).QueueUrls.sort(), [
        `${server.url}/${B.accountId}/cli-signed`,
        `${server.url}/${B.accountId}/team-b-jobs`,
      ]);
    },
  );

  void test("Given a presigned Query GET with A's key (body hash or UNSIGNED-PAYLOAD), when fetched, then the message is sent", async () => {
    for (const headers of [{}, { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' }]) {
      const r = await presignRequest(
        {
          method: 'GET',
          url: `${server.url}/${A.accountId}/team-a-jobs?Action=SendMessage&MessageBody=presigned&Version=2012-11-05`,
          headers,
        },
        A,
      );
      const res = await fetch(r.url);
      assert.equal(res.status, 200, await res.text());
    }
    const tampered = await presignRequest(
      {
        method: 'GET',
        url: `${server.url}/${A.accountId}/team-a-jobs?Action=SendMessage&MessageBody=x`,
        headers: {},
      },
      A,
    );
    const res = await fetch(tampered.url.replace('MessageBody=x', 'MessageBody=y'));
    assert.equal(res.status, 403);
    assert.match(await res.text(), /<Code>SignatureDoesNotMatch<\/Code>/);
  });

  void test("Given A's queue URL, when Query actions are sent to it signed (POST) or presigned (GET), then queue actions act on it and account actions are InvalidAction, as AWS answers", async () => {
    const queueUrl = `${server.url}/${A.accountId}/team-a-jobs`;
    const post = await signRequest(
      {
        method: 'POST',
        url: queueUrl,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'Action=GetQueueAttributes&AttributeName.1=QueueArn&Version=2012-11-05',
      },
      A,
    );
    const attrs = await fetch(post.url, { method: 'POST', headers: post.headers, body: post.body ?? '' });
    const attrsText = await attrs.text();
    assert.equal(attrs.status, 200, attrsText);
    assert.match(attrsText, new RegExp(`<Value>arn:aws:sqs:[a-z0-9-]+:${A.accountId}:team-a-jobs</Value>`));
    const get = await presignRequest(
      {
        method: 'GET',
        url: `${queueUrl}?Action=ReceiveMessage&VisibilityTimeout=0&Version=2012-11-05`,
        headers: {},
      },
      A,
    );
    const received = await fetch(get.url);
    assert.equal(received.status, 200, await received.text());
    const list = await presignRequest(
      { method: 'GET', url: `${queueUrl}?Action=ListQueues&Version=2012-11-05`, headers: {} },
      A,
    );
    const refused = await fetch(list.url);
    assert.equal(refused.status, 400);
    assert.match(
      await refused.text(),
      /<Code>InvalidAction<\/Code><Message>The action ListQueues is not valid for this endpoint.<\/Message>/,
    );
  });

  cliTest('Given a wrong secret, when aws-cli calls, then SignatureDoesNotMatch', async () => {
    const res = await cli({ ...A, secretAccessKey: 'wrong' }, ['list-queues']);
    assert.notEqual(res.code, 0);
    assert.match(res.stderr, /\(SignatureDoesNotMatch\)/);
  });

  void test('Given a region of the credential scope, when a queue is created there, then it lives in that region only', async () => {
    const eu = client(A, { region: 'eu-west-1' });
    await eu.send(new CreateQueueCommand({ QueueName: 'regional' }));
    const inEu = await eu.send(new GetQueueUrlCommand({ QueueName: 'regional' }));
    assert.equal(inEu.QueueUrl, `${server.url}/eu-west-1/${A.accountId}/regional`);
    const err = await sdkError(client(A).send(new GetQueueUrlCommand({ QueueName: 'regional' })));
    assert.equal(err.name, 'QueueDoesNotExist');
  });
});

void describe('auth on: regions', () => {
  cliTest(
    'Given queues of one name in two regions, when the SDK (JSON) and aws-cli (Query) use each URL, then they are two queues with two URLs, each reached only from its region',
    async () => {
      const us = client(A);
      const eu = client(A, { region: 'eu-central-1' });
      const usUrl = (await us.send(new CreateQueueCommand({ QueueName: 'twin' }))).QueueUrl ?? '';
      const euUrl = (await eu.send(new CreateQueueCommand({ QueueName: 'twin' }))).QueueUrl ?? '';
      assert.equal(usUrl, `${server.url}/${A.accountId}/twin`);
      assert.equal(euUrl, `${server.url}/eu-central-1/${A.accountId}/twin`);
      await us.send(new SendMessageCommand({ QueueUrl: usUrl, MessageBody: 'us (JSON)' }));
      const sent = await cli(
        A,
        ['send-message', '--queue-url', euUrl, '--message-body', 'eu (Query)'],
        'eu-central-1',
      );
      assert.equal(sent.code, 0, sent.stderr);
      const listed = await cli(A, ['list-queues', '--queue-name-prefix', 'twin'], 'eu-central-1');
      assert.deepEqual((JSON.parse(listed.stdout) as { QueueUrls: string[] }).QueueUrls, [euUrl]);
      const got = async (c: SQSClient, url: string): Promise<string[]> =>
        (
          (await c.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10 }))).Messages ?? []
        ).map((m) => m.Body ?? '');
      assert.deepEqual(await got(eu, euUrl), ['eu (Query)']);
      assert.deepEqual(await got(us, usUrl), ['us (JSON)']);
      // Each URL, sent with a signature for the other region, names no queue.
      assert.equal(
        (await sdkError(us.send(new SendMessageCommand({ QueueUrl: euUrl, MessageBody: 'x' })))).name,
        'QueueDoesNotExist',
      );
      assert.equal(
        (await sdkError(eu.send(new SendMessageCommand({ QueueUrl: usUrl, MessageBody: 'x' })))).name,
        'QueueDoesNotExist',
      );
      const wrongRegion = await cli(A, ['send-message', '--queue-url', euUrl, '--message-body', 'x']);
      assert.match(wrongRegion.stderr, /NonExistentQueue/);
      // The Query protocol posted to the queue's own URL path finds it too.
      const r = await signRequest(
        {
          method: 'POST',
          url: euUrl,
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'Action=GetQueueAttributes&AttributeName.1=QueueArn&Version=2012-11-05',
        },
        { ...A, region: 'eu-central-1' },
      );
      const res = await fetch(r.url, { method: 'POST', headers: r.headers, body: r.body ?? '' });
      assert.match(await res.text(), new RegExp(`arn:aws:sqs:eu-central-1:${A.accountId}:twin`));
    },
  );
});

void describe('auth on: requests that are refused', () => {
  void test('Given a wrong secret, when the SDK calls, then 403 SignatureDoesNotMatch', async () => {
    const err = await sdkError(client({ ...A, secretAccessKey: 'wrong' }).send(new ListQueuesCommand({})));
    assert.deepEqual([err.status, err.name], [403, 'SignatureDoesNotMatch']);
  });

  void test('Given an access key id no tenant has, when the SDK calls, then 403 InvalidClientTokenId', async () => {
    const err = await sdkError(
      client({ accessKeyId: 'AKIANOBODY0000000000', secretAccessKey: 'x' }).send(new ListQueuesCommand({})),
    );
    assert.deepEqual([err.status, err.name], [403, 'InvalidClientTokenId']);
  });

  for (const minutes of [16, -16]) {
    void test(`Given a client clock ${minutes} minutes off, when the SDK calls, then 403 SignatureDoesNotMatch`, async () => {
      const err = await sdkError(
        client(A, { clockOffsetMs: minutes * MINUTE }).send(new ListQueuesCommand({})),
      );
      assert.deepEqual([err.status, err.name], [403, 'SignatureDoesNotMatch']);
      assert.match(err.message, minutes > 0 ? /^Signature not yet current/ : /^Signature expired/);
    });
  }

  for (const minutes of [14, -14]) {
    void test(`Given a client clock ${minutes} minutes off, when the SDK calls, then it is accepted`, async () => {
      const out = await client(A, { clockOffsetMs: minutes * MINUTE }).send(new ListQueuesCommand({}));
      assert.ok(out.QueueUrls?.includes(`${server.url}/${A.accountId}/team-a-jobs`));
    });
  }

  void test('Given a scope region that is no region, when the SDK calls, then 403 SignatureDoesNotMatch', async () => {
    const err = await sdkError(client(A, { region: 'moon' }).send(new ListQueuesCommand({})));
    assert.deepEqual([err.status, err.name], [403, 'SignatureDoesNotMatch']);
    assert.match(err.message, /valid region/);
  });

  void test('Given a scope for another service, when posted, then 403 SignatureDoesNotMatch', async () => {
    const res = await post(await signed('{}', { service: 'sns' }));
    assert.equal(res.status, 403);
    assert.equal(res.headers.get('x-amzn-query-error'), 'SignatureDoesNotMatch;Sender');
  });

  void test('Given a body changed after signing, when posted, then 403 SignatureDoesNotMatch', async () => {
    const r = await signed('{"QueueName":"team-a-jobs"}');
    const res = await post({ ...r, body: '{"QueueName":"team-a-jobz"}' });
    assert.equal(res.status, 403);
    const body = (await res.json()) as { __type: string };
    assert.equal(body.__type, 'com.amazon.coral.service#InvalidSignatureException');
    assert.equal(res.headers.get('x-amzn-query-error'), 'SignatureDoesNotMatch;Sender');
  });

  void test('Given no signature at all, when posted (JSON and Query), then 403 MissingAuthenticationToken', async () => {
    const json = await fetch(`${server.url}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.ListQueues' },
      body: '{}',
    });
    assert.equal(json.status, 403);
    assert.equal(json.headers.get('x-amzn-query-error'), 'MissingAuthenticationToken;Sender');
    const query = await fetch(`${server.url}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'Action=ListQueues&Version=2012-11-05',
    });
    assert.equal(query.status, 403);
    assert.match(await query.text(), /<Code>MissingAuthenticationToken<\/Code>/);
  });

  async function signed(body: string, o: { service?: string } = {}) {
    return signRequest(
      {
        method: 'POST',
        url: `${server.url}/`,
        headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.GetQueueUrl' },
        body,
      },
      { accessKeyId: A.accessKeyId, secretAccessKey: A.secretAccessKey, ...o },
    );
  }

  function post(r: { url: string; headers: Record<string, string>; body?: string }): Promise<Response> {
    return fetch(r.url, { method: 'POST', headers: r.headers, body: r.body ?? '' });
  }
});

void describe('auth on: tenants are apart', () => {
  const bQueue = (): string => `${server.url}/${B.accountId}/team-b-jobs`;

  void test("Given B's queue, when A lists queues, then A sees only its own", async () => {
    const out = await client(A).send(new ListQueuesCommand({}));
    assert.ok((out.QueueUrls ?? []).length > 0);
    for (const url of out.QueueUrls ?? []) assert.ok(url.includes(`/${A.accountId}/`), url);
  });

  void test("Given B's queue URL, when A sends, receives or deletes with it, then the queue does not exist for A", async () => {
    await client(B).send(new SendMessageCommand({ QueueUrl: bQueue(), MessageBody: 'for B only' }));
    const a = client(A);
    for (const call of [
      a.send(new SendMessageCommand({ QueueUrl: bQueue(), MessageBody: 'intruder' })),
      a.send(new ReceiveMessageCommand({ QueueUrl: bQueue() })),
      a.send(new DeleteMessageCommand({ QueueUrl: bQueue(), ReceiptHandle: 'x' })),
      a.send(new GetQueueUrlCommand({ QueueName: 'team-b-jobs', QueueOwnerAWSAccountId: B.accountId })),
    ]) {
      assert.equal((await sdkError(call)).name, 'QueueDoesNotExist');
    }
    // A queue of the same name in A's account is A's own, not B's.
    const mine = await a.send(new CreateQueueCommand({ QueueName: 'team-b-jobs' }));
    assert.equal(mine.QueueUrl, `${server.url}/${A.accountId}/team-b-jobs`);
    const got = await client(B).send(new ReceiveMessageCommand({ QueueUrl: bQueue(), WaitTimeSeconds: 1 }));
    assert.equal(got.Messages?.[0]?.Body, 'for B only');
  });
});

/**
 * docs/faults.md row 19: tenant B names tenant A's queues by ARN or URL in every parameter that takes one,
 * over JSON (SDK v3) and Query (Debian's boto3 1.26), with B's keys. Each call is made twice, once
 * naming A's existing queue and once a queue A does not have: the answers must be the same (code
 * and text, the name aside), and A's queues unchanged after.
 */
void describe("auth on: docs/faults.md row 19, another tenant's queues by ARN or URL", () => {
  const arn = (account: string, name: string): string => `arn:aws:sqs:us-east-1:${account}:${name}`;
  const url = (account: string, name: string): string => `${server.url}/${account}/${name}`;
  const policy = (target: string): string =>
    JSON.stringify({ deadLetterTargetArn: target, maxReceiveCount: 1 });
  let aTaskId = '';
  const handle = (sourceArn: string): string =>
    Buffer.from(JSON.stringify({ taskId: aTaskId, sourceArn }), 'utf8').toString('base64');

  /** One call naming a queue by `x` (an ARN or a URL of A's): the operation and its parameters. */
  interface Reach {
    readonly op: string;
    readonly by: 'arn' | 'url';
    readonly params: (x: string) => Record<string, unknown>;
  }
  const reaches: Reach[] = [
    {
      op: 'CreateQueue',
      by: 'arn',
      params: (x) => ({ QueueName: 'b-new', Attributes: { RedrivePolicy: policy(x) } }),
    },
    {
      op: 'SetQueueAttributes',
      by: 'arn',
      params: (x) => ({ QueueUrl: url(B.accountId, 'b-src'), Attributes: { RedrivePolicy: policy(x) } }),
    },
    {
      op: 'SetQueueAttributes',
      by: 'arn',
      params: (x) => ({
        QueueUrl: url(B.accountId, 'b-dlq'),
        Attributes: {
          RedriveAllowPolicy: JSON.stringify({ redrivePermission: 'byQueue', sourceQueueArns: [x] }),
        },
      }),
    },
    { op: 'StartMessageMoveTask', by: 'arn', params: (x) => ({ SourceArn: x }) },
    {
      op: 'StartMessageMoveTask',
      by: 'arn',
      params: (x) => ({ SourceArn: arn(B.accountId, 'b-dlq'), DestinationArn: x }),
    },
    { op: 'ListMessageMoveTasks', by: 'arn', params: (x) => ({ SourceArn: x }) },
    { op: 'CancelMessageMoveTask', by: 'arn', params: (x) => ({ TaskHandle: handle(x) }) },
    { op: 'ListDeadLetterSourceQueues', by: 'url', params: (x) => ({ QueueUrl: x }) },
    { op: 'GetQueueAttributes', by: 'url', params: (x) => ({ QueueUrl: x, AttributeNames: ['All'] }) },
    {
      op: 'SetQueueAttributes',
      by: 'url',
      params: (x) => ({ QueueUrl: x, Attributes: { DelaySeconds: '7' } }),
    },
    { op: 'SendMessage', by: 'url', params: (x) => ({ QueueUrl: x, MessageBody: 'from B' }) },
    {
      op: 'SendMessageBatch',
      by: 'url',
      params: (x) => ({ QueueUrl: x, Entries: [{ Id: '1', MessageBody: 'from B' }] }),
    },
    { op: 'ReceiveMessage', by: 'url', params: (x) => ({ QueueUrl: x }) },
    { op: 'DeleteMessage', by: 'url', params: (x) => ({ QueueUrl: x, ReceiptHandle: 'h' }) },
    {
      op: 'DeleteMessageBatch',
      by: 'url',
      params: (x) => ({ QueueUrl: x, Entries: [{ Id: '1', ReceiptHandle: 'h' }] }),
    },
    {
      op: 'ChangeMessageVisibility',
      by: 'url',
      params: (x) => ({ QueueUrl: x, ReceiptHandle: 'h', VisibilityTimeout: 0 }),
    },
    {
      op: 'ChangeMessageVisibilityBatch',
      by: 'url',
      params: (x) => ({ QueueUrl: x, Entries: [{ Id: '1', ReceiptHandle: 'h', VisibilityTimeout: 0 }] }),
    },
    { op: 'TagQueue', by: 'url', params: (x) => ({ QueueUrl: x, Tags: { by: 'B' } }) },
    { op: 'UntagQueue', by: 'url', params: (x) => ({ QueueUrl: x, TagKeys: ['owner'] }) },
    { op: 'ListQueueTags', by: 'url', params: (x) => ({ QueueUrl: x }) },
    {
      op: 'AddPermission',
      by: 'url',
      params: (x) => ({ QueueUrl: x, Label: 'b', AWSAccountIds: [B.accountId], Actions: ['SendMessage'] }),
    },
    { op: 'RemovePermission', by: 'url', params: (x) => ({ QueueUrl: x, Label: 'a' }) },
    { op: 'PurgeQueue', by: 'url', params: (x) => ({ QueueUrl: x }) },
    { op: 'DeleteQueue', by: 'url', params: (x) => ({ QueueUrl: x }) },
  ];
  const existing = (r: Reach): string =>
    r.by === 'arn' ? arn(A.accountId, 'a-dlq') : url(A.accountId, 'a-dlq');
  const missing = (r: Reach): string =>
    r.by === 'arn' ? arn(A.accountId, 'a-none') : url(A.accountId, 'a-none');

  before(async () => {
    const a = client(A);
    const dlq = await a.send(new CreateQueueCommand({ QueueName: 'a-dlq', tags: { owner: 'A' } }));
    await a.send(
      new CreateQueueCommand({
        QueueName: 'a-src',
        Attributes: { RedrivePolicy: policy(arn(A.accountId, 'a-dlq')) },
      }),
    );
    await a.send(
      new sqsCommands.AddPermissionCommand({
        QueueUrl: dlq.QueueUrl,
        Label: 'a',
        AWSAccountIds: [A.accountId],
        Actions: ['SendMessage'],
      }),
    );
    await a.send(new SendMessageCommand({ QueueUrl: dlq.QueueUrl, MessageBody: 'A only' }));
    const task = await a.send(
      new sqsCommands.StartMessageMoveTaskCommand({
        SourceArn: arn(A.accountId, 'a-dlq'),
        DestinationArn: arn(A.accountId, 'a-src'),
        MaxNumberOfMessagesPerSecond: 1,
      }),
    );
    aTaskId = (
      JSON.parse(Buffer.from(task.TaskHandle ?? '', 'base64').toString('utf8')) as { taskId: string }
    ).taskId;
    const b = client(B);
    await b.send(new CreateQueueCommand({ QueueName: 'b-dlq' }));
    await b.send(
      new CreateQueueCommand({
        QueueName: 'b-src',
        Attributes: { RedrivePolicy: policy(arn(B.accountId, 'b-dlq')) },
      }),
    );
  });

  /** Code and text of a refusal, with the queue named replaced, to compare two of them. */
  const shape = (code: string, message: string, x: string): string =>
    `${code}: ${message
      .replaceAll(x, '<x>')
      .replaceAll(x.slice(x.lastIndexOf(':') + 1), '<name>')
      .replaceAll(x.slice(x.lastIndexOf('/') + 1), '<name>')}`;

  void test("Given B's keys, when the SDK (JSON) names A's queue in each parameter, then the answer is that of a queue A does not have, and a refusal", async () => {
    const b = client(B) as unknown as { send: (c: unknown) => Promise<unknown> };
    const commands = sqsCommands as unknown as Record<string, new (input: unknown) => unknown>;
    for (const r of reaches) {
      const answers: string[] = [];
      for (const x of [existing(r), missing(r)]) {
        const Command = commands[`${r.op}Command`];
        assert.ok(Command !== undefined, r.op);
        try {
          await b.send(new Command(r.params(x)));
          assert.fail(`${r.op} naming ${x} succeeded`);
        } catch (e) {
          const err = e as { name: string; Code?: string; message: string };
          if (err.name === 'AssertionError') throw e;
          answers.push(shape(`${err.name}/${err.Code ?? ''}`, err.message, x));
        }
      }
      assert.equal(answers[0], answers[1], `${r.op} (${r.by})`);
    }
  });

  void test(
    "Given B's keys, when Debian's boto3 (Query) names A's queue in each parameter, then the answer is that of a queue A does not have, and a refusal",
    requires('boto3'),
    async () => {
      // boto3 1.26's model predates the move-task actions (2023): those go as signed Query posts.
      const raw = reaches.filter((r) => r.op.includes('MessageMoveTask'));
      const viaBoto3 = reaches.filter((r) => !raw.includes(r));
      const snake = (op: string): string =>
        op.replace(/[A-Z]/g, (c, i: number) => (i === 0 ? '' : '_') + c.toLowerCase());
      const calls = viaBoto3.flatMap((r) =>
        [existing(r), missing(r)].map((x) => ({ op: snake(r.op), params: r.params(x) })),
      );
      const run = await boto3Calls(server.url, calls, undefined, {
        env: { AWS_ACCESS_KEY_ID: B.accessKeyId, AWS_SECRET_ACCESS_KEY: B.secretAccessKey },
      });
      assert.equal(run.protocol, 'query');
      viaBoto3.forEach((r, i) => {
        const answers = [run.results[2 * i], run.results[2 * i + 1]].map(
          (res: Boto3Result | undefined, j) => {
            assert.ok(res !== undefined && !res.ok, `${r.op} (${r.by}) succeeded`);
            return shape(res.code, res.message, j === 0 ? existing(r) : missing(r));
          },
        );
        assert.equal(answers[0], answers[1], `${r.op} (${r.by})`);
      });
      for (const r of raw) {
        const answers: string[] = [];
        for (const x of [existing(r), missing(r)]) {
          const form = new URLSearchParams({ Action: r.op, Version: '2012-11-05' });
          for (const [k, v] of Object.entries(r.params(x))) form.set(k, String(v));
          const signed = await signRequest(
            {
              method: 'POST',
              url: `${server.url}/`,
              headers: { 'content-type': 'application/x-www-form-urlencoded' },
              body: form.toString(),
            },
            B,
          );
          const res = await fetch(signed.url, {
            method: 'POST',
            headers: signed.headers,
            body: signed.body ?? '',
          });
          const text = await res.text();
          assert.ok(res.status >= 400, `${r.op} naming ${x}: ${res.status}`);
          answers.push(shape(queryErrorCode(text) ?? '', xmlText(text, 'Message') ?? '', x));
        }
        assert.equal(answers[0], answers[1], `${r.op} (${r.by})`);
      }
    },
  );

  void test('Given those attempts, when A looks at its queues, then nothing of B is stored or moved there', async () => {
    const a = client(A);
    const dlqUrl = url(A.accountId, 'a-dlq');
    const attrs = await a.send(
      new sqsCommands.GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['All'] }),
    );
    assert.equal(attrs.Attributes?.DelaySeconds, '0');
    assert.equal(attrs.Attributes?.RedriveAllowPolicy, undefined);
    assert.match(attrs.Attributes?.Policy ?? '', /"Sid":"a"/);
    assert.doesNotMatch(attrs.Attributes?.Policy ?? '', new RegExp(B.accountId));
    const tags = await a.send(new sqsCommands.ListQueueTagsCommand({ QueueUrl: dlqUrl }));
    assert.deepEqual(tags.Tags, { owner: 'A' });
    const sources = await a.send(new sqsCommands.ListDeadLetterSourceQueuesCommand({ QueueUrl: dlqUrl }));
    assert.deepEqual(sources.queueUrls, [url(A.accountId, 'a-src')]);
    const b = await client(B).send(
      new sqsCommands.GetQueueAttributesCommand({
        QueueUrl: url(B.accountId, 'b-src'),
        AttributeNames: ['RedrivePolicy'],
      }),
    );
    assert.equal(b.Attributes?.RedrivePolicy, policy(arn(B.accountId, 'b-dlq')));
    assert.equal(
      (await sdkError(client(B).send(new GetQueueUrlCommand({ QueueName: 'b-new' })))).name,
      'QueueDoesNotExist',
    );
    // A's one message is in a-dlq or, moved by A's own task, in a-src; B's sends reached neither.
    let bodies: string[] = [];
    for (const q of ['a-dlq', 'a-src']) {
      const got = await a.send(
        new ReceiveMessageCommand({ QueueUrl: url(A.accountId, q), MaxNumberOfMessages: 10 }),
      );
      bodies = bodies.concat((got.Messages ?? []).map((m) => m.Body ?? ''));
    }
    assert.deepEqual(bodies, ['A only']);
  });
});

/**
 * docs/faults.md row 20: a signed or presigned request of tenant A, changed in a part its signature does
 * not cover, is refused (403 SignatureDoesNotMatch in the protocol the request speaks) and changes
 * nothing; unchanged, it runs as signed.
 */
void describe('auth on: docs/faults.md row 20, only what the signature covers is run', () => {
  const queue = (name: string): string => `${server.url}/${A.accountId}/${name}`;
  const exists = async (name: string): Promise<boolean> => {
    const out = await client(A).send(new ListQueuesCommand({ QueueNamePrefix: name }));
    return (out.QueueUrls ?? []).includes(queue(name));
  };
  const depth = async (name: string): Promise<string | undefined> => {
    const out = await client(A).send(
      new sqsCommands.GetQueueAttributesCommand({
        QueueUrl: queue(name),
        AttributeNames: ['ApproximateNumberOfMessages'],
      }),
    );
    return out.Attributes?.ApproximateNumberOfMessages;
  };

  before(async () => {
    for (const name of ['f20-keep', 'f20-send'])
      await client(A).send(new CreateQueueCommand({ QueueName: name }));
  });

  void test('Given a URL presigned for POST ?Action=ListQueues with UNSIGNED-PAYLOAD and only host signed, when sent as JSON DeleteQueue, then 403 SignatureDoesNotMatch and the queue stays; unchanged, it lists', async () => {
    const signed = await presignRequest(
      {
        method: 'POST',
        url: `${server.url}/?Action=ListQueues&Version=2012-11-05`,
        headers: { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' },
      },
      A,
    );
    assert.match(signed.url, /X-Amz-SignedHeaders=host&/);
    const swapped = await fetch(signed.url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.DeleteQueue' },
      body: JSON.stringify({ QueueUrl: queue('f20-keep') }),
    });
    assert.equal(swapped.status, 403);
    assert.equal(swapped.headers.get('x-amzn-query-error'), 'SignatureDoesNotMatch;Sender');
    assert.ok(swapped.headers.get('x-amzn-requestid'));
    // The same with an empty body: still not the signed action.
    const bare = await fetch(signed.url, {
      method: 'POST',
      headers: { 'x-amz-target': 'AmazonSQS.DeleteQueue' },
    });
    assert.equal(bare.status, 403);
    assert.ok(await exists('f20-keep'));
    const asSigned = await fetch(signed.url, { method: 'POST' });
    assert.equal(asSigned.status, 200);
    assert.match(await asSigned.text(), /<ListQueuesResult>/);
  });

  void test('Given a presigned SendMessage (UNSIGNED-PAYLOAD), when extra form parameters come in the body, then 403 SignatureDoesNotMatch and nothing is stored', async () => {
    const signed = await presignRequest(
      {
        method: 'POST',
        url: `${queue('f20-send')}?Action=SendMessage&MessageBody=signed&Version=2012-11-05`,
        headers: { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' },
      },
      A,
    );
    const res = await fetch(signed.url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'MessageAttribute.1.Name=unsigned&MessageAttribute.1.Value.DataType=String&MessageAttribute.1.Value.StringValue=x',
    });
    assert.equal(res.status, 403);
    assert.equal(queryErrorCode(await res.text()), 'SignatureDoesNotMatch');
    assert.equal(await depth('f20-send'), '0');
  });

  for (const signedTarget of [undefined, 'AmazonSQS.GetQueueAttributes']) {
    const what =
      signedTarget === undefined
        ? 'a header-signed JSON request whose X-Amz-Target was left out of the signature'
        : 'a captured signed GetQueueAttributes';
    void test(`Given ${what}, when sent as DeleteQueue with the same body, then 403 SignatureDoesNotMatch and the queue stays`, async () => {
      const signed = await signRequest(
        {
          method: 'POST',
          url: `${server.url}/`,
          headers: {
            'content-type': 'application/x-amz-json-1.0',
            ...(signedTarget === undefined ? {} : { 'x-amz-target': signedTarget }),
          },
          body: JSON.stringify({ QueueUrl: queue('f20-keep') }),
        },
        A,
      );
      const res = await fetch(signed.url, {
        method: 'POST',
        headers: { ...signed.headers, 'x-amz-target': 'AmazonSQS.DeleteQueue' },
        body: signed.body ?? '',
      });
      assert.equal(res.status, 403);
      assert.equal(res.headers.get('x-amzn-query-error'), 'SignatureDoesNotMatch;Sender');
      assert.ok(await exists('f20-keep'));
    });
  }
});
