import { randomBytes } from 'node:crypto';
import { defaultAttributes } from './attributes.js';
import { CoreError } from './errors.js';
import type { CoreListener } from './events.js';
import { IndexedHeap } from './heap.js';
import { Message, type NewMessage } from './message.js';

/** AWS caps a standard queue's in-flight messages at 120,000 (FIFO: 120,000 too since 2024). */
export const MAX_INFLIGHT = 120_000;
/** A message's visibility can be extended to at most 12 hours after it was received. */
const MAX_VISIBILITY_MS = 43_200_000;
const PURGE_INTERVAL_MS = 60_000;

export interface QueueCounts {
  readonly visible: number;
  readonly inflight: number;
  readonly delayed: number;
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
 * list, delayed and in-flight ones indexed heaps, and a receipt handle names its message id, so
 * finding it is one Map lookup.
 */
export class Queue {
  readonly accountId: string;
  readonly region: string;
  readonly name: string;
  readonly arn: string;
  readonly fifo: boolean;
  /** Differs between a queue and a later queue of the same name, so old handles stay invalid. */
  readonly uid: string;
  attributes: Record<string, string>;
  tags: Record<string, string>;
  readonly createdAt: number;
  lastModifiedAt: number;
  lastPurgeAt = Number.NEGATIVE_INFINITY;
  deleted = false;

  // Cached numeric attributes, read on every send and receive.
  visibilityTimeoutMs = 30_000;
  delayMs = 0;
  retentionMs = 345_600_000;
  maxMessageSize = 1_048_576;
  receiveWaitSeconds = 0;

  private readonly messages = new Map<string, Message>();
  private head: Message | null = null;
  private tail: Message | null = null;
  private vhead: Message | null = null;
  private vtail: Message | null = null;
  private visibleCount = 0;
  private readonly inflight = new IndexedHeap<Message>();
  private readonly delayed = new IndexedHeap<Message>();
  private nextSeq = 1;

  constructor(
    id: QueueIdentity,
    attributes: Record<string, string>,
    tags: Record<string, string>,
    now: number,
    private readonly listener: CoreListener,
    uid?: string,
  ) {
    this.accountId = id.accountId;
    this.region = id.region;
    this.name = id.name;
    this.arn = `arn:aws:sqs:${id.region}:${id.accountId}:${id.name}`;
    this.fifo = id.name.endsWith('.fifo');
    this.uid = uid ?? randomBytes(6).toString('hex');
    this.attributes = { ...defaultAttributes(this.fifo), ...attributes };
    this.tags = { ...tags };
    this.createdAt = now;
    this.lastModifiedAt = now;
    this.cacheAttributes();
  }

  get key(): string {
    return queueKey(this.accountId, this.name);
  }

  setAttributes(attributes: Readonly<Record<string, string>>, now: number): void {
    Object.assign(this.attributes, attributes);
    this.lastModifiedAt = now;
    this.cacheAttributes();
    this.listener.change?.({ type: 'queue-put', queue: this });
  }

  setTags(tags: Readonly<Record<string, string>>): void {
    Object.assign(this.tags, tags);
    this.listener.change?.({ type: 'queue-put', queue: this });
  }

  removeTags(keys: readonly string[]): void {
    for (const k of keys) delete this.tags[k];
    this.listener.change?.({ type: 'queue-put', queue: this });
  }

  private cacheAttributes(): void {
    const a = this.attributes;
    this.visibilityTimeoutMs = Number(a.VisibilityTimeout ?? 30) * 1000;
    this.delayMs = Number(a.DelaySeconds ?? 0) * 1000;
    this.retentionMs = Number(a.MessageRetentionPeriod ?? 345_600) * 1000;
    this.maxMessageSize = Number(a.MaximumMessageSize ?? 1_048_576);
    this.receiveWaitSeconds = Number(a.ReceiveMessageWaitTimeSeconds ?? 0);
  }

  // ---- messages -------------------------------------------------------------------------

  send(m: NewMessage, now: number): Message {
    const msg = new Message(m, this.nextSeq++, now);
    this.messages.set(msg.id, msg);
    this.linkSent(msg);
    const delayMs = m.delaySeconds === undefined ? this.delayMs : m.delaySeconds * 1000;
    if (delayMs > 0) {
      msg.state = 'delayed';
      msg.heapKey = now + delayMs;
      this.schedule(this.delayed, msg);
    } else {
      this.pushVisible(msg, false);
    }
    this.listener.change?.({ type: 'message-put', queue: this, message: msg });
    if (msg.state === 'visible') this.listener.available?.(this);
    return msg;
  }

