/**
 * The admin API through fastify's inject (no socket): every route with the right token, every
 * protected route with a missing, wrong, empty and 10 KB token, and the OpenAPI description
 * against the routes actually registered.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import vm from 'node:vm';
import { describe, test, type TestContext } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse, RouteOptions } from 'fastify';

import { ManualClock } from '../../src/core/clock.js';
import { QueueStore } from '../../src/core/store.js';
import { registerAdmin, type AdminHandle } from '../../src/http/admin.js';
import { registerAdminHa } from '../../src/http/admin-ha.js';
import { ADMIN_OPENAPI } from '../../src/http/admin-openapi.js';
import { buildControlPlane } from '../../src/http/control.js';
import { MessageMetrics } from '../../src/http/message-metrics.js';
import { Metrics } from '../../src/http/metrics.js';
import { createLogger } from '../../src/log.js';
import { servicesFor } from '../../src/sqs/service.js';

const TOKEN = 'admin-token-of-the-test';
const AUTH = { authorization: `Bearer ${TOKEN}` };

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
  registerAdminHa(app, { adminToken: TOKEN, ha: undefined });
  let serving = true;
  const admin = registerAdmin(app, {
    adminToken: TOKEN,
    services,
    messageTotals: counters,
    isServing: () => serving,
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
    get serving() {
      return serving;
    },
    set serving(v: boolean) {
      serving = v;
    },
  };
}

function queue(
  h: Harness,
  name: string,
  accountId = '111111111111',
  attributes: Record<string, string> = {},
) {
  return h.store.create({ accountId, region: 'us-east-1', name }, attributes, {}).queue;
}

function send(h: Harness, q: ReturnType<typeof queue>, body: string) {
  return q.sendMessage({ id: `id-${body}`, body, md5OfBody: 'md5', senderId: q.accountId }, h.clock.now());
}

void describe('admin API: tenants', () => {
  void test('Given the token, when a tenant is created, then 201 with a generated key whose secret is shown once', async (t) => {
    const h = harness(t);
    const res = await h.app.inject({
      method: 'POST',
      url: '/admin/tenants',
      headers: AUTH,
      payload: { name: 'team-a' },
    });
    assert.equal(res.statusCode, 201);
    const body = res.json<{ accountId: string; newKey: { accessKeyId: string; secretAccessKey: string } }>();
    assert.match(body.accountId, /^\d{12}$/);
    assert.match(body.newKey.accessKeyId, /^AKIA[A-Z2-7]{16}$/);
    assert.equal(body.newKey.secretAccessKey.length, 40);
    assert.equal(h.store.tenants.byAccessKeyId(body.newKey.accessKeyId)?.tenant.name, 'team-a');

    const list = await h.app.inject({ method: 'GET', url: '/admin/tenants', headers: AUTH });
    assert.equal(list.statusCode, 200);
    assert.doesNotMatch(list.body, new RegExp(body.newKey.secretAccessKey.replace(/[+/=]/g, '.')));
    assert.deepEqual(
      list.json<{ tenants: { name: string }[] }>().tenants.map((x) => x.name),
      ['team-a'],
    );
    const one = await h.app.inject({ method: 'GET', url: '/admin/tenants/team-a', headers: AUTH });
    assert.equal(one.json<{ accountId: string }>().accountId, body.accountId);
  });

  void test('Given a taken name or account, when creating, then 409; a bad name, 400; no name, 400', async (t) => {
    const h = harness(t);
    const create = (payload: object) =>
      h.app.inject({ method: 'POST', url: '/admin/tenants', headers: AUTH, payload });
    assert.equal((await create({ name: 'a', accountId: '111111111111' })).statusCode, 201);
    assert.equal((await create({ name: 'a', accountId: '222222222222' })).statusCode, 409);
    assert.equal((await create({ name: 'b', accountId: '111111111111' })).statusCode, 409);
    assert.equal((await create({ name: 'bad name' })).statusCode, 400);
    assert.equal((await create({})).statusCode, 400);
    assert.equal((await create({ name: 'c', accountId: 12 })).statusCode, 400);
  });

  void test('Given a tenant, when its keys are rotated, then the new key works; with replace the old one stops', async (t) => {
    const h = harness(t);
    const created = await h.app.inject({
      method: 'POST',
      url: '/admin/tenants',
      headers: AUTH,
      payload: { name: 'r' },
    });
    const oldKey = created.json<{ newKey: { accessKeyId: string } }>().newKey.accessKeyId;
    const added = await h.app.inject({ method: 'POST', url: '/admin/tenants/r/keys', headers: AUTH });
    assert.equal(added.statusCode, 201);
    const second = added.json<{ newKey: { accessKeyId: string } }>().newKey.accessKeyId;
    assert.equal(h.store.tenants.get('r')?.keys.length, 2);
    const replaced = await h.app.inject({
      method: 'POST',
      url: '/admin/tenants/r/keys',
      headers: AUTH,
      payload: { replace: true },
    });
    const third = replaced.json<{ newKey: { accessKeyId: string } }>().newKey.accessKeyId;
    assert.deepEqual(
      h.store.tenants.get('r')?.keys.map((k) => k.accessKeyId),
      [third],
    );
    assert.equal(h.store.tenants.byAccessKeyId(oldKey), undefined);
    assert.equal(h.store.tenants.byAccessKeyId(second), undefined);
    const lastOne = await h.app.inject({
      method: 'DELETE',
      url: `/admin/tenants/r/keys/${third}`,
      headers: AUTH,
    });
    assert.equal(lastOne.statusCode, 400, 'a tenant keeps one key');
    await h.app.inject({ method: 'POST', url: '/admin/tenants/r/keys', headers: AUTH });
    const removed = await h.app.inject({
      method: 'DELETE',
      url: `/admin/tenants/r/keys/${third}`,
      headers: AUTH,
    });
    assert.equal(removed.statusCode, 200);
    assert.equal(h.store.tenants.byAccessKeyId(third), undefined);
  });

  void test('Given a tenant, when its memory share is set, shown and cleared, then the budget uses it; a share out of (0, 1] is 400', async (t) => {
    const h = harness(t);
    await h.app.inject({
      method: 'POST',
      url: '/admin/tenants',
      headers: AUTH,
      payload: { name: 'm', accountId: '111111111111' },
    });
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
    const memory = await h.app.inject({ method: 'GET', url: '/admin/memory', headers: AUTH });
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
    await h.app.inject({
      method: 'POST',
      url: '/admin/tenants',
      headers: AUTH,
      payload: { name: 'd', accountId: '111111111111' },
    });
    queue(h, 'q1');
    assert.equal(
      (await h.app.inject({ method: 'DELETE', url: '/admin/tenants/d', headers: AUTH })).statusCode,
      409,
    );
    const res = await h.app.inject({
      method: 'DELETE',
      url: '/admin/tenants/d?deleteQueues=true',
      headers: AUTH,
    });
    assert.deepEqual(res.json(), { deleted: 'd', queuesDeleted: 1 });
    assert.equal(h.store.size, 0);
    assert.equal(
      (await h.app.inject({ method: 'GET', url: '/admin/tenants/d', headers: AUTH })).statusCode,
      404,
    );
  });
});

void describe('admin API: queues', () => {
  void test('Given queues of several accounts, when listed, then each has its tenant and depths', async (t) => {
    const h = harness(t);
    h.store.tenants.create(
      'team-a',
      '111111111111',
      [{ accessKeyId: 'AKIA1', secretAccessKey: 's', createdAt: 0 }],
      0,
    );
    const a = queue(h, 'orders');
    queue(h, 'jobs', '000000000000');
    send(h, a, 'one');
    send(h, a, 'two');
    a.receive(1, 30_000, h.clock.now());
    const res = await h.app.inject({ method: 'GET', url: '/admin/queues', headers: AUTH });
    const queues = res.json<{ queues: Record<string, unknown>[] }>().queues;
    assert.deepEqual(
      queues.map((q) => [q['tenant'], q['name'], q['visible'], q['inflight'], q['delayed']]),
      [
        ['(default)', 'jobs', 0, 0, 0],
        ['team-a', 'orders', 1, 1, 0],
      ],
    );
    assert.equal(queues[1]?.['url'], 'http://sqs.test/111111111111/orders');
    const filtered = await h.app.inject({ method: 'GET', url: '/admin/queues?tenant=team-a', headers: AUTH });
    assert.equal(filtered.json<{ queues: unknown[] }>().queues.length, 1);
  });

  void test('Given a queue, when its detail is asked, then attributes, tags and depths', async (t) => {
    const h = harness(t);
    queue(h, 'detail', '111111111111', { VisibilityTimeout: '45' });
    const res = await h.app.inject({
      method: 'GET',
      url: '/admin/queues/111111111111/us-east-1/detail',
      headers: AUTH,
    });
    assert.equal(res.statusCode, 200);
    const body = res.json<{ attributes: Record<string, string>; arn: string }>();
    assert.equal(body.attributes['VisibilityTimeout'], '45');
    assert.equal(body.arn, 'arn:aws:sqs:us-east-1:111111111111:detail');
    const missing = await h.app.inject({
      method: 'GET',
      url: '/admin/queues/111111111111/eu-west-1/detail',
      headers: AUTH,
    });
    assert.equal(missing.statusCode, 404);
  });

  void test('Given messages in flight and visible, when peeked, then all are shown and nothing changes', async (t) => {
    const h = harness(t);
    const q = queue(h, 'peek');
    send(h, q, 'first');
    send(h, q, 'second');
    const [received] = q.receive(1, 30_000, h.clock.now());
    const before = { ...q.counts(h.clock.now()), receiveCount: received?.receiveCount };
    const res = await h.app.inject({
      method: 'GET',
      url: '/admin/queues/111111111111/us-east-1/peek/messages',
      headers: AUTH,
    });
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
    const bad = await h.app.inject({
      method: 'GET',
      url: '/admin/queues/111111111111/us-east-1/peek/messages?max=0',
      headers: AUTH,
    });
    assert.equal(bad.statusCode, 400);
  });

  void test('Given a queue with messages, when purged, then it is empty; again within 60 s, 409', async (t) => {
    const h = harness(t);
    const q = queue(h, 'purge');
    send(h, q, 'a');
    send(h, q, 'b');
    const url = '/admin/queues/111111111111/us-east-1/purge/purge';
    const res = await h.app.inject({ method: 'POST', url, headers: AUTH });
    assert.deepEqual(res.json(), { purged: 2 });
    assert.equal(q.size, 0);
    assert.equal((await h.app.inject({ method: 'POST', url, headers: AUTH })).statusCode, 409);
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
    const res = await h.app.inject({
      method: 'POST',
      url: '/admin/queues/111111111111/us-east-1/dlq/redrive',
      headers: AUTH,
    });
    assert.equal(res.statusCode, 202, res.body);
    assert.equal(res.json<{ toMove: number }>().toMove, 1);
    // The move task runs on the runner's timers: bounded wait for it to finish.
    for (let i = 0; i < 200 && dlq.size > 0; i++) await new Promise((r) => setTimeout(r, 5));
    assert.equal(dlq.size, 0);
    assert.equal(src.size, 1);
    const notDlq = await h.app.inject({
      method: 'POST',
      url: '/admin/queues/111111111111/us-east-1/src/redrive',
      headers: AUTH,
    });
    assert.equal(notDlq.statusCode, 400);
  });

  void test('Given a queue, when deleted, then it is gone', async (t) => {
    const h = harness(t);
    queue(h, 'del');
    const res = await h.app.inject({
      method: 'DELETE',
      url: '/admin/queues/111111111111/us-east-1/del',
      headers: AUTH,
    });
    assert.equal(res.statusCode, 200);
    assert.equal(h.store.size, 0);
  });

  void test('Given an instance that is not serving, when tenants or queues are asked, then 503', async (t) => {
    const h = harness(t);
    h.serving = false;
    const res = await h.app.inject({ method: 'GET', url: '/admin/queues', headers: AUTH });
    assert.equal(res.statusCode, 503);
    assert.equal(res.json<{ error: string }>().error, 'NotServing');
  });

  void test('Given the leader routes, when called without leader election, then single-instance answers', async (t) => {
    const h = harness(t);
    const res = await h.app.inject({ method: 'GET', url: '/admin/leader', headers: AUTH });
    assert.equal(res.json<{ leaderElection: boolean }>().leaderElection, false);
    const step = await h.app.inject({ method: 'POST', url: '/admin/leader/step-down', headers: AUTH });
    assert.equal(step.statusCode, 409);
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
    const protectedRoutes = h.routes.filter(
      (r) =>
        r.url.startsWith('/admin/') &&
        !['/admin/', '/admin/app.js', '/admin/style.css', '/admin/openapi.json'].includes(r.url),
    );
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
      isServing: () => true,
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

void describe('admin API: the OpenAPI description and the page', () => {
  void test('Given the registered /admin routes, when compared with /admin/openapi.json, then each is described and nothing more', async (t) => {
    const h = harness(t);
    await h.app.ready();
    const res = await h.app.inject({ method: 'GET', url: '/admin/openapi.json' });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), JSON.parse(JSON.stringify(ADMIN_OPENAPI)));
    const registered = new Set<string>();
    for (const r of h.routes) {
      if (
        !r.url.startsWith('/admin/') ||
        ['/admin/', '/admin/app.js', '/admin/style.css', '/admin/openapi.json'].includes(r.url)
      ) {
        continue;
      }
      for (const m of Array.isArray(r.method) ? r.method : [r.method]) {
        if (m !== 'HEAD') registered.add(`${m.toLowerCase()} ${r.url.replace(/:(\w+)/g, '{$1}')}`);
      }
    }
    const described = new Set<string>();
    for (const [path, item] of Object.entries(ADMIN_OPENAPI.paths)) {
      for (const m of ['get', 'post', 'delete', 'put', 'patch']) if (m in item) described.add(`${m} ${path}`);
    }
    assert.deepEqual([...registered].sort(), [...described].sort());
  });

  void test('Given no token, when the page and its script are fetched, then they are served', async (t) => {
    const h = harness(t);
    const page = await h.app.inject({ method: 'GET', url: '/admin' });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /text\/html/);
    assert.match(page.body, /<script src="\/admin\/app.js">/);
    const js = await h.app.inject({ method: 'GET', url: '/admin/app.js' });
    assert.match(String(js.headers['content-type']), /javascript/);
    // It parses as JavaScript (compiled, not run).
    assert.doesNotThrow(() => new vm.Script(js.body));
  });
});
