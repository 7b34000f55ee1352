import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ownString } from '../../src/core/strings.js';

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