  /**
   * Takes up to `max` visible messages and hides them for `visibilityTimeoutMs` (the queue's
   * default when undefined). Each gets a new receipt handle.
   */
  receive(max: number, visibilityTimeoutMs: number | undefined, now: number): Message[] {
    this.tick(now);
    const out: Message[] = [];
    if (this.vhead === null) return out;
    if (this.inflight.size >= MAX_INFLIGHT) {
      throw new CoreError('OverLimit', 'Too many messages in flight for this queue.');
    }
    const vt = visibilityTimeoutMs ?? this.visibilityTimeoutMs;
    while (out.length < max && this.vhead !== null) {
      const msg = this.vhead;
      this.unlinkVisible(msg);
      msg.receiveCount++;
      if (msg.firstReceiveAt === 0) msg.firstReceiveAt = now;
      msg.lastReceiveAt = now;
      msg.receiptNonce = nonce();
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
    if (vt === 0) for (const msg of out) this.pushVisible(msg, false);
    return out;
  }

  /**
   * Deletes the message a receipt handle names. As on AWS, a handle from an earlier receive of
   * the same message still deletes it, and deleting a message that is already gone succeeds.
   */
  deleteMessage(receiptHandle: string, now: number): void {
    const ref = this.parseHandle(receiptHandle);
    this.tick(now);
    const msg = this.messages.get(ref.messageId);
    if (msg === undefined || msg.receiveCount < ref.receiveCount) return;
    this.remove(msg);
  }

  /** Sets the visibility of an in-flight message, counted from now. */
  changeVisibility(receiptHandle: string, timeoutMs: number, now: number): void {
    const ref = this.parseHandle(receiptHandle);
    this.tick(now);
    const msg = this.messages.get(ref.messageId);
    if (msg === undefined || msg.receiveCount !== ref.receiveCount || msg.receiptNonce !== ref.nonce) {
      throw new CoreError(
        'InvalidParameterValue',
        `Value ${receiptHandle} for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.`,
      );
    }
    if (msg.state !== 'inflight') {
      throw new CoreError('MessageNotInflight', 'The message referred to is not in flight.');
    }
    if (now + timeoutMs > msg.lastReceiveAt + MAX_VISIBILITY_MS) {
      throw new CoreError(
        'InvalidParameterValue',
        `Value ${timeoutMs / 1000} for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [43200 seconds]`,
      );
    }
    this.inflight.remove(msg);
    if (timeoutMs === 0) {
      // Made visible on purpose: the client wants it redelivered next.
      this.pushVisible(msg, true);
      this.listener.change?.({ type: 'message-put', queue: this, message: msg });
      this.listener.available?.(this);
    } else {
      msg.heapKey = now + timeoutMs;
      this.schedule(this.inflight, msg);
      this.listener.change?.({ type: 'message-put', queue: this, message: msg });
    }
  }

  purge(now: number): void {
    if (now - this.lastPurgeAt < PURGE_INTERVAL_MS) {
      throw new CoreError(
        'PurgeQueueInProgress',
        `Only one PurgeQueue operation on ${this.name} is allowed every 60 seconds.`,
      );
    }
    this.lastPurgeAt = now;
    for (const msg of this.messages.values()) msg.state = 'deleted';
    this.messages.clear();
    this.head = this.tail = this.vhead = this.vtail = null;
    this.visibleCount = 0;
    this.inflight.clear();
    this.delayed.clear();
    this.listener.change?.({ type: 'queue-purge', queue: this });
  }

  counts(now: number): QueueCounts {
    this.tick(now);
    return { visible: this.visibleCount, inflight: this.inflight.size, delayed: this.delayed.size };
  }

  get size(): number {
    return this.messages.size;
  }

  /** The earliest moment a delayed or in-flight message becomes visible; Infinity if none. */
  nextTransitionAt(): number {
    const a = this.inflight.peek()?.heapKey ?? Number.POSITIVE_INFINITY;
    const b = this.delayed.peek()?.heapKey ?? Number.POSITIVE_INFINITY;
    return Math.min(a, b);
  }

  /** Applies every deadline that has passed: delays end, visibility timeouts expire, retention ends. */
  tick(now: number): void {
    let woke = false;
    for (let m = this.delayed.peek(); m !== undefined && m.heapKey <= now; m = this.delayed.peek()) {
      this.delayed.pop();
      this.pushVisible(m, false);
      woke = true;
    }
    for (let m = this.inflight.peek(); m !== undefined && m.heapKey <= now; m = this.inflight.peek()) {
      this.inflight.pop();
      this.pushVisible(m, false);
      this.listener.change?.({ type: 'message-put', queue: this, message: m });
      woke = true;
    }
    const oldest = now - this.retentionMs;
    while (this.head !== null && this.head.sentAt <= oldest) this.remove(this.head);
    if (woke && this.vhead !== null) this.listener.available?.(this);
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
   * already passed is applied by the next `tick`. Emits nothing; returns false (and changes
   * nothing) for a `deleted` message or an id the queue already holds.
   */
  restoreMessage(msg: Message): boolean {
    if (msg.state === 'deleted' || this.messages.has(msg.id)) return false;
    this.messages.set(msg.id, msg);
    this.linkSent(msg);
    switch (msg.state) {
      case 'visible':
        this.pushVisible(msg, false);
        break;
      case 'delayed':
        this.delayed.push(msg);
        break;
      case 'inflight':
        this.inflight.push(msg);
        break;
    }
    if (msg.seq >= this.nextSeq) this.nextSeq = msg.seq + 1;
    return true;
  }

  /** Puts back the counters and times storage kept; `nextSeq` only ever moves forward. Emits nothing. */
  restoreCounters(c: { nextSeq: number; lastModifiedAt: number; lastPurgeAt: number }): void {
    if (c.nextSeq > this.nextSeq) this.nextSeq = c.nextSeq;
    this.lastModifiedAt = c.lastModifiedAt;
    this.lastPurgeAt = c.lastPurgeAt;
  }

  /** Visits every message in send order; for persistence and admin views, not the hot path. */
  *allMessages(): IterableIterator<Message> {
    for (let m = this.head; m !== null; m = m.next) yield m;
  }

  receiptHandle(msg: Message): string {
    return Buffer.from(`${this.uid}:${msg.id}:${msg.receiveCount}:${msg.receiptNonce}`, 'latin1').toString(
      'base64',
    );
  }

  private parseHandle(handle: string): { messageId: string; receiveCount: number; nonce: string } {
    const parts = Buffer.from(handle, 'base64').toString('latin1').split(':');
    const [uid, messageId, count, nonceText] = parts;
    const receiveCount = Number(count);
    if (
      parts.length !== 4 ||
      uid !== this.uid ||
      messageId === undefined ||
      messageId === '' ||
      nonceText === undefined ||
      !Number.isInteger(receiveCount) ||
      receiveCount < 1
    ) {
      throw new CoreError(
        'ReceiptHandleIsInvalid',
        `The input receipt handle "${handle}" is not a valid receipt handle.`,
      );
    }
    return { messageId, receiveCount, nonce: nonceText };
  }

  /** Puts a message on a deadline heap; tells the listener when it now has the queue's earliest. */
  private schedule(heap: IndexedHeap<Message>, msg: Message): void {
    heap.push(msg);
    if (heap.peek() === msg && this.nextTransitionAt() === msg.heapKey) this.listener.deadline?.(this);
  }

  private remove(msg: Message): void {
    switch (msg.state) {
      case 'visible':
        this.unlinkVisible(msg);
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
    this.messages.delete(msg.id);
    this.unlinkSent(msg);
    this.listener.change?.({ type: 'message-delete', queue: this, message: msg });
  }

  private linkSent(msg: Message): void {
    msg.prev = this.tail;
    if (this.tail === null) this.head = msg;
    else this.tail.next = msg;
    this.tail = msg;
  }

  private unlinkSent(msg: Message): void {
    if (msg.prev === null) this.head = msg.next;
    else msg.prev.next = msg.next;
    if (msg.next === null) this.tail = msg.prev;
    else msg.next.prev = msg.prev;
    msg.prev = msg.next = null;
  }

  private pushVisible(msg: Message, atFront: boolean): void {
    msg.state = 'visible';
    msg.heapKey = 0;
    if (atFront) {
      msg.vprev = null;
      msg.vnext = this.vhead;
      if (this.vhead === null) this.vtail = msg;
      else this.vhead.vprev = msg;
      this.vhead = msg;
    } else {
      msg.vnext = null;
      msg.vprev = this.vtail;
      if (this.vtail === null) this.vhead = msg;
      else this.vtail.vnext = msg;
      this.vtail = msg;
    }
    this.visibleCount++;
  }

  private unlinkVisible(msg: Message): void {
    if (msg.vprev === null) this.vhead = msg.vnext;
    else msg.vprev.vnext = msg.vnext;
    if (msg.vnext === null) this.vtail = msg.vprev;
    else msg.vnext.vprev = msg.vprev;
    msg.vprev = msg.vnext = null;
    this.visibleCount--;
  }
}

export function queueKey(accountId: string, name: string): string {
  return `${accountId}/${name}`;
}

let nonceCounter = 0;
const noncePrefix = randomBytes(4).toString('hex');
/** Unique per receive within this process and across restarts (the prefix is random per start). */
function nonce(): string {
  nonceCounter = (nonceCounter + 1) % 0x7fffffff;
  return noncePrefix + nonceCounter.toString(36);
}
