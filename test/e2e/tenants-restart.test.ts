/**
 * Tenants survive a restart: created through the admin API on a server with Redis, their keys
 * still sign requests (--auth on) after the process is replaced by a new one.
 */
import assert from 'node:assert/strict';
import {
  CreateQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { startRedis, uniquePrefix, type TestRedis } from '../support/redis.js';
import { startServer, type RunningServer } from '../support/server.js';
import { testsRequiring } from '../support/requires.js';

const { after, before, test } = testsRequiring('redis-server');

const TOKEN = 'restart-test-token';
let redis: TestRedis;
const servers: RunningServer[] = [];

before(async () => {
  redis = await startRedis({ aof: false });
});
after(async () => {
  for (const s of servers) await s.stop();
  await redis.stop();
});

async function server(prefix: string): Promise<RunningServer> {
  const s = await startServer({
    args: ['--auth', 'on', '--redis-addr', redis.url, '--redis-prefix', prefix],
    env: { SHARED_SQS_ADMIN_TOKEN: TOKEN },
  });
  servers.push(s);
  return s;
}

function sqs(s: RunningServer, key: { accessKeyId: string; secretAccessKey: string }): SQSClient {
  return new SQSClient({ region: 'us-east-1', endpoint: s.url, credentials: key, maxAttempts: 1 });
}

test('Given a tenant created through the admin API, when the server restarts on the same Redis, then its key still signs and its queue is there', async () => {
  const prefix = `${uniquePrefix()}`;
  const first = await server(prefix);
  const res = await fetch(`${first.controlUrl}/admin/tenants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'durable', accountId: '777777777777' }),
  });
  assert.equal(res.status, 201);
  const { newKey } = (await res.json()) as { newKey: { accessKeyId: string; secretAccessKey: string } };
  const { QueueUrl } = await sqs(first, newKey).send(new CreateQueueCommand({ QueueName: 'kept' }));
  await sqs(first, newKey).send(new SendMessageCommand({ QueueUrl, MessageBody: 'still here' }));
  await first.stop();

  const second = await server(prefix);
  const got = await sqs(second, newKey).send(
    new ReceiveMessageCommand({ QueueUrl: `${second.url}/777777777777/kept`, WaitTimeSeconds: 1 }),
  );
  assert.equal(got.Messages?.[0]?.Body, 'still here');
  const tenants = await fetch(`${second.controlUrl}/admin/tenants/durable`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  assert.equal(((await tenants.json()) as { accountId: string }).accountId, '777777777777');
});
