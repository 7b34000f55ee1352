/**
 * Where the data plane hands over a request it has decoded and authenticated (src/http/data.ts,
 * `DataPlaneOptions.executor`): a router runs it itself when it owns the queue's shard (routeOf,
 * src/owners/route.ts) and forwards it to the owner otherwise (src/owners/forward.ts).
 */
import type { ActionName } from '../sqs/model.generated.js';
import type { RequestContext } from '../sqs/service.js';

export interface Executor {
  /**
   * The action's output, resolved only once its changes are as durable as a 200 promises
   * (src/core/durability.ts): the plane encodes it as it is. Rejects with what the client is to
   * be told: an SqsError, or a core error (src/sqs/errors.ts, `knownSqsError`); anything else is
   * answered InternalFailure and logged. `ctx.onAbort` is the client's socket's.
   */
  execute(action: ActionName, ctx: RequestContext, input: unknown): Promise<unknown>;
  /**
   * True once this instance is leaving (a stop has begun): each reply closes its connection, so
   * that a proxy's keep-alive connections end cleanly after a reply, not under a request, when the
   * plane closes.
   */
  readonly leaving?: boolean;
}
