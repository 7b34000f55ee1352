/**
 * Membership (src/owners/members.ts) on a fake clock, over a fake Redis that runs the three member
 * scripts' contracts in JavaScript with keys that expire on that clock: heartbeats, expiry and
 * pruning, leaving, and what `onChange` reports. The real scripts run against redis-server in
 * test/integration/owners-membership.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { layoutFor } from '../../src/persistence/layout.js';
import type { RedisClient } from '../../src/persistence/redis.js';
import { memberScripts, Membership, type MembershipChange } from '../../src/owners/members.js';
import { FakeTimers } from '../support/fake-timers.js';

const TTL = 9_000;
const INTERVAL = 3_000;
const layout = layoutFor();

class FakeRedis {
  readonly hash = new Map<string, string>();
  readonly strings = new Map<string, { value: string; expiresAt: number }>();
  readonly published: string[] = [];
  down = false;

  constructor(private readonly clock: FakeTimers) {}

  get(key: string): string | undefined {
    const e = this.strings.get(key);
    if (e !== undefined && this.clock.now() >= e.expiresAt) this.strings.delete(key);
    return this.strings.get(key)?.value;
  }

  /** What ioredis' `call('evalsha', [sha, numkeys, ...keys, ...args])` does with the member scripts. */
  client(): RedisClient {
    const call = (_cmd: string, argv: (string | number)[]): Promise<unknown> => {
      if (this.down) return Promise.reject(new Error('connect ECONNREFUSED'));
      const [sha, n, ...rest] = argv.map(String);
      const keys = rest.slice(0, Number(n));
      const args = rest.slice(Number(n));
      if (sha === memberScripts.beat.sha) {
        const [id = '', record = '', ttl = '0', channel = ''] = args;
        const existed = this.get(keys[1] ?? '') !== undefined;
        this.strings.set(keys[1] ?? '', { value: record, expiresAt: this.clock.now() + Number(ttl) });
        this.hash.set(id, record);
        if (existed) return Promise.resolve(0);
        this.published.push(`${channel} join ${id}`);
        return Promise.resolve(1);
      }
      if (sha === memberScripts.leave.sha) {
        const [id = '', channel = ''] = args;
        const had = this.strings.delete(keys[1] ?? '') || this.hash.delete(id);
        this.hash.delete(id);
        if (had) this.published.push(`${channel} leave ${id}`);
        return Promise.resolve(had ? 1 : 0);
      }
      if (sha === memberScripts.live.sha) {
        const [prefix = '', channel = ''] = args;
        const live: string[] = [];
        let soonest = -1;
        for (const id of [...this.hash.keys()]) {
          const record = this.get(prefix + id);
          if (record !== undefined) {
            live.push(record);
            const ttl = (this.strings.get(prefix + id)?.expiresAt ?? 0) - this.clock.now();
            if (soonest < 0 || ttl < soonest) soonest = ttl;
          } else {
            this.hash.delete(id);
            this.published.push(`${channel} expired ${id}`);
          }
        }
        return Promise.resolve([live, soonest]);
      }
      return Promise.reject(new Error(`unexpected script ${sha}`));
    };
    return { call } as unknown as RedisClient;
  }
}

function member(r: FakeRedis, clock: FakeTimers, id: string): { m: Membership; changes: MembershipChange[] } {
  const m = new Membership({
    redis: r.client(),
    layout,
    id,
    address: `${id}.internal:4100`,
    ttlMs: TTL,
    intervalMs: INTERVAL,
    timers: clock,
  });
  const changes: MembershipChange[] = [];
  m.onChange((c) => changes.push(c));
  return { m, changes };
}

const ids = (c: MembershipChange): [string[], readonly string[]] => [c.joined.map((m) => m.id), c.left];

void test('Given a member, When it runs for a while, Then it beats every interval and stays live', async () => {
  const clock = new FakeTimers();
  const r = new FakeRedis(clock);
  const { m, changes } = member(r, clock, 'host-a-101');
  await m.start();
  assert.deepEqual(r.published, [`${layout.meta.membersChannel} join host-a-101`]);
  await clock.advance(10 * INTERVAL);
  assert.equal(m.beatCount, 11);
  assert.ok(r.get(layout.meta.member('host-a-101')) !== undefined);
  assert.deepEqual(changes.map(ids), [[['host-a-101'], []]]);
  assert.deepEqual(JSON.parse(r.hash.get('host-a-101') ?? ''), {
    id: 'host-a-101',
    address: 'host-a-101.internal:4100',
    startedAt: clock.wallNow() - 10 * INTERVAL,
  });
  m.halt();
});

