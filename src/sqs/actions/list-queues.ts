import { queueUrl, type Action } from '../service.js';
import { pageOfQueues } from './pages.js';

export const listQueues: Action<'ListQueues'> = (svc, ctx, input) => {
  const { page, nextToken } = pageOfQueues(
    svc.store.catalog.list(ctx.accountId, input.QueueNamePrefix ?? '', ctx.region),
    input.MaxResults,
    input.NextToken,
  );
  const out: { QueueUrls?: string[]; NextToken?: string } = {};
  if (page.length > 0) out.QueueUrls = page.map((q) => queueUrl(ctx, q));
  if (nextToken !== undefined) out.NextToken = nextToken;
  return out;
};
