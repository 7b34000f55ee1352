/**
 * The parts of a FIFO queue a standard queue does not have: message groups, the deduplication
 * window and its scope, ReceiveRequestAttemptId records and sequence numbers. Queue (queue.ts)
 * owns one of each and calls them as its messages change state; nothing here knows about time
 * except through the `now` it is handed.
 *
 * Groups. Every message of a FIFO queue sits in its group's list, in send order, whatever its
 * state (delayed, visible, in flight). A receive serves a group's messages in that order and stops
 * at the first one that is not visible: a message in flight holds back the ones after it, not the
 * ones before it (AWS, recorded; docs/compatibility.md, "FIFO queues"). So a group can be received
 * from when its first message is visible. Such groups are kept in a heap ordered by the moment they
 * became receivable (the later of: their first message became visible, the message before it left
 * while in flight), then by their first message's send order (`seq`). A group whose first message
 * comes back (timeout, ChangeMessageVisibility 0, a receive with VisibilityTimeout 0) or whose
 * in-flight first message is deleted thus waits behind the groups that were waiting already, as
 * AWS serves them. A receive takes the first receivable group in O(log g) without looking at any
 * other group or message, and serves several messages of that group, in order, before it moves on
 * to the next group.
 */
import { createHash } from 'node:crypto';
import { IndexedHeap, type HeapItem } from './heap.js';
import { SCOPE_CHANGE_DELAY_MS } from './limits.js';
import type { Message } from './message.js';

export type DeduplicationScope = 'queue' | 'messageGroup';

/** One message group of a FIFO queue. */
export class Group implements HeapItem {
  head: Message | null = null;
  tail: Message | null = null;
  /** When a first message of it left while in flight (deleted, expired): the next one's turn began. */
  headSince = Number.NEGATIVE_INFINITY;
  /** While the group is receivable: the moment it became so; then its first message's `seq`. */
  heapKey = 0;
  heapTie = 0;
  heapIndex = -1;

  constructor(readonly id: string) {}

  get receivable(): boolean {
    return this.head !== null && this.head.state === 'visible';
  }
}

export class Groups {
  private readonly byId = new Map<string, Group>();
  private readonly ready = new IndexedHeap<Group>();

  get size(): number {
    return this.byId.size;
  }

  get(id: string): Group | undefined {
    return this.byId.get(id);
  }

  /** The receivable group whose first message is the oldest; undefined when none is. */
  peekReady(): Group | undefined {
    return this.ready.peek();
  }

  /** Puts a message at the end of its group (send order); creates the group. */
  append(msg: Message): Group {
    const id = msg.groupId ?? '';
    let g = this.byId.get(id);
    if (g === undefined) {
      g = new Group(id);
      this.byId.set(id, g);
    }
    msg.gnext = null;
    msg.gprev = g.tail;
    if (g.tail === null) g.head = msg;
    else g.tail.gnext = msg;
    g.tail = msg;
    return g;
  }

  /**
   * Takes a message out of its group at `at`; `wasInflight` says whether it was in flight. The
   * group is forgotten when it becomes empty. Returns the group, for `refresh`.
   */
  unlink(msg: Message, wasInflight: boolean, at: number): Group | undefined {
    const g = this.byId.get(msg.groupId ?? '');
    if (g === undefined) return undefined;
    if (wasInflight && msg.gprev === null && at > g.headSince) g.headSince = at;
    if (msg.gprev === null) g.head = msg.gnext;
    else msg.gprev.gnext = msg.gnext;
    if (msg.gnext === null) g.tail = msg.gprev;
    else msg.gnext.gprev = msg.gprev;
    msg.gprev = msg.gnext = null;
    if (g.head === null) {
      this.ready.remove(g);
      this.byId.delete(g.id);
    }
    return g;
  }

  /**
   * Puts the group on the receivable heap or takes it off, as its state says, after any change
   * to its messages. Returns true when the group has just become receivable.
   */
  refresh(g: Group): boolean {
    if (g.receivable) {
      const head = g.head as Message;
      // A visible message's heapKey is the moment it became visible (lists.ts: VisibleList.push).
      const key = Math.max(g.headSince, head.heapKey);
      if (g.heapIndex < 0) {
        g.heapKey = key;
        g.heapTie = head.seq;
        this.ready.push(g);
        return true;
      }
      if (g.heapKey !== key || g.heapTie !== head.seq) {
        this.ready.remove(g);
        g.heapKey = key;
        g.heapTie = head.seq;
        this.ready.push(g);
      }
      return false;
    }
    if (g.heapIndex >= 0) this.ready.remove(g);
    return false;
  }

  clear(): void {
    this.ready.clear();
    this.byId.clear();
  }
}

/** A change of DeduplicationScope: when it was made, and the new scope. */
export interface ScopeChange {
  readonly at: number;
  readonly scope: DeduplicationScope;
}

