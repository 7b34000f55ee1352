/**
 * docs/faults.md rows 3 and 4, and fencing proved from Redis itself: a MONITOR connection records every
 * command Redis executes, in order, with the client it came from, and the commands a script ran
 * (`lua`) right after the script's own line. So "the old leader wrote nothing after it lost the
 * lock" is checked in Redis' own log, not in the server's.
 */
import assert from 'node:assert/strict';
import { layoutFor } from '../../src/persistence/layout.js';
import { shardOf } from '../../src/shard/hash.js';
import { uniqueName } from '../support/server.js';
import { queryPost } from '../support/wire.js';
import {
  createQueue,
  monitor,
  pause,
  until,
  type Instance,
  type MonitorLine,
  clusterFor,
} from './harness.js';
import { summary, Workload, loadOn } from './workload.js';
import { testsRequiring } from '../support/requires.js';

const { test } = testsRequiring('nginx', 'redis-server');

const WRITES = new Set([
  'set',
  'del',
  'unlink',
  'hset',
  'hdel',
  'pexpire',
  'expire',
  'incr',
  'publish',
  'hmset',
]);

/**
 * From the line where `newToken` took the lock on: every script call carrying `oldToken` and
 * every lua command it ran. Returns the calls and the writes among their commands.
 */
function afterTakeover(
  lines: readonly MonitorLine[],
  lockKey: string,
  oldToken: string,
  newToken: string,
): { calls: number; writes: string[]; found: boolean } {
  const start = lines.findIndex(
    (l) =>
      l.source === 'lua' &&
      l.args[0]?.toLowerCase() === 'set' &&
      l.args[1] === lockKey &&
      l.args[2] === newToken,
  );
  if (start < 0) return { calls: 0, writes: [], found: false };
  let calls = 0;
  const writes: string[] = [];
  let inOld = false;
  for (const l of lines.slice(start + 1)) {
    if (l.source !== 'lua') {
      const cmd = l.args[0]?.toLowerCase();
      inOld = (cmd === 'evalsha' || cmd === 'eval') && l.args.includes(oldToken);
      if (inOld) calls++;
      continue;
    }
    if (inOld && WRITES.has(l.args[0]?.toLowerCase() ?? '')) writes.push(l.args.slice(0, 2).join(' '));
  }
  return { calls, writes, found: true };
}

async function tokenOf(i: Instance): Promise<string> {
  const v = await i.leader();
  assert.ok(v.epoch !== null, `${i.name} holds a term`);
  return `${v.epoch}:${v.instanceId}`;
}

test(
  'docs/faults.md row 3: Given a leader under load, When it is stopped (SIGSTOP) past the TTL and continued, Then the follower leads, the old leader writes nothing to Redis after losing the lock, answers no request 200 and reports /ready 503',
  { timeout: 90_000 },
  async (t) => {
    const { c, leader, follower } = await clusterFor(t);
    const queueUrl = await createQueue(c.nginx.url, uniqueName('sigstop'));
    const w = new Workload(c.nginx.url, queueUrl, 'r3', { cli: false });
    t.after(() => w.close());
    const mon = await monitor(c.redis.port);
    t.after(() => mon.stop());
    w.start();
    await w.acks(50);
    const oldToken = await tokenOf(leader);

    leader.signal('SIGSTOP');
    await until('the follower leads', () => follower.ready(), c.timing.ttlMs + c.timing.intervalMs + 15_000);
    const newToken = await tokenOf(follower);
    // Requests straight to the stopped leader: they wait in its socket and are read after SIGCONT.
    const direct = [0, 1, 2, 3].map((i) =>
      queryPost(leader.url, { Action: 'SendMessage', QueueUrl: queueUrl, MessageBody: `direct-${i}` }).catch(
        () => ({ status: 0, text: '' }),
      ),
    );
    await pause(200);
    leader.signal('SIGCONT');
    const answers = await Promise.all(direct);
    await until(
      'the old leader is a follower',
      async () => (await leader.leader()).state === 'follower',
      10_000,
    );
    assert.equal(await leader.ready(), false, 'the old leader reports /ready 503');
    await w.acks(50);
    await w.stop();
    await w.drain();
    mon.stop();

    const r = w.report();
    const proof = afterTakeover(mon.lines, layoutFor(c.prefix).meta.lock, oldToken, newToken);
    t.diagnostic(summary(r));
    t.diagnostic(
      `old term ${oldToken}, new term ${newToken}: ${proof.calls} script calls with the old token after the takeover, writes: ${proof.writes.length}`,
    );
    assert.ok(proof.found, 'MONITOR saw the new term take the lock');
    assert.deepEqual(proof.writes, [], 'the old leader wrote nothing after it lost the lock');
    assert.deepEqual(
      answers.filter((a) => a.status === 200),
      [],
      'no request was answered 200 by the old leader after SIGCONT',
    );
    assert.deepEqual(r.lost, []);
    assert.deepEqual(r.unexpected, []);
    assert.deepEqual(r.resurrected, []);
  },
);

