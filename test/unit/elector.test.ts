/**
 * The elector's state machine on a fake clock and an in-memory lock that expires on that clock,
 * so every transition (and every deadline) is driven by advancing time, never by waiting.
 * The Lua scripts of the real lock are tested against redis-server in
 * test/integration/elector.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Elector, type EndReason, type Term } from '../../src/ha/elector.js';
import type { AcquireResult, LockBackend } from '../../src/ha/lock.js';
import { FakeTimers } from '../support/fake-timers.js';

const TTL = 10_000;
const INTERVAL = 3_000;

/** One Redis: the lock, its expiry on the fake clock, the epoch counter. */
class FakeRedis {
  lock: string | undefined;
  expiresAt = 0;
  epoch = 0;
  /** Every call fails (connection refused). */
  down = false;
  readonly released: string[] = [];

  constructor(readonly clock: FakeTimers) {}

  current(): string | undefined {
    if (this.lock !== undefined && this.clock.now() >= this.expiresAt) this.lock = undefined;
    return this.lock;
  }
}

/** One instance's connection to the FakeRedis; `hang` makes its calls never answer (a dead peer). */
class FakeLock implements LockBackend {
  hang = false;
  calls = 0;
  onRelease: ((token: string) => void)[] = [];

  constructor(private readonly r: FakeRedis) {}

  private async call<T>(fn: () => T): Promise<T> {
    this.calls++;
    await Promise.resolve();
    if (this.hang) return new Promise<T>(() => undefined);
    if (this.r.down) throw new Error('connect ECONNREFUSED');
    return fn();
  }

  acquire(instanceId: string, ttlMs: number): Promise<AcquireResult> {
    return this.call(() => {
      const holder = this.r.current();
      if (holder !== undefined) {
        return { acquired: false, holder, pttlMs: this.r.expiresAt - this.r.clock.now() };
      }
      const epoch = ++this.r.epoch;
      const token = `${epoch}:${instanceId}`;
      this.r.lock = token;
      this.r.expiresAt = this.r.clock.now() + ttlMs;
      return { acquired: true, token, epoch };
    });
  }

  renew(token: string, ttlMs: number): Promise<boolean> {
    return this.call(() => {
      if (this.r.current() !== token) return false;
      this.r.expiresAt = this.r.clock.now() + ttlMs;
      return true;
    });
  }

  release(token: string): Promise<boolean> {
    return this.call(() => {
      if (this.r.current() !== token) return false;
      this.r.lock = undefined;
      this.r.released.push(token);
      for (const fn of this.onRelease) fn(token);
      return true;
    });
  }

  holder(): Promise<string | undefined> {
    return this.call(() => this.r.current());
  }
}

interface Instance {
  readonly elector: Elector;
  readonly lock: FakeLock;
  readonly loads: Term[];
  readonly ends: { epoch: number; reason: EndReason }[];
  /** Resolves or rejects the pending load; by default loads finish at once. */
  load: (term: Term) => Promise<void>;
}

function instance(r: FakeRedis, id: string, extra: { load?: (term: Term) => Promise<void> } = {}): Instance {
  const lock = new FakeLock(r);
  const inst: Instance = {
    lock,
    loads: [],
    ends: [],
    load: extra.load ?? (() => Promise.resolve()),
    elector: undefined as unknown as Elector,
  };
  (inst as { elector: Elector }).elector = new Elector({
    lock,
    instanceId: id,
    ttlMs: TTL,
    intervalMs: INTERVAL,
    timers: r.clock,
    load: (term) => {
      inst.loads.push(term);
      return inst.load(term);
    },
    onEnd: (term, reason) => inst.ends.push({ epoch: term.epoch, reason }),
  });
  return inst;
}

/** One instance, `a`, on a fresh Redis, started and past its first attempt (leading, unless `load` fails). */
async function started(
  extra: { load?: (term: Term) => Promise<void> } = {},
): Promise<{ clock: FakeTimers; r: FakeRedis; a: Instance }> {
  const clock = new FakeTimers();
  const r = new FakeRedis(clock);
  const a = instance(r, 'a', extra);
  a.elector.start();
  await clock.advance(0);
  return { clock, r, a };
}

