/**
 * docs/faults.md row 34: message move tasks across owners, with `--active-active` at N = 3
 * (docs/architecture.md, "Many owners": move tasks across owners), when the process owning the
 * source or the destination is killed -9 in the middle of them.
 *
 * Each task's source is a dead-letter queue on one process's shards (the source owner), its
 * destination a queue whose RedrivePolicy names that DLQ on another's (the destination owner); the
 * third process, the coordinator, owns neither and takes every request. The DLQs are preloaded
 * with a few thousand messages, the tasks are started with a MaxNumberOfMessagesPerSecond rate,
 * and once each has moved about a quarter, the source owner (first test) or the destination owner
 * (second) is killed with SIGKILL. Every message goes over the forwarding channel: the source holds
 * it (marked relayed) until the destination has it durably, and its id in the destination is the
 * same at every sending, so a sending the dead process never saw answered is recognized by the
 * destination's mark when it is sent again. So that the kill comes with messages on their way,
 * the destination owner is stopped (SIGSTOP, for less than its lease TTL) until every source holds
 * some, and continued after the kill if it was not the one killed: a dead source owner's relays
 * then arrive with no answer back; a dead destination owner's break with their outcome unknown.
 *
 * Where the dead process's shards go is rendezvous hashing over the survivors
 * (src/shard/placement.ts), so the queue names are picked for both outcomes, for a standard and a
 * FIFO queue each: the dead process's queue lands on the coordinator (the move goes on across
 * owners) or on the other queue's owner (from then on one process holds both, and a message sent
 * before still goes by the mark).
 *
 * Once the survivors hold the shards, each task must end as ListMessageMoveTasks reports: COMPLETED
 * with nothing left in its source, or FAILED/CANCELLED, then started again for the rest. Then every
 * message is in the destination exactly once, its body exact (lost = 0, no duplicate: a duplicate
 * here would not be SQS's at-least-once but a move made twice), nothing is left in the source, the
 * tasks' ApproximateNumberOfMessagesMoved add up to the messages preloaded, and a FIFO queue's
 * groups keep their order.
 *
 * Protocol: the AWS SDK for JavaScript v3 (@aws-sdk/client-sqs, JSON 1.0) for every request.
 * Timings are reported with t.diagnostic, never asserted.
 */
import assert from 'node:assert/strict';
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ListMessageMoveTasksCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  StartMessageMoveTaskCommand,
  type ListMessageMoveTasksResultEntry,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { placement } from '../../src/shard/placement.js';
import { testsRequiring } from '../support/requires.js';
import { uniqueName } from '../support/server.js';
import { loadClient, until, type Instance } from './harness.js';
import { dlqPair, namesOwnedBy, ownersFor, shardOfUrl, type OwnersCluster } from './owners-harness.js';

const { test } = testsRequiring('nginx', 'redis-server');

/** Messages preloaded per DLQ and each task's rate: a task runs for about 30 s. */
const KINDS = {
  standard: { count: 3000, rate: 100, groups: 0 },
  fifo: { count: 1200, rate: 40, groups: 8 },
} as const;
type Kind = keyof typeof KINDS;

/** Where the dead process's queue of a pair goes. */
type Landing = 'the coordinator' | "the other queue's owner";

/** The kill comes once every task has moved this share of its messages. */
const KILL_AT = 0.25;

interface Pair {
  readonly kind: Kind;
  readonly landing: Landing;
  readonly dlqUrl: string;
  readonly dlqArn: string;
  readonly destUrl: string;
  readonly destArn: string;
  /** Every body preloaded, in send order (a FIFO group's order is its bodies' order here). */
  readonly bodies: readonly string[];
}

const COUNTS = ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] as const;

async function countsOf(sdk: SQSClient, queueUrl: string): Promise<{ visible: number; inFlight: number }> {
  const a = (
    await sdk.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: [...COUNTS] }))
  ).Attributes;
  return {
    visible: Number(a?.['ApproximateNumberOfMessages']),
    inFlight: Number(a?.['ApproximateNumberOfMessagesNotVisible']),
  };
}

/** A body of its own length and content for message `i`, so that any change to it shows. */
function bodyOf(tag: string, i: number, group: number | undefined): string {
  const head = group === undefined ? `${tag}-${i}` : `${tag}-g${group}-${i}`;
  return `${head}:${'é∂x'.repeat(i % 37)}`;
}

/**
 * A DLQ on `sourceOwner`'s shards and a destination on `destOwner`'s, the victim's one on a shard
 * that `landsOn` takes once the victim is gone; the DLQ preloaded.
 */
