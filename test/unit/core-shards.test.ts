/**
 * A shard's queues dropped from the store to be loaded again (QueueStore.evictShard): what the
 * store answers meanwhile, what the catalog keeps naming, and the dead-letter and move-task events
 * that storage of two shards writes as one transfer. And a store that owns some shards only: the
 * catalog's remote entries for the others, in listings and in the dead-letter checks.
 */
import assert from 'node:assert/strict';
import { mock, test } from 'node:test';
import { catalogEntry, type CatalogEntry, type CatalogRecord } from '../../src/core/catalog.js';
import { ManualClock } from '../../src/core/clock.js';
import type { ChangeEvent, MoveAway } from '../../src/core/events.js';
import { TRANSFER_HOLD_MS, type Queue, type QueueIdentity } from '../../src/core/queue.js';
import { RESEND_AFTER_MS, redriveId } from '../../src/core/movetasks.js';
import { QueueStore } from '../../src/core/store.js';
import { shardOf } from '../../src/shard/hash.js';
import { pageOfQueues } from '../../src/sqs/actions/pages.js';
import { MoveTaskRunner } from '../../src/sqs/movetasks.js';
import {
  deserializeMessage,
  deserializeMoveTask,
  deserializeQueue,
  serializeMessage,
  serializeMoveTask,
  serializeQueue,
} from '../../src/persistence/codec.js';
import { throwsCode } from '../support/assertions.js';
import { inGroup, msg } from '../support/queue.js';

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

// ---- a store that owns some shards ---------------------------------------------------------

/** The ARN a queue of ACCOUNT and REGION has. */
function arnOf(name: string): string {
  return `arn:aws:sqs:${REGION}:${ACCOUNT}:${name}`;
}

/** A remote entry, as the mirror makes from a catalog record, for a queue named `name`. */
function remote(name: string, r: Partial<CatalogRecord> = {}): CatalogEntry {
  return catalogEntry(id(name), {
    shard: shardOf(ACCOUNT, REGION, name),
    uid: `uid-of-${name}`,
    fifo: name.endsWith('.fifo'),
    ...r,
  });
}

/** A name of the given shard other than those in `not`, with the .fifo suffix when asked. */
function nameIn(shard: number, stem: string, fifo = false): string {
  for (let i = 0; ; i++) {
    const name = `${stem}-${i}${fifo ? '.fifo' : ''}`;
    if (shardOf(ACCOUNT, REGION, name) === shard) return name;
  }
}

/** A store that owns shard `a` only, `a` and `b` being the shards of two names: the second is remote. */
function ownerOfOne(): { store: QueueStore; a: number; b: number } {
  const [na, nb] = namesInDistinctShards('own', 2) as [string, string];
  const a = shardOf(ACCOUNT, REGION, na);
  const b = shardOf(ACCOUNT, REGION, nb);
  const store = new QueueStore(new ManualClock(), { deletedRecentlyMs: 0, ownedShards: [a] });
  return { store, a, b };
}

const redrive = (target: string): Record<string, string> => ({
  RedrivePolicy: JSON.stringify({ deadLetterTargetArn: arnOf(target), maxReceiveCount: 3 }),
});

void test('Given a store owning shard a and a remote entry of shard b, when queues are listed, then both shards are named, sorted and paged as one list', () => {
  const { store, a, b } = ownerOfOne();
  const locals = [nameIn(a, 'm'), nameIn(a, 'x')];
  for (const n of locals) store.create(id(n), {}, {});
  const far = nameIn(b, 'p');
  assert.equal(store.catalog.putRemote(remote(far)), true);

  const all = store.catalog.list(ACCOUNT, '', REGION).map((e) => e.name);
  assert.deepEqual(all, [...locals, far].sort());
  const first = pageOfQueues(store.catalog.list(ACCOUNT, '', REGION), 2, undefined);
  assert.deepEqual(
    first.page.map((e) => e.name),
    all.slice(0, 2),
  );
  const second = pageOfQueues(store.catalog.list(ACCOUNT, '', REGION), 2, first.nextToken);
  assert.deepEqual(
    second.page.map((e) => e.name),
    all.slice(2),
  );
  assert.equal(second.nextToken, undefined);
  assert.deepEqual(
    store.catalog.list(ACCOUNT, 'p', REGION).map((e) => e.name),
    [far],
  );
});

void test('Given a remote source queue whose RedrivePolicy names a local queue, then ListDeadLetterSourceQueues finds it and a move task may start on the local queue', () => {
  const { store, a, b } = ownerOfOne();
  const dlq = store.create(id(nameIn(a, 'dlq')), {}, {}).queue;
  const src = nameIn(b, 'src');
  store.catalog.putRemote(remote(src, { deadLetterTargetArn: dlq.arn }));

  assert.deepEqual(
    store.deadLetterSources(dlq).map((e) => e.name),
    [src],
  );
  const task = store.startMoveTask(ACCOUNT, dlq.arn, undefined, undefined, REGION);
  assert.equal(task.status, 'RUNNING');
  store.catalog.removeRemote(ACCOUNT, REGION, src);
  assert.deepEqual(store.deadLetterSources(dlq), []);
});

