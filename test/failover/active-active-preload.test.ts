/**
 * Failover per shard with a backlog (docs/faults.md row 32): three --active-active processes hold
 * 1,000,000 messages of 256 B over one queue in each of the 256 shards; one process is killed
 * (SIGKILL), and each of its queues is served again, with every message it held, once a survivor
 * has taken its shard's lease (after the TTL) and read that one shard in. Only the dead owner's
 * part of the backlog is read, by the two survivors at once, so the bound is the issue's: lease
 * TTL + renew interval + 1.5 s from the kill to the first 200 of each of its queues.
 *
 * On the 2-core machine both the p50 and the max meet that bound, and both are asserted: in
 * thirteen runs (two of them in full test runs) p50 2.2 to 2.8 s and max 2.8 to 3.4 s at ttl 2 s
 * and interval 0.5 s. The map moves the shards 1.7 to 2 s after the kill (when the dead member's
 * key expires), and each survivor then reads its ~170,000 messages in 1.0 to 1.35 s while sharing
 * the two cores with the other and with Redis. The processes run with the launchers' Node flags
 * (owners-harness.ts): without them a major collection during the read put the max at up to
 * 4.3 s.
 *
 * The messages are sent as SendMessageBatch over JSON 1.0 (the AWS JSON protocol, plain HTTP
 * without the SDK, so that the preload's client leaves the two cores to the servers), each batch
 * to its queue's owner. The probe is GetQueueAttributes, also JSON 1.0, answered by the shard's
 * owner: its first 200 after the kill must count every message the queue had.
 */
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { SHARD_COUNT } from '../../src/shard/hash.js';
import { testsRequiring } from '../support/requires.js';
import { pause, type Instance } from './harness.js';
import { ownersFor, shardOfName } from './owners-harness.js';

const { test } = testsRequiring('nginx', 'redis-server');

const MESSAGES = 1_000_000;
const BODY = 'x'.repeat(256);
/** Batches in flight per process while preloading. */
const IN_FLIGHT = 16;
/** How often each of the dead owner's queues is asked (ms). */
const PROBE_MS = 50;
/** What the issue allows beyond ttl + interval. */
const BOUND_SLACK_MS = 1500;

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

interface Reply {
  readonly status: number;
  readonly out: Record<string, unknown>;
}

/** One JSON 1.0 call; the status and the parsed answer. */
function call(base: string, action: string, body: object): Promise<Reply> {
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      `${base}/`,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/x-amz-json-1.0',
          'x-amz-target': `AmazonSQS.${action}`,
          'content-length': Buffer.byteLength(text),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            out: raw === '' ? {} : (JSON.parse(raw) as Record<string, unknown>),
          });
        });
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

/** One queue name per shard: `pre-<k>` for the first k that falls on it. */
function onePerShard(): string[] {
  const names = new Array<string | undefined>(SHARD_COUNT);
  let left = SHARD_COUNT;
  for (let k = 0; left > 0; k++) {
    const name = `pre-${k}`;
    const s = shardOfName(name);
    if (names[s] === undefined) {
      names[s] = name;
      left--;
    }
  }
  return names as string[];
}

async function preload(
  queues: { name: string; url: string; owner: Instance; count: number }[],
): Promise<void> {
  const byOwner = new Map<Instance, typeof queues>();
  for (const q of queues) byOwner.set(q.owner, [...(byOwner.get(q.owner) ?? []), q]);
  await Promise.all(
    [...byOwner].map(async ([owner, mine]) => {
      const batches: { url: string; n: number }[] = [];
      for (const q of mine)
        for (let left = q.count; left > 0; left -= 10) batches.push({ url: q.url, n: Math.min(10, left) });
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < batches.length) {
          const b = batches[next++] as { url: string; n: number };
          const Entries = Array.from({ length: b.n }, (_, i) => ({ Id: String(i), MessageBody: BODY }));
          for (;;) {
            const r = await call(owner.url, 'SendMessageBatch', { QueueUrl: b.url, Entries });
            const failed = (r.out['Failed'] as unknown[] | undefined)?.length ?? 0;
            if (r.status === 200 && failed === 0) break;
            // Only a throttle is expected here (the budget is not near): anything else fails the test.
            assert.ok(r.status === 400 || r.status === 503, `preload: ${r.status} ${JSON.stringify(r.out)}`);
            await pause(50);
          }
        }
      };
      await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    }),
  );
}

