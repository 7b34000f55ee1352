/**
 * Two ActivePassive instances (src/ha/active.ts) over one real redis-server: the leader lock on
 * the meta tag, and every shard lease held by the leader's term. Each test has its own key prefix.
 * What an instance logs is the event a test waits on (test/support/log.ts); the takeover after a
 * leader stops renewing is the only wait on a TTL, a short one.
 */
import assert from 'node:assert/strict';
import { Cluster } from 'ioredis';
import { ManualClock } from '../../src/core/clock.js';
import { QueueStore } from '../../src/core/store.js';
import { ActivePassive } from '../../src/ha/active.js';
import { systemTimers, type ElectorTimers } from '../../src/ha/elector.js';
import type { Keys } from '../../src/persistence/keys.js';
import { layoutFor, type Layout } from '../../src/persistence/layout.js';
import { createClient, createRedis, type RedisClient } from '../../src/persistence/redis.js';
import { ScriptCode, scripts } from '../../src/persistence/scripts.js';
import { SHARD_COUNT } from '../../src/shard/hash.js';
import { watchedLog, type WatchedLog } from '../support/log.js';
import { uniquePrefix } from '../support/redis.js';
import { testsRequiring } from '../support/requires.js';
import { redisCluster } from '../support/scenarios-persistence.js';
import { sharedRedis } from '../support/sqs.js';

const { after, before, test } = testsRequiring('redis-server');

const redis = sharedRedis({ before, after }, { aof: false });
const cluster = redisCluster({ before, after });

const LEADING = 'leading: serving';
const FOLLOWING = 'leader election: another instance leads';
const WAITING = 'shard leases held by another term: waiting for them to expire';

/** The system's timers, until paused: then nothing scheduled fires (a process that stopped). */
function pausableTimers(): ElectorTimers & { pause(): void } {
  let paused = false;
  return {
    now: () => systemTimers.now(),
    wallNow: () => systemTimers.wallNow(),
    setTimeout: (fn, ms) => systemTimers.setTimeout(() => paused || fn(), ms),
    clearTimeout: (h) => systemTimers.clearTimeout(h),
    pause: () => (paused = true),
  };
}

interface Instance {
  readonly ap: ActivePassive;
  readonly log: WatchedLog;
  /** Stores the terms loaded. */
  loads: number;
}

const running: ActivePassive[] = [];
after(async () => {
  await Promise.all(running.map((ap) => ap.stop()));
});

function instance(
  instanceId: string,
  prefix: string,
  o: { ttlMs: number; intervalMs: number; timers?: ElectorTimers; connection?: () => RedisClient },
): Instance {
  const log = watchedLog();
  const connection = o.connection ?? ((): RedisClient => createRedis({ url: redis.url }));
  const me: Instance = {
    log,
    loads: 0,
    ap: new ActivePassive({
      redis: connection(),
      lockRedis: connection(),
      subscriber: connection(),
      layout: layoutFor(prefix),
      instanceId,
      ttlMs: o.ttlMs,
      intervalMs: o.intervalMs,
      timers: o.timers,
      createStore: () => new QueueStore(new ManualClock(), { deletedRecentlyMs: 0 }),
      unavailable: (cause) => cause,
      onStore: () => me.loads++,
      onDrop: () => undefined,
      onDrain: () => undefined,
      onFatal: (e) => log.error({ error: e.message }, 'fatal'),
      log,
    }),
  };
  running.push(me.ap);
  return me;
}

/** What every shard lease holds. */
async function shardLeases(layout: Layout): Promise<(string | null)[]> {
  return redis.client.mget(layout.shards.map((k) => k.lease));
}

/** The leases that do not hold `token`, by shard. */
async function notHolding(layout: Layout, token: string | undefined): Promise<[number, string | null][]> {
  return (await shardLeases(layout)).flatMap((h, s): [number, string | null][] =>
    h === token ? [] : [[s, h]],
  );
}

/** `msg`, unless `other` is logged first. */
function before2<T>(wanted: Promise<T>, other: Promise<object>, what: string): Promise<T> {
  return Promise.race([wanted, other.then(() => assert.fail(what))]);
}

/** A shard write with `token` through the apply script: OK, or FENCED when the lease holds another. */
function applyWith(k: Keys, token: string): Promise<unknown> {
  return scripts.apply.run(redis.client, [k.lock, k.queues, k.seq, k.commit], [token, k.prefix, '', 'c1']);
}

