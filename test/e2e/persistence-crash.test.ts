/**
 * shared-sqs as users run it (`node dist/main.js --redis-url ...`, built by `npm run build`)
 * against a redis-server this file starts (AOF always), through @aws-sdk/client-sqs (JSON
 * protocol):
 * - kill -9 of the server under a producer sending as fast as it can, restart, drain: every
 *   message that got a 200 is received (lost = 0), nothing unexpected; on one Redis, and on a
 *   Redis Cluster (`--redis-cluster`, test/support/redis-cluster.ts) with leader election;
 * - kill -9 near the memory budget with 1 MiB messages, and with 1,000,000 of 256 B: the next
 *   start loads everything (progress in /metrics while /ready is 503); a budget too small for
 *   what Redis holds is one fatal line and exit code 1;
 * - Redis gone: 503 within 2 s and never a 200; service comes back with Redis.
 */
import assert from 'node:assert/strict';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { fillQueueAt } from '../support/fill.js';
import { metricValue } from '../support/prometheus.js';
import { startRedis, uniquePrefix } from '../support/redis.js';
import { startRedisCluster } from '../support/redis-cluster.js';
import { serversOnRedis, waitReady, type RunningServer, type ServedOnRedis } from '../support/server.js';
import { testsRequiring } from '../support/requires.js';
import { drain } from '../support/sqs.js';

const { after, before, test } = testsRequiring('redis-server');

const fleet = serversOnRedis({ before, after });

function server(
  prefix: string,
  extra: string[] = [],
  where: readonly string[] = ['--redis-url', fleet.redis().url],
): Promise<ServedOnRedis> {
  return fleet.serve([...where, '--redis-prefix', prefix, ...extra]);
}

function statusOf(e: unknown): number | undefined {
  return (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
}

const ready = (s: RunningServer): Promise<void> => waitReady(s, 15_000);

/** kill -9 under 16 senders after a random number of acknowledgements, a restart, a drain: lost = 0. */
async function crashAndRestart(where: readonly string[], extra: string[] = []): Promise<void> {
  const prefix = uniquePrefix();
  const first = await server(prefix, extra, where);
  await ready(first.server);
  const { QueueUrl } = await first.sqs.send(new CreateQueueCommand({ QueueName: 'crash' }));
  assert.ok(QueueUrl !== undefined);

  // Kill after a random number of acknowledgements, while 16 senders keep requests in flight.
  const killAfter = 200 + Math.floor(Math.random() * 1500);
  const acked = new Set<number>();
  let next = 0;
  let failures = 0;
  let killed = false;
  const sender = async (): Promise<void> => {
    while (!killed) {
      const n = next++;
      try {
        await first.sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: `msg-${n}` }));
        acked.add(n);
        if (acked.size >= killAfter && !killed) {
          killed = true;
          first.server.proc.kill('SIGKILL');
        }
      } catch {
        failures++;
      }
    }
  };
  await Promise.all(Array.from({ length: 16 }, sender));
  await first.server.exited;

  const second = await server(prefix, extra, where);
  await ready(second.server);
  const url = (await second.sqs.send(new GetQueueUrlCommand({ QueueName: 'crash' }))).QueueUrl;
  assert.ok(url !== undefined);
  const bodies = await drain(second.sqs, url);

  const received = new Map<number, number>();
  const unexpected: string[] = [];
  for (const b of bodies) {
    const m = /^msg-(\d+)$/.exec(b);
    const n = Number(m?.[1]);
    if (m === null || n >= next) unexpected.push(b);
    else received.set(n, (received.get(n) ?? 0) + 1);
  }
  const lost = [...acked].filter((n) => !received.has(n));
  const duplicated = [...received.values()].filter((c) => c > 1).length;
  const recovered = [...received.keys()].filter((n) => !acked.has(n)).length;
  console.log(
    `# sent ${next}, acknowledged ${acked.size}, failed ${failures}, received ${received.size}: ` +
      `lost ${lost.length}, unexpected ${unexpected.length}, duplicated ${duplicated}, recovered ${recovered}`,
  );
  assert.deepEqual(lost, [], 'acknowledged but never received');
  assert.deepEqual(unexpected, [], 'received but never sent');
}

test('Given a producer sending as fast as it can, when the server is killed -9 at a random moment and restarted, then every acknowledged message is received', () =>
  crashAndRestart(['--redis-url', fleet.redis().url]));

test('Given a Redis Cluster and leader election, when the server is killed -9 under a producer and restarted, then it takes the lock again once it expires and every acknowledged message is received', async (t) => {
  const cluster = await startRedisCluster();
  t.after(() => cluster.stop());
  const nodes = cluster.startupNodes.map((n) => `${n.host}:${n.port}`).join(',');
  // The dead instance's lock lapses after the TTL: a short one keeps the restart quick.
  await crashAndRestart(
    ['--redis-cluster', nodes],
    ['--leader-election', '--leader-ttl', '2s', '--leader-interval', '500ms', '--warmup-requests', '0'],
  );
});