void test('Given a dead-letter queue on a remote shard, when CreateQueue names it in a RedrivePolicy, then it succeeds when the DLQ allows it and fails as AWS does when its kind differs or its RedriveAllowPolicy denies', () => {
  const { store, a, b } = ownerOfOne();
  const open = nameIn(b, 'open');
  const byQueue = nameIn(b, 'byq');
  const denied = nameIn(b, 'deny');
  const fifo = nameIn(b, 'fifo', true);
  const allowed = nameIn(a, 'allowed');
  store.catalog.putRemote(remote(open, { redriveAllowPolicy: '{"redrivePermission":"allowAll"}' }));
  store.catalog.putRemote(
    remote(byQueue, {
      redriveAllowPolicy: JSON.stringify({ redrivePermission: 'byQueue', sourceQueueArns: [arnOf(allowed)] }),
    }),
  );
  store.catalog.putRemote(remote(denied, { redriveAllowPolicy: '{"redrivePermission":"denyAll"}' }));
  store.catalog.putRemote(remote(fifo));

  const q = store.create(id(nameIn(a, 'to-open')), redrive(open), {});
  assert.equal(q.created, true);
  assert.equal(q.queue.redrive?.deadLetterTargetArn, arnOf(open));
  assert.equal(store.create(id(allowed), redrive(byQueue), {}).created, true);
  throwsCode(
    () => store.create(id(nameIn(a, 'not-listed')), redrive(byQueue), {}),
    'InvalidParameterValue',
    /is not allowed to use .* \(byQueue\)/,
  );
  throwsCode(
    () => store.create(id(nameIn(a, 'to-deny')), redrive(denied), {}),
    'InvalidParameterValue',
    /\(denyAll\) does not allow it/,
  );
  throwsCode(
    () => store.create(id(nameIn(a, 'to-fifo')), redrive(fifo), {}),
    'InvalidParameterValue',
    /Dead-letter queue must be same type of queue as the source/,
  );
  throwsCode(
    () => store.create(id(nameIn(a, 'to-missing')), redrive(nameIn(b, 'missing')), {}),
    'InvalidParameterValue',
    /Dead letter target does not exist/,
  );
  const later = store.create(id(nameIn(a, 'later')), {}, {}).queue;
  throwsCode(() => store.setAttributes(later, redrive(denied)), 'InvalidParameterValue', /denyAll/);
  store.setAttributes(later, redrive(open));
  assert.equal(later.redrive?.deadLetterTargetArn, arnOf(open));
});

void test('Given a store owning shard a, then a remote entry of shard a is ignored, a queue of shard b is not ServiceUnavailable, and a reload of shard a leaves remote entries alone', () => {
  const { store, a, b } = ownerOfOne();
  const mine = store.create(id(nameIn(a, 'mine')), {}, {}).queue;
  assert.equal(store.catalog.putRemote(remote(nameIn(a, 'claimed'))), false);
  assert.equal(store.catalog.putRemote(remote(mine.name, { uid: 'other' })), false);
  const far = nameIn(b, 'far');
  store.catalog.putRemote(remote(far));

  throwsCode(() => store.require(ACCOUNT, far, REGION), 'QueueDoesNotExist');
  store.evictShard(b);
  throwsCode(() => store.require(ACCOUNT, far, REGION), 'QueueDoesNotExist', 'not owned: never 503');
  store.evictShard(a);
  throwsCode(() => store.require(ACCOUNT, mine.name, REGION), 'ServiceUnavailable');
  store.shardLoaded(a);
  assert.deepEqual(
    store.catalog.list(ACCOUNT, '', REGION).map((e) => e.name),
    [far],
    'the reload dropped the local queue it did not bring back, not the remote entry',
  );
  assert.equal(store.catalog.get(ACCOUNT, REGION, far)?.uid, `uid-of-${far}`);
});

