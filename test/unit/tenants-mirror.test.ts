/**
 * TenantsMirror (src/persistence/tenants-mirror.ts) against a stand-in for Redis whose HGETALL the
 * test answers when it chooses, and a stand-in for the subscribed connection: what Redis holds
 * replaces the store's tenants, and a read never undoes a change made here that is not yet written.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ManualClock } from '../../src/core/clock.js';
import { QueueStore } from '../../src/core/store.js';
import { Tenant } from '../../src/core/tenants.js';
import { serializeTenant } from '../../src/persistence/codec.js';
import { layoutFor } from '../../src/persistence/layout.js';
import type { RedisClient } from '../../src/persistence/redis.js';
import { TenantsMirror } from '../../src/persistence/tenants-mirror.js';

const layout = layoutFor();

interface Deferred<T> {
  promise: Promise<T>;
  resolve(v: T): void;
}
function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

function rig() {
  const reads: Deferred<Record<string, string>>[] = [];
  const commits: Deferred<void>[] = [];
  const listeners = new Map<string, (m: string) => void>();
  const redis = {
    hgetall: (key: string) => {
      assert.equal(key, layout.meta.tenants);
      const d = deferred<Record<string, string>>();
      reads.push(d);
      return d.promise;
    },
  } as unknown as RedisClient;
  const store = new QueueStore(new ManualClock());
  const mirror = new TenantsMirror({
    redis,
    layout,
    channels: {
      listen: (channel, fn) => {
        listeners.set(channel, fn);
        return () => listeners.delete(channel);
      },
      onReady: () => () => undefined,
    },
    store: () => store,
    commit: () => {
      const d = deferred<void>();
      commits.push(d);
      return d.promise;
    },
    intervalMs: 3_600_000,
  });
  mirror.watch(store);
  const message = (): void => listeners.get(layout.meta.tenantsFeed)?.('team');
  return { reads, commits, store, mirror, message };
}

const record = (name: string, accountId: string, keyIds: readonly string[]): string =>
  serializeTenant(
    new Tenant(
      name,
      accountId,
      keyIds.map((id) => ({ accessKeyId: id, secretAccessKey: `secret-${id}`, createdAt: 1 })),
      1,
    ),
  );

/** Lets the mirror's queued read send its HGETALL, or finish once answered (promise turns, no timers). */
const turns = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

test('Given tenants changed in Redis by another instance, When a message comes, Then the store holds them as Redis does, removed keys and tenants gone', async (t) => {
  const { reads, store, mirror, message } = rig();
  t.after(() => mirror.stop());
  mirror.start();
  await turns();
  reads.shift()?.resolve({
    team: record('team', '111122223333', ['KEY1', 'KEY2']),
    other: record('other', '222233334444', ['KEY3']),
  });
  await turns();
  assert.equal(store.tenants.byAccessKeyId('KEY2')?.tenant.name, 'team');
  assert.equal(store.tenants.byAccessKeyId('KEY3')?.tenant.name, 'other');

  message();
  await turns();
  reads.shift()?.resolve({ team: record('team', '111122223333', ['KEY1']) });
  await turns();
  assert.equal(store.tenants.byAccessKeyId('KEY2'), undefined, 'a removed key is refused');
  assert.equal(store.tenants.byAccessKeyId('KEY3'), undefined, "a deleted tenant's key is refused");
  assert.equal(store.tenants.byAccessKeyId('KEY1')?.tenant.name, 'team');
  assert.deepEqual(
    store.tenants.list().map((x) => x.name),
    ['team'],
  );
});

test('Given a read in flight, When a tenant is created here before it answers, Then the older answer does not undo the creation', async (t) => {
  const { reads, commits, store, mirror, message } = rig();
  t.after(() => mirror.stop());
  mirror.start();
  await turns();
  const stale = reads.shift();
  // Made here while Redis was being read: in the store, not yet written.
  store.tenants.create(
    'mine',
    '555566667777',
    [{ accessKeyId: 'MINE', secretAccessKey: 's', createdAt: 1 }],
    1,
  );
  stale?.resolve({});
  await turns();
  assert.equal(store.tenants.byAccessKeyId('MINE')?.tenant.name, 'mine', 'kept: the read was older');

  // Not read while the write is pending either.
  await turns();
  message();
  await turns();
  assert.equal(reads.length, 0, 'no read while a change made here is unwritten');

  // Written: its own message brings a read, which finds it in Redis and changes nothing.
  commits.shift()?.resolve();
  await turns();
  message();
  await turns();
  const tenant = store.tenants.get('mine');
  reads.shift()?.resolve({ mine: serializeTenant(tenant as Tenant) });
  await turns();
  assert.equal(store.tenants.get('mine'), tenant, 'the same object: nothing was replaced');
});
