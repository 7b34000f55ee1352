/**
 * One data-plane request, from its headers to its reply: decode (JSON or Query), authenticate,
 * run the action, wait for its changes to be durable (or hand both to the plane's executor:
 * src/owners/executor.ts), encode and hand the reply to the batch.
 * Built once per plane by buildDataPlane (src/http/data.ts), which owns fastify and its hooks.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { authenticate, type AuthOptions, type Principal } from '../auth/authenticate.js';
import { AuthError } from '../auth/sigv4.js';
import { memoryOnly } from '../core/durability.js';
import { uuid } from '../core/ids.js';
import { utf8Text } from '../protocol/common.js';
import { detectProtocol } from '../protocol/detect.js';
import { parseForm } from '../protocol/form.js';
import { decodeJson, encodeJson } from '../protocol/json.js';
import { decodeQuery, encodeQueryJson, encodeQueryResult } from '../protocol/query.js';
import { actions } from '../sqs/actions/index.js';
import { internalFailure, knownSqsError, SqsError } from '../sqs/errors.js';
import type { ActionName } from '../sqs/model.generated.js';
import type { Action, RequestContext } from '../sqs/service.js';
import type { DataPlaneOptions } from './data.js';
import { sendError, type ReplyBatch } from './replies.js';

export interface Dispatch {
  /** Serves one request; every failure of its action becomes an AWS-shaped reply. */
  readonly serve: (req: FastifyRequest, reply: FastifyReply) => Promise<void>;
  /** Answers 503: the plane is closing, or its durability is not serving. */
  readonly refuse: (req: FastifyRequest, reply: FastifyReply) => void;
}

/**
 * The plane's serve and refuse. `state.closing` is set once the plane closes; `replies` writes
 * successful replies.
 */
export function dispatcher(
  opts: DataPlaneOptions,
  state: { readonly closing: boolean },
  replies: ReplyBatch,
): Dispatch {
  const { services, logger, executor } = opts;
  const observe = opts.observe ?? (() => undefined);
  const anyAccount = (opts.auth?.mode ?? 'off') === 'off';
  const authOptions: AuthOptions = {
    mode: opts.auth?.mode ?? 'off',
    keyOwner: opts.auth?.keyOwner ?? (() => undefined),
    now: opts.auth?.now ?? Date.now,
    defaultAccountId: opts.accountId,
    defaultRegion: opts.region,
  };
  const refuse = (req: FastifyRequest, reply: FastifyReply): void => {
    const protocol = detectProtocol(req.headers);
    const err = new SqsError(
      'ServiceUnavailable',
      state.closing
        ? 'This instance is shutting down; retry against the active one.'
        : 'This instance is not serving; retry against the active one.',
    );
    if (state.closing) void reply.header('connection', 'close');
    sendError(reply, protocol, err, uuid());
    observe('Unknown', protocol, 503, 0);
  };
  // Memory-only has nothing to wait for: no commit awaited (a promise per request).
  const durability = opts.durability ?? memoryOnly;
  const durable = durability.kind !== 'memory';
  const observeCommit = opts.observeCommit ?? (() => undefined);
  const commit = async (shard: number | undefined): Promise<void> => {
    const started = performance.now();
    try {
      await durability.commit(shard);
      observeCommit((performance.now() - started) / 1000, true);
    } catch (e) {
      observeCommit((performance.now() - started) / 1000, false);
      throw e;
    }
  };

  const serve = async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    // An executor (--active-active) still routes while the plane closes (src/server.ts); without
    // one this instance's store is going away: refused.
    if (state.closing && executor === undefined) {
      refuse(req, reply);
      return;
    }
    // Leaving: the connection ends after this reply, so a proxy opens its next one to another
    // instance rather than losing a request to the plane's close.
    if (state.closing || executor?.leaving === true) void reply.header('connection', 'close');
    const started = performance.now();
    const requestId = uuid();
    const protocol = detectProtocol(req.headers);
    let action = 'Unknown';
    let queue: string | undefined;
    let status = 200;
    let principal: Principal | undefined;
    try {
      const baseUrl = opts.baseUrl ?? baseUrlOf(req);
      const body = bodyOf(req);
      // Decoded first, so an authenticated request's metrics and logs name its action; but an
      // authentication failure wins over a decoding one: an unsigned client learns nothing more.
      let decoded: { action: ActionName; input: unknown } | undefined;
      let decodeError: unknown;
      try {
        decoded =
          protocol === 'json'
            ? decodeJson(header(req, 'x-amz-target'), body)
            : decodeQueryRequest(req.url, body, baseUrl);
        action = decoded.action;
        queue = queueOf(decoded.input);
      } catch (e) {
        decodeError = e;
      }
      principal = authenticate(
        authOptions,
        { method: req.method, url: req.url, headers: req.headers, body },
        protocol,
      );
      if (decoded === undefined) throw decodeError;
      const ctx: RequestContext = {
        requestId,
        accountId: principal.accountId,
        region: principal.region,
        defaultRegion: opts.region,
        baseUrl,
        anyAccount,
        senderId: principal.accountId,
        traceHeader: header(req, 'x-amzn-trace-id'),
        onAbort: (fn) => {
          reply.raw.once('close', () => {
            if (!reply.raw.writableFinished) fn();
          });
        },
      };
      let output: unknown;
      if (executor === undefined) {
        // The decoders accept only the model's actions and the table has every one (its type says so).
        const run = actions[decoded.action] as Action<ActionName>;
        output = await run(services, ctx, decoded.input as never);
        if (durable) await commit(ctx.shard);
      } else {
        output = await executor.execute(decoded.action, ctx, decoded.input);
      }
      opts.onResult?.(decoded.action, principal, queue, output);
      reply.header('x-amzn-RequestId', requestId);
      if (protocol === 'json') {
        replies.send(reply, 'application/x-amz-json-1.0', encodeJson(output));
      } else if (acceptsJson(req)) {
        replies.send(reply, 'application/json', encodeQueryJson(decoded.action, output, requestId));
      } else {
        replies.send(reply, 'text/xml', encodeQueryResult(decoded.action, output, requestId));
      }
    } catch (e) {
      const err = asSqsError(e, logger, requestId, action);
      status = err.def.status;
      sendError(reply, protocol, err, requestId);
    } finally {
      const ms = performance.now() - started;
      observe(action, protocol, status, ms / 1000);
      // Built only when it will be written: at the usual warn level the line costs nothing.
      if (logger.isLevelEnabled('info')) {
        logger.info(
          {
            reqId: requestId,
            action,
            queue,
            protocol,
            status,
            ms: Math.round(ms * 100) / 100,
            ...(principal?.tenant === undefined ? {} : { tenant: principal.tenant }),
          },
          'request',
        );
      }
    }
  };

  return { serve, refuse };
}

