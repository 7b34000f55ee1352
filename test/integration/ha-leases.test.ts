/**
 * ShardLeases (src/ha/leases.ts) against a real redis-server and a Redis Cluster of three masters:
 * one lease per shard under the shard's own tag, taken, renewed and released with the term's
 * token, never taken from another token. Each test has its own key prefix, so its own 256
 * leases. A lease that must expire is expired by hand (PEXPIRE 1) once the test has seen the
 * acquisition wait for it: nothing waits on a TTL.
 */
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { LeasesUnavailableError, ShardLeases } from '../../src/ha/leases.js';
import type { ElectorTimers } from '../../src/ha/elector.js';
import type { LogSink } from '../../src/log.js';
import { watchedLog } from '../support/log.js';
import { SHARD_COUNT } from '../../src/shard/hash.js';
import { layoutFor, type Layout } from '../../src/persistence/layout.js';
import type { RedisClient } from '../../src/persistence/redis.js';
import { ScriptCode, scripts } from '../../src/persistence/scripts.js';
import { uniquePrefix } from '../support/redis.js';
import { testsRequiring } from '../support/requires.js';
import { redisCluster, singleRedis, type PersistenceBackend } from '../support/scenarios-persistence.js';

const { after, before, test } = testsRequiring('redis-server');

const single = singleRedis({ before, after });
const cluster = redisCluster({ before, after });

const TTL = 60_000;

/** What every lease of the layout holds, and its PTTL; one GET and PTTL per lease (a Cluster routes each). */
async function leasesIn(c: RedisClient, layout: Layout): Promise<{ holder: string | null; pttl: number }[]> {
  return Promise.all(
    layout.shards.map(async (k) => ({ holder: await c.get(k.lease), pttl: await c.pttl(k.lease) })),
  );
}

/** `waiting`, unless the acquisition settles first (it took a lease it must not have). */
function firstOf<T>(waiting: Promise<T>, acquiring: Promise<unknown>): Promise<T> {
  return Promise.race([
    waiting,
    acquiring.then(
      () => assert.fail('acquired every lease while one was held by another token'),
      (e: unknown) => assert.fail(`the acquisition failed: ${String(e)}`),
    ),
  ]);
}

const WAITING = 'shard leases held by another term: waiting for them to expire';

function leasesFor(
  b: PersistenceBackend,
  layout: Layout,
  token: string,
  o: { intervalMs?: number; log?: LogSink } = {},
): ShardLeases {
  return new ShardLeases({
    redis: b.client,
    layout,
    token,
    ttlMs: TTL,
    intervalMs: o.intervalMs ?? 50,
    log: o.log,
  });
}