test('Given Redis stops, when a client sends, then it gets a 503 within 2 s and never a 200; when Redis returns, then service resumes with nothing lost', async () => {
  const prefix = uniquePrefix();
  const { server: s, sqs } = await server(prefix);
  await ready(s);
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'outage' }));
  await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'before' }));

  await fleet.redis().kill9();
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    const status = await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: `during-${i}` })).then(
      () => 200,
      (e: unknown) => statusOf(e),
    );
    const ms = performance.now() - t0;
    assert.equal(status, 503, `send ${i} during the outage`);
    assert.ok(ms < 2000, `503 after ${Math.round(ms)} ms`);
  }
  const notReady = await fetch(`${s.controlUrl}/ready`);
  assert.equal(notReady.status, 503);
  await notReady.arrayBuffer();

  await fleet.redis().restart();
  await ready(s);
  await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'after' }));
  const bodies = await drain(sqs, QueueUrl ?? '');
  assert.deepEqual(bodies.sort(), ['after', 'before']);
});

const MiB = 2 ** 20;

test('Given 1 MiB messages up to near a 64 MiB budget, when the server is killed -9 and started again, then it becomes ready with every acknowledged message; with a 16 MiB budget the shard of that queue is refused, saying why, and the server serves the rest', async () => {
  const prefix = uniquePrefix();
  const budget = ['--max-memory', '64mb'];
  const first = await server(prefix, budget);
  const { QueueUrl } = await first.sqs.send(new CreateQueueCommand({ QueueName: 'big' }));
  assert.ok(QueueUrl !== undefined);
  const acked: string[] = [];
  // 56 MiB of bodies and their overhead: under the budget, sent 4 at a time.
  for (let n = 0; n < 56; n += 4) {
    await Promise.all(
      [0, 1, 2, 3].map(async (i) => {
        const tag = `big-${n + i}-`;
        await first.sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: tag.padEnd(MiB - 64, 'x') }));
        acked.push(tag);
      }),
    );
  }
  first.server.proc.kill('SIGKILL');
  await first.server.exited;

  const second = await server(prefix, budget);
  const bodies = await drain(second.sqs, QueueUrl);
  assert.deepEqual(bodies.map((b) => /^big-\d+-/.exec(b)?.[0]).sort(), [...acked].sort());
  assert.ok(bodies.every((b) => b.length === MiB - 64));
  await second.server.stop();

  // Put them back through a server, then start one whose budget cannot hold them.
  const third = await server(prefix, budget);
  for (let n = 0; n < 24; n++) {
    await third.sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'y'.repeat(MiB - 64) }));
  }
  await third.server.stop();
  const small = await server(prefix, ['--max-memory', '16mb', '--log-level', 'info']);
  await ready(small.server);
  const refused = await small.sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'x' })).then(
    () => 200,
    (e: unknown) => statusOf(e),
  );
  assert.equal(refused, 503);
  const { QueueUrl: other } = await small.sqs.send(new CreateQueueCommand({ QueueName: 'other-shard-0' }));
  assert.ok(other !== undefined);
  const errors = small.server
    .stdout()
    .split('\n')
    .filter((l) => l.includes('does not fit this process'));
  assert.equal(errors.length, 1, small.server.stdout());
  assert.match(
    errors[0] ?? '',
    /shard \d+ holds 24 messages in 1 queues \(24\.\d MiB of records\).*--max-memory\) of 16\.0 MiB/,
  );
  assert.equal(small.server.alive(), true);
  assert.doesNotMatch(small.server.stdout(), /"level":"fatal"/);
});

test('Given 1,000,000 messages of 256 B in Redis, when the server starts, is killed -9 and starts again, then /metrics shows the load while /ready is 503 and every message is there', async (t) => {
  const prefix = uniquePrefix();
  // Redis without AOF: it is the server that is killed here, and a million fsynced writes take long.
  const fast = await startRedis({ aof: false });
  t.after(() => fast.stop());
  const t0 = performance.now();
  await fillQueueAt(fast.url, { prefix, messages: 1_000_000, bodySize: 256, inflight: 10 });
  console.log(`# filled in ${Math.round(performance.now() - t0)} ms`);
  const args = ['--redis-url', fast.url, '--redis-prefix', prefix, '--log-level', 'info'];
  const { server: first } = await fleet.serve(args, { ready: false });
  // The load takes seconds: it is seen in /metrics before /ready turns 200.
  let seenLoading: string | undefined;
  for (;;) {
    const ready = (await fetch(`${first.controlUrl}/ready`)).status === 200;
    if (ready) break;
    const text = await (await fetch(`${first.controlUrl}/metrics`)).text();
    // The last scrape while loading: the totals are known once the records were sampled.
    if (metricValue(text, 'sqs_loading', {}) === 1) seenLoading = text;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(seenLoading !== undefined, '/metrics never showed the load');
  assert.equal(metricValue(seenLoading, 'sqs_loading_messages', { part: 'all' }), 1_000_000);
  assert.equal(metricValue(seenLoading, 'sqs_loading_queues', { part: 'all' }), 1);
  const ready = await (await fetch(`${first.controlUrl}/metrics`)).text();
  assert.equal(metricValue(ready, 'sqs_loading', {}), 0);
  first.proc.kill('SIGKILL');
  await first.exited;

  const { server: second, sqs } = await fleet.serve(args, { ready: false });
  const t1 = performance.now();
  await waitReady(second, 120_000);
  console.log(`# second start: /health to /ready in ${Math.round(performance.now() - t1)} ms`);
  const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: 'loaded' }));
  const attrs = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  assert.equal(attrs.Attributes?.['ApproximateNumberOfMessages'], '999990');
  assert.equal(attrs.Attributes?.['ApproximateNumberOfMessagesNotVisible'], '10');
  assert.match(second.stdout(), /"msg":"state loaded from Redis"/);
});
