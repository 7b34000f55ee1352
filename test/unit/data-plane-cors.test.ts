/**
 * CORS on the data plane (src/http/cors.ts) through fastify's inject, JSON 1.0 protocol (what the
 * SDK in a browser sends): preflights, the headers of replies and errors, and how CORS meets the
 * SigV4 check and a passive instance's gate. The browser itself is in test/e2e/cors.test.ts.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { CORS_ALLOWED_HEADERS, CORS_MAX_AGE_SECONDS } from '../../src/http/cors.js';
import { buildDataPlane, type DataPlaneOptions } from '../../src/http/data.js';
import { createLogger } from '../../src/log.js';
import { memoryServices } from '../support/services.js';

const PAGE = 'http://page.test:8080';

function dataPlane(
  t: TestContext,
  extra: Partial<Pick<DataPlaneOptions, 'corsOrigins' | 'auth' | 'isServing'>> = {},
): ReturnType<typeof buildDataPlane> {
  const services = memoryServices();
  const app = buildDataPlane({
    services,
    logger: createLogger('silent'),
    accountId: '000000000000',
    region: 'us-east-1',
    baseUrl: 'http://localhost:4100',
    ...extra,
  });
  t.after(async () => {
    services.poller.closeAll();
    services.mover.close();
    await app.close();
  });
  return app;
}

/** What Chromium sends before the SDK's first JSON request. */
function preflight(app: ReturnType<typeof buildDataPlane>, origin = PAGE) {
  return app.inject({
    method: 'OPTIONS',
    url: '/',
    headers: {
      origin,
      'access-control-request-method': 'POST',
      'access-control-request-headers':
        'amz-sdk-invocation-id,amz-sdk-request,authorization,content-type,x-amz-date,x-amz-target,x-amz-user-agent,x-amzn-query-mode',
    },
  });
}

function listQueues(app: ReturnType<typeof buildDataPlane>, headers: Record<string, string> = {}) {
  return app.inject({
    method: 'POST',
    url: '/',
    headers: {
      'content-type': 'application/x-amz-json-1.0',
      'x-amz-target': 'AmazonSQS.ListQueues',
      ...headers,
    },
    payload: '{}',
  });
}

void test('Given no CORS origins, when a browser preflights and posts, then OPTIONS is refused as today and no reply has CORS headers', async (t) => {
  const app = dataPlane(t);
  const pre = await preflight(app);
  assert.equal(pre.statusCode, 400);
  assert.match(pre.body, /The HTTP method OPTIONS is not valid for this endpoint/);
  const r = await listQueues(app, { origin: PAGE });
  assert.equal(r.statusCode, 200);
  for (const reply of [pre, r]) {
    assert.equal(
      Object.keys(reply.headers).some((name) => name.startsWith('access-control-')),
      false,
    );
    assert.equal(reply.headers.vary, undefined);
  }
});

void test('Given an allowed origin, when a browser preflights, then 204 allows the SigV4 and SDK headers for that origin', async (t) => {
  const app = dataPlane(t, { corsOrigins: [PAGE] });
  const r = await preflight(app);
  assert.equal(r.statusCode, 204);
  assert.equal(r.headers['access-control-allow-origin'], PAGE);
  assert.equal(r.headers['access-control-max-age'], String(CORS_MAX_AGE_SECONDS));
  assert.match(String(r.headers['access-control-allow-methods']), /POST/);
  const allowed = String(r.headers['access-control-allow-headers']).split(/,\s*/);
  for (const name of [
    'authorization',
    'x-amz-date',
    'x-amz-security-token',
    'x-amz-content-sha256',
    'x-amz-target',
  ]) {
    assert.ok(allowed.includes(name), `${name} not allowed`);
  }
  assert.deepEqual(allowed, [...CORS_ALLOWED_HEADERS]);
});

