import { shardOf } from '../shard/hash.js';
import { randomBytes } from 'node:crypto';
import { resolveAttributes, sharedDefaults, withDefaults } from './attributes.js';
import { messageCost } from './budget.js';
import { CoreError } from './errors.js';
import type { CoreListener, RemoteQueue } from './events.js';
import type { DedupRecord, DeduplicationScope, Group, Groups } from './fifo.js';
import { receiveFifo, type ReceiveHost } from './fifo-receive.js';
import { FifoState } from './fifo-state.js';
import { IndexedHeap } from './heap.js';
import { SentList, VisibleList } from './lists.js';
import {
  DEDUP_WINDOW_MS,
  DEFAULT_RETENTION_SECONDS,
  DEFAULT_VISIBILITY_TIMEOUT_SECONDS,
  MAX_INFLIGHT,
  MAX_MESSAGE_SIZE,
  MAX_VISIBILITY_TIMEOUT_SECONDS,
  PURGE_INTERVAL_MS,
} from './limits.js';
import { Message, type NewMessage } from './message.js';
import { expiredHandle, nonce, parseReceiptHandle, receiptHandle } from './receipts.js';
import { parseQueueArn, parseRedrivePolicy, type RedrivePolicy } from './redrive.js';
import { ownString } from './strings.js';

/** A message's visibility can be extended to at most 12 hours after it was received. */
const MAX_VISIBILITY_MS = MAX_VISIBILITY_TIMEOUT_SECONDS * 1000;

export interface QueueCounts {
  readonly visible: number;
  readonly inflight: number;
  readonly delayed: number;
}

/** What a send comes to: a new message, or (FIFO) the one it duplicates within the window. */
export interface SendResult {
  readonly messageId: string;
  /** FIFO queues only. */
  readonly sequenceNumber: string | undefined;
  /** The stored message; undefined when the send was a duplicate and stored nothing. */
  readonly message: Message | undefined;
}

export interface QueueIdentity {
  readonly accountId: string;
  readonly region: string;
  readonly name: string;
}

/**
 * One queue's messages and the rules that move them between states.
 *
 * Nothing here runs by itself: there are no timers. Every operation first calls `tick(now)`,
 * which moves delayed and in-flight messages whose moment has come to the visible list and
 * drops messages past their retention period. `nextTransitionAt()` tells the long-poll
 * scheduler when the next such moment is, so it can wake waiters without polling.
 *
 * Every operation is O(1) or O(log n) in the queue's depth: visible messages are an intrusive
 * list (lists.ts), delayed and in-flight ones indexed heaps, and a receipt handle names its
 * message id (receipts.ts), so finding it is one Map lookup. A FIFO queue's groups and records
 * are its fifoState (fifo-state.ts); its receives, fifo-receive.ts.
 */
export class Queue {
  readonly accountId: string;
  readonly region: string;
  readonly name: string;
  readonly arn: string;
  readonly fifo: boolean;
  /** Differs between a queue and a later queue of the same name, so old handles stay invalid. */
  readonly uid: string;
  /** Its shard (src/shard/hash.ts): where its data lives in Redis, and which lease it is written under. */
  readonly shard: number;
  /** Shared by every queue that sets none of its own (withDefaults); replaced, never changed in place. */
  attributes: Readonly<Record<string, string>>;
  /** Replaced, never changed in place, so queues without tags can share one empty object. */
  tags: Readonly<Record<string, string>>;
  readonly createdAt: number;
  lastModifiedAt: number;
  lastPurgeAt = Number.NEGATIVE_INFINITY;
  deleted = false;
  /**
   * Dropped with its shard, to be loaded again from storage (QueueStore.evictShard): `deleted`
   * too, for everything in core, but storage must not take this object's last events for a delete.
   */
  evicted = false;
  /** Messages moved to the dead-letter queue since this process loaded the queue (metrics). */
  deadLettered = 0;

  // Cached numeric attributes, read on every send and receive.
  visibilityTimeoutMs = DEFAULT_VISIBILITY_TIMEOUT_SECONDS * 1000;
  delayMs = 0;
  retentionMs = DEFAULT_RETENTION_SECONDS * 1000;
  maxMessageSize = MAX_MESSAGE_SIZE;
  receiveWaitSeconds = 0;
  /** From RedrivePolicy: where messages go after maxReceiveCount receives; null when not set. */
  redrive: RedrivePolicy | null = null;
  contentBasedDeduplication = false;
  /** The attribute; deduplication follows it 60 s behind (fifo.ts: DedupScope). */
  deduplicationScope: DeduplicationScope = 'queue';

