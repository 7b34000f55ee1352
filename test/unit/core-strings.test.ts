import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ownString } from '../../src/core/strings.js';
import { uuid } from '../../src/core/ids.js';

void test('Given strings of every kind, when copied with ownString, then the copy has the same code units', () => {
  const form = `Action=SendMessage&MessageBody=${'b'.repeat(300)}&Other=x`;
  const slice = new URLSearchParams(form).get('MessageBody') as string;
  const cons = `${'a'.repeat(20)}:${slice}`;
  // 13 code units with a surrogate pair across the middle, where ownString splits.
  const astral = `abcde𝄞fghijk`;
  assert.equal(astral.length, 13);
  for (const s of ['', 'short', '1234567890123', slice, cons, astral, 'é✓'.repeat(500)]) {
    assert.equal(ownString(s), s);
  }
});

void test('uuid gives distinct version-4 UUIDs, across refills of its random pool', () => {
  const seen = new Set<string>();
  // 256 ids per refill: this crosses several.
  for (let i = 0; i < 2000; i++) {
    const id = uuid();
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    seen.add(id);
  }
  assert.equal(seen.size, 2000);
});
