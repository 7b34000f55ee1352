import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ManualClock } from '../../src/core/clock.js';
import { Message } from '../../src/core/message.js';
import type { Queue } from '../../src/core/queue.js';
import { QueueStore } from '../../src/core/store.js';
import { MoveTask } from '../../src/core/movetasks.js';
import {
  CodecError,
  deserializeAttempt,
  deserializeCatalogEntry,
  deserializeDedup,
  deserializeMessage,
  deserializeMoveTask,
  deserializeQueue,
  deserializeTenant,
  serializeAttempt,
  serializeCatalogEntry,
  serializeDedup,
  serializeMessage,
  serializeMoveTask,
  serializeQueue,
} from '../../src/persistence/codec.js';
import { inGroup, msg, sendOne } from '../support/queue.js';

/**
 * The guard that keeps persistence complete: every own field of Message and Queue is either
 * round-tripped by codec.ts or listed here as structure the loader rebuilds. A field added to the
 * core (FIFO group state, dedup records, DLQ counters...) fails these tests until it is persisted
 * in codec.ts, or listed below with the reason it need not be.
 */
const MESSAGE_STRUCTURE = new Set([
  // Intrusive links and the heap position: rebuilt by Queue.restoreMessage.
  'prev',
  'next',
  'vprev',
  'vnext',
  'gprev',
  'gnext',
  'heapIndex',
  // Its budget cost: computed again by Queue.restoreMessage (budget.ts).
  'cost',
]);
const MESSAGE_PERSISTED = [
  'id',
  'seq',
  'sentAt',
  'state',
  'heapKey',
  'receiveCount',
  'firstReceiveAt',
  'lastReceiveAt',
  'receiptNonce',
  'visibilityChanged',
  'relayed',
  'holdUntil',
  'body',
  'md5OfBody',
  'attributes',
  'md5OfAttributes',
  'systemAttributes',
  'md5OfSystemAttributes',
  'senderId',
  'groupId',
  'deduplicationId',
  'sequenceNumber',
  'deadLetterSourceArn',
];

const QUEUE_STRUCTURE = new Set([
  // The store's listener and queue lookup: a restored queue is bound to its new store's.
  'listener',
  'queueByArn',
  'remoteByArn',
  // shardOf(accountId, region, name): computed again from the persisted identity.
  'shard',
  // Set only while its shard is dropped to be loaded again; never on a queue that is stored.
  'evicted',
  // Message structures (lists.ts and heaps), filled by the loader through restoreMessage. Visible
  // messages whose timeout passed are restored into the visible list, which is in send order;
  // messages out of sentAt order (dead letters) and FIFO groups are rebuilt the same way.
  'received',
  'bytes',
  'sent',
  'visible',
  'inflight',
  'delayed',
  // FIFO state (fifo-state.ts): its groups rebuilt by restoreMessage; deduplication and
  // ReceiveRequestAttemptId records in their own hashes (d:, a:), restored by load-records.ts and
  // round-tripped by the record tests below; the last SequenceNumber and a pending
  // DeduplicationScope change in the queue record, round-tripped by the FIFO tests below.
  'groups',
  'fifoState',
  // The FIFO receive's way to this queue's messages (fifo-receive.ts), bound to the queue.
  'receiveHost',
  // Stored queues are never deleted ones.
  'deleted',
  // A metrics counter since this process loaded the queue, not state.
  'deadLettered',
]);
const QUEUE_PERSISTED = [
  'accountId',
  'region',
  'name',
  'uid',
  'attributes',
  'tags',
  'createdAt',
  'lastModifiedAt',
  'lastPurgeAt',
  'nextSeq',
  // Derived from the name and the attributes, compared to be sure they come out the same.
  'arn',
  'fifo',
  'visibilityTimeoutMs',
  'delayMs',
  'retentionMs',
  'maxMessageSize',
  'receiveWaitSeconds',
  'redrive',
  'contentBasedDeduplication',
  'deduplicationScope',
];

