import { missingParameter } from '../errors.js';
import { resolveQueue, toSqsError, type Action } from '../service.js';

export const deleteMessage: Action<'DeleteMessage'> = (svc, ctx, input) => {
  const q = resolveQueue(svc, ctx, input.QueueUrl);
  if (input.ReceiptHandle === '') throw missingParameter('ReceiptHandle');
  try {
    q.deleteMessage(input.ReceiptHandle, svc.clock.now());
  } catch (e) {
    throw toSqsError(e);
  }
  return {};
};