  /**
   * By id, the messages received at least once: a receipt handle names one of them, and nothing
   * else looks a message up by id. Sends, by far the most frequent change, skip the index; a
   * queue with millions of unreceived messages keeps none of them here. Made on first use.
   */
  private received: Map<string, Message> | null = null;
  /** What its messages count against the memory budget (budget.ts). */
  bytes = 0;
  /** Messages held, in any state. */
  private readonly sent = new SentList();
  private readonly visible = new VisibleList();
  private readonly inflight = new IndexedHeap<Message>();
  private readonly delayed = new IndexedHeap<Message>();
  private nextSeq = 1;
  /** FIFO only (null otherwise): groups, deduplication and attempt records, sequence numbers. */
  readonly fifoState: FifoState | null;
  /** FIFO only: fifoState's groups. */
  private readonly groups: Groups | null;

  constructor(
    id: QueueIdentity,
    attributes: Record<string, string>,
    tags: Record<string, string>,
    now: number,
    private readonly listener: CoreListener,
    /**
     * The store's lookup of a queue by ARN, where a queue finds its dead-letter queue when a
     * message has been received maxReceiveCount times (the policy names it by ARN).
     */
    private readonly queueByArn: (arn: string) => Queue | undefined,
    uid?: string,
    /**
     * The store's lookup of a queue another process holds (many owners), by ARN: where a standard
     * queue's messages go when their dead-letter queue is not here. Absent: every queue is here.
     */
    private readonly remoteByArn?: (arn: string) => RemoteQueue | undefined,
  ) {
    this.accountId = id.accountId;
    this.region = id.region;
    this.name = id.name;
    this.arn = ownString(`arn:aws:sqs:${id.region}:${id.accountId}:${id.name}`);
    this.fifo = id.name.endsWith('.fifo');
    this.uid = uid ?? randomBytes(6).toString('hex');
    this.shard = shardOf(id.accountId, id.region, id.name);
    this.attributes = withDefaults(this.fifo, attributes);
    this.tags = Object.keys(tags).length === 0 ? NO_TAGS : { ...tags };
    this.createdAt = now;
    this.lastModifiedAt = now;
    this.cacheAttributes();
    this.fifoState = this.fifo ? new FifoState(this.deduplicationScope) : null;
    this.groups = this.fifoState?.groups ?? null;
  }

  get key(): string {
    return queueKey(this.accountId, this.name, this.region);
  }

  /**
   * Applies validated attributes (validateAttributes) with the rules that tie them together
   * (resolveAttributes: removals, one kind of SSE, high throughput). Checks that need other
   * queues (a RedrivePolicy's target) are the store's: QueueStore.setAttributes.
   */
  setAttributes(attributes: Readonly<Record<string, string>>, now: number): void {
    // Expiry is applied lazily: what the old MessageRetentionPeriod ended must be gone before a
    // longer one is set, or it would come back.
    this.tick(now);
    this.attributes = sharedDefaults(this.fifo, resolveAttributes(this.attributes, attributes));
    this.lastModifiedAt = now;
    this.cacheAttributes();
    this.fifoState?.setScope(this.deduplicationScope, now);
    this.listener.change?.({ type: 'queue-put', queue: this });
    // A shorter MessageRetentionPeriod brings a FIFO queue's retention deadline forward.
    if (this.groups !== null) this.listener.deadline?.(this);
  }

  setTags(tags: Readonly<Record<string, string>>): void {
    this.tags = { ...this.tags, ...tags };
    this.listener.change?.({ type: 'queue-put', queue: this });
  }

  removeTags(keys: readonly string[]): void {
    const rest = { ...this.tags };
    for (const k of keys) delete rest[k];
    this.tags = Object.keys(rest).length === 0 ? NO_TAGS : rest;
    this.listener.change?.({ type: 'queue-put', queue: this });
  }

  private cacheAttributes(): void {
    const a = this.attributes;
    this.visibilityTimeoutMs = Number(a.VisibilityTimeout ?? 30) * 1000;
    this.delayMs = Number(a.DelaySeconds ?? 0) * 1000;
    this.retentionMs = Number(a.MessageRetentionPeriod ?? 345_600) * 1000;
    this.maxMessageSize = Number(a.MaximumMessageSize ?? MAX_MESSAGE_SIZE);
    this.receiveWaitSeconds = Number(a.ReceiveMessageWaitTimeSeconds ?? 0);
    this.redrive = a.RedrivePolicy === undefined ? null : parseRedrivePolicy(a.RedrivePolicy);
    this.contentBasedDeduplication = a.ContentBasedDeduplication === 'true';
    this.deduplicationScope = a.DeduplicationScope === 'messageGroup' ? 'messageGroup' : 'queue';
  }

  // ---- messages -------------------------------------------------------------------------

