/**
 * The data plane's reply batching (src/http/replies.ts, ReplyBatch), through fastify's inject: every
 * request of a turn is answered, and replies still waiting when the plane closes go out with
 * `Connection: close`; the Query protocol at a queue's URL (`/<account>/<queue>`, raw HTTP: no
 * client sends there); and, on a ManualClock, redelivery order over both protocols, which a real
 * client could only show by sleeping; CORS (src/http/cors.ts, JSON 1.0 as the SDK in a browser
 * sends it): preflights, the headers of replies and errors, and how CORS meets the SigV4 check and
 * a passive instance's gate (the browser itself: test/e2e/cors.test.ts). The wire formats
 * themselves are covered by the e2e tests.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { Duplex } from 'node:stream';
import { test, type TestContext } from 'node:test';
import { ManualClock, type Clock } from '../../src/core/clock.js';
import { CORS_ALLOWED_HEADERS, CORS_MAX_AGE_SECONDS } from '../../src/http/cors.js';
import { buildDataPlane, type DataPlaneOptions } from '../../src/http/data.js';
import { createLogger } from '../../src/log.js';
import type { SqsServices } from '../../src/sqs/service.js';
import { memoryServices } from '../support/services.js';

function dataPlane(
  t: TestContext,
  {
    clock,
    ...extra
  }: { clock?: Clock } & Partial<
    Pick<DataPlaneOptions, 'corsOrigins' | 'auth' | 'durability' | 'observe'>
  > = {},
): { app: ReturnType<typeof buildDataPlane>; services: SqsServices } {
  const services = memoryServices(undefined, clock);
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
  return { app, services };
}

function call(
  app: ReturnType<typeof buildDataPlane>,
  action: string,
  input: object,
  headers: Record<string, string> = {},
) {
  return app.inject({
    method: 'POST',
    url: '/',
    headers: {
      'content-type': 'application/x-amz-json-1.0',
      'x-amz-target': `AmazonSQS.${action}`,
      ...headers,
    },
    payload: JSON.stringify(input),
  });
}

const QUEUE_URL = 'http://localhost:4100/000000000000/q';

/** A data plane holding one queue, `q` (at QUEUE_URL), created over the wire. */
async function dataPlaneWithQueue(
  t: TestContext,
  options: Parameters<typeof dataPlane>[1] = {},
): Promise<ReturnType<typeof dataPlane>> {
  const plane = dataPlane(t, options);
  assert.equal((await call(plane.app, 'CreateQueue', { QueueName: 'q' })).statusCode, 200);
  return plane;
}

void test(
  'Given 200 SendMessage requests in one turn, when they are answered together, then each gets its own 200 and every message is stored',
  { timeout: 10_000 },
  async (t) => {
    const { app, services } = await dataPlaneWithQueue(t);
    const replies = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        call(app, 'SendMessage', { QueueUrl: QUEUE_URL, MessageBody: `m${i}` }),
      ),
    );
    const ids = new Set<string>();
    for (const r of replies) {
      assert.equal(r.statusCode, 200, r.body);
      assert.match(String(r.headers['content-type']), /^application\/x-amz-json-1\.0/);
      assert.match(String(r.headers['x-amzn-requestid']), /^[0-9a-f-]{36}$/);
      ids.add(r.json<{ MessageId: string }>().MessageId);
    }
    assert.equal(ids.size, 200);
    assert.equal(services.store.get('000000000000', 'q')?.size, 200);
  },
);

void test(
  'Given a waiting long poll, when the data plane closes, then the poll is answered 200 with Connection: close',
  { timeout: 10_000 },
  async (t) => {
    const { app, services } = await dataPlaneWithQueue(t);
    const poll = call(app, 'ReceiveMessage', { QueueUrl: QUEUE_URL, WaitTimeSeconds: 20 });
    // The poll is parked once the poller counts it; then stop as main.ts does.
    while (services.poller.waiting === 0) await new Promise((r) => setImmediate(r));
    services.poller.closeAll();
    const closed = app.close();
    const r = await poll;
    await closed;
    assert.equal(r.statusCode, 200);
    assert.deepEqual(r.json(), {});
    assert.equal(r.headers.connection, 'close');
  },
);

