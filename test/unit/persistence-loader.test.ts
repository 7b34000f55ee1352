import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Message } from '../../src/core/message.js';
import { dropRepeatedIds, sortBySeq } from '../../src/persistence/loader.js';
import { msg } from '../support/queue.js';

function message(id: string, seq: number): Message {
  return new Message(msg(id, { id }), seq, 0);
}

test('Given HSCAN chunks that repeat some entries, when repeated ids are dropped, then each id is left once, first copy kept', () => {
  const a = message('a', 1);
  const b = message('b', 2);
  const c = message('c', 3);
  const list = [a, b, message('a', 1), c, message('b', 2), message('b', 2)];
  dropRepeatedIds(list);
  assert.deepEqual(list, [a, b, c]);
  assert.equal(list[0], a);
});

test('Given more messages than one sorted run, when sorted by seq in slices, then they are in seq order', async () => {
  const n = 20_000;
  const list = Array.from({ length: n }, (_, i) => message(`m${i}`, (i * 7919) % n));
  await sortBySeq(list, 1);
  assert.deepEqual(
    list.map((m) => m.seq),
    Array.from({ length: n }, (_, i) => i),
  );
});