void test("Given a store owning every shard, when it gives shard b away and takes it back, then b's entries turn remote, its queue leaves at once, and on taking it back the shard is unavailable until loaded, its entries listed meanwhile", () => {
  const store = new QueueStore(new ManualClock(), { deletedRecentlyMs: 0 });
  const [na, nb] = namesInDistinctShards('flip', 2) as [string, string];
  const qa = store.create(id(na), {}, {}).queue;
  const qb = store.create(id(nb), {}, {}).queue;
  const gone = store.create(id(sameShardAs(nb)), {}, {}).queue;
  const events: ChangeEvent[] = [];
  store.onChange((e) => events.push(e));

  const changed = store.setOwnedShards([qa.shard]);
  assert.equal(changed.length, 255);
  assert.equal(changed.includes(qa.shard), false);
  assert.equal(store.owns(qb.shard), false);
  assert.equal(store.get(ACCOUNT, nb, REGION), undefined);
  assert.equal(qb.deleted, true, 'a long poll holding it is answered');
  throwsCode(() => store.require(ACCOUNT, nb, REGION), 'QueueDoesNotExist');
  assert.equal(store.catalog.isRemote(ACCOUNT, REGION, nb), true);
  assert.deepEqual(events, [], 'giving a shard away writes nothing');
  // The mirror's news now counts for shard b.
  store.catalog.removeRemote(ACCOUNT, REGION, gone.name);
  assert.deepEqual(
    store.catalog.list(ACCOUNT, '', REGION).map((e) => e.name),
    [na, nb].sort(),
  );

  assert.equal(store.setOwnedShards('all').includes(qb.shard), true);
  throwsCode(() => store.require(ACCOUNT, nb, REGION), 'ServiceUnavailable');
  assert.equal(store.catalog.isRemote(ACCOUNT, REGION, nb), false);
  assert.equal(store.catalog.get(ACCOUNT, REGION, nb)?.uid, qb.uid, 'listed while it loads');
  store.restore(store.newQueue(id(nb), {}, {}, qb.createdAt, qb.uid));
  store.shardLoaded(qb.shard);
  assert.equal(store.require(ACCOUNT, nb, REGION).uid, qb.uid);
});

void test('Given a shard being loaded again, when it is given away before its load ends, then its queues stay listed as remote entries, and the end of that load drops none of them', () => {
  const store = new QueueStore(new ManualClock(), { deletedRecentlyMs: 0 });
  const [na, nb] = namesInDistinctShards('mid', 2) as [string, string];
  const qa = store.create(id(na), {}, {}).queue;
  const qb = store.create(id(nb), {}, {}).queue;
  store.evictShard(qb.shard);

  store.setOwnedShards([qa.shard]);
  assert.equal(store.catalog.isRemote(ACCOUNT, REGION, nb), true);
  store.shardLoaded(qb.shard);
  assert.deepEqual(
    store.catalog.list(ACCOUNT, '', REGION).map((e) => e.name),
    [na, nb].sort(),
  );
  throwsCode(() => store.require(ACCOUNT, nb, REGION), 'QueueDoesNotExist');
});

void test('Given a standard queue whose dead-letter queue is remote, when a message passes its maxReceiveCount, then it is held out of sight and asked to go there, and leaves once taken', () => {
  const { store, clock, src, b, far } = withRemoteDlq();
  const away: { arn: string; uid: string; shard: number; id: string }[] = [];
  store.onDeadLetterAway((_q, m, t) => away.push({ ...t, id: m.id }));
  const sent = src.sendMessage(msg('poison'), clock.now()).message;
  assert.ok(sent);
  for (let i = 0; i < 3; i++) assert.equal(src.receive(1, undefined, clock.now()).length, 1);

  assert.deepEqual(src.receive(1, undefined, clock.now()), [], 'the fourth receive sends it away instead');
  assert.deepEqual(away, [{ arn: arnOf(far), uid: `uid-of-${far}`, shard: b, fifo: false, id: sent.id }]);
  assert.equal(src.counts(clock.now()).inflight, 1, 'held, not delivered');

  assert.equal(src.completeTransfer(sent, clock.now()), true);
  assert.equal(src.deadLettered, 1);
  assert.equal(src.counts(clock.now()).inflight, 0);
  assert.equal(src.completeTransfer(sent, clock.now()), false, 'a second answer changes nothing');
});

void test('Given a message held for a remote dead-letter queue, when no answer comes before the hold ends, then it is visible again and the next receive asks again', () => {
  const { store, clock, src } = withRemoteDlq();
  let asked = 0;
  store.onDeadLetterAway(() => asked++);
  const sent = src.sendMessage(msg('poison'), clock.now()).message;
  assert.ok(sent);
  for (let i = 0; i < 3; i++) src.receive(1, undefined, clock.now());
  src.receive(1, undefined, clock.now());
  assert.equal(asked, 1);
  clock.advance(TRANSFER_HOLD_MS);
  assert.deepEqual(src.receive(1, undefined, clock.now()), [], 'sent away again, not delivered');
  assert.equal(asked, 2);
  assert.equal(src.completeTransfer(sent, clock.now()), true, 'the answer to the second sending takes it');
});

/**
 * A queue of shard a (VisibilityTimeout 0) whose dead-letter queue `far`, of its kind, is a remote
 * queue of shard b; maxReceiveCount 3.
 */
