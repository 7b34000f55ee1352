/**
 * ReceiveMessage's MessageAttributeNames (src/sqs/actions/receive-message.ts): which of a
 * message's attributes a list of names selects. Through real clients, with the MD5 of what is
 * returned: the MessageAttributeNames scenario of test/support/boto3-scenarios.ts and the `a.*` one
 * of test/support/scenarios-data-plane.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { messageAttributeFilter } from '../../src/sqs/actions/receive-message.js';

const NAMES = ['Help.Me', 'Hello', 'General', 'Hel', 'a.b.c'];

function selected(names: string[] | undefined): string[] | 'all' | 'none' {
  const filter = messageAttributeFilter(names);
  return typeof filter === 'string' ? filter : NAMES.filter(filter);
}

void test('MessageAttributeNames prefix filter: given Hel.*, when filtering, then every name starting with "Hel", dotted or not', () => {
  assert.deepEqual(selected(['Hel.*']), ['Help.Me', 'Hello', 'Hel']);
  assert.deepEqual(selected(['Help.*']), ['Help.Me']);
  assert.deepEqual(selected(['a.b.*']), ['a.b.c']);
});

void test('MessageAttributeNames: given All, * or .*, then every attribute; none or an empty list, then none', () => {
  for (const names of [['All'], ['*'], ['.*'], ['Hello', '*']]) assert.equal(selected(names), 'all');
  assert.equal(selected(undefined), 'none');
  assert.equal(selected([]), 'none');
});

void test('MessageAttributeNames: given plain and unknown names, then exactly the names the message has, beside any prefix', () => {
  assert.deepEqual(selected(['Hello']), ['Hello']);
  assert.deepEqual(selected(['Hel']), ['Hel']);
  assert.deepEqual(selected(['Nope', 'Help']), []);
  assert.deepEqual(selected(['General', 'Help.*']), ['Help.Me', 'General']);
});
