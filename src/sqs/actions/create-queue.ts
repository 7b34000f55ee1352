import { SqsError } from '../errors.js';
import { queueUrl, toSqsError, type Action } from '../service.js';
import { checkTags } from './tags.js';

export const createQueue: Action<'CreateQueue'> = (svc, ctx, input) => {
  if (input.QueueName === '') {
    throw new SqsError('InvalidParameterValue', 'Queue name cannot be empty');
  }
  const tags = input.tags ?? {};
  checkTags(tags);
  try {
    const { queue } = svc.store.create(
      { accountId: ctx.accountId, region: ctx.region, name: input.QueueName },
      input.Attributes ?? {},
      tags,
    );
    ctx.shard = queue.shard;
    return { QueueUrl: queueUrl(ctx, queue) };
  } catch (e) {
    throw toSqsError(e);
  }
};