/** Two instances on one Redis, announcing releases to each other as the pub/sub channel does. */
function pair(r: FakeRedis): [Instance, Instance] {
  const a = instance(r, 'a');
  const b = instance(r, 'b');
  for (const x of [a, b]) {
    for (const y of [a, b]) x.lock.onRelease.push((token) => y.elector.nudge(token));
  }
  return [a, b];
}

/** A pair on a fresh Redis where `a` started first, past its first attempt, and then `b` started. */
async function leaderAndFollower(): Promise<{ clock: FakeTimers; a: Instance; b: Instance }> {
  const clock = new FakeTimers();
  const [a, b] = pair(new FakeRedis(clock));
  a.elector.start();
  await clock.advance(0);
  b.elector.start();
  return { clock, a, b };
}

test('Given a free lock, When the elector starts, Then it goes follower → loading → leader with token 1:<id>', async () => {
  const clock = new FakeTimers();
  const r = new FakeRedis(clock);
  let finishLoad!: () => void;
  const a = instance(r, 'a', { load: () => new Promise<void>((resolve) => (finishLoad = resolve)) });
  assert.equal(a.elector.state, 'follower');

  a.elector.start();
  await clock.advance(0);
  assert.equal(a.elector.state, 'loading');
  assert.equal(a.elector.leading, false, 'loading does not serve');
  assert.deepEqual(
    a.loads.map((t) => t.token),
    ['1:a'],
  );
  assert.equal(r.current(), '1:a');

  finishLoad();
  await clock.advance(0);
  assert.equal(a.elector.state, 'leader');
  assert.equal(a.elector.leading, true);
  assert.equal(a.elector.epoch, 1);
  assert.equal(a.elector.status().takeovers, 1);
});

test('Given two instances started at once, When they try the lock, Then exactly one leads and the other follows it', async () => {
  const clock = new FakeTimers();
  const r = new FakeRedis(clock);
  const [a, b] = pair(r);
  a.elector.start();
  b.elector.start();
  await clock.advance(10 * INTERVAL);

  const leaders = [a, b].filter((x) => x.elector.leading);
  assert.equal(leaders.length, 1);
  const follower = a.elector.leading ? b : a;
  assert.equal(follower.elector.state, 'follower');
  assert.equal(follower.elector.status().lastSeenHolder, r.current());
  assert.equal(r.epoch, 1, 'one term only: the epoch is not spent on failed attempts');
});

test('Given a leader whose renewals succeed, When many intervals pass, Then it stays leader in one term', async () => {
  const { clock, r, a } = await started();
  for (let i = 0; i < 50; i++) {
    await clock.advance(INTERVAL);
    assert.equal(a.elector.leading, true, `still leading after ${i + 1} intervals`);
  }
  assert.deepEqual(a.ends, []);
  assert.equal(r.current(), '1:a');
});

test('Given a leader, When Redis stops answering, Then it demotes at ttl - interval after its last renewal, before the lock expires', async () => {
  const { clock, r, a } = await started();
  await clock.advance(INTERVAL); // a renewal succeeds at t = 3000
  const lastRenewal = clock.now();
  r.down = true;

  await clock.advance(TTL - INTERVAL - 1);
  assert.equal(a.elector.leading, true, 'still leading 1 ms before the deadline');
  await clock.advance(1);
  assert.equal(a.elector.leading, false);
  assert.equal(a.elector.state, 'follower');
  assert.deepEqual(a.ends, [{ epoch: 1, reason: 'deadline' }]);
  assert.ok(a.elector.status().renewFailures >= 2, 'it retried before giving up');
  // The lock (renewed at lastRenewal for TTL) is still there: nobody else could have led yet.
  r.down = false;
  assert.ok(clock.now() < lastRenewal + TTL);
  assert.equal(r.current(), '1:a');
});