  /**
   * Stores a message, or (FIFO) answers a send whose deduplication id was seen in the last 5
   * minutes with the message it duplicates, storing nothing. A FIFO message needs a group id,
   * and a deduplication id unless ContentBasedDeduplication is on (then the body's SHA-256 is
   * used); FIFO queues apply only the queue's delay (per-message delays are refused before).
   */
  sendMessage(m: NewMessage, now: number): SendResult {
    if (this.fifo) return this.sendFifo(m, now);
    const msg = new Message(m, this.nextSeq++, now);
    this.enqueue(msg, m.delaySeconds === undefined ? this.delayMs : m.delaySeconds * 1000, now);
    return { messageId: msg.id, sequenceNumber: undefined, message: msg };
  }

  private sendFifo(m: NewMessage, now: number): SendResult {
    const fifo = this.fifoState as FifoState;
    const dedupId = fifo.dedupIdOf(m, this.contentBasedDeduplication);
    this.expireFifoRecords(now);
    const { key, seen } = fifo.lookup(m.groupId as string, dedupId, now);
    if (seen !== undefined) {
      return { messageId: seen.messageId, sequenceNumber: seen.sequenceNumber, message: undefined };
    }
    const msg = new Message(
      dedupId === m.deduplicationId ? m : { ...m, deduplicationId: dedupId },
      this.nextSeq++,
      now,
    );
    msg.sequenceNumber = fifo.takeSequenceNumber(now);
    const record: DedupRecord = {
      messageId: msg.id,
      sequenceNumber: msg.sequenceNumber,
      expiresAt: now + DEDUP_WINDOW_MS,
    };
    // Kept for 5 minutes: not as a view into the request the ids came with.
    const ownKey = ownString(key);
    fifo.remember(ownKey, record);
    this.listener.change?.({ type: 'dedup-put', queue: this, key: ownKey, record });
    this.enqueue(msg, this.delayMs, now);
    return { messageId: msg.id, sequenceNumber: msg.sequenceNumber, message: msg };
  }

  /** Links a new message into the queue's structures, visible or delayed, and tells the listener. */
  private enqueue(msg: Message, delayMs: number, now: number): void {
    this.linkSent(msg);
    const g = this.groups?.append(msg);
    if (delayMs > 0) {
      msg.state = 'delayed';
      msg.heapKey = now + delayMs;
      this.schedule(this.delayed, msg);
    } else {
      this.visible.push(msg, false, now);
    }
    if (g !== undefined) this.groups?.refresh(g);
    this.listener.change?.({ type: 'message-put', queue: this, message: msg });
    if (msg.state === 'visible' && (g === undefined || g.heapIndex >= 0)) this.listener.available?.(this);
    // FIFO: the first message of an empty queue brings a retention deadline (nextTransitionAt),
    // which schedule() does not report when it comes before the message's delay ends.
    else if (g !== undefined && this.sent.head === msg) this.listener.deadline?.(this);
  }

  /**
   * Takes a message that reached its source's maxReceiveCount (dead-letter queue side): same
   * id, body, attributes and receive count, `deadLetterSourceArn` set, visible at once. A
   * standard queue keeps the original SentTimestamp, so retention still counts from the
   * original send; a FIFO queue starts it anew (AWS: the enqueue timestamp resets), gives a new
   * SequenceNumber and uses the message id as its deduplication id. The id cannot be held here
   * already: a message id lives in one queue at a time (dead-lettering moves, a redrive gives a new
   * id).
   */
  acceptDeadLetter(src: Message, sourceArn: string, now: number): Message {
    this.tick(now);
    const msg = new Message(
      {
        id: src.id,
        body: src.body,
        md5OfBody: src.md5OfBody,
        attributes: src.attributes,
        md5OfAttributes: src.md5OfAttributes,
        systemAttributes: src.systemAttributes,
        md5OfSystemAttributes: src.md5OfSystemAttributes,
        senderId: src.senderId,
        groupId: src.groupId,
        deduplicationId: this.fifo ? src.id : src.deduplicationId,
      },
      this.nextSeq++,
      this.fifo ? now : src.sentAt,
    );
    msg.receiveCount = src.receiveCount;
    msg.firstReceiveAt = src.firstReceiveAt;
    msg.lastReceiveAt = src.lastReceiveAt;
    msg.deadLetterSourceArn = sourceArn;
    if (this.fifoState !== null) msg.sequenceNumber = this.fifoState.takeSequenceNumber(now);
    this.enqueue(msg, 0, now);
    return msg;
  }

