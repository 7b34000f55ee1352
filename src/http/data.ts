import type { IncomingMessage } from 'node:http';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { authenticate, type AuthOptions, type Principal } from '../auth/authenticate.js';
import { AuthError } from '../auth/sigv4.js';
import { memoryOnly, type Durability } from '../core/durability.js';
import { uuid } from '../core/ids.js';
import { detectProtocol, type Protocol } from '../protocol/detect.js';
import { decodeJson, encodeJson } from '../protocol/json.js';
import { utf8Text } from '../protocol/common.js';
import { parseForm } from '../protocol/form.js';
import { decodeQuery, encodeQueryJson, encodeQueryResult } from '../protocol/query.js';
import { actions } from '../sqs/actions/index.js';
import { SqsError } from '../sqs/errors.js';
import type { ActionName } from '../sqs/model.generated.js';
import type { Action, RequestContext, SqsServices } from '../sqs/service.js';
import { corsOptions } from './cors.js';
import { answerClientError, answerNodeRefusals, encodeError } from './node-refusals.js';
import { lazySchemaController } from './schema-compilers.js';

/**
 * The largest body worth reading: a 1 MiB batch, form-encoded (up to 3 bytes per byte) plus
 * the parameter names. Anything larger is refused before it is buffered.
 */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

export interface DataPlaneOptions {
  readonly services: SqsServices;
  readonly logger: Logger;
  readonly accountId: string;
  readonly region: string;
  /** Fixed scheme://host[:port] for queue URLs; when unset, taken from each request's headers. */
  readonly baseUrl?: string | undefined;
  /**
   * What a 200 promises and whether to answer at all (src/core/durability.ts): every request is
   * refused with a 503 while it is not serving, and answered only once its changes are durable.
   * Absent: memory only.
   */
  readonly durability?: Durability;
  readonly observe?: (action: string, protocol: string, status: number, seconds: number) => void;
  /** How long a reply waited for its changes to be durable, and whether they could be. */
  readonly observeCommit?: (seconds: number, durable: boolean) => void;
  /**
   * Who a request acts as (src/auth): the mode, the tenants' keys and the clock for SigV4. Absent:
   * auth off with no tenants (every request acts in `accountId`, or its 12-digit access key id).
   */
  readonly auth?: Pick<AuthOptions, 'mode' | 'keyOwner' | 'now'>;
  /**
   * Origins whose pages may call this plane from a browser, `['*']` for any (src/http/cors.ts).
   * Empty or absent: no CORS at all, and @fastify/cors is not even loaded.
   */
  readonly corsOrigins?: readonly string[] | undefined;
  /** Told of every successful action with its output (message counters); keep it cheap. */
  readonly onResult?: (
    action: ActionName,
    principal: Principal,
    queue: string | undefined,
    output: unknown,
  ) => void;
}

/**
 * The SQS data plane: every request is a POST (or GET) to `/` or `/<account>/<queue>`; the
 * protocol is told by its headers, decoded into the one API model, handed to the action, and
 * the answer encoded back in the same protocol.
 */
