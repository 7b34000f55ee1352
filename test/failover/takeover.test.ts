/**
 * docs/faults.md rows 1 and 2, and the admin step-down: a steady load through nginx (SDK, aws-cli and a
 * raw Query probe) while the leader dies or hands over, then a drain and the checker's counts.
 * Takeover times are measured from the probe's first 200 through nginx and reported with
 * t.diagnostic (docs/operations.md quotes them); the only bounds asserted are docs/faults.md's.
 */
import assert from 'node:assert/strict';
import { uniqueName } from '../support/server.js';
import { until, watchReleases, clusterFor } from './harness.js';
import { summary, Workload, type Report, loadOn } from './workload.js';
import { testsRequiring } from '../support/requires.js';

const { test } = testsRequiring('nginx', 'redis-server', 'aws');

/** Process scheduling, nginx and the probe's 20 ms period, on a shared 2-core machine. */
const SLACK_MS = 1000;

function assertClean(w: Workload, r: Report): void {
  assert.ok(r.acked > 0, 'the load got acknowledgements');
  assert.deepEqual(r.lost, [], 'lost: acknowledged sends never received');
  assert.deepEqual(r.unexpected, [], 'unexpected: received, never sent');
  assert.deepEqual(r.resurrected, [], 'resurrected: received after a 200 DeleteMessage');
  // What the clients saw while no instance could answer: nginx's AWS-shaped 503, never its HTML
  // 502 page (which the SDK reports as a SyntaxError).
  assert.deepEqual(
    w.probeFail.filter((f) => f.status === 502 || f.status === 504),
    [],
    'the probe got a 502/504 from nginx',
  );
  assert.deepEqual(
    Object.keys(r.sendErrors).filter((k) => k.startsWith('SyntaxError') || /\/50[24]$/.test(k)),
    [],
    `send errors ${JSON.stringify(r.sendErrors)}`,
  );
}

test(
  'docs/faults.md row 1: Given a steady load through nginx, When the leader is killed (SIGKILL), Then lost = unexpected = resurrected = 0 and sends succeed again within ttl + interval + load time',
  { timeout: 90_000 },
  async (t) => {
    const { c, leader, follower } = await clusterFor(t);
    const { w } = await loadOn(t, c.nginx.url, uniqueName('kill9'), 'r1');
    await w.acks(100);

    await leader.kill9();
    const deadAt = Date.now();
    const { ttlMs, intervalMs } = c.timing;
    const firstOk = await w.firstOkAfter(deadAt, ttlMs + intervalMs + 20_000);
    assert.equal(await follower.ready(), true, 'the follower leads');
    await w.acks(100);
    await w.stop();
    await w.drain();

    const r = w.report();
    const loadMs = follower.lastLoadMs() ?? 0;
    const gap = firstOk - deadAt;
    t.diagnostic(summary(r));
    t.diagnostic(
      `takeover kill -9: first 200 through nginx ${gap} ms after the leader died (ttl ${ttlMs}, interval ${intervalMs}, load ${loadMs} ms)`,
    );
    assertClean(w, r);
    assert.ok(gap <= ttlMs + intervalMs + loadMs + SLACK_MS, `takeover took ${gap} ms`);
  },
);

test(
  'docs/faults.md row 2: Given a steady load through nginx, When the leader gets SIGTERM, Then it drains, releases, exits 0, the follower serves within 1 s of the release, and lost = 0',
  { timeout: 90_000 },
  async (t) => {
    const { c, leader, follower } = await clusterFor(t);
    const releases = await watchReleases(c.redis, c.prefix);
    t.after(() => releases.close());
    const { w } = await loadOn(t, c.nginx.url, uniqueName('sigterm'), 'r2');
    await w.acks(100);

    const status = await leader.terminate();
    assert.deepEqual(status, { code: 0, signal: null }, 'a graceful exit');
    await until('the release was announced', () => releases.heard.length > 0, 5000);
    const releasedAt = (releases.heard[0] as { at: number }).at;
    const firstOk = await w.firstOkAfter(releasedAt, 10_000);
    await w.acks(100);
    await w.stop();
    await w.drain();

    const r = w.report();
    const gap = firstOk - releasedAt;
    t.diagnostic(summary(r));
    t.diagnostic(
      `takeover SIGTERM: first 200 through nginx ${gap} ms after the release (new leader loaded in ${follower.lastLoadMs()} ms)`,
    );
    const logs = leader.history.join('');
    assert.match(logs, /draining: new requests get 503/);
    assert.match(logs, /leader lock released/);
    assert.equal(await follower.ready(), true);
    assertClean(w, r);
    assert.ok(gap < 1000, `the follower served ${gap} ms after the release`);
  },
);

test(
  'Step down: Given a steady load through nginx, When the leader is asked to step down, Then the follower serves within 1 s of the release, the old leader stays a follower, and lost = 0',
  { timeout: 90_000 },
  async (t) => {
    const { c, leader, follower } = await clusterFor(t);
    const before = await leader.leader();
    const releases = await watchReleases(c.redis, c.prefix);
    t.after(() => releases.close());
    const { w } = await loadOn(t, c.nginx.url, uniqueName('stepdown'), 'sd');
    await w.acks(100);

    const res = await leader.stepDown();
    assert.equal(res.status, 200, JSON.stringify(res.body));
    await until('the release was announced', () => releases.heard.length > 0, 5000);
    const releasedAt = (releases.heard[0] as { at: number }).at;
    const firstOk = await w.firstOkAfter(releasedAt, 10_000);
    await w.acks(100);
    const after = await follower.leader();
    const old = await leader.leader();
    await w.stop();
    await w.drain();

    const r = w.report();
    const gap = firstOk - releasedAt;
    t.diagnostic(summary(r));
    t.diagnostic(`takeover step-down: first 200 through nginx ${gap} ms after the release`);
    assert.equal(after.leading, true);
    assert.equal(after.epoch, (before.epoch ?? 0) + 1, 'the next term has the next epoch');
    assert.equal(old.state, 'follower');
    assert.equal(old.lastEnd?.reason, 'step-down');
    assert.equal(leader.running, true, 'step down does not exit');
    assertClean(w, r);
    assert.ok(gap < 1000, `the follower served ${gap} ms after the release`);
  },
);