function withRemoteDlq(fifo = false): {
  store: QueueStore;
  clock: ManualClock;
  src: Queue;
  far: string;
  a: number;
  b: number;
} {
  const { store, a, b } = ownerOfOne();
  const far = nameIn(b, 'dlq', fifo);
  store.catalog.putRemote(remote(far));
  const attributes = { ...(fifo ? { FifoQueue: 'true' } : {}), ...redrive(far), VisibilityTimeout: '0' };
  const src = store.create(id(nameIn(a, 'src', fifo)), attributes, {}).queue;
  return { store, clock: store.clock as ManualClock, src, far, a, b };
}

/** A FIFO queue of shard a whose dead-letter queue is a remote FIFO queue of shard b. */
function fifoWithRemoteDlq(): {
  store: QueueStore;
  clock: ManualClock;
  src: Queue;
  far: string;
  away: string[];
} {
  const { store, clock, src, far } = withRemoteDlq(true);
  const away: string[] = [];
  store.onDeadLetterAway((_q, m, t) => {
    assert.equal(t.fifo, true);
    away.push(m.id);
  });
  return { store, clock, src, far, away };
}

void test("Given a FIFO queue whose dead-letter queue is remote, when a group's first message passes its maxReceiveCount, then it is held, the group waits behind it, and the next message comes only once it has left", () => {
  const { clock, src, away } = fifoWithRemoteDlq();
  const first = src.sendMessage(msg('poison', inGroup('g', 'd1')), clock.now()).message;
  const second = src.sendMessage(msg('next', inGroup('g', 'd2')), clock.now()).message;
  assert.ok(first && second);
  for (let i = 0; i < 3; i++) {
    assert.deepEqual(
      src.receive(1, undefined, clock.now()).map((m) => m.id),
      [first.id],
    );
  }

  assert.deepEqual(src.receive(10, undefined, clock.now()), [], 'neither the held one nor the one behind it');
  assert.deepEqual(away, [first.id]);
  assert.deepEqual(src.receive(10, undefined, clock.now()), [], 'the group still waits');

  assert.equal(src.completeTransfer(first, clock.now()), true);
  assert.equal(src.deadLettered, 1);
  assert.deepEqual(
    src.receive(10, undefined, clock.now()).map((m) => m.id),
    [second.id],
    'its group goes on with the next message',
  );
});

void test('Given a FIFO message held for a remote dead-letter queue, when the hold ends unanswered, then it is sent again and the group still waits; a visibility change with its last handle is refused meanwhile', () => {
  const { clock, src, away } = fifoWithRemoteDlq();
  const first = src.sendMessage(msg('poison', inGroup('g', 'd1')), clock.now()).message;
  src.sendMessage(msg('next', inGroup('g', 'd2')), clock.now());
  assert.ok(first);
  let handle = '';
  for (let i = 0; i < 3; i++) {
    const got = src.receive(1, undefined, clock.now());
    assert.equal(got[0]?.id, first.id);
    handle = src.receiptHandle(first);
  }
  assert.deepEqual(src.receive(10, undefined, clock.now()), []);
  throwsCode(() => src.changeVisibility(handle, 0, clock.now()), 'InvalidParameterValue');

  clock.advance(TRANSFER_HOLD_MS);
  assert.deepEqual(src.receive(10, undefined, clock.now()), [], 'held again, and the next one waits');
  assert.deepEqual(away, [first.id, first.id]);
  assert.equal(src.completeTransfer(first, clock.now()), true, 'the answer to the second sending takes it');
});

void test('Given a FIFO queue whose remote dead-letter queue is standard, then a message past its maxReceiveCount is delivered as with no dead-letter queue', () => {
  const { store, a, b } = ownerOfOne();
  const clock = store.clock as ManualClock;
  const far = nameIn(b, 'dlq');
  // Stored before such a policy was refused: the kinds differ, so nothing moves.
  store.catalog.putRemote(remote(far));
  const src = store.create(
    id(nameIn(a, 'src', true)),
    { FifoQueue: 'true', VisibilityTimeout: '0' },
    {},
  ).queue;
  src.setAttributes({ RedrivePolicy: redrive(far).RedrivePolicy ?? '' }, clock.now());
  let asked = 0;
  store.onDeadLetterAway(() => asked++);
  src.sendMessage(msg('m', inGroup('g', 'd')), clock.now());
  for (let i = 0; i < 4; i++) assert.equal(src.receive(1, undefined, clock.now()).length, 1);
  assert.equal(asked, 0);
});

/** A store owning shard a, with a dead-letter queue there whose source queue is remote, and the relays it asks for. */
function dlqWithRemoteSource(fifo = false): {
  store: QueueStore;
  clock: ManualClock;
  dlq: Queue;
  src: string;
  relays: MoveAway[];
} {
  const { store, a, b } = ownerOfOne();
  const clock = store.clock as ManualClock;
  const dlq = store.create(id(nameIn(a, 'dlq', fifo)), fifo ? { FifoQueue: 'true' } : {}, {}).queue;
  const src = nameIn(b, 'src', fifo);
  store.catalog.putRemote(remote(src, { deadLetterTargetArn: dlq.arn }));
  const relays: MoveAway[] = [];
  store.onMoveAway((r) => relays.push(r));
  return { store, clock, dlq, src, relays };
}

