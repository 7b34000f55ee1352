/**
 * docs/faults.md row 22: a Redis Cluster failover under load. A cluster of three masters and three
 * replicas (test/support/redis-cluster.ts); one shared-sqs with `--redis-cluster` and
 * `--redis-wait-replicas 1`; a steady load of sends (the SDK over JSON and the raw Query probe,
 * workload.ts), received and deleted after the failover. The master that owns the prefix's slot
 * (today's layout keeps every key on that one slot) is killed with SIGKILL and its replica takes
 * over; then the old master is started again, as a service manager would, and follows the new
 * one. Every send answered 200 was acknowledged by a replica (WAIT on the master's own
 * connection, src/persistence/redis.ts writeConnection), so lost = 0; the sends in between get
 * 503s, which the SDK retries, and the server serves again on the new master once it has a
 * replica to acknowledge.
 */
import assert from 'node:assert/strict';
import { layoutFor } from '../../src/persistence/layout.js';
import { shardOf } from '../../src/shard/hash.js';
import { keySlot } from '../../src/shard/slot.js';
import { uniquePrefix } from '../support/redis.js';
import { startRedisCluster } from '../support/redis-cluster.js';
import { testsRequiring } from '../support/requires.js';
import { sendingInstance, summary } from './workload.js';

const { test } = testsRequiring('redis-server');

test(
  "docs/faults.md row 22: Given a steady load with --redis-wait-replicas 1 on a Redis Cluster, When the master holding the queue's shard is killed (SIGKILL) and its replica takes over, Then lost = 0 and sends are served again",
  { timeout: 150_000 },
  async (t) => {
    const started = Date.now();
    const cluster = await startRedisCluster();
    t.after(() => cluster.stop());
    const clusterStartMs = Date.now() - started;

    const prefix = uniquePrefix();
    const { w } = await sendingInstance(
      t,
      ['--redis-cluster', cluster.startupNodes.map((n) => `${n.host}:${n.port}`).join(',')],
      { prefix, waitReplicas: 1, label: 'cluster' },
    );
    // The master of the queue's shard: where its messages are written.
    const [account = '', name = ''] = new URL(w.queueUrl).pathname.split('/').slice(-2);
    const slot = keySlot(layoutFor(prefix).shards[shardOf(account, 'us-east-1', name)]?.prefix ?? '');
    const owner = (await cluster.masters()).find((m) =>
      m.slots.some(([first, last]) => slot >= first && slot <= last),
    );
    assert.ok(owner !== undefined, `a master owns slot ${slot}`);

    const killedAt = Date.now();
    const promoted = await cluster.killMaster(owner.port);
    const promotedMs = Date.now() - killedAt;
    assert.equal(promoted, owner.replicas[0]);
    // The old master comes back from its AOF, as a replica of the new one: until then WAIT 1 has
    // no replica to count, and sends are answered 503.
    await cluster.restart(owner.port);
    const servedMs = (await w.firstOkAfter(killedAt, 40_000)) - killedAt;
    await w.acks(100);
    await w.stop();
    await w.drain();
    const report = w.report();
    const refused = w.probeFail.filter((f) => f.at >= killedAt).map((f) => f.status);
    t.diagnostic(
      `cluster started in ${clusterStartMs} ms; master ${owner.port} of slot ${slot} killed, replica ${promoted} ` +
        `promoted after ${promotedMs} ms, sends served again after ${servedMs} ms; probe answers refused ` +
        `meanwhile: ${refused.length} (${[...new Set(refused)].join(', ')}); ${summary(report)}`,
    );
    assert.ok(report.acked > 0);
    assert.deepEqual(report.unexpected, [], 'unexpected: received, never sent');
    assert.deepEqual(report.lost, [], 'lost: acknowledged sends never received');
    // The new master holds the queue: what was sent after the failover went there.
    assert.ok((await cluster.node(promoted).dbsize()) > 0);
  },
);
