/**
 * The two HA routes of the control plane's admin API (the rest of the admin API is issue 6's):
 *
 * - GET  /admin/leader            who leads, since when, the epoch, the last renewal: this
 *                                 instance's elector state and the lock as Redis has it
 * - POST /admin/leader/step-down  a planned switchover: drain, flush, release and announce the
 *                                 lock, then sit out one TTL (or until another instance leads);
 *                                 the process keeps running as a follower
 *
 * Both need `Authorization: Bearer <SHARED_SQS_ADMIN_TOKEN>`. A missing or wrong token is 401
 * (compared in constant time: both sides are hashed to 32 bytes first, so neither the content
 * nor the length of the configured token leaks through timing); with no token configured the
 * admin API is closed and every call is 403. The token is never logged (the control plane logs
 * no requests, and log.ts redacts `authorization`).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ActivePassive } from '../ha/active.js';

export interface AdminHaOptions {
  /** Undefined: the admin API is closed (403). */
  readonly adminToken: string | undefined;
  /** Undefined: no leader election (single instance, always the leader). */
  readonly ha: ActivePassive | undefined;
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** A pre-handler that answers 401/403 unless the request carries the admin token. */
export function adminAuth(
  adminToken: string | undefined,
): (req: FastifyRequest, reply: FastifyReply) => Promise<unknown> {
  const expected = adminToken === undefined ? undefined : digest(adminToken);
  // Async hooks that answer must return the reply (fastify then skips the handler).
  return async (req, reply) => {
    if (expected === undefined) {
      return reply.code(403).send({
        error: 'AdminDisabled',
        message: 'the admin API is closed: set SHARED_SQS_ADMIN_TOKEN (or --admin-token) to open it',
      });
    }
    const header = req.headers.authorization;
    const given = typeof header === 'string' && /^Bearer /i.test(header) ? header.slice(7).trim() : '';
    // Hash first: timingSafeEqual needs equal lengths, and comparing digests leaks no length.
    if (!timingSafeEqual(digest(given), expected)) {
      return reply
        .code(401)
        .header('www-authenticate', 'Bearer realm="shared-sqs admin"')
        .send({ error: 'Unauthorized', message: 'a valid admin bearer token is required' });
    }
    return undefined;
  };
}

const iso = (ms: number | undefined): string | null => (ms === undefined ? null : new Date(ms).toISOString());

export function registerAdminHa(app: FastifyInstance, opts: AdminHaOptions): void {
  // onRequest, not preHandler: the token is checked before any body is read, so a caller without
  // it gets 401 whatever it sends (a malformed body would otherwise get a parser's 400 first).
  const onRequest = adminAuth(opts.adminToken);

  app.get('/admin/leader', { onRequest }, async (_req, reply) => {
    const ha = opts.ha;
    if (ha === undefined) {
      return reply.send({ leaderElection: false, state: 'leader', leading: true, serving: true });
    }
    const s = await ha.status();
    const lock =
      'holder' in s.lock
        ? {
            holder: s.lock.holder ?? null,
            expiresInMs: s.lock.pttlMs ?? null,
            lastToken: s.lock.lastToken ?? null,
            since: iso(s.lock.since),
            lastRenewal: iso(s.lock.renewed),
            released: iso(s.lock.released),
          }
        : { error: s.lock.error };
    return reply.send({
      leaderElection: true,
      instanceId: s.instanceId,
      state: s.state,
      leading: s.leading,
      serving: s.serving,
      draining: s.draining,
      epoch: s.epoch ?? null,
      since: iso(s.since),
      lastRenewal: iso(s.lastRenewal),
      deadlineInMs: s.deadlineInMs ?? null,
      sittingOutUntil: iso(s.sittingOutUntil),
      takeovers: s.takeovers,
      fencedWrites: s.fenced,
      renewFailures: s.renewFailures,
      lastEnd: s.lastEnd === undefined ? null : { reason: s.lastEnd.reason, at: iso(s.lastEnd.at) },
      lock,
    });
  });

  app.post('/admin/leader/step-down', { onRequest }, async (_req, reply) => {
    const ha = opts.ha;
    if (ha === undefined) {
      return reply
        .code(409)
        .send({ error: 'NoLeaderElection', message: 'leader election is off: this instance always leads' });
    }
    const epoch = ha.elector.epoch;
    const stepped = await ha.stepDown();
    if (!stepped) {
      return reply
        .code(409)
        .send({ error: 'NotLeader', message: 'this instance holds no leader term', state: ha.elector.state });
    }
    return reply.send({ steppedDown: true, epoch: epoch ?? null, state: ha.elector.state });
  });
}