void test('Given a dead-letter queue whose source queue is remote, when a move task steps, then each message is held and sent there under an id that is the same at every sending, and leaves only once it arrived', () => {
  const { store, clock, dlq, src, relays } = dlqWithRemoteSource();
  // A message dead-lettered from the remote source (through a queue of this store's, whose
  // message it was), and one sent to the dead-letter queue directly.
  const scratch = store.create(id(nameIn(dlq.shard, 'scratch')), {}, {}).queue;
  const x = dlq.acceptDeadLetter(
    scratch.sendMessage(msg('x'), clock.now()).message ?? assert.fail(),
    arnOf(src),
    clock.now(),
  );
  dlq.sendMessage(msg('y'), clock.now());
  const task = store.startMoveTask(ACCOUNT, dlq.arn, arnOf(src), undefined, REGION);
  assert.equal(task.toMove, 2);

  assert.equal(store.stepMoveTask(task, 10), 2);
  assert.equal(relays.length, 2);
  const mine = relays.find((r) => r.message === x) ?? assert.fail();
  assert.equal(mine.target.uid, `uid-of-${src}`);
  assert.equal(mine.redriven.id, redriveId(x.id, `uid-of-${src}`));
  assert.notEqual(mine.redriven.id, x.id, 'a new message, as AWS redrives');
  assert.equal(mine.redriven.body, 'x');
  assert.equal(dlq.counts(clock.now()).inflight, 2, 'held out of sight while they travel');
  assert.equal(store.stepMoveTask(task, 10), 0);
  assert.equal(task.status, 'RUNNING', 'not done while answers are due');

  store.movedAway(mine, 'arrived');
  assert.equal(task.moved, 1);
  assert.equal(dlq.size, 1);
  store.movedAway(relays.find((r) => r !== mine) ?? assert.fail(), 'arrived');
  assert.equal(task.moved, 2);
  assert.equal(task.status, 'COMPLETED');
  assert.equal(dlq.size, 0);
});

void test('Given a move task whose relay gets no answer, then a step a second later sends the same message again under the same id, still held; a destination that is gone fails the task and shows the message again at once', () => {
  const { store, clock, dlq, src, relays } = dlqWithRemoteSource();
  dlq.sendMessage(msg('m'), clock.now());
  const task = store.startMoveTask(ACCOUNT, dlq.arn, arnOf(src), undefined, REGION);
  store.stepMoveTask(task, 10);
  store.movedAway(relays[0] ?? assert.fail(), 'unknown');
  assert.equal(task.relays.size, 1, 'still held: the task waits for it');
  assert.equal(store.stepMoveTask(task, 10), 0, 'held, and not yet due again: nothing sent');
  assert.equal(task.status, 'RUNNING');
  clock.advance(RESEND_AFTER_MS);
  assert.equal(store.stepMoveTask(task, 10), 1);
  assert.equal(relays[1]?.redriven.id, relays[0]?.redriven.id);
  assert.equal(relays[1]?.message, relays[0]?.message);
  assert.deepEqual(dlq.counts(clock.now()), { visible: 0, inflight: 1, delayed: 0 }, 'held again');
  assert.equal(store.stepMoveTask(task, 10), 0, 'sent once per answer');

  store.movedAway(relays[1] ?? assert.fail(), 'gone');
  assert.equal(task.status, 'FAILED');
  assert.equal(task.failureReason, 'AWS.SimpleQueueService.NonExistentQueue');
  assert.equal(task.moved, 0);
  assert.deepEqual(dlq.counts(clock.now()), { visible: 1, inflight: 0, delayed: 0 });
});

void test('Given a move task to a remote destination with a rate, when a step has a budget of one, then one message is sent; the DestinationArn is checked against the remote entry (exists, same kind)', () => {
  const { store, clock, dlq, src, relays } = dlqWithRemoteSource();
  for (let i = 0; i < 3; i++) dlq.sendMessage(msg(`m${i}`), clock.now());
  const fifo = nameIn(shardOf(ACCOUNT, REGION, src), 'other', true);
  store.catalog.putRemote(remote(fifo));
  throwsCode(() => store.startMoveTask(ACCOUNT, dlq.arn, arnOf(fifo), 1, REGION), 'InvalidParameterValue');
  throwsCode(
    () => store.startMoveTask(ACCOUNT, dlq.arn, arnOf('nowhere-at-all'), 1, REGION),
    'ResourceNotFoundException',
  );
  const task = store.startMoveTask(ACCOUNT, dlq.arn, arnOf(src), 1, REGION);
  assert.equal(store.stepMoveTask(task, 1), 1);
  assert.equal(relays.length, 1);
  assert.equal(relays[0]?.redriven.deduplicationId, undefined);
});