/**
 * The DeduplicationScope deduplication uses: the attribute's value, except that a change takes
 * effect `SCOPE_CHANGE_DELAY_MS` after it is made (GetQueueAttributes shows it at once). Until
 * then sends are deduplicated under the scope before it, old and new deduplication ids alike.
 */
export class DedupScope {
  /** The changes that have not taken effect yet, oldest first. */
  private pending: ScopeChange[] = [];

  constructor(private current: DeduplicationScope) {}

  /** The attribute was set to `scope` at `now`: a change when it differs from the latest value. */
  set(scope: DeduplicationScope, now: number): void {
    if (scope !== (this.pending.at(-1)?.scope ?? this.current)) this.pending.push({ at: now, scope });
  }

  at(now: number): DeduplicationScope {
    while (this.pending.length > 0 && (this.pending[0] as ScopeChange).at + SCOPE_CHANGE_DELAY_MS <= now) {
      this.current = (this.pending.shift() as ScopeChange).scope;
    }
    return this.current;
  }

  /** For storage: the scope in effect before the pending changes, and those; undefined when none. */
  get state(): { inEffect: DeduplicationScope; changes: readonly ScopeChange[] } | undefined {
    return this.pending.length === 0 ? undefined : { inEffect: this.current, changes: [...this.pending] };
  }

  /** Puts back what `state` gave (the loader's way in). */
  restore(inEffect: DeduplicationScope, changes: readonly ScopeChange[]): void {
    this.current = inEffect;
    this.pending = [...changes];
  }
}

/** What a send within the deduplication window is answered with instead of storing it again. */
export interface DedupRecord {
  readonly messageId: string;
  readonly sequenceNumber: string;
  readonly expiresAt: number;
}

/** One message a receive with a ReceiveRequestAttemptId returned, as it was returned. */
export interface AttemptEntry {
  readonly id: string;
  readonly receiveCount: number;
  readonly nonce: string;
  /** When its visibility timeout ends; a ChangeMessageVisibility since then changes it. */
  readonly visibleAt: number;
}

export interface AttemptRecord {
  readonly expiresAt: number;
  readonly entries: readonly AttemptEntry[];
}

/**
 * Records that expire a fixed time after they were added. A Map iterates in insertion order,
 * which here is expiry order, so expiring is O(1) per record taken from the front and never
 * looks at a record that has not expired. (Restore in `expiresAt` order to keep that true.)
 */
export class ExpiringRecords<R extends { readonly expiresAt: number }> {
  private readonly records = new Map<string, R>();

  get(key: string, now: number): R | undefined {
    const r = this.records.get(key);
    return r !== undefined && r.expiresAt > now ? r : undefined;
  }

  /** The record under `key` whether or not its time has passed (tick drops those). */
  peek(key: string): R | undefined {
    return this.records.get(key);
  }

  set(key: string, record: R): void {
    // Re-setting a key moves it to the back, where its new expiry belongs.
    this.records.delete(key);
    this.records.set(key, record);
  }

  /** Changes a record in place, keeping its position: for a new value with the same expiry. */
  replace(key: string, record: R): void {
    if (this.records.has(key)) this.records.set(key, record);
  }

  delete(key: string): boolean {
    return this.records.delete(key);
  }

  /** Drops every record whose time has passed, oldest first, telling `onExpire` each key. */
  expire(now: number, onExpire: (key: string) => void): void {
    for (const [key, r] of this.records) {
      if (r.expiresAt > now) break;
      this.records.delete(key);
      onExpire(key);
    }
  }

  clear(): void {
    this.records.clear();
  }

  entries(): IterableIterator<[string, R]> {
    return this.records.entries();
  }
}

/**
 * The key of a deduplication record. With scope `queue` a deduplication id is unique in the
 * queue; with `messageGroup` only within its group (the same id in two groups is two messages).
 * The group id is length-prefixed so no pair of (group, id) can spell another's key.
 */
export function dedupKey(scope: DeduplicationScope, groupId: string, dedupId: string): string {
  return scope === 'queue' ? `q:${dedupId}` : `g${groupId.length}:${groupId}${dedupId}`;
}

/** ContentBasedDeduplication: the SHA-256 of the body, hex, as AWS computes it. */
export function contentDedupId(body: string): string {
  return createHash('sha256').update(body, 'utf8').digest('hex');
}

/**
 * The next SequenceNumber after `last`: never below the clock (ms × 10^7, so numbers keep
 * increasing across a restart that lost the last one), always above `last`. 20 decimal digits
 * until the year 2286, well inside 128 bits.
 */
export function nextSequenceNumber(last: bigint, now: number): bigint {
  const floor = BigInt(Math.floor(now)) * 10_000_000n;
  const next = last + 1n;
  return next > floor ? next : floor;
}

export function formatSequenceNumber(n: bigint): string {
  return n.toString().padStart(20, '0');
}
