// What SendMessage and SendMessageBatch share: one entry's checks and the message they store.
import { sendCost } from '../../core/budget.js';
import { uuid } from '../../core/ids.js';
import type { NewMessage } from '../../core/message.js';
import type { Queue } from '../../core/queue.js';
import { md5OfBody, md5OfMessageAttributes } from '../md5.js';
import { invalidParameter, missingParameter, SqsError } from '../errors.js';
import type { MessageAttributeValue, MessageSystemAttributeValue } from '../model.generated.js';
import type { RequestContext, SqsServices } from '../service.js';
import {
  checkBody,
  checkDelaySeconds,
  checkFifoToken,
  checkMessageAttributes,
  checkSystemAttributes,
} from '../validate.js';

export interface SendEntry {
  MessageBody?: string;
  DelaySeconds?: number;
  MessageAttributes?: Record<string, MessageAttributeValue>;
  MessageSystemAttributes?: Record<string, MessageSystemAttributeValue>;
  MessageDeduplicationId?: string;
  MessageGroupId?: string;
}

/** An entry error that fails a whole SendMessageBatch, not just the entry (see prepareSend). */
export class WholeBatchError extends SqsError {}

/**
 * Refuses a send whose messages (`sizes`: each one's MaximumMessageSize bytes) do not fit the
 * memory budget, or the account's share of it: RequestThrottled, 403, which SQS itself answers
 * when throttling and which the AWS SDKs (v3, botocore standard and legacy) retry with back-off
 * by default. nginx does not pass a 403 to the next upstream, so a follower is not asked in vain.
 * A batch is refused whole: a failed entry of a 200 reply is retried by no SDK.
 */
export function checkBudget(svc: SqsServices, q: Queue, sizes: readonly number[]): void {
  let bytes = 0;
  for (const size of sizes) bytes += sendCost(size);
  const scope = svc.store.budget.wouldExceed(bytes, q.accountId);
  if (scope === undefined) return;
  throw new SqsError(
    'RequestThrottled',
    scope === 'server'
      ? 'Request is throttled: the server holds as many messages as its memory budget allows. Retry with back-off; sends are taken again once consumers delete messages.'
      : "Request is throttled: this account's queues hold their share of the server's memory budget. Retry with back-off; sends are taken again once consumers delete messages.",
  );
}

/**
 * A message (`size`: the body plus its attributes' names, data types and values) over the queue's
 * MaximumMessageSize is refused; one of exactly that size fits. AWS words the refusal of a
 * SendMessageBatch entry (`batch`) "cannot be validated", of a SendMessage "are invalid" (both
 * recorded).
 */
export function checkMessageSize(q: Queue, size: number, batch: boolean): void {
  if (size <= q.maxMessageSize) return;
  throw new SqsError(
    'InvalidParameterValue',
    `One or more parameters ${batch ? 'cannot be validated' : 'are invalid'}. Reason: Message must be shorter than ${q.maxMessageSize} bytes.`,
  );
}

export interface PreparedSend {
  readonly message: NewMessage;
  /** Bytes counted against MaximumMessageSize and the 1 MiB batch limit. */
  readonly size: number;
}

/**
 * One entry's checks, in AWS's order, and the message to store; its size against the queue's
 * MaximumMessageSize is the caller's to check (checkMessageSize), since a batch counts every entry
 * against its 1 MiB first. `batch`: SendMessageBatch, where a FIFO entry without MessageGroupId or
 * deduplication id fails the whole request with InvalidParameterValue (AWS), instead of
 * SendMessage's MissingParameter / InvalidParameterValue.
 */
export function prepareSend(q: Queue, ctx: RequestContext, e: SendEntry, batch = false): PreparedSend {
  const body = e.MessageBody;
  if (body === undefined) throw missingParameter('MessageBody');
  checkBody(body);
  checkDelaySeconds(e.DelaySeconds);
  if (q.fifo) checkFifoEntry(q, e, batch);
  else if (e.MessageDeduplicationId !== undefined) {
    throw invalidParameter(
      'MessageDeduplicationId',
      e.MessageDeduplicationId,
      'The request include parameter that is not valid for this queue type.',
    );
  }
  // Fair queues: a standard queue takes a MessageGroupId too (and returns it on receive).
  if (e.MessageGroupId !== undefined) checkFifoToken('MessageGroupId', e.MessageGroupId);
  const size =
    Buffer.byteLength(body) +
    checkMessageAttributes(e.MessageAttributes) +
    checkSystemAttributes(e.MessageSystemAttributes);
  const attrs = nonEmpty(e.MessageAttributes);
  const given = nonEmpty(e.MessageSystemAttributes);
  const sys = withTraceHeader(given, ctx.traceHeader);
  return {
    size,
    message: {
      id: uuid(),
      body,
      md5OfBody: md5OfBody(body),
      attributes: attrs,
      md5OfAttributes: attrs === undefined ? undefined : md5OfMessageAttributes(attrs),
      systemAttributes: sys,
      // Of what the request carried, as the reply's checksum is (not of a header's trace).
      md5OfSystemAttributes: given === undefined ? undefined : md5OfMessageAttributes(given),
      delaySeconds: e.DelaySeconds,
      senderId: ctx.senderId,
      groupId: e.MessageGroupId,
      deduplicationId: e.MessageDeduplicationId,
    },
  };
}

/**
 * The request's X-Amzn-Trace-Id header becomes the message's AWSTraceHeader unless the entry sets
 * one (the X-Ray guide: the system attribute overrides the HTTP header).
 */
function withTraceHeader(
  sys: Record<string, MessageSystemAttributeValue> | undefined,
  trace: string | undefined,
): Record<string, MessageSystemAttributeValue> | undefined {
  if (trace === undefined || trace === '' || sys?.AWSTraceHeader !== undefined) return sys;
  return { ...sys, AWSTraceHeader: { DataType: 'String', StringValue: trace } };
}

function nonEmpty<T extends object>(o: T | undefined): T | undefined {
  return o === undefined || Object.keys(o).length === 0 ? undefined : o;
}

/** The FIFO rules of an entry (SendMessage API reference; messages as AWS words them). */
function checkFifoEntry(q: Queue, e: SendEntry, batch: boolean): void {
  // A zero delay changes nothing and some clients always send it; any other is refused.
  if (e.DelaySeconds !== undefined && e.DelaySeconds !== 0) {
    throw invalidParameter(
      'DelaySeconds',
      e.DelaySeconds,
      'The request include parameter that is not valid for this queue type.',
    );
  }
  if (e.MessageGroupId === undefined) {
    const message = 'The request must contain the parameter MessageGroupId.';
    throw batch
      ? new WholeBatchError('InvalidParameterValue', message)
      : new SqsError('MissingParameter', message);
  }
  if (e.MessageDeduplicationId === undefined && !q.contentBasedDeduplication) {
    const message =
      'The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly';
    throw batch
      ? new WholeBatchError('InvalidParameterValue', message)
      : new SqsError('InvalidParameterValue', message);
  }
  if (e.MessageDeduplicationId !== undefined) {
    checkFifoToken('MessageDeduplicationId', e.MessageDeduplicationId);
  }
}
