/**
 * --active-active with --auth on: a tenant's key added or removed through one instance's admin
 * API is honoured at the other at once (src/persistence/tenants-mirror.ts), not at its next load.
 * Two servers embedded in this process (startServer) on a real redis-server, as in
 * active-active.test.ts; requests signed by the SDK v3 (JSON).
 *
 * "At once": the other instance reads the tenants again on the writer's message; its fallback
 * read comes only every TENANTS_MIRROR_INTERVAL_MS (30 s), and each wait here gives up well before
 * that, so without the message these tests fail.
 */
import assert from 'node:assert/strict';
import { ListQueuesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { TENANTS_MIRROR_INTERVAL_MS } from '../../src/persistence/tenants-mirror.js';
import type { RunningServer } from '../../src/index.js';
import { until } from '../support/layout-v1.js';
import { ADMIN_TOKEN, startPair } from '../support/active-active.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { testsRequiring } from '../support/requires.js';

const { after, before, test } = testsRequiring('redis-server');
/** Bounded well below the fallback read, so that only the message can make it in time. */
const WAIT_MS = TENANTS_MIRROR_INTERVAL_MS / 3;

interface Key {
  accessKeyId: string;
  secretAccessKey: string;
}

let redis: TestRedis | undefined;
let servers: RunningServer[] = [];
const clients: SQSClient[] = [];

before(async () => {
  redis = await startRedis({ aof: false });
  servers = await startPair(redis, { auth: 'on' });
});

after(async () => {
  for (const c of clients) c.destroy();
  for (const s of servers) await s.close();
  await redis?.stop();
});

function admin(
  s: RunningServer,
  path: string,
  init: { method?: string; body?: unknown } = {},
): Promise<Response> {
  return fetch(`${s.controlUrl}${path}`, {
    method: init.method ?? 'GET',
    headers: {
      authorization: `Bearer ${ADMIN_TOKEN}`,
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
}

/** The status a signed ListQueues gets at `s` with `key`: 200, or the refusal's (403). */
async function signedStatus(s: RunningServer, key: Key): Promise<number> {
  const client = new SQSClient({ endpoint: s.url, region: 'us-east-1', credentials: key, maxAttempts: 1 });
  clients.push(client);
  try {
    await client.send(new ListQueuesCommand({}));
    return 200;
  } catch (e) {
    return (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode ?? 0;
  } finally {
    client.destroy();
  }
}

function waitForStatus(s: RunningServer, key: Key, status: number, what: string): Promise<number> {
  return until(
    what,
    () => signedStatus(s, key),
    (got) => got === status,
    WAIT_MS,
  );
}

test('Given a tenant created at one instance, When its key signs a request at the other, Then it is accepted there', async () => {
  const [a, b] = servers as [RunningServer, RunningServer];
  const created = await admin(a, '/admin/tenants', {
    method: 'POST',
    body: { name: 'team-new', accountId: '111122223333' },
  });
  assert.equal(created.status, 201);
  const { newKey } = (await created.json()) as { newKey: Key };
  await waitForStatus(b, newKey, 200, "b accepts the new tenant's key");
  assert.equal(await signedStatus(a, newKey), 200);
});

test('Given a key added at one instance, When it is removed there, Then the other accepts it, then refuses it, and the tenant keeps its first key', async () => {
  const [a, b] = servers as [RunningServer, RunningServer];
  const created = await admin(a, '/admin/tenants', {
    method: 'POST',
    body: { name: 'team-keys', accountId: '444455556666' },
  });
  assert.equal(created.status, 201);
  const first = ((await created.json()) as { newKey: Key }).newKey;
  await waitForStatus(b, first, 200, 'b accepts the first key');

  // The second key comes in through b this time: the change travels either way.
  const added = await admin(b, '/admin/tenants/team-keys/keys', { method: 'POST', body: {} });
  assert.equal(added.status, 201);
  const second = ((await added.json()) as { newKey: Key }).newKey;
  assert.equal(await signedStatus(b, second), 200);
  await waitForStatus(a, second, 200, 'a accepts the key added at b');

  const removed = await admin(a, `/admin/tenants/team-keys/keys/${second.accessKeyId}`, { method: 'DELETE' });
  assert.equal(removed.status, 200);
  assert.equal(await signedStatus(a, second), 403, 'refused where it was removed');
  await waitForStatus(b, second, 403, 'b refuses the removed key');
  assert.equal(await signedStatus(b, first), 200, 'the tenant keeps its other key at b');

  const deleted = await admin(a, '/admin/tenants/team-keys', { method: 'DELETE' });
  assert.equal(deleted.status, 200);
  await waitForStatus(b, first, 403, 'b refuses the key of a deleted tenant');
});
