/**
 * The writer's pipelined group commits against a real redis-server: several script calls in
 * flight at once, the chain that makes every call behind a failed one write nothing, and batches
 * resolving in order. Calls are held in Redis with CLIENT PAUSE WRITE (reads still answer, so the
 * test can see that nothing was applied yet), or their answers are held back in a wrapper around
 * the client's `call`, which also counts the calls in flight and records what each returned.
 */
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/core/clock.js';
import type { Queue } from '../../src/core/queue.js';
import { QueueStore } from '../../src/core/store.js';
import { keysFor, type Keys } from '../../src/persistence/keys.js';
import { loadStore } from '../../src/persistence/loader.js';
import { FencedError, ScriptCode, scripts, type ScriptArg } from '../../src/persistence/scripts.js';
import { Writer } from '../../src/persistence/writer.js';
import { SqsError } from '../../src/sqs/errors.js';
import { isSqsError } from '../support/assertions.js';
import { uniquePrefix } from '../support/redis.js';
import type { Redis } from 'ioredis';
import { testsRequiring } from '../support/requires.js';
import { sharedRedis } from '../support/sqs.js';
import { msg, sendOne } from '../support/queue.js';

const { after, before, test } = testsRequiring('redis-server');

const redis = sharedRedis({ before, after }, { aof: true });

const unavailable = (cause: Error): Error =>
  new SqsError('ServiceUnavailable', `The change could not be stored: ${cause.message}`);

const is503 = isSqsError('ServiceUnavailable');

/** What the wrapper saw of the apply script's calls (other commands pass untouched). */
interface Tap {
  /** Apply calls sent and not answered yet, and the most there ever were. */
  pending: number;
  maxPending: number;
  /** What each call returned (a code, or the error), in the order the answers came. */
  readonly answers: unknown[];
  /** Calls sent so far; the next call is number `sent`. */
  sent: number;
  /** Changes a call's argument list before it is sent: [sha, numkeys, ...KEYS, ...ARGV]. */
  rewrite: ((n: number, argv: ScriptArg[]) => void) | undefined;
  /** When it returns a promise, call n's answer is handed to the writer only once that resolves. */
  hold: ((n: number) => Promise<void> | undefined) | undefined;
}

type Call = (command: string, argv: ScriptArg[]) => Promise<unknown>;

function tap(c: Redis): Tap {
  const t: Tap = { pending: 0, maxPending: 0, answers: [], sent: 0, rewrite: undefined, hold: undefined };
  const target = c as unknown as { call: Call };
  const original = target.call.bind(c);
  target.call = async (command, argv) => {
    const apply = argv[0] === scripts.apply.sha || argv[0] === scripts.apply.lua;
    if (!apply) return original(command, argv);
    const n = t.sent++;
    t.rewrite?.(n, argv);
    t.maxPending = Math.max(t.maxPending, ++t.pending);
    let answer: unknown;
    let failed = false;
    try {
      answer = await original(command, argv);
    } catch (e) {
      answer = e;
      failed = true;
    }
    t.pending--;
    t.answers.push(answer);
    await t.hold?.(n);
    if (failed) throw answer;
    return answer;
  };
  return t;
}

interface Opened {
  readonly c: Redis;
  readonly t: Tap;
  readonly keys: Keys;
  readonly store: QueueStore;
  readonly writer: Writer;
  readonly q: Queue;
  readonly clock: ManualClock;
  readonly failures: Error[];
}

/**
 * A tapped connection, a loaded store with a writer, and a queue whose creation is committed.
 * With a token, the lock holds what it returns now.
 */
async function open(token?: () => string): Promise<Opened> {
  const c = await redis.connect({ commandTimeoutMs: 10_000 });
  const t = tap(c);
  const keys = keysFor(uniquePrefix());
  if (token !== undefined) await c.set(keys.lock, token());
  const clock = new ManualClock();
  const store = new QueueStore(clock, { deletedRecentlyMs: 0 });
  await loadStore(c, keys, store, { token: token?.() });
  const failures: Error[] = [];
  const writer = new Writer({ redis: c, keys, token, unavailable, onFailure: (e) => failures.push(e) });
  writer.attach(store);
  const q = store.create({ accountId: '000000000000', region: 'us-east-1', name: 'q' }, {}, {}).queue;
  // The first call goes alone (and loads the script): from here on calls are pipelined.
  await writer.commit();
  return { c, t, keys, store, writer, q, clock, failures };
}

