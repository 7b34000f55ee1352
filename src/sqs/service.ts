import type { Clock } from '../core/clock.js';
import { CoreError } from '../core/errors.js';
import type { Queue, QueueIdentity } from '../core/queue.js';
import type { QueueStore } from '../core/store.js';
import { missingParameter, queueDoesNotExist, SqsError } from './errors.js';
import { LongPoller } from './longpoll.js';
import { MoveTaskRunner } from './movetasks.js';
import type { ActionName, ActionTypes } from './model.generated.js';

/** What an action knows of the request it serves; never which protocol carried it. */
export interface RequestContext {
  readonly requestId: string;
  /** The account the caller acts as (the default account while auth is off). */
  readonly accountId: string;
  readonly region: string;
  /** The server's region (--region): its queues' URLs carry no region, every other region's do. */
  readonly defaultRegion: string;
  /** scheme://host[:port] that queue URLs in replies start with. */
  readonly baseUrl: string;
  /**
   * Auth off: the caller may name a queue of any account (a queue URL's account, GetQueueUrl's
   * QueueOwnerAWSAccountId), as if every owner had granted it access; with auth on only its own.
   */
  readonly anyAccount?: boolean;
  /** The SenderId attribute of messages this caller sends. */
  readonly senderId: string;
  /** The request's X-Amzn-Trace-Id header: the AWSTraceHeader of the messages it sends. */
  readonly traceHeader?: string | undefined;
  /** Registers what to do if the client goes away before the reply (long polls). */
  onAbort(fn: () => void): void;
  /**
   * The shard of the one queue the request names, set once the queue is found: the reply then
   * waits for that shard's writes only, so a shard that fails does not fail the others' replies.
   * Left unset (no queue, or not found), the reply waits for every shard.
   */
  shard?: number;
}

export interface SqsServices {
  readonly store: QueueStore;
  readonly clock: Clock;
  readonly poller: LongPoller;
  /** Runs message move tasks in the background (one per store, like the poller). */
  readonly mover: MoveTaskRunner;
}

/** The services over `store`: a long-poll scheduler and a move-task runner of its own. */
export function servicesFor(store: QueueStore, clock: Clock): SqsServices {
  return { store, clock, poller: new LongPoller(store, clock), mover: new MoveTaskRunner(store, clock) };
}

type Output<A extends ActionName> = ActionTypes[A]['output'];

/** One SQS action: validates its input, calls the core, builds its output. */
export type Action<A extends ActionName> = (
  svc: SqsServices,
  ctx: RequestContext,
  input: ActionTypes[A]['input'],
) => Output<A> | Promise<Output<A>>;

export function queueUrl(ctx: RequestContext, q: QueueIdentity): string {
  return queueUrlOf(ctx.baseUrl, q, ctx.defaultRegion);
}

/**
 * A queue's URL: `<base>/<account>/<name>` in the server's region, `<base>/<region>/<account>/<name>`
 * in any other. On AWS the region is in the host (`sqs.<region>.amazonaws.com`); here one host
 * serves every region, so it goes in the path, and two queues of one name in two regions have
 * two URLs.
 */
export function queueUrlOf(baseUrl: string, q: QueueIdentity, defaultRegion: string): string {
  return q.region === defaultRegion
    ? `${baseUrl}/${q.accountId}/${q.name}`
    : `${baseUrl}/${q.region}/${q.accountId}/${q.name}`;
}

/**
 * Finds the queue a QueueUrl names. Only the path matters, as on AWS (clients behind proxies
 * rewrite hosts): `/<account>/<name>` in the server's region, `/<region>/<account>/<name>` in
 * another; the account and region must be the caller's own (its credential scope's region), or
 * the queue does not exist for it, whether it exists or not. A bare path segment (`/<name>`) is
 * accepted too, for clients configured with emulator-style URLs: the caller's account and region.
 */
