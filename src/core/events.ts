import type { AttemptRecord, DedupRecord } from './fifo.js';
import type { Message, NewMessage } from './message.js';
import type { MoveTask } from './movetasks.js';
import type { Queue } from './queue.js';
import type { Tenant } from './tenants.js';

/**
 * What changed, for whoever keeps a copy of the state (the Redis writer). The core emits these
 * synchronously as it changes; a consumer reads the current state of the named queue or message
 * when it writes, so several events for one object in one tick collapse into one write.
 */
export type ChangeEvent =
  /** Created, or its attributes or tags changed. */
  | { readonly type: 'queue-put'; readonly queue: Queue }
  | { readonly type: 'queue-delete'; readonly queue: Queue }
  /** Every message of the queue is gone at once. */
  | { readonly type: 'queue-purge'; readonly queue: Queue }
  /** Sent, received, or its visibility changed. */
  | { readonly type: 'message-put'; readonly queue: Queue; readonly message: Message }
  /** Deleted by a client, expired, or moved away. */
  | { readonly type: 'message-delete'; readonly queue: Queue; readonly message: Message }
  /**
   * A message left `from` for `queue` (dead-lettered on receive, or a move task's step), after
   * that move's message-delete and message-put: `message` is what `queue` holds now. Storage
   * that keeps the two queues apart (two shards) writes both halves as one transfer.
   */
  | { readonly type: 'message-moved'; readonly from: Queue; readonly queue: Queue; readonly message: Message }
  /** FIFO: a deduplication id was recorded; it is dropped at `record.expiresAt` (dedup-delete). */
  | { readonly type: 'dedup-put'; readonly queue: Queue; readonly key: string; readonly record: DedupRecord }
  | { readonly type: 'dedup-delete'; readonly queue: Queue; readonly key: string }
  /** FIFO: what a ReceiveMessage with a ReceiveRequestAttemptId returned (a retry returns it again). */
  | {
      readonly type: 'attempt-put';
      readonly queue: Queue;
      readonly attemptId: string;
      readonly record: AttemptRecord;
    }
  | { readonly type: 'attempt-delete'; readonly queue: Queue; readonly attemptId: string }
  /** A message move task started, made progress or changed status. */
  | { readonly type: 'move-task-put'; readonly task: MoveTask }
  /** A finished move task fell out of its source's last ten. */
  | { readonly type: 'move-task-delete'; readonly task: MoveTask }
  /** A tenant was created or its keys changed (tenants.ts). */
  | { readonly type: 'tenant-put'; readonly tenant: Tenant }
  | { readonly type: 'tenant-delete'; readonly tenant: Tenant };

export interface CoreListener {
  /** Called on every change, when someone records them. */
  change?(event: ChangeEvent): void;
  /**
   * Messages became receivable in this queue now (a send, a visibility set to 0, a deadline
   * passed); also called once when the queue is deleted, so whoever waits on it can be answered.
   */
  available?(queue: Queue): void;
  /**
   * A delayed or in-flight message now holds the queue's earliest deadline, so
   * `nextTransitionAt()` may have moved earlier (a delayed send, a receive, a visibility change;
   * on a FIFO queue also a first message or a new MessageRetentionPeriod).
   */
  deadline?(queue: Queue): void;
  /**
   * The bytes the queue's messages count against the memory budget changed by `delta`
   * (budget.ts): a message was linked in (sent, moved in, restored) or out (deleted, expired,
   * moved away, purged).
   */
  usage?(queue: Queue, delta: number): void;
  /**
   * A message reached its maxReceiveCount and its dead-letter queue is held by another process
   * (a remote catalog entry): the message is held out of sight here until that process took it
   * (Queue.completeTransfer) or the hold ends and a later receive tries again.
   */
  deadLetterAway?(queue: Queue, message: Message, target: RemoteQueue): void;
}

/**
 * A move task's message whose destination another process holds: held out of sight in `source`
 * (Queue.holdForMove) until that process has `message` under the id `redriven.id` (then
 * QueueStore.movedAway) or the hold ends and a later step takes it again.
 */
export interface MoveAway {
  readonly task: MoveTask;
  readonly source: Queue;
  readonly message: Message;
  readonly target: RemoteQueue;
  /** The message the destination is to hold: a new one, as a move task's step sends (movetasks.ts). */
  readonly redriven: NewMessage;
}

/** A queue held by another process, as the catalog names it (catalog.ts, remote entries). */
export interface RemoteQueue {
  readonly arn: string;
  readonly uid: string;
  readonly shard: number;
  /** FIFO: a dead-letter queue or a move's destination must be of its source's kind. */
  readonly fifo: boolean;
}
