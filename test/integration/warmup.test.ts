/**
 * The follower's warm-up (src/wiring/warmup.ts): it runs while the instance waits to lead, leaves no
 * trace outside the process (Redis, /metrics, the data plane, the temporary directory), stops as
 * soon as the instance takes over, and a serving instance does not run one.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateQueueCommand,
  ListQueuesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { samples } from '../support/prometheus.js';
import { keysUnder, startRedis, uniquePrefix, type TestRedis } from '../support/redis.js';
import { sqsClient, startServer, uniqueName, type RunningServer } from '../support/server.js';
import { testsRequiring } from '../support/requires.js';

const { after, before, test } = testsRequiring('redis-server');

let redis: TestRedis;
before(async () => {
  redis = await startRedis({ aof: false });
});
after(() => redis.stop());

interface WarmUpLine {
  msg: string;
  requests: number;
  ms: number;
  writerBatches: number;
}

function warmUpLines(s: RunningServer): WarmUpLine[] {
  return s
    .stdout()
    .split('\n')
    .filter((l) => l.includes('warm-up'))
    .map((l) => JSON.parse(l) as WarmUpLine);
}

async function until<T>(
  what: string,
  f: () => Promise<T | undefined> | T | undefined,
  ms = 60_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function ready(s: RunningServer): Promise<boolean> {
  const res = await fetch(`${s.controlUrl}/ready`);
  await res.arrayBuffer();
  return res.status === 200;
}

async function metrics(s: RunningServer): Promise<string> {
  return (await fetch(`${s.controlUrl}/metrics`)).text();
}

function haArgs(prefix: string, warmup: number): string[] {
  return [
    '--redis-addr',
    `127.0.0.1:${redis.port}`,
    '--redis-prefix',
    prefix,
    '--leader-election',
    '--no-queue-deleted-recently',
    '--log-level',
    'info',
    '--warmup-requests',
    String(warmup),
  ];
}

test(
  'Given a leader, When a follower starts, Then it warms up while it waits, and nothing of it reaches Redis, /metrics, the data plane or the temporary directory',
  { timeout: 120_000 },
  async (t) => {
    const prefix = uniquePrefix();
    const tmp = mkdtempSync(join(tmpdir(), 'ssq-warmup-test-'));
    t.after(() => rmSync(tmp, { recursive: true, force: true }));
    // What a warm-up killed with -9 leaves: the follower removes it, since its process is gone,
    // and leaves a live process's directory and everything else alone.
    const deadPid = spawnSync('true').pid;
    const stale = `shared-sqs-warmup-${deadPid}-AbC123`;
    const live = `shared-sqs-warmup-${process.pid}-XyZ789`;
    for (const d of [stale, live, 'something-else']) mkdirSync(join(tmp, d));
    const leader = await startServer({ args: haArgs(prefix, 0) });
    t.after(() => leader.stop());
    await until('the first instance to lead', async () => ((await ready(leader)) ? true : undefined));
    const sqs = sqsClient(leader.url);
    t.after(() => sqs.destroy());
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: uniqueName('warm') }));
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'kept' }));
    const keysBefore = await keysUnder(redis.client, prefix);

    const follower = await startServer({ args: haArgs(prefix, 2000), env: { TMPDIR: tmp } });
    t.after(() => follower.stop());
    const line = await until('the warm-up line', () => warmUpLines(follower)[1]);
    assert.equal(line.msg, 'warm-up done', follower.stdout());
    assert.ok(line.requests >= 2000, `requests ${line.requests}`);
    // Its store had a writer, which wrote to the warm-up's own stand-in for Redis, not to Redis.
    assert.ok(line.writerBatches > 0, `writer batches ${line.writerBatches}`);
    assert.equal(await ready(follower), false, 'the follower does not serve');

    assert.deepEqual(
      readdirSync(tmp).sort(),
      [live, 'something-else'].sort(),
      'the warm-up removed its own directory and the stale one',
    );
    assert.deepEqual(await keysUnder(redis.client, prefix), keysBefore, 'Redis holds what it held before');
    const counted = [...samples(await metrics(follower))].filter(
      (x) => x.name.startsWith('sqs_') && x.value > 0,
    );
    assert.deepEqual(
      counted.filter((x) => /^sqs_(requests|request_duration|messages)/.test(x.name)),
      [],
      'the follower counted no request and no message',
    );
    const queues = await sqs.send(new ListQueuesCommand({}));
    assert.deepEqual(queues.QueueUrls, [QueueUrl], 'the leader holds only its own queue');
  },
);

test(
  'Given a follower warming up, When the leader stops, Then the warm-up ends at once and the follower takes over and serves',
  { timeout: 120_000 },
  async (t) => {
    const prefix = uniquePrefix();
    const leader = await startServer({ args: haArgs(prefix, 0) });
    t.after(() => leader.stop());
    await until('the first instance to lead', async () => ((await ready(leader)) ? true : undefined));
    // A warm-up far longer than this test: only the takeover can end it.
    const follower = await startServer({ args: haArgs(prefix, 1_000_000) });
    t.after(() => follower.stop());
    await until('the warm-up to be under way', () => (warmUpLines(follower).length > 0 ? true : undefined));
    assert.deepEqual(
      warmUpLines(follower).map((l) => l.msg),
      ['warm-up started'],
      'still warming up',
    );

    await leader.stop();
    await until('the follower to lead', async () => ((await ready(follower)) ? true : undefined));
    const line = await until('the warm-up line', () => warmUpLines(follower)[1]);
    assert.equal(line.msg, 'warm-up done');
    assert.ok(line.requests < 1_000_000, `requests ${line.requests}`);

    const sqs = sqsClient(follower.url);
    t.after(() => sqs.destroy());
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: uniqueName('after') }));
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'after the takeover' }));
    const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 1 }));
    assert.equal(got.Messages?.[0]?.Body, 'after the takeover');
    const queues = await sqs.send(new ListQueuesCommand({}));
    assert.deepEqual(queues.QueueUrls, [QueueUrl], "no warm-up queue in the leader's store");
  },
);

test('Given no leader election, When the server starts, Then it serves at once and runs no warm-up', async (t) => {
  const s = await startServer({ args: ['--log-level', 'info', '--warmup-requests', '5000'] });
  t.after(() => s.stop());
  const sqs = sqsClient(s.url);
  t.after(() => sqs.destroy());
  await sqs.send(new ListQueuesCommand({}));
  await until('the start line', () => (/shared-sqs serving/.test(s.stdout()) ? true : undefined));
  assert.deepEqual(warmUpLines(s), []);
});
