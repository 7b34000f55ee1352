/**
 * The admin API through fastify's inject (no socket): every route with the right token, every
 * protected route with a missing, wrong, empty and 10 KB token, and the OpenAPI description
 * against the routes actually registered. Every answer of every test is checked against the
 * response its route documents (src/http/admin-schemas.ts).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import vm from 'node:vm';
import { describe, test, type TestContext } from 'node:test';
import { Ajv, type ValidateFunction } from 'ajv';
import type { FastifyInstance, LightMyRequestResponse, RouteOptions } from 'fastify';

import { ManualClock } from '../../src/core/clock.js';
import { QueueStore } from '../../src/core/store.js';
import { registerAdmin, type AdminHandle } from '../../src/http/admin.js';
import { buildControlPlane } from '../../src/http/control.js';
import { MessageMetrics } from '../../src/http/message-metrics.js';
import { Metrics } from '../../src/http/metrics.js';
import { createLogger } from '../../src/log.js';
import { servicesFor } from '../../src/sqs/service.js';
import { inGroup, msg } from '../support/queue.js';

const TOKEN = 'admin-token-of-the-test';
const AUTH = { authorization: `Bearer ${TOKEN}` };
/** The routes served without a token. */
const PUBLIC = ['/admin/', '/admin/app.js', '/admin/style.css', '/admin/openapi.json'];
const QUEUE = '/admin/queues/111111111111/us-east-1/q';

interface Harness {
  readonly app: FastifyInstance;
  readonly store: QueueStore;
  readonly clock: ManualClock;
  readonly routes: RouteOptions[];
  readonly logLines: string[];
  /** The data plane's message counters, which the charts sample. */
  readonly counters: MessageMetrics;
  readonly admin: AdminHandle;
  serving: boolean;
  /** An authorized request to the admin API. */
  delete(url: string): Promise<LightMyRequestResponse>;
  get(url: string): Promise<LightMyRequestResponse>;
  post(url: string, payload?: object): Promise<LightMyRequestResponse>;
}

function harness(t: TestContext, storeOptions: { maxMemory?: number } = {}): Harness {
  const logLines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      logLines.push(chunk.toString('utf8'));
      cb();
    },
  });
  const clock = new ManualClock();
  const store = new QueueStore(clock, { deletedRecentlyMs: 0, ...storeOptions });
  const services = servicesFor(store, clock);
  const metrics = new Metrics({ defaultMetrics: false });
  const counters = new MessageMetrics(metrics);
  const app = buildControlPlane({ logger: createLogger('info', sink), metrics, isReady: () => true });
  const routes: RouteOptions[] = [];
  app.addHook('onRoute', (r) => {
    routes.push(r);
  });
  checkAnswers(t, app);
  let serving = true;
  const admin = registerAdmin(app, {
    adminToken: TOKEN,
    services,
    messageTotals: counters,
    // A gate the test opens and closes; changes are durable at once, as in memory.
    durability: {
      kind: 'redis',
      get serving() {
        return serving;
      },
      commit: () => Promise.resolve(),
    },
    baseUrl: 'http://sqs.test',
    defaultAccountId: '000000000000',
  });
  t.after(async () => {
    services.mover.close();
    services.poller.closeAll();
    await app.close();
  });
  return {
    app,
    store,
    clock,
    routes,
    logLines,
    counters,
    admin,
    delete: (url) => app.inject({ method: 'DELETE', url, headers: AUTH }),
    get: (url) => app.inject({ method: 'GET', url, headers: AUTH }),
    post: (url, payload) =>
      app.inject({ method: 'POST', url, headers: AUTH, ...(payload === undefined ? {} : { payload }) }),
    get serving() {
      return serving;
    },
    set serving(v: boolean) {
      serving = v;
    },
  };
}

