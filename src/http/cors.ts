/**
 * CORS on the data plane (`--cors-origin`), so that a page can call shared-sqs with the AWS SDK
 * from a browser. Off by default: then @fastify/cors is neither loaded nor registered, and no
 * request pays for it.
 *
 * When on, @fastify/cors's onRequest hook runs before every other hook of the plane, so:
 * - a preflight (OPTIONS with Origin and Access-Control-Request-Method) is answered 204 by the hook
 *   itself: it carries no signature (browsers send none), so it never reaches the SigV4 check;
 *   and a passive or closing instance answers it too, since it says what the server allows, not
 *   what state it is in: the request that follows gets the instance's 503;
 * - every reply to an allowed origin carries Access-Control-Allow-Origin, errors and 503s included,
 *   so the SDK in the page reads the AWS error (and retries a 503) instead of seeing a network
 *   failure.
 *
 * A request that is no CORS request for an allowed origin (no Origin, as from the SDKs outside a
 * browser; an origin not listed; an OPTIONS that is no preflight) is handled as without the flag:
 * no CORS headers, and an OPTIONS gets the AWS-shaped 400 of a method the endpoint does not take.
 */
import type { FastifyCorsOptions } from '@fastify/cors';
import type { FastifyRequest } from 'fastify';

/**
 * What the AWS SDKs send beyond the CORS-safelisted headers: SigV4's (which browsers let a page
 * set, unlike Host and User-Agent), the JSON protocol's target, SDK v3's retry and user-agent
 * headers, and the query-compatible mode that the JSON 1.0 SDKs of SQS announce.
 */
export const CORS_ALLOWED_HEADERS = [
  'authorization',
  'content-type',
  'x-amz-date',
  'x-amz-security-token',
  'x-amz-content-sha256',
  'x-amz-target',
  'x-amz-user-agent',
  'amz-sdk-invocation-id',
  'amz-sdk-request',
  'x-amzn-query-mode',
  'x-amzn-trace-id',
] as const;

/**
 * Reply headers a page may read besides the safelisted ones: the request id, the Query error code
 * of a JSON error (what the SDK turns into the error's name), and Date, from which the SDK
 * corrects its clock after a RequestExpired / SignatureDoesNotMatch for skew.
 */
export const CORS_EXPOSED_HEADERS = ['x-amzn-RequestId', 'x-amzn-query-error', 'date'] as const;

/**
 * How long a browser may reuse a preflight's answer. Chromium caps it at 2 h; the SDK's JSON
 * requests all go to `/` with the same headers, so a page preflights about once per that.
 */
export const CORS_MAX_AGE_SECONDS = 7200;

/** @fastify/cors's options for `origins` (`['*']`: any); register it only when there are some. */
export function corsOptions(origins: readonly string[]): FastifyCorsOptions {
  const anyOrigin = origins.includes('*');
  const allowed: ReadonlySet<string> = new Set(origins);
  const on: FastifyCorsOptions = {
    // `*` needs no reflection: pages sign with a header, never with cookies (no credentials mode).
    origin: anyOrigin ? '*' : true,
    methods: ['GET', 'POST'],
    allowedHeaders: [...CORS_ALLOWED_HEADERS],
    exposedHeaders: [...CORS_EXPOSED_HEADERS],
    maxAge: CORS_MAX_AGE_SECONDS,
  };
  const off: FastifyCorsOptions = { origin: false };
  const isCors = (req: FastifyRequest): boolean => {
    const origin = req.headers.origin;
    if (origin === undefined || !(anyOrigin || allowed.has(origin))) return false;
    return req.method !== 'OPTIONS' || req.headers['access-control-request-method'] !== undefined;
  };
  return {
    delegator: (req, done) => done(null, isCors(req) ? on : off),
  };
}
