/**
 * Many owners and the memory budget, against a real redis-server: a shard moved to a process
 * whose budget it does not fit is refused there by name and held (the map gives it to nobody
 * else), read again only after `refusedRetryMs`, never at every reconcile; and once it fits (here:
 * messages removed from Redis, as the refusal's log line advises) it is read in and served.
 * Two ShardOwners on one map, each with a Persistence of its own, as two processes would have.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { QueueStore } from '../../src/core/store.js';
import { ShardOwner, type ShardMapView } from '../../src/owners/owner.js';
import { layoutFor, type Layout } from '../../src/persistence/layout.js';
import { sendOne } from '../support/queue.js';
import { uniquePrefix } from '../support/redis.js';
import { until } from '../support/layout-v1.js';
import { shardKeysOf, watchedPersistence, type WatchedPersistence } from '../support/persistence.js';
import { testsRequiring } from '../support/requires.js';
import { sharedRedis } from '../support/sqs.js';

const { after, before, test } = testsRequiring('redis-server');

const redis = sharedRedis({ before, after }, { aof: false });
const ACCOUNT = '000000000000';
const REGION = 'us-east-1';

class TestMap implements ShardMapView {
  private readonly owners: (string | undefined)[] = Array.from({ length: 256 }, () => 'A');
  private readonly listeners: (() => void)[] = [];
  ownerOf(shard: number): string | undefined {
    return this.owners[shard];
  }
  onChange(fn: () => void): void {
    this.listeners.push(fn);
  }
  move(shard: number, owner: string): void {
    this.owners[shard] = owner;
    for (const l of this.listeners) l();
  }
}

async function ownerProcess(
  id: string,
  layout: Layout,
  map: ShardMapView,
  opts: { maxMemory?: number; refusedRetryMs?: number; refused?: number[] } = {},
): Promise<{ owner: ShardOwner; w: WatchedPersistence; stop(): Promise<void> }> {
  const owner: ShardOwner = new ShardOwner({
    redis: await redis.connect(),
    layout,
    instanceId: id,
    ttlMs: 1500,
    intervalMs: 300,
    map,
    onGive: () => undefined,
    refusedRetryMs: opts.refusedRetryMs,
  });
  const maxMemory = opts.maxMemory;
  const w = watchedPersistence(await redis.connect(), {
    layout,
    keepConnection: true,
    owned: owner,
    onShardFenced: (s) => owner.lost(s),
    onShardRefused: (s) => opts.refused?.push(s),
    ...(maxMemory === undefined
      ? {}
      : { createStore: () => new QueueStore(w.clock, { deletedRecentlyMs: 0, maxMemory }) }),
  });
  await w.p.start();
  owner.start(w.p);
  return {
    owner,
    w,
    stop: async () => {
      await owner.stop();
      await w.p.close();
    },
  };
}

void test("Given a shard bigger than B's memory budget, when the map moves it to B, then B refuses it once, holds it, and reads it again only after refusedRetryMs; once it fits, B serves it", async () => {
  const layout = layoutFor(uniquePrefix());
  const map = new TestMap();
  const a = await ownerProcess('A', layout, map);
  const refused: number[] = [];
  const b = await ownerProcess('B', layout, map, {
    maxMemory: 256 * 1024,
    refusedRetryMs: 2000,
    refused,
  });
  try {
    await until(
      'A serves every shard',
      () => Promise.resolve(a.owner.counts().serving),
      (n) => n === 256,
    );
    const store = a.w.stores.at(-1);
    assert.ok(store);
    const q = store.create({ accountId: ACCOUNT, region: REGION, name: 'too-big' }, {}, {}).queue;
    for (let i = 0; i < 8; i++) {
      sendOne(
        q,
        { id: randomUUID(), body: `${i}`.padEnd(64 * 1024, 'x'), md5OfBody: 'md5', senderId: ACCOUNT },
        a.w.clock.now(),
      );
    }
    await a.w.p.commit(q.shard);

    map.move(q.shard, 'B');
    await until(
      'B refused the shard',
      () => Promise.resolve(refused.length),
      (n) => n > 0,
    );
    // What must not happen is B reading it again and again: the reconciles of 1 s (renewals every
    // 300 ms, and the 100 ms retries of shards not read in) would each have done so.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.deepEqual(refused, [q.shard], 'refused once, by name');
    assert.equal(b.w.p.shardsDown.get(q.shard), 'refused');
    assert.equal(b.owner.held().get(q.shard)?.state, 'taking', 'B holds the lease, and does not serve it');
    assert.equal(b.owner.serves(q.shard), false);
    assert.ok((b.w.stores.at(-1)?.budget.used ?? Infinity) <= 256 * 1024, 'B holds no more than its budget');

    // Removed from Redis but one: the shard fits now, and B's next try (refusedRetryMs) reads it in.
    const key = shardKeysOf(layout, q).messages(q.uid);
    const ids = await redis.client.hkeys(key);
    await redis.client.hdel(key, ...ids.slice(1));
    await until('B serves the shard', () => Promise.resolve(b.owner.serves(q.shard)), Boolean, 10_000);
    assert.deepEqual(refused, [q.shard], 'not refused a second time');
    const there = b.w.stores.at(-1)?.get(ACCOUNT, 'too-big', REGION);
    assert.equal(there?.receive(10, undefined, b.w.clock.now()).length, 1, 'the one message left is there');
  } finally {
    await b.stop();
    await a.stop();
  }
});