async function preparePair(
  sdk: SQSClient,
  c: OwnersCluster,
  kind: Kind,
  owners: { source: Instance; dest: Instance; victim: Instance },
  landing: Landing,
  landsOn: Instance,
): Promise<Pair> {
  const map = await c.map();
  const survivors = c.nodes.filter((x) => x !== owners.victim).map((x) => c.idOf(x));
  const afterKill = placement(survivors);
  // The victim's shards that go to `landsOn`; the survivor's keep their owner anyway.
  const mapFor = (owner: Instance): (string | undefined)[] =>
    owner === owners.victim ? map.map((o, s) => (afterKill[s] === c.idOf(landsOn) ? o : undefined)) : map;
  const fifo = kind === 'fifo';
  const nameOn = (owner: Instance, base: string): string =>
    namesOwnedBy(mapFor(owner), c.idOf(owner), uniqueName(base), 1, fifo)[0] ?? '';
  const { dlqUrl, dlqArn, srcUrl, srcArn } = await dlqPair(
    sdk,
    nameOn(owners.source, `mk${kind[0]}dlq`),
    nameOn(owners.dest, `mk${kind[0]}dst`),
    { maxReceiveCount: 5 },
  );
  const { count, groups } = KINDS[kind];
  const tag = uniqueName(kind);
  const bodies = Array.from({ length: count }, (_, i) => bodyOf(tag, i, fifo ? i % groups : undefined));
  // Batches of ten, by index: message i of a FIFO queue is in group i % groups.
  const batches: number[][] = [];
  for (let i = 0; i < count; i += 10) {
    batches.push(Array.from({ length: Math.min(10, count - i) }, (_, j) => i + j));
  }
  const sendBatch = async (batch: number[]): Promise<void> => {
    const out = await sdk.send(
      new SendMessageBatchCommand({
        QueueUrl: dlqUrl,
        Entries: batch.map((i) => ({
          Id: String(i),
          MessageBody: bodies[i],
          ...(fifo ? { MessageGroupId: `g${i % groups}`, MessageDeduplicationId: `${tag}-${i}` } : {}),
        })),
      }),
    );
    assert.deepEqual(out.Failed ?? [], [], `preloading ${dlqUrl}`);
  };
  if (fifo) {
    // In order: a group's order is the order its messages were sent in.
    for (const batch of batches) await sendBatch(batch);
  } else {
    for (let i = 0; i < batches.length; i += 8) await Promise.all(batches.slice(i, i + 8).map(sendBatch));
  }
  assert.deepEqual(
    await countsOf(sdk, dlqUrl),
    { visible: count, inFlight: 0 },
    `${kind}: the DLQ preloaded`,
  );
  return { kind, landing, dlqUrl, dlqArn, destUrl: srcUrl, destArn: srcArn, bodies };
}

function label(p: Pair): string {
  return `${p.kind} (the dead process's queue to ${p.landing})`;
}

async function tasksOf(sdk: SQSClient, p: Pair): Promise<ListMessageMoveTasksResultEntry[]> {
  return (
    (await sdk.send(new ListMessageMoveTasksCommand({ SourceArn: p.dlqArn, MaxResults: 10 }))).Results ?? []
  );
}

async function startTask(sdk: SQSClient, p: Pair): Promise<void> {
  const out = await sdk.send(
    new StartMessageMoveTaskCommand({
      SourceArn: p.dlqArn,
      DestinationArn: p.destArn,
      MaxNumberOfMessagesPerSecond: KINDS[p.kind].rate,
    }),
  );
  assert.equal(typeof out.TaskHandle, 'string');
}

const ACTIVE = new Set(['RUNNING', 'CANCELLING']);

/** Waits until the source's latest task is no longer running; returns every task of it, newest first. */
async function taskEnded(
  sdk: SQSClient,
  p: Pair,
  timeoutMs: number,
): Promise<ListMessageMoveTasksResultEntry[]> {
  let tasks: ListMessageMoveTasksResultEntry[] = [];
  await until(
    `the ${label(p)} move task ended`,
    async () => {
      tasks = await tasksOf(sdk, p);
      return tasks.length > 0 && !ACTIVE.has(tasks[0]?.Status ?? '');
    },
    timeoutMs,
  ).catch(async (e: unknown) => {
    throw new Error(
      `${(e as Error).message}: ${JSON.stringify(tasks)}, source ${JSON.stringify(await countsOf(sdk, p.dlqUrl))}`,
    );
  });
  return tasks;
}

/**
 * Receives and deletes every message of `queueUrl` (a visibility long enough that none comes back
 * before its delete): the bodies with their MessageIds, in the order received.
 */
