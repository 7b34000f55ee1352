/**
 * A shard's queues dropped from the store to be loaded again (QueueStore.evictShard): what the
 * store answers meanwhile, what the catalog keeps naming, and the dead-letter and move-task events
 * that storage of two shards writes as one transfer.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ManualClock } from '../../src/core/clock.js';
import type { ChangeEvent } from '../../src/core/events.js';
import type { QueueIdentity } from '../../src/core/queue.js';
import { QueueStore } from '../../src/core/store.js';
import { shardOf } from '../../src/shard/hash.js';
import { throwsCode } from '../support/assertions.js';
import { msg } from '../support/queue.js';

const ACCOUNT = '000000000000';
const REGION = 'us-east-1';

function id(name: string): QueueIdentity {
  return { accountId: ACCOUNT, region: REGION, name };
}

/** `count` queue names `<stem>-<i>` of which the first is in another shard than all the rest, and so on: distinct shards. */
function namesInDistinctShards(stem: string, count: number): string[] {
  const seen = new Set<number>();
  const out: string[] = [];
  for (let i = 0; out.length < count; i++) {
    const name = `${stem}-${i}`;
    const s = shardOf(ACCOUNT, REGION, name);
    if (seen.has(s)) continue;
    seen.add(s);
    out.push(name);
  }
  return out;
}

/** A name in the same shard as `name`, other than it. */
function sameShardAs(name: string): string {
  const s = shardOf(ACCOUNT, REGION, name);
  for (let i = 0; ; i++) {
    const other = `twin-${i}`;
    if (shardOf(ACCOUNT, REGION, other) === s) return other;
  }
}

void test('Given queues in two shards, when one shard is evicted, then its queues answer ServiceUnavailable, not QueueDoesNotExist, while the catalog still lists them and the other shard serves', () => {
  const store = new QueueStore(new ManualClock(), { deletedRecentlyMs: 0 });
  const [a, b] = namesInDistinctShards('q', 2) as [string, string];
  const qa = store.create(id(a), {}, {}).queue;
  const qb = store.create(id(b), {}, {}).queue;
  qa.sendMessage(msg('kept in Redis'), 0);

  store.evictShard(qa.shard);

  assert.equal(store.get(ACCOUNT, a, REGION), undefined);
  throwsCode(() => store.require(ACCOUNT, a, REGION), 'ServiceUnavailable');
  throwsCode(() => store.create(id(sameShardAs(a)), {}, {}), 'ServiceUnavailable');
  throwsCode(() => store.create(id(a), {}, {}), 'ServiceUnavailable');
  assert.equal(store.require(ACCOUNT, b, REGION), qb);
  assert.deepEqual(
    store.catalog.list(ACCOUNT, '', REGION).map((e) => e.name),
    [a, b].sort(),
  );
  assert.equal(qa.deleted, true, 'a long poll holding the old object sees it gone');
});

void test('Given an evicted shard, when its queues are restored and the load ends, then they serve again and a queue its storage never had leaves the catalog', () => {
  const clock = new ManualClock();
  const store = new QueueStore(clock, { deletedRecentlyMs: 0 });
  const [a] = namesInDistinctShards('r', 1) as [string];
  const stored = store.create(id(a), { VisibilityTimeout: '7' }, {}).queue;
  const lost = store.create(id(sameShardAs(a)), {}, {}).queue;

  store.evictShard(stored.shard);
  store.restore(store.newQueue(id(a), { ...stored.attributes }, {}, stored.createdAt, stored.uid));
  store.shardLoaded(stored.shard);

  assert.equal(store.require(ACCOUNT, a, REGION).uid, stored.uid);
  assert.equal(store.catalog.get(ACCOUNT, REGION, lost.name), undefined);
  throwsCode(() => store.require(ACCOUNT, lost.name, REGION), 'QueueDoesNotExist');
  assert.equal(store.create(id(lost.name), {}, {}).created, true);
});

void test('Given a queue whose dead-letter queue is in another shard, when a message is dead-lettered, then a message-moved event names both queues and the message the DLQ holds', () => {
  const store = new QueueStore(new ManualClock(), { deletedRecentlyMs: 0 });
  const [src, dlqName] = namesInDistinctShards('dl', 2) as [string, string];
  const dlq = store.create(id(dlqName), {}, {}).queue;
  const source = store.create(
    id(src),
    { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 1 }) },
    {},
  ).queue;
  const events: ChangeEvent[] = [];
  store.onChange((e) => events.push(e));
  const sent = source.sendMessage(msg('to the DLQ'), 0).messageId;
  source.receive(1, 0, 0);
  source.receive(1, 0, 1);

  const moved = events.filter((e) => e.type === 'message-moved');
  assert.equal(moved.length, 1);
  const [e] = moved;
  assert.ok(e?.type === 'message-moved');
  assert.equal(e.from, source);
  assert.equal(e.queue, dlq);
  assert.equal(e.message.id, sent);
  assert.notEqual(e.from.shard, e.queue.shard);
  assert.deepEqual(
    store.deadLetterSources(dlq).map((q) => q.name),
    [src],
  );
});

void test("Given a running move task, when its source's shard is dropped and loaded again, then the old task object moves nothing, and while the destination's shard is out the task waits instead of failing", () => {
  const clock = new ManualClock();
  const store = new QueueStore(clock, { deletedRecentlyMs: 0 });
  const [srcName, destName, feederName] = namesInDistinctShards('mt', 3) as [string, string, string];
  const source = store.create(id(srcName), {}, {}).queue;
  const dest = store.create(id(destName), {}, {}).queue;
  store.create(
    id(feederName),
    { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: source.arn, maxReceiveCount: 3 }) },
    {},
  );
  source.sendMessage(msg('one'), 0);
  source.sendMessage(msg('two'), 0);
  const task = store.startMoveTask(ACCOUNT, source.arn, dest.arn, undefined, REGION);

  store.evictShard(dest.shard);
  assert.equal(store.stepMoveTask(task, 10), 0, 'waits for its destination');
  assert.equal(task.status, 'RUNNING');

  store.restore(store.newQueue(id(destName), {}, {}, dest.createdAt, dest.uid));
  store.shardLoaded(dest.shard);
  store.evictShard(source.shard);
  store.restore(store.newQueue(id(srcName), {}, {}, source.createdAt, source.uid));
  store.shardLoaded(source.shard);
  store.require(ACCOUNT, srcName, REGION).sendMessage(msg('in the shard read back'), 0);
  assert.equal(store.stepMoveTask(task, 10), 0, 'a task of the dropped shard is not stepped');
  assert.equal(task.moved, 0);
});