/** Schemas compiled once for all tests; date-time as toISOString writes it. */
const answerAjv = new Ajv({ allowUnionTypes: true });
answerAjv.addFormat('date-time', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
const answerValidators = new Map<object, ValidateFunction>();

/**
 * Fails the test when an answer of a route with a schema is not one its schema documents: a status
 * it does not list, or a body its response schema refuses.
 */
function checkAnswers(t: TestContext, app: FastifyInstance): void {
  const wrong: string[] = [];
  app.addHook('onSend', (req, reply, payload, done) => {
    const responses = (req.routeOptions.schema as { response?: Record<string, unknown> } | undefined)
      ?.response;
    if (responses !== undefined) {
      const documented = responses[String(reply.statusCode)] as
        { content: { 'application/json': { schema: object } } } | undefined;
      const where = `${req.method} ${req.url} ${reply.statusCode}`;
      if (documented === undefined) wrong.push(`${where}: not documented`);
      else {
        const schema = documented.content['application/json'].schema;
        let validate = answerValidators.get(schema);
        if (validate === undefined) {
          validate = answerAjv.compile(schema);
          answerValidators.set(schema, validate);
        }
        if (!validate(JSON.parse(String(payload)))) {
          wrong.push(`${where}: ${answerAjv.errorsText(validate.errors)}`);
        }
      }
    }
    done(null, payload);
  });
  t.after(() => assert.deepEqual(wrong, [], 'answers that are not as documented'));
}

function queue(
  h: Harness,
  name: string,
  accountId = '111111111111',
  attributes: Record<string, string> = {},
) {
  return h.store.create({ accountId, region: 'us-east-1', name }, attributes, {}).queue;
}

/** Tenant team-a, account 111111111111, made in the store directly. */
function teamA(h: Harness): void {
  h.store.tenants.create(
    'team-a',
    '111111111111',
    [{ accessKeyId: 'AKIA1', secretAccessKey: 's', createdAt: 0 }],
    0,
  );
}

/** A queue of account 111111111111 holding a message for each body, sent in order. */
function queueWith(h: Harness, name: string, ...bodies: string[]): ReturnType<typeof queue> {
  const q = queue(h, name);
  for (const body of bodies) send(h, q, body);
  return q;
}

function send(h: Harness, q: ReturnType<typeof queue>, body: string) {
  return q.sendMessage(msg(body, { id: `id-${body}`, senderId: q.accountId }), h.clock.now());
}

void describe('admin API: tenants', () => {
  void test('Given the token, when a tenant is created, then 201 with a generated key whose secret is shown once', async (t) => {
    const h = harness(t);
    const res = await h.post('/admin/tenants', { name: 'team-a' });
    assert.equal(res.statusCode, 201);
    const body = res.json<{ accountId: string; newKey: { accessKeyId: string; secretAccessKey: string } }>();
    assert.match(body.accountId, /^\d{12}$/);
    assert.match(body.newKey.accessKeyId, /^AKIA[A-Z2-7]{16}$/);
    assert.equal(body.newKey.secretAccessKey.length, 40);
    assert.equal(h.store.tenants.byAccessKeyId(body.newKey.accessKeyId)?.tenant.name, 'team-a');

    const list = await h.get('/admin/tenants');
    assert.equal(list.statusCode, 200);
    assert.doesNotMatch(list.body, new RegExp(body.newKey.secretAccessKey.replace(/[+/=]/g, '.')));
    assert.deepEqual(
      list.json<{ tenants: { name: string }[] }>().tenants.map((x) => x.name),
      ['team-a'],
    );
    const one = await h.get('/admin/tenants/team-a');
    assert.equal(one.json<{ accountId: string }>().accountId, body.accountId);
  });

  void test('Given a taken name or account, when creating, then 409; a bad name, 400; no name, 400', async (t) => {
    const h = harness(t);
    const create = (payload: object) => h.post('/admin/tenants', payload);
    assert.equal((await create({ name: 'a', accountId: '111111111111' })).statusCode, 201);
    assert.equal((await create({ name: 'a', accountId: '222222222222' })).statusCode, 409);
    assert.equal((await create({ name: 'b', accountId: '111111111111' })).statusCode, 409);
    assert.equal((await create({ name: 'bad name' })).statusCode, 400);
    assert.equal((await create({})).statusCode, 400);
    assert.equal((await create({ name: 'c', accountId: 12 })).statusCode, 400);
  });

  void test('Given a tenant, when its keys are rotated, then the new key works; with replace the old one stops', async (t) => {
    const h = harness(t);
    const created = await h.post('/admin/tenants', { name: 'r' });
    const oldKey = created.json<{ newKey: { accessKeyId: string } }>().newKey.accessKeyId;
    const added = await h.post('/admin/tenants/r/keys');
    assert.equal(added.statusCode, 201);
    const second = added.json<{ newKey: { accessKeyId: string } }>().newKey.accessKeyId;
    assert.equal(h.store.tenants.get('r')?.keys.length, 2);
    const replaced = await h.post('/admin/tenants/r/keys', { replace: true });
    const third = replaced.json<{ newKey: { accessKeyId: string } }>().newKey.accessKeyId;
    assert.deepEqual(
      h.store.tenants.get('r')?.keys.map((k) => k.accessKeyId),
      [third],
    );
    assert.equal(h.store.tenants.byAccessKeyId(oldKey), undefined);
    assert.equal(h.store.tenants.byAccessKeyId(second), undefined);
    const lastOne = await h.delete(`/admin/tenants/r/keys/${third}`);
    assert.equal(lastOne.statusCode, 400, 'a tenant keeps one key');
    await h.post('/admin/tenants/r/keys');
    assert.equal((await h.delete(`/admin/tenants/r/keys/${third}`)).statusCode, 200);
    assert.equal(h.store.tenants.byAccessKeyId(third), undefined);
  });

  void test('Given a tenant, when its memory share is set, shown and cleared, then the budget uses it; a share out of (0, 1] is 400', async (t) => {
    const h = harness(t);
    await h.post('/admin/tenants', { name: 'm', accountId: '111111111111' });
    send(h, queue(h, 'q'), 'x'.repeat(1000));
    const put = (memoryShare: unknown) =>
      h.app.inject({
        method: 'PUT',
        url: '/admin/tenants/m/memory-share',
        headers: AUTH,
        payload: { memoryShare },
      });
    const set = await put(0.25);
    assert.equal(set.statusCode, 200);
    const view = set.json<{ memoryShare: number; memoryUsedBytes: number }>();
    assert.equal(view.memoryShare, 0.25);
    assert.equal(view.memoryUsedBytes, h.store.budget.usedBy('111111111111'));
    assert.ok(view.memoryUsedBytes > 1000);
    assert.equal(h.store.budget.limitOf('111111111111'), h.store.budget.limit * 0.25);
    for (const bad of [0, 1.5, 'half']) assert.equal((await put(bad)).statusCode, 400, String(bad));
    assert.equal(h.store.tenants.get('m')?.memoryShare, 0.25);
    const memory = await h.get('/admin/memory');
    const m = memory.json<{ usedBytes: number; refusing: boolean; tenants: { tenant: string | null }[] }>();
    assert.equal(m.usedBytes, h.store.budget.used);
    assert.equal(m.refusing, false);
    assert.deepEqual(
      m.tenants.map((x) => x.tenant),
      ['m'],
    );
    assert.equal((await put(null)).json<{ memoryShare: unknown }>().memoryShare, null);
    assert.equal(h.store.tenants.get('m')?.memoryShare, undefined);
  });

  void test('Given a tenant with queues, when deleted, then 409 unless deleteQueues=true, which deletes them too', async (t) => {
    const h = harness(t);
    await h.post('/admin/tenants', { name: 'd', accountId: '111111111111' });
    queue(h, 'q1');
    assert.equal((await h.delete('/admin/tenants/d')).statusCode, 409);
    const res = await h.delete('/admin/tenants/d?deleteQueues=true');
    assert.deepEqual(res.json(), { deleted: 'd', queuesDeleted: 1 });
    assert.equal(h.store.size, 0);
    assert.equal((await h.get('/admin/tenants/d')).statusCode, 404);
  });
});

void describe('admin API: queues', () => {
  void test('Given queues of several accounts, when listed, then each has its tenant and depths', async (t) => {
    const h = harness(t);
    teamA(h);
    const a = queue(h, 'orders');
    queue(h, 'jobs', '000000000000');
    send(h, a, 'one');
    send(h, a, 'two');
    a.receive(1, 30_000, h.clock.now());
    const res = await h.get('/admin/queues');
    const queues = res.json<{ queues: Record<string, unknown>[] }>().queues;
    assert.deepEqual(
      queues.map((q) => [q['tenant'], q['name'], q['visible'], q['inflight'], q['delayed']]),
      [
        ['(default)', 'jobs', 0, 0, 0],
        ['team-a', 'orders', 1, 1, 0],
      ],
    );
    assert.equal(queues[1]?.['url'], 'http://sqs.test/111111111111/orders');
    const filtered = await h.get('/admin/queues?tenant=team-a');
    assert.equal(filtered.json<{ queues: unknown[] }>().queues.length, 1);
  });

  void test('Given a queue, when its detail is asked, then attributes, tags and depths', async (t) => {
    const h = harness(t);
    queue(h, 'detail', '111111111111', { VisibilityTimeout: '45' });
    const res = await h.get('/admin/queues/111111111111/us-east-1/detail');
    assert.equal(res.statusCode, 200);
    const body = res.json<{ attributes: Record<string, string>; arn: string }>();
    assert.equal(body.attributes['VisibilityTimeout'], '45');
    assert.equal(body.arn, 'arn:aws:sqs:us-east-1:111111111111:detail');
    assert.equal((await h.get('/admin/queues/111111111111/eu-west-1/detail')).statusCode, 404);
  });

  void test('Given messages in flight and visible, when peeked, then all are shown and nothing changes', async (t) => {
    const h = harness(t);
    const q = queueWith(h, 'peek', 'first', 'second');
    const [received] = q.receive(1, 30_000, h.clock.now());
    const before = { ...q.counts(h.clock.now()), receiveCount: received?.receiveCount };
    const res = await h.get('/admin/queues/111111111111/us-east-1/peek/messages');
    assert.equal(res.statusCode, 200);
    const body = res.json<{
      total: number;
      messages: { body: string; state: string; receiveCount: number }[];
    }>();
    assert.equal(body.total, 2);
    assert.deepEqual(
      body.messages.map((m) => [m.body, m.state, m.receiveCount]),
      [
        ['first', 'inflight', 1],
        ['second', 'visible', 0],
      ],
    );
    assert.deepEqual({ ...q.counts(h.clock.now()), receiveCount: received?.receiveCount }, before);
    assert.equal((await h.get('/admin/queues/111111111111/us-east-1/peek/messages?max=0')).statusCode, 400);
  });

  void test('Given a queue with messages, when purged, then it is empty; again within 60 s, 409', async (t) => {
    const h = harness(t);
    const q = queueWith(h, 'purge', 'a', 'b');
    const url = '/admin/queues/111111111111/us-east-1/purge/purge';
    const res = await h.post(url);
    assert.deepEqual(res.json(), { purged: 2 });
    assert.equal(q.size, 0);
    assert.equal((await h.post(url)).statusCode, 409);
  });

  void test('Given a dead-letter queue with messages, when redriven, then they go back to their source', async (t) => {
    const h = harness(t);
    const dlq = queue(h, 'dlq');
    const src = queue(h, 'src', '111111111111', {
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 1 }),
    });
    send(h, src, 'poison');
    src.receive(1, 0, h.clock.now());
    src.receive(1, 0, h.clock.now());
    assert.equal(dlq.size, 1, 'moved to the DLQ on the second receive');
    const res = await h.post('/admin/queues/111111111111/us-east-1/dlq/redrive');
    assert.equal(res.statusCode, 202, res.body);
    assert.equal(res.json<{ toMove: number }>().toMove, 1);
    // The move task runs on the runner's timers: bounded wait for it to finish.
    for (let i = 0; i < 200 && dlq.size > 0; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(dlq.size, 0);
    assert.equal(src.size, 1);
    assert.equal((await h.post('/admin/queues/111111111111/us-east-1/src/redrive')).statusCode, 400);
  });

  void test('Given a queue, when deleted, then it is gone', async (t) => {
    const h = harness(t);
    queue(h, 'del');
    assert.equal((await h.delete('/admin/queues/111111111111/us-east-1/del')).statusCode, 200);
    assert.equal(h.store.size, 0);
  });

  void test('Given an instance that is not serving, when tenants or queues are asked, then 503', async (t) => {
    const h = harness(t);
    h.serving = false;
    const res = await h.get('/admin/queues');
    assert.equal(res.statusCode, 503);
    assert.equal(res.json<{ error: string }>().error, 'NotServing');
  });

  void test('Given the leader routes, when called without leader election, then single-instance answers', async (t) => {
    const h = harness(t);
    const res = await h.get('/admin/leader');
    assert.equal(res.json<{ leaderElection: boolean }>().leaderElection, false);
    assert.equal((await h.post('/admin/leader/step-down')).statusCode, 409);
  });
});