/** A socket that keeps what is written to it, for answers written on the raw connection. */
function capturingSocket(extra: object = {}): { socket: Duplex; written: () => string } {
  const chunks: Buffer[] = [];
  const socket = new Duplex({
    read() {},
    write(chunk: Buffer, _enc, cb) {
      chunks.push(Buffer.from(chunk));
      cb();
    },
  });
  Object.assign(socket, extra);
  return { socket, written: () => Buffer.concat(chunks).toString('utf8') };
}

void test("Given a request body not received in time (Node's 408), when answered, then in the AWS shape of the request's protocol, with a request id", async (t) => {
  const { app } = dataPlane(t);
  await app.ready();
  const timeout = Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' });
  const json = capturingSocket({
    _httpMessage: { headersSent: false, req: { headers: { 'x-amz-target': 'AmazonSQS.SendMessage' } } },
  });
  app.server.emit('clientError', timeout, json.socket);
  await new Promise((resolve) => json.socket.once('finish', resolve));
  const [head = '', body = ''] = json.written().split('\r\n\r\n');
  assert.match(head, /^HTTP\/1\.1 408 Request Timeout\r\n/);
  assert.match(head, /\r\nx-amzn-query-error: RequestTimeout;Sender\r\n/);
  assert.match(head, /\r\nx-amzn-RequestId: [0-9a-f-]{36}\r\n/);
  assert.match(head, /\r\nconnection: close(\r\n|$)/);
  assert.equal(
    (JSON.parse(body) as { __type: string }).__type,
    'com.amazon.coral.service#RequestTimeoutException',
  );

  // Nothing tells the protocol: Query's XML.
  const bare = capturingSocket();
  app.server.emit('clientError', timeout, bare.socket);
  await new Promise((resolve) => bare.socket.once('finish', resolve));
  assert.match(bare.written(), /<Code>RequestTimeout<\/Code>[\s\S]*<RequestId>[0-9a-f-]{36}<\/RequestId>/);

  // An answer already begun is not interrupted by another.
  const started = capturingSocket({ _httpMessage: { headersSent: true } });
  app.server.emit('clientError', timeout, started.socket);
  assert.equal(started.written(), '');
  assert.ok(started.socket.destroyed);
});

/**
 * Headers that never finish: Node's parser holds them in its native half, and its headers timer
 * (checked every 30 s) emits clientError with no request. Sent on a real socket; the timer's
 * emit is done here once the server has read every byte, so no test waits 60 s.
 */
for (const { label, head, protocol } of [
  {
    label: 'JSON, whole header lines',
    head: 'POST / HTTP/1.1\r\nHost: x\r\ncontent-type: application/x-amz-json-1.0\r\nx-amz-target: AmazonSQS.ListQueues\r\ncontent-length: 2\r\n',
    protocol: 'json',
  },
  {
    label: 'JSON, cut inside the X-Amz-Target value',
    head: 'POST / HTTP/1.1\r\nHost: x\r\nx-amz-target: AmazonSQS.Li',
    protocol: 'json',
  },
  {
    label: 'a form with X-Amz-Target (Query)',
    head: 'POST / HTTP/1.1\r\nHost: x\r\ncontent-type: application/x-www-form-urlencoded\r\nx-amz-target: AmazonSQSv20121105.ListQueues\r\n',
    protocol: 'query',
  },
  { label: 'a request line cut short', head: 'POST / HT', protocol: 'query' },
] as const) {
  void test(`Given headers that never finish (${label}), when Node's headers timer fires, then a 408 in the ${protocol} shape and no request runs`, async (t) => {
    const seen: Array<[string, string, number]> = [];
    const { app } = dataPlane(t, { observe: (action, p, status) => seen.push([action, p, status]) });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const serverSide = new Promise<Duplex>((resolve) => app.server.once('connection', resolve));
    const client = connect((app.server.address() as AddressInfo).port, '127.0.0.1');
    const chunks: Buffer[] = [];
    client.on('data', (c: Buffer) => chunks.push(c));
    const closed = new Promise((resolve) => client.once('close', resolve));
    client.write(head);
    const socket = (await serverSide) as Duplex & { bytesRead: number };
    while (socket.bytesRead < head.length) await new Promise((resolve) => setImmediate(resolve));
    app.server.emit(
      'clientError',
      Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }),
      socket,
    );
    await closed;
    const [answer = '', body = ''] = Buffer.concat(chunks).toString('utf8').split('\r\n\r\n');
    assert.match(answer, /^HTTP\/1\.1 408 Request Timeout\r\n/);
    assert.match(answer, /\r\nx-amzn-RequestId: [0-9a-f-]{36}\r\n/);
    if (protocol === 'json') {
      assert.match(answer, /\r\nx-amzn-query-error: RequestTimeout;Sender\r\n/);
      assert.equal(
        (JSON.parse(body) as { __type: string }).__type,
        'com.amazon.coral.service#RequestTimeoutException',
      );
    } else {
      assert.match(body, /^<\?xml[\s\S]*<Code>RequestTimeout<\/Code>/);
    }
    assert.deepEqual(seen, [['Unknown', protocol, 408]]);
  });
}

