/**
 * The two planes, built and listening: the data plane (the SQS API) first, then the control plane
 * (/health, /ready, /metrics, the admin API with its page and OpenAPI document), which is loaded
 * and built once the data plane listens, so that a first SQS request is not kept waiting for it.
 */
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import type { Durability } from '../core/durability.js';
import type { ActivePassive } from '../ha/active.js';
import { buildDataPlane } from '../http/data.js';
import type { Owners } from './owners.js';
import type { MessageMetrics } from '../http/message-metrics.js';
import type { Metrics } from '../http/metrics.js';
import { keyOwnerIn, tenantLabel } from '../http/tenancy.js';
import type { Logger } from '../log.js';
import type { Executor } from '../owners/executor.js';
import type { SqsServices } from '../sqs/service.js';

export interface PlanesOptions {
  readonly services: SqsServices;
  readonly durability: Durability;
  readonly ha: ActivePassive | undefined;
  readonly metrics: Metrics;
  readonly messageMetrics: MessageMetrics;
  readonly logger: Logger;
  /** --active-active: runs every request here or at its shard's owner (src/owners/router.ts). */
  readonly executor?: Executor | undefined;
  /**
   * --active-active: the admin API's shard routes (src/http/admin-shards.ts), and where its queue
   * calls run (src/http/admin-route.ts), and what /ready answers (else the durability's serving).
   */
  readonly owners?: Pick<Owners, 'admin' | 'adminRoute' | 'serveAdmin' | 'ready'> | undefined;
  /** Where the control plane listens instead of --host: a worker's private one is on 127.0.0.1. */
  readonly controlHost?: string | undefined;
}

export interface Planes {
  readonly data: FastifyInstance;
  readonly control: FastifyInstance;
}

export async function listenPlanes(config: Config, opts: PlanesOptions): Promise<Planes> {
  const { services, durability, ha, metrics, messageMetrics, logger } = opts;
  const data = buildDataPlane({
    services,
    logger: logger.child({ plane: 'data' }),
    accountId: config.accountId,
    region: config.region,
    baseUrl: config.baseUrl,
    corsOrigins: config.corsOrigin,
    observe: (action, protocol, status, seconds) => metrics.observeRequest(action, protocol, status, seconds),
    auth: { mode: config.auth, keyOwner: keyOwnerIn(() => services.store), now: () => services.clock.now() },
    onResult: (action, principal, queue, output) =>
      messageMetrics.countResult(
        action,
        principal.tenant ?? tenantLabel(services.store, principal.accountId),
        principal.region,
        queue,
        output,
      ),
    durability,
    executor: opts.executor,
    observeCommit: (seconds, durable) => messageMetrics.observeCommit(seconds, durable),
  });
  if (ha !== undefined) {
    // Counts the requests that passed the gate, so that a drain knows when they are all answered.
    data.addHook('onRequest', (_req, reply, done) => {
      reply.raw.once('close', ha.enter());
      done();
    });
  }
  await data.listen({ port: config.port, host: config.host });

  const [{ buildControlPlane }, { registerAdmin }] = await Promise.all([
    import('../http/control.js'),
    import('../http/admin.js'),
  ]);
  const control = buildControlPlane({
    logger: logger.child({ plane: 'control' }),
    metrics,
    isReady: opts.owners?.ready ?? (() => durability.serving),
  });
  registerAdmin(control, {
    adminToken: config.adminToken,
    ha,
    shards: opts.owners?.admin,
    route: opts.owners?.adminRoute,
    services,
    messageTotals: messageMetrics,
    durability,
    baseUrl: config.baseUrl,
    defaultAccountId: config.accountId,
    defaultRegion: config.region,
  });
  opts.owners?.serveAdmin(control);
  // Exclusive: a cluster worker's (--workers) control plane is its own, not shared through the
  // primary as the data plane is (src/wiring/workers.ts); elsewhere it changes nothing.
  await control.listen({ port: config.controlPort, host: opts.controlHost ?? config.host, exclusive: true });
  return { data, control };
}