void describe('admin API: send, delete one message, create a queue', () => {
  const base = '/admin/queues/111111111111/us-east-1';

  void test('Given a standard queue, when a message with attributes and a delay is sent, then it is stored as SendMessage stores it', async (t) => {
    const h = harness(t);
    const q = queue(h, 'std');
    const res = await h.app.inject({
      method: 'POST',
      url: `${base}/std/messages`,
      headers: AUTH,
      payload: {
        body: 'hello',
        attributes: {
          kind: { DataType: 'String', StringValue: 'order' },
          n: { DataType: 'Number', StringValue: '42' },
          raw: { DataType: 'Binary', BinaryValue: 'AAEC' },
        },
        delaySeconds: 5,
      },
    });
    assert.equal(res.statusCode, 201, res.body);
    const sent = res.json<{ messageId: string; md5OfBody: string; duplicate: boolean }>();
    assert.equal(sent.md5OfBody, '5d41402abc4b2a76b9719d911017c592');
    assert.equal(sent.duplicate, false);
    assert.deepEqual(q.counts(h.clock.now()), { visible: 0, inflight: 0, delayed: 1 });
    const [m] = q.peek(1);
    assert.equal(m?.id, sent.messageId);
    assert.equal(m?.senderId, '111111111111');
    assert.deepEqual(m?.attributes?.['raw'], { DataType: 'Binary', BinaryValue: 'AAEC' });
    assert.equal(typeof m?.md5OfAttributes, 'string');
  });

  void test('Given a FIFO queue, when sent with a group and deduplication id twice, then one message, the second a duplicate; without a group, MissingParameter', async (t) => {
    const h = harness(t);
    const q = queue(h, 'f.fifo', '111111111111', { FifoQueue: 'true' });
    const send = (payload: object) => h.post(`${base}/f.fifo/messages`, payload);
    const first = await send({ body: 'a', groupId: 'g1', deduplicationId: 'd1' });
    assert.equal(first.statusCode, 201, first.body);
    const again = await send({ body: 'a', groupId: 'g1', deduplicationId: 'd1' });
    assert.equal(again.statusCode, 200);
    const a = first.json<{ messageId: string; sequenceNumber: string }>();
    const b = again.json<{ messageId: string; sequenceNumber: string; duplicate: boolean }>();
    assert.deepEqual([b.messageId, b.sequenceNumber, b.duplicate], [a.messageId, a.sequenceNumber, true]);
    assert.equal(q.size, 1);
    const noGroup = await send({ body: 'b', deduplicationId: 'd2' });
    assert.equal(noGroup.statusCode, 400);
    assert.equal(noGroup.json<{ error: string }>().error, 'MissingParameter');
    const delayed = await send({ body: 'c', groupId: 'g1', deduplicationId: 'd3', delaySeconds: 5 });
    assert.equal(delayed.json<{ error: string }>().error, 'InvalidParameterValue');
    assert.equal(q.size, 1);
  });

  void test('Given bad input, when sending, then 400 and nothing is stored; an unknown queue, 404', async (t) => {
    const h = harness(t);
    const q = queue(h, 'bad');
    const bad: unknown[] = [
      {},
      { body: 7 },
      { body: '' },
      { body: 'x', attributes: [] },
      { body: 'x', attributes: { a: 'text' } },
      { body: 'x', attributes: { a: { StringValue: 'v' } } },
      { body: 'x', attributes: { a: { DataType: 'Binary', BinaryValue: 'not base64!' } } },
      { body: 'x', attributes: { 'aws.x': { DataType: 'String', StringValue: 'v' } } },
      { body: 'x', delaySeconds: 'soon' },
      { body: 'x', delaySeconds: 901 },
      { body: 'x', deduplicationId: 'd' },
      { body: '\u0000' },
      'a string',
    ];
    for (const payload of bad) {
      const res = await h.app.inject({
        method: 'POST',
        url: `${base}/bad/messages`,
        headers: { ...AUTH, 'content-type': 'application/json' },
        payload: JSON.stringify(payload),
      });
      assert.equal(res.statusCode, 400, `${JSON.stringify(payload)}: ${res.body}`);
      assert.equal(typeof res.json<{ error: string }>().error, 'string');
    }
    assert.equal(q.size, 0);
    const missing = await h.post(`${base}/nope/messages`, { body: 'x' });
    assert.equal(missing.statusCode, 404);
  });

  void test('Given a server over its memory budget, when the admin API sends, then 429 RequestThrottled and nothing is stored', async (t) => {
    const h = harness(t, { maxMemory: 64 * 1024 });
    const q = queue(h, 'full');
    const send = () => h.post(`${base}/full/messages`, { body: 'x'.repeat(8_000) });
    let res = await send();
    for (let i = 0; i < 100 && res.statusCode === 201; i++) res = await send();
    assert.equal(res.statusCode, 429, res.body);
    assert.equal(res.json<{ error: string }>().error, 'RequestThrottled');
    const size = q.size;
    assert.ok(size > 0 && h.store.budget.refusing());
    assert.equal((await send()).statusCode, 429);
    assert.equal(q.size, size);
  });

  void test('Given messages visible and in flight, when one is deleted by id, then only it goes; again, 404', async (t) => {
    const h = harness(t);
    const q = queueWith(h, 'del', 'one', 'two', 'three');
    q.receive(1, 30_000, h.clock.now());
    const del = (id: string) => h.delete(`${base}/del/messages/${id}`);
    const inflight = await del('id-one');
    assert.equal(inflight.statusCode, 200, inflight.body);
    assert.deepEqual(inflight.json(), { deleted: 'id-one' });
    assert.equal((await del('id-three')).statusCode, 200);
    assert.deepEqual(
      q.peek(10).map((m) => m.body),
      ['two'],
    );
    assert.deepEqual(q.counts(h.clock.now()), { visible: 1, inflight: 0, delayed: 0 });
    assert.equal((await del('id-three')).statusCode, 404);
  });

  void test('Given a FIFO group held by an in-flight message, when that message is deleted by id, then the group’s next is receivable', async (t) => {
    const h = harness(t);
    const q = queue(h, 'g.fifo', '111111111111', { FifoQueue: 'true' });
    for (const body of ['a', 'b']) {
      q.sendMessage(msg(body, { id: `id-${body}`, ...inGroup('g', body) }), h.clock.now());
    }
    assert.equal(q.receive(1, 30_000, h.clock.now()).length, 1);
    assert.equal(q.receive(1, 30_000, h.clock.now()).length, 0, 'the group is locked');
    assert.equal((await h.delete(`${base}/g.fifo/messages/id-a`)).statusCode, 200);
    assert.deepEqual(
      q.receive(10, 30_000, h.clock.now()).map((m) => m.body),
      ['b'],
    );
  });

  void test('Given a queue definition, when created, then 201 in the default account and region; the same again 200; other attributes 409', async (t) => {
    const h = harness(t);
    const create = (payload: object) => h.post('/admin/queues', payload);
    const res = await create({ name: 'made', attributes: { VisibilityTimeout: 45 }, tags: { team: 'a' } });
    assert.equal(res.statusCode, 201, res.body);
    const made = res.json<{ accountId: string; region: string; arn: string; url: string }>();
    assert.deepEqual([made.accountId, made.region], ['000000000000', 'us-east-1']);
    assert.equal(made.url, 'http://sqs.test/000000000000/made');
    const q = h.store.get('000000000000', 'made', 'us-east-1');
    assert.equal(q?.attributes['VisibilityTimeout'], '45');
    assert.deepEqual(q?.tags, { team: 'a' });
    assert.equal((await create({ name: 'made', attributes: { VisibilityTimeout: '45' } })).statusCode, 200);
    const conflict = await create({ name: 'made', attributes: { VisibilityTimeout: '46' } });
    assert.equal(conflict.statusCode, 409);
    assert.equal(conflict.json<{ error: string }>().error, 'QueueNameExists');
  });

  void test('Given a tenant, when a FIFO queue with a dead-letter queue is created for it, then both are in its account and the listing links them', async (t) => {
    const h = harness(t);
    teamA(h);
    const create = (payload: object) => h.post('/admin/queues', payload);
    const dlq = await create({
      tenant: 'team-a',
      region: 'eu-west-1',
      name: 'dead.fifo',
      attributes: { FifoQueue: true },
    });
    assert.equal(dlq.statusCode, 201, dlq.body);
    const dlqArn = dlq.json<{ arn: string }>().arn;
    assert.equal(dlqArn, 'arn:aws:sqs:eu-west-1:111111111111:dead.fifo');
    const src = await create({
      tenant: 'team-a',
      region: 'eu-west-1',
      name: 'work.fifo',
      attributes: {
        FifoQueue: 'true',
        ContentBasedDeduplication: 'true',
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 3 }),
      },
    });
    assert.equal(src.statusCode, 201, src.body);
    const list = await h.get('/admin/queues?tenant=team-a');
    const queues = list.json<{
      queues: { name: string; deadLetterTarget: string | null; deadLetterSources: string[] }[];
    }>().queues;
    assert.deepEqual(
      queues.map((q) => [q.name, q.deadLetterTarget, q.deadLetterSources]),
      [
        ['dead.fifo', null, ['arn:aws:sqs:eu-west-1:111111111111:work.fifo']],
        ['work.fifo', dlqArn, []],
      ],
    );
  });

  void test('Given bad queue definitions, when created, then 400 (or 404 for an unknown tenant) and nothing is made', async (t) => {
    const h = harness(t);
    const create = (payload: object) => h.post('/admin/queues', payload);
    for (const payload of [
      {},
      { name: 'bad name' },
      { name: 'q', accountId: '12' },
      { name: 'q', region: 'mars' },
      { name: 'q', tenant: 'x', accountId: '111111111111' },
      { name: 'q', attributes: { VisibilityTimeout: 'soon' } },
      { name: 'q', attributes: { Nope: '1' } },
      { name: 'q', attributes: 'VisibilityTimeout=1' },
      { name: 'q', attributes: { VisibilityTimeout: { n: 1 } } },
      { name: 'q', tags: { ['k'.repeat(129)]: 'v' } },
      {
        name: 'q',
        attributes: {
          RedrivePolicy:
            '{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:none","maxReceiveCount":1}',
        },
      },
      { name: 'q.fifo' },
    ]) {
      const res = await create(payload);
      assert.equal(res.statusCode, 400, `${JSON.stringify(payload)}: ${res.body}`);
    }
    assert.equal((await create({ name: 'q', tenant: 'nobody' })).statusCode, 404);
    assert.equal(h.store.size, 0);
  });
});