// ---- Query protocol at a queue's URL (AWS, recorded) ---------------------------------------------

function queryAt(
  app: ReturnType<typeof buildDataPlane>,
  method: 'GET' | 'POST',
  path: string,
  query: string,
) {
  return method === 'GET'
    ? app.inject({ method, url: query === '' ? path : `${path}?${query}` })
    : app.inject({
        method,
        url: path,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: query,
      });
}

for (const method of ['GET', 'POST'] as const) {
  void test(`Given a queue, when queue-level Query actions are sent to its URL by ${method}, then they act on that queue`, async (t) => {
    const { app, services } = await dataPlaneWithQueue(t);
    const empty = await queryAt(app, method, '/000000000000/q', 'Action=ReceiveMessage&Version=2012-11-05');
    assert.equal(empty.statusCode, 200, empty.body);
    assert.match(empty.body, /<ReceiveMessageResult\/>/);
    const sent = await queryAt(
      app,
      method,
      '/000000000000/q',
      'Action=SendMessage&MessageBody=hi&Version=2012-11-05',
    );
    assert.equal(sent.statusCode, 200, sent.body);
    assert.equal(services.store.get('000000000000', 'q')?.size, 1);
    const got = await queryAt(app, method, '/000000000000/q', 'Action=ReceiveMessage&Version=2012-11-05');
    assert.match(got.body, /<Body>hi<\/Body>/);
    const attrs = await queryAt(
      app,
      method,
      '/000000000000/q',
      'Action=GetQueueAttributes&AttributeName.1=ApproximateNumberOfMessagesNotVisible',
    );
    assert.match(attrs.body, /<Value>1<\/Value>/);
  });

  void test(`Query: GetQueueUrl works at a queue's URL: given queues q and other, when GetQueueUrl for either is sent to q's URL by ${method}, then 200 with the named queue's URL`, async (t) => {
    const { app } = await dataPlaneWithQueue(t);
    assert.equal((await call(app, 'CreateQueue', { QueueName: 'other' })).statusCode, 200);
    for (const name of ['q', 'other']) {
      const r = await queryAt(
        app,
        method,
        '/000000000000/q',
        `Action=GetQueueUrl&QueueName=${name}&QueueOwnerAWSAccountId=000000000000&Version=2012-11-05`,
      );
      assert.equal(r.statusCode, 200, r.body);
      assert.match(r.body, new RegExp(`<QueueUrl>http://localhost:4100/000000000000/${name}</QueueUrl>`));
    }
  });

  void test(`Given a queue's URL, when CreateQueue or ListQueues is sent to it by ${method}, then 400 InvalidAction naming the action`, async (t) => {
    const { app } = await dataPlaneWithQueue(t);
    for (const action of ['CreateQueue', 'ListQueues']) {
      const r = await queryAt(app, method, '/000000000000/q', `Action=${action}&QueueName=x`);
      assert.equal(r.statusCode, 400, r.body);
      assert.match(r.body, /<Code>InvalidAction<\/Code>/);
      assert.match(
        r.body,
        new RegExp(`<Message>The action ${action} is not valid for this endpoint.</Message>`),
      );
    }
  });
}

