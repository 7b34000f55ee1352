import { invalidParameter } from '../errors.js';
import { queueUrl, type Action } from '../service.js';

/**
 * Pages are cut by name: the token is the last name of the page before, so queues created or
 * deleted between calls neither repeat nor shift the pages.
 */
export const listQueues: Action<'ListQueues'> = (svc, ctx, input) => {
  const max = input.MaxResults;
  if (max !== undefined && (max < 1 || max > 1000)) {
    throw invalidParameter('MaxResults', max, 'MaxResults must be an integer between 1 and 1000.');
  }
  let after: string | undefined;
  if (input.NextToken !== undefined) {
    after = decodeToken(input.NextToken);
    if (after === undefined) throw invalidParameter('NextToken', input.NextToken, 'Invalid NextToken value.');
  }
  let queues = svc.store.list(ctx.accountId, input.QueueNamePrefix ?? '');
  if (after !== undefined) {
    const from = after;
    queues = queues.filter((q) => q.name > from);
  }
  const limit = max ?? 1000;
  const page = queues.slice(0, limit);
  const out: { QueueUrls?: string[]; NextToken?: string } = {};
  if (page.length > 0) out.QueueUrls = page.map((q) => queueUrl(ctx, q));
  // AWS hands out a NextToken only to callers that set MaxResults.
  const last = page[page.length - 1];
  if (max !== undefined && queues.length > limit && last !== undefined)
    out.NextToken = encodeToken(last.name);
  return out;
};

function encodeToken(name: string): string {
  return Buffer.from(JSON.stringify({ after: name }), 'utf8').toString('base64');
}

function decodeToken(token: string): string | undefined {
  try {
    const v: unknown = JSON.parse(Buffer.from(token, 'base64').toString('utf8'));
    if (v !== null && typeof v === 'object' && 'after' in v && typeof v.after === 'string') return v.after;
  } catch {
    // falls through: not a token of ours
  }
  return undefined;
}
