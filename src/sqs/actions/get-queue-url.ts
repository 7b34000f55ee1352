import { queueDoesNotExist } from '../errors.js';
import { queueUrl, type Action } from '../service.js';

export const getQueueUrl: Action<'GetQueueUrl'> = (svc, ctx, input) => {
  // AWS answers a queue of another account that granted the caller nothing as one that does not
  // exist. Auth off, every account's queues are open to every caller (RequestContext.anyAccount).
  const owner = input.QueueOwnerAWSAccountId ?? ctx.accountId;
  if (owner !== ctx.accountId && ctx.anyAccount !== true) throw queueDoesNotExist();
  // From the catalog: it names a queue also while its shard is being loaded again.
  const q = svc.store.catalog.get(owner, ctx.region, input.QueueName);
  if (q === undefined) throw queueDoesNotExist();
  return { QueueUrl: queueUrl(ctx, q) };
};
