import { queueDoesNotExist } from '../errors.js';
import { queueUrl, type Action } from '../service.js';

export const getQueueUrl: Action<'GetQueueUrl'> = (svc, ctx, input) => {
  // QueueOwnerAWSAccountId names another account's queue; without cross-account grants only
  // the caller's own account can match.
  const owner = input.QueueOwnerAWSAccountId ?? ctx.accountId;
  if (owner !== ctx.accountId) throw queueDoesNotExist();
  const q = svc.store.get(ctx.accountId, input.QueueName, ctx.region);
  if (q === undefined) throw queueDoesNotExist();
  return { QueueUrl: queueUrl(ctx, q) };
};
