/**
 * The shard of a queue (src/shard/hash.ts, docs/decisions/011-queue-shard-hash.md) is frozen
 * forever: these vectors were computed outside this code base (Python's hashlib over the netstring
 * encoding) and any implementation must reproduce them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { queueHash, SHARD_COUNT, shardOf } from '../../src/shard/hash.js';

type Vector = [accountId: string, region: string, queueName: string, h: string, shard: number];

const VECTORS: Vector[] = [
  ['123456789012', 'us-east-1', 'orders', '441991e217613009', 9],
  ['123456789012', 'us-east-1', 'orders.fifo', '4de97ef37c7e955f', 95],
  ['123456789012', 'eu-west-1', 'orders', '1a47190b458b00ad', 173],
  ['210987654321', 'us-east-1', 'orders', '2ba0b2948b55bad7', 215],
  ['123456789012', 'ap-northeast-1', 'x'.repeat(80), '3ae54391b39a0bc5', 197],
  ['', '', '', 'b510a8d147d31d74', 116],
  // Non-ASCII: hashed as UTF-8, with no normalization (é composed and decomposed are two names).
  ['123456789012', 'us-east-1', 'caf\u00e9', '736e257bf70fb3d3', 211],
  ['123456789012', 'us-east-1', 'cafe\u0301', 'c6b10c456c54db38', 56],
  ['123456789012', 'us-east-1', '队列', '6bd27ae21eedfa16', 22],
  ['123456789012', 'us-east-1', '🦆', '614965a5e8523a34', 52],
];

// Groups of triples whose strings, run together with or without a separator, read the same.
const SEPARATOR_GROUPS: Vector[][] = [
  [
    ['12', '34', '5', '3738dfb10123f434', 52],
    ['1', '234', '5', '06935b57241c3002', 2],
    ['123', '4', '5', 'dc1c4a1712be9f4c', 76],
    ['12345', '', '', 'b30ce6b815fa44c3', 195],
  ],
  [
    ['a:b', 'c', 'd', '9686ed8ac20c1c75', 117],
    ['a', 'b:c', 'd', '39987158733ee4c5', 197],
  ],
  [
    ['a\0b', 'c', 'd', 'dfcc061cc68fa712', 18],
    ['a', 'b\0c', 'd', '73fa324788208e98', 152],
  ],
  // A name that spells a netstring itself.
  [
    ['1:a,', '', '', 'a9a018998d50b6a1', 161],
    ['', '1:a,', '', 'bcbc3cb651975ec2', 194],
  ],
];

const hex = (h: bigint): string => h.toString(16).padStart(16, '0');

function assertVector([accountId, region, name, h, shard]: Vector): void {
  const what = JSON.stringify([accountId, region, name]);
  assert.equal(hex(queueHash(accountId, region, name)), h, what);
  assert.equal(shardOf(accountId, region, name), shard, what);
  assert.equal(shard, Number(BigInt(`0x${h}`) % BigInt(SHARD_COUNT)), `${what}: shard = H mod 256`);
}

void test('Given the frozen vectors, when H and the shard are computed, then they are the recorded values', () => {
  for (const vector of VECTORS) assertVector(vector);
});

void test('Given triples that differ only in where a separator would fall, then each has its own recorded H', () => {
  for (const group of SEPARATOR_GROUPS) {
    for (const vector of group) assertVector(vector);
    assert.equal(new Set(group.map((v) => v[3])).size, group.length);
  }
});

void test('Given a string with a lone surrogate, when its shard is asked, then it is refused rather than hashed as U+FFFD', () => {
  assert.throws(() => shardOf('123456789012', 'us-east-1', 'a\ud800'), TypeError);
  assert.throws(() => queueHash('123456789012', '\udc00', 'a'), TypeError);
});

void test('Given 51,200 queue names of one account, then every shard holds between 150 and 250 of them', () => {
  const counts = new Array<number>(SHARD_COUNT).fill(0);
  for (let i = 0; i < 200 * SHARD_COUNT; i++) {
    const shard = shardOf('123456789012', 'us-east-1', `queue-${i}`);
    counts[shard] = (counts[shard] ?? 0) + 1;
  }
  // 200 expected per shard, standard deviation ~14: the bounds are beyond 3.5 of them.
  assert.ok(
    Math.min(...counts) >= 150 && Math.max(...counts) <= 250,
    `${Math.min(...counts)}..${Math.max(...counts)}`,
  );
});