  /**
   * Takes up to `max` visible messages and hides them for `visibilityTimeoutMs` (the queue's
   * default when undefined). Each gets a new receipt handle.
   */
  receive(
    max: number,
    visibilityTimeoutMs: number | undefined,
    now: number,
    receiveRequestAttemptId?: string,
  ): Message[] {
    this.tick(now);
    if (this.fifoState !== null) {
      const vt = visibilityTimeoutMs ?? this.visibilityTimeoutMs;
      this.receiveHost ??= this.newReceiveHost();
      return receiveFifo(this.fifoState, this.receiveHost, max, vt, now, receiveRequestAttemptId);
    }
    const out: Message[] = [];
    if (this.visible.count === 0) return out;
    if (this.inflight.size >= MAX_INFLIGHT) {
      throw new CoreError('OverLimit', 'Too many messages in flight for this queue.');
    }
    const vt = visibilityTimeoutMs ?? this.visibilityTimeoutMs;
    for (let msg = this.visible.next(); out.length < max && msg !== null; msg = this.visible.next()) {
      const dlq = this.deadLetterTarget(msg);
      const away = this.relayTarget(msg, dlq);
      if (away !== undefined) {
        this.holdForTransfer(msg, away, now);
        continue;
      }
      if (dlq !== undefined) {
        this.moveToDeadLetter(msg, dlq, now);
        continue;
      }
      this.visible.unlink(msg);
      this.markReceived(msg, now);
      if (vt > 0) {
        msg.state = 'inflight';
        msg.heapKey = now + vt;
        this.schedule(this.inflight, msg);
      }
      this.listener.change?.({ type: 'message-put', queue: this, message: msg });
      out.push(msg);
    }
    // With a zero timeout the messages are visible again at once, behind the others; only after
    // the loop, so one call does not hand out the same message twice.
    if (vt === 0) for (const msg of out) this.visible.push(msg, false, now);
    return out;
  }

  /** What fifo-receive.ts does to this queue's messages; made at a FIFO queue's first receive. */
  private receiveHost: ReceiveHost | undefined;

  private newReceiveHost(): ReceiveHost {
    return {
      inflightCount: () => this.inflight.size,
      deadLettered: (m, now) => {
        const dlq = this.deadLetterTarget(m);
        const away = this.relayTarget(m, dlq);
        if (away !== undefined) {
          this.holdForTransfer(m, away, now);
          return 'held';
        }
        if (dlq === undefined) return false;
        this.moveToDeadLetter(m, dlq, now);
        return 'moved';
      },
      take: (m, vt, now) => {
        this.visible.unlink(m);
        this.markReceived(m, now);
        m.state = 'inflight';
        m.heapKey = now + vt;
        if (vt > 0) this.schedule(this.inflight, m);
        this.listener.change?.({ type: 'message-put', queue: this, message: m });
      },
      received: (id) => this.received?.get(id),
      returnToVisible: (m, atFront, now) => this.returnToVisible(m, atFront, now),
      restartVisibility: (m, vt, now) => {
        this.inflight.remove(m);
        const receivable = vt === 0 && this.returnToVisible(m, true, now);
        if (vt > 0) {
          m.heapKey = now + vt;
          this.schedule(this.inflight, m);
        }
        this.listener.change?.({ type: 'message-put', queue: this, message: m });
        return receivable;
      },
      attemptPut: (attemptId, record) =>
        this.listener.change?.({ type: 'attempt-put', queue: this, attemptId, record }),
      attemptDelete: (attemptId) =>
        this.listener.change?.({ type: 'attempt-delete', queue: this, attemptId }),
      available: () => this.listener.available?.(this),
    };
  }

  /**
   * The dead-letter queue a message goes to instead of this receive: when it has been received
   * maxReceiveCount times already, and the RedrivePolicy's target (still) exists, is another
   * queue of this account and region and of the same kind. Otherwise undefined and the message is
   * delivered as usual (a policy naming another account's queue, stored before such policies were
   * refused, never moves a message there).
   */
  private deadLetterTarget(msg: Message): Queue | undefined {
    const r = this.redrive;
    if (r === null || msg.receiveCount < r.maxReceiveCount) return undefined;
    const dlq = this.queueByArn(r.deadLetterTargetArn);
    if (dlq === undefined || dlq === this || dlq.deleted || dlq.fifo !== this.fifo) return undefined;
    if (dlq.accountId !== this.accountId || dlq.region !== this.region) return undefined;
    return dlq;
  }

  /**
   * The message a move task takes next: the oldest receivable one (FIFO: the first message of the
   * first receivable group, so a group's order survives the move). In-flight messages are not.
   */
  nextToMove(now: number): Message | undefined {
    this.tick(now);
    if (this.groups !== null) return this.groups.peekReady()?.head ?? undefined;
    return this.visible.next() ?? undefined;
  }

  /** Removes a message a move task took (nextToMove); emits its message-delete. */
  takeOut(msg: Message, now: number): void {
    this.tick(now);
    if (msg.state !== 'deleted') this.remove(msg, now);
  }

