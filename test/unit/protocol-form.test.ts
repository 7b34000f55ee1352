import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseForm } from '../../src/protocol/form.js';

const expected = (text: string): [string, string][] => [...new URLSearchParams(text)];

/**
 * The form standard's pairs with strict UTF-8: `+` a space, `%XX` a byte, the bytes decoded as
 * UTF-8; undefined when they are not UTF-8. (Node's URLSearchParams puts U+FFFD there, and also
 * for some valid text after a stray `%`.)
 */
function strictPairs(text: string): [string, string][] | undefined {
  const strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  const decode = (s: string): string => {
    const latin1 = Buffer.from(s.replaceAll('+', ' '), 'utf8')
      .toString('latin1')
      .replace(/%([0-9A-Fa-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
    return strict.decode(Buffer.from(latin1, 'latin1'));
  };
  try {
    return text
      .split('&')
      .filter((p) => p !== '')
      .map((p) => {
        const eq = p.indexOf('=');
        return eq < 0 ? [decode(p), ''] : [decode(p.slice(0, eq)), decode(p.slice(eq + 1))];
      });
  } catch {
    return undefined;
  }
}

/**
 * What parseForm must do with `text`: give the strict pairs (InvalidMessageContents where there
 * are none), which for ASCII text that is UTF-8 are URLSearchParams' pairs.
 */
function assertParsedAsStandard(text: string): void {
  const want = strictPairs(text);
  if (want === undefined) {
    assert.throws(() => parseForm(text), { errorName: 'InvalidMessageContents' }, text);
    return;
  }
  // eslint-disable-next-line no-control-regex
  if (/^[\x00-\x7f]*$/.test(text)) assert.deepEqual(want, expected(text), `the reference, for ${text}`);
  assert.deepEqual(parseForm(text), want, text);
}

test('Given form bodies with every kind of escape, when parsed, then the pairs are the form standard ones, UTF-8 strictly', () => {
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
  for (const text of cases) assertParsedAsStandard(text);
});

test('Given random strings over the form alphabet, when parsed, then the pairs are the form standard ones, UTF-8 strictly', () => {
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
    assertParsedAsStandard(text);
  }
});

test('Given escapes that are not UTF-8 (a surrogate, FF, an overlong, past U+10FFFF, cut short), when parsed, then InvalidMessageContents; U+FFFD itself is kept', () => {
  for (const bad of ['%ED%A0%80', '%FF', '%C0%80', '%F4%90%80%80', '%E2%82', '100%25%C3', 'x%zz%C3']) {
    assert.throws(() => parseForm(`MessageBody=a${bad}b`), { errorName: 'InvalidMessageContents' }, bad);
    assert.throws(() => parseForm(`${bad}=v`), { errorName: 'InvalidMessageContents' }, bad);
  }
  assert.deepEqual(parseForm('MessageBody=%EF%BF%BD%zz'), [['MessageBody', '\uFFFD%zz']]);
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
