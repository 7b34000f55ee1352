/**
 * `shared-sqs admin ...` as users run it (bin/shared-sqs.js), against a running server.
 */
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { CreateQueueCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { runToEnd } from '../support/process.js';
import { cleanEnv, sqsClient, startServer, uniqueName, type RunningServer } from '../support/server.js';

const BIN = fileURLToPath(new URL('../../bin/shared-sqs.js', import.meta.url));
const TOKEN = 'cli-test-token';
let server: RunningServer;

before(async () => {
  server = await startServer({ env: { SHARED_SQS_ADMIN_TOKEN: TOKEN } });
});
after(() => server.stop());

function admin(args: string[], token = TOKEN): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = cleanEnv({ SHARED_SQS_ADMIN_URL: server.controlUrl, SHARED_SQS_ADMIN_TOKEN: token });
  return runToEnd(process.execPath, [BIN, 'admin', ...args], { env, timeout: 20_000 });
}

test('Given a server, when a tenant is created and listed with the CLI, then a table shows it and --json its keys', async () => {
  const created = await admin(['tenants', 'create', 'cli-team', '--account-id', '123123123123']);
  assert.equal(created.code, 0, created.stderr);
  assert.match(created.stdout, /^secret access key\s+\S{40}$/m);
  const listed = await admin(['tenants']);
  assert.match(listed.stdout, /^TENANT\s+ACCOUNT\s+KEYS\s+QUEUES$/m);
  assert.match(listed.stdout, /^cli-team\s+123123123123\s+AKIA[A-Z2-7]{16}\s+0$/m);
  const json = await admin(['--json', 'tenants']);
  const body = JSON.parse(json.stdout) as { tenants: { name: string; accountId: string }[] };
  assert.ok(body.tenants.some((t) => t.name === 'cli-team' && t.accountId === '123123123123'));
});

test('Given a queue with a message, when peeked and purged with the CLI, then the message shows and is gone', async () => {
  const sqs = sqsClient(server.url);
  const name = uniqueName('cli');
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name }));
  await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'peek at me' }));
  const peeked = await admin(['peek', name]);
  assert.equal(peeked.code, 0, peeked.stderr);
  assert.match(peeked.stdout, /visible\s+0\s+\S+\s+peek at me/);
  const refused = await admin(['purge', name]);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /add --yes/);
  const purged = await admin(['purge', `000000000000/us-east-1/${name}`, '--yes']);
  assert.equal(purged.stdout, 'purged 1 message(s)\n');
  const queues = JSON.parse((await admin(['--json', 'queues'])).stdout) as {
    queues: { name: string; visible: number }[];
  };
  assert.equal(queues.queues.find((q) => q.name === name)?.visible, 0);
});

test('Given a wrong token, when the CLI calls, then exit 1 with the 401 and the token is not printed', async () => {
  const res = await admin(['queues'], 'not-the-token');
  assert.equal(res.code, 1);
  assert.match(res.stderr, /401 Unauthorized/);
  assert.doesNotMatch(res.stdout + res.stderr, /not-the-token/);
});

test('Given the leader command, when run against a single instance, then it says so', async () => {
  const res = await admin(['leader']);
  assert.equal(res.code, 0, res.stderr);
  assert.match(res.stdout, /^leaderElection\s+false$/m);
});
