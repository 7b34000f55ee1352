/**
 * The FIFO receive (docs/compatibility.md, "FIFO queues"): the groups in the order they became
 * receivable (fifo.ts: Groups), as many of each one's messages in order as `max` allows, up to its
 * first message that is not visible, then the next group; and the replay of a retried
 * ReceiveRequestAttemptId. The queue (queue.ts) owns the messages and their moves between states
 * and lends them here as a ReceiveHost.
 */
import { CoreError } from './errors.js';
import type { AttemptRecord } from './fifo.js';
import type { FifoState } from './fifo-state.js';
import { MAX_INFLIGHT, RECEIVE_ATTEMPT_WINDOW_MS } from './limits.js';
import type { Message } from './message.js';
import { ownString } from './strings.js';

/** The moves of a queue's messages a FIFO receive makes (queue.ts gives them). */
export interface ReceiveHost {
  inflightCount(): number;
  /**
   * When the message has been received maxReceiveCount times: moved to the dead-letter queue, or
   * held while another process takes it there (many owners); false when neither.
   */
  deadLettered(m: Message, now: number): 'moved' | 'held' | false;
  /** A visible message received now: a new receipt, in flight until now + vt (no deadline at 0). */
  take(m: Message, vt: number, now: number): void;
  /** A message received before, by id. */
  received(id: string): Message | undefined;
  /** Visible again now; whether its group is receivable. */
  returnToVisible(m: Message, atFront: boolean, now: number): boolean;
  /** An in-flight message whose timeout starts again (`vt` 0: visible at once); as returnToVisible. */
  restartVisibility(m: Message, vt: number, now: number): boolean;
  /** Tell the listener (attempt-put, attempt-delete). */
  attemptPut(attemptId: string, record: AttemptRecord): void;
  attemptDelete(attemptId: string): void;
  /** The queue has messages to receive now (wakes long polls). */
  available(): void;
}

/**
 * Receives up to `max` messages. With a ReceiveRequestAttemptId, a retry within 5 minutes returns
 * the same messages and receipt handles, with their visibility timeout started again, as long as
 * none of them was deleted, had its visibility changed or expired; otherwise it receives anew (and
 * the new result is what later retries get).
 */
export function receiveFifo(
  fifo: FifoState,
  host: ReceiveHost,
  max: number,
  vt: number,
  now: number,
  attemptId: string | undefined,
): Message[] {
  if (attemptId !== undefined) {
    const again = retryAttempt(fifo, host, attemptId, vt, now);
    if (again !== undefined) return again;
  }
  const { groups } = fifo;
  const out: Message[] = [];
  if (groups.peekReady() === undefined) return out;
  if (host.inflightCount() >= MAX_INFLIGHT) {
    throw new CoreError('OverLimit', 'Too many messages in flight for this queue.');
  }
  for (let g = groups.peekReady(); g !== undefined && out.length < max; g = groups.peekReady()) {
    for (let m = g.head; m !== null && m.state === 'visible' && out.length < max;) {
      const next = m.gnext;
      const dead = host.deadLettered(m, now);
      // Held for a dead-letter queue elsewhere: the group waits for it as for a message in flight,
      // so what comes after it is not handed out before it is known to have left.
      if (dead === 'held') break;
      if (dead === false) {
        // In flight even with a zero timeout until the loop is done, so the group's turn ends
        // and this call cannot hand the same message out twice.
        host.take(m, vt, now);
        out.push(m);
      }
      m = next;
    }
    // In flight now: off the receivable heap. (Or emptied by dead-lettering: refreshed anyway.)
    groups.refresh(g);
  }
  if (vt === 0) for (const m of out) host.returnToVisible(m, false, now);
  if (attemptId !== undefined && out.length > 0) {
    const record: AttemptRecord = { expiresAt: now + RECEIVE_ATTEMPT_WINDOW_MS, entries: entriesOf(out) };
    // Kept for 5 minutes: not as a view into the request it came with.
    const ownId = ownString(attemptId);
    fifo.attempts.set(ownId, record);
    host.attemptPut(ownId, record);
  }
  return out;
}

/** The same messages and handles again, if the attempt's record still holds; see receiveFifo. */
function retryAttempt(
  fifo: FifoState,
  host: ReceiveHost,
  attemptId: string,
  vt: number,
  now: number,
): Message[] | undefined {
  const rec = fifo.attempts.get(attemptId, now);
  if (rec === undefined) return undefined;
  const msgs: Message[] = [];
  for (const e of rec.entries) {
    const m = host.received(e.id);
    if (
      m === undefined ||
      m.state !== 'inflight' ||
      m.receiveCount !== e.receiveCount ||
      m.receiptNonce !== e.nonce ||
      // The deadline too: a message stored before visibilityChanged existed reads it as false.
      m.heapKey !== e.visibleAt ||
      m.visibilityChanged
    ) {
      fifo.attempts.delete(attemptId);
      host.attemptDelete(attemptId);
      return undefined;
    }
    msgs.push(m);
  }
  // "If a retry occurs within the deduplication interval, it resets the visibility timeout."
  let receivable = false;
  for (const m of msgs) if (host.restartVisibility(m, vt, now)) receivable = true;
  const record: AttemptRecord = { expiresAt: rec.expiresAt, entries: entriesOf(msgs) };
  // Same expiry as before; set() would move it to the back, so write it in place.
  fifo.attempts.replace(attemptId, record);
  host.attemptPut(attemptId, record);
  // A timeout of 0 made their groups receivable: long polls waiting on the queue can have them now.
  if (receivable) host.available();
  return msgs;
}

function entriesOf(msgs: readonly Message[]): AttemptRecord['entries'] {
  return msgs.map((m) => ({
    id: m.id,
    receiveCount: m.receiveCount,
    nonce: m.receiptNonce,
    visibleAt: m.heapKey,
  }));
}