void describe('admin API: what the page charts', () => {
  void test('Given a queue with traffic, when samples are taken, then the history has each interval’s counts and the depth', async (t) => {
    const h = harness(t);
    teamA(h);
    const q = queue(h, 'busy');
    h.counters.count('sent', 'team-a', 'us-east-1', 'busy', 4);
    h.admin.sample();
    send(h, q, 'a');
    send(h, q, 'b');
    q.receive(1, 30_000, h.clock.now());
    h.counters.count('sent', 'team-a', 'us-east-1', 'busy', 2);
    h.counters.count('received', 'team-a', 'us-east-1', 'busy', 1);
    h.clock.advance(5_000);
    h.admin.sample();
    h.counters.count('deleted', 'team-a', 'us-east-1', 'busy', 1);
    h.clock.advance(5_000);
    h.admin.sample();
    const res = await h.get(`/admin/queues/111111111111/us-east-1/busy`);
    const { history } = res.json<{
      history: Record<string, number[]> & { intervalSeconds: number; end: number };
    }>();
    assert.equal(history.intervalSeconds, 5);
    assert.equal(history.end, h.clock.now());
    // The first sample has no interval before it: what was counted until then is not in it.
    assert.deepEqual(history['sent'], [0, 2, 0]);
    assert.deepEqual(history['received'], [0, 1, 0]);
    assert.deepEqual(history['deleted'], [0, 0, 1]);
    assert.deepEqual(history['visible'], [0, 1, 1]);
    assert.deepEqual(history['inflight'], [0, 1, 1]);
    assert.deepEqual(history['delayed'], [0, 0, 0]);

    // The listing merges 4 samples into a point: counts added, depths their largest.
    const list = await h.get('/admin/queues?history=true');
    assert.deepEqual(list.json<{ queues: { history: unknown }[] }>().queues[0]?.history, {
      intervalSeconds: 20,
      end: history.end,
      sent: [2],
      received: [1],
      deleted: [1],
      visible: [1],
      inflight: [1],
      delayed: [0],
    });
    const plain = await h.get('/admin/queues');
    assert.equal('history' in (plain.json<{ queues: object[] }>().queues[0] ?? {}), false);
  });

  void test('Given more samples than the ring holds, when asked, then the last ten minutes; a deleted queue loses its history; a follower samples nothing', async (t) => {
    const h = harness(t);
    const q = queue(h, 'long');
    for (let i = 0; i < 130; i++) {
      h.counters.count('sent', '111111111111', 'us-east-1', 'long', i);
      h.admin.sample();
      h.clock.advance(5_000);
    }
    const history = async () =>
      (await h.get('/admin/queues/111111111111/us-east-1/long')).json<{
        history: { sent: number[] } | null;
      }>().history;
    const full = await history();
    assert.equal(full?.sent.length, 120);
    assert.deepEqual(full?.sent.slice(0, 2), [10, 11]);
    assert.equal(full?.sent.at(-1), 129);
    const list = await h.get('/admin/queues?history=true');
    const merged = list.json<{ queues: { history: { sent: number[] } }[] }>().queues[0]?.history.sent;
    assert.equal(merged?.length, 30);
    assert.deepEqual([merged?.[0], merged?.at(-1)], [10 + 11 + 12 + 13, 126 + 127 + 128 + 129]);
    h.serving = false;
    h.admin.sample();
    h.serving = true;
    assert.deepEqual(await history(), full);
    h.store.delete(q);
    h.admin.sample();
    queue(h, 'long');
    assert.equal(await history(), null, 'a new queue of the name has no history until sampled');
    h.admin.sample();
    assert.deepEqual((await history())?.sent, [0]);
  });

  void test('Given queues with and without messages, when listed, then the oldest message’s age is shown, null when empty', async (t) => {
    const h = harness(t);
    const q = queue(h, 'aged');
    queue(h, 'empty');
    send(h, q, 'old');
    h.clock.advance(90_500);
    send(h, q, 'new');
    const list = await h.get('/admin/queues');
    assert.deepEqual(
      list
        .json<{ queues: { name: string; oldestMessageAgeSeconds: number | null }[] }>()
        .queues.map((x) => [x.name, x.oldestMessageAgeSeconds]),
      [
        ['aged', 90],
        ['empty', null],
      ],
    );
  });
});

