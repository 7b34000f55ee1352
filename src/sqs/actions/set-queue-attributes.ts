import { validateAttributes } from '../../core/attributes.js';
import { resolveQueue, toSqsError, type Action } from '../service.js';

export const setQueueAttributes: Action<'SetQueueAttributes'> = (svc, ctx, input) => {
  const q = resolveQueue(svc, ctx, input.QueueUrl);
  try {
    const valid = validateAttributes(input.Attributes, { fifo: q.fifo, creating: false });
    q.setAttributes(valid, svc.clock.now());
  } catch (e) {
    throw toSqsError(e);
  }
  return {};
};
