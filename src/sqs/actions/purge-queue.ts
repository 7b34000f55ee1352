import { resolveQueue, toSqsError, type Action } from '../service.js';

export const purgeQueue: Action<'PurgeQueue'> = (svc, ctx, input) => {
  const q = resolveQueue(svc, ctx, input.QueueUrl);
  try {
    q.purge(svc.clock.now(), svc.store.purgeCooldownMs);
  } catch (e) {
    throw toSqsError(e);
  }
  return {};
};
