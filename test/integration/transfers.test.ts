/**
 * Messages that move between queues of two shards (a dead-letter move on receive, a move task's
 * step), standard and FIFO, when the writing process stops between the two halves: what the next
 * load (a Persistence on the same Redis) makes of the outbox and marks that stayed behind.
 *
 * A run writes with the real Writer on a real redis-server, then stops (`writer.close()`: nothing
 * more is written, as if the process had been killed there) in one of three places:
 * - after the source's call (removal and outbox entry) was applied and the destination's was
 *   refused (its chain key changed under it): the message is only in the outbox;
 * - after both were applied, before the outbox entry and the mark were deleted;
 * - the same, after a consumer received and deleted the message at the destination.
 * Then a Persistence loads the keyspace: the message is in the destination exactly once in the
 * first two cases, gone in the third, and the outbox and the marks are empty once it settled.
 * docs/faults.md row 25.
 */
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/core/clock.js';
import type { Queue } from '../../src/core/queue.js';
import { receiptHandle } from '../../src/core/receipts.js';
import { QueueStore } from '../../src/core/store.js';
import { layoutFor, type Layout } from '../../src/persistence/layout.js';
import { writeConnections } from '../../src/persistence/write-connections.js';
import { Writer } from '../../src/persistence/writer.js';
import { createRedis } from '../../src/persistence/redis.js';
import { shardOf } from '../../src/shard/hash.js';
import { SqsError } from '../../src/sqs/errors.js';
import { watchedPersistence } from '../support/persistence.js';
import { inGroup, msg, sendOne } from '../support/queue.js';
import { uniquePrefix } from '../support/redis.js';
import { testsRequiring } from '../support/requires.js';
import { sharedRedis } from '../support/sqs.js';
import type { Redis } from 'ioredis';

const { after, before, test } = testsRequiring('redis-server');
const redis = sharedRedis({ before, after }, { aof: true });

const ACCOUNT = '000000000000';
const REGION = 'us-east-1';
const T0 = 1_700_000_000_000;

type Kind = 'dead-letter' | 'move-task';
type Stop = 'destination refused' | 'before cleanup' | 'consumed before cleanup';

/** Two names of the given kind whose queues are in two different shards. */
function twoShards(fifo: boolean): [string, string] {
  const suffix = fifo ? '.fifo' : '';
  const first = `src-${fifo ? 'f' : 's'}${suffix}`;
  for (let i = 0; ; i++) {
    const other = `dest-${i}${suffix}`;
    if (shardOf(ACCOUNT, REGION, other) !== shardOf(ACCOUNT, REGION, first)) return [first, other];
  }
}

interface Run {
  readonly layout: Layout;
  /** The id the moved message has in the destination. */
  readonly movedId: string;
  readonly source: string;
  readonly destination: string;
}

