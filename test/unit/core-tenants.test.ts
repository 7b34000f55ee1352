import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ChangeEvent } from '../../src/core/events.js';
import { Tenant, Tenants } from '../../src/core/tenants.js';
import { deserializeTenant, serializeTenant } from '../../src/persistence/codec.js';
import { throwsCode } from '../support/assertions.js';

const key = (id: string, secret = 's') => ({ accessKeyId: id, secretAccessKey: secret, createdAt: 5 });

function tenants(): { t: Tenants; events: ChangeEvent[] } {
  const events: ChangeEvent[] = [];
  return { t: new Tenants((e) => events.push(e)), events };
}

test('Given a new tenant, when created, then it is found by name, account and key, and a tenant-put is emitted', () => {
  const { t, events } = tenants();
  const a = t.create('team-a', '111111111111', [key('AKIA1')], 1);
  assert.equal(t.get('team-a'), a);
  assert.equal(t.byAccountId('111111111111'), a);
  assert.equal(t.byAccessKeyId('AKIA1')?.tenant, a);
  assert.deepEqual(events, [{ type: 'tenant-put', tenant: a }]);
});

test('Given a taken name, account id or access key id, when another tenant is created with it, then exists', () => {
  const { t } = tenants();
  t.create('team-a', '111111111111', [key('AKIA1')], 1);
  throwsCode(() => t.create('team-a', '222222222222', [key('AKIA2')], 1), 'exists');
  throwsCode(() => t.create('team-b', '111111111111', [key('AKIA2')], 1), 'exists');
  throwsCode(() => t.create('team-b', '222222222222', [key('AKIA1')], 1), 'exists');
  throwsCode(() => t.create('team-b', '222222222222', [key('AKIA2'), key('AKIA2')], 1), 'exists');
  assert.equal(t.size, 1);
});

test('Given bad names, account ids or keys, when creating, then invalid', () => {
  const { t } = tenants();
  throwsCode(() => t.create('', '111111111111', [key('AKIA1')], 1), 'invalid');
  throwsCode(() => t.create('has space', '111111111111', [key('AKIA1')], 1), 'invalid');
  throwsCode(() => t.create('ok', '11111111111', [key('AKIA1')], 1), 'invalid');
  throwsCode(() => t.create('ok', '111111111111', [key('A/B')], 1), 'invalid');
  throwsCode(() => t.create('ok', '111111111111', [key('AKIA1', '')], 1), 'invalid');
});

test('Given a tenant, when a key is added with replace, then only the new key works', () => {
  const { t } = tenants();
  const a = t.create('team-a', '111111111111', [key('AKIA1'), key('AKIA2')], 1);
  t.addKey(a, key('AKIA3'), true);
  assert.deepEqual(
    a.keys.map((k) => k.accessKeyId),
    ['AKIA3'],
  );
  assert.equal(t.byAccessKeyId('AKIA1'), undefined);
  assert.equal(t.byAccessKeyId('AKIA3')?.tenant, a);
});

test('Given a tenant with one key, when that key is removed, then invalid; with two, the other stays', () => {
  const { t } = tenants();
  const a = t.create('team-a', '111111111111', [key('AKIA1')], 1);
  throwsCode(() => t.removeKey(a, 'AKIA1'), 'invalid');
  throwsCode(() => t.removeKey(a, 'AKIA9'), 'not-found');
  t.addKey(a, key('AKIA2'), false);
  t.removeKey(a, 'AKIA1');
  assert.equal(t.byAccessKeyId('AKIA1'), undefined);
  assert.equal(t.byAccessKeyId('AKIA2')?.tenant, a);
});

test('Given a tenant, when deleted, then its name, account and keys are free and a tenant-delete is emitted', () => {
  const { t, events } = tenants();
  const a = t.create('team-a', '111111111111', [key('AKIA1')], 1);
  t.delete(a);
  assert.equal(t.get('team-a'), undefined);
  assert.equal(t.byAccessKeyId('AKIA1'), undefined);
  assert.deepEqual(events.at(-1), { type: 'tenant-delete', tenant: a });
  t.create('team-a', '111111111111', [key('AKIA1')], 2);
});

test('Given a tenant, when serialized and read back, then every field survives', () => {
  const a = new Tenant(
    'team-a',
    '111111111111',
    [key('AKIA1', 'a/b+c='), { ...key('AKIA2'), createdAt: 9 }],
    3,
  );
  const back = deserializeTenant(serializeTenant(a));
  assert.deepEqual({ ...back }, { ...a });
});

test('Given a damaged tenant record, when read, then a CodecError names it', () => {
  assert.throws(() => deserializeTenant('{"v":1,"name":"x"}'), /tenant record/);
  assert.throws(() => deserializeTenant('not json'), /not JSON/);
});