let ids = 0;
/** Sends one message in this tick; its id. */
function send(o: Opened, body: string): string {
  return sendOne(o.q, msg(body, { id: `m-${++ids}`, senderId: '000000000000' }), o.clock.now()).id;
}

/** Lets the writer's setImmediate flush run: the next tick. */
const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function until(what: string, done: () => boolean): Promise<void> {
  const deadline = performance.now() + 5000;
  while (!done()) {
    if (performance.now() > deadline) throw new Error(`still waiting: ${what}`);
    await tick();
  }
}

/** Holds every client's write commands (and what each sends after one) until unpaused. */
async function pauseWrites(): Promise<void> {
  await redis.server.client.call('CLIENT', 'PAUSE', '10000', 'WRITE');
}

async function unpause(): Promise<void> {
  await redis.server.client.call('CLIENT', 'UNPAUSE');
}

/** Holds back the answer to the next call sent until `release()`; `first` is that call's number. */
function holdNextCall(o: Opened): { first: number; release: () => void } {
  const first = o.t.sent;
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  o.t.hold = (n) => (n === first ? held : undefined);
  return { first, release };
}

/** How each promise settled, in the order they did. */
function settledOrder(promises: Record<string, Promise<void>>): string[] {
  const order: string[] = [];
  for (const [name, p] of Object.entries(promises)) {
    p.then(
      () => order.push(`${name} ok`),
      (e: unknown) => order.push(is503(e) ? `${name} 503` : `${name} ${String(e)}`),
    );
  }
  return order;
}

test('Given Redis holds the calls, when six ticks each send a message, then four calls are in flight at once and the rest wait in one batch', async () => {
  const o = await open();
  const before = o.writer.stats.batches;
  await pauseWrites();
  const commits: Promise<void>[] = [];
  const sent: string[] = [];
  try {
    for (let i = 0; i < 6; i++) {
      sent.push(send(o, `b${i}`));
      commits.push(o.writer.commit());
      await tick();
    }
    assert.equal(o.t.pending, 4, 'four calls in flight');
    assert.equal(o.t.maxPending, 4);
    assert.equal(commits[4], commits[5], 'ticks 5 and 6 share the batch waiting for a slot');
    // Read on another connection: on the writer's it would wait behind the held calls.
    assert.equal(await redis.server.client.hlen(o.keys.messages(o.q.uid)), 0, 'nothing applied while paused');
  } finally {
    await unpause();
  }
  await Promise.all(commits);
  assert.equal(o.writer.stats.batches - before, 5);
  assert.deepEqual((await o.c.hkeys(o.keys.messages(o.q.uid))).sort(), sent.sort());
  assert.equal(o.t.maxPending, 4, 'never more than four');
});

test('Given a new writer, when its first call is unanswered, then the next batch waits for it (it may load the script)', async () => {
  const c = await redis.connect({ commandTimeoutMs: 10_000 });
  const t = tap(c);
  const keys = keysFor(uniquePrefix());
  const store = new QueueStore(new ManualClock(), { deletedRecentlyMs: 0 });
  await loadStore(c, keys, store);
  const writer = new Writer({ redis: c, keys, unavailable });
  writer.attach(store);
  await pauseWrites();
  const commits: Promise<void>[] = [];
  try {
    for (const name of ['a', 'b', 'c']) {
      store.create({ accountId: '000000000000', region: 'us-east-1', name }, {}, {});
      commits.push(writer.commit());
      await tick();
    }
    assert.equal(t.pending, 1);
  } finally {
    await unpause();
  }
  await Promise.all(commits);
  assert.equal(t.maxPending, 1);
  assert.equal(await c.hlen(keys.queues), 3);
});

test('Given a tick that makes a batch of several calls, when it is written, then its calls go one at a time', async () => {
  const o = await open();
  for (let i = 0; i < 25_000; i++) send(o, 'x');
  const calls = o.t.sent;
  await o.writer.commit();
  assert.equal(o.t.sent - calls, 3, 'cut into three calls');
  assert.equal(o.t.maxPending, 1, 'each alone: together they would risk the command timeout');
  assert.equal(await o.c.hlen(o.keys.messages(o.q.uid)), 25_000);
});