void test('Given two members, When one stops beating, Then the other keeps it until its TTL has passed, then drops and prunes it once', async () => {
  const clock = new FakeTimers();
  const r = new FakeRedis(clock);
  const a = member(r, clock, 'host-a-101');
  const b = member(r, clock, 'host-b-202');
  await a.m.start();
  await b.m.start();
  await clock.advance(INTERVAL);
  assert.deepEqual(
    a.m.members.map((x) => x.id),
    ['host-a-101', 'host-b-202'],
  );
  b.m.halt();
  // b's last beat was at INTERVAL: its key lives until INTERVAL + TTL.
  await clock.advance(TTL - 1);
  assert.equal(a.m.members.length, 2, 'not dropped before its TTL');
  await clock.advance(INTERVAL);
  assert.deepEqual(
    a.m.members.map((x) => x.id),
    ['host-a-101'],
  );
  assert.deepEqual(a.changes.map(ids).at(-1), [[], ['host-b-202']]);
  assert.equal(r.hash.has('host-b-202'), false);
  assert.equal(r.published.filter((p) => p.endsWith('expired host-b-202')).length, 1);
  a.m.halt();
});

void test('Given two members beating out of step, When one stops, Then the other reads again when its key expires and drops it then, not at its own next read', async () => {
  const clock = new FakeTimers();
  const r = new FakeRedis(clock);
  const a = member(r, clock, 'host-a-101');
  const b = member(r, clock, 'host-b-202');
  await a.m.start(); // a reads at 0, INTERVAL, 2 INTERVAL, ...
  await clock.advance(1000);
  await b.m.start();
  await clock.advance(INTERVAL);
  b.m.halt();
  // b's last beat was at INTERVAL + 1000: its key expires at INTERVAL + 1000 + TTL, between two
  // of a's rounds (4 INTERVAL and 5 INTERVAL with these figures).
  const expiresAt = INTERVAL + 1000 + TTL;
  assert.ok(expiresAt % INTERVAL !== 0);
  await clock.advance(expiresAt - clock.now() - 1);
  assert.equal(a.m.members.length, 2, 'not dropped before its TTL');
  await clock.advance(2);
  assert.deepEqual(
    a.m.members.map((x) => x.id),
    ['host-a-101'],
    'dropped at its expiry, before the next round',
  );
  assert.equal(r.published.filter((p) => p.endsWith('expired host-b-202')).length, 1);
  a.m.halt();
});

void test('Given two members, When one leaves, Then it is gone at once, announced, and the other sees it at its next read', async () => {
  const clock = new FakeTimers();
  const r = new FakeRedis(clock);
  const a = member(r, clock, 'host-a-101');
  const b = member(r, clock, 'host-b-202');
  await a.m.start();
  await b.m.start();
  await b.m.leave();
  assert.equal(r.get(layout.meta.member('host-b-202')), undefined);
  assert.equal(r.hash.has('host-b-202'), false);
  assert.equal(r.published.at(-1), `${layout.meta.membersChannel} leave host-b-202`);
  const live = await a.m.live();
  assert.deepEqual(
    live.map((x) => x.id),
    ['host-a-101'],
  );
  await clock.advance(3 * INTERVAL);
  assert.equal(b.m.beatCount, 1, 'a member that left beats no more');
  a.m.halt();
});

void test('Given a member cut off from Redis longer than its TTL, When Redis is back, Then it joins again, announced', async () => {
  const clock = new FakeTimers();
  const r = new FakeRedis(clock);
  const { m, changes } = member(r, clock, 'host-a-101');
  await m.start();
  r.down = true;
  await clock.advance(TTL + INTERVAL);
  assert.equal(r.get(layout.meta.member('host-a-101')), undefined, 'expired meanwhile');
  r.down = false;
  await clock.advance(INTERVAL);
  assert.ok(r.get(layout.meta.member('host-a-101')) !== undefined);
  assert.equal(r.published.filter((p) => p.endsWith('join host-a-101')).length, 2);
  // Its own view never lost itself (no read succeeded meanwhile): no change to report.
  assert.deepEqual(changes.map(ids), [[['host-a-101'], []]]);
  m.halt();
});

void test('Given an interval not under the TTL, When a member is made, Then it is refused', () => {
  const clock = new FakeTimers();
  const r = new FakeRedis(clock);
  assert.throws(
    () =>
      new Membership({
        redis: r.client(),
        layout,
        id: 'x',
        address: 'y',
        ttlMs: 1000,
        intervalMs: 1000,
        timers: clock,
      }),
  );
});

void test('Given a member, When Redis stops answering its heartbeats, Then it counts itself live until one TTL after the last heartbeat sent, and not after it leaves', async () => {
  const clock = new FakeTimers();
  const r = new FakeRedis(clock);
  const { m } = member(r, clock, 'host-a-101');
  assert.equal(m.isLive, false, 'not before its first heartbeat');
  await m.start();
  assert.equal(m.isLive, true);
  r.down = true;
  // The last heartbeat that went through was sent at 0: the others drop it at TTL.
  await clock.advance(TTL - 1);
  assert.equal(m.isLive, true, "still live in the others' eyes");
  await clock.advance(1);
  assert.equal(m.isLive, false, 'its key has expired: the others no longer count it');
  r.down = false;
  await clock.advance(INTERVAL);
  assert.equal(m.isLive, true, 'a heartbeat that goes through makes it live again');
  await m.leave();
  assert.equal(m.isLive, false, 'a member that left is not live');
});
