/**
 * A copy of `s` that holds only its own characters, for strings the core keeps for a long time.
 * Strings handed in are often views into something larger: a Query form value is a slice of the
 * whole request body (so each message of a batch kept the other entries' bodies alive with its
 * own), and randomUUID() or a template literal returns a tree of pieces. V8 makes such views only
 * from 13 characters on, and joining two parts always builds one flat string.
 *
 * The copy is made where views are made: parseForm's values, FIFO ids and attributes in Message.
 * A message's id, body and MD5 are not copied again in Message: JSON.parse, crypto.hash, uuid()
 * and the loader's Buffer#toString (persistence/codec.ts) already give flat strings of their own,
 * so the JSON path and a load copy nothing. test/unit/string-retention.test.ts checks that a kept
 * body holds no more than itself on both protocols.
 */
export function ownString(s: string): string {
  if (s.length < 13) return s;
  const half = s.length >> 1;
  return [s.slice(0, half), s.slice(half)].join('');
}