test(
  'docs/faults.md row 32: Given three active/active processes holding 1,000,000 × 256 B over all 256 shards, When one is killed (SIGKILL), Then each of its queues is served again with all its messages, half of them and the last within lease TTL + renew interval + 1.5 s',
  { timeout: 600_000 },
  async (t) => {
    const c = await ownersFor(t);
    const { ttlMs, intervalMs } = c.timing;
    const map = await c.map();
    const names = onePerShard();
    const per = Math.floor(MESSAGES / SHARD_COUNT);
    const queues = [];
    for (const [shard, name] of names.entries()) {
      const owner = c.byId(map[shard]);
      assert.ok(owner !== undefined, `shard ${shard} has a running owner`);
      const r = await call(owner.url, 'CreateQueue', { QueueName: name });
      assert.equal(r.status, 200, JSON.stringify(r.out));
      // The remainder goes to the first queues, so that the total is exactly MESSAGES.
      queues.push({
        name,
        url: r.out['QueueUrl'] as string,
        owner,
        count: per + (shard < MESSAGES % SHARD_COUNT ? 1 : 0),
      });
    }
    const loadStart = Date.now();
    await preload(queues);
    const loadMs = Date.now() - loadStart;
    const coordinator = c.byId(await c.coordinator());
    // Not the coordinator: its death would add an election before any shard moves (row 27 covers it).
    const victim = c.nodes.find((x) => x !== coordinator);
    assert.ok(victim !== undefined);
    const survivors = c.nodes.filter((x) => x !== victim);
    const theirs = queues.filter((q) => q.owner === victim);
    t.diagnostic(
      `preloaded ${MESSAGES} × ${BODY.length} B over ${queues.length} queues in ${loadMs} ms; the victim ${victim.name} owns ${theirs.length} of them (${theirs.reduce((n, q) => n + q.count, 0)} messages)`,
    );

    await victim.kill9();
    const deadAt = Date.now();
    const firstOk = await Promise.all(
      theirs.map(async (q, i) => {
        const via = survivors[i % survivors.length] as Instance;
        for (;;) {
          const r = await call(via.url, 'GetQueueAttributes', {
            QueueUrl: q.url,
            AttributeNames: ['ApproximateNumberOfMessages'],
          }).catch((): Reply => ({ status: 0, out: {} }));
          if (r.status === 200) {
            const n = Number(
              (r.out['Attributes'] as Record<string, string> | undefined)?.['ApproximateNumberOfMessages'],
            );
            return { ms: Date.now() - deadAt, name: q.name, n, expected: q.count };
          }
          assert.ok(
            Date.now() - deadAt < 120_000,
            `${q.name} not served within 120 s of the kill (last ${r.status})`,
          );
          await pause(PROBE_MS);
        }
      }),
    );
    const ms = firstOk.map((f) => f.ms).sort((a, b) => a - b);
    const p50 = ms[Math.floor(ms.length / 2)] ?? 0;
    const max = ms[ms.length - 1] ?? 0;
    const bound = ttlMs + intervalMs + BOUND_SLACK_MS;
    t.diagnostic(
      `kill -9 → first 200 on each of its ${ms.length} queues: p50 ${p50} ms, max ${max} ms (bound ${bound} ms = ttl ${ttlMs} + interval ${intervalMs} + ${BOUND_SLACK_MS})`,
    );
    t.diagnostic(`after the kill, from the survivors' logs: ${timeline(survivors, deadAt).join('; ')}`);
    for (const f of firstOk)
      assert.equal(f.n, f.expected, `${f.name}: every message it held, at its first 200`);
    assert.ok(p50 <= bound, `half its queues served again only ${p50} ms after the kill (bound ${bound} ms)`);
    assert.ok(
      max <= bound,
      `the last of its queues served again only ${max} ms after the kill (bound ${bound} ms)`,
    );
    agent.destroy();
  },
);

/** What the survivors logged after `since`: the map written, shards taken, as ms after it. */
function timeline(survivors: readonly Instance[], since: number): string[] {
  const out: string[] = [];
  for (const x of survivors) {
    for (const line of x.logs().split('\n')) {
      if (!line.startsWith('{')) continue;
      const l = JSON.parse(line) as { time?: string; msg?: string; shards?: number; moved?: number };
      const at = l.time === undefined ? NaN : Date.parse(l.time) - since;
      if (!(at >= 0)) continue;
      if (l.msg === 'coordinator: shard map written')
        out.push(`${x.name} wrote the map (${l.moved} moved) at ${at}`);
      if (l.msg === 'shards taken: serving their queues')
        out.push(`${x.name} serves ${l.shards} more at ${at}`);
    }
  }
  return out;
}