test('Given a leader, Then it holds every shard lease with its token and a follower holds none; When the leader stops renewing, Then after the TTL the follower leads with all 256 under a new token, and a shard write with the old token is fenced', async () => {
  const prefix = uniquePrefix();
  const layout = layoutFor(prefix);
  const timersA = pausableTimers();
  const a = instance('host-a', prefix, { ttlMs: 3000, intervalMs: 1000, timers: timersA });
  const aLeads = a.log.seen(LEADING);
  a.ap.start();
  await aLeads;
  const tokenA = a.ap.elector.token;
  assert.equal(tokenA, '1:host-a');
  assert.equal(await redis.client.get(layout.meta.lock), tokenA, 'the leader lock is on the meta tag');
  assert.deepEqual(await notHolding(layout, tokenA), [], 'every shard lease holds the term token');
  assert.deepEqual((await a.ap.status()).leases, { held: SHARD_COUNT, total: SHARD_COUNT });

  const b = instance('host-b', prefix, { ttlMs: 3000, intervalMs: 1000 });
  const bFollows = b.log.seen(FOLLOWING);
  const bLeads = b.log.seen(LEADING);
  b.ap.start();
  await bFollows;
  assert.equal(b.ap.elector.state, 'follower');
  assert.deepEqual(await notHolding(layout, tokenA), [], 'the follower took no lease');

  timersA.pause();
  await bLeads;
  const tokenB = b.ap.elector.token;
  assert.equal(tokenB, '2:host-b');
  assert.equal(b.ap.serving, true);
  assert.equal(a.ap.serving, false, 'the old leader is past its deadline');
  assert.deepEqual(await notHolding(layout, tokenB), [], 'every shard lease holds the new token');

  const fenced = await Promise.all(layout.shards.map((k) => applyWith(k, tokenA)));
  assert.deepEqual(
    fenced.flatMap((code, s) => (code === ScriptCode.FENCED ? [] : [[s, code]])),
    [],
    'every shard refuses the old token',
  );
  assert.equal(await applyWith(layout.shards[0] as Keys, tokenB), ScriptCode.OK, 'and takes the new one');
});

test('Given a leader and a follower, When the leader steps down, Then all of its leases are gone when it returns, and the follower leads with all 256 without waiting for a TTL', async () => {
  const prefix = uniquePrefix();
  const layout = layoutFor(prefix);
  // A TTL and interval this long leave the follower one way to lead soon: the announced release.
  const a = instance('host-a', prefix, { ttlMs: 60_000, intervalMs: 20_000 });
  const aLeads = a.log.seen(LEADING);
  a.ap.start();
  await aLeads;
  const tokenA = a.ap.elector.token;

  const b = instance('host-b', prefix, { ttlMs: 60_000, intervalMs: 20_000 });
  const bFollows = b.log.seen(FOLLOWING);
  const bLeads = b.log.seen(LEADING);
  const bWaits = b.log.seen(WAITING);
  b.ap.start();
  await bFollows;

  assert.equal(await a.ap.stepDown(), true);
  assert.deepEqual(
    (await shardLeases(layout)).flatMap((h, s) => (h === tokenA ? [s] : [])),
    [],
    'no lease holds the old token once the step-down returns',
  );
  assert.notEqual(await redis.client.get(layout.meta.lock), tokenA);
  await before2(bLeads, bWaits, 'the follower found a lease still held');
  assert.deepEqual(await notHolding(layout, b.ap.elector.token), []);
  assert.equal(a.ap.elector.status().lastEnd?.reason, 'step-down');
});

test('Given a shard lease held by a stale token, When an instance wins the lock, Then it waits for that lease without serving, and leads once it expires', async () => {
  const prefix = uniquePrefix();
  const layout = layoutFor(prefix);
  const stale = layout.shards[200] as Keys;
  await redis.client.set(stale.lock, '7:ghost', 'PX', 600_000);

  const a = instance('host-a', prefix, { ttlMs: 60_000, intervalMs: 20_000 });
  const waits = a.log.seen(WAITING);
  const leads = a.log.seen(LEADING);
  a.ap.start();
  assert.deepEqual(await before2(waits, leads, 'led with a lease held by another token'), {
    missing: 1,
    holders: { '7:ghost': 1 },
    errors: 0,
  });
  assert.equal(a.ap.elector.state, 'loading');
  assert.equal(a.ap.serving, false);
  assert.equal(a.loads, 0, 'no state was loaded');
  assert.deepEqual((await a.ap.status()).leases, { held: SHARD_COUNT - 1, total: SHARD_COUNT });
  assert.equal(await redis.client.get(stale.lock), '7:ghost', 'the stale lease was not taken');

  await redis.client.pexpire(stale.lock, 1);
  await leads;
  assert.equal(a.ap.serving, true);
  assert.equal(a.loads, 1);
  assert.deepEqual(await notHolding(layout, a.ap.elector.token), []);
});

