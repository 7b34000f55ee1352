/**
 * The data plane's reply batching (src/http/data.ts, ReplyBatch), through fastify's inject: every
 * request of a turn is answered, and replies still waiting when the plane closes go out with
 * `Connection: close`. The wire formats themselves are covered by the e2e tests.
 */
import assert from 'node:assert/strict';
import { Duplex } from 'node:stream';
import { test, type TestContext } from 'node:test';
import { buildDataPlane } from '../../src/http/data.js';
import { createLogger } from '../../src/log.js';
import type { SqsServices } from '../../src/sqs/service.js';
import { memoryServices } from '../helpers/services.js';

function dataPlane(t: TestContext): { app: ReturnType<typeof buildDataPlane>; services: SqsServices } {
  const services = memoryServices();
  const app = buildDataPlane({
    services,
    logger: createLogger('silent'),
    accountId: '000000000000',
    region: 'us-east-1',
    baseUrl: 'http://localhost:4100',
  });
  t.after(async () => {
    services.poller.closeAll();
    services.mover.close();
    await app.close();
  });
  return { app, services };
}

function call(app: ReturnType<typeof buildDataPlane>, action: string, input: object) {
  return app.inject({
    method: 'POST',
    url: '/',
    headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': `AmazonSQS.${action}` },
    payload: JSON.stringify(input),
  });
}

const QUEUE_URL = 'http://localhost:4100/000000000000/q';

void test(
  'Given 200 SendMessage requests in one turn, when they are answered together, then each gets its own 200 and every message is stored',
  { timeout: 10_000 },
  async (t) => {
    const { app, services } = dataPlane(t);
    assert.equal((await call(app, 'CreateQueue', { QueueName: 'q' })).statusCode, 200);
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
    const { app, services } = dataPlane(t);
    assert.equal((await call(app, 'CreateQueue', { QueueName: 'q' })).statusCode, 200);
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
