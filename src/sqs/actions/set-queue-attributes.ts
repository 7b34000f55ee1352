import { resolveQueue, toSqsError, type Action } from '../service.js';

export const setQueueAttributes: Action<'SetQueueAttributes'> = (svc, ctx, input) => {
  const q = resolveQueue(svc, ctx, input.QueueUrl);
  try {
    // Through the store: a RedrivePolicy is checked against the queue it names.
    svc.store.setAttributes(q, input.Attributes);
  } catch (e) {
    throw toSqsError(e);
  }
  return {};
};
