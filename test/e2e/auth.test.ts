/**
 * SigV4 on the data plane (--auth on), end to end: tenants from --config, requests signed by the
 * real clients (@aws-sdk/client-sqs over JSON, Debian's aws-cli over Query) with a tenant's keys,
 * and the 403s a bad signature gets; tenants cannot reach each other's queues.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
import { awsToolEnv, DEBIAN_AWS, startServer, type RunningServer } from '../helpers/server.js';
import { testsRequiring } from '../helpers/requires.js';
import { presignRequest, signRequest } from '../helpers/sigv4.js';

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
let dir: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ssq-auth-'));
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      tenants: [A, B].map((t) => ({
        name: t.name,
        accountId: t.accountId,
        keys: [{ accessKeyId: t.accessKeyId, secretAccessKey: t.secretAccessKey }],
        queues: [{ name: `${t.name}-jobs` }],
      })),
    }),
  );
  server = await startServer({ args: ['--auth', 'on', '--config', config] });
});
after(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
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
  return new Promise((resolve) => {
    execFile(
      DEBIAN_AWS,
      ['--endpoint-url', server.url, '--region', region, '--output', 'json', 'sqs', ...args],
      { env, timeout: 30_000, encoding: 'utf8' },
      (error, stdout, stderr) => {
        resolve({
          code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1,
          stdout,
          stderr,
        });
      },
    );
  });
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

  void test("Given A's queue URL, when Query actions are sent to it signed (POST) or presigned (GET), then queue actions act on it and account actions are InvalidAction (issue 21)", async () => {
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
    assert.equal(inEu.QueueUrl, `${server.url}/${A.accountId}/regional`);
    const err = await sdkError(client(A).send(new GetQueueUrlCommand({ QueueName: 'regional' })));
    assert.equal(err.name, 'QueueDoesNotExist');
  });
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