/** A message with every field set to something other than its default. */
function fullMessage(body: string): Message {
  const m = new Message(
    {
      id: '5f0c7c7e-2b1a-4f8e-9a51-0c1d2e3f4a5b',
      body,
      md5OfBody: '5d41402abc4b2a76b9719d911017c592',
      attributes: {
        s: { DataType: 'String', StringValue: 'v\u001fwith a unit separator' },
        n: { DataType: 'Number.int', StringValue: '42' },
        b: { DataType: 'Binary', BinaryValue: 'AAEC' },
      },
      md5OfAttributes: '0a1b2c3d4e5f60718293a4b5c6d7e8f9',
      systemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: 'Root=1-abc' } },
      md5OfSystemAttributes: 'f9e8d7c6b5a4938271605f4e3d2c1b0a',
      senderId: 'AIDAEXAMPLE',
      groupId: 'group-1',
      deduplicationId: '"starts with a quote',
    },
    123_456,
    1_767_225_600_123,
  );
  m.state = 'inflight';
  m.heapKey = 1_767_225_630_123;
  m.receiveCount = 3;
  m.firstReceiveAt = 1_767_225_601_000;
  m.lastReceiveAt = 1_767_225_620_000;
  m.receiptNonce = 'a1b2c3d41f';
  m.visibilityChanged = true;
  m.sequenceNumber = '17672256001230000001';
  m.deadLetterSourceArn = 'arn:aws:sqs:eu-west-1:123456789012:orders';
  m.relayed = true;
  m.holdUntil = m.heapKey;
  m.heapIndex = 7;
  return m;
}

const blank = new Message({ id: '', body: '', md5OfBody: '', senderId: '' }, 0, 0);

function field(o: object, k: string): unknown {
  return (o as Record<string, unknown>)[k];
}

/** The fields of those records that a Message shows under other names. */
const SHOWN_AS: Readonly<Record<string, readonly string[]>> = { relay: ['relayed', 'holdUntil'] };

/**
 * A Message's fields: its own, and those of the records it keeps the rarer ones in (receive
 * bookkeeping, FIFO and attribute fields), which it shows under the same names or SHOWN_AS.
 */
function messageFields(m: Message): string[] {
  const holders = ['delivery', 'extras'];
  const keys = Object.keys(m).filter((k) => !holders.includes(k));
  for (const h of holders) {
    const record = field(m, h);
    assert.ok(record !== null && typeof record === 'object', `fullMessage() leaves no ${h} record`);
    for (const k of Object.keys(record)) keys.push(...(SHOWN_AS[k] ?? [k]));
  }
  return keys;
}

/** Fails on a field codec.ts neither persists nor rebuilds, naming the functions to change. */
function assertFieldsKnown(
  type: 'Message' | 'Queue',
  fields: readonly string[],
  persisted: Iterable<string>,
  structure: Iterable<string>,
): void {
  assert.deepEqual(
    [...fields].sort(),
    [...persisted, ...structure].sort(),
    `${type} has a field codec.ts does not know: persist it in serialize${type}/deserialize${type}, then list it here`,
  );
}

test('Given a Message, then each of its fields is either persisted or rebuilt structure', () => {
  assertFieldsKnown('Message', messageFields(fullMessage('x')), MESSAGE_PERSISTED, MESSAGE_STRUCTURE);
});

test('Given the fixture message, then it sets every persisted field to a non-default value', () => {
  const m = fullMessage('x');
  for (const k of MESSAGE_PERSISTED) {
    assert.notDeepEqual(field(m, k), field(blank, k), `fullMessage() leaves ${k} at its default: set it`);
  }
});

test('Given a message with every field set, when serialized and parsed, then every persisted field is equal', () => {
  for (const body of ['hello', '', 'line\nbreak \u001f US "quoted" {json} ✓ 𝄞', 'x'.repeat(300_000)]) {
    const m = fullMessage(body);
    const back = deserializeMessage(m.id, serializeMessage(m));
    for (const k of MESSAGE_PERSISTED) assert.deepEqual(field(back, k), field(m, k), `field ${k}`);
    // Structure starts empty: the queue links it in.
    assert.equal(back.heapIndex, -1);
    assert.equal(back.prev, null);
  }
});

test('Given a message without optional fields, when round-tripped, then they stay undefined and empty strings stay empty', () => {
  const m = new Message(msg('b', { id: 'i', groupId: '' }), 1, 2);
  const back = deserializeMessage('i', serializeMessage(m));
  assert.equal(back.attributes, undefined);
  assert.equal(back.systemAttributes, undefined);
  assert.equal(back.md5OfAttributes, undefined);
  assert.equal(back.deduplicationId, undefined);
  assert.equal(back.groupId, '');
  assert.equal(back.receiptNonce, '');
  assert.equal(back.state, 'visible');
});

