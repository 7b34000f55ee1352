/**
 * /ready with --active-active (src/wiring/owners.ts, `ready`): 200 while the instance is a member
 * the others count as live, with a shard map to route by; 503 once it leaves (a drain, a stop) and
 * once Redis has not taken its heartbeat for a TTL, even though its store is still served. Two
 * servers embedded in this process (startServer) on a redis-server of their own, which the last
 * test stops.
 */
import assert from 'node:assert/strict';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { RunningServer } from '../../src/index.js';
import { until } from '../support/layout-v1.js';
import { ADMIN_TOKEN, startPair } from '../support/active-active.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { testsRequiring } from '../support/requires.js';

const { after, before, test } = testsRequiring('redis-server');
const TTL_MS = 2000;

let redis: TestRedis | undefined;
let servers: RunningServer[] = [];

before(async () => {
  redis = await startRedis({ aof: false });
  servers = await startPair(redis, { leaderTtl: TTL_MS }, { settle: false });
});

after(async () => {
  for (const s of servers) await s.close();
  await redis?.stop();
});

async function ready(s: RunningServer): Promise<number> {
  return (await fetch(`${s.controlUrl}/ready`)).status;
}

test('Given two instances, When both have joined, Then both are ready; When one is drained, Then it is not ready at once, the other stays ready, and the drained one still answers by routing', async () => {
  const [a, b] = servers as [RunningServer, RunningServer];
  await until(
    'both ready',
    () => Promise.all(servers.map(ready)),
    (st) => st.every((x) => x === 200),
    20_000,
  );
  const drained = await fetch(`${b.controlUrl}/admin/shards/drain`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  assert.equal(drained.status, 200);
  assert.equal(await ready(b), 503, 'a drained instance is no member: not ready');
  assert.equal(await ready(a), 200);
  const sqs = new SQSClient({
    endpoint: b.url,
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  try {
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'via-drained' }));
    assert.ok(QueueUrl);
  } finally {
    sqs.destroy();
  }
});

test('Given a ready instance, When Redis goes away, Then it stops being ready once its heartbeat could have expired, its store still loaded', async () => {
  const [a] = servers as [RunningServer];
  assert.equal(await ready(a), 200);
  await redis?.stop();
  redis = undefined;
  // Bounded, not timed: a TTL after the last heartbeat sent, with room for a loaded machine.
  await until(
    'a not ready',
    () => ready(a),
    (st) => st === 503,
    TTL_MS + 10_000,
  );
  assert.equal((await fetch(`${a.controlUrl}/health`)).status, 200, 'alive all the same');
});