void test('Given a FIFO dead-letter queue whose source is remote, when a move task steps, then one message per group travels at a time, in order, with its group and deduplication id', () => {
  const { store, clock, dlq, src, relays } = dlqWithRemoteSource(true);
  const sent = ['a1', 'a2', 'b1'].map(
    (body) =>
      dlq.sendMessage(msg(body, inGroup(body.slice(0, 1), `dedup-${body}`)), clock.now()).message ??
      assert.fail(),
  );
  const task = store.startMoveTask(ACCOUNT, dlq.arn, arnOf(src), undefined, REGION);
  assert.equal(store.stepMoveTask(task, 10), 2, 'the heads of groups a and b');
  assert.deepEqual(
    relays.map((r) => [r.redriven.body, r.redriven.groupId, r.redriven.deduplicationId]),
    [
      ['a1', 'a', 'dedup-a1'],
      ['b1', 'b', 'dedup-b1'],
    ],
  );
  assert.equal(store.stepMoveTask(task, 10), 0, 'a2 waits for a1');
  store.movedAway(relays[0] ?? assert.fail(), 'arrived');
  assert.equal(store.stepMoveTask(task, 10), 1);
  assert.equal(relays[2]?.message, sent[1]);
  store.movedAway(relays[1] ?? assert.fail(), 'arrived');
  store.movedAway(relays[2] ?? assert.fail(), 'arrived');
  assert.equal(task.status, 'COMPLETED');
  assert.equal(task.moved, 3);
});

void test('Given a relay answered after the shard was read back, then the old task and queue are left alone', () => {
  const { store, clock, dlq, src, relays } = dlqWithRemoteSource();
  dlq.sendMessage(msg('m'), clock.now());
  const task = store.startMoveTask(ACCOUNT, dlq.arn, arnOf(src), undefined, REGION);
  store.stepMoveTask(task, 10);
  const events: ChangeEvent[] = [];
  store.onChange((e) => events.push(e));
  store.evictShard(dlq.shard);
  store.movedAway(relays[0] ?? assert.fail(), 'arrived');
  assert.equal(task.moved, 0);
  assert.deepEqual(events, []);
});

/** Counts the store's move-task steps from now on (the driver's calls of stepMoveTask). */
function countSteps(store: QueueStore): () => number {
  let steps = 0;
  const step = store.stepMoveTask.bind(store);
  store.stepMoveTask = (task, budget) => {
    steps++;
    return step(task, budget);
  };
  return () => steps;
}

/** 200 ms of the store's clock and of the mocked timers, in 10 ms ticks, promises settled between. */
async function run200ms(clock: ManualClock): Promise<void> {
  for (let i = 0; i < 20; i++) {
    clock.advance(10);
    mock.timers.tick(10);
    await Promise.resolve();
  }
}

/**
 * Reads `q`'s shard back as another process would after a takeover: its messages (and the move
 * tasks given, by their record) as storage holds them, into new objects.
 */
function readBack(store: QueueStore, q: Queue, tasks: readonly string[] = []): Queue {
  const record = serializeQueue(q);
  const records = [...q.allMessages()].map((m) => [m.id, serializeMessage(m)] as const);
  store.evictShard(q.shard);
  const back = deserializeQueue(record, store);
  store.restore(back);
  for (const [mid, r] of records) back.restoreMessage(deserializeMessage(mid, r));
  for (const t of tasks) store.moveTasks.restore(deserializeMoveTask(t));
  store.shardLoaded(q.shard);
  return back;
}

void test('Given a message held for a remote dead-letter queue when its shard is read back by another process, then the hold is kept: a visibility change with an earlier receipt handle is refused until it ends', () => {
  const { store, clock, src } = withRemoteDlq();
  store.onDeadLetterAway(() => undefined);
  const sent = src.sendMessage(msg('poison'), clock.now()).message ?? assert.fail();
  for (let i = 0; i < 3; i++) src.receive(1, undefined, clock.now());
  const handle = src.receiptHandle(sent);
  assert.deepEqual(src.receive(1, undefined, clock.now()), [], 'held for its dead-letter queue');

  clock.advance(1000);
  const back = readBack(store, src);
  throwsCode(() => back.changeVisibility(handle, 0, clock.now()), 'InvalidParameterValue');
  assert.deepEqual(back.receive(10, undefined, clock.now()), [], 'still out of sight');

  clock.advance(TRANSFER_HOLD_MS);
  back.changeVisibility(handle, 0, clock.now());
});