test('Given a record of the version before visibilityChanged (18 header fields), when parsed, then the flag is false and every other field and the body are kept', () => {
  const m = fullMessage('body text');
  const rec = serializeMessage(m);
  const US = '\u001f';
  const parts = rec.split(US);
  assert.equal(parts[0], '21');
  // The header count, 18 fields, the body: drop the 19th to 21st fields and say 18.
  const older = ['18', ...parts.slice(1, 19), ...parts.slice(22)].join(US);
  const back = deserializeMessage(m.id, older);
  assert.equal(back.visibilityChanged, false);
  assert.equal(back.relayed, false);
  assert.equal(back.body, 'body text');
  assert.equal(back.deadLetterSourceArn, m.deadLetterSourceArn);
  assert.equal(back.receiptNonce, m.receiptNonce);
});

test('Given a record of the version before relayed (19 header fields), when parsed, then the flag is false and visibilityChanged and the body are kept', () => {
  const m = fullMessage('body text');
  const US = '\u001f';
  const parts = serializeMessage(m).split(US);
  const older = ['19', ...parts.slice(1, 20), ...parts.slice(22)].join(US);
  const back = deserializeMessage(m.id, older);
  assert.equal(back.relayed, false);
  assert.equal(back.holdUntil, 0);
  assert.equal(back.visibilityChanged, true);
  assert.equal(back.body, 'body text');
});

test('Given a record of the version before holdUntil (20 header fields), when parsed, then a relayed message in flight is taken as held until its deadline, and any other as not held', () => {
  const US = '\u001f';
  const older = (m: Message): string => {
    const parts = serializeMessage(m).split(US);
    return ['20', ...parts.slice(1, 21), ...parts.slice(22)].join(US);
  };
  const m = fullMessage('body text');
  m.holdUntil = 0;
  const back = deserializeMessage(m.id, older(m));
  assert.equal(back.relayed, true);
  assert.equal(back.holdUntil, m.heapKey, 'in flight and relayed: maybe held');
  assert.equal(back.body, 'body text');
  m.state = 'visible';
  assert.equal(deserializeMessage(m.id, older(m)).holdUntil, 0, 'in sight: not held');
  m.state = 'inflight';
  m.relayed = false;
  assert.equal(deserializeMessage(m.id, older(m)).holdUntil, 0, 'never relayed: not held');
});

test('Given a relayed message whose hold ended, when round-tripped, then it is relayed and not held', () => {
  const m = fullMessage('x');
  m.holdUntil = 0;
  const back = deserializeMessage(m.id, serializeMessage(m));
  assert.equal(back.relayed, true);
  assert.equal(back.holdUntil, 0);
});

test('Given a record with a header field this version does not know, when parsed, then it is skipped and the body kept', () => {
  const rec = serializeMessage(fullMessage('body text'));
  // Pretend a later version appended one more header field.
  const US = '\u001f';
  const parts = rec.split(US);
  const body = parts.pop() as string;
  parts[0] = String(Number(parts[0]) + 1);
  const newer = [...parts, 'future', body].join(US);
  const back = deserializeMessage('id', newer);
  assert.equal(back.body, 'body text');
  assert.equal(back.receiveCount, 3);
});

test('Given a damaged record, when parsed, then a CodecError names the message', () => {
  assert.throws(() => deserializeMessage('m-1', 'garbage'), CodecError);
  assert.throws(() => deserializeMessage('m-1', '16\u001fx\u001f'), /m-1/);
});

test('Given a queue, tenant or attributes record that is JSON but not an object, when parsed, then a CodecError that says so, not a TypeError', () => {
  const store = new QueueStore(new ManualClock(0));
  const codecError = (what: string) => (e: unknown) =>
    e instanceof CodecError && e.message === `${what}: not a JSON object`;
  for (const bad of ['null', '7', '[]', '"text"']) {
    assert.throws(() => deserializeQueue(bad, store), codecError('queue record'), bad);
    assert.throws(() => deserializeTenant(bad), codecError('tenant record'), bad);
  }
  const m = fullMessage('body');
  const rec = serializeMessage(m);
  const attributes = JSON.stringify(m.attributes);
  assert.ok(rec.includes(attributes));
  for (const bad of ['null', '7', '[]']) {
    assert.throws(
      () => deserializeMessage('m-1', rec.replace(attributes, bad)),
      codecError('message m-1: attributes'),
      bad,
    );
  }
});