/** Writes until `stop`, then stops writing. */
async function writeUntil(kind: Kind, fifo: boolean, stop: Stop): Promise<Run> {
  const layout = layoutFor(uniquePrefix());
  const c = await redis.connect();
  const clock = new ManualClock(T0);
  const store = new QueueStore(clock, { deletedRecentlyMs: 0 });
  const conns = await writeConnections(c, layout);
  const writer = new Writer({
    layout,
    connectionFor: conns.connectionFor,
    multi: conns.multi,
    unavailable: (cause) => new SqsError('ServiceUnavailable', cause.message),
  });
  writer.attach(store);
  const [srcName, destName] = twoShards(fifo);
  const fifoAttrs = fifo ? { FifoQueue: 'true', ContentBasedDeduplication: 'false' } : {};
  const dest = store.create({ accountId: ACCOUNT, region: REGION, name: destName }, fifoAttrs, {}).queue;
  const redrive =
    kind === 'dead-letter'
      ? { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dest.arn, maxReceiveCount: 1 }) }
      : {};
  const source = store.create(
    { accountId: ACCOUNT, region: REGION, name: srcName },
    { ...fifoAttrs, ...redrive },
    {},
  ).queue;
  if (kind === 'move-task') {
    // The source must be some queue's dead-letter queue for a move task to start on it.
    store.create(
      { accountId: ACCOUNT, region: REGION, name: `feeder${fifo ? '.fifo' : ''}` },
      {
        ...fifoAttrs,
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: source.arn, maxReceiveCount: 5 }),
      },
      {},
    );
  }
  const sent = sendOne(source, msg('moving', fifo ? inGroup('g', 'd1') : {}), clock.now());
  await writer.commit();

  if (stop === 'destination refused') {
    // The destination's next call names a previous call its chain key no longer holds.
    await c.set(layout.shards[dest.shard]?.commit ?? '', 'changed-under-the-writer');
  }
  const movedId = move(kind, store, source, dest, clock);
  const moved = writer.commit([source.shard]);
  await moved;
  if (stop === 'destination refused') {
    await assert.rejects(writer.commit([dest.shard]));
  } else {
    await writer.commit([dest.shard]);
    // The source's next call, the outbox entry's deletion, is refused: sent on this connection
    // after this SET, at the end of this turn at the earliest. So the entry and the mark stay.
    await c.set(layout.shards[source.shard]?.commit ?? '', 'changed-under-the-writer');
    if (stop === 'consumed before cleanup') {
      const [got] = dest.receive(1, 30_000, clock.now());
      assert.equal(got?.id, movedId);
      dest.deleteMessage(receiptHandle(dest.uid, got), clock.now());
      await writer.commit([dest.shard]);
    }
  }
  await writer.close().catch(() => undefined);
  assert.equal(await outboxEntries(layout), 1, 'the stop left the outbox entry behind');
  assert.equal(kind === 'move-task' || sent.id === movedId, true, 'a dead letter keeps its id');
  return { layout, movedId, source: srcName, destination: destName };
}

/** Moves the source's one message to `dest`; returns its id there. */
function move(kind: Kind, store: QueueStore, source: Queue, dest: Queue, clock: ManualClock): string {
  if (kind === 'dead-letter') {
    source.receive(1, 0, clock.now());
    clock.advance(1);
    assert.deepEqual(source.receive(1, 0, clock.now()), [], 'the second receive dead-letters it');
  } else {
    const task = store.startMoveTask(ACCOUNT, source.arn, dest.arn, 10, REGION);
    assert.equal(store.stepMoveTask(task, 10), 1);
  }
  const [m] = [...dest.allMessages()];
  assert.ok(m !== undefined, 'the destination holds the message in memory');
  return m.id;
}

/** Outbox entries in Redis, in every shard. */
async function outboxEntries(layout: Layout): Promise<number> {
  return outboxAndMarks(redis.client, layout, undefined);
}

async function outboxAndMarks(c: Redis, layout: Layout, destUid: string | undefined): Promise<number> {
  let n = 0;
  for (const k of layout.shards) {
    n += await c.hlen(`${k.prefix}out`);
    if (destUid !== undefined) n += await c.hlen(`${k.prefix}in:${destUid}`);
  }
  return n;
}

for (const kind of ['dead-letter', 'move-task'] as const) {
  for (const fifo of [false, true]) {
    for (const stop of ['destination refused', 'before cleanup', 'consumed before cleanup'] as const) {
      void test(`Given a ${fifo ? 'FIFO' : 'standard'} ${kind} move between two shards stopped at "${stop}", when the keyspace is loaded again, then the destination holds the message ${stop === 'consumed before cleanup' ? 'no more' : 'exactly once'}, the source no more, and the outbox and marks are settled`, async () => {
        const run = await writeUntil(kind, fifo, stop);
        const c = createRedis({ url: redis.url });
        const w = watchedPersistence(c, { layout: run.layout });
        const check = redis.client;
        const first = w.reloaded();
        await w.p.start();
        const store = await first;
        const dest = store.require(ACCOUNT, run.destination, REGION);
        const source = store.require(ACCOUNT, run.source, REGION);
        const ids = [...dest.allMessages()].map((m) => m.id);
        assert.deepEqual(ids, stop === 'consumed before cleanup' ? [] : [run.movedId]);
        assert.deepEqual([...source.allMessages()], []);
        // Settled in the writes that follow the load: the entry first, then the mark.
        for (let i = 0; i < 50 && (await outboxAndMarks(check, run.layout, dest.uid)) > 0; i++) {
          await w.p.commit();
          await new Promise((r) => setImmediate(r));
        }
        assert.equal(await outboxAndMarks(check, run.layout, dest.uid), 0);
        await w.p.close();
      });
    }
  }
}
