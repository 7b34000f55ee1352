/**
 * The coordinator (src/owners/coordinator.ts) on a fake clock, with an in-memory lock and shard
 * map that share one fake Redis: the map's write is refused unless the lock holds the writer's
 * token, as assign-2.lua does (test/integration/owners-membership.test.ts runs the real script).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AcquireResult, LockBackend } from '../../src/ha/lock.js';
import { changesFor, Coordinator, type ReconcileOutcome } from '../../src/owners/coordinator.js';
import type { AssignResult, MapState, OwnersStore } from '../../src/owners/shard-map.js';
import { SHARD_COUNT } from '../../src/shard/hash.js';
import { placement } from '../../src/shard/placement.js';
import { FakeTimers } from '../support/fake-timers.js';

const TTL = 9_000;
const INTERVAL = 3_000;
const IDS = ['host-a-101', 'host-b-202', 'host-c-303'];

/** The lock, the map, the pins and the live members, as one Redis holds them. */
class FakeRedis {
  lock: string | undefined;
  expiresAt = 0;
  epoch = 0;
  version = 0;
  owners: (string | undefined)[] = new Array<string | undefined>(SHARD_COUNT).fill(undefined);
  pins = new Map<number, string>();
  live: string[] = [...IDS];
  /** Reads fail (Redis unreachable) while set. */
  down = false;
  writes: { token: string; changes: Map<number, string> }[] = [];
  /** Runs once at the start of the next assign: another write landing between read and write. */
  beforeAssign: (() => void) | undefined;

  constructor(readonly clock: FakeTimers) {}

  holder(): string | undefined {
    if (this.lock !== undefined && this.clock.now() >= this.expiresAt) this.lock = undefined;
    return this.lock;
  }
}

class FakeLock implements LockBackend {
  released: ((token: string) => void)[] = [];
  /** Its calls never answer: the instance crashed or is cut off. */
  hang = false;
  constructor(private readonly r: FakeRedis) {}

  acquire(instanceId: string, ttlMs: number): Promise<AcquireResult> {
    if (this.hang) return new Promise(() => undefined);
    const holder = this.r.holder();
    if (holder !== undefined) {
      return Promise.resolve({ acquired: false, holder, pttlMs: this.r.expiresAt - this.r.clock.now() });
    }
    const epoch = ++this.r.epoch;
    this.r.lock = `${epoch}:${instanceId}`;
    this.r.expiresAt = this.r.clock.now() + ttlMs;
    return Promise.resolve({ acquired: true, token: this.r.lock, epoch });
  }
  renew(token: string, ttlMs: number): Promise<boolean> {
    if (this.hang) return new Promise(() => undefined);
    if (this.r.holder() !== token) return Promise.resolve(false);
    this.r.expiresAt = this.r.clock.now() + ttlMs;
    return Promise.resolve(true);
  }
  release(token: string): Promise<boolean> {
    if (this.hang) return new Promise(() => undefined);
    if (this.r.holder() !== token) return Promise.resolve(false);
    this.r.lock = undefined;
    for (const l of this.released) l(token);
    return Promise.resolve(true);
  }
  holder(): Promise<string | undefined> {
    return Promise.resolve(this.r.holder());
  }
}

class FakeStore implements OwnersStore {
  constructor(private readonly r: FakeRedis) {}
  read(): Promise<MapState> {
    if (this.r.down) return Promise.reject(new Error('connect ECONNREFUSED'));
    return Promise.resolve({ version: this.r.version, owners: [...this.r.owners] });
  }
  pins(): Promise<ReadonlyMap<number, string>> {
    return Promise.resolve(new Map(this.r.pins));
  }
  assign(
    token: string,
    expectedVersion: number,
    changes: ReadonlyMap<number, string>,
  ): Promise<AssignResult> {
    const before = this.r.beforeAssign;
    this.r.beforeAssign = undefined;
    before?.();
    if (this.r.holder() !== token)
      return Promise.resolve({ ok: false, reason: 'fenced', version: this.r.version });
    if (this.r.version !== expectedVersion) {
      return Promise.resolve({ ok: false, reason: 'version', version: this.r.version });
    }
    for (const [s, o] of changes) this.r.owners[s] = o;
    this.r.writes.push({ token, changes: new Map(changes) });
    return Promise.resolve({ ok: true, version: ++this.r.version });
  }
}

