/**
 * docs/faults.md row 21: a Sentinel failover under load. A master, one replica and three Sentinels
 * (quorum 2, down after 1 s); one shared-sqs through Sentinel; a steady load of sends (the SDK
 * over JSON and the raw Query probe, workload.ts), received and deleted after the failover; the master is killed with SIGKILL and the Sentinels
 * promote the replica. 300 ms before, the replica is cut off from the master, so there is a window
 * of writes only the master has (a partition; on one loopback host replication is otherwise
 * too quick to leave one). Then the old master is started again, as a service manager would, and the
 * Sentinels make it a replica of the new master: with --redis-wait-replicas 1 sends are answered
 * 503 until a replica acknowledges them again.
 *
 * With --redis-wait-replicas 1, lost = 0 is asserted: the sends of that window waited for the
 * replica and got 503s. The same run with 0 (replication is asynchronous) reports what it lost
 * with t.diagnostic: the sends of that window were answered 200 and are gone.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { startRedis, startSentinels, uniquePrefix } from '../support/redis.js';
import { freePort } from '../support/server.js';
import { pause, until } from './harness.js';
import { sendingInstance, summary, type Report } from './workload.js';
import { testsRequiring } from '../support/requires.js';

const { test } = testsRequiring('redis-server');

const MASTER = 'ssqfailover';
/** How long the replica is cut off from the master before the master dies. */
const LAG_MS = 300;

interface Run {
  readonly report: Report;
  /** SIGKILL to the Sentinels naming the replica as master. */
  readonly promotedMs: number;
  /** SIGKILL to the first send answered 200 (the probe, no retries). */
  readonly servedMs: number;
}

async function failover(t: TestContext, waitReplicas: number): Promise<Run> {
  const master = await startRedis();
  t.after(() => master.stop());
  const replica = await startRedis({ replicaOf: master.port });
  t.after(() => replica.stop());
  const sentinels = await startSentinels(MASTER, master.port, { count: 3, quorum: 2, replicas: 1 });
  t.after(() => sentinels.stop());

  const { w } = await sendingInstance(
    t,
    [
      '--redis-sentinels',
      sentinels.ports.map((p) => `127.0.0.1:${p}`).join(','),
      '--redis-master-name',
      MASTER,
    ],
    { prefix: uniquePrefix(), waitReplicas, label: `n${waitReplicas}` },
  );

  // The replica loses its link to the master (a partition between the two; pointed at a port
  // where nothing listens) shortly before the master dies: writes of that window are only there.
  await replica.client.call('REPLICAOF', '127.0.0.1', String(await freePort()));
  await pause(LAG_MS);
  const killedAt = Date.now();
  await master.kill9();
  await until(
    'the Sentinels promote the replica',
    async () => (await sentinels.masterPort()) === replica.port,
    30_000,
  );
  const promotedMs = Date.now() - killedAt;
  // The old master comes back from its AOF; the Sentinels turn it into a replica of the new one.
  await master.restart();
  const servedMs = (await w.firstOkAfter(killedAt + promotedMs, 40_000)) - killedAt;
  await w.acks(100);
  await w.stop();
  await w.drain();
  const report = w.report();
  t.diagnostic(
    `--redis-wait-replicas ${waitReplicas}: promoted after ${promotedMs} ms, sends served after ${servedMs} ms; ` +
      summary(report),
  );
  assert.ok(report.acked > 0);
  assert.deepEqual(report.unexpected, [], 'unexpected: received, never sent');
  return { report, promotedMs, servedMs };
}

test(
  'docs/faults.md row 21: Given a steady load with --redis-wait-replicas 1 against a master, one replica and three Sentinels, When the master is killed (SIGKILL) and Sentinel promotes the replica, Then lost = 0 and sends are served again',
  { timeout: 150_000 },
  async (t) => {
    const { report } = await failover(t, 1);
    assert.deepEqual(report.lost, [], 'lost: acknowledged sends never received');
  },
);

test(
  'docs/faults.md row 21 (N = 0): Given the same failover without --redis-wait-replicas, When the master is killed, Then the losses seen are reported',
  { timeout: 150_000 },
  async (t) => {
    const { report } = await failover(t, 0);
    t.diagnostic(`without WAIT: lost ${report.lost.length} acknowledged sends`);
  },
);
