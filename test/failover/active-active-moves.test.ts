/**
 * Active/active at N = 3 (docs/architecture.md, "Many owners"), the two cases of docs/faults.md
 * rows 30 and 31 that the kill/stop/roll tests (active-active.test.ts) leave out:
 *
 * - Planned moves under load: one shard holding 10,000 messages, with sends, receives and deletes
 *   on its queues (so most requests are forwarded between processes), is moved between the
 *   members 20 times with POST /admin/shards/{shard}/move. Two of its load queues are reached
 *   through nginx and two straight at one instance each: nginx sends a request answered 503 on
 *   to the next upstream, which would hide a 503 from its client. Per move, the longest gap
 *   between 200s on any of its queues (SDK attempts and probes) that overlaps the move, and the
 *   issue's bound on it, p99 under 500 ms. A gap is the old owner's hand-over (drain, flush,
 *   release: 10 to 130 ms) and the new owner's read of the 10,000 messages; the requests that
 *   reach the new owner meanwhile wait there for the shard (Router's servesSoon,
 *   ShardOwner.taking) instead of being told "not the owner" and tried again after a back-off,
 *   and the new owner tries a busy lease again after 50 ms. The diagnostics give each move's
 *   parts. Also asserted: lost = unexpected = resurrected = 0 by the checker (workload.ts), and
 *   no error at all on the shard's queues (requests wait at the routers).
 * - Memory: three processes with a 32 MiB --max-memory, one queue in each of the 256 shards,
 *   each process filled over its own shards to 60 % of its budget (read from sqs_memory_used_bytes);
 *   one is killed -9 and the survivors absorb its shards; it is started again, all are filled to
 *   80 %, another is killed: what does not fit is refused by name, nobody exits, the rest serve.
 *   lost = 0 here is each queue's exact count: every message was a batch entry answered 200.
 *
 * Scale: 2 shared cores run 3 servers, nginx, Redis (AOF always) and the load generator. The
 * moved shard's load queues send and delete in batches of 10 (Workload's `batch`), so that the
 * one SDK client reaches the issue's 1k messages/s (sends + receives + deletes); one message at a
 * time it reached 200 to 570. CI runs the full 20 moves: they take 7 to 18 s, and the drain of
 * the 10,000 messages at the end 12 to 23 s, under the minute past which fewer moves would be
 * worth it.
 *
 * Timings are reported with t.diagnostic; the only one asserted is the bound the issue states.
 */
import assert from 'node:assert/strict';
import { GetQueueAttributesCommand, SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { uniqueName } from '../support/server.js';
import { testsRequiring } from '../support/requires.js';
import { createQueue, loadClient, until, type Instance } from './harness.js';
import {
  logStatuses,
  moveShard,
  newStatusLog,
  ownersFor,
  shardOfName,
  shardsOf,
  type StatusLog,
} from './owners-harness.js';
import { summary, Workload } from './workload.js';
import { SHARD_COUNT } from '../../src/shard/hash.js';

const { test } = testsRequiring('nginx', 'redis-server');

const MOVES = 20;
/** The issue's bound on a move: the longest gap between 200s on the moved shard's queues, p99. */
const GAP_BOUND_MS = 500;
const BACKLOG = 10_000;
/** Queues of the shard under sends, receives and deletes, beside the backlog's. */
const LOAD_QUEUES = 4;

/** Nearest rank: the smallest value with at least p % of the values at or below it. */
function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

/** Names `<base>-<k>` whose shard is `shard`, `count` of them. */
function namesInShard(base: string, shard: number, count: number): string[] {
  const out: string[] = [];
  for (let k = 0; out.length < count; k++) {
    if (k > 100_000) throw new Error(`no name of ${base} falls in shard ${shard}`);
    if (shardOfName(`${base}-${k}`) === shard) out.push(`${base}-${k}`);
  }
  return out;
}

/** Sends `bodies` to `queueUrl` in batches of 10, `parallel` batches at a time; each must succeed. */
async function sendAll(
  sdk: SQSClient,
  queueUrl: string,
  bodies: readonly string[],
  parallel = 8,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < bodies.length) {
      const slice = bodies.slice(next, next + 10);
      next += 10;
      const out = await sdk.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: slice.map((b, i) => ({ Id: String(i), MessageBody: b })),
        }),
      );
      if ((out.Failed ?? []).length > 0) throw new Error(`a batch failed: ${JSON.stringify(out.Failed)}`);
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
}