void test('Given an allowed origin, when the page posts, then the reply and an error reply both allow it and expose the request id', async (t) => {
  const app = dataPlane(t, { corsOrigins: [PAGE] });
  const ok = await listQueues(app, { origin: PAGE });
  const missing = await app.inject({
    method: 'POST',
    url: '/',
    headers: {
      origin: PAGE,
      'content-type': 'application/x-amz-json-1.0',
      'x-amz-target': 'AmazonSQS.GetQueueUrl',
    },
    payload: '{"QueueName":"nope"}',
  });
  assert.equal(ok.statusCode, 200);
  assert.equal(missing.statusCode, 400);
  for (const r of [ok, missing]) {
    assert.equal(r.headers['access-control-allow-origin'], PAGE);
    assert.match(String(r.headers['access-control-expose-headers']), /x-amzn-RequestId/);
    assert.match(String(r.headers['access-control-expose-headers']), /x-amzn-query-error/);
    // The SDK corrects its clock from Date after a skew error.
    assert.match(String(r.headers['access-control-expose-headers']), /\bdate\b/);
    assert.match(String(r.headers.vary), /Origin/);
  }
});

void test('Given an origin not listed, when it preflights and posts, then it is treated as without CORS', async (t) => {
  const app = dataPlane(t, { corsOrigins: [PAGE] });
  const pre = await preflight(app, 'http://evil.test');
  assert.equal(pre.statusCode, 400);
  assert.match(pre.body, /InvalidAction|not valid for this endpoint/);
  assert.equal(pre.headers['access-control-allow-origin'], undefined);
  const r = await listQueues(app, { origin: 'http://evil.test' });
  assert.equal(r.statusCode, 200);
  assert.equal(r.headers['access-control-allow-origin'], undefined);
});

void test('Given CORS on, when a client outside a browser posts (no Origin), then its reply has no CORS headers', async (t) => {
  const app = dataPlane(t, { corsOrigins: ['*'] });
  const r = await listQueues(app);
  assert.equal(r.statusCode, 200);
  assert.equal(r.headers['access-control-allow-origin'], undefined);
});

void test('Given CORS on, when an OPTIONS from an allowed origin is no preflight, then it gets the AWS-shaped 400 of today', async (t) => {
  const app = dataPlane(t, { corsOrigins: [PAGE] });
  const r = await app.inject({ method: 'OPTIONS', url: '/', headers: { origin: PAGE } });
  assert.equal(r.statusCode, 400);
  assert.match(r.body, /The HTTP method OPTIONS is not valid for this endpoint/);
  assert.equal(r.headers['access-control-allow-origin'], undefined);
});

void test('Given * as the origin, when any page preflights and posts, then Access-Control-Allow-Origin is *', async (t) => {
  const app = dataPlane(t, { corsOrigins: ['*'] });
  const pre = await preflight(app, 'http://anything.test');
  assert.equal(pre.statusCode, 204);
  assert.equal(pre.headers['access-control-allow-origin'], '*');
  const r = await listQueues(app, { origin: 'http://anything.test' });
  assert.equal(r.headers['access-control-allow-origin'], '*');
});

void test('Given auth on, when a page preflights (no signature), then 204; its unsigned POST gets a 403 the page can read', async (t) => {
  const app = dataPlane(t, {
    corsOrigins: [PAGE],
    auth: { mode: 'on', keyOwner: () => undefined, now: Date.now },
  });
  const pre = await preflight(app);
  assert.equal(pre.statusCode, 204);
  const r = await listQueues(app, { origin: PAGE });
  assert.equal(r.statusCode, 403, r.body);
  assert.equal(r.headers['x-amzn-query-error'], 'MissingAuthenticationToken;Sender');
  assert.equal(r.headers['access-control-allow-origin'], PAGE);
});

void test('Given a passive instance, when a page preflights and posts, then the preflight is answered and the POST gets a 503 the page can read', async (t) => {
  const app = dataPlane(t, { corsOrigins: [PAGE], isServing: () => false });
  const pre = await preflight(app);
  assert.equal(pre.statusCode, 204);
  assert.equal(pre.headers['access-control-allow-origin'], PAGE);
  const r = await listQueues(app, { origin: PAGE });
  assert.equal(r.statusCode, 503);
  assert.equal(r.headers['access-control-allow-origin'], PAGE);
  // Without CORS a passive instance refuses an OPTIONS with the same 503 as anything else.
  const plain = dataPlane(t, { isServing: () => false });
  assert.equal((await preflight(plain)).statusCode, 503);
});
