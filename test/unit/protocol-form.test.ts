import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseForm } from '../../src/protocol/form.js';

const expected = (text: string): [string, string][] => [...new URLSearchParams(text)];

test('Given form bodies with every kind of escape, when parsed, then the pairs are those URLSearchParams gives', () => {
  const cases = [
    '',
    '&',
    '&&a=1&&',
    'a',
    'a=',
    '=b',
    '=',
    'a=1=2',
    'a+b=c+d',
    'a%2Bb=%2B%20',
    'MessageBody=caf%C3%A9+%E2%82%AC+%F0%9F%98%80',
    'bad=%zz&trail=%&half=%4',
    'surrogate=%ED%A0%80&lone=%C3&overlong=%C0%AF',
    'bom=%EF%BB%BFx',
    'k%3Dy=v%26w',
    'raw=café€😀',
    'Action=SendMessage&Action=DeleteQueue',
    'nul=%00&ctl=%01%7F',
  ];
  for (const text of cases) assert.deepEqual(parseForm(text), expected(text), text);
});

test('Given random strings over the form alphabet, when parsed, then the pairs are those URLSearchParams gives', () => {
  const pieces = [
    'a',
    'Z',
    '0',
    '=',
    '&',
    '+',
    '%',
    '%2',
    '%41',
    '%C3',
    '%A9',
    '%ED%A0%80',
    '%F0%9F%98%80',
    '%zz',
    'é',
    '😀',
    ' ',
    '.',
  ];
  let seed = 7;
  const next = (): number => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed;
  };
  for (let i = 0; i < 5000; i++) {
    let text = '';
    const n = next() % 24;
    for (let j = 0; j < n; j++) text += pieces[next() % pieces.length] ?? '';
    assert.deepEqual(parseForm(text), expected(text), text);
  }
});

test('Given pairs already parsed, when more text is parsed into them, then they are appended in order', () => {
  const out = parseForm('a=1');
  assert.equal(parseForm('b=2&a=3', out), out);
  assert.deepEqual(out, [
    ['a', '1'],
    ['b', '2'],
    ['a', '3'],
  ]);
});