function asSqsError(e: unknown, logger: Logger, requestId: string, action: string): SqsError {
  const known = knownSqsError(e);
  if (known !== undefined) return known;
  if (e instanceof AuthError) return new SqsError(e.code, e.message);
  logger.error({ reqId: requestId, action, err: e }, 'unexpected error in an action');
  return internalFailure();
}

function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function bodyOf(req: FastifyRequest): Buffer {
  return Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
}

/**
 * Query parameters come from the URL and, for a form POST, the body. A request to
 * `/<account>/<queue>` names its queue by its path: that URL is decodeQuery's stand-in for a
 * missing QueueUrl.
 */
function decodeQueryRequest(
  url: string,
  body: Buffer,
  baseUrl: string,
): { action: ActionName; input: unknown } {
  const qm = url.indexOf('?');
  const params = qm >= 0 ? parseForm(url.slice(qm + 1)) : [];
  if (body.length > 0) parseForm(utf8Text(body), params);
  const path = qm >= 0 ? url.slice(0, qm) : url;
  return decodeQuery(params, path.length > 1 ? baseUrl + path : undefined);
}

/** A Query request that asks for its answer in JSON (encodeQueryJson). */
function acceptsJson(req: FastifyRequest): boolean {
  return header(req, 'accept')?.toLowerCase().includes('application/json') === true;
}

/** A GET of a path other than `/` with no query string and no JSON headers. */
export function isBareQueueUrlGet(req: FastifyRequest): boolean {
  if (req.method !== 'GET') return false;
  const qm = req.url.indexOf('?');
  const path = qm >= 0 ? req.url.slice(0, qm) : req.url;
  return path.length > 1 && (qm < 0 || qm === req.url.length - 1) && detectProtocol(req.headers) === 'query';
}

function baseUrlOf(req: FastifyRequest): string {
  const proto = header(req, 'x-forwarded-proto')?.split(',')[0]?.trim() ?? 'http';
  const host = header(req, 'x-forwarded-host')?.split(',')[0]?.trim() ?? header(req, 'host') ?? 'localhost';
  return `${proto}://${host}`;
}

function queueOf(input: unknown): string | undefined {
  if (input === null || typeof input !== 'object') return undefined;
  const o = input as { QueueUrl?: unknown; QueueName?: unknown };
  if (typeof o.QueueUrl === 'string') return o.QueueUrl.slice(o.QueueUrl.lastIndexOf('/') + 1);
  return typeof o.QueueName === 'string' ? o.QueueName : undefined;
}
