/**
 * The embeddable server (src/index.ts: `startServer`), as a test suite uses it: imported by the
 * package's name, started in this process on free ports, memory only, and closed. Covers the JSON
 * 1.0 protocol (@aws-sdk/client-sqs) and the Query protocol (a form POST, as aws-cli and boto3
 * send it), and the package as published: plain Node, no tsx, importing dist/ through the
 * package.json "exports".
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { test } from 'node:test';
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  DeleteQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { startServer } from 'shared-sqs';
import { PROJECT_ROOT, sqsClient } from '../support/server.js';

void test('Given startServer() with no options, when an SDK v3 client (JSON) sends and receives, then it is served on a free loopback port', async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.notEqual(server.url, server.controlUrl);
  const sqs = sqsClient(server.url);
  t.after(() => sqs.destroy());

  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'embedded' }));
  assert.equal(QueueUrl, `${server.url}/000000000000/embedded`);
  await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'hello from a test suite' }));
  const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 1 }));
  assert.equal(got.Messages?.[0]?.Body, 'hello from a test suite');
  await sqs.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: got.Messages[0]?.ReceiptHandle }));
  assert.equal((await fetch(`${server.controlUrl}/ready`)).status, 200);
});

void test('Given a started server, when a Query request (form POST) creates a queue, then the XML answer names its URL', async (t) => {
  const server = await startServer({ accountId: '123456789012' });
  t.after(() => server.close());
  const res = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ Action: 'CreateQueue', QueueName: 'by-query', Version: '2012-11-05' }),
  });
  assert.equal(res.status, 200);
  assert.match(await res.text(), /<QueueUrl>http:\/\/127\.0\.0\.1:\d+\/123456789012\/by-query<\/QueueUrl>/);
});

void test('Given queueDeletedRecently: false, when a queue is deleted and created again at once, then both succeed', async (t) => {
  const server = await startServer({ queueDeletedRecently: false });
  t.after(() => server.close());
  const sqs = sqsClient(server.url);
  t.after(() => sqs.destroy());
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'again' }));
  await sqs.send(new DeleteQueueCommand({ QueueUrl }));
  const again = await sqs.send(new CreateQueueCommand({ QueueName: 'again' }));
  assert.equal(again.QueueUrl, QueueUrl);
});

void test('Given two servers started at once, then each has ports of its own, and close() stops only its own', async () => {
  const [a, b] = await Promise.all([startServer(), startServer()]);
  try {
    assert.notEqual(a.url, b.url);
    await a.close();
    await assert.rejects(fetch(`${a.controlUrl}/health`));
    await assert.rejects(fetch(a.url, { method: 'POST' }));
    assert.equal((await fetch(`${b.controlUrl}/health`)).status, 200);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

void test('Given an option the command line would refuse, when the server starts, then it rejects with the flag named', async () => {
  await assert.rejects(startServer({ auth: 'sometimes' as never }), /--auth/);
  await assert.rejects(startServer({ leaderElection: true }), /needs Redis/);
});

void test('Given the built package, when plain Node imports it by name, then dist/ and its types are what package.json exports', async () => {
  assert.ok(existsSync(`${PROJECT_ROOT}dist/index.d.ts`), 'npm run build emits dist/index.d.ts');
  const script = `
    import { startServer } from 'shared-sqs';
    const s = await startServer();
    const res = await fetch(s.url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'Action=ListQueues' });
    console.log(res.status);
    await s.close();`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
    cwd: PROJECT_ROOT,
    timeout: 30_000,
  });
  assert.equal(stdout.trim(), '200');
});
