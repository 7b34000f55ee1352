import { resolveQueue, type Action } from '../service.js';
import { queueAttributes, selectAttributeNames } from './queues.js';

export const getQueueAttributes: Action<'GetQueueAttributes'> = (svc, ctx, input) => {
  const q = resolveQueue(svc, ctx, input.QueueUrl);
  const wanted = selectAttributeNames(input.AttributeNames);
  const attrs = queueAttributes(q, wanted, svc.clock.now());
  return Object.keys(attrs).length > 0 ? { Attributes: attrs } : {};
};