void test('Given a move task whose messages were held for relays when its shard was read back (another process took it), then the task read back sends them again at once under the same ids, and completes once they arrived', async (t) => {
  const { store, clock, dlq, src, relays } = dlqWithRemoteSource();
  dlq.sendMessage(msg('m1'), clock.now());
  dlq.sendMessage(msg('m2'), clock.now());
  dlq.sendMessage(msg('m3'), clock.now());
  const task = store.startMoveTask(ACCOUNT, dlq.arn, arnOf(src), undefined, REGION);
  assert.equal(store.stepMoveTask(task, 2), 2);
  store.movedAway(relays[0] ?? assert.fail(), 'arrived');
  assert.equal(task.moved, 1);
  const firstIds = relays.map((r) => r.redriven.id);

  // The process dies with m2 held (its relay unanswered): the next owner reads the shard back as
  // storage holds it.
  clock.advance(1000);
  const back = readBack(store, dlq, [serializeMoveTask(task)]);
  const [resumed] = store.moveTasks.list(dlq.arn);
  assert.ok(resumed !== undefined && resumed !== task);
  relays.length = 0;

  assert.equal(store.stepMoveTask(resumed, 10), 2, 'm2 sent again, and m3');
  assert.deepEqual(
    relays.map((r) => r.redriven.body),
    ['m2', 'm3'],
  );
  assert.equal(relays[0]?.redriven.id, firstIds[1], 'under the id of its first sending: the mark answers');
  assert.equal(resumed.awaiting, 2);
  store.movedAway(relays[0] ?? assert.fail(), 'arrived');
  store.movedAway(relays[1] ?? assert.fail(), 'arrived');
  assert.equal(resumed.status, 'COMPLETED');
  assert.equal(resumed.moved, 3);
  assert.equal(back.size, 0);

  // Under the driver, a task read back that waits for the answers of what it sent again steps
  // every 50 ms, not in a busy loop.
  mock.timers.enable({ apis: ['setTimeout'] });
  t.after(() => mock.timers.reset());
  back.sendMessage(msg('m4'), clock.now());
  const next = store.startMoveTask(ACCOUNT, dlq.arn, arnOf(src), undefined, REGION);
  store.stepMoveTask(next, 1);
  store.movedAway(relays[2] ?? assert.fail(), 'unknown');
  readBack(store, back, [serializeMoveTask(next)]);
  const steps = countSteps(store);
  const runner = new MoveTaskRunner(store, clock);
  t.after(() => runner.close());
  await run200ms(clock);
  assert.ok(steps() >= 3 && steps() <= 6, `${steps()} steps in 200 ms`);
  const [running] = store.moveTasks.list(dlq.arn);
  assert.equal(running?.status, 'RUNNING');
});

void test("Given a move task's source that also holds a message for a dead letter of its own when its shard is read back, then the task sends its own relay again at once but waits for that message's hold", () => {
  const { store, clock, dlq, src, relays } = dlqWithRemoteSource();
  const far = nameIn(shardOf(ACCOUNT, REGION, src), 'far');
  store.catalog.putRemote(remote(far));
  store.setAttributes(dlq, { ...redrive(far), VisibilityTimeout: '0' });
  const deadLetters: string[] = [];
  store.onDeadLetterAway((_q, m) => deadLetters.push(m.id));
  const poison = dlq.sendMessage(msg('poison'), clock.now()).message ?? assert.fail();
  for (let i = 0; i < 3; i++) dlq.receive(1, undefined, clock.now());
  assert.deepEqual(dlq.receive(1, undefined, clock.now()), []);
  assert.deepEqual(deadLetters, [poison.id], 'held for its own dead-letter queue');
  dlq.sendMessage(msg('other'), clock.now());
  const task = store.startMoveTask(ACCOUNT, dlq.arn, arnOf(src), undefined, REGION);
  assert.equal(store.stepMoveTask(task, 10), 1);
  store.movedAway(relays[0] ?? assert.fail(), 'unknown');

  readBack(store, dlq, [serializeMoveTask(task)]);
  const resumed = store.moveTasks.list(dlq.arn)[0] ?? assert.fail();
  assert.equal(store.stepMoveTask(resumed, 10), 1);
  assert.deepEqual(
    relays.map((r) => r.redriven.body),
    ['other', 'other'],
    "the task's own relay sent again; the dead letter not sent here",
  );
  assert.equal(resumed.awaiting, 2, 'its relay, and the dead letter it waits for');
  assert.equal(resumed.status, 'RUNNING');
});

void test('Given a move task whose relayed message a consumer of its source received after the hold, when its shard is read back, then the task does not wait for that message, as the task that ran before would not', () => {
  const { store, clock, dlq, src, relays } = dlqWithRemoteSource();
  dlq.sendMessage(msg('m1'), clock.now());
  const task = store.startMoveTask(ACCOUNT, dlq.arn, arnOf(src), undefined, REGION);
  assert.equal(store.stepMoveTask(task, 10), 1);
  store.movedAway(relays[0] ?? assert.fail(), 'unknown');
  clock.advance(TRANSFER_HOLD_MS);
  assert.equal(dlq.receive(1, 30_000, clock.now()).length, 1, 'back in sight, and received');

  readBack(store, dlq, [serializeMoveTask(task)]);
  const resumed = store.moveTasks.list(dlq.arn)[0] ?? assert.fail();
  assert.equal(store.stepMoveTask(resumed, 10), 0);
  assert.equal(resumed.awaiting, 0, 'a receive is no hold');
  assert.equal(resumed.status, 'COMPLETED', 'nothing in sight and nothing held');
});

