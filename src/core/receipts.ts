/**
 * Receipt handles: what one receive of a message hands out, and how a later DeleteMessage or
 * ChangeMessageVisibility finds the message from it. A handle is base64 of
 * `<queue uid>:<message id>:<receive count>:<nonce>`: the queue's uid keeps a handle from a deleted
 * queue invalid in a later queue of the same name, the message id finds the message with one Map
 * lookup, and the receive count and nonce tell the current receive from an earlier one.
 */
import { randomBytes } from 'node:crypto';
import { CoreError } from './errors.js';
import type { Message } from './message.js';

/** What a receipt handle names. */
export interface HandleRef {
  readonly messageId: string;
  readonly receiveCount: number;
  readonly nonce: string;
}

export function receiptHandle(queueUid: string, msg: Message): string {
  return Buffer.from(`${queueUid}:${msg.id}:${msg.receiveCount}:${msg.receiptNonce}`, 'latin1').toString(
    'base64',
  );
}

/** The message a handle names; ReceiptHandleIsInvalid unless it is one of `queueUid`'s handles. */
export function parseReceiptHandle(queueUid: string, handle: string): HandleRef {
  const parts = Buffer.from(handle, 'base64').toString('latin1').split(':');
  const [uid, messageId, count, nonceText] = parts;
  const receiveCount = Number(count);
  if (
    parts.length !== 4 ||
    uid !== queueUid ||
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

/** A well-formed handle of an earlier receive, where only the current one will do. */
export function expiredHandle(receiptHandle: string): CoreError {
  return new CoreError(
    'InvalidParameterValue',
    `Value ${receiptHandle} for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.`,
  );
}

let nonceCounter = 0;
const noncePrefix = randomBytes(4).toString('hex');
/** Unique per receive within this process and across restarts (the prefix is random per start). */
export function nonce(): string {
  nonceCounter = (nonceCounter + 1) % 0x7fffffff;
  return noncePrefix + nonceCounter.toString(36);
}