export function buildDataPlane(opts: DataPlaneOptions): FastifyInstance {
  const app = Fastify({
    logger: false,
    bodyLimit: MAX_BODY_BYTES,
    // No route here has a schema: fastify's compilers load only if one ever does.
    schemaController: lazySchemaController,
    // Long polls last up to 20 s; keep idle keep-alive connections longer than a poll cycle.
    keepAliveTimeout: 65_000,
    connectionTimeout: 0,
    requestTimeout: 120_000,
    // Answered by the gate below, in the AWS shape, rather than with fastify's JSON.
    return503OnClosing: false,
    // On close, idle keep-alive connections are closed at once; busy ones after their reply.
    forceCloseConnections: 'idle',
    // A path fastify cannot even decode (`/%zz`) still gets an AWS-shaped 400.
    frameworkErrors: (error, req, reply) => {
      const err = new SqsError('MalformedRequest', error.message);
      sendError(reply, detectProtocol(req.headers), err, uuid());
    },
    // What Node's HTTP parser refuses before there is a request (headers too large, a NUL in a
    // header, a request not sent in time) gets an AWS-shaped answer too.
    clientErrorHandler: (error, socket) => answerClientError(error, socket, observeRefusal),
    // Node's answer to HTTP/1.1 without Host is a bare 400; the route gives the AWS-shaped one.
    http: { requireHostHeader: false },
  });
  const { services, logger } = opts;
  const observe = opts.observe ?? (() => undefined);
  const observeRefusal = (protocol: Protocol, status: number): void =>
    observe('Unknown', protocol, status, 0);
  answerNodeRefusals(app.server, observeRefusal);
  const anyAccount = (opts.auth?.mode ?? 'off') === 'off';
  const authOptions: AuthOptions = {
    mode: opts.auth?.mode ?? 'off',
    keyOwner: opts.auth?.keyOwner ?? (() => undefined),
    now: opts.auth?.now ?? Date.now,
    defaultAccountId: opts.accountId,
    defaultRegion: opts.region,
  };

  app.removeAllContentTypeParsers();
  const keepBuffer = (
    _req: unknown,
    body: Buffer | string,
    done: (err: null, body: Buffer | string) => void,
  ): void => done(null, body);
  // The two types the SDKs send get parsers of their own: fastify caches the lookup for a named
  // type, while the catch-all parses the Content-Type header anew on every request (~1.5 µs).
  app.addContentTypeParser(
    ['application/x-amz-json-1.0', 'application/x-www-form-urlencoded'],
    { parseAs: 'buffer' },
    keepBuffer,
  );
  app.addContentTypeParser('*', { parseAs: 'buffer' }, keepBuffer);

  const corsOrigins = opts.corsOrigins ?? [];
  if (corsOrigins.length > 0) {
    // Registered before the gate's hook below (hooks run in the order they are added, plugins
    // included): preflights are answered and CORS headers set even where the gate refuses.
    void app.register(import('@fastify/cors'), corsOptions(corsOrigins));
  }

  // Once the server is closing, requests still arriving on open connections are refused.
  let closing = false;
  const refuse = (req: FastifyRequest, reply: FastifyReply): void => {
    const protocol = detectProtocol(req.headers);
    const err = new SqsError(
      'ServiceUnavailable',
      closing
        ? 'This instance is shutting down; retry against the active one.'
        : 'This instance is not serving; retry against the active one.',
    );
    if (closing) void reply.header('connection', 'close');
    sendError(reply, protocol, err, uuid());
    observe('Unknown', protocol, 503, 0);
  };
  // Memory-only always serves and has nothing to wait for: no gate, and no commit awaited (a
  // promise per request). Otherwise a callback hook gates, which costs no promise either. Without
  // the gate, serve() refuses requests while closing.
  const durability = opts.durability ?? memoryOnly;
  const durable = durability.kind !== 'memory';
  if (durable) {
    app.addHook('onRequest', (req, reply, done) => {
      if (!closing && durability.serving) done();
      else refuse(req, reply);
    });
  }
  const observeCommit = opts.observeCommit ?? (() => undefined);
  const commit = async (): Promise<void> => {
    const started = performance.now();
    try {
      await durability.commit();
      observeCommit((performance.now() - started) / 1000, true);
    } catch (e) {
      observeCommit((performance.now() - started) / 1000, false);
      throw e;
    }
  };

  const replies = new ReplyBatch();
  const serve = async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (closing) {
      refuse(req, reply);
      return;
    }
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
      // The decoders accept only the model's actions and the table has every one (its type says so).
      const run = actions[decoded.action] as Action<ActionName>;
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
      const output = await run(services, ctx, decoded.input as never);
      if (durable) await commit();
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

  // A handler that returns nothing leaves the reply to be sent later; one that returns a promise
  // (an async function) or the reply makes fastify wait for the response to finish through
  // stream listeners, ~0.7 µs a request.
  app.route({
    method: ['GET', 'POST'],
    url: '/*',
    handler: (req, reply) => {
      if (req.headers.host === undefined && req.raw.httpVersion === '1.1') {
        const protocol = detectProtocol(req.headers);
        void reply.header('connection', 'close');
        sendError(
          reply,
          protocol,
          new SqsError('BadRequest', 'An HTTP/1.1 request must have a Host header.'),
          uuid(),
        );
        observeRefusal(protocol, 400);
        return;
      }
      if (isBareQueueUrlGet(req)) {
        // AWS (recorded): a plain GET of a queue's URL names no operation.
        const requestId = uuid();
        void reply
          .code(404)
          .header('x-amzn-RequestId', requestId)
          .type('text/xml')
          .send('<UnknownOperationException/>');
        observe('Unknown', 'query', 404, 0);
        return;
      }
      // serve() turns every failure of an action into an AWS-shaped reply; this is for a bug in
      // serve() itself, which must not become an unhandled rejection (that would end the process).
      serve(req, reply).catch((e: unknown) => {
        const requestId = uuid();
        logger.error({ reqId: requestId, err: e }, 'unexpected error in the data plane');
        if (!reply.sent) sendError(reply, detectProtocol(req.headers), internalFailure(), requestId);
      });
    },
  });
  // Before the server stops taking connections and closes the idle ones.
  app.addHook('preClose', (done) => {
    closing = true;
    replies.close();
    done();
  });

  app.setNotFoundHandler((req, reply) => {
    const err = new SqsError(
      'InvalidAction',
      `The HTTP method ${req.method} is not valid for this endpoint.`,
    );
    sendError(reply, detectProtocol(req.headers), err, uuid());
  });

  // Errors fastify raises itself, before our handler runs: a body over the limit, a broken stream.
  app.setErrorHandler((error: { statusCode?: number; code?: string; message: string }, req, reply) => {
    const protocol = detectProtocol(req.headers);
    const requestId = uuid();
    let err: SqsError;
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      err = new SqsError('RequestEntityTooLarge', `Request body is larger than ${MAX_BODY_BYTES} bytes.`);
      observe('Unknown', protocol, err.def.status, 0);
      // A client still uploading cannot read an answer sent before it finishes (it gets EPIPE),
      // so the rest of the body is read and dropped first, up to a bound; past it the
      // connection is closed after the reply.
      return drain(req.raw, DRAIN_LIMIT_BYTES, DRAIN_LIMIT_MS).then((complete) => {
        if (!complete) void reply.header('connection', 'close');
        sendError(reply, protocol, err, requestId);
      });
    } else if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
      err = new SqsError('MalformedRequest', error.message);
    } else {
      logger.error({ reqId: requestId, err: error }, 'unexpected error before the action ran');
      err = internalFailure();
    }
    observe('Unknown', protocol, err.def.status, 0);
    sendError(reply, protocol, err, requestId);
  });

  return app;
}

