/**
 * The shard routes of the admin API (the rest of it is admin.ts'), for --active-active:
 *
 * - GET  /admin/shards                  the members, the shard map (owner of each shard, whether it
 *                                       is pinned), and per shard what this instance knows: its
 *                                       hold (state, epoch) where it is this instance's, its
 *                                       queues, and their bytes where they are held here
 * - POST /admin/shards/{shard}/move     pins the shard to a live member: the coordinator moves it
 *                                       (the owner drains, flushes and releases it; the new owner
 *                                       reads in that shard only), and keeps it there while that
 *                                       member is live
 * - POST /admin/shards/drain            this instance leaves the membership and gives every shard
 *                                       away, and goes on routing: before a stop, or to empty a VM
 *
 * Without --active-active, GET answers `{ activeActive: false }` and the POSTs 409.
 */
import type { FastifyInstance } from 'fastify';
import { adminAuth } from './admin-auth.js';
import { DRAIN_SHARDS, GET_SHARDS, MOVE_SHARD } from './admin-schemas.js';

export interface ShardRow {
  readonly shard: number;
  readonly owner: string | null;
  readonly pinnedTo: string | null;
  /** This instance's hold of the shard; null where another instance owns it. */
  readonly here: { readonly state: string; readonly epoch: number | null } | null;
  /** Queues in the shard, as the catalog lists them (every instance's). */
  readonly queues: number;
  /** What the shard's queues hold in memory, where they are held here; null elsewhere. */
  readonly bytes: number | null;
}

export interface ShardsStatus {
  readonly instanceId: string;
  readonly coordinator: boolean;
  readonly mapVersion: number;
  readonly members: readonly { readonly id: string; readonly address: string; readonly startedAt: string }[];
  readonly shards: readonly ShardRow[];
}

/** What the routes ask of the many-owners wiring (src/wiring/owners.ts). */
export interface ShardsAdmin {
  status(): Promise<ShardsStatus>;
  /** False when `to` is not a live member. */
  move(shard: number, to: string): Promise<boolean>;
  /** Leaves and gives every shard away; how many it held. */
  drain(): Promise<number>;
}

export interface AdminShardsOptions {
  readonly adminToken: string | undefined;
  /** Undefined: not --active-active. */
  readonly shards: ShardsAdmin | undefined;
}

export function registerAdminShards(app: FastifyInstance, opts: AdminShardsOptions): void {
  const onRequest = adminAuth(opts.adminToken);
  const off = { error: 'NotActiveActive', message: 'shards have owners only with --active-active' };

  app.get('/admin/shards', { onRequest, schema: GET_SHARDS }, async (_req, reply) => {
    if (opts.shards === undefined) return reply.send({ activeActive: false });
    return reply.send({ activeActive: true, ...(await opts.shards.status()) });
  });

  app.post<{ Params: { shard: number }; Body: { to: string } }>(
    '/admin/shards/:shard/move',
    { onRequest, schema: MOVE_SHARD },
    async (req, reply) => {
      if (opts.shards === undefined) return reply.code(409).send(off);
      const { shard } = req.params;
      const { to } = req.body;
      if (!(await opts.shards.move(shard, to))) {
        return reply.code(404).send({ error: 'NoSuchMember', message: `${to} is not a live member` });
      }
      return reply.code(202).send({ shard, pinnedTo: to });
    },
  );

  app.post('/admin/shards/drain', { onRequest, schema: DRAIN_SHARDS }, async (_req, reply) => {
    if (opts.shards === undefined) return reply.code(409).send(off);
    return reply.send({ drained: true, shardsGiven: await opts.shards.drain() });
  });
}
