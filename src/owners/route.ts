/**
 * Which shard a decoded request is for: the shard of the one queue it names, found by the same
 * account and region rules its action uses (src/sqs/service.ts: `resolveQueue`; the actions in
 * src/sqs/actions/), so that the process owning that shard is the one whose store answers it.
 *
 * A request gets no shard when it names no queue (ListQueues) or names it in a way its action
 * refuses before it looks in any store (a missing or unparsable QueueUrl, another account's queue
 * without `anyAccount`, a region that is not the caller's, an undecodable task handle). Such a
 * request may run anywhere: every process gives it the same error, and forwarding it would only
 * cost a hop. A well-formed reference to a queue that does not exist does get a shard: only its
 * owner can tell "does not exist" from "is being loaded" (QueueStore.checkAvailable).
 */
import { decodeTaskHandle } from '../core/movetasks.js';
import { parseQueueArn } from '../core/redrive.js';
import { shardOf } from '../shard/hash.js';
import type { ActionName } from '../sqs/model.generated.js';
import { parseQueueUrl, type RequestContext } from '../sqs/service.js';

/** What of the caller decides which queue a reference names. */
export type RouteContext = Pick<RequestContext, 'accountId' | 'region' | 'defaultRegion' | 'anyAccount'>;

/** The shard of the queue the request is about, or undefined when it may run anywhere (above). */
export function routeOf(action: ActionName, input: unknown, ctx: RouteContext): number | undefined {
  if (input === null || typeof input !== 'object') return undefined;
  const o = input as Record<string, unknown>;
  switch (action) {
    case 'ListQueues':
      return undefined;
    // src/sqs/actions/create-queue.ts: always the caller's account and region.
    case 'CreateQueue':
      return byName(ctx.accountId, ctx.region, o.QueueName);
    // src/sqs/actions/get-queue-url.ts: the owner's queue, in the caller's region.
    case 'GetQueueUrl': {
      const owner = o.QueueOwnerAWSAccountId ?? ctx.accountId;
      if (typeof owner !== 'string' || (owner !== ctx.accountId && ctx.anyAccount !== true)) return undefined;
      return byName(owner, ctx.region, o.QueueName);
    }
    // src/core/store.ts: startMoveTask and byArnIn; anyAccount plays no part for an ARN.
    case 'StartMessageMoveTask':
    case 'ListMessageMoveTasks':
      return byArn(o.SourceArn, ctx);
    // src/core/store.ts: cancelMoveTask, the source queue inside the handle.
    case 'CancelMessageMoveTask': {
      if (typeof o.TaskHandle !== 'string') return undefined;
      let sourceArn: string;
      try {
        sourceArn = decodeTaskHandle(o.TaskHandle).sourceArn;
      } catch {
        return undefined;
      }
      return byArn(sourceArn, ctx);
    }
    // Every other action names its queue by QueueUrl (ListDeadLetterSourceQueues: the DLQ's).
    case 'AddPermission':
    case 'ChangeMessageVisibility':
    case 'ChangeMessageVisibilityBatch':
    case 'DeleteMessage':
    case 'DeleteMessageBatch':
    case 'DeleteQueue':
    case 'GetQueueAttributes':
    case 'ListDeadLetterSourceQueues':
    case 'ListQueueTags':
    case 'PurgeQueue':
    case 'ReceiveMessage':
    case 'RemovePermission':
    case 'SendMessage':
    case 'SendMessageBatch':
    case 'SetQueueAttributes':
    case 'TagQueue':
    case 'UntagQueue':
      return byUrl(o.QueueUrl, ctx);
  }
  // Reached by no action of the model: one added to it fails the build here until it is routed.
  return unrouted(action);
}

function unrouted(action: never): undefined {
  void action;
  return undefined;
}

/** src/sqs/service.ts: `resolveQueue`, without its store. */
function byUrl(url: unknown, ctx: RouteContext): number | undefined {
  if (typeof url !== 'string' || url === '') return undefined;
  let parsed: ReturnType<typeof parseQueueUrl>;
  try {
    parsed = parseQueueUrl(url);
  } catch {
    return undefined;
  }
  const { accountId, name, region } = parsed;
  if (accountId === undefined) return byName(ctx.accountId, ctx.region, name);
  if (accountId !== ctx.accountId && ctx.anyAccount !== true) return undefined;
  if ((region ?? ctx.defaultRegion) !== ctx.region) return undefined;
  return byName(accountId, ctx.region, name);
}

/** src/core/store.ts: `byArnIn`, home being the caller. */
function byArn(arn: unknown, ctx: RouteContext): number | undefined {
  if (typeof arn !== 'string') return undefined;
  const a = parseQueueArn(arn);
  if (a === undefined || a.accountId !== ctx.accountId || a.region !== ctx.region) return undefined;
  return byName(a.accountId, a.region, a.name);
}

function byName(accountId: string, region: string, name: unknown): number | undefined {
  // An empty name is refused before any lookup (CreateQueue), or found nowhere.
  if (typeof name !== 'string' || name === '') return undefined;
  try {
    return shardOf(accountId, region, name);
  } catch {
    // A lone surrogate has no hash (src/shard/hash.ts), and no queue can have such a name.
    return undefined;
  }
}
