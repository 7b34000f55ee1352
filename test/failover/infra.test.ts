/**
 * docs/faults.md rows 9 to 12: Redis restarted or unreachable, long polls through nginx during a
 * switch, and a follower restarted again and again while the leader serves.
 */
import assert from 'node:assert/strict';
import { GetQueueAttributesCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { namespaceOf } from '../../src/persistence/layout.js';
import { keysUnder } from '../support/redis.js';
import { uniqueName } from '../support/server.js';
import { jsonPost, queryPost } from '../support/wire.js';
import { createQueue, loadClient, pause, startCluster, until, clusterFor } from './harness.js';
import { summary, loadOn } from './workload.js';
import { testsRequiring } from '../support/requires.js';

const { test } = testsRequiring('nginx', 'redis-server');

/** docs/faults.md row 10's outage. */
const OUTAGE_MS = 30_000;
/** docs/faults.md row 12's restarts. */
const FOLLOWER_RESTARTS = 50;

async function messagesIn(url: string, queueUrl: string): Promise<number> {
  const client = loadClient(url, 3);
  try {
    const a =
      (
        await client.send(
          new GetQueueAttributesCommand({
            QueueUrl: queueUrl,
            AttributeNames: [
              'ApproximateNumberOfMessages',
              'ApproximateNumberOfMessagesNotVisible',
              'ApproximateNumberOfMessagesDelayed',
            ],
          }),
        )
      ).Attributes ?? {};
    return (
      Number(a.ApproximateNumberOfMessages) +
      Number(a.ApproximateNumberOfMessagesNotVisible) +
      Number(a.ApproximateNumberOfMessagesDelayed)
    );
  } finally {
    client.destroy();
  }
}

test(
  'docs/faults.md row 9: Given a load through nginx, When Redis is killed (SIGKILL) and restarted from its AOF, Then lost = 0, a leader serves again, and its memory matches Redis',
  { timeout: 120_000 },
  async (t) => {
    const c = await startCluster();
    t.after(() => c.stop());
    const { queueUrl, w } = await loadOn(t, c.nginx.url, uniqueName('redis9'), 'r9', { cli: false });
    await w.acks(50);

    await c.redis.kill9();
    await pause(500);
    await c.redis.restart();
    const back = Date.now();
    const firstOk = await w.firstOkAfter(back, 30_000);
    await w.acks(50);
    await w.stop();
    const leader = await c.leader();
    // Quiet now: what the leader holds in memory is what Redis holds.
    const inMemory = await messagesIn(leader.url, queueUrl);
    let inRedis = 0;
    for (const key of await keysUnder(c.redis.client, `${namespaceOf(c.prefix)}{ssq:s`)) {
      if (key.includes('}:m:')) inRedis += await c.redis.client.hlen(key);
    }
    await w.drain();

    const r = w.report();
    t.diagnostic(summary(r));
    t.diagnostic(
      `Redis restarted: sends succeed again ${firstOk - back} ms after it accepted connections; ${inMemory} messages in memory, ${inRedis} in Redis`,
    );
    assert.equal(inMemory, inRedis, 'memory matches Redis');
    assert.deepEqual(r.lost, []);
    assert.deepEqual(r.unexpected, []);
    assert.deepEqual(r.resurrected, []);
  },
);

test(
  'docs/faults.md row 10: Given a load through nginx, When Redis is unreachable (SIGSTOP) for 30 s, Then no write is answered 200, requests fail fast with 503, memory stays bounded, and service recovers after',
  { timeout: 150_000 },
  async (t) => {
    const c = await startCluster();
    t.after(async () => {
      c.redis.resume();
      await c.stop();
    });
    const leader = await c.leader();
    const { queueUrl, w } = await loadOn(t, c.nginx.url, uniqueName('redis10'), 'r10', {
      cli: false,
      probe: false,
    });
    await w.acks(50);
    const rssBefore = leader.rss();

    c.redis.pause();
    const stoppedAt = Date.now();
    const during: { status: number; ms: number }[] = [];
    while (Date.now() - stoppedAt < OUTAGE_MS) {
      const started = Date.now();
      const body = `outage-${during.length}`;
      w.attempted.add(body);
      const res = await queryPost(c.nginx.url, {
        Action: 'SendMessage',
        QueueUrl: queueUrl,
        MessageBody: body,
      }).catch(() => ({ status: 0 }));
      during.push({ status: res.status, ms: Date.now() - started });
      await pause(100);
    }
    const rssDuring = leader.rss();
    c.redis.resume();
    const resumedAt = Date.now();
    let recovered = 0;
    await until(
      'a send succeeds after Redis is back',
      async () => {
        const res = await queryPost(c.nginx.url, {
          Action: 'SendMessage',
          QueueUrl: queueUrl,
          MessageBody: 'after',
        });
        if (res.status === 200) recovered = Date.now();
        return res.status === 200;
      },
      30_000,
    );
    w.attempted.add('after');
    await w.acks(20);
    await w.stop();
    await w.drain();

    const r = w.report();
    const slowest = Math.max(...during.map((d) => d.ms));
    const statuses = [...new Set(during.map((d) => d.status))].sort();
    t.diagnostic(summary(r));
    t.diagnostic(
      `outage: ${during.length} sends, statuses ${statuses.join(',')}, slowest ${slowest} ms; RSS ${Math.round(rssBefore / 2 ** 20)} → ${Math.round(rssDuring / 2 ** 20)} MiB; recovered ${recovered - resumedAt} ms after Redis resumed`,
    );
    assert.deepEqual(
      during.filter((d) => d.status === 200),
      [],
      'no send answered 200 while Redis was unreachable',
    );
    assert.deepEqual(statuses, [503], 'every send failed with 503');
    assert.ok(slowest <= 2000, `each failed within 2 s (slowest ${slowest} ms)`);
    assert.ok(rssDuring - rssBefore < 64 * 2 ** 20, 'memory bounded');
    assert.deepEqual(r.lost, []);
    assert.deepEqual(r.unexpected, []);
    assert.deepEqual(r.resurrected, []);
  },
);

test(
  'docs/faults.md row 11: Given long polls through nginx, When nothing happens they are answered 200 at ~20 s (no 504); When the leader switches over, Then a waiting poll gets 200 or a retryable 503, never 502/504',
  { timeout: 120_000 },
  async (t) => {
    const c = await startCluster();
    t.after(() => c.stop());
    let leader = await c.leader();
    const queueUrl = await createQueue(c.nginx.url, uniqueName('poll11'));
    const poll = (): Promise<{ status: number; ms: number }> => {
      const started = Date.now();
      return jsonPost(c.nginx.url, 'AmazonSQS.ReceiveMessage', {
        QueueUrl: queueUrl,
        WaitTimeSeconds: 20,
      }).then((res) => ({ status: res.status, ms: Date.now() - started }));
    };

    const quiet = await poll();
    t.diagnostic(`quiet long poll: ${quiet.status} after ${quiet.ms} ms`);
    assert.equal(quiet.status, 200);
    assert.ok(quiet.ms >= 19_000, `answered at its 20 s (${quiet.ms} ms)`);

    // SIGTERM: the drain answers waiting polls while the lock is still held.
    const during = poll();
    await until(
      'the poll waits on the leader',
      async () => (await leader.metric('sqs_long_poll_waiters')) === 1,
      10_000,
    );
    await leader.terminate();
    const onTerm = await during;
    t.diagnostic(`long poll during SIGTERM: ${onTerm.status} after ${onTerm.ms} ms`);
    assert.ok([200, 503].includes(onTerm.status), `status ${onTerm.status}`);
    assert.ok(onTerm.ms < 19_000, 'answered by the switch, not by its timeout');

    // kill -9: nginx sees the connection die and passes the poll on.
    await leader.start();
    leader = await c.leader();
    const during2 = poll();
    await until(
      'the poll waits on the leader',
      async () => (await leader.metric('sqs_long_poll_waiters')) === 1,
      10_000,
    );
    await leader.kill9();
    const onKill = await during2;
    t.diagnostic(`long poll during kill -9: ${onKill.status} after ${onKill.ms} ms`);
    assert.ok([200, 503].includes(onKill.status), `status ${onKill.status}`);
    assert.doesNotMatch(c.nginx.errorLog(), /upstream timed out/);
  },
);

test(
  'docs/faults.md row 12: Given a leader under load, When the follower is restarted 50 times, Then the leader is never disturbed: same term, always ready, lost = 0',
  { timeout: 300_000 },
  async (t) => {
    const { c, leader, follower } = await clusterFor(t);
    const before = await leader.leader();
    const { queueUrl, w } = await loadOn(t, c.nginx.url, uniqueName('restart12'), 'r12', {
      cli: false,
      probe: false,
      sendEveryMs: 50,
    });
    let notReady = 0;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        if (!(await leader.ready())) notReady++;
        await pause(50);
      }
    })();

    for (let i = 0; i < FOLLOWER_RESTARTS; i++) {
      await follower.terminate();
      await follower.start();
    }
    watching = false;
    await watcher;
    await w.acks(20);
    const after = await leader.leader();
    await w.stop();
    await w.drain();
    const sqs = loadClient(c.nginx.url, 1);
    t.after(() => sqs.destroy());
    const left = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl }));

    const r = w.report();
    t.diagnostic(summary(r));
    assert.equal(notReady, 0, 'the leader answered /ready 200 throughout');
    assert.equal(after.epoch, before.epoch, 'the same term');
    assert.equal(after.takeovers, before.takeovers);
    assert.equal(after.lock.holder, `${before.epoch}:${before.instanceId}`);
    assert.deepEqual(left.Messages ?? [], []);
    assert.deepEqual(r.lost, []);
    assert.deepEqual(r.unexpected, []);
    assert.deepEqual(r.resurrected, []);
  },
);
