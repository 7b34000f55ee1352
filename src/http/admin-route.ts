/**
 * The admin API's queue routes under --active-active: any instance answers them, as it answers
 * the SQS API. A call about one queue runs at the owner of the queue's shard (the same forwarding
 * channel as the data plane's, src/owners/router.ts); the listing asks every live member for the
 * queues it holds and answers them all. The owner runs the call as it came, its admin token
 * included, so every instance checks the same token (docs/operations.md, "Active/active").
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AdminAnswer, AdminCall } from '../owners/forward.js';
import { shardOf } from '../shard/hash.js';

export type { AdminAnswer, AdminCall };

/** Runs an admin call where it belongs (src/wiring/owners.ts). */
export interface AdminRoute {
  /** The owner's answer; 'here': this instance serves the shard, run the call here. */
  atOwner(shard: number, call: AdminCall): Promise<AdminAnswer | 'here'>;
  /** The answers of every other live member, each running the call on its own shards. */
  atOthers(call: AdminCall): Promise<AdminAnswer[]>;
}

/** Set on a call one instance passes to another: it runs where it arrives, and goes no further. */
export const ROUTED_HEADER = 'x-shared-sqs-routed';

type QueueRef = { accountId: string; region: string; name: string };

/**
 * A `preHandler` for a route about one queue: passes the call to the owner of `ref`'s shard and
 * sends its answer back, or lets the handler run here.
 */
export function toQueueOwner(
  route: AdminRoute | undefined,
  ref: (req: FastifyRequest) => QueueRef | undefined,
): (req: FastifyRequest, reply: FastifyReply) => Promise<unknown> {
  return async (req, reply) => {
    if (route === undefined || req.headers[ROUTED_HEADER] !== undefined) return undefined;
    const q = ref(req);
    if (q === undefined) return undefined;
    const answer = await route.atOwner(shardOf(q.accountId, q.region, q.name), callOf(req));
    if (answer === 'here') return undefined;
    return reply.code(answer.status).type('application/json; charset=utf-8').send(answer.body);
  };
}

/** The other members' answers to the same call: what they hold, for a listing of all queues. */
export async function fromOthers(route: AdminRoute | undefined, req: FastifyRequest): Promise<AdminAnswer[]> {
  if (route === undefined || req.headers[ROUTED_HEADER] !== undefined) return [];
  return route.atOthers(callOf(req));
}

function callOf(req: FastifyRequest): AdminCall {
  const authorization = req.headers.authorization;
  return {
    method: req.method,
    url: req.url,
    authorization: typeof authorization === 'string' ? authorization : undefined,
    body: req.body === undefined || req.body === null ? undefined : JSON.stringify(req.body),
  };
}

/** The owner's side: runs a passed call on this instance's control plane, marked as passed. */
export async function runHere(app: FastifyInstance, call: AdminCall): Promise<AdminAnswer> {
  const res = await app.inject({
    method: call.method as 'GET',
    url: call.url,
    headers: {
      [ROUTED_HEADER]: '1',
      ...(call.authorization === undefined ? {} : { authorization: call.authorization }),
      ...(call.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(call.body === undefined ? {} : { payload: call.body }),
  });
  return { status: res.statusCode, body: res.body };
}
