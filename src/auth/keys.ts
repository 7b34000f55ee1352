/**
 * New credentials, shaped like AWS's: an access key id of 20 characters starting `AKIA` (upper-case
 * letters and digits 2-7, as AWS's base32 ids are) and a 40-character secret, both from the
 * operating system's CSPRNG. Account ids are 12 random digits.
 */
import { randomBytes, randomInt } from 'node:crypto';

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

export function newAccessKeyId(): string {
  const bytes = randomBytes(16);
  let id = 'AKIA';
  for (const b of bytes) id += BASE32[b & 31];
  return id;
}

export function newSecretAccessKey(): string {
  // 30 bytes are exactly 40 base64 characters; '+' and '/' are what AWS's secrets hold too.
  return randomBytes(30).toString('base64');
}

/** A random 12-digit account id for which `taken` is false; never 000000000000. */
export function newAccountId(taken: (id: string) => boolean): string {
  for (;;) {
    const id = String(randomInt(100_000_000_000, 1_000_000_000_000));
    if (!taken(id)) return id;
  }
}
