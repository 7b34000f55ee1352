import type { Clock } from '../core/clock.js';
import { CoreError } from '../core/errors.js';
import type { Queue } from '../core/queue.js';
import type { QueueStore } from '../core/store.js';
import { missingParameter, queueDoesNotExist, SqsError } from './errors.js';
import type { LongPoller } from './longpoll.js';
import type { MoveTaskRunner } from './movetasks.js';
import type { ActionName, ActionTypes } from './model.generated.js';

/** What an action knows of the request it serves; never which protocol carried it. */
export interface RequestContext {
  readonly requestId: string;
  /** The account the caller acts as (the default account while auth is off). */
  readonly accountId: string;
  readonly region: string;
  /** scheme://host[:port] that queue URLs in replies start with. */
  readonly baseUrl: string;
  /** The SenderId attribute of messages this caller sends. */
  readonly senderId: string;
  /** Registers what to do if the client goes away before the reply (long polls). */
  onAbort(fn: () => void): void;
}

export interface SqsServices {
  readonly store: QueueStore;
  readonly clock: Clock;
  readonly poller: LongPoller;
  /** Runs message move tasks in the background (one per store, like the poller). */
  readonly mover: MoveTaskRunner;
}

type Output<A extends ActionName> = ActionTypes[A]['output'];

/** One SQS action: validates its input, calls the core, builds its output. */
export type Action<A extends ActionName> = (
  svc: SqsServices,
  ctx: RequestContext,
  input: ActionTypes[A]['input'],
) => Output<A> | Promise<Output<A>>;

export function queueUrl(ctx: RequestContext, q: Queue): string {
  return `${ctx.baseUrl}/${q.accountId}/${q.name}`;
}

/**
 * Finds the queue a QueueUrl names. Only the path matters, as on AWS (clients behind proxies
 * rewrite hosts): `/<account>/<name>`, the account being the caller's own. A bare path segment
 * (`/<name>`) is accepted too, for clients configured with emulator-style URLs.
 */
export function resolveQueue(svc: SqsServices, ctx: RequestContext, url: string | undefined): Queue {
  if (url === undefined || url === '') throw missingParameter('QueueUrl');
  const { accountId, name } = parseQueueUrl(url);
  if (accountId !== undefined && accountId !== ctx.accountId) throw queueDoesNotExist();
  const q = svc.store.get(ctx.accountId, name, ctx.region);
  if (q === undefined) throw queueDoesNotExist();
  return q;
}

export function parseQueueUrl(url: string): { accountId: string | undefined; name: string } {
  let path = url;
  const scheme = url.indexOf('://');
  if (scheme >= 0) {
    const slash = url.indexOf('/', scheme + 3);
    path = slash < 0 ? '' : url.slice(slash);
  }
  const q = path.indexOf('?');
  if (q >= 0) path = path.slice(0, q);
  const parts = path.split('/').filter((p) => p !== '');
  const name = parts[parts.length - 1];
  if (name === undefined) throw queueDoesNotExist();
  const account = parts.length >= 2 ? parts[parts.length - 2] : undefined;
  return { accountId: account !== undefined && /^\d{12}$/.test(account) ? account : undefined, name };
}

/** Re-throws a core error as its SQS wire error; other errors pass through unchanged. */
export function toSqsError(e: unknown): unknown {
  return e instanceof CoreError ? new SqsError(e.code, e.message) : e;
}