/**
 * Successful replies are written together once this turn of the event loop has handled every
 * request that arrived in it, rather than each as soon as it is ready. Writing a reply to a socket
 * wakes the peer that reads it; when that peer is idle (a client on another vCPU of the same VM,
 * or nginx in front of us on this host), the wake-up costs more than the request's own work. Back
 * to back, the first write wakes the peer and the rest find it awake: on the bench's two vCPUs
 * this is a quarter to a third more SendMessage req/s under load (docs/decisions/002-reply-batching.md). A reply
 * waits at most for the other requests of its turn; alone in its turn (light load) it costs
 * ~40 µs of end-to-end p50 there. Error replies are rare and go out at once.
 */
class ReplyBatch {
  private pending: { reply: FastifyReply; type: string; body: string }[] = [];
  private closing = false;

  send(reply: FastifyReply, type: string, body: string): void {
    if (this.closing) {
      ReplyBatch.write(reply, type, body, true);
      return;
    }
    if (this.pending.length === 0) setImmediate(this.flush);
    this.pending.push({ reply, type, body });
  }

  /**
   * From now on every reply is written at once and closes its connection. The server closes only
   * idle connections when it stops; one whose reply (an answered long poll) was still waiting here
   * would otherwise stay open, idle, until its keep-alive timeout.
   */
  close(): void {
    this.closing = true;
    this.flush();
  }

  private readonly flush = (): void => {
    const batch = this.pending;
    this.pending = [];
    for (const { reply, type, body } of batch) ReplyBatch.write(reply, type, body, this.closing);
  };

  private static write(reply: FastifyReply, type: string, body: string, last: boolean): void {
    if (last) void reply.header('connection', 'close');
    void reply.type(type).send(asIs(body));
  }
}

const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;
const DRAIN_LIMIT_MS = 10_000;

/** Reads and drops what is left of a request body; true when it was read to its end. */
function drain(raw: IncomingMessage, maxBytes: number, maxMs: number): Promise<boolean> {
  if (raw.readableEnded || raw.destroyed) return Promise.resolve(raw.readableEnded);
  return new Promise((resolve) => {
    let seen = 0;
    const finish = (complete: boolean): void => {
      clearTimeout(timer);
      raw.off('data', onData);
      raw.off('end', onEnd);
      raw.off('error', onFail);
      raw.off('close', onFail);
      if (!complete) raw.pause();
      resolve(complete);
    };
    const onData = (chunk: Buffer): void => {
      seen += chunk.length;
      if (seen > maxBytes) finish(false);
    };
    const onEnd = (): void => finish(true);
    const onFail = (): void => finish(false);
    const timer = setTimeout(onFail, maxMs);
    raw.on('data', onData);
    raw.once('end', onEnd);
    raw.once('error', onFail);
    raw.once('close', onFail);
    raw.resume();
  });
}

function sendError(reply: FastifyReply, protocol: Protocol, err: SqsError, requestId: string): void {
  const encoded = encodeError(protocol, err, requestId);
  void reply
    .code(encoded.status)
    .headers(encoded.headers)
    .header('x-amzn-RequestId', requestId)
    .send(asIs(encoded.body));
}

/**
 * The body as bytes: fastify appends `; charset=utf-8` to a JSON-typed string body, while AWS's
 * Content-Type is exactly `application/x-amz-json-1.0`.
 */
function asIs(body: string): Buffer {
  return Buffer.from(body, 'utf8');
}

function internalFailure(): SqsError {
  return new SqsError('InternalFailure', 'We encountered an internal error. Please try again.');
}

function asSqsError(e: unknown, logger: Logger, requestId: string, action: string): SqsError {
  if (e instanceof SqsError) return e;
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
function isBareQueueUrlGet(req: FastifyRequest): boolean {
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
