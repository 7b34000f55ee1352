/**
 * The control plane (default :4101): what operators and load balancers talk to.
 *
 * - GET /health   200 {"status":"ok"} while the process runs (liveness: never restart a follower)
 * - GET /ready    200 {"ready":true} when this instance serves traffic (with --active-active: a live
 *                 member with a shard map, src/wiring/owners.ts), else 503 {"ready":false}
 * - GET /metrics  Prometheus text of this instance's metrics (metrics.ts)
 *
 * Other routes (the admin API and page) are added by their owners on the returned instance before
 * it listens. Answers carry `Cache-Control: no-store`: a cached /ready is a wrong /ready.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Metrics } from './metrics.js';
import { lazySchemaController } from './schema-compilers.js';

export interface ControlPlaneOptions {
  /** Used as given (bind `plane: 'control'` before passing it). */
  readonly logger: FastifyBaseLogger;
  readonly metrics: Metrics;
  /** True while this instance is active (the leader, or always in single-instance mode). */
  readonly isReady: () => boolean;
}

export function buildControlPlane(opts: ControlPlaneOptions): FastifyInstance {
  // Used as given: src/server.ts passes `logger.child({ plane: 'control' })`.
  const { logger, metrics, isReady } = opts;
  // No per-request lines: load balancers poll /ready and Prometheus scrapes /metrics all day.
  // (`logController` replaces the deprecated top-level `disableRequestLogging` of fastify 5.12.)
  const app = Fastify({
    loggerInstance: logger,
    logController: new LogController({ disableRequestLogging: true }),
    schemaController: lazySchemaController,
  });

  app.addHook('onSend', (_request, reply, payload, done) => {
    reply.header('cache-control', 'no-store');
    done(null, payload);
  });

  app.get('/health', (_request, reply) => reply.send({ status: 'ok' }));

  app.get('/ready', (_request, reply) => {
    let ready = false;
    try {
      ready = isReady();
    } catch (err) {
      logger.error({ err }, 'readiness check failed; answering not ready');
    }
    return reply.code(ready ? 200 : 503).send({ ready });
  });

  app.get('/metrics', async (_request, reply) => {
    const text = await metrics.metrics();
    return reply.type(metrics.contentType).send(text);
  });

  app.setNotFoundHandler((request, reply) =>
    reply
      .code(404)
      .send({ error: 'NotFound', message: `no route for ${request.method} ${request.url.split('?')[0]}` }),
  );

  app.setErrorHandler((err, request, reply) => {
    const status =
      typeof err === 'object' && err !== null && 'statusCode' in err && typeof err.statusCode === 'number'
        ? err.statusCode
        : 500;
    if (status >= 500) {
      logger.error({ err, req: request }, 'control plane request failed');
      return reply.code(500).send({ error: 'InternalError', message: 'internal error' });
    }
    const message = err instanceof Error ? err.message : 'bad request';
    return reply.code(status).send({ error: 'BadRequest', message });
  });

  return app;
}
