import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Bodies, CHUNK_BYTES, freeBody, readBody, type BodyRef } from '../../src/core/bodies.js';
import { ManualClock } from '../../src/core/clock.js';
import { QueueStore } from '../../src/core/store.js';
import { Rng } from '../helpers/rng.js';

function ref(): BodyRef {
  return { bodyChunk: null, bodyOffset: 0, bodyBytes: 0, bodySlot: -1 };
}

function stored(bodies: Bodies, body: string): BodyRef {
  const r = ref();
  bodies.put(r, body);
  return r;
}

test('Given bodies of every kind of character, when stored and read, then each reads back as it was', () => {
  const bodies = new Bodies();
  const cases = [
    'hello',
    '',
    'é ü ß',
    '中文 ✓ \uFFFD',
    'astral 𝄞 😀 \u{10FFFF}',
    '\t\n\r control',
    // Large enough for a chunk of its own, and one that still shares.
    'x'.repeat(CHUNK_BYTES),
    '€'.repeat(30_000),
    'y'.repeat(1024 * 1024),
  ];
  const refs = cases.map((body) => stored(bodies, body));
  cases.forEach((body, i) => assert.equal(readBody(refs[i] as BodyRef), body, `case ${i}`));
  const bytes = cases.reduce((n, b) => n + Buffer.byteLength(b), 0);
  assert.equal(bodies.liveBytes, bytes);
  for (const r of refs) freeBody(r);
  assert.equal(bodies.liveBytes, 0);
  assert.ok(bodies.allocatedBytes <= CHUNK_BYTES, `${bodies.allocatedBytes} bytes still allocated`);
});

test('Given a freed body, when it is read, then that throws; freeing it again changes nothing', () => {
  const bodies = new Bodies();
  const a = stored(bodies, 'a');
  const b = stored(bodies, 'bb');
  freeBody(a);
  assert.throws(() => readBody(a), /after the message was deleted/);
  freeBody(a);
  assert.equal(bodies.liveBytes, 2);
  assert.equal(readBody(b), 'bb');
  const empty = stored(bodies, '');
  freeBody(empty);
  assert.throws(() => readBody(empty), /after the message was deleted/);
});

test('Given random stores and frees, then every body held reads back and chunks stay within four times the bytes held', () => {
  for (const seed of [1, 2, 3]) {
    const rng = new Rng(seed);
    const bodies = new Bodies();
    const held: { r: BodyRef; body: string }[] = [];
    let compacted = false;
    for (let step = 0; step < 20_000; step++) {
      // Growing for the first half, shrinking for the second.
      if (held.length === 0 || rng.chance(step < 10_000 ? 0.6 : 0.4)) {
        const size = rng.chance(0.01) ? rng.int(20_000, 200_000) : rng.int(1, 2_000);
        const body = (rng.chance(0.2) ? 'é' : 'x').repeat(size) + String(step);
        held.push({ r: stored(bodies, body), body });
      } else {
        // Mostly the oldest (a queue), sometimes any: stragglers are what compaction is for.
        const i = rng.chance(0.7) ? 0 : rng.int(0, held.length - 1);
        const [gone] = held.splice(i, 1);
        const chunksBefore = bodies.chunks;
        freeBody((gone as { r: BodyRef }).r);
        if (bodies.chunks < chunksBefore) compacted = true;
      }
      assert.ok(
        bodies.allocatedBytes <= 4 * bodies.liveBytes + CHUNK_BYTES,
        `seed ${seed} step ${step}: ${bodies.allocatedBytes} bytes allocated for ${bodies.liveBytes} held`,
      );
      if (step % 1000 === 0) {
        for (const h of held) assert.equal(readBody(h.r), h.body, `seed ${seed} step ${step}`);
      }
    }
    assert.ok(compacted, `seed ${seed}: no chunk was ever given back`);
    for (const h of held) assert.equal(readBody(h.r), h.body, `seed ${seed} at the end`);
    assert.equal(
      bodies.liveBytes,
      held.reduce((n, h) => n + Buffer.byteLength(h.body), 0),
    );
  }
});

test('Given a few long-lived bodies among many short-lived ones, when the others are freed, then the long-lived ones are moved together and the rest given back', () => {
  const bodies = new Bodies();
  const body = 'z'.repeat(1000);
  const keep: BodyRef[] = [];
  const others: BodyRef[] = [];
  // About 40 chunks' worth, one body in 100 kept.
  for (let i = 0; i < 10_000; i++) (i % 100 === 0 ? keep : others).push(stored(bodies, body));
  assert.ok(bodies.chunks >= 30, `${bodies.chunks} chunks`);
  for (const r of others) freeBody(r);
  // 100 kept bodies of 1000 bytes fit in one chunk; the current one may be another.
  assert.ok(bodies.chunks <= 2, `${bodies.chunks} chunks still held for ${keep.length} bodies`);
  for (const r of keep) assert.equal(readBody(r), body);
});

test('Given a queue with messages, when it is deleted, then the store holds none of their bodies', () => {
  const clock = new ManualClock();
  const store = new QueueStore(clock);
  const q = store.create({ accountId: '000000000000', region: 'us-east-1', name: 'q' }, {}, {}).queue;
  const kept = store.create({ accountId: '000000000000', region: 'us-east-1', name: 'kept' }, {}, {}).queue;
  for (let i = 0; i < 100; i++) {
    q.send({ id: `m${i}`, body: 'body', md5OfBody: 'md5', senderId: 's' }, clock.now());
  }
  kept.send({ id: 'k', body: 'kept', md5OfBody: 'md5', senderId: 's' }, clock.now());
  q.receive(10, undefined, clock.now());
  assert.equal(store.bodies.liveBytes, 404);
  store.delete(q);
  assert.equal(store.bodies.liveBytes, 4);
  assert.equal(kept.receive(1, undefined, clock.now())[0]?.body, 'kept');
});