void test("Given a queue's URL, when it is fetched by GET with no query, then 404 with an UnknownOperationException body", async (t) => {
  const { app } = await dataPlaneWithQueue(t);
  for (const url of ['/000000000000/q', '/000000000000/q?']) {
    const r = await app.inject({ method: 'GET', url });
    assert.equal(r.statusCode, 404, r.body);
    assert.equal(r.body, '<UnknownOperationException/>');
    assert.match(String(r.headers['x-amzn-requestid']), /^[0-9a-f-]{36}$/);
  }
});

void test('Given a deleted queue, when a Query action is sent to its URL, then 400 NonExistentQueue', async (t) => {
  const { app } = await dataPlaneWithQueue(t);
  assert.equal((await call(app, 'DeleteQueue', { QueueUrl: QUEUE_URL })).statusCode, 200);
  const r = await queryAt(app, 'GET', '/000000000000/q', 'Action=ReceiveMessage');
  assert.equal(r.statusCode, 400, r.body);
  assert.match(r.body, /<Code>AWS.SimpleQueueService.NonExistentQueue<\/Code>/);
  assert.match(r.body, /<Message>The specified queue does not exist for this wsdl version.<\/Message>/);
});

void test("Given a Query request with Accept: application/json at a queue's URL, when answered, then in the Query API's JSON form", async (t) => {
  const { app } = await dataPlaneWithQueue(t);
  const r = await app.inject({
    method: 'GET',
    url: '/000000000000/q?Action=ReceiveMessage',
    headers: { accept: 'application/json' },
  });
  assert.equal(r.statusCode, 200, r.body);
  assert.match(String(r.headers['content-type']), /^application\/json/);
  const body = r.json<{
    ReceiveMessageResponse: { ReceiveMessageResult: unknown; ResponseMetadata: { RequestId: string } };
  }>();
  assert.deepEqual(body.ReceiveMessageResponse.ReceiveMessageResult, { messages: null });
  assert.equal(body.ReceiveMessageResponse.ResponseMetadata.RequestId, r.headers['x-amzn-requestid']);
});

// ---- a message whose visibility expired comes before later sends (recorded from AWS) ------------

for (const protocol of ['json', 'query'] as const) {
  void test(`Given m1 received with VisibilityTimeout 3 and m2 sent 1.5 s later, when received after m1's timeout (${protocol}), then m1 comes first`, async (t) => {
    const clock = new ManualClock();
    const { app } = await dataPlaneWithQueue(t, { clock });
    const receiveOne = async (vt?: number): Promise<string | undefined> => {
      if (protocol === 'json') {
        const r = await call(app, 'ReceiveMessage', {
          QueueUrl: QUEUE_URL,
          ...(vt === undefined ? {} : { VisibilityTimeout: vt }),
        });
        return r.json<{ Messages?: Array<{ Body: string }> }>().Messages?.[0]?.Body;
      }
      const r = await queryAt(
        app,
        'POST',
        '/000000000000/q',
        `Action=ReceiveMessage${vt === undefined ? '' : `&VisibilityTimeout=${vt}`}`,
      );
      return /<Body>([^<]*)<\/Body>/.exec(r.body)?.[1];
    };
    await call(app, 'SendMessage', { QueueUrl: QUEUE_URL, MessageBody: 'm1' });
    assert.equal(await receiveOne(3), 'm1');
    clock.advance(1500);
    await call(app, 'SendMessage', { QueueUrl: QUEUE_URL, MessageBody: 'm2' });
    clock.advance(3000);
    assert.equal(await receiveOne(), 'm1');
    assert.equal(await receiveOne(), 'm2');
  });
}

// ---- CORS (--cors-origin) -------------------------------------------------------------------------

const PAGE = 'http://page.test:8080';

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

