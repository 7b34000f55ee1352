/**
 * What a FIFO queue keeps besides its messages: its message groups, the deduplication window and
 * the scope it is kept under, the ReceiveRequestAttemptId records and the last SequenceNumber
 * given. Queue (queue.ts) holds one for a FIFO queue (`fifoState`) and asks it at each send;
 * fifo-receive.ts serves receives from it; persistence reads and restores it here.
 */
import { CoreError } from './errors.js';
import {
  contentDedupId,
  dedupKey,
  DedupScope,
  ExpiringRecords,
  formatSequenceNumber,
  Groups,
  nextSequenceNumber,
  type AttemptRecord,
  type DedupRecord,
  type DeduplicationScope,
  type ScopeChange,
} from './fifo.js';
import type { NewMessage } from './message.js';

export class FifoState {
  readonly groups = new Groups();
  readonly attempts = new ExpiringRecords<AttemptRecord>();
  private readonly dedup = new ExpiringRecords<DedupRecord>();
  private readonly scope: DedupScope;
  /** Kept in storage by the messages and dedup records that carry it, and by the queue record. */
  private lastSequence = 0n;

  constructor(scope: DeduplicationScope) {
    this.scope = new DedupScope(scope);
  }

  /** The DeduplicationScope attribute was set at `now` (it applies 60 s later: DedupScope). */
  setScope(scope: DeduplicationScope, now: number): void {
    this.scope.set(scope, now);
  }

  /**
   * A send's deduplication id: the given one, or the body's SHA-256 with ContentBasedDeduplication
   * (else InvalidParameterValue). A send without a group id is MissingParameter.
   */
  dedupIdOf(m: NewMessage, contentBased: boolean): string {
    if (m.groupId === undefined) {
      throw new CoreError('MissingParameter', 'The request must contain the parameter MessageGroupId.');
    }
    if (m.deduplicationId !== undefined) return m.deduplicationId;
    if (!contentBased) {
      throw new CoreError(
        'InvalidParameterValue',
        'The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly',
      );
    }
    return contentDedupId(m.body);
  }

  /** The key a send's deduplication id is kept under now, and the record it duplicates if any. */
  lookup(groupId: string, dedupId: string, now: number): { key: string; seen: DedupRecord | undefined } {
    const key = dedupKey(this.scope.at(now), groupId, dedupId);
    return { key, seen: this.dedup.get(key, now) };
  }

  /** Keeps a new message's record under `key` (an own string: kept 5 minutes, not a view). */
  remember(key: string, record: DedupRecord): void {
    this.dedup.set(key, record);
  }

  takeSequenceNumber(now: number): string {
    this.lastSequence = nextSequenceNumber(this.lastSequence, now);
    return formatSequenceNumber(this.lastSequence);
  }

  /** Drops deduplication and attempt records whose 5 minutes have passed, telling each key. */
  expire(now: number, onDedup: (key: string) => void, onAttempt: (attemptId: string) => void): void {
    this.dedup.expire(now, onDedup);
    this.attempts.expire(now, onAttempt);
  }

  /** PurgeQueue: groups, attempt records and (AWS, recorded) deduplication records go. */
  purge(onDedup: (key: string) => void): void {
    this.groups.clear();
    for (const [key] of this.dedup.entries()) onDedup(key);
    this.dedup.clear();
    this.attempts.clear();
  }

  // ---- for persistence and tests (restore* emit nothing) ----------------------------------

  /** The last SequenceNumber given, for storage; restored by restoreSequence. */
  get lastSequenceNumber(): string | undefined {
    return this.lastSequence === 0n ? undefined : formatSequenceNumber(this.lastSequence);
  }

  /** Puts back a SequenceNumber storage kept; the last one only ever moves forward. */
  restoreSequence(sequenceNumber: string | undefined): void {
    if (sequenceNumber === undefined || !/^\d+$/.test(sequenceNumber)) return;
    const n = BigInt(sequenceNumber);
    if (n > this.lastSequence) this.lastSequence = n;
  }

  /** Puts back a deduplication record; call in `expiresAt` order. Expired ones go at the next tick. */
  restoreDedup(key: string, record: DedupRecord): void {
    this.dedup.set(key, record);
    this.restoreSequence(record.sequenceNumber);
  }

  /** Puts back a ReceiveRequestAttemptId record; call in `expiresAt` order. */
  restoreAttempt(attemptId: string, record: AttemptRecord): void {
    this.attempts.set(attemptId, record);
  }

  /** The scope in effect and the changes not in effect yet; undefined when none. See restoreScope. */
  get pendingScope(): { inEffect: DeduplicationScope; changes: readonly ScopeChange[] } | undefined {
    return this.scope.state;
  }

  restoreScope(inEffect: DeduplicationScope, changes: readonly ScopeChange[]): void {
    this.scope.restore(inEffect, changes);
  }

  /** The deduplication record under `key`, as stored. */
  dedupRecord(key: string): DedupRecord | undefined {
    return this.dedup.peek(key);
  }

  /** The record of a ReceiveRequestAttemptId, as stored. */
  attemptRecord(attemptId: string): AttemptRecord | undefined {
    return this.attempts.peek(attemptId);
  }

  /** The deduplication records of the window, oldest first. */
  dedupRecords(): IterableIterator<[string, DedupRecord]> {
    return this.dedup.entries();
  }

  /** The ReceiveRequestAttemptId records, oldest first. */
  attemptRecords(): IterableIterator<[string, AttemptRecord]> {
    return this.attempts.entries();
  }

  /** How many message groups hold messages. */
  get groupCount(): number {
    return this.groups.size;
  }
}
