/**
 * The 256 shard tags and the meta tag of layout v2 (src/shard/tags.ts) on Redis Cluster's slots
 * (src/shard/slot.ts): CRC16 against its published check value and the specification's hash-tag
 * examples, one distinct slot per shard spread evenly, and the frozen table found again by its search.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SHARD_COUNT } from '../../src/shard/hash.js';
import { crc16, keySlot, SLOT_COUNT } from '../../src/shard/slot.js';
import { META_PREFIX, META_TAG, SHARD_TAGS, shardPrefix } from '../../src/shard/tags.js';

void test('Given "123456789", then CRC16 is the XMODEM check value 0x31C3 that the Cluster spec gives', () => {
  assert.equal(crc16(Buffer.from('123456789')), 0x31c3);
  assert.equal(crc16(new Uint8Array(0)), 0);
});

void test('Given the hash-tag examples of the Cluster spec, then keySlot hashes the same part of the key', () => {
  assert.equal(keySlot('{user1000}.following'), keySlot('user1000'));
  assert.equal(keySlot('{user1000}.followers'), keySlot('user1000'));
  assert.equal(keySlot('foo{}{bar}'), crc16(Buffer.from('foo{}{bar}')) % SLOT_COUNT);
  assert.equal(keySlot('foo{{bar}}zap'), keySlot('{bar'));
  assert.equal(keySlot('foo{bar}{zap}'), keySlot('bar'));
  assert.notEqual(keySlot('{user1000}'), keySlot('{user1001}'));
});

void test('Given shard s, then its tag names it and falls on slot 64 s + 32, one distinct slot per shard', () => {
  assert.equal(SHARD_TAGS.length, SHARD_COUNT);
  SHARD_TAGS.forEach((tag, s) => {
    assert.match(tag, /^ssq:s\d{3}:[0-9a-zA-Z]+$/);
    assert.equal(Number(tag.slice(5, 8)), s);
    assert.equal(keySlot(tag), 64 * s + 32, tag);
    assert.equal(keySlot(`${shardPrefix(s)}m:some-queue-uid`), 64 * s + 32);
  });
  assert.equal(new Set(SHARD_TAGS.map(keySlot)).size, SHARD_COUNT);
  assert.equal(shardPrefix(17), '{ssq:s017:44I}:');
  assert.throws(() => shardPrefix(SHARD_COUNT), RangeError);
  assert.throws(() => shardPrefix(-1), RangeError);
});

void test('Given the meta tag, then its keys fall on a slot of no shard', () => {
  const slot = keySlot(`${META_PREFIX}layout`);
  assert.equal(slot, keySlot(META_TAG));
  assert.ok(!SHARD_TAGS.some((tag) => keySlot(tag) === slot), `slot ${slot}`);
});

void test('Given 3 to 16 masters with the slot ranges redis-cli gives them, then each holds 256/n shards, rounded down or up', () => {
  for (let masters = 3; masters <= 16; masters++) {
    // redis-cli --cluster create (clusterManagerCommandCreate): the ranges end at lround(cursor + per - 1).
    const per = SLOT_COUNT / masters;
    const counts: number[] = [];
    let first = 0;
    for (let i = 0; i < masters; i++) {
      const last = i === masters - 1 ? SLOT_COUNT - 1 : Math.round(i * per + per - 1);
      counts.push(SHARD_TAGS.filter((tag) => keySlot(tag) >= first && keySlot(tag) <= last).length);
      first = last + 1;
    }
    for (const count of counts) {
      assert.ok(
        count === Math.floor(SHARD_COUNT / masters) || count === Math.ceil(SHARD_COUNT / masters),
        `${masters} masters: ${counts.join(', ')}`,
      );
    }
    if (masters === 3) assert.deepEqual(counts, [85, 86, 85]);
  }
});

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** Suffixes over ALPHABET, shortest first, in ALPHABET's order. */
function* suffixes(): Generator<string> {
  for (let length = 1; ; length++) {
    const digits = new Array<number>(length).fill(0);
    for (;;) {
      yield digits.map((d) => ALPHABET[d]).join('');
      let at = length - 1;
      while (at >= 0 && ++digits[at]! === ALPHABET.length) digits[at--] = 0;
      if (at < 0) break;
    }
  }
}

void test('Given the search the table was made by, when it is run again, then it finds the frozen table', () => {
  const found: string[] = [];
  for (let s = 0; s < SHARD_COUNT; s++) {
    const base = `ssq:s${String(s).padStart(3, '0')}:`;
    for (const suffix of suffixes()) {
      if (keySlot(base + suffix) === 64 * s + 32) {
        found.push(base + suffix);
        break;
      }
    }
  }
  assert.deepEqual(found, SHARD_TAGS);
});