interface World {
  readonly clock: FakeTimers;
  readonly r: FakeRedis;
  readonly coordinators: Coordinator[];
  readonly locks: FakeLock[];
  readonly outcomes: Map<Coordinator, ReconcileOutcome[]>;
}

/** `n` candidates on one fake Redis, started; a release nudges the others, as pub/sub would. */
function world(n = 2): World {
  const clock = new FakeTimers();
  const r = new FakeRedis(clock);
  const coordinators: Coordinator[] = [];
  const locks: FakeLock[] = [];
  const outcomes = new Map<Coordinator, ReconcileOutcome[]>();
  for (let i = 0; i < n; i++) {
    const lock = new FakeLock(r);
    locks.push(lock);
    const c = new Coordinator({
      id: IDS[i] as string,
      lock,
      store: new FakeStore(r),
      live: () => (r.down ? Promise.reject(new Error('down')) : Promise.resolve([...r.live])),
      ttlMs: TTL,
      intervalMs: INTERVAL,
      timers: clock,
    });
    lock.released.push((token) => coordinators.filter((o) => o !== c).forEach((o) => o.released(token)));
    const seen: ReconcileOutcome[] = [];
    c.onReconcile((o) => seen.push(o));
    outcomes.set(c, seen);
    coordinators.push(c);
  }
  for (const c of coordinators) c.start();
  return { clock, r, coordinators, locks, outcomes };
}

function leader(w: World): Coordinator {
  const now = w.coordinators.filter((c) => c.coordinating);
  assert.equal(now.length, 1, `one coordinator, not ${now.length}`);
  return now[0] as Coordinator;
}

void test('Given a map and a target, when compared, then only the shards with a new owner are changes', () => {
  assert.deepEqual(
    [...changesFor(['a', 'b', undefined, 'c'], ['a', 'c', 'b', undefined])],
    [
      [1, 'c'],
      [2, 'b'],
    ],
  );
});

void test('Given two candidates, When started, Then one coordinates and writes the placement of the live members in one write', async () => {
  const w = world();
  await w.clock.advance(0);
  const c = leader(w);
  assert.deepEqual(w.r.owners, placement(IDS));
  assert.equal(w.r.version, 1);
  assert.equal(w.r.writes.length, 1);
  assert.equal(w.r.writes[0]?.token, w.r.lock);
  await w.clock.advance(5 * INTERVAL);
  assert.equal(w.r.version, 1, 'nothing to write while nothing changes');
  assert.equal(leader(w), c);
  assert.ok((w.outcomes.get(c) ?? []).slice(1).every((o) => o.kind === 'unchanged'));
  for (const o of w.coordinators.filter((x) => x !== c)) assert.deepEqual(w.outcomes.get(o), []);
});

void test('Given a converged map, When a member leaves and the coordinator is nudged, Then its shards move at once in one write, and only they', async () => {
  const w = world();
  await w.clock.advance(0);
  const before = [...w.r.owners];
  w.r.live = IDS.filter((id) => id !== 'host-b-202');
  leader(w).nudge();
  await w.clock.advance(0);
  assert.equal(w.r.version, 2);
  const moved = [...(w.r.writes[1]?.changes.keys() ?? [])];
  assert.deepEqual(
    moved,
    before.flatMap((o, s) => (o === 'host-b-202' ? [s] : [])),
  );
  assert.deepEqual(w.r.owners, placement(w.r.live));
});

void test('Given a converged map, When a member joins without a nudge, Then the next interval writes it', async () => {
  const w = world();
  await w.clock.advance(0);
  w.r.live = [...IDS, 'host-d-404'];
  await w.clock.advance(INTERVAL - 1);
  assert.equal(w.r.version, 1);
  await w.clock.advance(1);
  assert.equal(w.r.version, 2);
  assert.deepEqual(w.r.owners, placement(w.r.live));
});

void test('Given no live member, When reconciled, Then nothing is written and the map keeps its owners', async () => {
  const w = world();
  await w.clock.advance(0);
  const before = [...w.r.owners];
  w.r.live = [];
  await w.clock.advance(INTERVAL);
  assert.equal(w.outcomes.get(leader(w))?.at(-1)?.kind, 'no-members');
  assert.deepEqual(w.r.owners, before);
  assert.equal(w.r.version, 1);
});

