/**
 * Rendezvous placement of shards on members (src/shard/placement.ts). The weight is frozen: these
 * vectors were computed outside this code base (Python's hashlib: the first 16 hex digits of
 * sha256(f"{member}\0{shard}".encode())) and any implementation must reproduce them. The balance
 * and movement properties are checked over seeded random member sets, the same on every run.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SHARD_COUNT } from '../../src/shard/hash.js';
import { ownerOf, placement, weight } from '../../src/shard/placement.js';
import { Rng } from '../support/rng.js';

const VECTORS: [member: string, shard: number, w: string][] = [
  ['host-a-101', 0, '0b07ed5175156a1d'],
  ['host-a-101', 255, '268cd4c711bc540b'],
  ['host-b-202', 0, 'e2cafbcf46efc949'],
  ['host-b-202', 17, '3f1f57fc3fb9cefd'],
  ['ip-10-0-0-7-4242', 128, '7768c20523c41986'],
  ['', 0, 'db3426e878068d28'],
  ['节点-1', 3, '1b63754e79caadf5'],
  ['🦆', 42, '34c67b473a39b59e'],
  ['a', 12, '01f6b32a1643036a'],
  // A NUL inside the id: the shard's digits never hold one, so the last NUL is the boundary.
  ['a\u00001', 2, '8f0553e027e13e38'],
];

const THREE = ['host-a-101', 'host-b-202', 'host-c-303'];

void test('Given the frozen vectors, when weights are computed, then they are the recorded values', () => {
  for (const [member, shard, w] of VECTORS) {
    assert.equal(weight(member, shard).toString(16).padStart(16, '0'), w, JSON.stringify([member, shard]));
  }
});

void test('Given three named members, when placed, then the owners and counts are the ones computed outside', () => {
  const owners = placement(THREE);
  assert.equal(owners.length, SHARD_COUNT);
  assert.deepEqual(
    [0, 1, 2, 3, 100, 255].map((s) => owners[s]),
    ['host-b-202', 'host-a-101', 'host-a-101', 'host-c-303', 'host-a-101', 'host-c-303'],
  );
  const counts = Object.fromEntries(THREE.map((m) => [m, owners.filter((o) => o === m).length]));
  assert.deepEqual(counts, { 'host-a-101': 90, 'host-b-202': 95, 'host-c-303': 71 });
  for (let s = 0; s < SHARD_COUNT; s++) {
    const best = [...THREE].sort((a, b) => (weight(b, s) > weight(a, s) ? 1 : -1))[0];
    assert.equal(owners[s], best, `shard ${s} goes to the member of the highest weight`);
    assert.equal(ownerOf(s, THREE), best);
  }
});

void test('Given no members, when placed, then no shard has an owner', () => {
  assert.equal(ownerOf(5, []), undefined);
  assert.deepEqual(placement([], 4), [undefined, undefined, undefined, undefined]);
});

/** `n` distinct ids like the server's hostname-pid. */
function members(rng: Rng, n: number): string[] {
  const out = new Set<string>();
  while (out.size < n) out.add(`ip-10-0-${rng.int(0, 255)}-${rng.int(0, 255)}-${rng.int(2, 4_194_304)}`);
  return [...out];
}

function count(owners: readonly (string | undefined)[], m: string): number {
  return owners.filter((o) => o === m).length;
}

// With 3 members a member's count is Binomial(256, 1/3): mean 85.3, standard deviation 7.5.
// ± 32 is over 4 standard deviations: 1 member in about 20,000 would fall outside by chance.
const BOUND_3 = 32;

void test('Given 200 random sets of 3 members, when placed, then each member gets 256/3 ± 32 shards', () => {
  const rng = new Rng(1);
  let worst = 0;
  for (let i = 0; i < 200; i++) {
    const ms = members(rng, 3);
    const owners = placement(ms);
    assert.ok(
      owners.every((o) => o !== undefined && ms.includes(o)),
      'every shard has a live owner',
    );
    for (const m of ms) {
      const dev = Math.abs(count(owners, m) - SHARD_COUNT / 3);
      worst = Math.max(worst, dev);
      assert.ok(dev <= BOUND_3, `${m} of ${ms.join(',')}: ${count(owners, m)} shards`);
    }
  }
  // Rendezvous is not a round robin: some member of 600 strays well off the mean.
  assert.ok(worst > 10, `the largest deviation was only ${worst}`);
});

void test('Given random sets of members, when the order of the list changes, then the placement does not', () => {
  const rng = new Rng(2);
  for (let i = 0; i < 50; i++) {
    const ms = members(rng, rng.int(2, 7));
    const shuffled = [...ms].sort(() => rng.next() - 0.5).reverse();
    assert.deepEqual(placement(shuffled), placement(ms));
    assert.deepEqual(placement([...ms, ...ms]), placement(ms), 'a repeated id counts once');
  }
});

void test('Given random sets of members, when one leaves, then only its shards move, each to a remaining member', () => {
  const rng = new Rng(3);
  for (let i = 0; i < 50; i++) {
    const ms = members(rng, rng.int(3, 8));
    const gone = rng.pick(ms);
    const before = placement(ms);
    const after = placement(ms.filter((m) => m !== gone));
    for (let s = 0; s < SHARD_COUNT; s++) {
      if (before[s] === gone) assert.notEqual(after[s], gone, `shard ${s} left ${gone}`);
      else assert.equal(after[s], before[s], `shard ${s} of ${before[s]} stays`);
    }
    assert.ok(after.every((o) => o !== undefined));
  }
});

void test('Given random sets of members, when one joins, then shards move only to it, about 1/N of them', () => {
  const rng = new Rng(4);
  for (let i = 0; i < 50; i++) {
    const ms = members(rng, rng.int(2, 8));
    const [added] = members(rng, 1).filter((m) => !ms.includes(m));
    if (added === undefined) continue;
    const before = placement(ms);
    const after = placement([...ms, added]);
    let moved = 0;
    for (let s = 0; s < SHARD_COUNT; s++) {
      if (after[s] !== before[s]) {
        moved++;
        assert.equal(after[s], added, `shard ${s} moved to the new member only`);
      }
    }
    // Binomial(256, 1/N): within 4.5 standard deviations of 256/N.
    const n = ms.length + 1;
    const mean = SHARD_COUNT / n;
    const sd = Math.sqrt((SHARD_COUNT * (n - 1)) / n / n);
    assert.ok(Math.abs(moved - mean) <= 4.5 * sd, `${moved} shards moved to the ${n}th member`);
  }
});

void test('Given a pin, when its owner is live, then the shard is its; when not, then the shard falls back to placement', () => {
  const plain = placement(THREE);
  const shard = plain.findIndex((o) => o !== 'host-c-303');
  const pins = new Map([[shard, 'host-c-303']]);
  const pinned = placement(THREE, SHARD_COUNT, pins);
  assert.equal(pinned[shard], 'host-c-303');
  assert.deepEqual(
    pinned.map((o, s) => (s === shard ? plain[s] : o)),
    plain,
    'the other shards are where they were',
  );
  const without = ['host-a-101', 'host-b-202'];
  assert.deepEqual(placement(without, SHARD_COUNT, pins), placement(without));
});

void test('Given an id with a lone surrogate or a bad shard, when weighed, then it is refused', () => {
  assert.throws(() => weight('a\ud800', 1), TypeError);
  assert.throws(() => ownerOf(1, ['ok', '\udc00']), TypeError);
  assert.throws(() => weight('a', -1), RangeError);
  assert.throws(() => weight('a', 1.5), RangeError);
});