function storeWithQueue(): { store: QueueStore; queue: Queue } {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const store = new QueueStore(clock);
  const { queue } = store.create(
    { accountId: '123456789012', region: 'eu-west-1', name: 'orders' },
    { VisibilityTimeout: '45', DelaySeconds: '3', MessageRetentionPeriod: '600', Policy: '{"a":1}' },
    { team: 'blue', 'cost:centre': '42' },
  );
  clock.advance(5000);
  queue.setAttributes({ ReceiveMessageWaitTimeSeconds: '7', MaximumMessageSize: '2048' }, clock.now());
  sendOne(queue, msg('a', { id: 'a' }), clock.now());
  sendOne(queue, msg('b', { id: 'b' }), clock.now());
  queue.purge(clock.now());
  return { store, queue };
}

test('Given a Queue, then each of its own fields is either persisted or rebuilt structure', () => {
  assertFieldsKnown('Queue', Object.keys(storeWithQueue().queue), QUEUE_PERSISTED, QUEUE_STRUCTURE);
});

test('Given a queue with attributes, tags, a purge and sent messages, when round-tripped, then every persisted field is equal', () => {
  const { queue } = storeWithQueue();
  const other = new QueueStore(new ManualClock());
  const back = deserializeQueue(serializeQueue(queue), other);
  for (const k of QUEUE_PERSISTED) assert.deepEqual(field(back, k), field(queue, k), `field ${k}`);
  assert.equal(back.nextSequence, 3);
  assert.equal(other.get('123456789012', 'orders'), undefined, 'not in the store until restored');
});

test('Given a never-purged queue, when round-tripped, then lastPurgeAt stays -Infinity', () => {
  const store = new QueueStore(new ManualClock());
  const { queue } = store.create({ accountId: '000000000000', region: 'us-east-1', name: 'q' }, {}, {});
  const back = deserializeQueue(serializeQueue(queue), store, 17);
  assert.equal(back.lastPurgeAt, Number.NEGATIVE_INFINITY);
  assert.equal(back.nextSequence, 17, 'the seq hash value raises the record value');
});

/** A FIFO queue whose DeduplicationScope was changed to messageGroup 10 s ago. */
function fifoScopeChanged(): { queue: Queue; clock: ManualClock; changedAt: number } {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const store = new QueueStore(clock);
  const { queue } = store.create(
    { accountId: '000000000000', region: 'us-east-1', name: 'q.fifo' },
    { FifoQueue: 'true' },
    {},
  );
  const changedAt = clock.now();
  queue.setAttributes(
    { DeduplicationScope: 'messageGroup', FifoThroughputLimit: 'perMessageGroupId' },
    changedAt,
  );
  clock.advance(10_000);
  return { queue, clock, changedAt };
}

/** Whether one deduplication id sent in two new groups is two messages (scope messageGroup). */
function dedupsByGroup(q: Queue, now: number): boolean {
  const id = `d-${now}`;
  const a = q.sendMessage(msg('a', { id: `a-${now}`, ...inGroup(`a${now}`, id) }), now);
  const b = q.sendMessage(msg('b', { id: `b-${now}`, ...inGroup(`b${now}`, id) }), now);
  return a.messageId !== b.messageId;
}

test('Given a FIFO queue restored 10 s after a DeduplicationScope change, when sent to, then the scope before the change applies until 60 s after it, the new one from then', () => {
  const { queue, clock, changedAt } = fifoScopeChanged();
  const back = deserializeQueue(serializeQueue(queue), new QueueStore(clock));
  assert.deepEqual(back.fifoState?.pendingScope, queue.fifoState?.pendingScope);
  assert.equal(back.attributes.DeduplicationScope, 'messageGroup', 'the attribute shows the change at once');
  assert.equal(dedupsByGroup(back, changedAt + 60_000 - 1), false, 'scope queue until 60 s after the change');
  assert.equal(dedupsByGroup(back, changedAt + 60_000), true, 'scope messageGroup from then');
});

test('Given a FIFO queue record written before pending scope changes were stored, when parsed, then it loads with the scope of its attributes in effect', () => {
  const { queue, clock } = fifoScopeChanged();
  const record = JSON.parse(serializeQueue(queue)) as Record<string, unknown>;
  assert.ok('dedupScope' in record, 'the record holds the pending change');
  delete record.dedupScope;
  const back = deserializeQueue(JSON.stringify(record), new QueueStore(clock));
  assert.equal(back.fifoState?.pendingScope, undefined);
  assert.equal(dedupsByGroup(back, clock.now()), true);
});