test('Given a shard lease another token keeps, When an instance wins the lock, Then past ttl + 2 intervals it gives the term up, releases what it took and sits out', async () => {
  const prefix = uniquePrefix();
  const layout = layoutFor(prefix);
  const stale = layout.shards[5] as Keys;
  await redis.client.set(stale.lock, '7:ghost', 'PX', 600_000);

  const a = instance('host-a', prefix, { ttlMs: 2000, intervalMs: 500 });
  const gaveUp = a.log.seen('the shard leases were not all free in time: stepping down');
  const released = a.log.seen('leader lock released');
  const leads = a.log.seen(LEADING);
  a.ap.start();
  assert.deepEqual(await before2(gaveUp, leads, 'led with a lease held by another token'), {
    epoch: 1,
    missing: 1,
    holders: { '7:ghost': 1 },
  });
  const status = a.ap.elector.status();
  assert.equal(status.lastEnd?.reason, 'leases');
  assert.ok(status.sittingOutUntil !== undefined, 'sitting out');
  assert.equal(a.loads, 0);
  await released;
  assert.equal(await redis.client.get(layout.meta.lock), null);
  assert.deepEqual(
    (await shardLeases(layout)).flatMap((h, s) => (h === null ? [] : [[s, h]])),
    [[5, '7:ghost']],
    'only the stale lease is left',
  );
});

test('Given a leader, When one of its shard leases is found holding another token at a renewal, Then its term ends as lost and it stops serving', async () => {
  const prefix = uniquePrefix();
  const layout = layoutFor(prefix);
  const a = instance('host-a', prefix, { ttlMs: 3000, intervalMs: 1000 });
  const leads = a.log.seen(LEADING);
  const ended = a.log.seen('leader term ended: not serving');
  a.ap.start();
  await leads;
  const taken = layout.shards[77] as Keys;
  await redis.client.set(taken.lock, '9:intruder', 'PX', 600_000);
  assert.deepEqual(await ended, { epoch: 1, reason: 'lost' });
  assert.ok(a.log.lines.includes('a shard lease holds another token: this term is over'));
  assert.equal(a.ap.serving, false);
  assert.equal(a.ap.elector.status().lastEnd?.reason, 'lost');
  assert.equal(await redis.client.get(taken.lock), '9:intruder', 'the other token is left alone');
});

test('Given a Redis Cluster of three masters, When an instance leads, Then it holds all 256 leases across the masters; When it steps down, Then they are all gone and a follower leads with them', async () => {
  const prefix = uniquePrefix();
  const layout = layoutFor(prefix);
  const c = cluster.client;
  const connection = (): RedisClient => createClient({ cluster: cluster.started.startupNodes });
  const leasesOnCluster = async (): Promise<(string | null)[]> => {
    // The client refuses the commands for a node while it connects to it (no offline queue).
    if (c instanceof Cluster) await Promise.all(c.nodes('master').map((n) => n.ping()));
    return Promise.all(layout.shards.map((k) => c.get(k.lease)));
  };
  const opts = { ttlMs: 60_000, intervalMs: 20_000, connection };
  const a = instance('host-a', prefix, opts);
  const aLeads = a.log.seen(LEADING);
  a.ap.start();
  await aLeads;
  assert.ok(!a.log.lines.includes(WAITING), 'every lease was taken at the first attempt');
  const tokenA = a.ap.elector.token;
  assert.deepEqual(
    (await leasesOnCluster()).flatMap((h, s) => (h === tokenA ? [] : [[s, h]])),
    [],
    'every shard lease holds the term token',
  );

  const b = instance('host-b', prefix, opts);
  const bFollows = b.log.seen(FOLLOWING);
  const bLeads = b.log.seen(LEADING);
  const bWaits = b.log.seen(WAITING);
  b.ap.start();
  await bFollows;
  assert.equal(await a.ap.stepDown(), true);
  assert.deepEqual(
    (await leasesOnCluster()).flatMap((h, s) => (h === tokenA ? [s] : [])),
    [],
    'no lease holds the old token once the step-down returns',
  );
  await before2(bLeads, bWaits, 'the follower found a lease still held');
  const tokenB = b.ap.elector.token;
  assert.deepEqual(
    (await leasesOnCluster()).flatMap((h, s) => (h === tokenB ? [] : [[s, h]])),
    [],
  );
  const k = layout.shards[128] as Keys;
  assert.equal(
    await scripts.apply.run(c, [k.lock, k.queues, k.seq, k.commit], [tokenA ?? '', k.prefix, '', 'c1']),
    ScriptCode.FENCED,
  );
});
