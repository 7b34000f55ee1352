import { queueUrl, resolveQueue, type Action } from '../service.js';
import { pageOfQueues } from './pages.js';

/** The queues whose RedrivePolicy names this one, by name, paged like ListQueues. */
export const listDeadLetterSourceQueues: Action<'ListDeadLetterSourceQueues'> = (svc, ctx, input) => {
  const dlq = resolveQueue(svc, ctx, input.QueueUrl);
  const { page, nextToken } = pageOfQueues(
    svc.store.deadLetterSources(dlq),
    input.MaxResults,
    input.NextToken,
  );
  const out: { queueUrls: string[]; NextToken?: string } = { queueUrls: page.map((q) => queueUrl(ctx, q)) };
  if (nextToken !== undefined) out.NextToken = nextToken;
  return out;
};