  /**
   * Where a message past its maxReceiveCount is sent rather than moved here (many owners, with
   * someone to relay it): a dead-letter queue another process holds, of this account and region
   * and of this queue's kind, as deadLetterTarget asks of a local one; or the local one, `dlq`,
   * when the message was sent away before (Message.relayed), since it may be there already and
   * only that queue's mark can tell.
   */
  private relayTarget(msg: Message, dlq: Queue | undefined): RemoteQueue | undefined {
    const r = this.redrive;
    if (r === null || this.listener.deadLetterAway === undefined || msg.receiveCount < r.maxReceiveCount) {
      return undefined;
    }
    if (dlq !== undefined) return msg.relayed ? asRemote(dlq) : undefined;
    if (this.remoteByArn === undefined) return undefined;
    const a = parseQueueArn(r.deadLetterTargetArn);
    if (a === undefined || a.accountId !== this.accountId || a.region !== this.region) return undefined;
    const target = this.remoteByArn(r.deadLetterTargetArn);
    return target?.fifo === this.fifo ? target : undefined;
  }

  /**
   * Holds a message out of sight for {@link TRANSFER_HOLD_MS}, as an in-flight one with no
   * receive: a FIFO group waits behind it as behind any message in flight, so the group's order
   * holds whether the message leaves or comes back. It is written so, marked `relayed` and with
   * the hold's deadline (Message.holdUntil), before it is sent (the router waits for that write):
   * if this process dies after it arrived and before its removal here is written, whoever holds
   * this queue next keeps the hold until that deadline, and reads the destination's mark before it
   * moves the message anywhere, even to a queue it holds itself.
   */
  private hold(msg: Message, now: number): void {
    this.visible.unlink(msg);
    msg.state = 'inflight';
    msg.heapKey = now + TRANSFER_HOLD_MS;
    msg.relayed = true;
    msg.holdUntil = msg.heapKey;
    this.schedule(this.inflight, msg);
    this.listener.change?.({ type: 'message-put', queue: this, message: msg });
    const g = this.groups?.get(msg.groupId ?? '');
    if (g !== undefined) this.groups?.refresh(g);
  }

  /** Held, and asked to be sent to its dead-letter queue elsewhere (see hold). */
  private holdForTransfer(msg: Message, target: RemoteQueue, now: number): void {
    this.hold(msg, now);
    this.listener.deadLetterAway?.(this, msg, target);
  }

  /**
   * A move task's message (nextToMove) whose destination another process holds: held (see hold)
   * while it is sent there; {@link completeMove} takes it out once it arrived.
   */
  holdForMove(msg: Message, now: number): void {
    this.hold(msg, now);
  }

  /**
   * A hold read back here (heldBefore) that this process's relay of it takes over: held for a
   * whole hold's length from now, written so. False when it is not held.
   */
  holdAgain(msg: Message, now: number): boolean {
    if (!this.holds(msg, now)) return false;
    this.inflight.remove(msg);
    msg.heapKey = now + TRANSFER_HOLD_MS;
    msg.holdUntil = msg.heapKey;
    this.schedule(this.inflight, msg);
    this.listener.change?.({ type: 'message-put', queue: this, message: msg });
    return true;
  }

  /**
   * The messages held at `now` (see hold): read back here, they are what the holds of the process
   * that had this queue before left, whose answers will not come here. A list, not the heap's
   * iterator: the caller may hold them again (holdAgain), which moves them in the heap.
   */
  heldBefore(now: number): Message[] {
    this.tick(now);
    const out: Message[] = [];
    for (const m of this.inflight) if (this.holds(m, now)) out.push(m);
    return out;
  }

  /**
   * Whether `msg` is held for another process (hold), its hold not over at `now`. No hold ends
   * later than a hold's length from now: a deadline further off is a receive's, in a record from
   * before holds were stored (codec.ts takes those as held).
   */
  holds(msg: Message, now: number): boolean {
    const until = msg.holdUntil;
    return (
      msg.state === 'inflight' && until === msg.heapKey && until > now && until <= now + TRANSFER_HOLD_MS
    );
  }

  /**
   * Ends a hold for good; true when the message is still held (then taken out by the caller).
   * False when the hold is over (the message was received again meanwhile, or is gone, or the
   * queue left this store): then it stays as it is.
   */
  private endHold(msg: Message, now: number): boolean {
    const held = this.holds(msg, now);
    msg.holdUntil = 0;
    if (!held || this.deleted) return false;
    this.tick(now);
    return msg.state === 'inflight';
  }

  /**
   * The process holding the dead-letter queue has the message now: it leaves this queue, counted
   * as dead-lettered (see endHold for false).
   */
  completeTransfer(msg: Message, now: number): boolean {
    if (!this.endHold(msg, now)) return false;
    this.deadLettered++;
    this.remove(msg, now);
    return true;
  }

  /** A move task's destination elsewhere has the message now: it leaves (see endHold for false). */
  completeMove(msg: Message, now: number): boolean {
    if (!this.endHold(msg, now)) return false;
    this.remove(msg, now);
    return true;
  }

