// What SendMessage and SendMessageBatch share: one entry's checks and the message they store.
import { randomUUID } from 'node:crypto';
import type { NewMessage } from '../../core/message.js';
import type { Queue } from '../../core/queue.js';
import { md5OfBody, md5OfMessageAttributes } from '../../protocol/md5.js';
import { missingParameter, SqsError } from '../errors.js';
import type { MessageAttributeValue, MessageSystemAttributeValue } from '../model.generated.js';
import type { RequestContext } from '../service.js';
import { checkBody, checkDelaySeconds, checkMessageAttributes, checkSystemAttributes } from '../validate.js';

export interface SendEntry {
  MessageBody?: string;
  DelaySeconds?: number;
  MessageAttributes?: Record<string, MessageAttributeValue>;
  MessageSystemAttributes?: Record<string, MessageSystemAttributeValue>;
  MessageDeduplicationId?: string;
  MessageGroupId?: string;
}

export interface PreparedSend {
  readonly message: NewMessage;
  /** Bytes counted against MaximumMessageSize and the 1 MiB batch limit. */
  readonly size: number;
}

export function prepareSend(q: Queue, ctx: RequestContext, e: SendEntry): PreparedSend {
  const body = e.MessageBody;
  if (body === undefined) throw missingParameter('MessageBody');
  checkBody(body);
  checkDelaySeconds(e.DelaySeconds);
  const size =
    Buffer.byteLength(body) +
    checkMessageAttributes(e.MessageAttributes) +
    checkSystemAttributes(e.MessageSystemAttributes);
  if (size > q.maxMessageSize) {
    throw new SqsError(
      'InvalidParameterValue',
      `One or more parameters are invalid. Reason: Message must be shorter than ${q.maxMessageSize} bytes.`,
    );
  }
  if (q.fifo) {
    throw new SqsError(
      'UnsupportedOperation',
      'FIFO queues are not served by this version of shared-sqs yet.',
    );
  }
  const attrs = nonEmpty(e.MessageAttributes);
  const sys = nonEmpty(e.MessageSystemAttributes);
  return {
    size,
    message: {
      id: randomUUID(),
      body,
      md5OfBody: md5OfBody(body),
      attributes: attrs,
      md5OfAttributes: attrs === undefined ? undefined : md5OfMessageAttributes(attrs),
      systemAttributes: sys,
      md5OfSystemAttributes: sys === undefined ? undefined : md5OfMessageAttributes(sys),
      delaySeconds: e.DelaySeconds,
      senderId: ctx.senderId,
      groupId: e.MessageGroupId,
      deduplicationId: e.MessageDeduplicationId,
    },
  };
}

function nonEmpty<T extends object>(o: T | undefined): T | undefined {
  return o === undefined || Object.keys(o).length === 0 ? undefined : o;
}
