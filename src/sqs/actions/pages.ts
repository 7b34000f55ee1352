// Pagination shared by ListQueues and ListDeadLetterSourceQueues.
import { MAX_RESULTS } from '../../core/limits.js';
import { invalidParameter } from '../errors.js';

/**
 * One page of queues sorted by name. Pages are cut by name: the token is the last name of the
 * page before, so queues created or deleted between calls neither repeat nor shift the pages.
 * As on AWS, a NextToken is handed out only to callers that set MaxResults (1-1000).
 */
export function pageOfQueues<Q extends { readonly name: string }>(
  sorted: readonly Q[],
  maxResults: number | undefined,
  nextToken: string | undefined,
): { page: Q[]; nextToken: string | undefined } {
  if (maxResults !== undefined && (maxResults < 1 || maxResults > MAX_RESULTS)) {
    throw invalidParameter(
      'MaxResults',
      maxResults,
      `MaxResults must be an integer between 1 and ${MAX_RESULTS}.`,
    );
  }
  let queues = sorted;
  if (nextToken !== undefined) {
    const after = decodeToken(nextToken);
    if (after === undefined) throw invalidParameter('NextToken', nextToken, 'Invalid NextToken value.');
    queues = queues.filter((q) => q.name > after);
  }
  const limit = maxResults ?? MAX_RESULTS;
  const page = queues.slice(0, limit);
  const last = page[page.length - 1];
  const more = maxResults !== undefined && queues.length > limit && last !== undefined;
  return { page, nextToken: more ? encodeToken(last.name) : undefined };
}

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
