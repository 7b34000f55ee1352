import { resolveQueue, toSqsError, type Action } from '../service.js';
import { checkVisibilityTimeout } from '../validate.js';

export const changeMessageVisibility: Action<'ChangeMessageVisibility'> = (svc, ctx, input) => {
  const q = resolveQueue(svc, ctx, input.QueueUrl);
  checkVisibilityTimeout(input.VisibilityTimeout);
  try {
    q.changeVisibility(input.ReceiptHandle, input.VisibilityTimeout * 1000, svc.clock.now());
  } catch (e) {
    throw toSqsError(e);
  }
  return {};
};
