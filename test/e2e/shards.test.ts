/**
 * One shard out of service while the others serve, through the server (dist/main.js, one Redis)
 * and @aws-sdk/client-sqs (JSON protocol, no retries, so each 503 shows):
 * - its writes refused by Redis (a key of its tag of the wrong type, so its script fails and so
 *   does reading it back): only its queues answer 503, the listings still name them, and once
 *   Redis is put right it serves again with everything it had acknowledged;
 * - its data too big for the process's memory budget at start: refused by name (log line and
 *   metric), its queues 503, the other shards served, the process up.
 * docs/faults.md rows 23 and 24.
 */
import assert from 'node:assert/strict';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListQueuesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { layoutFor } from '../../src/persistence/layout.js';
import { shardOf } from '../../src/shard/hash.js';
import { metricValue } from '../support/prometheus.js';
import { uniquePrefix } from '../support/redis.js';
import { testsRequiring } from '../support/requires.js';
import { serversOnRedis, type RunningServer, type ServedOnRedis } from '../support/server.js';

const { after, before, test } = testsRequiring('redis-server');

const ACCOUNT = '000000000000';
const REGION = 'us-east-1';

const fleet = serversOnRedis({ before, after });

function serve(args: string[]): Promise<ServedOnRedis> {
  return fleet.serve(['--redis-url', fleet.redis().url, ...args]);
}

/** Two queue names of two different shards, and those shards. */
function twoShards(stem: string): { names: [string, string]; shards: [number, number] } {
  const a = `${stem}-a`;
  for (let i = 0; ; i++) {
    const b = `${stem}-b${i}`;
    if (shardOf(ACCOUNT, REGION, b) !== shardOf(ACCOUNT, REGION, a)) {
      return { names: [a, b], shards: [shardOf(ACCOUNT, REGION, a), shardOf(ACCOUNT, REGION, b)] };
    }
  }
}

async function statusOf(call: Promise<unknown>): Promise<number> {
  try {
    await call;
    return 200;
  } catch (e) {
    return (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode ?? 0;
  }
}

async function metrics(server: RunningServer): Promise<string> {
  return (await fetch(`${server.controlUrl}/metrics`)).text();
}

/** Polls until `check` holds (the server's own recovery has no event a client can wait on). */
async function until(what: string, check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, `timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

void test('Given one shard whose writes Redis refuses, when clients use queues of it and of another shard, then only its queues answer 503, the listings still name them, and once Redis is put right it serves again with what it acknowledged', async () => {
  const prefix = uniquePrefix();
  const { server, sqs } = await serve(['--redis-prefix', prefix]);
  const { names, shards } = twoShards('broken');
  const [badUrl, goodUrl] = await Promise.all(
    names.map(
      async (QueueName) => (await sqs.send(new CreateQueueCommand({ QueueName }))).QueueUrl as string,
    ),
  );
  await sqs.send(new SendMessageCommand({ QueueUrl: badUrl, MessageBody: 'acknowledged before' }));

  // The shard's `seq` hash becomes a string: its write script fails (WRONGTYPE), and reading the
  // shard back fails the same way, so it stays out until the key is put right.
  const seq = layoutFor(prefix).shards[shards[0]]?.seq ?? '';
  const kept = await fleet.redis().client.hgetall(seq);
  await fleet.redis().client.del(seq);
  await fleet.redis().client.set(seq, 'not a hash');

  assert.equal(
    await statusOf(sqs.send(new SendMessageCommand({ QueueUrl: badUrl, MessageBody: 'refused' }))),
    503,
  );
  for (let i = 0; i < 5; i++) {
    assert.equal(
      await statusOf(sqs.send(new SendMessageCommand({ QueueUrl: badUrl, MessageBody: 'x' }))),
      503,
    );
    assert.equal(
      await statusOf(sqs.send(new SendMessageCommand({ QueueUrl: goodUrl, MessageBody: 'y' }))),
      200,
    );
  }
  const listed = await sqs.send(new ListQueuesCommand({ QueueNamePrefix: 'broken' }));
  assert.deepEqual(listed.QueueUrls?.sort(), [badUrl, goodUrl].sort());
  assert.equal((await sqs.send(new GetQueueUrlCommand({ QueueName: names[0] }))).QueueUrl, badUrl);
  const text = await metrics(server);
  assert.equal(metricValue(text, 'sqs_shard_down', { shard: String(shards[0]), reason: 'reloading' }), 1);
  assert.match(server.stderr() + server.stdout(), /a write of one shard failed/);

  await fleet.redis().client.del(seq);
  if (Object.keys(kept).length > 0) await fleet.redis().client.hset(seq, kept);
  await until('the shard serves again', async () => {
    return (await statusOf(sqs.send(new GetQueueAttributesCommand({ QueueUrl: badUrl })))) === 200;
  });
  const back = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: badUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 0 }),
  );
  assert.deepEqual(
    (back.Messages ?? []).map((m) => m.Body),
    ['acknowledged before'],
    'what was acknowledged is there, and nothing answered 503',
  );
  assert.equal(metricValue(await metrics(server), 'sqs_shards_down', { reason: 'reloading' }), 0);
});

void test('Given a shard whose data does not fit the memory budget, when the server starts, then that shard is refused by name and its queues answer 503, while the other shards serve and the process stays up', async () => {
  const prefix = uniquePrefix();
  const { names, shards } = twoShards('sized');
  const first = await serve(['--redis-prefix', prefix]);
  const [bigUrl, smallUrl] = await Promise.all(
    names.map(
      async (QueueName) => (await first.sqs.send(new CreateQueueCommand({ QueueName }))).QueueUrl as string,
    ),
  );
  const body = 'x'.repeat(200 * 1024);
  for (let b = 0; b < 8; b++) {
    const entries = Array.from({ length: 5 }, (_, i) => ({ Id: `m${i}`, MessageBody: body }));
    const r = await first.sqs.send(new SendMessageBatchCommand({ QueueUrl: bigUrl, Entries: entries }));
    assert.equal(r.Failed?.length ?? 0, 0);
  }
  await first.sqs.send(new SendMessageCommand({ QueueUrl: smallUrl, MessageBody: 'small' }));
  await first.server.stop();

  // About 8 MiB in the big queue's shard, a budget of 4 MiB.
  const { server, sqs } = await serve(['--redis-prefix', prefix, '--max-memory', '4mb']);
  assert.equal(await statusOf(sqs.send(new SendMessageCommand({ QueueUrl: bigUrl, MessageBody: 'x' }))), 503);
  const small = await sqs.send(new ReceiveMessageCommand({ QueueUrl: smallUrl, VisibilityTimeout: 0 }));
  assert.deepEqual(
    (small.Messages ?? []).map((m) => m.Body),
    ['small'],
  );
  assert.equal(
    await statusOf(sqs.send(new SendMessageCommand({ QueueUrl: smallUrl, MessageBody: 'y' }))),
    200,
  );
  const text = await metrics(server);
  assert.equal(metricValue(text, 'sqs_shard_down', { shard: String(shards[0]), reason: 'refused' }), 1);
  assert.equal(metricValue(text, 'sqs_shards_down', { reason: 'refused' }), 1);
  assert.match(
    server.stderr() + server.stdout(),
    new RegExp(`"shard":${shards[0]}[^\\n]*does not fit this process`),
  );
  assert.equal(server.alive(), true);
});
