/**
 * GET /admin/openapi.json: the admin API's OpenAPI 3.1 document, written from the registered
 * routes' schemas (admin-schemas.ts, the one source) when first asked for. A stable path: tools
 * may fetch it.
 *
 * A walk over the routes of our own rather than @fastify/swagger: that plugin sees only the routes
 * registered after it (by an onRoute hook, as here), writes no components for shared schemas, adds
 * 31-42 ms of CPU to start and four packages (docs/decisions/012-own-openapi-writer.md).
 */
import type { RouteOptions } from 'fastify';
import { COMPONENTS, type AdminRouteSchema } from './admin-schemas.js';

const METHODS = ['get', 'put', 'post', 'delete'] as const;

/** A copy of `schema` with each shared schema (by identity) replaced by a reference to it. */
function withRefs(schema: unknown, top = true): unknown {
  if (typeof schema !== 'object' || schema === null) return schema;
  if (!top) {
    for (const [name, component] of Object.entries(COMPONENTS)) {
      if (component === schema) return { $ref: `#/components/schemas/${name}` };
    }
  }
  if (Array.isArray(schema)) return schema.map((s) => withRefs(s, false));
  return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, withRefs(v, false)]));
}

interface ObjectSchema {
  readonly properties?: Record<string, { description?: string }>;
  readonly required?: readonly string[];
}

function parameters(where: 'path' | 'query', schema: unknown): object[] {
  const s = (schema ?? {}) as ObjectSchema;
  return Object.entries(s.properties ?? {}).map(([name, property]) => ({
    name,
    in: where,
    ...(where === 'path' || s.required?.includes(name) === true ? { required: true } : {}),
    ...(property.description === undefined ? {} : { description: property.description }),
    schema: withRefs(property, false),
  }));
}

/** The OpenAPI 3.1 document of the routes that have an operationId, in the order registered. */
export function openApiDocument(routes: readonly RouteOptions[]): object {
  const paths: Record<string, Record<string, object>> = {};
  for (const route of routes) {
    const schema = route.schema as Partial<AdminRouteSchema> | undefined;
    if (schema?.operationId === undefined) continue;
    const path = route.url.replace(/:(\w+)/g, '{$1}');
    const body = schema.body as ObjectSchema | undefined;
    const operation = {
      operationId: schema.operationId,
      summary: schema.summary,
      ...(schema.params === undefined && schema.querystring === undefined
        ? {}
        : { parameters: [...parameters('path', schema.params), ...parameters('query', schema.querystring)] }),
      ...(body === undefined
        ? {}
        : {
            requestBody: {
              // A body with a required field must be sent; the others may be left out.
              required: (body.required?.length ?? 0) > 0,
              content: { 'application/json': { schema: withRefs(body, false) } },
            },
          }),
      responses: withRefs(schema.response, false),
    };
    const methods = (Array.isArray(route.method) ? route.method : [route.method]) as string[];
    for (const m of methods) {
      const method = m.toLowerCase() as (typeof METHODS)[number];
      if (METHODS.includes(method)) (paths[path] ??= {})[method] = operation;
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'shared-sqs admin API',
      version: '1',
      description:
        'Operators: tenants and their keys, queues across tenants and their recent activity, create, send, ' +
        'peek, delete a message, purge, redrive, delete, and the leader. Every operation needs ' +
        '`Authorization: Bearer <SHARED_SQS_ADMIN_TOKEN>`. Changes are durable (in Redis, when ' +
        'configured) before the reply. See docs/admin.md.',
    },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: Object.fromEntries(Object.entries(COMPONENTS).map(([name, s]) => [name, withRefs(s, true)])),
    },
    paths,
  };
}