  /**
   * A held message that is known not to have arrived (its destination is gone) is visible again
   * at once, where it was, rather than at the end of its hold.
   */
  releaseHold(msg: Message, now: number): void {
    if (!this.endHold(msg, now)) return;
    this.inflight.remove(msg);
    const receivable = this.returnToVisible(msg, true, now);
    this.listener.change?.({ type: 'message-put', queue: this, message: msg });
    if (receivable) this.listener.available?.(this);
  }

  private moveToDeadLetter(msg: Message, dlq: Queue, now: number): void {
    this.deadLettered++;
    this.remove(msg, now);
    const moved = dlq.acceptDeadLetter(msg, this.arn, now);
    this.listener.change?.({ type: 'message-moved', from: this, queue: dlq, message: moved });
  }

  /**
   * Takes a message that another queue handed over and storage had not yet written here (the
   * transfer outbox replayed after a crash): as it was recorded, with its id, sequence numbers
   * and state; emits its message-put. False when it cannot be held (already deleted).
   */
  adoptMessage(msg: Message, now: number): boolean {
    this.tick(now);
    if (!this.restoreMessage(msg)) return false;
    this.listener.change?.({ type: 'message-put', queue: this, message: msg });
    if (msg.state === 'visible') this.listener.available?.(this);
    else this.listener.deadline?.(this);
    return true;
  }

  /**
   * Deletes the message a receipt handle names. As on AWS, a handle from an earlier receive of
   * the same message still deletes it, and deleting a message that is already gone succeeds.
   */
  deleteMessage(receiptHandle: string, now: number): void {
    const ref = parseReceiptHandle(this.uid, receiptHandle);
    this.tick(now);
    const msg = this.received?.get(ref.messageId);
    if (msg === undefined) return;
    if (this.fifo) {
      // FIFO is strict (AWS): only the handle of the current receive, while it is in flight, so a
      // consumer whose timeout expired cannot delete a message another consumer now holds.
      if (
        msg.receiveCount !== ref.receiveCount ||
        msg.receiptNonce !== ref.nonce ||
        msg.state !== 'inflight'
      ) {
        throw expiredHandle(receiptHandle);
      }
    } else if (msg.receiveCount < ref.receiveCount) {
      return;
    }
    this.remove(msg, now);
  }

  /**
   * Sets the visibility of a message, counted from now. FIFO queues take only the current handle
   * of a message in flight. A standard queue takes any handle the message was given, as AWS does
   * (recorded): an older one after the message was received again, or one whose timeout has
   * passed; the message is hidden again, or made visible at once with 0.
   */
  changeVisibility(receiptHandle: string, timeoutMs: number, now: number): void {
    const ref = parseReceiptHandle(this.uid, receiptHandle);
    this.tick(now);
    const msg = this.received?.get(ref.messageId);
    // A held message is on its way to another queue: a visibility set now could hand it out
    // again here after it arrived there.
    if (msg === undefined || this.holds(msg, now)) {
      throw new CoreError(
        'InvalidParameterValue',
        `Value ${receiptHandle} for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.`,
      );
    }
    const current = msg.receiveCount === ref.receiveCount && msg.receiptNonce === ref.nonce;
    if (this.fifo ? !current : msg.receiveCount < ref.receiveCount) throw expiredHandle(receiptHandle);
    if (this.fifo && msg.state !== 'inflight') {
      throw new CoreError('MessageNotInflight', 'The message referred to is not in flight.');
    }
    if (now + timeoutMs > msg.lastReceiveAt + MAX_VISIBILITY_MS) {
      throw new CoreError(
        'InvalidParameterValue',
        `Value ${timeoutMs / 1000} for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [${MAX_VISIBILITY_TIMEOUT_SECONDS} seconds]`,
      );
    }
    msg.visibilityChanged = true;
    if (msg.state === 'visible') {
      if (timeoutMs === 0) return;
      this.visible.unlink(msg);
    } else {
      this.inflight.remove(msg);
    }
    if (timeoutMs === 0) {
      // Made visible on purpose: the client wants it redelivered next.
      const receivable = this.returnToVisible(msg, true, now);
      this.listener.change?.({ type: 'message-put', queue: this, message: msg });
      if (receivable) this.listener.available?.(this);
    } else {
      msg.state = 'inflight';
      msg.heapKey = now + timeoutMs;
      this.schedule(this.inflight, msg);
      this.listener.change?.({ type: 'message-put', queue: this, message: msg });
    }
  }