async function drain(
  sdk: SQSClient,
  queueUrl: string,
  expect: number,
): Promise<{ body: string; id: string }[]> {
  const out: { body: string; id: string }[] = [];
  const deadline = Date.now() + 120_000;
  for (;;) {
    const got =
      (
        await sdk.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: 10,
            VisibilityTimeout: 300,
            WaitTimeSeconds: out.length >= expect ? 1 : 5,
          }),
        )
      ).Messages ?? [];
    for (const m of got) out.push({ body: m.Body ?? '', id: m.MessageId ?? '' });
    if (got.length > 0) {
      const del = await sdk.send(
        new DeleteMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: got.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
        }),
      );
      assert.deepEqual(del.Failed ?? [], [], `deleting from ${queueUrl}`);
      continue;
    }
    const left = await countsOf(sdk, queueUrl);
    if (out.length >= expect && left.visible === 0 && left.inFlight === 0) return out;
    if (Date.now() > deadline) {
      throw new Error(
        `${queueUrl}: drained ${out.length} of ${expect} in 120 s, left ${JSON.stringify(left)}`,
      );
    }
  }
}

/** Who holds, after, the shards `victimId` held before: instance name → shard count. */
function takers(
  before: readonly (string | undefined)[],
  after: readonly (string | undefined)[],
  victimId: string,
  c: OwnersCluster,
): Record<string, number> {
  const out: Record<string, number> = {};
  before.forEach((o, s) => {
    if (o !== victimId) return;
    const name = c.byId(after[s])?.name ?? String(after[s]);
    out[name] = (out[name] ?? 0) + 1;
  });
  return out;
}