test(
  'Fencing: Given a leader that still believes it leads, When another token holds the lock, Then its next write is refused by Redis (nothing written), answered 503, and it demotes at once',
  { timeout: 60_000 },
  async (t) => {
    // A long interval, so the test's write reaches the script before a renewal notices.
    const { c, leader } = await clusterFor(t, { timing: { ttlMs: 20_000, intervalMs: 5000 } });
    const queueUrl = await createQueue(leader.url, uniqueName('fenced'));
    const oldToken = await tokenOf(leader);
    const mon = await monitor(c.redis.port);
    t.after(() => mon.stop());

    // What a lost lock looks like (a Redis failover that dropped it, and another instance took it).
    // The queue's shard lease is what its writes fence on; the leader lock goes with it.
    const intruder = '999999:intruder';
    const [account, name] = new URL(queueUrl).pathname.split('/').slice(-2) as [string, string];
    const lease = layoutFor(c.prefix).shards[shardOf(account, 'us-east-1', name)]?.lease ?? '';
    await c.redis.client.set(layoutFor(c.prefix).meta.lock, intruder, 'PX', 60_000);
    await c.redis.client.set(lease, intruder, 'PX', 60_000);
    const res = await queryPost(leader.url, {
      Action: 'SendMessage',
      QueueUrl: queueUrl,
      MessageBody: 'fenced',
    });
    const view = await leader.leader();
    mon.stop();

    const fenced = mon.lines.filter(
      (l) => ['evalsha', 'eval'].includes(l.args[0]?.toLowerCase() ?? '') && l.args.includes(oldToken),
    );
    let writes = 0;
    // From the moment the queue's shard lease holds the intruder, on that shard (the term's other
    // leases are still its own, and renewing them writes, rightly).
    const from = mon.lines.findIndex(
      (l) => l.args[0]?.toLowerCase() === 'set' && l.args[1] === lease && l.args[2] === intruder,
    );
    let inOld = false;
    for (const l of mon.lines.slice(from + 1)) {
      if (l.source !== 'lua') inOld = l.args.includes(oldToken) && l.args.includes(lease);
      else if (inOld && WRITES.has(l.args[0]?.toLowerCase() ?? '')) writes++;
    }
    assert.equal(res.status, 503, res.text);
    assert.match(res.text, /ServiceUnavailable/);
    assert.ok(fenced.length >= 1, 'the write reached Redis with the old token');
    assert.equal(writes, 0, 'and Redis wrote nothing for it');
    assert.equal(view.state, 'follower');
    assert.equal(view.lastEnd?.reason, 'fenced');
    assert.equal(view.fencedWrites, 1);
    assert.equal(await leader.metric('sqs_leader_fenced_writes_total'), 1);
    assert.equal(await leader.ready(), false);
    assert.equal(await c.redis.client.get(lease), intruder, 'the other token is untouched');
  },
);

test(
  'docs/faults.md row 4: Given a leader under load, When it is stopped (SIGSTOP) for less than the renew deadline, Then no leader change and lost = 0',
  { timeout: 90_000 },
  async (t) => {
    // ttl 6 s, interval 1 s: renew deadline 5 s; the pause is 2 s (plus at most 1 s since the last renewal).
    const { c, leader, follower } = await clusterFor(t, { timing: { ttlMs: 6000, intervalMs: 1000 } });
    const before = await leader.leader();
    const { w } = await loadOn(t, c.nginx.url, uniqueName('shortstop'), 'r4', { cli: false });
    await w.acks(50);

    leader.signal('SIGSTOP');
    let followerReady = false;
    const watch = (async () => {
      const end = Date.now() + 2000;
      while (Date.now() < end) {
        if (await follower.ready()) followerReady = true;
        await pause(50);
      }
    })();
    await watch;
    leader.signal('SIGCONT');
    await w.acks(50);
    const after = await leader.leader();
    await w.stop();
    await w.drain();

    const r = w.report();
    t.diagnostic(summary(r));
    assert.equal(followerReady, false, 'the follower never became ready');
    assert.equal(after.leading, true);
    assert.equal(after.epoch, before.epoch, 'the same term');
    assert.deepEqual(r.lost, []);
    assert.deepEqual(r.unexpected, []);
    assert.deepEqual(r.resurrected, []);
  },
);