test('Given a queue record whose dedupScope is damaged, when parsed, then a CodecError names the queue', () => {
  const { queue, clock } = fifoScopeChanged();
  const record = JSON.parse(serializeQueue(queue)) as Record<string, unknown>;
  for (const bad of [
    { inEffect: 'all', changes: [] },
    { inEffect: 'queue', changes: [[1, 'x']] },
    { inEffect: 'queue' },
  ]) {
    const text = JSON.stringify({ ...record, dedupScope: bad });
    assert.throws(
      () => deserializeQueue(text, new QueueStore(clock)),
      (e: unknown) => e instanceof CodecError && e.message.startsWith('queue record q.fifo: dedupScope'),
      text,
    );
  }
});

test('Given received and never-received messages, when their queue is restored from its records, then the old receipt handles still delete and change visibility', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const store = new QueueStore(clock);
  const { queue } = store.create({ accountId: '000000000000', region: 'us-east-1', name: 'q' }, {}, {});
  for (const id of ['a', 'b', 'c']) sendOne(queue, msg(id, { id }), clock.now());
  const [a, b] = queue.receive(2, 30_000, clock.now());
  assert.ok(a !== undefined && b !== undefined);
  // b is visible again, received once: its handle must still delete it (AWS accepts older handles).
  queue.changeVisibility(queue.receiptHandle(b), 0, clock.now());
  const handles = { a: queue.receiptHandle(a), b: queue.receiptHandle(b) };
  const records = ['a', 'b', 'c'].map((id) => {
    const m = queue.peek(3).find((x) => x.id === id);
    assert.ok(m !== undefined, id);
    return serializeMessage(m);
  });

  const other = new QueueStore(clock);
  const back = deserializeQueue(serializeQueue(queue), other);
  const restored = ['a', 'b', 'c'].map((id, i) => deserializeMessage(id, records[i] as string));
  restored.sort((x, y) => x.seq - y.seq);
  for (const m of restored) assert.equal(back.restoreMessage(m), true);
  other.restore(back);

  assert.equal(back.size, 3);
  back.changeVisibility(handles.a, 60_000, clock.now());
  back.deleteMessage(handles.a, clock.now());
  back.deleteMessage(handles.b, clock.now());
  assert.equal(back.size, 1);
  assert.deepEqual(
    back.receive(10, 30_000, clock.now()).map((m) => m.id),
    ['c'],
  );
});

test('Given a queue with received messages, when it is purged, then the old handles delete nothing and no longer change visibility', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const store = new QueueStore(clock);
  const { queue } = store.create({ accountId: '000000000000', region: 'us-east-1', name: 'q' }, {}, {});
  sendOne(queue, msg('a', { id: 'a' }), clock.now());
  sendOne(queue, msg('b', { id: 'b' }), clock.now());
  const [a] = queue.receive(1, 30_000, clock.now());
  assert.ok(a !== undefined);
  const handle = queue.receiptHandle(a);
  queue.purge(clock.now());
  assert.equal(queue.size, 0);
  queue.deleteMessage(handle, clock.now());
  assert.throws(() => queue.changeVisibility(handle, 0, clock.now()), /Message does not exist/);
  sendOne(queue, msg('c', { id: 'c' }), clock.now());
  assert.equal(queue.size, 1);
});

// ---- FIFO state and move tasks --------------------------------------------------------------

test('Given a record written before FIFO fields existed (16 header fields), when parsed, then sequenceNumber and deadLetterSourceArn are undefined', () => {
  const US = '\u001f';
  const parts = serializeMessage(fullMessage('old')).split(US);
  const body = parts.pop() as string;
  const old = ['16', ...parts.slice(1, 17), body].join(US);
  const back = deserializeMessage('id', old);
  assert.equal(back.body, 'old');
  assert.equal(back.deduplicationId, '"starts with a quote');
  assert.equal(back.sequenceNumber, undefined);
  assert.equal(back.deadLetterSourceArn, undefined);
});