interface Loaded {
  readonly name: string;
  readonly w: Workload;
  readonly statuses: StatusLog;
}

/** The longest gap between consecutive 200s on a queue that overlaps [from, to]. */
function longestGap(oks: readonly number[], from: number, to: number): number {
  let gap = 0;
  for (let i = 1; i < oks.length; i++) {
    const a = oks[i - 1] as number;
    const b = oks[i] as number;
    if (b >= from && a <= to) gap = Math.max(gap, b - a);
  }
  return gap;
}

/** When each process of `nodes` logged `msg` (pino's `time`), oldest first. */
function logTimes(nodes: readonly Instance[], msg: string): { name: string; at: number }[] {
  const out: { name: string; at: number }[] = [];
  for (const node of nodes) {
    for (const line of node.history.join('\n').split('\n')) {
      if (!line.includes(msg)) continue;
      try {
        out.push({ name: node.name, at: Date.parse((JSON.parse(line) as { time: string }).time) });
      } catch {
        // not a log line
      }
    }
  }
  return out.sort((a, b) => a.at - b.at);
}

test(
  "docs/faults.md row 30: Given three active/active processes and one shard holding 10,000 messages under sends, receives and deletes through nginx, When the shard is moved between them (POST /admin/shards/{shard}/move) again and again, Then lost = unexpected = resurrected = 0, no error reaches a client, and the longest gap between 200s on its queues per move is held to the issue's bound, p99 under 500 ms",
  { timeout: 600_000 },
  async (t) => {
    const c = await ownersFor(t);
    const base = uniqueName('mv');
    const shard = shardOfName(`${base}-0`);
    const [backlogName, ...loadNames] = namesInShard(base, shard, 1 + LOAD_QUEUES) as [string, ...string[]];
    const map = await c.map();
    const first = c.byId(map[shard]);
    assert.ok(first !== undefined, `shard ${shard} has a running owner`);

    // The backlog: 10,000 messages nobody receives until the end, so that every move reads them.
    const backlogUrl = await createQueue(c.nginx.url, backlogName);
    const filler = loadClient(first.url);
    t.after(() => filler.destroy());
    const prefill = Array.from({ length: BACKLOG }, (_, i) => `${base}-backlog-${i}-${'b'.repeat(160)}`);
    await sendAll(filler, backlogUrl, prefill);

    const loads: Loaded[] = [];
    const backlog = new Workload(c.nginx.url, backlogUrl, `${base}-bl`, {
      cli: false,
      consume: false,
      sendEveryMs: 5,
      probeEveryMs: 20,
    });
    for (const body of prefill) {
      backlog.attempted.add(body);
      backlog.acked.set(body, 'sdk');
    }
    loads.push({ name: backlogName, w: backlog, statuses: newStatusLog() });
    for (const [i, name] of loadNames.entries()) {
      // Half of them straight to one instance: nginx sends a request answered 503 to the next
      // upstream, which would hide a 503 from the client.
      const endpoint = i % 2 === 0 ? c.nginx.url : (c.nodes[i % c.nodes.length] as Instance).url;
      const queueUrl = await createQueue(endpoint, name);
      const w = new Workload(endpoint, queueUrl, `${base}-${name}`, {
        cli: false,
        sendEveryMs: 0,
        probeEveryMs: 20,
        batch: 10,
      });
      loads.push({ name, w, statuses: newStatusLog() });
    }
    for (const l of loads) {
      logStatuses(l.w.sdk, l.statuses);
      t.after(() => l.w.close());
      l.w.start();
    }
    await Promise.all(loads.map((l) => l.w.acks(50)));

    const volume = (): number =>
      loads.reduce((n, l) => n + l.w.acked.size + l.w.receivedById.size + l.w.deletedAt.size, 0);
    const okTimes = (l: Loaded): number[] => [...l.statuses.ok, ...l.w.probeOk].sort((a, b) => a - b);

    const startedAt = Date.now();
    const volumeAtStart = volume();
    const windows: { from: string; to: string; at: number; done: number }[] = [];
    for (let m = 0; m < MOVES; m++) {
      const now = await c.map();
      const from = now[shard];
      const target = c.nodes[(c.nodes.findIndex((x) => c.idOf(x) === from) + 1) % c.nodes.length] as Instance;
      const to = c.idOf(target);
      const at = Date.now();
      assert.equal(await moveShard(c.nodes[m % c.nodes.length] as Instance, shard, to), 202);
      await until(
        `move ${m + 1}: shard ${shard} served by ${target.name}`,
        async () => {
          const [owners, leases] = await Promise.all([c.map(), c.leases()]);
          if (owners[shard] !== to || leases[shard] !== to) return false;
          return (await shardsOf(target)).shards[shard]?.here?.state === 'serving';
        },
        30_000,
      );
      const done = Date.now();
      windows.push({ from: c.byId(from)?.name ?? String(from), to: target.name, at, done });
      // Served again at the new owner, seen by a client, and steady for a moment before the next.
      await Promise.all(loads.map((l) => l.w.acks(10)));
    }
    const rate = Math.round(((volume() - volumeAtStart) * 1000) / (Date.now() - startedAt));
    const movesMs = Date.now() - startedAt;

    const drainAt = Date.now();
    await Promise.all(loads.map((l) => l.w.stop()));
    await Promise.all(loads.map((l) => l.w.drain(180_000)));
    const drainMs = Date.now() - drainAt;

    const gaps = windows.map((win) =>
      Math.max(...loads.map((l) => longestGap(okTimes(l), win.at, win.done))),
    );
    const sorted = [...gaps].sort((a, b) => a - b);
    const p50 = percentile(sorted, 50);
    const p99 = percentile(sorted, 99);
    for (const l of loads)
      t.diagnostic(
        `${l.name}: ${summary(l.w.report())}, non-2xx ${l.statuses.bad.length + l.w.probeFail.length}`,
      );
    const given = logTimes(c.nodes, 'shards given away');
    const taken = logTimes(c.nodes, 'shards taken: serving their queues');
    windows.forEach((win, i) => {
      const g = given.find((x) => x.name === win.from && x.at >= win.at);
      const k = taken.find((x) => x.name === win.to && x.at >= win.at);
      t.diagnostic(
        `move ${i + 1} ${win.from} -> ${win.to}: given away by ${win.from} at +${g === undefined ? '?' : g.at - win.at} ms, serving at ${win.to} at +${k === undefined ? '?' : k.at - win.at} ms, seen serving at +${win.done - win.at} ms; longest gap between 200s on its queues ${gaps[i]} ms`,
      );
    });
    t.diagnostic(
      `shard ${shard}, ${MOVES} moves in ${movesMs} ms under ${rate} messages/s (sends + receives + deletes) on its ${loads.length} queues: longest gap per move p50 ${p50} ms, p99 ${p99} ms, max ${sorted.at(-1)} ms; drain of ${BACKLOG}+ messages ${drainMs} ms`,
    );

    for (const l of loads) {
      const r = l.w.report();
      assert.deepEqual(r.lost, [], `${l.name}: lost (acknowledged, never received)`);
      assert.deepEqual(r.unexpected, [], `${l.name}: unexpected`);
      assert.deepEqual(r.resurrected, [], `${l.name}: resurrected`);
      // A planned move holds requests at the routers while the shard changes hands; none fails.
      assert.deepEqual(
        [...l.statuses.bad, ...l.w.probeFail],
        [],
        `${l.name}: no error reached a client (SDK attempts and probes)`,
      );
    }
    assert.ok(
      p99 < GAP_BOUND_MS,
      `p99 of the longest gap between 200s per move ${p99} ms (p50 ${p50} ms, max ${sorted.at(-1)} ms), the issue's bound ${GAP_BOUND_MS} ms`,
    );
  },
);

