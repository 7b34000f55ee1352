// Shared by the queue actions: turning a queue into GetQueueAttributes' map.
import { readableAttributeNames } from '../../core/attributes.js';
import type { Queue } from '../../core/queue.js';
import { SqsError } from '../errors.js';

/** Resolves `All` and checks each name, as GetQueueAttributes does. */
export function selectAttributeNames(names: readonly string[] | undefined): ReadonlySet<string> | 'all' {
  if (names === undefined || names.length === 0) return new Set();
  if (names.includes('All')) return 'all';
  for (const n of names) {
    if (!readableAttributeNames.has(n)) throw new SqsError('InvalidAttributeName', `Unknown Attribute ${n}.`);
  }
  return new Set(names);
}

export function queueAttributes(
  q: Queue,
  wanted: ReadonlySet<string> | 'all',
  now: number,
): Record<string, string> {
  const out: Record<string, string> = {};
  const want = (n: string): boolean => wanted === 'all' || wanted.has(n);
  if (
    want('ApproximateNumberOfMessages') ||
    want('ApproximateNumberOfMessagesNotVisible') ||
    want('ApproximateNumberOfMessagesDelayed')
  ) {
    const c = q.counts(now);
    if (want('ApproximateNumberOfMessages')) out.ApproximateNumberOfMessages = String(c.visible);
    if (want('ApproximateNumberOfMessagesNotVisible'))
      out.ApproximateNumberOfMessagesNotVisible = String(c.inflight);
    if (want('ApproximateNumberOfMessagesDelayed'))
      out.ApproximateNumberOfMessagesDelayed = String(c.delayed);
  }
  if (want('CreatedTimestamp')) out.CreatedTimestamp = String(Math.floor(q.createdAt / 1000));
  if (want('LastModifiedTimestamp')) out.LastModifiedTimestamp = String(Math.floor(q.lastModifiedAt / 1000));
  if (want('QueueArn')) out.QueueArn = q.arn;
  for (const [k, v] of Object.entries(q.attributes)) if (want(k)) out[k] = v;
  return out;
}
