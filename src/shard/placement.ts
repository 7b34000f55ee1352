/**
 * Which instance owns which shard: rendezvous hashing (highest random weight). Each member gets a
 * weight per shard, and a shard goes to the member of the highest weight. So every instance that
 * knows the same live members computes the same placement without talking to the others, and a
 * member that joins or leaves moves only the shards it wins or held: about 1/N of them.
 *
 * The weight W(member, shard) is the first 8 bytes, read as a big-endian unsigned 64-bit integer,
 * of the SHA-256 of the UTF-8 of `<member>\0<shard>`, the shard in decimal ASCII without leading
 * zeros. The shard's digits never hold a NUL, so the last NUL says where the member ends and two
 * different pairs never give one input. Equal weights (never seen in 64 bits, but defined) go to the
 * member whose id sorts first by UTF-16 code units.
 *
 * Frozen like the shard hash (hash.ts): instances of two versions must agree on the placement
 * during a rolling upgrade. test/unit/shard-placement.test.ts holds vectors computed outside this
 * code base that every implementation must reproduce.
 */
import { hash } from 'node:crypto';
import { SHARD_COUNT } from './hash.js';

// In a `u` regex a well-formed surrogate pair is one code point, so this finds lone halves only.
const LONE_SURROGATE = /\p{Surrogate}/u;

/** The first 16 hex digits of the digest: compared as strings, they order as the weights do. */
function weightHex(member: string, shard: number): string {
  return hash('sha256', `${member}\0${shard}`, 'hex').slice(0, 16);
}

/** W(member, shard), the value the test vectors freeze. */
export function weight(member: string, shard: number): bigint {
  checkShard(shard);
  checkMember(member);
  return BigInt(`0x${weightHex(member, shard)}`);
}

function checkShard(shard: number): void {
  if (!Number.isSafeInteger(shard) || shard < 0) throw new RangeError(`not a shard number: ${shard}`);
}

function checkMember(member: string): void {
  // A lone surrogate has no UTF-8 form and would be hashed as U+FFFD: two ids would weigh alike.
  if (LONE_SURROGATE.test(member)) {
    throw new TypeError(`not a well-formed Unicode string: ${JSON.stringify(member)}`);
  }
}

/** The member of the highest weight for `shard`; undefined when there is none. Order does not matter. */
export function ownerOf(shard: number, members: readonly string[]): string | undefined {
  checkShard(shard);
  let best: string | undefined;
  let bestWeight = '';
  for (const m of members) {
    checkMember(m);
    const w = weightHex(m, shard);
    if (best === undefined || w > bestWeight || (w === bestWeight && m < best)) {
      best = m;
      bestWeight = w;
    }
  }
  return best;
}

/**
 * The owner of every shard 0..shards-1 (undefined for all when there are no members). A pin names
 * the owner of its shard while that owner is one of `members`; a pin to a member that is not live
 * is ignored, so the shard falls back to its rendezvous owner instead of having none.
 */
export function placement(
  members: readonly string[],
  shards: number = SHARD_COUNT,
  pins: ReadonlyMap<number, string> = new Map(),
): (string | undefined)[] {
  const unique = [...new Set(members)];
  const live = new Set(unique);
  const out: (string | undefined)[] = [];
  for (let s = 0; s < shards; s++) {
    const pinned = pins.get(s);
    out.push(pinned !== undefined && live.has(pinned) ? pinned : ownerOf(s, unique));
  }
  return out;
}
