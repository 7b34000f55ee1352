import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ManualClock } from '../../src/core/clock.js';
import { QueueStore } from '../../src/core/store.js';
import { quietLog } from '../../src/log.js';
import {
  applyStartupConfig,
  loadStartupConfig,
  parseStartupConfig,
  StartupConfigError,
} from '../../src/startup-config.js';

const DEFAULTS = { accountId: '000000000000', region: 'us-east-1' };

const CONFIG = {
  tenants: [
    {
      name: 'team-a',
      accountId: '111111111111',
      keys: [{ accessKeyId: 'AKIATEAMA', secretAccessKey: 'sa' }],
      queues: [{ name: 'orders', attributes: { VisibilityTimeout: 60 } }, { name: 'events.fifo' }],
    },
  ],
  queues: [{ name: 'jobs', region: 'eu-west-1', tags: { env: 'dev' } }],
};

test('Given a config of tenants and queues, when applied to an empty store, then all of it exists', () => {
  const store = new QueueStore(new ManualClock());
  applyStartupConfig(store, parseStartupConfig(CONFIG), DEFAULTS, quietLog);
  assert.equal(store.tenants.byAccessKeyId('AKIATEAMA')?.tenant.accountId, '111111111111');
  assert.equal(store.get('111111111111', 'orders')?.attributes['VisibilityTimeout'], '60');
  assert.equal(store.get('111111111111', 'events.fifo')?.fifo, true);
  assert.deepEqual(store.get('000000000000', 'jobs', 'eu-west-1')?.tags, { env: 'dev' });
});

test('Given a store that has the config and more, when applied again, then nothing is lost or duplicated', () => {
  const store = new QueueStore(new ManualClock());
  const config = parseStartupConfig(CONFIG);
  applyStartupConfig(store, config, DEFAULTS, quietLog);
  const a = store.tenants.get('team-a');
  assert.ok(a);
  store.tenants.addKey(a, { accessKeyId: 'AKIAADDED', secretAccessKey: 'x', createdAt: 1 }, false);
  store.get('111111111111', 'orders')?.setAttributes({ VisibilityTimeout: '5' }, 1);
  const warnings: string[] = [];
  applyStartupConfig(store, config, DEFAULTS, { ...quietLog, warn: (_o, msg) => warnings.push(msg) });
  assert.deepEqual(
    store.tenants.get('team-a')?.keys.map((k) => k.accessKeyId),
    ['AKIATEAMA', 'AKIAADDED'],
  );
  assert.equal(store.size, 3);
  assert.equal(store.get('111111111111', 'orders')?.attributes['VisibilityTimeout'], '5');
  assert.equal(warnings.length, 1);
});

test('Given malformed configs, when parsed, then a StartupConfigError names the place', () => {
  const bad: [unknown, RegExp][] = [
    [[], /expected an object/],
    [{ tenant: [] }, /unknown field "tenant"/],
    [
      { tenants: [{ name: 'x', accountId: '111111111111', keys: [] }] },
      /tenants\[0\]\.keys: a tenant needs at least one key/,
    ],
    [
      { tenants: [{ name: 'x', accountId: '111111111111', keys: [{ accessKeyId: 'k' }] }] },
      /secretAccessKey/,
    ],
    [{ queues: [{ name: 'q', attributes: { A: [] } }] }, /queues\[0\]\.attributes\.A/],
  ];
  for (const [raw, message] of bad) {
    assert.throws(
      () => parseStartupConfig(raw),
      (e: unknown) => e instanceof StartupConfigError && message.test(e.message),
    );
  }
});

test('Given a config whose tenant has a bad account id, when applied, then a StartupConfigError', () => {
  const store = new QueueStore(new ManualClock());
  const config = parseStartupConfig({
    tenants: [{ name: 'x', accountId: '12', keys: [{ accessKeyId: 'AKIAX', secretAccessKey: 's' }] }],
  });
  assert.throws(() => applyStartupConfig(store, config, DEFAULTS, quietLog), /12 digits/);
});

test('Given a file that is not JSON or missing, when loaded, then a StartupConfigError with the path', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ssq-config-'));
  const file = join(dir, 'c.json');
  try {
    writeFileSync(file, 'tenants: []');
    assert.throws(() => loadStartupConfig(file), /not JSON/);
    assert.throws(() => loadStartupConfig(join(dir, 'missing.json')), /missing\.json/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('Given a tenant with a memoryShare, when applied, then the tenant has it, over one set before; a share out of (0, 1] is refused', () => {
  const store = new QueueStore(new ManualClock(), { deletedRecentlyMs: 0, maxMemory: 1024 ** 3 });
  const tenant = (memoryShare: unknown) => ({
    tenants: [
      {
        name: 'shared',
        accountId: '444444444444',
        keys: [{ accessKeyId: 'AKIASHARED000000001', secretAccessKey: 's' }],
        memoryShare,
      },
    ],
  });
  applyStartupConfig(store, parseStartupConfig(tenant(0.5)), DEFAULTS, quietLog);
  const t = store.tenants.get('shared');
  assert.equal(t?.memoryShare, 0.5);
  assert.equal(store.budget.limitOf('444444444444'), 512 * 1024 ** 2);
  if (t !== undefined) store.tenants.setMemoryShare(t, 0.1);
  applyStartupConfig(store, parseStartupConfig(tenant(0.5)), DEFAULTS, quietLog);
  assert.equal(store.tenants.get('shared')?.memoryShare, 0.5);
  for (const bad of [0, 2, '0.5']) {
    assert.throws(() => parseStartupConfig(tenant(bad)), /memoryShare/);
  }
});