test('Given a leader whose renewal never answers, When its deadline passes, Then it demotes without waiting for the answer', async () => {
  const { clock, a } = await started();
  a.lock.hang = true;
  await clock.advance(TTL - INTERVAL);
  assert.equal(a.elector.state, 'follower');
  assert.deepEqual(a.ends, [{ epoch: 1, reason: 'deadline' }]);
});

test('Given a leader paused past its deadline (SIGSTOP), When it resumes, Then `leading` is false before any timer has run', async () => {
  const { clock, a } = await started();
  assert.equal(a.elector.leading, true);

  clock.freeze(TTL + 1);
  // No timer has fired (a request read right after SIGCONT runs before the timers do).
  assert.equal(a.elector.state, 'leader');
  assert.equal(a.elector.leading, false);
  await clock.advance(0);
  assert.equal(a.elector.state, 'follower');
  assert.equal(a.ends.length, 1);
});

test('Given a leader, When the lock is taken by another token, Then the next renewal ends the term as lost', async () => {
  const { clock, r, a } = await started();
  r.lock = '7:intruder';
  r.expiresAt = clock.now() + TTL;

  await clock.advance(INTERVAL);
  assert.equal(a.elector.state, 'follower');
  assert.deepEqual(a.ends, [{ epoch: 1, reason: 'lost' }]);
  assert.equal(r.current(), '7:intruder', 'the other token is left alone');
});

test('Given a leader, When a write is fenced, Then it is a follower at once and its next term has a new epoch', async () => {
  const { clock, r, a } = await started();
  // The lock went (e.g. lost in a Redis failover) and b took it, while a still believes it leads.
  r.epoch = 2;
  r.lock = '2:b';
  r.expiresAt = clock.now() + 1000;

  a.elector.fence();
  assert.equal(a.elector.state, 'follower');
  assert.equal(a.elector.leading, false);
  assert.deepEqual(a.ends, [{ epoch: 1, reason: 'fenced' }]);
  assert.equal(a.elector.status().fenced, 1);

  await clock.advance(2 * INTERVAL);
  assert.equal(a.elector.leading, true);
  assert.equal(a.elector.epoch, 3, 'a new token, never the fenced one');
});

test('Given a leader demoted on its deadline while Redis kept its token, When Redis answers again, Then it clears its own stale lock and leads in a new term', async () => {
  const { clock, r, a } = await started();
  a.lock.hang = true;
  await clock.advance(TTL - INTERVAL);
  assert.equal(a.elector.state, 'follower');
  a.lock.hang = false;
  assert.equal(r.current(), '1:a', 'the lock still holds the old term');

  await clock.advance(INTERVAL);
  assert.equal(a.elector.leading, true);
  assert.equal(a.elector.token, '2:a');
});

test('Given a loading instance, When loading fails, Then the lock is released and it is a follower', async () => {
  const { r, a } = await started({ load: () => Promise.reject(new Error('HSCAN failed')) });
  assert.equal(a.elector.state, 'follower');
  assert.deepEqual(a.ends, [{ epoch: 1, reason: 'load-failed' }]);
  assert.deepEqual(r.released, ['1:a']);
});

test('Given a slow load longer than the TTL, When renewals succeed meanwhile, Then the term survives and leads when loaded', async () => {
  const clock = new FakeTimers();
  const r = new FakeRedis(clock);
  let finishLoad!: () => void;
  const a = instance(r, 'a', { load: () => new Promise<void>((resolve) => (finishLoad = resolve)) });
  a.elector.start();
  await clock.advance(3 * TTL);
  assert.equal(a.elector.state, 'loading');
  assert.equal(r.current(), '1:a');
  finishLoad();
  await clock.advance(0);
  assert.equal(a.elector.leading, true);
});