void test('Given a coordinator whose lock another token took, When it writes, Then the write is refused, the map is unchanged and its term ends', async () => {
  const w = world(1);
  await w.clock.advance(0);
  const c = leader(w);
  w.r.lock = '99:host-z-999';
  w.r.live = ['host-a-101'];
  c.nudge();
  await w.clock.advance(0);
  assert.equal(w.outcomes.get(c)?.at(-1)?.kind, 'fenced');
  assert.equal(c.coordinating, false);
  assert.deepEqual(w.r.owners, placement(IDS));
  assert.equal(w.r.version, 1);
});

void test('Given a map written meanwhile by someone else, When the coordinator writes, Then it is refused for the version, read again and written on the new one', async () => {
  const w = world(1);
  await w.clock.advance(0);
  const c = leader(w);
  w.r.live = ['host-a-101', 'host-c-303'];
  w.r.beforeAssign = () => {
    w.r.owners[0] = 'host-z-999';
    w.r.version++;
  };
  c.nudge();
  await w.clock.advance(0);
  const kinds = (w.outcomes.get(c) ?? []).map((o) => o.kind);
  assert.deepEqual(kinds.slice(-2), ['version', 'written']);
  assert.equal(w.r.version, 3);
  assert.deepEqual(w.r.owners, placement(w.r.live));
});

void test('Given a coordinator, When it stops, Then another takes over at once and writes nothing until the members change', async () => {
  const w = world();
  await w.clock.advance(0);
  const old = leader(w);
  const other = w.coordinators.find((c) => c !== old) as Coordinator;
  await old.stop();
  await w.clock.advance(0);
  assert.equal(other.coordinating, true, 'the release nudged it');
  await w.clock.advance(3 * INTERVAL);
  assert.ok((w.outcomes.get(other) ?? []).length >= 3);
  assert.ok((w.outcomes.get(other) ?? []).every((o) => o.kind === 'unchanged'));
  assert.equal(w.r.version, 1);
  w.r.live = ['host-b-202'];
  other.nudge();
  await w.clock.advance(0);
  assert.equal(w.r.version, 2);
  assert.ok(w.r.owners.every((o) => o === 'host-b-202'));
});

void test('Given a coordinator that crashed holding the lock, When its TTL passes, Then another takes over, and not before', async () => {
  const w = world();
  await w.clock.advance(0);
  const old = leader(w);
  const other = w.coordinators.find((c) => c !== old) as Coordinator;
  // A crash: from now on its calls never answer, so nothing is renewed or released.
  (w.locks[w.coordinators.indexOf(old)] as FakeLock).hang = true;
  await w.clock.advance(TTL - 1);
  assert.equal(other.coordinating, false);
  await w.clock.advance(INTERVAL);
  assert.equal(other.coordinating, true);
  assert.equal(w.r.version, 1, 'and the map is as it was');
});

void test('Given a pin to a live member, When reconciled, Then the shard is its; When that member is gone, Then the shard falls back to placement', async () => {
  const w = world(1);
  await w.clock.advance(0);
  const c = leader(w);
  const shard = w.r.owners.findIndex((o) => o !== 'host-c-303');
  w.r.pins.set(shard, 'host-c-303');
  c.nudge();
  await w.clock.advance(0);
  assert.equal(w.r.owners[shard], 'host-c-303');
  assert.equal(w.r.writes.at(-1)?.changes.size, 1, 'only the pinned shard moved');
  w.r.live = ['host-a-101', 'host-b-202'];
  c.nudge();
  await w.clock.advance(0);
  assert.deepEqual(w.r.owners, placement(w.r.live));
});

void test('Given Redis unreachable, When reconciled, Then the outcome is failed and the map untouched; When it is back, Then the next interval writes', async () => {
  const w = world(1);
  await w.clock.advance(0);
  const c = leader(w);
  w.r.down = true;
  w.r.live = ['host-a-101'];
  await w.clock.advance(INTERVAL);
  assert.equal(w.outcomes.get(c)?.at(-1)?.kind, 'failed');
  assert.equal(w.r.version, 1);
  w.r.down = false;
  await w.clock.advance(INTERVAL);
  assert.equal(w.r.version, 2);
  assert.ok(w.r.owners.every((o) => o === 'host-a-101'));
});