for (const victimIs of ['source', 'destination'] as const) {
  test(
    `docs/faults.md row 34: Given three active/active processes and message move tasks (standard and FIFO, SDK v3 over JSON) from dead-letter queues on one process's shards to queues on another's, When the ${victimIs} owner is killed (SIGKILL) in the middle of the tasks with messages on their way (the destination owner stopped for less than its lease until then), Then the survivors take its shards, each task ends as ListMessageMoveTasks reports (COMPLETED with nothing left in its source), every message is in the destination exactly once with its body exact (lost = 0, no duplicate), the moved counts add up, and FIFO order holds within each group`,
    { timeout: 420_000 },
    async (t) => {
      const c = await ownersFor(t);
      // The process that takes every request owns no queue of the test: the coordinator, so that
      // the takeover does not also wait for a new coordinator (row 27 covers that).
      const coordinator = c.byId(await c.coordinator());
      assert.ok(coordinator !== undefined, 'a coordinator');
      const [source, dest] = c.nodes.filter((x) => x !== coordinator) as [Instance, Instance];
      const victim = victimIs === 'source' ? source : dest;
      const peer = victim === source ? dest : source;
      const owners = { source, dest, victim };
      const sdk = loadClient(coordinator.url, 10);
      t.after(() => sdk.destroy());
      const pairs: Pair[] = [];
      for (const kind of ['standard', 'fifo'] as const) {
        pairs.push(await preparePair(sdk, c, kind, owners, 'the coordinator', coordinator));
        pairs.push(await preparePair(sdk, c, kind, owners, "the other queue's owner", peer));
      }
      const startedAt = Date.now();
      for (const p of pairs) await startTask(sdk, p);
      const movedAtKill: number[] = [];
      await until(
        `every task moved ${KILL_AT * 100} % of its messages`,
        async () => {
          for (const [i, p] of pairs.entries()) {
            const [task] = await tasksOf(sdk, p);
            assert.equal(task?.Status, 'RUNNING', `${label(p)}: the task runs until the kill`);
            movedAtKill[i] = task.ApproximateNumberOfMessagesMoved ?? 0;
          }
          return pairs.every((p, i) => (movedAtKill[i] ?? 0) >= KILL_AT * p.bodies.length);
        },
        120_000,
      );
      const victimId = c.idOf(victim);
      const before = await c.leases();
      // The kill is to come while messages are on their way, held in the sources: the destination
      // owner is stopped (for less than its lease TTL, so it keeps its shards) until every DLQ holds
      // some out of sight, then the victim is killed, and the destination owner, if alive, continued.
      // Sent to it meanwhile: read once it runs again, each arrives with no answer back (a dead
      // source), or its sender's connection breaks with the outcome unknown (a dead destination).
      let heldAtKill: number[] = [];
      dest.signal('SIGSTOP');
      try {
        await until(
          'every source holds messages on their way to the stopped destination owner',
          async () => {
            heldAtKill = (await Promise.all(pairs.map((p) => countsOf(sdk, p.dlqUrl)))).map(
              (x) => x.inFlight,
            );
            return heldAtKill.every((n) => n > 0);
          },
          c.timing.ttlMs / 2,
        );
        await victim.kill9();
      } finally {
        dest.signal('SIGCONT');
      }
      const killedAt = Date.now();
      await c.settled(60_000);
      const settledMs = Date.now() - killedAt;
      const after = await c.leases();
      for (const p of pairs) {
        const moved = victimIs === 'source' ? p.dlqUrl : p.destUrl;
        const expected: Instance = p.landing === 'the coordinator' ? coordinator : peer;
        assert.equal(
          c.byId(after[shardOfUrl(moved)])?.name,
          expected.name,
          `${label(p)}: the dead process's queue went where the placement said`,
        );
      }
      t.diagnostic(
        `kill -9 of the ${victimIs} owner ${victim.name} ${killedAt - startedAt} ms into the tasks, moved then ${JSON.stringify(movedAtKill)}, held in the sources then (the destination owner stopped) ${JSON.stringify(heldAtKill)}; shards settled on the survivors ${settledMs} ms after it; its ${before.filter((o) => o === victimId).length} shards taken by ${JSON.stringify(takers(before, after, victimId, c))}`,
      );

      // Each task ends. COMPLETED leaves nothing behind; a task that failed or was cancelled is
      // started again for the rest, once what it held is back in sight.
      for (const p of pairs) {
        const { count, rate } = KINDS[p.kind];
        for (let round = 1; ; round++) {
          const [latest] = await taskEnded(sdk, p, (count / rate) * 1000 + 180_000);
          const left = await countsOf(sdk, p.dlqUrl);
          t.diagnostic(
            `${label(p)}, task ${round}: ${latest?.Status}${latest?.FailureReason === undefined ? '' : ` (${latest.FailureReason})`}, moved ${latest?.ApproximateNumberOfMessagesMoved} of ${latest?.ApproximateNumberOfMessagesToMove}, ended ${Date.now() - killedAt} ms after the kill, left in the source ${JSON.stringify(left)}`,
          );
          if (latest?.Status === 'COMPLETED') {
            assert.deepEqual(
              left,
              { visible: 0, inFlight: 0 },
              `${label(p)}: COMPLETED, nothing left behind`,
            );
            break;
          }
          assert.ok(round < 3, `${label(p)}: still not done after ${round} starts`);
          await until(
            `${label(p)}: nothing in flight in the source`,
            async () => (await countsOf(sdk, p.dlqUrl)).inFlight === 0,
            120_000,
          );
          await startTask(sdk, p);
        }
      }

      for (const p of pairs) {
        const tasks = await tasksOf(sdk, p);
        const got = await drain(sdk, p.destUrl, p.bodies.length);
        const expected = new Set(p.bodies);
        const ids = new Map<string, Set<string>>();
        for (const { body, id } of got) ids.set(body, (ids.get(body) ?? new Set()).add(id));
        const lost = p.bodies.filter((b) => !ids.has(b));
        const unexpected = [...ids.keys()].filter((b) => !expected.has(b));
        const duplicated = [...ids]
          .filter(([, s]) => s.size > 1)
          .map(([b, s]) => `${b.slice(0, 40)} × ${s.size}`);
        t.diagnostic(
          `${label(p)}: preloaded ${p.bodies.length}, received from the destination ${got.length} (${ids.size} bodies), lost ${lost.length}, unexpected ${unexpected.length}, duplicated ${duplicated.length}; tasks ${JSON.stringify(tasks.map((x) => [x.Status, x.ApproximateNumberOfMessagesMoved, x.ApproximateNumberOfMessagesToMove]))}`,
        );
        assert.deepEqual(lost.slice(0, 10), [], `${label(p)}: lost (preloaded, in neither queue)`);
        assert.deepEqual(unexpected.slice(0, 10), [], `${label(p)}: bodies never preloaded, or changed`);
        assert.deepEqual(duplicated.slice(0, 10), [], `${label(p)}: in the destination twice`);
        assert.equal(got.length, p.bodies.length, `${label(p)}: each message received once`);
        assert.deepEqual(
          await countsOf(sdk, p.dlqUrl),
          { visible: 0, inFlight: 0 },
          `${label(p)}: source empty`,
        );
        for (const x of tasks)
          assert.ok(!ACTIVE.has(x.Status ?? ''), `${label(p)}: a task still ${x.Status}`);
        assert.equal(
          tasks.reduce((n, x) => n + (x.ApproximateNumberOfMessagesMoved ?? 0), 0),
          p.bodies.length,
          `${label(p)}: the tasks' ApproximateNumberOfMessagesMoved add up to the messages moved`,
        );
        if (p.kind === 'fifo') {
          const order = new Map<string, number[]>();
          for (const { body } of got) {
            const [, g = '', i = ''] = /-g(\d+)-(\d+):/.exec(body) ?? [];
            order.set(g, [...(order.get(g) ?? []), Number(i)]);
          }
          const outOfOrder = [...order].filter(([, seq]) =>
            seq.some((x, k) => k > 0 && x <= (seq[k - 1] ?? 0)),
          );
          assert.deepEqual(
            outOfOrder.map(([g]) => `group ${g}`),
            [],
            `${label(p)}: each group received in the order it was sent`,
          );
        }
      }
    },
  );
}