test('Given four calls in flight, when the second is fenced, then the two behind it write nothing and are answered 503, and the first is applied', async () => {
  let token = 'tok';
  const o = await open(() => token);
  const calls = o.t.sent;
  await pauseWrites();
  const ids: string[] = [];
  const commits: Record<string, Promise<void>> = {};
  let order: string[];
  try {
    for (const name of ['A', 'B', 'C', 'D']) {
      // B is flushed with a token the lock does not hold; C and D carry the right one again.
      token = name === 'B' ? 'stale' : 'tok';
      ids.push(send(o, name));
      commits[name] = o.writer.commit();
      await tick();
    }
    token = 'tok';
    order = settledOrder(commits);
    assert.equal(o.t.pending, 4);
  } finally {
    await unpause();
  }
  await Promise.allSettled(Object.values(commits));
  assert.deepEqual(order, ['A ok', 'B 503', 'C 503', 'D 503']);
  assert.deepEqual(o.t.answers.slice(calls), [
    ScriptCode.OK,
    ScriptCode.FENCED,
    ScriptCode.OUT_OF_CHAIN,
    ScriptCode.OUT_OF_CHAIN,
  ]);
  assert.equal(o.failures.length, 1);
  assert.ok(o.failures[0] instanceof FencedError, 'told the cause, not the refusals behind it');
  assert.deepEqual(await o.c.hkeys(o.keys.messages(o.q.uid)), [ids[0]], 'only A is in Redis');
  await assert.rejects(o.writer.commit(), is503);
});

test('Given three calls in flight, when the first is malformed, then the two behind it write nothing', async () => {
  const o = await open();
  const first = o.t.sent;
  // argv: sha, numkeys, 4 keys, token, prefix, previous id, own id, then the first opcode.
  o.t.rewrite = (n, argv) => {
    if (n === first) argv[10] = 'not an opcode';
  };
  await pauseWrites();
  const commits: Record<string, Promise<void>> = {};
  let order: string[];
  try {
    for (const name of ['A', 'B', 'C']) {
      send(o, name);
      commits[name] = o.writer.commit();
      await tick();
    }
    order = settledOrder(commits);
    assert.equal(o.t.pending, 3);
  } finally {
    await unpause();
  }
  await Promise.allSettled(Object.values(commits));
  assert.deepEqual(order, ['A 503', 'B 503', 'C 503']);
  assert.deepEqual(o.t.answers.slice(first), [
    ScriptCode.MALFORMED,
    ScriptCode.OUT_OF_CHAIN,
    ScriptCode.OUT_OF_CHAIN,
  ]);
  assert.equal(await o.c.hlen(o.keys.messages(o.q.uid)), 0);
});

test('Given the chain key changed behind the writer, when its next call runs, then it writes nothing', async () => {
  const o = await open();
  await o.c.set(o.keys.commit, 'someone else');
  send(o, 'refused');
  await assert.rejects(o.writer.commit(), is503);
  assert.equal(o.t.answers.at(-1), ScriptCode.OUT_OF_CHAIN);
  assert.equal(await o.c.hlen(o.keys.messages(o.q.uid)), 0);
  assert.equal(await o.c.get(o.keys.commit), 'someone else');
});

test("Given batch k's answer is late, when batch k+1's answer comes first, then k+1 resolves only after k", async () => {
  const o = await open();
  const { first, release } = holdNextCall(o);
  const commits: Record<string, Promise<void>> = {};
  for (const name of ['A', 'B']) {
    send(o, name);
    commits[name] = o.writer.commit();
    await tick();
  }
  const order = settledOrder(commits);
  await until('both answers', () => o.t.answers.length >= first + 2);
  for (let i = 0; i < 10; i++) await tick();
  assert.deepEqual(order, [], 'B was applied but waits for A');
  release();
  await Promise.all(Object.values(commits));
  assert.deepEqual(order, ['A ok', 'B ok']);
});

test('Given a failure seen while an earlier call is unanswered, when that call is answered, then its batch still resolves, before the failed one rejects', async () => {
  let token = 'tok';
  const o = await open(() => token);
  const { release } = holdNextCall(o);
  const commits: Record<string, Promise<void>> = {};
  for (const name of ['A', 'B']) {
    token = name === 'B' ? 'stale' : 'tok';
    send(o, name);
    commits[name] = o.writer.commit();
    await tick();
  }
  const order = settledOrder(commits);
  await until('the failure', () => o.failures.length > 0);
  assert.ok(o.failures[0] instanceof FencedError);
  await assert.rejects(o.writer.commit(), is503, 'the writer stops at once');
  assert.deepEqual(order, [], 'B waits for A');
  release();
  await Promise.allSettled(Object.values(commits));
  assert.deepEqual(order, ['A ok', 'B 503']);
});