void test('Given a held message, then it is written as held and relayed; once relayed, a later dead-letter move to a queue held here goes by the mark too, and without anyone to relay it moves as ever', () => {
  const { store, clock, src, a, b, far } = withRemoteDlq();
  const away: { arn: string; id: string }[] = [];
  store.onDeadLetterAway((_q, m, t) => away.push({ arn: t.arn, id: m.id }));
  const puts: { state: string; relayed: boolean }[] = [];
  store.onChange((e) => {
    if (e.type === 'message-put') puts.push({ state: e.message.state, relayed: e.message.relayed });
  });
  const sent = src.sendMessage(msg('poison'), clock.now()).message ?? assert.fail();
  for (let i = 0; i < 3; i++) src.receive(1, undefined, clock.now());
  puts.length = 0;
  src.receive(1, undefined, clock.now());
  assert.deepEqual(puts, [{ state: 'inflight', relayed: true }], 'the hold is written, marked relayed');

  // The dead-letter queue comes to this process (its shard taken) before the answer did.
  clock.advance(TRANSFER_HOLD_MS);
  store.catalog.removeRemote(ACCOUNT, REGION, far);
  store.setOwnedShards([a, b]);
  store.shardLoaded(b);
  const dlq = store.create(id(far), {}, {}).queue;
  away.length = 0;
  assert.deepEqual(src.receive(1, undefined, clock.now()), []);
  assert.deepEqual(away, [{ arn: dlq.arn, id: sent.id }], 'sent by way of the mark, not moved');
  assert.equal(dlq.size, 0);

  // A store nobody relays for (one process): the same message moves as ever.
  const plain = new QueueStore(new ManualClock(), { deletedRecentlyMs: 0 });
  const pdlq = plain.create(id('plain-dlq'), {}, {}).queue;
  const psrc = plain.create(
    id('plain-src'),
    {
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: pdlq.arn, maxReceiveCount: 1 }),
      VisibilityTimeout: '0',
    },
    {},
  ).queue;
  const m = psrc.sendMessage(msg('p'), plain.clock.now()).message ?? assert.fail();
  psrc.receive(1, undefined, plain.clock.now());
  m.relayed = true;
  assert.deepEqual(psrc.receive(1, undefined, plain.clock.now()), []);
  assert.equal(pdlq.size, 1);
});

void test('Given a move task whose message was relayed before, when its destination is a queue held here, then it goes by the mark (relayed to that queue) rather than moved', () => {
  const { store, clock, dlq, relays } = dlqWithRemoteSource();
  const here = store.create(id(nameIn(dlq.shard, 'here')), {}, {}).queue;
  const fresh = dlq.sendMessage(msg('fresh'), clock.now()).message ?? assert.fail();
  const again = dlq.sendMessage(msg('again'), clock.now()).message ?? assert.fail();
  again.relayed = true;
  const task = store.startMoveTask(ACCOUNT, dlq.arn, here.arn, undefined, REGION);
  assert.equal(store.stepMoveTask(task, 10), 2);
  assert.equal(here.size, 1, 'the fresh one moved at once');
  assert.equal(fresh.state, 'deleted');
  assert.deepEqual(
    relays.map((r) => [r.message, r.target.uid, r.redriven.id]),
    [[again, here.uid, redriveId(again.id, here.uid)]],
  );
  store.movedAway(relays[0] ?? assert.fail(), 'arrived');
  assert.equal(task.status, 'COMPLETED');
  assert.equal(task.moved, 2);
});

void test('Given a driver running a task with no rate whose only message is on its way to another owner, then it steps every 50 ms while the answer is due, not in a busy loop, and the answer completes the task', async (t) => {
  mock.timers.enable({ apis: ['setTimeout'] });
  t.after(() => mock.timers.reset());
  const { store, clock, dlq, src, relays } = dlqWithRemoteSource();
  dlq.sendMessage(msg('m'), clock.now());
  const steps = countSteps(store);
  const runner = new MoveTaskRunner(store, clock);
  const task = store.startMoveTask(ACCOUNT, dlq.arn, arnOf(src), undefined, REGION);
  runner.start(task);
  await run200ms(clock);
  assert.equal(relays.length, 1);
  assert.ok(steps() >= 3 && steps() <= 6, `${steps()} steps in 200 ms`);
  store.movedAway(relays[0] ?? assert.fail(), 'arrived');
  assert.equal(task.status, 'COMPLETED');
  clock.advance(50);
  mock.timers.tick(50);
  assert.equal(runner.size, 0);
  runner.close();
});