  /** `cooldownMs`: the store's (StoreOptions.purgeCooldownMs); 0 lets purges follow each other. */
  purge(now: number, cooldownMs = PURGE_INTERVAL_MS): void {
    if (now - this.lastPurgeAt < cooldownMs) {
      throw new CoreError(
        'PurgeQueueInProgress',
        `Only one PurgeQueue operation on ${this.name} is allowed every ${PURGE_INTERVAL_MS / 1000} seconds.`,
      );
    }
    this.lastPurgeAt = now;
    for (let m = this.sent.head; m !== null; m = m.next) m.state = 'deleted';
    this.received = null;
    this.sent.clear();
    this.listener.usage?.(this, -this.bytes);
    this.bytes = 0;
    this.visible.clear();
    this.inflight.clear();
    this.delayed.clear();
    // AWS (recorded): a deduplication id sent again right after a purge is a new message.
    this.fifoState?.purge((key) => this.listener.change?.({ type: 'dedup-delete', queue: this, key }));
    this.listener.change?.({ type: 'queue-purge', queue: this });
  }

  /**
   * Up to `max` messages in send order, in whatever state they are, for an operator to look at (the
   * admin API's peek). Changes nothing, not even the clock's effects: a delayed or in-flight
   * message whose deadline passed still shows its old state until the next operation.
   */
  peek(max: number): Message[] {
    const out: Message[] = [];
    for (let m = this.sent.head; m !== null && out.length < max; m = m.next) out.push(m);
    return out;
  }

  counts(now: number): QueueCounts {
    this.tick(now);
    return { visible: this.visible.count, inflight: this.inflight.size, delayed: this.delayed.size };
  }

  get size(): number {
    return this.sent.count;
  }

  /**
   * The earliest moment a delayed or in-flight message becomes visible, or (FIFO) the oldest
   * message's retention period ends, which can make its group receivable;
   * Infinity if none.
   */
  nextTransitionAt(): number {
    const a = this.inflight.peek()?.heapKey ?? Number.POSITIVE_INFINITY;
    const b = this.delayed.peek()?.heapKey ?? Number.POSITIVE_INFINITY;
    const head = this.sent.head;
    if (this.groups === null || head === null) return Math.min(a, b);
    const late = this.sent.oldestLate();
    const oldest = late !== undefined && late.sentAt < head.sentAt ? late.sentAt : head.sentAt;
    return Math.min(a, b, oldest + this.retentionMs);
  }

  /** Applies every deadline that has passed: delays end, visibility timeouts expire, retention ends. */
  tick(now: number): void {
    let woke = false;
    for (let m = this.delayed.peek(); m !== undefined && m.heapKey <= now; m = this.delayed.peek()) {
      this.delayed.pop();
      if (this.returnToVisible(m, false, m.heapKey)) woke = true;
    }
    for (let m = this.inflight.peek(); m !== undefined && m.heapKey <= now; m = this.inflight.peek()) {
      this.inflight.pop();
      if (this.returnToVisible(m, false, m.heapKey)) woke = true;
      this.listener.change?.({ type: 'message-put', queue: this, message: m });
    }
    const oldest = now - this.retentionMs;
    // Removed at the moment their retention ended, which is when a FIFO group they held back could go on.
    for (let m = this.sent.head; m !== null && m.sentAt <= oldest; m = this.sent.head) {
      this.remove(m, m.sentAt + this.retentionMs);
    }
    for (let m = this.sent.oldestLate(); m !== undefined && m.sentAt <= oldest; m = this.sent.oldestLate()) {
      this.remove(m, m.sentAt + this.retentionMs);
    }
    if (this.groups !== null) this.expireFifoRecords(now);
    if (woke) this.listener.available?.(this);
  }

  /** Drops deduplication and receive-attempt records whose 5 minutes have passed. */
  private expireFifoRecords(now: number): void {
    this.fifoState?.expire(
      now,
      (key) => this.listener.change?.({ type: 'dedup-delete', queue: this, key }),
      (attemptId) => this.listener.change?.({ type: 'attempt-delete', queue: this, attemptId }),
    );
  }

  /**
   * A delayed or in-flight message becomes visible (a deadline passed, or its visibility was set
   * to 0). Returns whether it can be received now: always on a standard queue; on a FIFO queue
   * when its group is receivable (its first message is visible: this one or an earlier one).
   */
  private returnToVisible(msg: Message, atFront: boolean, at: number): boolean {
    const wasInflight = msg.state === 'inflight';
    if (this.groups === null) {
      if (wasInflight && !atFront) this.visible.pushExpired(msg);
      else this.visible.push(msg, atFront, at);
      return true;
    }
    this.visible.push(msg, atFront, at);
    const g = this.groups.get(msg.groupId ?? '') as Group;
    this.groups.refresh(g);
    return g.heapIndex >= 0;
  }

  // ---- restoring (the loader's way in: no events, no rule checks) ----------------------

  /** The sequence number the next sent message gets; kept in storage so it never goes back. */
  get nextSequence(): number {
    return this.nextSeq;
  }

