import type { IncomingMessage } from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { AuthOptions, Principal } from '../auth/authenticate.js';
import { memoryOnly, type Durability } from '../core/durability.js';
import { uuid } from '../core/ids.js';
import { detectProtocol, type Protocol } from '../protocol/detect.js';
import type { Executor } from '../owners/executor.js';
import { internalFailure, SqsError } from '../sqs/errors.js';
import type { ActionName } from '../sqs/model.generated.js';
import type { SqsServices } from '../sqs/service.js';
import { corsOptions } from './cors.js';
import { answerClientError, answerNodeRefusals } from './node-refusals.js';
import { ReplyBatch, sendError } from './replies.js';
import { lazySchemaController } from './schema-compilers.js';
import { dispatcher, isBareQueueUrlGet } from './serve.js';

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
  /**
   * Runs every request the plane has decoded and authenticated, and waits for its durability, in
   * place of the plane (src/owners/executor.ts). Given, the plane neither gates on
   * `durability.serving` nor commits: whoever owns the queue's shard does, and a router answers
   * with no shard of its own. Absent: the action runs here and `durability` is waited for.
   */
  readonly executor?: Executor | undefined;
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
  const { logger } = opts;
  const observe = opts.observe ?? (() => undefined);
  const observeRefusal = (protocol: Protocol, status: number): void =>
    observe('Unknown', protocol, status, 0);
  answerNodeRefusals(app.server, observeRefusal);

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
  const state = { closing: false };
  const replies = new ReplyBatch();
  const { serve, refuse } = dispatcher(opts, state, replies);
  // Memory-only always serves: no gate; nor with an executor, which decides for itself. Otherwise
  // a callback hook gates, which costs no promise; without the gate, serve() refuses requests
  // while closing.
  const durability = opts.durability ?? memoryOnly;
  if (durability.kind !== 'memory' && opts.executor === undefined) {
    app.addHook('onRequest', (req, reply, done) => {
      if (!state.closing && durability.serving) done();
      else refuse(req, reply);
    });
  }

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
    state.closing = true;
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