void describe('admin API: the token', () => {
  const bad: [string, Record<string, string>][] = [
    ['missing', {}],
    ['wrong', { authorization: 'Bearer not-the-token' }],
    ['empty', { authorization: 'Bearer ' }],
    ['empty header', { authorization: '' }],
    ['10 KB', { authorization: `Bearer ${'x'.repeat(10 * 1024)}` }],
    ['the token with a suffix', { authorization: `Bearer ${TOKEN}x` }],
    ['not a bearer', { authorization: `Basic ${TOKEN}` }],
  ];

  void test('Given every protected route, when called with a bad token, then 401 JSON and never 500, and the token is not logged', async (t) => {
    const h = harness(t);
    await h.app.ready();
    const protectedRoutes = h.routes.filter((r) => r.url.startsWith('/admin/') && !PUBLIC.includes(r.url));
    assert.ok(protectedRoutes.length >= 12, `found ${protectedRoutes.length} routes`);
    for (const r of protectedRoutes) {
      const methods = Array.isArray(r.method) ? r.method : [r.method];
      for (const method of methods) {
        if (method === 'HEAD') continue;
        const url = r.url
          .replace(':name', 'team-a')
          .replace(':accountId', '111111111111')
          .replace(':region', 'us-east-1')
          .replace(':accessKeyId', 'AKIA1')
          .replace(':messageId', 'm-1');
        for (const [label, headers] of bad) {
          const res: LightMyRequestResponse = await h.app.inject({
            method: method as 'GET',
            url,
            headers: { ...headers, 'content-type': 'application/json' },
            ...(method === 'GET' || method === 'DELETE' ? {} : { payload: '{not json' }),
          });
          assert.equal(res.statusCode, 401, `${method} ${url} with a ${label} token: ${res.body}`);
          assert.equal(res.json<{ error: string }>().error, 'Unauthorized');
        }
      }
    }
    assert.ok(!h.logLines.join('').includes(TOKEN));
    assert.ok(!h.logLines.join('').includes('not-the-token'));
  });

  void test('Given no admin token configured, when the admin API is called, then 403 even with a token', async (t) => {
    const clock = new ManualClock();
    const services = servicesFor(new QueueStore(clock), clock);
    const metrics = new Metrics({ defaultMetrics: false });
    const app = buildControlPlane({ logger: createLogger('silent'), metrics, isReady: () => true });
    registerAdmin(app, {
      adminToken: undefined,
      services,
      messageTotals: new MessageMetrics(metrics),
      defaultAccountId: '000000000000',
    });
    t.after(async () => {
      services.mover.close();
      await app.close();
    });
    const res = await app.inject({
      method: 'GET',
      url: '/admin/tenants',
      headers: { authorization: 'Bearer x' },
    });
    assert.equal(res.statusCode, 403);
  });
});