  /**
   * Puts back a message read from storage into the structure its state names: the visible list,
   * the delayed heap or the in-flight heap (keyed by `heapKey`). Call in send order (ascending
   * `seq`): that is the retention order and, for visible messages, the delivery order. A deadline
   * already passed is applied by the next `tick`. Give each id once. Emits nothing; returns false
   * (and changes nothing) for a `deleted` message.
   */
  restoreMessage(msg: Message): boolean {
    if (msg.state === 'deleted') return false;
    // Its receipt handles given out before the restart must still find it.
    if (msg.receiveCount > 0) (this.received ??= new Map()).set(msg.id, msg);
    this.linkSent(msg);
    const g = this.groups?.append(msg);
    switch (msg.state) {
      case 'visible':
        // A FIFO message keeps the moment it became visible: its group's place (fifo.ts).
        this.visible.push(msg, false, msg.heapKey);
        break;
      case 'delayed':
        this.delayed.push(msg);
        break;
      case 'inflight':
        this.inflight.push(msg);
        break;
    }
    if (g !== undefined) this.groups?.refresh(g);
    if (msg.seq >= this.nextSeq) this.nextSeq = msg.seq + 1;
    this.fifoState?.restoreSequence(msg.sequenceNumber);
    return true;
  }

  /** Puts back the counters and times storage kept; `nextSeq` only ever moves forward. Emits nothing. */
  restoreCounters(c: { nextSeq: number; lastModifiedAt: number; lastPurgeAt: number }): void {
    if (c.nextSeq > this.nextSeq) this.nextSeq = c.nextSeq;
    this.lastModifiedAt = c.lastModifiedAt;
    this.lastPurgeAt = c.lastPurgeAt;
  }

  /** Standard queues: the visible messages in the order receives take them; for tests (lists.ts). */
  *visibleInReceiveOrder(): IterableIterator<Message> {
    yield* this.visible.inReceiveOrder();
  }

  /** Visits every message in send order; for persistence and admin views, not the hot path. */
  *allMessages(): IterableIterator<Message> {
    for (let m = this.sent.head; m !== null; m = m.next) yield m;
  }

  receiptHandle(msg: Message): string {
    return receiptHandle(this.uid, msg);
  }

  /** Puts a message on a deadline heap; tells the listener when it now has the queue's earliest. */
  private schedule(heap: IndexedHeap<Message>, msg: Message): void {
    heap.push(msg);
    if (heap.peek() === msg && this.nextTransitionAt() === msg.heapKey) this.listener.deadline?.(this);
  }

  /** `at`: the moment it left, which starts its FIFO group's next turn if it was first and in flight. */
  private remove(msg: Message, at: number): void {
    const was = msg.state;
    switch (msg.state) {
      case 'visible':
        this.visible.unlink(msg);
        break;
      case 'inflight':
        this.inflight.remove(msg);
        break;
      case 'delayed':
        this.delayed.remove(msg);
        break;
      case 'deleted':
        return;
    }
    msg.state = 'deleted';
    this.received?.delete(msg.id);
    this.unlinkSent(msg);
    let receivable = false;
    if (this.groups !== null) {
      // Deleting a group's in-flight first message lets the next one be received, if visible.
      const g = this.groups.unlink(msg, was === 'inflight', at);
      if (g !== undefined) receivable = this.groups.refresh(g);
    }
    this.listener.change?.({ type: 'message-delete', queue: this, message: msg });
    if (receivable) this.listener.available?.(this);
  }

  private linkSent(msg: Message): void {
    this.sent.append(msg);
    msg.cost = messageCost(msg);
    this.bytes += msg.cost;
    this.listener.usage?.(this, msg.cost);
  }

  private markReceived(msg: Message, now: number): void {
    msg.received(now, nonce());
    (this.received ??= new Map()).set(msg.id, msg);
  }

  private unlinkSent(msg: Message): void {
    this.sent.unlink(msg);
    this.bytes -= msg.cost;
    this.listener.usage?.(this, -msg.cost);
  }
}

const NO_TAGS: Readonly<Record<string, string>> = Object.freeze({});

/** A queue held here, named as a relay names its destination (see Queue.relayTarget). */
export function asRemote(q: Queue): RemoteQueue {
  return { arn: q.arn, uid: q.uid, shard: q.shard, fifo: q.fifo };
}

/**
 * How long a message sent to a dead-letter queue another process holds stays out of sight here
 * while that process takes it: more than a forwarded request's timeout (src/owners/router.ts), so
 * a relay that gets no answer is over before the message can be received again.
 */
export const TRANSFER_HOLD_MS = 60_000;

/** The region of lookups that name none (callers that predate regions, tests). */
export const DEFAULT_REGION = 'us-east-1';

/** Queue names are unique per account and region, as on AWS. */
export function queueKey(accountId: string, name: string, region: string = DEFAULT_REGION): string {
  return `${accountId}/${region}/${name}`;
}
