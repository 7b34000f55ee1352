/**
 * --redis-wait-replicas: every group commit is followed by WAIT on the writer's connection, and a
 * batch counts as stored only when enough replicas acknowledged it. Against real redis-servers:
 * a master alone (WAIT 1 cannot be satisfied: the timeout path, 503 and a reload) and a master
 * with one replica (the acknowledged message is on the replica when the reply goes out).
 * --redis-wait-aof is checked against the Redis at hand: before 7.2 it has no WAITAOF and the
 * server refuses to start, saying so.
 */
import assert from 'node:assert/strict';
import { SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { ManualClock } from '../../src/core/clock.js';
import { QueueStore } from '../../src/core/store.js';
import { layoutFor } from '../../src/persistence/layout.js';
import { checkReplicaWait, Persistence, UnsupportedError } from '../../src/persistence/persistence.js';
import { createRedis } from '../../src/persistence/redis.js';
import { ReplicaWaitError, type ReplicaWait } from '../../src/persistence/writer.js';
import { SqsError } from '../../src/sqs/errors.js';
import { isSqsError } from '../support/assertions.js';
import { metricValue } from '../support/prometheus.js';
import { startRedis, uniquePrefix, type TestRedis } from '../support/redis.js';
import { requires, testsRequiring } from '../support/requires.js';
import { awsCli, spawnMain, sqsClient, startServer, uniqueName } from '../support/server.js';
import { msg, sendOne } from '../support/queue.js';
import { monitor } from '../support/redis-monitor.js';

const { after, before, test } = testsRequiring('redis-server');

let master: TestRedis;
let alone: TestRedis;
let replica: TestRedis;

before(async () => {
  [master, alone] = await Promise.all([startRedis(), startRedis()]);
  replica = await startRedis({ replicaOf: master.port });
});
after(async () => {
  await replica.stop();
  await Promise.all([master.stop(), alone.stop()]);
});

/** A Persistence on `redis` with the replica wait, recording what it hands over and why it diverged. */
function persistence(
  redis: TestRedis,
  wait: Omit<ReplicaWait, 'observe'>,
): {
  p: Persistence;
  stores: QueueStore[];
  diverged: Error[];
  waits: boolean[];
  clock: ManualClock;
  layout: ReturnType<typeof layoutFor>;
} {
  const clock = new ManualClock();
  const layout = layoutFor(uniquePrefix());
  const stores: QueueStore[] = [];
  const diverged: Error[] = [];
  const waits: boolean[] = [];
  const p = new Persistence({
    redis: createRedis({ url: redis.url }),
    layout,
    createStore: () => new QueueStore(clock, { deletedRecentlyMs: 0 }),
    unavailable: (cause) => new SqsError('ServiceUnavailable', cause.message),
    onStore: (s) => stores.push(s),
    onDiverged: (cause) => diverged.push(cause),
    maxBackoffMs: 100,
    replicaWait: { ...wait, observe: (_s, ok) => waits.push(ok) },
  });
  return { p, stores, diverged, waits, clock, layout };
}

const ID = { accountId: '000000000000', region: 'us-east-1' };

test('Given a master with no replica and a wait for 1, when a message is stored, then the commit fails as unavailable, the store is reloaded, and the message (on the master, outcome unknown) is in the reloaded store', async () => {
  const { p, stores, diverged, waits, clock } = persistence(alone, { count: 1, timeoutMs: 20, aof: false });
  await p.start();
  try {
    const q = (stores[0] as QueueStore).create({ ...ID, name: 'alone' }, {}, {}).queue;
    const m = sendOne(q, msg('unreplicated', { id: 'm1' }), clock.now());
    await assert.rejects(p.commit(), isSqsError('ServiceUnavailable'));
    assert.ok(diverged[0] instanceof ReplicaWaitError, String(diverged[0]));
    assert.match(diverged[0].message, /^0 of 1 replicas acknowledged the write within 20 ms$/);
    assert.deepEqual(waits, [false]);
    // Not serving until reloaded; the reload reads what the master holds.
    const deadline = Date.now() + 10_000;
    while (stores.length < 2) {
      assert.ok(Date.now() < deadline, 'no reload within 10 s');
      await new Promise((r) => setTimeout(r, 10));
    }
    const ids = [...(stores[1] as QueueStore).require(ID.accountId, 'alone').allMessages()].map((x) => x.id);
    assert.deepEqual(ids, [m.id]);
  } finally {
    await p.close();
  }
});

test('Given a master with one replica and a wait for 1, when messages are stored, then each commit resolves only once the replica holds them', async () => {
  const { p, stores, diverged, waits, clock, layout } = persistence(master, {
    count: 1,
    timeoutMs: 250,
    aof: false,
  });
  await p.start();
  try {
    const q = (stores[0] as QueueStore).create({ ...ID, name: 'replicated' }, {}, {}).queue;
    for (let i = 0; i < 20; i++) {
      const m = sendOne(q, msg(`b${i}`, { id: `m${i}` }), clock.now());
      await p.commit();
      // Read on the replica right after the reply could go out: WAIT said it has it.
      assert.ok(
        (await replica.client.hexists(layout.shards[q.shard]?.messages(q.uid) ?? '', m.id)) === 1,
        `m${i} not on the replica`,
      );
    }
    assert.deepEqual(diverged, []);
    assert.ok(waits.length >= 20 && waits.every((ok) => ok));
  } finally {
    await p.close();
  }
});

test('Given a master that has not loaded the write script, when the first batch is stored, then the script is loaded before it and its WAIT is processed after the calls that applied it', async (t) => {
  await master.client.script('FLUSH');
  const mon = await monitor(master.port);
  t.after(() => mon.stop());
  const commands = (): string[] =>
    mon.lines
      .map((l) => (l.args[0] ?? '').toLowerCase())
      .filter((cmd) => ['script', 'multi', 'evalsha', 'eval', 'exec', 'wait'].includes(cmd));
  const { p, stores, layout } = persistence(master, { count: 1, timeoutMs: 250, aof: false });
  await p.start();
  try {
    const q = (stores[0] as QueueStore).create({ ...ID, name: 'noscript' }, {}, {}).queue;
    await p.commit();
    assert.equal(await replica.client.hexists(layout.shards[q.shard]?.queues ?? '', q.uid), 1);
    // MONITOR shows each command as Redis runs it, in order: a transaction's commands at its EXEC.
    const deadline = Date.now() + 5000;
    while (!commands().includes('wait')) {
      assert.ok(Date.now() < deadline, `no WAIT seen: ${commands().join(' ')}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    // (The loader's and the leases' scripts come first, with their own NOSCRIPT and EVAL.)
    const seen = commands();
    const writer = seen.slice(seen.lastIndexOf('script'));
    // The queue's shard and the catalog on meta: two calls, in one transaction, never an EVAL.
    assert.deepEqual(writer, ['script', 'multi', 'evalsha', 'evalsha', 'exec', 'wait'], seen.join(' '));
  } finally {
    await p.close();
  }
});

test('Given --redis-wait-aof, when the Redis at hand is checked, then WAITAOF is used if it has it and refused with its version named if not', async () => {
  const server = (await master.client.info('server')) ?? '';
  const version = /^redis_version:(\S+)/m.exec(server)?.[1] ?? '';
  const [major = 0, minor = 0] = version.split('.').map(Number);
  const hasWaitAof = major > 7 || (major === 7 && minor >= 2);
  const { p, stores, clock, layout } = persistence(master, { count: 1, timeoutMs: 250, aof: true });
  if (!hasWaitAof) {
    await assert.rejects(
      checkReplicaWait(master.client, { count: 1, timeoutMs: 250, aof: true }),
      UnsupportedError,
    );
    await assert.rejects(p.start(), (e: unknown) => {
      assert.ok(e instanceof UnsupportedError);
      assert.ok(e.message.includes(`this Redis is ${version} and has no WAITAOF`), e.message);
      return true;
    });
    await p.close();
    return;
  }
  await p.start();
  try {
    const q = (stores[0] as QueueStore).create({ ...ID, name: 'aof' }, {}, {}).queue;
    const m = sendOne(q, msg('fsynced', { id: 'm' }), clock.now());
    await p.commit();
    assert.equal(await replica.client.hexists(layout.shards[q.shard]?.messages(q.uid) ?? '', m.id), 1);
  } finally {
    await p.close();
  }
});

/** A server on the master without replicas, waiting for 1, and more flags. */
function waitFlags(...more: string[]): string[] {
  return [
    '--redis-addr',
    `127.0.0.1:${alone.port}`,
    '--redis-prefix',
    uniquePrefix(),
    '--redis-wait-replicas',
    '1',
    ...more,
  ];
}

test('Given --redis-wait-aof and a Redis without WAITAOF, when the server starts, then it exits 1 with one line that says so', async (t) => {
  const supported = Array.isArray(((await alone.client.call('COMMAND', 'INFO', 'WAITAOF')) as unknown[])[0]);
  if (supported) return t.skip('this Redis has WAITAOF');
  const child = spawnMain([
    '--port',
    '0',
    '--control-port',
    '0',
    '--host',
    '127.0.0.1',
    ...waitFlags('--redis-wait-aof'),
  ]);
  const status = await child.exited;
  assert.equal(status.code, 1, child.stderr());
  assert.match(
    child.stderr(),
    /^shared-sqs: --redis-wait-aof needs WAITAOF \(Redis 7\.2 or newer\); this Redis is \S+ and has no WAITAOF\. Upgrade Redis, or use --redis-wait-replicas without --redis-wait-aof\n$/,
  );
});

test(
  'Given no replica and a wait for 1, when clients of both protocols send, then each gets a retryable 503 ServiceUnavailable, the timed-out waits are counted, and the server serves again after reloading',
  requires('aws'),
  async (t) => {
    const server = await startServer({ args: waitFlags('--redis-wait-timeout', '20ms') });
    t.after(() => server.stop());
    const sdk = sqsClient(server.url);
    t.after(() => sdk.destroy());
    const name = uniqueName('wait');
    // CreateQueue is a write too: it cannot succeed either.
    const created = await awsCli(server.url, ['create-queue', '--queue-name', name]);
    assert.equal(created.errorCode, 'ServiceUnavailable', created.stderr);

    const queueUrl = `${server.url}/000000000000/${name}`;
    const ready = async (): Promise<void> => {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const res = await fetch(`${server.controlUrl}/ready`);
        await res.arrayBuffer();
        if (res.status === 200) return;
        assert.ok(Date.now() < deadline, 'not ready again within 10 s');
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    // JSON protocol (the SDK, no retries) after the reload: the queue exists (outcome unknown).
    await ready();
    for (const send of [
      () => sdk.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'one' })),
      () =>
        sdk.send(
          new SendMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: ['a', 'b'].map((id) => ({ Id: id, MessageBody: id })),
          }),
        ),
    ]) {
      await ready();
      await assert.rejects(send(), (e: unknown) => {
        const err = e as { name: string; $metadata?: { httpStatusCode?: number } };
        assert.equal(err.name, 'ServiceUnavailable');
        assert.equal(err.$metadata?.httpStatusCode, 503);
        return true;
      });
    }
    // Query protocol: Debian's aws-cli.
    await ready();
    const cli = await awsCli(server.url, ['send-message', '--queue-url', queueUrl, '--message-body', 'q']);
    assert.equal(cli.errorCode, 'ServiceUnavailable', cli.stderr);

    const metrics = await (await fetch(`${server.controlUrl}/metrics`)).text();
    assert.ok(metricValue(metrics, 'sqs_redis_replica_wait_timeouts_total', {}) >= 4, metrics);
    assert.ok(metricValue(metrics, 'sqs_redis_replica_wait_seconds_count', {}) >= 4);
    await ready();
  },
);