test('Given a leader that dies (no answers, no release), When the follower keeps trying, Then it leads within ttl + interval of the last renewal, never before the lock expired', async () => {
  const { clock, a, b } = await leaderAndFollower();
  await clock.advance(INTERVAL); // a renews at 3000
  const lastRenewal = clock.now();
  a.lock.hang = true; // kill -9: nothing more reaches Redis from a

  let tookOverAt: number | undefined;
  while (clock.now() < lastRenewal + TTL + INTERVAL + 1 && tookOverAt === undefined) {
    await clock.advance(100);
    if (b.elector.leading) tookOverAt = clock.now();
  }
  assert.ok(tookOverAt !== undefined, 'b took over');
  assert.ok(tookOverAt >= lastRenewal + TTL, `not before the lock expired (${tookOverAt})`);
  assert.ok(tookOverAt <= lastRenewal + TTL + INTERVAL, `within ttl + interval (${tookOverAt})`);
  assert.equal(b.elector.epoch, 2);
});

test('Given a leader that steps down, When the release is announced, Then the follower takes over at once and the old leader does not take it back', async () => {
  const { clock, a, b } = await leaderAndFollower();
  await clock.advance(INTERVAL / 2);
  assert.equal(a.elector.leading, true);

  assert.equal(await a.elector.stepDown(), true);
  await clock.advance(0);
  assert.equal(b.elector.leading, true, 'b leads without waiting for its interval');
  assert.deepEqual(a.ends, [{ epoch: 1, reason: 'step-down' }]);

  // b steps down too: a's sit-out ended when it saw b lead, so a takes over at once.
  assert.equal(await b.elector.stepDown(), true);
  await clock.advance(0);
  assert.equal(a.elector.leading, true);
  assert.equal(a.elector.epoch, 3);
});

test('Given a lone leader that steps down, When nobody else takes the lock, Then it sits out one TTL before leading again', async () => {
  const { clock, r, a } = await started();
  await a.elector.stepDown();
  const at = clock.now();

  await clock.advance(TTL - 1);
  assert.equal(a.elector.state, 'follower', 'sitting out');
  assert.equal(r.epoch, 1);
  assert.ok(a.elector.status().sittingOutUntil !== undefined);
  await clock.advance(INTERVAL + 1);
  assert.equal(a.elector.leading, true);
  assert.ok(clock.now() - at <= TTL + INTERVAL);
});

test('Given a loading term that gives up for want of its leases, When it steps down with reason leases, Then the end says so, the lock is released and it sits out like a step down', async () => {
  const clock = new FakeTimers();
  const r = new FakeRedis(clock);
  let stepDown: Promise<boolean> | undefined;
  const a = instance(r, 'a', {
    load: () => {
      stepDown = a.elector.stepDown('leases');
      return Promise.reject(new Error('leases not free'));
    },
  });
  a.elector.start();
  await clock.advance(0);
  assert.equal(await stepDown, true);
  assert.deepEqual(a.ends, [{ epoch: 1, reason: 'leases' }]);
  assert.equal(a.elector.status().lastEnd?.reason, 'leases');
  assert.deepEqual(r.released, ['1:a']);
  await clock.advance(TTL - 1);
  assert.equal(a.elector.state, 'follower', 'sitting out');
  assert.equal(r.epoch, 1, 'no new term was tried');
});

test('Given a leader, When it stops, Then the lock is released and no call is made afterwards', async () => {
  const { clock, r, a } = await started();
  await a.elector.stop();
  assert.equal(a.elector.state, 'stopped');
  assert.equal(r.current(), undefined);
  assert.deepEqual(a.ends, [{ epoch: 1, reason: 'stop' }]);
  const calls = a.lock.calls;
  await clock.advance(5 * TTL);
  assert.equal(a.lock.calls, calls);
});

test('Given a follower and Redis down, When Redis comes back, Then it takes the lock at its next interval', async () => {
  const clock = new FakeTimers();
  const r = new FakeRedis(clock);
  r.down = true;
  const a = instance(r, 'a');
  a.elector.start();
  await clock.advance(5 * INTERVAL);
  assert.equal(a.elector.state, 'follower');
  r.down = false;
  await clock.advance(INTERVAL);
  assert.equal(a.elector.leading, true);
});
