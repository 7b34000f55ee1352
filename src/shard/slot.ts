/**
 * Redis Cluster's key → slot function, from the cluster specification (redis.io, "Redis cluster
 * specification", "Keys distribution model"): `CRC16(key) mod 16384`, where only the hash tag is
 * hashed when the key has one (the part between the first `{` and the next `}`, if not empty).
 * CRC16 is the XMODEM variant: polynomial 0x1021, initial value 0, no reflection, no final XOR;
 * its published check value, CRC16("123456789") = 0x31C3, is a test vector in
 * test/unit/shard-tags.test.ts, and test/integration/redis-cluster.test.ts compares with a real
 * node's CLUSTER KEYSLOT.
 */

export const SLOT_COUNT = 16_384;

const TABLE = new Uint16Array(256);
for (let byte = 0; byte < 256; byte++) {
  let crc = byte << 8;
  for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
  TABLE[byte] = crc & 0xffff;
}

/** CRC16/XMODEM of the bytes. */
export function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ (TABLE[(crc >> 8) ^ byte] ?? 0);
  return crc;
}

/** The slot of a key (its UTF-8 bytes), as a Redis Cluster node computes it. */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  return crc16(Buffer.from(key, 'utf8')) % SLOT_COUNT;
}
