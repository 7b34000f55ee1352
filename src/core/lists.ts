/**
 * The lists a queue (queue.ts) keeps its messages in, besides its deadline heaps: every message in
 * send order, which retention drops from the front, and the visible messages in the order a
 * receive takes them. Both are intrusive (the links live on Message), so a message changes state
 * without an allocation, in O(1) (O(log n) where a heap is involved).
 */
import { IndexedHeap, type HeapItem } from './heap.js';
import type { Message } from './message.js';

/** Every message a queue holds, in any state, in the order it was linked (send order). */
export class SentList {
  head: Message | null = null;
  tail: Message | null = null;
  count = 0;
  /**
   * Messages older than the newest when they arrived (moved here as dead letters): by sentAt.
   * Only while there are any.
   */
  private late: LateRetention | null = null;

  append(msg: Message): void {
    // Retention drops messages from the head while they are past it, so the list must be in
    // sentAt order; a message older than the newest (a dead letter keeps its SentTimestamp) is
    // also kept by age on the side.
    if (this.tail !== null && msg.sentAt < this.tail.sentAt) (this.late ??= new LateRetention()).add(msg);
    msg.prev = this.tail;
    if (this.tail === null) this.head = msg;
    else this.tail.next = msg;
    this.tail = msg;
    this.count++;
  }

  unlink(msg: Message): void {
    if (msg.prev === null) this.head = msg.next;
    else msg.prev.next = msg.next;
    if (msg.next === null) this.tail = msg.prev;
    else msg.next.prev = msg.prev;
    msg.prev = msg.next = null;
    this.count--;
    if (this.late !== null) {
      this.late.delete(msg);
      if (this.late.size === 0) this.late = null;
    }
  }

  /** The oldest of the messages linked out of sentAt order, if any. */
  oldestLate(): Message | undefined {
    return this.late?.peekOldest();
  }

  clear(): void {
    this.head = this.tail = null;
    this.count = 0;
    this.late = null;
  }
}

/** A message's place in LateRetention's heap. */
class LateEntry implements HeapItem {
  heapIndex = -1;
  constructor(
    readonly msg: Message,
    public heapKey: number,
  ) {}
}

/** Messages linked out of sentAt order, by sentAt, so retention finds them when they expire. */
class LateRetention {
  private readonly heap = new IndexedHeap<LateEntry>();
  private readonly byMessage = new Map<Message, LateEntry>();

  get size(): number {
    return this.byMessage.size;
  }

  add(msg: Message): void {
    const e = new LateEntry(msg, msg.sentAt);
    this.byMessage.set(msg, e);
    this.heap.push(e);
  }

  delete(msg: Message): void {
    const e = this.byMessage.get(msg);
    if (e === undefined) return;
    this.byMessage.delete(msg);
    this.heap.remove(e);
  }

  peekOldest(): Message | undefined {
    return this.heap.peek()?.msg;
  }
}

/** The visible messages of a queue. */
export class VisibleList {
  private head: Message | null = null;
  private tail: Message | null = null;
  count = 0;
  /**
   * Standard queues: visible messages whose visibility timeout passed, by send order (heapKey is
   * their seq). A receive takes the lower of its top and the list's head, so such a message comes
   * again before the messages sent after it (AWS, recorded).
   */
  private readonly expired = new IndexedHeap<Message>();

  /** `at`: when it became visible; FIFO groups are served in the order they became receivable. */
  push(msg: Message, atFront: boolean, at: number): void {
    msg.state = 'visible';
    msg.heapKey = at;
    if (atFront) {
      msg.vprev = null;
      msg.vnext = this.head;
      if (this.head === null) this.tail = msg;
      else this.head.vprev = msg;
      this.head = msg;
    } else {
      msg.vnext = null;
      msg.vprev = this.tail;
      if (this.tail === null) this.head = msg;
      else this.tail.vnext = msg;
      this.tail = msg;
    }
    this.count++;
  }

  /** A standard queue's message whose visibility timeout passed: back in its send-order place. */
  pushExpired(msg: Message): void {
    msg.state = 'visible';
    msg.heapKey = msg.seq;
    this.expired.push(msg);
    this.count++;
  }

  /** Standard queues: the visible message a receive takes next; see `expired`. */
  next(): Message | null {
    const e = this.expired.peek();
    if (e === undefined) return this.head;
    return this.head !== null && this.head.seq < e.seq ? this.head : e;
  }

  unlink(msg: Message): void {
    if (msg.heapIndex >= 0) {
      this.expired.remove(msg);
      this.count--;
      return;
    }
    if (msg.vprev === null) this.head = msg.vnext;
    else msg.vprev.vnext = msg.vnext;
    if (msg.vnext === null) this.tail = msg.vprev;
    else msg.vnext.vprev = msg.vprev;
    msg.vprev = msg.vnext = null;
    this.count--;
  }

  clear(): void {
    this.head = this.tail = null;
    this.count = 0;
    this.expired.clear();
  }

  /** In the order receives would take them (standard queues). For tests: it sorts the expired ones. */
  *inReceiveOrder(): IterableIterator<Message> {
    const expired = [...this.expired].sort((a, b) => a.seq - b.seq);
    let i = 0;
    for (let m = this.head; m !== null; m = m.vnext) {
      for (; i < expired.length && (expired[i] as Message).seq < m.seq; i++) yield expired[i] as Message;
      yield m;
    }
    for (; i < expired.length; i++) yield expired[i] as Message;
  }
}
