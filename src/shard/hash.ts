/**
 * The shard of a queue: `shard = H(accountId, region, queueName) mod 256`, frozen forever.
 *
 * H is the first 8 bytes, read as a big-endian unsigned 64-bit integer, of the SHA-256 of the three
 * strings as netstrings, in that order: each is `<length>:<bytes>,` with `bytes` its UTF-8 and
 * `length` their number in decimal ASCII. The length says where each string ends, so a `:`, `,` or
 * NUL inside a name can never move a boundary: two different triples never give one input. Why
 * SHA-256 and netstrings, and the cost per call: docs/decisions/011-queue-shard-hash.md.
 *
 * Every queue's data lives under its shard's Redis hash tag (tags.ts): another H, encoding or count
 * would strand every stored queue. test/unit/shard-hash.test.ts holds the vectors that any
 * implementation, in this code base or another language, must reproduce.
 */
import { hash } from 'node:crypto';

/** The number of shards; to be recorded in Redis with the layout, never changed by a restart. */
export const SHARD_COUNT = 256;

// In a `u` regex a well-formed surrogate pair is one code point, so this finds lone halves only.
const LONE_SURROGATE = /\p{Surrogate}/u;

function netstring(s: string): string {
  // A lone surrogate has no UTF-8 form (it would be hashed as U+FFFD, like a real U+FFFD):
  // refused, so that two different strings never hash alike. SQS names are ASCII anyway.
  if (LONE_SURROGATE.test(s)) throw new TypeError(`not a well-formed Unicode string: ${JSON.stringify(s)}`);
  return `${Buffer.byteLength(s, 'utf8')}:${s},`;
}

/** The hex of the SHA-256 of the encoded triple (a string is hashed as its UTF-8). */
function digestHex(accountId: string, region: string, queueName: string): string {
  return hash('sha256', netstring(accountId) + netstring(region) + netstring(queueName), 'hex');
}

/** H itself, the 64-bit value the test vectors freeze. */
export function queueHash(accountId: string, region: string, queueName: string): bigint {
  return BigInt(`0x${digestHex(accountId, region, queueName).slice(0, 16)}`);
}

/**
 * The queue's shard, 0..255: H mod 256 is H's lowest byte, the digest's 8th byte (hex digits 14
 * and 15). Read from the hex because a Buffer digest costs more than the hex string here.
 */
export function shardOf(accountId: string, region: string, queueName: string): number {
  return Number.parseInt(digestHex(accountId, region, queueName).slice(14, 16), 16);
}