const MiB = 2 ** 20;
const BUDGET = 32 * MiB;
const BODY = 8 * 1024;
/** What one message of BODY bytes counts against the budget, about (src/core/budget.ts). */
const COST = BODY + 704 + 200;

/** The shards whose queues answer 503 at `node` because they do not fit (sqs_shard_down). */
async function refusedAt(node: Instance): Promise<Set<number>> {
  const res = await fetch(`${node.controlUrl}/metrics`, { signal: AbortSignal.timeout(5000) });
  const out = new Set<number>();
  for (const m of (await res.text()).matchAll(/^sqs_shard_down\{shard="(\d+)",reason="refused"\} 1$/gm))
    out.add(Number(m[1]));
  return out;
}

/** Lines of `node`'s current process that say a shard was refused, by shard. */
function refusalLines(node: Instance): Map<number, number> {
  const out = new Map<number, number>();
  for (const line of node.logs().split('\n')) {
    if (!line.includes('does not fit this process')) continue;
    const shard = (JSON.parse(line) as { shard?: number }).shard;
    if (shard !== undefined) out.set(shard, (out.get(shard) ?? 0) + 1);
  }
  return out;
}

interface Filled {
  readonly url: string;
  readonly shard: number;
  sent: number;
}

/** A queue's depth, or the HTTP status that refused it (one attempt, no SDK retries). */
async function depthOrStatus(sdk: SQSClient, queueUrl: string): Promise<{ status: number; depth?: number }> {
  try {
    const a = await sdk.send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
    );
    return { status: 200, depth: Number(a.Attributes?.['ApproximateNumberOfMessages']) };
  } catch (e) {
    return { status: (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode ?? 0 };
  }
}

