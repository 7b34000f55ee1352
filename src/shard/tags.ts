/**
 * The Redis hash tags of layout v2: one per shard, holding all of its queues' keys and its lease,
 * and one for what is global. A Redis Cluster script may touch the keys of one slot only, so every
 * script of a shard stays inside its tag and runs unchanged on a Cluster node.
 *
 * Shard `s`'s tag is `ssq:sNNN:<suffix>` (NNN its number, so that keys name their shard in
 * redis-cli) and falls on slot `64 s + 32` (slot.ts: CRC16 of the tag mod 16384): 256 distinct
 * slots, one in the middle of each 64-slot stretch, so that masters owning equal ranges of slots
 * hold equal numbers of shards (3 masters: 85, 86, 85). The suffix is the first string over
 * [0-9a-zA-Z], shortest first and in that order, that gives the slot; test/unit/shard-tags.test.ts
 * runs the search again and finds this table. Frozen like the shard hash (hash.ts): a stored
 * key's tag can never change.
 */
import { SHARD_COUNT } from './hash.js';

const SUFFIXES = [
  '0Gt Tz 6XX 0Cc LF 0KM 0OZ DR 5pH 1K1 0fb 69Q 5j9 0Aa 65h 1zz', // 0-15
  '0K8 44I 71T 31 0AP YF QR 0EG CZ 0OI 8BF KN 4fM 3mW 14o aQo', // 16-31
  '02Y 6mj 1MJ 5v3 5Q0 0zh Ip 40g dQM 44M 40Z 2oi 48t 2gG 1S3 4xk', // 32-47
  '4ha 1C9 0nj 5E2 5b1 0Ii 6yh 0bS d1 7Lj 4Iw 2RL 2mZ 42i 4rv 2iM', // 48-63
  '0a7 4ZN 5Nx 2Eb 07B 4H3 41I zf SF 4Pb 34J 5ky 5Lz Kz 9Ke 6Ig', // 64-79
  '5KH 149 2DE Si 2Lk CA KU d6G 1lU 6gO cPm 2aD 2FG 696 39T 42N', // 80-95
  '3kK 54x 61e KK 7kM 1pv TE 7oZ FM 4U7 65j NY 3LP 4GJ 4z8 0AA', // 96-111
  '3PA 5Kz 2kZ 44i 2k 182 0Ye 565 7oI SM 7 aQm Kq 5C2 63N Ce', // 112-127
  'byO 2XG 0Ew 7Nm 6yO 0bt 4r7 0IN 0lm 5G5 4u 1I2 50I 1O8 92 5pV', // 128-143
  'kr 4n9 6Jl cf 33V 48L 4A6 0zO 1OM 5t4 0tV 6om 6Hn 0SU 2Fi Vm', // 144-159
  '2Hk 4SP 4WG d2G 5OH 109 3Pd baM 4O4 1b dSN Ri yi d0E JU 2eD', // 160-175
  '0de g5 nD 25Q 5Z 5No 4ZY yF 4PW kN cZ 5Da 6bh 0yS 2dc 5oy', // 176-191
  '0C4 4xM 2HL 4Sw 4tt 2oO 0zs 4n 4rU 2in L8 42J 1U4 5nM 5jZ 35i', // 192-207
  '25B 4jq 63I 0lz 0Ky 6PB 14j 7kY 5n8 1UA djo go 40y 2oJ dQn 44n', // 208-223
  'b7g d9 0v2 4MK 7kB FH 3mI aK Hk 2XK 4hJ 0S3 008 PW 4z7 0AN', // 224-239
  'cPO 2af 0E3 5nk 39v 42l 4rs 2iH bx 4f9 5Kj 3PQ 0G1 5li 2LI 4Wr', // 240-255
]
  .join(' ')
  .split(' ');

export const SHARD_TAGS: readonly string[] = SUFFIXES.map(
  (suffix, s) => `ssq:s${String(s).padStart(3, '0')}:${suffix}`,
);

/** Tenants, the catalogs of queue names, the layout version, the coordinator: slot 1587, no shard's. */
export const META_TAG = 'ssq:meta';

/** The key prefix of shard `s`'s keys, e.g. `{ssq:s017:44I}:`. */
export function shardPrefix(shard: number): string {
  const tag = SHARD_TAGS[shard];
  if (tag === undefined) {
    throw new RangeError(`no shard ${shard}: shards are 0..${SHARD_COUNT - 1}`);
  }
  return `{${tag}}:`;
}

export const META_PREFIX = `{${META_TAG}}:`;
