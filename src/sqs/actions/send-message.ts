import type { SendMessageResult } from '../model.generated.js';
import { resolveQueue, toSqsError, type Action } from '../service.js';
import { checkBudget, checkMessageSize, prepareSend } from './send.js';

export const sendMessage: Action<'SendMessage'> = (svc, ctx, input) => {
  const q = resolveQueue(svc, ctx, input.QueueUrl);
  const { message, size } = prepareSend(q, ctx, input);
  checkMessageSize(q, size, false);
  checkBudget(svc, q, [size]);
  let r;
  try {
    r = q.sendMessage(message, svc.clock.now());
  } catch (e) {
    throw toSqsError(e);
  }
  // A FIFO duplicate answers with the original's MessageId and SequenceNumber; the checksums are
  // of what this request carried (AWS computes them from the request, which clients check).
  const out: SendMessageResult = { MD5OfMessageBody: message.md5OfBody, MessageId: r.messageId };
  if (message.md5OfAttributes !== undefined) out.MD5OfMessageAttributes = message.md5OfAttributes;
  if (message.md5OfSystemAttributes !== undefined)
    out.MD5OfMessageSystemAttributes = message.md5OfSystemAttributes;
  if (r.sequenceNumber !== undefined) out.SequenceNumber = r.sequenceNumber;
  return out;
};
