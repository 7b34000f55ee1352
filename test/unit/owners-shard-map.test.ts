/**
 * ShardMap's shared read (src/owners/shard-map.ts, refreshShared): what the routers call between
 * the tries of each request they hold, over a fake Redis that counts the map reads.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { layoutFor } from '../../src/persistence/layout.js';
import type { RedisClient } from '../../src/persistence/redis.js';
import { ShardMap } from '../../src/owners/shard-map.js';

function countingRedis(): { redis: RedisClient; reads: () => number; answer: () => void } {
  let reads = 0;
  const pending: (() => void)[] = [];
  const redis = {
    hgetall: () => {
      reads++;
      return new Promise<Record<string, string>>((resolve) => pending.push(() => resolve({})));
    },
  } as unknown as RedisClient;
  return { redis, reads: () => reads, answer: () => pending.splice(0).forEach((f) => f()) };
}

void test('Given a read of the map in flight, When many held requests ask for a shared read, Then they share it, and a call after it ends reads again', async () => {
  const r = countingRedis();
  const map = new ShardMap({ redis: r.redis, layout: layoutFor(), intervalMs: 60_000 });
  const asks = Array.from({ length: 100 }, () => map.refreshShared());
  assert.equal(r.reads(), 1, 'one read for the hundred');
  r.answer();
  await Promise.all(asks);
  const again = map.refreshShared();
  assert.equal(r.reads(), 2, 'a new read once the first has ended');
  r.answer();
  await again;
});