export function resolveQueue(svc: SqsServices, ctx: RequestContext, url: string | undefined): Queue {
  if (url === undefined || url === '') throw missingParameter('QueueUrl');
  let byUrl = resolved.get(svc.store);
  if (byUrl === undefined) resolved.set(svc.store, (byUrl = new Map<string, WeakRef<Queue>>()));
  // A URL resolved before names the same queue for the same caller until that queue is deleted
  // (a queue made again under its name is a new object). Only found queues are kept, and only
  // weakly: a deleted queue, with whatever it still holds, is not kept alive by its URL.
  const known = byUrl.get(url)?.deref();
  if (
    known !== undefined &&
    !known.deleted &&
    known.accountId === ctx.accountId &&
    known.region === ctx.region
  ) {
    ctx.shard = known.shard;
    return known;
  }
  const { accountId, name, region } = parseQueueUrl(url);
  if (accountId !== undefined) {
    if (
      (accountId !== ctx.accountId && ctx.anyAccount !== true) ||
      (region ?? ctx.defaultRegion) !== ctx.region
    )
      throw queueDoesNotExist();
  }
  const q = svc.store.get(accountId ?? ctx.accountId, name, ctx.region);
  if (q === undefined) {
    try {
      svc.store.checkAvailable(accountId ?? ctx.accountId, ctx.region, name);
    } catch (e) {
      throw toSqsError(e);
    }
    throw queueDoesNotExist();
  }
  // Clients name their queues by a handful of URLs; a flood of variants only empties the map.
  if (byUrl.size >= MAX_RESOLVED_URLS) byUrl.clear();
  byUrl.set(url, new WeakRef(q));
  ctx.shard = q.shard;
  return q;
}

/**
 * QueueUrl → queue, per store (a reload from Redis builds a new store): parsing the URL and
 * building the store's key cost about as much as the rest of a SendMessage's lookup and checks.
 */
const resolved = new WeakMap<QueueStore, Map<string, WeakRef<Queue>>>();
const MAX_RESOLVED_URLS = 10_000;

export function parseQueueUrl(url: string): {
  accountId: string | undefined;
  name: string;
  /** The segment before the account, when it is a region name. */
  region?: string;
} {
  // Index arithmetic instead of split/filter: this runs on every request that names a queue.
  let start = 0;
  const scheme = url.indexOf('://');
  if (scheme >= 0) {
    start = url.indexOf('/', scheme + 3);
    if (start < 0) throw queueDoesNotExist();
  }
  let end = url.indexOf('?', start);
  if (end < 0) end = url.length;
  // Empty segments (doubled or trailing slashes) are skipped, as if absent.
  while (end > start && url.charCodeAt(end - 1) === SLASH) end--;
  const nameStart = url.lastIndexOf('/', end - 1) + 1;
  if (end <= start || nameStart >= end) throw queueDoesNotExist();
  const name = url.slice(Math.max(nameStart, start), end);
  let accountEnd = nameStart - 1;
  while (accountEnd > start && url.charCodeAt(accountEnd - 1) === SLASH) accountEnd--;
  if (accountEnd - start < 12) return { accountId: undefined, name };
  const accountStart = url.lastIndexOf('/', accountEnd - 1) + 1;
  const account = url.slice(Math.max(accountStart, start), accountEnd);
  if (!ACCOUNT_ID.test(account)) return { accountId: undefined, name };
  let regionEnd = accountStart - 1;
  while (regionEnd > start && url.charCodeAt(regionEnd - 1) === SLASH) regionEnd--;
  if (regionEnd <= start) return { accountId: account, name };
  const region = url.slice(Math.max(url.lastIndexOf('/', regionEnd - 1) + 1, start), regionEnd);
  return REGION.test(region) ? { accountId: account, name, region } : { accountId: account, name };
}

const SLASH = 0x2f;
const ACCOUNT_ID = /^\d{12}$/;
/** AWS region names (`us-east-1`, `us-gov-west-1`, `cn-north-1`), as src/auth checks a scope's. */
const REGION = /^[a-z]{2}(?:-[a-z]+)*-[a-z]+-\d{1,2}$/;

/** Re-throws a core error as its SQS wire error; other errors pass through unchanged. */
export function toSqsError(e: unknown): unknown {
  return e instanceof CoreError ? new SqsError(e.code, e.message) : e;
}
