/**
 * docs/faults.md row 18: kill -9 the leader at its memory budget, holding 1 MiB messages (and,
 * separately, 1,000,000 small ones): the follower loads everything and serves within ttl +
 * interval + its load time, with exact counts; a store too big for the process is one fatal line
 * and exit code 1, never a loop or a heap crash. Through nginx with the SDK (JSON protocol).
 */
import assert from 'node:assert/strict';
import { GetQueueAttributesCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { TestContext } from 'node:test';
import { fillQueueAt, type FillOptions } from '../support/fill.js';
import { startRedis, uniquePrefix } from '../support/redis.js';
import { testsRequiring } from '../support/requires.js';
import { uniqueName } from '../support/server.js';
import { createQueue, loadClient, startCluster, until, type Cluster, clusterFor } from './harness.js';

const { test } = testsRequiring('nginx', 'redis-server');

const MiB = 2 ** 20;
/** Bound of one load on the shared 2-core machine (docs/performance.md has the measured times). */
const LOAD_BOUND_MS = 120_000;

/**
 * A Redis (no AOF: it is shared-sqs that is killed here, and a fill may be a million writes)
 * holding one filled queue, and a cluster over it with no instance started; stopped after `t`.
 */
async function filledCluster(
  t: TestContext,
  fill: Omit<FillOptions, 'prefix'>,
  args: string[] = [],
): Promise<Cluster> {
  const redis = await startRedis({ aof: false });
  t.after(() => redis.stop());
  const prefix = uniquePrefix();
  await fillQueueAt(redis.url, { prefix, ...fill });
  const c = await startCluster({ redis, prefix, start: 'none', extraArgs: args });
  t.after(() => c.stop());
  return c;
}

async function depth(url: string, queueUrl: string): Promise<[number, number]> {
  const sqs = loadClient(url, 10);
  try {
    const a = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    return [
      Number(a.Attributes?.['ApproximateNumberOfMessages']),
      Number(a.Attributes?.['ApproximateNumberOfMessagesNotVisible']),
    ];
  } finally {
    sqs.destroy();
  }
}

test(
  'docs/faults.md row 18: Given the leader near a 64 MiB budget of 1 MiB messages, When it is killed -9, Then the follower loads them all and serves within ttl + interval + load time',
  { timeout: 180_000 },
  async (t) => {
    const { c, leader, follower } = await clusterFor(t, { extraArgs: ['--max-memory', '64mb'] });
    const queueUrl = await createQueue(c.nginx.url, uniqueName('big'));
    const sqs = loadClient(c.nginx.url, 1);
    t.after(() => sqs.destroy());
    for (let n = 0; n < 56; n++) {
      await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'x'.repeat(MiB - 64) }));
    }
    await leader.kill9();
    const deadAt = Date.now();
    const { ttlMs, intervalMs } = c.timing;
    await until('the follower serves', () => follower.ready(), ttlMs + intervalMs + LOAD_BOUND_MS);
    const gap = Date.now() - deadAt;
    t.diagnostic(`1 MiB x 56: serving ${gap} ms after the kill (load ${follower.lastLoadMs()} ms)`);
    assert.deepEqual(await depth(c.nginx.url, queueUrl), [56, 0]);
  },
);

test(
  'docs/faults.md row 18: Given 1,000,000 messages of 256 B, When the leader is killed -9, Then the follower loads them all with exact counts',
  { timeout: 400_000 },
  async (t) => {
    const c = await filledCluster(t, { messages: 1_000_000, bodySize: 256, inflight: 10 });
    await c.a.start();
    await until('a loads and leads', () => c.a.ready(), LOAD_BOUND_MS).catch((e: unknown) => {
      throw new Error(`${String(e)}\n${c.a.logs().slice(-3000)}`);
    });
    await c.b.start();
    await c.a.kill9();
    const deadAt = Date.now();
    await until('b serves', () => c.b.ready(), c.timing.ttlMs + c.timing.intervalMs + LOAD_BOUND_MS);
    t.diagnostic(
      `1,000,000 x 256 B: serving ${Date.now() - deadAt} ms after the kill (load ${c.b.lastLoadMs()} ms)`,
    );
    const queueUrl = `${c.nginx.url}/000000000000/loaded`;
    assert.deepEqual(await depth(c.nginx.url, queueUrl), [999_990, 10]);
  },
);

test(
  "docs/faults.md row 18: Given Redis holds more than a follower's budget in one shard, When it wins the lock, Then it refuses that shard by name and leads, its queue answering 503",
  { timeout: 120_000 },
  async (t) => {
    const c = await filledCluster(t, { messages: 24, bodySize: MiB }, ['--max-memory', '16mb']);
    await c.a.start();
    await until('a leads', () => c.a.ready(), 30_000);
    const refused = c.a
      .logs()
      .split('\n')
      .filter((l) => l.includes('does not fit this process'));
    assert.equal(refused.length, 1, c.a.logs());
    assert.match(
      refused[0] ?? '',
      /shard \d+ holds 24 messages in 1 queues \(24\.\d MiB of records\).*--max-memory\) of 16\.0 MiB/,
    );
    const sqs = loadClient(c.a.url, 1);
    try {
      const status = await sqs
        .send(new GetQueueAttributesCommand({ QueueUrl: `${c.a.url}/000000000000/loaded` }))
        .then(
          () => 200,
          (e: unknown) => (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode,
        );
      assert.equal(status, 503);
    } finally {
      sqs.destroy();
    }
    assert.equal(c.a.running, true);
    assert.doesNotMatch(c.a.logs(), /"level":"fatal"/);
  },
);