test(
  'docs/faults.md row 31: Given three active/active processes with a 32 MiB memory budget filled over all 256 shards, When one is killed -9 at about 60 % of the budgets, Then the survivors absorb its shards (every queue 200, counts exact); When it is back and they are filled to about 80 % and one is killed, Then the shards that do not fit are refused by name (503, log line, sqs_shard_down), no process exits and every other queue is served with exact counts',
  { timeout: 600_000 },
  async (t) => {
    const c = await ownersFor(t, { extraArgs: ['--max-memory', `${BUDGET / MiB}mb`] });
    const base = uniqueName('mem');
    // One queue per shard, so that every shard holds some of the fill.
    const queues: Filled[] = [];
    for (let s = 0; s < SHARD_COUNT; s++) {
      const [name] = namesInShard(base, s, 1) as [string];
      queues.push({ url: await createQueue(c.nginx.url, name), shard: s, sent: 0 });
    }
    const clients = new Map<Instance, SQSClient>();
    const clientOf = (node: Instance): SQSClient => {
      let sdk = clients.get(node);
      if (sdk === undefined) {
        sdk = loadClient(node.url);
        clients.set(node, sdk);
      }
      return sdk;
    };
    const probe = loadClient(c.nginx.url, 1);
    t.after(() => {
      probe.destroy();
      for (const sdk of clients.values()) sdk.destroy();
    });
    const body = 'm'.repeat(BODY);
    const used = async (node: Instance): Promise<number> =>
      (await node.metric('sqs_memory_used_bytes')) ?? NaN;

    /** Sends to each running node's own queues until it holds `frac` of its budget. */
    const fillTo = async (frac: number): Promise<void> => {
      const map = await c.map();
      await Promise.all(
        c.nodes
          .filter((x) => x.running)
          .map(async (node) => {
            const mine = queues.filter((q) => map[q.shard] === c.idOf(node));
            let next = 0;
            for (;;) {
              const left = frac * BUDGET - (await used(node));
              if (left <= 0) return;
              let count = Math.ceil(left / COST);
              const batches: [Filled, number][] = [];
              while (count > 0) {
                batches.push([mine[next++ % mine.length] as Filled, Math.min(10, count)]);
                count -= 10;
              }
              await Promise.all(
                [0, 1, 2, 3].map(async (k) => {
                  for (let i = k; i < batches.length; i += 4) {
                    const [q, n] = batches[i] as [Filled, number];
                    const out = await clientOf(node).send(
                      new SendMessageBatchCommand({
                        QueueUrl: q.url,
                        Entries: Array.from({ length: n }, (_, j) => ({ Id: String(j), MessageBody: body })),
                      }),
                    );
                    if ((out.Failed ?? []).length > 0)
                      throw new Error(`refused: ${JSON.stringify(out.Failed)}`);
                    q.sent += n;
                  }
                }),
              );
            }
          }),
      );
    };
    const levels = async (): Promise<string> =>
      (
        await Promise.all(
          c.nodes
            .filter((x) => x.running)
            .map(async (x) => `${x.name} ${((100 * (await used(x))) / BUDGET).toFixed(1)} %`),
        )
      ).join(', ');
    /** Every queue's answer through nginx, at once. */
    const answers = (): Promise<{ status: number; depth?: number }[]> =>
      Promise.all(queues.map((q) => depthOrStatus(probe, q.url)));
    const allServed = async (): Promise<boolean> =>
      (await answers()).every((a, i) => a.status === 200 && a.depth === queues[i]?.sent);

    // ---- about 60 %: the survivors absorb the dead one's shards --------------------------------
    await fillTo(0.6);
    const at60 = await levels();
    const victim = c.nodes[2] as Instance;
    const survivors = c.nodes.filter((x) => x !== victim);
    await victim.kill9();
    const killedAt = Date.now();
    await until('every queue answers 200 with its count', allServed, 60_000).catch(async (e: unknown) => {
      const a = await answers();
      const off = a.flatMap((x, i) =>
        x.status === 200 && x.depth === queues[i]?.sent
          ? []
          : [`shard ${i}: ${JSON.stringify(x)}, sent ${queues[i]?.sent}`],
      );
      throw new Error(`${(e as Error).message}: ${off.slice(0, 10).join('; ')}`);
    });
    const absorbedMs = Date.now() - killedAt;
    const after60 = await levels();
    for (const s of survivors) {
      assert.equal(s.running, true, `${s.name} runs`);
      assert.deepEqual([...(await refusedAt(s))], [], `${s.name} refused nothing at 60 %`);
    }
    t.diagnostic(
      `at about 60 %: ${at60}; ${victim.name} killed -9, every queue of the 256 shards answered 200 with its count again after ${absorbedMs} ms; then ${after60}`,
    );

    // ---- about 80 %: what does not fit is refused by name ----------------------------------------
    await victim.start();
    await c.settled(60_000);
    await until('every queue answers 200 with its count', allServed, 60_000);
    await fillTo(0.8);
    const at80 = await levels();
    const second = c.nodes[0] as Instance;
    const rest = c.nodes.filter((x) => x !== second);
    await second.kill9();
    const secondAt = Date.now();
    // Settled: each shard the map gives a survivor is either served there or refused there.
    let refused = new Map<Instance, Set<number>>();
    await until(
      'each survivor serves or refuses each of its shards',
      async () => {
        const map = await c.map();
        refused = new Map(await Promise.all(rest.map(async (x) => [x, await refusedAt(x)] as const)));
        const views = new Map(await Promise.all(rest.map(async (x) => [x, await shardsOf(x)] as const)));
        for (let s = 0; s < SHARD_COUNT; s++) {
          const x = c.byId(map[s]);
          if (x === undefined || x === second) return false;
          if (views.get(x)?.shards[s]?.here?.state !== 'serving' && !(refused.get(x)?.has(s) ?? false))
            return false;
        }
        return true;
      },
      60_000,
    );
    const settledMs = Date.now() - secondAt;
    const counter = async (x: Instance, outcome: string): Promise<number> => {
      const n = await x.metric(`sqs_forwarded_requests_total{outcome="${outcome}"}`);
      assert.ok(n !== undefined, `${x.name} exposes sqs_forwarded_requests_total{outcome="${outcome}"}`);
      return n;
    };
    const forwarded = (): Promise<{ notOwner: number; refused: number }[]> =>
      Promise.all(
        rest.map(async (x) => ({
          notOwner: await counter(x, 'not_owner'),
          refused: await counter(x, 'refused'),
        })),
      );
    const forwardedBefore = await forwarded();
    const askedAt = Date.now();
    const final = await answers();
    const answeredMs = Date.now() - askedAt;
    const forwardedAfter = await forwarded();
    const lines = new Map(rest.map((x) => [x, refusalLines(x)] as const));
    const refusedAll = new Set([...refused.values()].flatMap((x) => [...x]));
    const after80 = await levels();
    t.diagnostic(
      `at about 80 %: ${at80}; ${second.name} killed -9; ${settledMs} ms later: refused ${[...refused].map(([x, set]) => `${x.name} [${[...set].join(', ')}]`).join(', ')}; then ${after80}; refusal log lines per shard: ${[...lines].map(([x, m]) => `${x.name} ${JSON.stringify([...m])}`).join(', ')}`,
    );
    const statuses: Record<string, number> = {};
    for (const a of final) statuses[a.status] = (statuses[a.status] ?? 0) + 1;
    const refusedForwarded = forwardedAfter.reduce(
      (n, f, i) => n + f.refused - (forwardedBefore[i]?.refused ?? 0),
      0,
    );
    t.diagnostic(
      `answers of the 256 queues: ${JSON.stringify(statuses)}, all in ${answeredMs} ms; ${refusedForwarded} of the refused shards' requests were forwarded and answered "refused" by their owner, a 503 at once (a shard nobody serves is held at the routers for ttl + interval, ${c.timing.ttlMs + c.timing.intervalMs} ms here)`,
    );
    // A refused shard's requests are not retried at the routers: nobody answered "not the owner".
    assert.deepEqual(
      forwardedAfter.map((f) => f.notOwner),
      forwardedBefore.map((f) => f.notOwner),
      'no request of the 256 queues was told "not the owner" and retried',
    );

    assert.ok(refusedAll.size > 0, 'some shard did not fit the survivors');
    for (const x of rest) {
      assert.equal(x.running, true, `${x.name} still runs`);
      assert.doesNotMatch(x.logs(), /"level":"fatal"/, `${x.name}: no fatal line`);
      assert.ok((await used(x)) <= BUDGET, `${x.name} holds no more than its budget`);
      const set = refused.get(x) ?? new Set<number>();
      assert.equal(
        await x.metric('sqs_shards_down{reason="refused"}'),
        set.size,
        `${x.name}: the gauge counts its refused shards`,
      );
      // Read again once a minute (src/owners/owner.ts), not at every reconcile of the shard map.
      const tries = 1 + Math.floor((Date.now() - secondAt) / 60_000);
      for (const s of set) {
        const n = lines.get(x)?.get(s) ?? 0;
        assert.ok(n >= 1 && n <= tries, `${x.name}: shard ${s} refused by name ${n} times, at most ${tries}`);
      }
    }
    final.forEach((a, s) => {
      const q = queues[s] as Filled;
      if (refusedAll.has(s)) assert.equal(a.status, 503, `shard ${s} (refused): its queue answers 503`);
      else assert.deepEqual(a, { status: 200, depth: q.sent }, `shard ${s}: served, count exact`);
    });
  },
);