interface Parameter {
  readonly name: string;
  readonly in: string;
  readonly required?: boolean;
  readonly schema: object;
}
interface OpenApi {
  readonly openapi: string;
  readonly components: { readonly schemas: Record<string, object> };
  readonly paths: Record<
    string,
    Record<
      string,
      {
        operationId: string;
        summary: string;
        parameters?: Parameter[];
        requestBody?: { content: { 'application/json': { schema: object } } };
        responses: object;
      }
    >
  >;
}

void describe('admin API: the OpenAPI description and the page', () => {
  void test('Given the registered /admin routes, when /admin/openapi.json is read, then each protected route is an operation with the route’s own parameters, body and responses, and nothing more', async (t) => {
    const h = harness(t);
    await h.app.ready();
    const res = await h.app.inject({ method: 'GET', url: '/admin/openapi.json' });
    assert.equal(res.statusCode, 200);
    const doc = res.json<OpenApi>();
    assert.equal(doc.openapi, '3.1.0');
    const resolve = (node: unknown): unknown => {
      if (Array.isArray(node)) return node.map(resolve);
      if (typeof node !== 'object' || node === null) return node;
      const ref = (node as { $ref?: string }).$ref;
      if (ref !== undefined) return resolve(doc.components.schemas[ref.replace('#/components/schemas/', '')]);
      return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, resolve(v)]));
    };
    const plain = (x: unknown): unknown => (x === undefined ? undefined : JSON.parse(JSON.stringify(x)));
    const fieldsOf = (parameters: Parameter[], where: string): object | undefined => {
      const of = parameters.filter((p) => p.in === where);
      if (of.length === 0) return undefined;
      const required = of.filter((p) => p.required === true).map((p) => p.name);
      return {
        type: 'object',
        properties: Object.fromEntries(of.map((p) => [p.name, p.schema])),
        ...(required.length > 0 ? { required } : {}),
      };
    };
    let operations = 0;
    for (const r of h.routes) {
      if (!r.url.startsWith('/admin/') || PUBLIC.includes(r.url)) continue;
      for (const m of Array.isArray(r.method) ? r.method : [r.method]) {
        if (m === 'HEAD') continue;
        const path = r.url.replace(/:(\w+)/g, '{$1}');
        const op = doc.paths[path]?.[m.toLowerCase()];
        assert.ok(op !== undefined, `${m} ${path} is not in the document`);
        operations++;
        const schema = r.schema as Record<string, unknown>;
        assert.equal(op.operationId, schema['operationId']);
        assert.equal(op.summary, schema['summary']);
        const parameters = op.parameters ?? [];
        assert.deepEqual(resolve(fieldsOf(parameters, 'path')), plain(schema['params']), `${path} params`);
        assert.deepEqual(
          resolve(fieldsOf(parameters, 'query')),
          plain(schema['querystring']),
          `${path} query`,
        );
        assert.deepEqual(
          resolve(op.requestBody?.content['application/json'].schema),
          plain(schema['body']),
          `${m} ${path} body`,
        );
        assert.deepEqual(resolve(op.responses), plain(schema['response']), `${m} ${path} responses`);
      }
    }
    const described = Object.values(doc.paths).flatMap((item) => Object.keys(item));
    assert.equal(described.length, operations, 'the document describes no route that is not registered');
    assert.ok(operations >= 19, `found ${operations} operations`);
  });

  void test('Given bad bodies, queries and paths, when sent, then 400 BadRequest naming the field, as the schemas say', async (t) => {
    const h = harness(t);
    queue(h, 'q');
    const cases: [string, string, unknown, string][] = [
      ['POST', '/admin/tenants', {}, 'name is required'],
      ['POST', '/admin/tenants', { name: 'c', accountId: 12 }, 'accountId must be a string or null'],
      ['POST', '/admin/queues', { name: 'q', attributes: 'x' }, 'attributes must be a JSON object or null'],
      ['POST', `${QUEUE}/messages`, 'a string', 'the body must be a JSON object'],
      [
        'POST',
        `${QUEUE}/messages`,
        { body: 'x', attributes: { a: {} } },
        'attributes.a.DataType is required',
      ],
      [
        'POST',
        `${QUEUE}/messages`,
        { body: 'x', delaySeconds: 1.5 },
        'delaySeconds must be a whole number or null',
      ],
      ['GET', `${QUEUE}/messages?max=0`, undefined, 'max must be >= 1'],
      ['DELETE', '/admin/tenants/x?deleteQueues=yes', undefined, 'deleteQueues must be one of: true, false'],
      ['GET', '/admin/queues/12/us-east-1/q', undefined, 'accountId must match pattern "^\\d{12}$"'],
      ['GET', '/admin/queues?tenant=a&tenant=b', undefined, 'tenant must be a string'],
      [
        'POST',
        '/admin/queues',
        { name: 'z', tags: { k: null } },
        'tags.k must be a string, a number or true or false',
      ],
    ];
    for (const [method, url, payload, message] of cases) {
      const res = await h.app.inject({
        method: method as 'POST',
        url,
        headers: { ...AUTH, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
      });
      assert.equal(res.statusCode, 400, `${method} ${url}: ${res.body}`);
      assert.deepEqual(res.json(), { error: 'BadRequest', message }, `${method} ${url}`);
    }
    // Refused by fastify's JSON parser, before any schema: the control plane's 400.
    const poisoned = await h.app.inject({
      method: 'POST',
      url: `${QUEUE}/messages`,
      headers: { ...AUTH, 'content-type': 'application/json' },
      payload: '{"body":"x","attributes":{"__proto__":{"DataType":"String","StringValue":"v"}}}',
    });
    assert.equal(poisoned.statusCode, 400);
    assert.equal(poisoned.json<{ error: string }>().error, 'BadRequest');
    assert.equal(h.store.get('111111111111', 'q', 'us-east-1')?.size, 0);
  });

  void test('Given no token, when the page and its script are fetched, then they are served', async (t) => {
    const h = harness(t);
    const page = await h.app.inject({ method: 'GET', url: '/admin' });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /text\/html/);
    assert.match(page.body, /<script type="module" src="\/admin\/app.js">/);
    // Served as they are in src/http/admin-page/ (and, built, in dist/http/admin-page/).
    for (const [url, file, type] of [
      ['/admin/', 'index.html', /^text\/html/],
      ['/admin/app.js', 'app.js', /^text\/javascript/],
      ['/admin/style.css', 'style.css', /^text\/css/],
    ] as const) {
      const res = await h.app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 200, url);
      assert.match(String(res.headers['content-type']), type);
      assert.equal(
        res.body,
        readFileSync(new URL(`../../src/http/admin-page/${file}`, import.meta.url), 'utf8'),
      );
    }
    const js = await h.app.inject({ method: 'GET', url: '/admin/app.js' });
    // It parses as JavaScript (compiled, not run).
    assert.doesNotThrow(() => new vm.Script(js.body));
  });
});
