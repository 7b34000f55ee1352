/**
 * The leader lock's scripts (src/ha/scripts/) against a real redis-server, each test under its own
 * key prefix, and one elector on the real lock. Expiry is checked with PTTL, never by waiting.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { Elector } from '../../src/ha/elector.js';
import { lockKeys, ReleaseListener, RedisLock } from '../../src/ha/lock.js';
import { keysFor } from '../../src/persistence/keys.js';
import { layoutFor } from '../../src/persistence/layout.js';
import { createRedis } from '../../src/persistence/redis.js';
import { FencedError } from '../../src/persistence/scripts.js';
import { Writer } from '../../src/persistence/writer.js';
import { QueueStore } from '../../src/core/store.js';
import { ManualClock } from '../../src/core/clock.js';
import { uniquePrefix } from '../support/redis.js';
import type { Redis } from 'ioredis';
import { testsRequiring } from '../support/requires.js';
import { sharedRedis } from '../support/sqs.js';

const { after, before, test } = testsRequiring('redis-server');

const redis = sharedRedis({ before, after }, { aof: false });

const client = (): Promise<Redis> => redis.connect();

async function newLock(): Promise<RedisLock> {
  return new RedisLock(await client(), lockKeys(keysFor(uniquePrefix())));
}

test('Given a free lock, When acquired, Then the token is <epoch>:<id>, the TTL is set and the info hash records the term', async () => {
  const lock = await newLock();
  const res = await lock.acquire('host-1', 5000);
  assert.deepEqual(res, { acquired: true, token: '1:host-1', epoch: 1 });
  const pttl = await redis.server.client.pttl(lock.keys.lock);
  assert.ok(pttl > 4000 && pttl <= 5000, `pttl ${pttl}`);
  const info = await lock.info();
  assert.equal(info.holder, '1:host-1');
  assert.equal(info.lastToken, '1:host-1');
  assert.ok(
    info.since !== undefined && Math.abs(info.since - Date.now()) < 60_000,
    'since is Redis time in ms',
  );
});

test('Given a held lock, When another instance tries, Then it is refused, told the holder, and the epoch is not spent', async () => {
  const lock = await newLock();
  await lock.acquire('a', 5000);
  const res = await lock.acquire('b', 5000);
  assert.equal(res.acquired, false);
  assert.equal(!res.acquired && res.holder, '1:a');
  assert.equal(await redis.server.client.get(lock.keys.epoch), '1');
});

test('Given a lock that was released, When taken again, Then the epoch (and so the token) is new', async () => {
  const lock = await newLock();
  await lock.acquire('a', 5000);
  assert.equal(await lock.release('1:a'), true);
  const res = await lock.acquire('a', 5000);
  assert.deepEqual(res, { acquired: true, token: '2:a', epoch: 2 });
});

test('Given a lock held by another token, When renewed or released with ours, Then nothing changes', async () => {
  const lock = await newLock();
  await lock.acquire('a', 5000);
  await redis.server.client.pexpire(lock.keys.lock, 3000);
  assert.equal(await lock.renew('9:b', 60_000), false);
  assert.equal(await lock.release('9:b'), false);
  assert.equal(await redis.server.client.get(lock.keys.lock), '1:a');
  assert.ok((await redis.server.client.pttl(lock.keys.lock)) <= 3000, 'the TTL was not extended');
});

test('Given our lock, When renewed, Then its TTL is extended and `renewed` moves', async () => {
  const lock = await newLock();
  await lock.acquire('a', 2000);
  assert.equal(await lock.renew('1:a', 60_000), true);
  assert.ok((await redis.server.client.pttl(lock.keys.lock)) > 50_000);
  assert.ok((await lock.info()).renewed !== undefined);
});

test('Given a follower subscribed to the release channel, When the leader releases, Then the token is announced', async () => {
  const lock = await newLock();
  const sub = createRedis({ url: redis.url });
  const heard: string[] = [];
  let resolveHeard!: () => void;
  const got = new Promise<void>((resolve) => (resolveHeard = resolve));
  const listener = new ReleaseListener(sub, lock.keys.channel, (token) => {
    heard.push(token);
    resolveHeard();
  });
  listener.start();
  await once(sub, 'ready');
  // Subscribed once the server counts us on the channel.
  for (let i = 0; i < 100; i++) {
    const [, n] = (await redis.server.client.pubsub('NUMSUB', lock.keys.channel)) as [string, number];
    if (n > 0) break;
    await new Promise((resolve) => setImmediate(resolve));
  }
  await lock.acquire('a', 5000);
  await lock.release('1:a');
  await got;
  listener.close();
  assert.deepEqual(heard, ['1:a']);
});

test('Given a writer holding an old token, When another term holds the lock, Then its write is fenced and writes nothing', async () => {
  const c = await client();
  const layout = layoutFor(uniquePrefix());
  const lock = new RedisLock(c, lockKeys(layout.meta));
  await lock.acquire('a', 5000);
  await lock.release('1:a');
  await lock.acquire('b', 5000);

  const store = new QueueStore(new ManualClock(), { deletedRecentlyMs: 0 });
  const failures: Error[] = [];
  // Every scope fenced on the old token: meta on the leader lock, the queue's shard on its lease (unset).
  const writer = new Writer({
    layout,
    connectionFor: () => c,
    token: () => '1:a',
    unavailable: (cause) => cause,
    onFailure: (_scope, e) => failures.push(e),
  });
  writer.attach(store);
  const q = store.create({ accountId: '000000000000', region: 'us-east-1', name: 'q' }, {}, {}).queue;
  await assert.rejects(writer.commit(), FencedError);
  assert.ok(failures[0] instanceof FencedError);
  const shard = layout.shards[q.shard];
  assert.ok(shard !== undefined);
  assert.equal(await redis.server.client.exists(shard.queues), 0, 'nothing was written in the shard');
  const catalog = layout.meta.catalog('000000000000', 'us-east-1');
  assert.equal(await redis.server.client.exists(catalog), 0, 'nor in meta');
});

test('Given an elector on the real lock, When started, Then it leads; When stopped, Then the lock is gone', async () => {
  const lock = await newLock();
  let led!: () => void;
  const leading = new Promise<void>((resolve) => (led = resolve));
  const elector = new Elector({
    lock,
    instanceId: 'it-1',
    ttlMs: 4000,
    intervalMs: 1000,
    load: () => Promise.resolve(),
    onLead: () => led(),
  });
  elector.start();
  await leading;
  assert.equal(elector.leading, true);
  assert.equal(await redis.server.client.get(lock.keys.lock), '1:it-1');
  await elector.stop();
  assert.equal(await redis.server.client.get(lock.keys.lock), null);
});
