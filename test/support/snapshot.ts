/**
 * A store's state as plain data, for comparing the store in memory with one loaded from Redis
 * (deepEqual). Everything a client could observe and everything the writer promises to keep:
 * queues with attributes, tags and counters, every message with its state, deadline, receive
 * bookkeeping and FIFO fields, FIFO deduplication and receive-attempt records, move tasks and
 * tenants. Not in it: the order of a standard queue's visible messages, which a restart changes
 * on purpose (docs/persistence.md#loading says what a restart changes), and the 60 s during which a
 * deleted queue's name stays taken (not stored either).
 *
 * Taking a snapshot applies every deadline up to the store's clock first (Queue.tick), as any
 * operation would, so two stores at the same moment compare equal whatever they last did.
 */
import type { AttemptRecord, DedupRecord } from '../../src/core/fifo.js';
import type { Message } from '../../src/core/message.js';
import type { MoveTask } from '../../src/core/movetasks.js';
import type { Queue } from '../../src/core/queue.js';
import type { QueueStore } from '../../src/core/store.js';

export interface SnapshotOptions {
  /**
   * Leave out receipt nonces (and the nonces in receive-attempt records): for comparing two
   * stores that were each given the same receive, which draws a new random nonce in each.
   */
  readonly ignoreNonces?: boolean;
}

export function snapshot(store: QueueStore, opts: SnapshotOptions = {}): unknown {
  const now = store.clock.now();
  const queues = [...store.all()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  for (const q of queues) q.tick(now);
  return {
    queues: queues.map((q) => queueFields(q, now, opts)),
    moveTasks: store.moveTasks
      .all()
      .map(taskFields)
      .sort((a, b) =>
        a.sourceArn !== b.sourceArn
          ? a.sourceArn < b.sourceArn
            ? -1
            : 1
          : a.startedAt - b.startedAt || (a.taskId < b.taskId ? -1 : 1),
      ),
    tenants: store.tenants.list().map((t) => ({
      name: t.name,
      accountId: t.accountId,
      createdAt: t.createdAt,
      keys: t.keys.map((k) => ({ ...k })),
    })),
  };
}

function queueFields(q: Queue, now: number, opts: SnapshotOptions): Record<string, unknown> {
  const counters = { nextSequence: q.nextSequence, lastSequenceNumber: q.fifoState?.lastSequenceNumber };
  return {
    key: q.key,
    uid: q.uid,
    arn: q.arn,
    fifo: q.fifo,
    attributes: { ...q.attributes },
    tags: { ...q.tags },
    createdAt: q.createdAt,
    lastModifiedAt: q.lastModifiedAt,
    lastPurgeAt: q.lastPurgeAt,
    ...counters,
    // Cached from the attributes; a loaded queue must derive the same.
    visibilityTimeoutMs: q.visibilityTimeoutMs,
    delayMs: q.delayMs,
    retentionMs: q.retentionMs,
    redrive: q.redrive,
    contentBasedDeduplication: q.contentBasedDeduplication,
    deduplicationScope: q.deduplicationScope,
    counts: q.counts(now),
    size: q.size,
    groupCount: q.fifoState?.groupCount ?? 0,
    pendingScope: q.fifoState?.pendingScope,
    messages: [...q.allMessages()].map((m) => messageFields(m, opts)),
    dedup: sortedRecords(q.fifoState?.dedupRecords() ?? [], dedupFields),
    attempts: sortedRecords(q.fifoState?.attemptRecords() ?? [], (r) => attemptFields(r, opts)),
  };
}

export function messageFields(m: Message, opts: SnapshotOptions = {}): Record<string, unknown> {
  return {
    id: m.id,
    seq: m.seq,
    sentAt: m.sentAt,
    state: m.state,
    heapKey: m.heapKey,
    receiveCount: m.receiveCount,
    firstReceiveAt: m.firstReceiveAt,
    lastReceiveAt: m.lastReceiveAt,
    receiptNonce: opts.ignoreNonces === true ? '-' : m.receiptNonce,
    visibilityChanged: m.visibilityChanged,
    body: m.body,
    md5OfBody: m.md5OfBody,
    attributes: m.attributes,
    md5OfAttributes: m.md5OfAttributes,
    systemAttributes: m.systemAttributes,
    md5OfSystemAttributes: m.md5OfSystemAttributes,
    senderId: m.senderId,
    groupId: m.groupId,
    deduplicationId: m.deduplicationId,
    sequenceNumber: m.sequenceNumber,
    deadLetterSourceArn: m.deadLetterSourceArn,
  };
}

/** By key: records of one expiry moment may come back from Redis in another order, which nothing reads. */
function sortedRecords<R>(records: Iterable<[string, R]>, fields: (r: R) => unknown): unknown[] {
  return [...records]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, r]) => ({ key, record: fields(r) }));
}

function dedupFields(r: DedupRecord): unknown {
  return { messageId: r.messageId, sequenceNumber: r.sequenceNumber, expiresAt: r.expiresAt };
}

function attemptFields(r: AttemptRecord, opts: SnapshotOptions): unknown {
  return {
    expiresAt: r.expiresAt,
    entries: r.entries.map((e) => ({
      id: e.id,
      receiveCount: e.receiveCount,
      nonce: opts.ignoreNonces === true ? '-' : e.nonce,
      visibleAt: e.visibleAt,
    })),
  };
}

function taskFields(t: MoveTask): {
  taskId: string;
  sourceArn: string;
  startedAt: number;
  [k: string]: unknown;
} {
  return {
    taskId: t.taskId,
    sourceArn: t.sourceArn,
    destinationArn: t.destinationArn,
    maxNumberOfMessagesPerSecond: t.maxNumberOfMessagesPerSecond,
    startedAt: t.startedAt,
    toMove: t.toMove,
    status: t.status,
    moved: t.moved,
    failureReason: t.failureReason,
  };
}
