/**
 * The two HA routes of the control plane's admin API (the rest of it is admin.ts'):
 *
 * - GET  /admin/leader            who leads, since when, the epoch, the last renewal: this
 *                                 instance's elector state, the lock as Redis has it, and how
 *                                 many of the shard leases the term holds
 * - POST /admin/leader/step-down  a planned switchover: drain, flush, release and announce the
 *                                 lock, then sit out one TTL (or until another instance leads);
 *                                 the process keeps running as a follower
 *
 * Both need the admin token (admin-auth.ts: 401 for a missing or wrong one, 403 when none is
 * configured).
 */
import type { FastifyInstance } from 'fastify';
import type { ActivePassive } from '../ha/active.js';
import { adminAuth } from './admin-auth.js';
import { GET_LEADER, STEP_DOWN } from './admin-schemas.js';
import { adminSchemaScope } from './schema-compilers.js';

export interface AdminHaOptions {
  /** Undefined: the admin API is closed (403). */
  readonly adminToken: string | undefined;
  /** Undefined: no leader election (single instance, always the leader). */
  readonly ha: ActivePassive | undefined;
}

const iso = (ms: number | undefined): string | null => (ms === undefined ? null : new Date(ms).toISOString());

/** Adds the two routes in a plugin scope of their own, with the admin compilers (schema-compilers.ts). */
export function registerAdminHa(root: FastifyInstance, opts: AdminHaOptions): void {
  void root.register((app, _pluginOpts, done) => {
    adminSchemaScope(app, () => undefined);
    routes(app, opts);
    done();
  });
}

function routes(app: FastifyInstance, opts: AdminHaOptions): void {
  const onRequest = adminAuth(opts.adminToken);

  app.get('/admin/leader', { onRequest, schema: GET_LEADER }, async (_req, reply) => {
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
      // The current term's shard leases (held of total): a term serves only once it holds them all.
      leases: s.leases ?? null,
    });
  });

  app.post('/admin/leader/step-down', { onRequest, schema: STEP_DOWN }, async (_req, reply) => {
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