void test('Given no CORS origins, when a browser preflights and posts, then OPTIONS is refused as today and no reply has CORS headers', async (t) => {
  const { app } = dataPlane(t);
  const pre = await preflight(app);
  assert.equal(pre.statusCode, 400);
  assert.match(pre.body, /The HTTP method OPTIONS is not valid for this endpoint/);
  const r = await call(app, 'ListQueues', {}, { origin: PAGE });
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
  const { app } = dataPlane(t, { corsOrigins: [PAGE] });
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
  const { app } = dataPlane(t, { corsOrigins: [PAGE] });
  const ok = await call(app, 'ListQueues', {}, { origin: PAGE });
  const missing = await call(app, 'GetQueueUrl', { QueueName: 'nope' }, { origin: PAGE });
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
  const { app } = dataPlane(t, { corsOrigins: [PAGE] });
  const pre = await preflight(app, 'http://evil.test');
  assert.equal(pre.statusCode, 400);
  assert.match(pre.body, /InvalidAction|not valid for this endpoint/);
  assert.equal(pre.headers['access-control-allow-origin'], undefined);
  const r = await call(app, 'ListQueues', {}, { origin: 'http://evil.test' });
  assert.equal(r.statusCode, 200);
  assert.equal(r.headers['access-control-allow-origin'], undefined);
});

void test('Given CORS on, when a client outside a browser posts (no Origin), then its reply has no CORS headers', async (t) => {
  const { app } = dataPlane(t, { corsOrigins: ['*'] });
  const r = await call(app, 'ListQueues', {});
  assert.equal(r.statusCode, 200);
  assert.equal(r.headers['access-control-allow-origin'], undefined);
});

void test('Given CORS on, when an OPTIONS from an allowed origin is no preflight, then it gets the AWS-shaped 400 of today', async (t) => {
  const { app } = dataPlane(t, { corsOrigins: [PAGE] });
  const r = await app.inject({ method: 'OPTIONS', url: '/', headers: { origin: PAGE } });
  assert.equal(r.statusCode, 400);
  assert.match(r.body, /The HTTP method OPTIONS is not valid for this endpoint/);
  assert.equal(r.headers['access-control-allow-origin'], undefined);
});

void test('Given * as the origin, when any page preflights and posts, then Access-Control-Allow-Origin is *', async (t) => {
  const { app } = dataPlane(t, { corsOrigins: ['*'] });
  const pre = await preflight(app, 'http://anything.test');
  assert.equal(pre.statusCode, 204);
  assert.equal(pre.headers['access-control-allow-origin'], '*');
  const r = await call(app, 'ListQueues', {}, { origin: 'http://anything.test' });
  assert.equal(r.headers['access-control-allow-origin'], '*');
});

void test('Given auth on, when a page preflights (no signature), then 204; its unsigned POST gets a 403 the page can read', async (t) => {
  const { app } = dataPlane(t, {
    corsOrigins: [PAGE],
    auth: { mode: 'on', keyOwner: () => undefined, now: Date.now },
  });
  const pre = await preflight(app);
  assert.equal(pre.statusCode, 204);
  const r = await call(app, 'ListQueues', {}, { origin: PAGE });
  assert.equal(r.statusCode, 403, r.body);
  assert.equal(r.headers['x-amzn-query-error'], 'MissingAuthenticationToken;Sender');
  assert.equal(r.headers['access-control-allow-origin'], PAGE);
});

void test('Given a passive instance, when a page preflights and posts, then the preflight is answered and the POST gets a 503 the page can read', async (t) => {
  const { app } = dataPlane(t, {
    corsOrigins: [PAGE],
    durability: { kind: 'redis', serving: false, commit: () => Promise.resolve() },
  });
  const pre = await preflight(app);
  assert.equal(pre.statusCode, 204);
  assert.equal(pre.headers['access-control-allow-origin'], PAGE);
  const r = await call(app, 'ListQueues', {}, { origin: PAGE });
  assert.equal(r.statusCode, 503);
  assert.equal(r.headers['access-control-allow-origin'], PAGE);
  // Without CORS a passive instance refuses an OPTIONS with the same 503 as anything else.
  const { app: plain } = dataPlane(t, {
    durability: { kind: 'redis', serving: false, commit: () => Promise.resolve() },
  });
  assert.equal((await preflight(plain)).statusCode, 503);
});