test('Given a FIFO queue that gave sequence numbers, when its record is round-tripped, then the next number is above the last one', () => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const store = new QueueStore(clock);
  const { queue } = store.create(
    { accountId: '000000000000', region: 'us-east-1', name: 'q.fifo' },
    { FifoQueue: 'true' },
    {},
  );
  const sent = sendOne(queue, msg('a', { id: 'a', ...inGroup('g', 'd') }), clock.now());
  const back = deserializeQueue(serializeQueue(queue), new QueueStore(clock));
  assert.equal(back.fifoState?.lastSequenceNumber, sent.sequenceNumber);
});

test('Given a deduplication record, when serialized and parsed, then it is equal', () => {
  const r = { messageId: 'm-1', sequenceNumber: '17672256000000000000', expiresAt: 1_767_225_900_000 };
  assert.deepEqual(deserializeDedup('q:d', serializeDedup(r)), r);
  assert.throws(() => deserializeDedup('q:d', '{"x":1}'), CodecError);
});

test('Given a receive-attempt record, when serialized and parsed, then it is equal', () => {
  const r = {
    expiresAt: 1_767_225_900_000,
    entries: [
      { id: 'm-1', receiveCount: 1, nonce: 'ab1', visibleAt: 1_767_225_630_000 },
      { id: 'm-2', receiveCount: 3, nonce: 'ab2', visibleAt: 1_767_225_630_000 },
    ],
  };
  assert.deepEqual(deserializeAttempt('attempt-1', serializeAttempt(r)), r);
  assert.throws(() => deserializeAttempt('attempt-1', 'not json'), CodecError);
});

test('Given move tasks with and without their optional fields, when serialized and parsed, then every field is equal', () => {
  const full = new MoveTask({
    taskId: 't-1',
    sourceArn: 'arn:aws:sqs:us-east-1:000000000000:dlq',
    destinationArn: 'arn:aws:sqs:us-east-1:000000000000:dest',
    maxNumberOfMessagesPerSecond: 7,
    startedAt: 1_767_225_600_000,
    toMove: 10,
    status: 'FAILED',
    moved: 3,
    failureReason: 'AWS.SimpleQueueService.NonExistentQueue',
  });
  const bare = new MoveTask({
    taskId: 't-2',
    sourceArn: 'arn:aws:sqs:us-east-1:000000000000:dlq',
    destinationArn: undefined,
    maxNumberOfMessagesPerSecond: undefined,
    startedAt: 1,
    toMove: 0,
    status: 'RUNNING',
    moved: 0,
    failureReason: undefined,
  });
  for (const t of [full, bare]) assert.deepEqual({ ...deserializeMoveTask(serializeMoveTask(t)) }, { ...t });
  assert.throws(() => deserializeMoveTask('{"taskId":"x","status":"DONE"}'), CodecError);
});

test('Given a queue with a RedriveAllowPolicy and a RedrivePolicy, when its catalog record is written and read, then both come back; a record from before the allow policy reads as none', () => {
  const store = new QueueStore(new ManualClock(), { deletedRecentlyMs: 0 });
  const id = { accountId: '000000000000', region: 'us-east-1' };
  const dlq = store.create({ ...id, name: 'cat-dlq' }, {}, {}).queue;
  const allow = { redrivePermission: 'byQueue', sourceQueueArns: [dlq.arn] };
  const q = store.create(
    { ...id, name: 'cat-src' },
    {
      RedriveAllowPolicy: JSON.stringify(allow),
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 2 }),
    },
    {},
  ).queue;
  assert.deepEqual(deserializeCatalogEntry(q.name, serializeCatalogEntry(q)), {
    shard: q.shard,
    uid: q.uid,
    fifo: false,
    deadLetterTargetArn: dlq.arn,
    redriveAllowPolicy: JSON.stringify(allow),
  });
  assert.deepEqual(deserializeCatalogEntry(dlq.name, serializeCatalogEntry(dlq)), {
    shard: dlq.shard,
    uid: dlq.uid,
    fifo: false,
  });
  const older = JSON.stringify({ v: 1, shard: 7, uid: 'u', fifo: true, deadLetterTargetArn: dlq.arn });
  assert.deepEqual(deserializeCatalogEntry('old.fifo', older), {
    shard: 7,
    uid: 'u',
    fifo: true,
    deadLetterTargetArn: dlq.arn,
  });
  assert.throws(
    () =>
      deserializeCatalogEntry(
        'bad',
        JSON.stringify({ v: 1, shard: 7, uid: 'u', fifo: true, redriveAllowPolicy: 3 }),
      ),
    CodecError,
  );
});
