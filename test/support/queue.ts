/**
 * A shorthand the core's tests use to put a message into a queue they set up: the product only
 * ever calls `Queue.sendMessage`, whose result also covers a FIFO duplicate.
 */
import type { Message, NewMessage } from '../../src/core/message.js';
import type { Queue } from '../../src/core/queue.js';

/** `queue.sendMessage` for a send that is not a duplicate: the stored message (a duplicate throws). */
export function sendOne(queue: Queue, m: NewMessage, now: number): Message {
  const r = queue.sendMessage(m, now);
  if (r.message === undefined) throw new Error(`the send duplicates message ${r.messageId}`);
  return r.message;
}
