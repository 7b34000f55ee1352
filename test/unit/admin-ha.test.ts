/**
 * The two HA admin routes through app.inject(): the bearer token check (403 when no token is
 * configured, 401 when missing or wrong) and the answers of an instance without leader election.
 * With leader election they are exercised by test/failover against real processes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { registerAdminHa } from '../../src/http/admin-ha.js';

function app(adminToken: string | undefined): FastifyInstance {
  const a = Fastify();
  registerAdminHa(a, { adminToken, ha: undefined });
  return a;
}

test('Given no admin token configured, When /admin/leader is called even with a token, Then 403 and the API is closed', async (t) => {
  const a = app(undefined);
  t.after(() => a.close());
  const res = await a.inject({ url: '/admin/leader', headers: { authorization: 'Bearer anything' } });
  assert.equal(res.statusCode, 403);
  assert.equal(res.json<{ error: string }>().error, 'AdminDisabled');
});

test('Given an admin token, When it is missing, empty, wrong or very long, Then 401 with a Bearer challenge', async (t) => {
  const a = app('s3cret-token');
  t.after(() => a.close());
  for (const authorization of [
    undefined,
    '',
    'Bearer ',
    'Bearer wrong',
    'Basic czNjcmV0LXRva2Vu',
    `Bearer ${'x'.repeat(8000)}`,
  ]) {
    const res = await a.inject({
      method: 'POST',
      url: '/admin/leader/step-down',
      headers: authorization === undefined ? {} : { authorization },
    });
    assert.equal(res.statusCode, 401, `authorization ${String(authorization).slice(0, 20)}`);
    assert.match(String(res.headers['www-authenticate']), /^Bearer/);
  }
});

test('Given the right token and no leader election, When /admin/leader and step-down are called, Then it always leads and refuses to step down (409)', async (t) => {
  const a = app('s3cret-token');
  t.after(() => a.close());
  const headers = { authorization: 'Bearer s3cret-token' };
  const status = await a.inject({ url: '/admin/leader', headers });
  assert.equal(status.statusCode, 200);
  assert.deepEqual(status.json(), { leaderElection: false, state: 'leader', leading: true, serving: true });
  const step = await a.inject({ method: 'POST', url: '/admin/leader/step-down', headers });
  assert.equal(step.statusCode, 409);
  assert.equal(step.json<{ error: string }>().error, 'NoLeaderElection');
});

test('Given the right token and a body that is not JSON, When step-down is called, Then 400 with the error in JSON', async (t) => {
  const a = app('s3cret-token');
  t.after(() => a.close());
  const res = await a.inject({
    method: 'POST',
    url: '/admin/leader/step-down',
    headers: { authorization: 'Bearer s3cret-token', 'content-type': 'application/json' },
    payload: '{not json',
  });
  assert.equal(res.statusCode, 400);
  assert.match(res.json<{ message: string }>().message, /JSON/);
});
