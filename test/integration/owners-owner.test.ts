/**
 * Many owners, one shard at a time, against a real redis-server: two ShardOwners ("A" and "B",
 * each with a Persistence of its own on connections of its own, as two processes would have)
 * follow shard maps that the test sets. A shard moved from A to B is drained, flushed and
 * released by A and read in by B with everything A acknowledged; a shard whose lease A lost is
 * fenced: A's late write is refused and never reaches Redis, and A drops the shard.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Queue } from '../../src/core/queue.js';
import type { QueueStore } from '../../src/core/store.js';
import { lockKeys } from '../../src/ha/lock.js';
import { ShardOwner, type ShardMapView } from '../../src/owners/owner.js';
import { layoutFor, type Layout } from '../../src/persistence/layout.js';
import { sendOne } from '../support/queue.js';
import { uniquePrefix } from '../support/redis.js';
import { until } from '../support/layout-v1.js';
import { watchedPersistence, type WatchedPersistence } from '../support/persistence.js';
import { testsRequiring } from '../support/requires.js';
import { sharedRedis } from '../support/sqs.js';

const { after, before, test } = testsRequiring('redis-server');

const redis = sharedRedis({ before, after }, { aof: false });
const ACCOUNT = '000000000000';
const REGION = 'us-east-1';

/** A shard map the test writes: every shard to `initial`, then moves as told. */
class TestMap implements ShardMapView {
  private readonly owners: (string | undefined)[];
  private readonly listeners: (() => void)[] = [];
  constructor(initial: string | undefined) {
    this.owners = Array.from({ length: 256 }, () => initial);
  }
  ownerOf(shard: number): string | undefined {
    return this.owners[shard];
  }
  onChange(fn: () => void): void {
    this.listeners.push(fn);
  }
  move(shard: number, owner: string | undefined): void {
    this.owners[shard] = owner;
    for (const l of this.listeners) l();
  }
}

interface Process {
  readonly id: string;
  readonly owner: ShardOwner;
  readonly w: WatchedPersistence;
  store(): QueueStore;
  stop(): Promise<void>;
}

async function process(id: string, layout: Layout, map: ShardMapView): Promise<Process> {
  const data = await redis.connect();
  const leases = await redis.connect();
  const owner: ShardOwner = new ShardOwner({
    redis: leases,
    layout,
    instanceId: id,
    ttlMs: 1500,
    intervalMs: 300,
    map,
    onGive: () => undefined,
  });
  const w = watchedPersistence(data, {
    layout,
    keepConnection: true,
    owned: owner,
    onShardFenced: (s) => owner.lost(s),
  });
  await w.p.start();
  owner.start(w.p);
  return {
    id,
    owner,
    w,
    store: () => {
      const s = w.stores.at(-1);
      assert.ok(s, `${id} serves a store`);
      return s;
    },
    stop: async () => {
      await owner.stop();
      await w.p.close();
    },
  };
}

function create(p: Process, name: string): Queue {
  return p.store().create({ accountId: ACCOUNT, region: REGION, name }, {}, {}).queue;
}

function send(p: Process, q: Queue, body: string): void {
  sendOne(q, { id: randomUUID(), body, md5OfBody: 'md5', senderId: ACCOUNT }, p.w.clock.now());
}

void test('Given every shard on A, when one shard is moved to B, then B serves it with all A acknowledged and A holds none of it', async () => {
  const layout = layoutFor(uniquePrefix());
  const map = new TestMap('A');
  const a = await process('A', layout, map);
  const b = await process('B', layout, map);
  try {
    await until(
      'A serves all 256 shards',
      () => Promise.resolve(a.owner.counts().serving),
      (n) => n === 256,
    );
    const q = create(a, 'moving');
    for (let i = 0; i < 3; i++) send(a, q, `m${i}`);
    await a.w.p.commit(q.shard);

    map.move(q.shard, 'B');
    await until('B serves the shard', () => Promise.resolve(b.owner.serves(q.shard)), Boolean);
    assert.equal(a.owner.serves(q.shard), false);
    assert.equal(a.store().get(ACCOUNT, 'moving', REGION), undefined, 'A dropped the queue');
    const there = b.store().get(ACCOUNT, 'moving', REGION);
    assert.ok(there, 'B loaded the queue');
    assert.deepEqual(
      there
        .receive(10, undefined, b.w.clock.now())
        .map((m) => m.body)
        .sort(),
      ['m0', 'm1', 'm2'],
    );
    await b.w.p.commit(q.shard);
    const lease = await redis.client.get(lockKeys(layout.shards[q.shard] ?? layout.meta).lock);
    assert.match(lease ?? '', /:B$/, "the lease is B's");
    assert.equal(b.owner.counts().serving, 1, 'B took only the shard it was given');
  } finally {
    await b.stop();
    await a.stop();
  }
});

void test("Given A serves a shard, when its lease is taken over behind its back, then A's next write is fenced and A drops the shard", async () => {
  const layout = layoutFor(uniquePrefix());
  const mapA = new TestMap('A');
  const a = await process('A', layout, mapA);
  try {
    await until(
      'A serves all 256 shards',
      () => Promise.resolve(a.owner.counts().serving),
      (n) => n === 256,
    );
    const q = create(a, 'fenced');
    send(a, q, 'before');
    await a.w.p.commit(q.shard);

    // Another process took the lease (A stalled past its TTL, say): A has not noticed yet.
    const keys = lockKeys(layout.shards[q.shard] ?? layout.meta);
    await redis.client.set(keys.lock, '999999:someone-else', 'PX', 60_000);
    send(a, q, 'late');
    await assert.rejects(a.w.p.commit(q.shard), /fenced|lease|lock/i);
    await until(
      'A dropped the shard',
      () => Promise.resolve(a.owner.serves(q.shard)),
      (v) => !v,
    );
    assert.equal(a.owner.held().has(q.shard), false);
    const stored = await redis.client.hvals(`${layout.shards[q.shard]?.prefix ?? ''}m:${q.uid}`);
    assert.equal(stored.length, 1, 'only the acknowledged message is in Redis');
    assert.equal(await redis.client.get(keys.lock), '999999:someone-else', "A released nothing of another's");
    assert.ok(a.owner.serves(q.shard === 0 ? 1 : 0), 'the other shards are served on');
  } finally {
    await a.stop();
  }
});