function scenarios(b: PersistenceBackend): void {
  test('Given free leases, When acquired, Then every shard lease holds the token with the TTL and its info hash names the term; When released, Then all are gone', async () => {
    const layout = layoutFor(uniquePrefix());
    const leases = leasesFor(b, layout, '3:host-a');
    await leases.acquire();
    assert.equal(leases.heldCount, SHARD_COUNT);
    const held = await leasesIn(b.client, layout);
    assert.equal(held.length, 256);
    assert.deepEqual(
      held.filter((l) => l.holder !== '3:host-a' || !(l.pttl > 0 && l.pttl <= TTL)),
      [],
      'every lease holds the token with a TTL',
    );
    const info = await b.client.hgetall(`${layout.shards[17]?.lease ?? ''}:info`);
    assert.equal(info['token'], '3:host-a');
    assert.ok(Number(info['since']) > 0, 'since is Redis time in ms');

    assert.equal(await leases.release(), SHARD_COUNT);
    assert.deepEqual(
      (await leasesIn(b.client, layout)).filter((l) => l.holder !== null),
      [],
      'every lease is deleted',
    );
  });

  test('Given held leases whose TTL runs down, When renewed, Then all are extended; When one is taken by another token, Then the renewal says the term is over and leaves that one alone', async () => {
    const layout = layoutFor(uniquePrefix());
    const leases = leasesFor(b, layout, '3:host-a');
    await leases.acquire();
    await Promise.all(layout.shards.map((k) => b.client.pexpire(k.lease, 5000)));
    assert.equal(await leases.renew(), true);
    assert.deepEqual(
      (await leasesIn(b.client, layout)).filter((l) => !(l.pttl > 5000)),
      [],
      'every TTL was extended',
    );

    const taken = layout.shards[200];
    assert.ok(taken !== undefined);
    await b.client.set(taken.lease, '4:host-b', 'PX', 5000);
    assert.equal(await leases.renew(), false);
    assert.equal(await b.client.get(taken.lease), '4:host-b');
    assert.ok((await b.client.pttl(taken.lease)) <= 5000, "the other token's TTL was not extended");
    assert.equal(await leases.release(), SHARD_COUNT - 1, "release leaves the other token's lease");
    assert.equal(await b.client.get(taken.lease), '4:host-b');
  });

  test('Given one lease held by an older term of another instance, When acquired, Then the other 255 are taken at once and that one only once it expires; it is never taken from its holder', async () => {
    const layout = layoutFor(uniquePrefix());
    const stale = layout.shards[42];
    assert.ok(stale !== undefined);
    await b.client.set(stale.lease, '2:host-old', 'PX', TTL);
    const log = watchedLog();
    const waiting = log.seen(WAITING);
    const leases = leasesFor(b, layout, '3:host-a', { log });
    let done = false;
    const acquiring = leases.acquire().then(() => (done = true));

    assert.deepEqual(await firstOf(waiting, acquiring), {
      missing: 1,
      holders: { '2:host-old': 1 },
      errors: 0,
    });
    assert.equal(done, false, 'not resolved while a lease is held by another token');
    assert.equal(leases.heldCount, SHARD_COUNT - 1);
    assert.equal(await b.client.get(stale.lease), '2:host-old', 'the lease was not taken');

    await b.client.pexpire(stale.lease, 1);
    await acquiring;
    assert.equal(await b.client.get(stale.lease), '3:host-a');
    assert.deepEqual(
      (await leasesIn(b.client, layout)).filter((l) => l.holder !== '3:host-a'),
      [],
    );
  });

  test('Given a lease another token holds past the bound, When acquired within it, Then it rejects naming the holder, and the lease still holds that token', async () => {
    const layout = layoutFor(uniquePrefix());
    const stale = layout.shards[3];
    assert.ok(stale !== undefined);
    await b.client.set(stale.lease, '2:host-old', 'PX', TTL);
    const leases = leasesFor(b, layout, '3:host-a', { intervalMs: 20 });
    const err = await leases.acquire({ withinMs: 60 }).then(
      () => assert.fail('acquired a lease another token holds'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof LeasesUnavailableError);
    assert.equal(err.missing, 1);
    assert.deepEqual([...err.holders], [['2:host-old', 1]]);
    assert.equal(await b.client.get(stale.lease), '2:host-old');
  });

  test('Given leases still holding an earlier token of this same instance, When acquired, Then they are released and taken at once', async () => {
    const layout = layoutFor(uniquePrefix());
    await leasesFor(b, layout, '2:host-a').acquire();
    const log = watchedLog();
    const leases = leasesFor(b, layout, '5:host-a', { log, intervalMs: 60_000 });
    await leases.acquire();
    assert.deepEqual(
      (await leasesIn(b.client, layout)).filter((l) => l.holder !== '5:host-a'),
      [],
    );
    assert.ok(log.lines.includes('releasing the leases of an earlier term of this instance'));
    assert.ok(!log.lines.includes(WAITING), 'it never waited for an expiry');
  });

  test('Given an acquisition waiting for a lease, When its signal aborts, Then it rejects with the reason and takes nothing more', async () => {
    const layout = layoutFor(uniquePrefix());
    const stale = layout.shards[0];
    assert.ok(stale !== undefined);
    await b.client.set(stale.lease, '2:host-old', 'PX', TTL);
    const log = watchedLog();
    const waiting = log.seen(WAITING);
    const controller = new AbortController();
    // Timers that only count what is pending: the wait between attempts is one of them.
    const pending = new Set<number>();
    let seq = 0;
    const timers: ElectorTimers = {
      now: () => 0,
      wallNow: () => 0,
      setTimeout: () => {
        pending.add(++seq);
        return seq;
      },
      clearTimeout: (h) => pending.delete(h as number),
    };
    const leases = new ShardLeases({
      redis: b.client,
      layout,
      token: '3:host-a',
      ttlMs: TTL,
      intervalMs: 50,
      log,
      timers,
    });
    const acquiring = leases.acquire({ signal: controller.signal });
    await firstOf(waiting, acquiring);
    assert.equal(pending.size, 1, 'waiting to try again');
    controller.abort(new Error('term over'));
    await assert.rejects(acquiring, /term over/);
    assert.equal(pending.size, 0, 'no attempt is left to come');
    assert.equal(await b.client.get(stale.lease), '2:host-old');
  });

  test('Given leases held by a term, When another term writes a shard with its own token, Then the write is fenced (-1); with the holding token it is applied', async () => {
    const layout = layoutFor(uniquePrefix());
    await leasesFor(b, layout, '3:host-a').acquire();
    const k = layout.shards[99];
    assert.ok(k !== undefined);
    const apply = (token: string): Promise<unknown> =>
      scripts.apply.run(b.client, [k.lock, k.queues, k.seq, k.commit], [token, k.prefix, '', 'c1']);
    assert.equal(await apply('2:host-old'), ScriptCode.FENCED);
    assert.equal(await apply('3:host-a'), ScriptCode.OK);
  });
}

for (const backend of [single, cluster]) {
  void describe(`over ${backend.name}`, () => scenarios(backend));
}
