import { randomFillSync } from 'node:crypto';

/** Random bytes for 256 ids, refilled when used up (as node:crypto's randomUUID does). */
const pool = Buffer.allocUnsafe(16 * 256);
let used = pool.length;
/** The id's characters are written here, then read out as one string. */
const text = Buffer.from('00000000-0000-4000-8000-000000000000', 'latin1');
const HEX = Buffer.from('0123456789abcdef', 'latin1');
/** Where each of the 16 bytes' two hex digits go in `text`. */
const AT = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];

/**
 * A random (version 4) UUID, as crypto.randomUUID() gives, but as one flat string of its own:
 * randomUUID() builds its result from 20 pieces, a tree of strings that the core would have to
 * copy before keeping it in every queued message (see strings.ts), and that a reply's header
 * block flattens again. About a third of the time of randomUUID() plus that copy. Message ids,
 * request ids and move task ids.
 */
export function uuid(): string {
  if (used === pool.length) {
    randomFillSync(pool);
    used = 0;
  }
  const o = used;
  used += 16;
  for (let i = 0; i < 16; i++) {
    let b = pool[o + i] as number;
    // The version (4) and the RFC 4122 variant bits.
    if (i === 6) b = (b & 0x0f) | 0x40;
    else if (i === 8) b = (b & 0x3f) | 0x80;
    const at = AT[i] as number;
    text[at] = HEX[b >> 4] as number;
    text[at + 1] = HEX[b & 0x0f] as number;
  }
  return text.toString('latin1', 0, 36);
}
