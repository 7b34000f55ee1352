import { resolveQueue, type Action } from '../service.js';

export const deleteQueue: Action<'DeleteQueue'> = (svc, ctx, input) => {
  svc.store.delete(resolveQueue(svc, ctx, input.QueueUrl));
  return {};
};
