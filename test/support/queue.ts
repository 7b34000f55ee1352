/**
 * Messages for the core's tests: `msg()` builds what the SQS layer hands the core, and `sendOne`
 * puts it into a queue the test set up (the product only ever calls `Queue.sendMessage`, whose
 * result also covers a FIFO duplicate).
 */
import type { Message, NewMessage } from '../../src/core/message.js';
import type { Queue } from '../../src/core/queue.js';
import { md5Hex } from './md5.js';

let made = 0;

/**
 * A new message: an id never used before in this process, `body` (unless given, one no other
 * call returns, so content-based deduplication never takes two defaults for one), the body's MD5
 * (a real one, so that memory accounting sees a real digest's size), and `extra` over all of it.
 */
export function msg(extra?: Partial<NewMessage>): NewMessage;
export function msg(body: string | undefined, extra?: Partial<NewMessage>): NewMessage;
export function msg(
  bodyOrExtra?: string | Partial<NewMessage>,
  extra: Partial<NewMessage> = typeof bodyOrExtra === 'object' ? bodyOrExtra : {},
): NewMessage {
  made++;
  const text = typeof bodyOrExtra === 'string' ? bodyOrExtra : `body-${made}`;
  return { id: `m-${made}`, body: text, md5OfBody: md5Hex(text), senderId: 'AIDAEXAMPLE', ...extra };
}

/** A FIFO message's group and, when given, its deduplication id, for `msg`'s `extra`. */
export function inGroup(groupId: string, deduplicationId?: string): Partial<NewMessage> {
  return deduplicationId === undefined ? { groupId } : { groupId, deduplicationId };
}

/** `queue.sendMessage` for a send that is not a duplicate: the stored message (a duplicate throws). */
export function sendOne(queue: Queue, m: NewMessage, now: number): Message {
  const r = queue.sendMessage(m, now);
  if (r.message === undefined) throw new Error(`the send duplicates message ${r.messageId}`);
  return r.message;
}
