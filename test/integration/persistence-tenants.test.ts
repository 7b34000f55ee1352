/**
 * Tenants through the write-through path against a real redis-server: what the writer stores,
 * the loader reads back into a fresh store, as after a restart or a failover.
 */
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/core/clock.js';
import { QueueStore } from '../../src/core/store.js';
import type { Tenant } from '../../src/core/tenants.js';
import { layoutFor, type Layout } from '../../src/persistence/layout.js';
import { Writer } from '../../src/persistence/writer.js';
import { loadLayout } from '../support/persistence.js';
import { uniquePrefix } from '../support/redis.js';
import { testsRequiring } from '../support/requires.js';
import { sharedRedis } from '../support/sqs.js';

const { after, before, test } = testsRequiring('redis-server');

const redis = sharedRedis({ before, after }, { aof: false });

async function open(layout: Layout): Promise<{ store: QueueStore; writer: Writer }> {
  const store = new QueueStore(new ManualClock(1_000), { deletedRecentlyMs: 0 });
  await loadLayout(redis.client, layout, store);
  const writer = new Writer({
    layout,
    connectionFor: () => redis.client,
    unavailable: (e) => e,
  });
  writer.attach(store);
  return { store, writer };
}

function plain(t: Tenant | undefined) {
  return t === undefined
    ? undefined
    : { name: t.name, accountId: t.accountId, createdAt: t.createdAt, keys: t.keys };
}

const key = (id: string, secret = `secret-of-${id}`, createdAt = 1_000) => ({
  accessKeyId: id,
  secretAccessKey: secret,
  createdAt,
});

test('Given tenants created and their keys rotated, when the state is loaded into a new store, then they are there as they were', async () => {
  const layout = layoutFor(uniquePrefix());
  const first = await open(layout);
  const a = first.store.tenants.create('team-a', '111111111111', [key('AKIAA1')], 1_000);
  first.store.tenants.create('team-b', '222222222222', [key('AKIAB1', 'with/slash+plus=')], 1_000);
  first.store.tenants.addKey(a, key('AKIAA2', 's2', 2_000), false);
  first.store.tenants.addKey(a, key('AKIAA3', 's3', 3_000), true);
  await first.writer.commit();

  const second = await open(layout);
  assert.deepEqual(second.store.tenants.list().map(plain), first.store.tenants.list().map(plain));
  assert.deepEqual(plain(second.store.tenants.byAccessKeyId('AKIAA3')?.tenant), plain(a));
  assert.equal(second.store.tenants.byAccessKeyId('AKIAA1'), undefined, 'a replaced key stays gone');
  assert.equal(second.store.tenants.byAccessKeyId('AKIAB1')?.key.secretAccessKey, 'with/slash+plus=');
});

test('Given a tenant deleted, when the state is loaded, then it is gone and its account and keys are free', async () => {
  const layout = layoutFor(uniquePrefix());
  const first = await open(layout);
  const t = first.store.tenants.create('gone', '333333333333', [key('AKIAG1')], 1_000);
  await first.writer.commit();
  first.store.tenants.delete(t);
  await first.writer.commit();

  const second = await open(layout);
  assert.equal(second.store.tenants.size, 0);
  second.store.tenants.create('again', '333333333333', [key('AKIAG1')], 2_000);
});

test('Given a tenant created and deleted in one tick, when loaded, then nothing was stored for it', async () => {
  const layout = layoutFor(uniquePrefix());
  const first = await open(layout);
  const t = first.store.tenants.create('brief', '444444444444', [key('AKIAX1')], 1_000);
  first.store.tenants.delete(t);
  await first.writer.commit();
  assert.equal(await redis.client.hlen(layout.meta.tenants), 0);
});
