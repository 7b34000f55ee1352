/**
 * What the seeded model-based tests share (core-model, core-fifo-model, longpoll-model): the
 * coverage of the rules they exercised, the core's outcome of an operation as a value, and the
 * driver: seeds, the step loop with its replay trace, and the steps standard and FIFO queues share.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ManualClock } from '../../src/core/clock.js';
import { CoreError, type CoreErrorCode } from '../../src/core/errors.js';
import type { Message, MessageState, NewMessage } from '../../src/core/message.js';
import type { Queue, QueueCounts } from '../../src/core/queue.js';
import { QueueStore } from '../../src/core/store.js';
import { msg } from './queue.js';
import {
  pickHandle,
  randomDelaySeconds,
  randomRetentionSeconds,
  randomVisibilitySeconds,
  Rng,
} from './rng.js';

export const S = 1000;
export const MIN = 60 * S;
export const H = 60 * MIN;
/** AWS: a message's visibility can be extended to at most 12 hours after the receive. */
export const MAX_VISIBILITY_MS = 12 * H;
/** AWS: one PurgeQueue per queue every 60 seconds; another within them is PurgeQueueInProgress. */
export const PURGE_INTERVAL_MS = 60 * S;
export const ACCOUNT = '000000000000';
/** Every so many steps (and at the end), every live message is compared, not only the counts. */
const FULL_COMPARE_EVERY = 10;

/** How often each rule decided an outcome, over all seeds: the last test checks none was never hit. */
export class Coverage {
  private readonly counts = new Map<string, number>();

  hit(rule: string): void {
    this.counts.set(rule, (this.counts.get(rule) ?? 0) + 1);
  }

  /** Fails, naming them, if any of `rules` was never hit. */
  assertAllHit(rules: readonly string[]): void {
    const missing = rules.filter((r) => (this.counts.get(r) ?? 0) === 0);
    assert.deepEqual(
      missing,
      [],
      `never exercised; seen: ${JSON.stringify(Object.fromEntries(this.counts))}`,
    );
  }
}

export type Outcome = { readonly ok: true } | { readonly error: CoreErrorCode };

export function isOutcome(x: object): x is Outcome {
  return 'ok' in x || 'error' in x;
}
export const OK: Outcome = { ok: true };

/** OK, or the code of the core's own error; anything else is thrown on. */
export function coreOutcome(fn: () => void): Outcome {
  try {
    fn();
    return OK;
  } catch (e) {
    if (e instanceof CoreError) return { error: e.code };
    throw e;
  }
}

export function show(o: Outcome): string {
  return 'ok' in o ? 'ok' : o.error;
}

interface HandledMessage {
  readonly id: string;
  readonly handles: readonly string[];
  readonly gone: string | null;
}

/** A receipt handle as the operation log shows it: whose, which of its handles, and its state. */
function describeHandle<M extends HandledMessage>(
  model: { readonly messages: readonly M[]; tick(now: number): void; state(m: M, now: number): string },
  handle: string,
  foreign: string,
  now: number,
): string {
  if (handle === foreign) return 'handle of another queue';
  const m = model.messages.find((x) => x.handles.includes(handle));
  if (m === undefined) return `malformed handle ${JSON.stringify(handle)}`;
  model.tick(now);
  const i = m.handles.indexOf(handle) + 1;
  return `${m.id} handle ${i}/${m.handles.length} (${m.gone ?? model.state(m, now)})`;
}

// ---- the driver ---------------------------------------------------------------------------------

/**
 * The seeds a model test runs and how many steps each: `count` seeds from `base`, or the one
 * `${env}_SEED` names (a replay), for `${env}_STEPS` steps or `steps`. `replaying` tells the
 * coverage test to stand down (one seed does not reach every rule).
 */
export function modelRuns(
  env: string,
  o: { base: number; count: number; steps: number },
): { seeds: number[]; steps: number; replaying: boolean } {
  const seed = process.env[`${env}_SEED`];
  return {
    seeds: seed === undefined ? Array.from({ length: o.count }, (_, i) => o.base + i * 7919) : [Number(seed)],
    steps: Number(process.env[`${env}_STEPS`] ?? o.steps),
    replaying: seed !== undefined,
  };
}

/**
 * Registers one test per seed (`run` it for the run's steps), then, unless one seed is replayed or
 * the runs are short, a test that every rule in `rules` decided an outcome somewhere.
 */
export function modelTests(o: {
  readonly runs: ReturnType<typeof modelRuns>;
  /** What the runs act on and what they are checked against, for the test names. */
  readonly on: string;
  readonly against: string;
  readonly coverage: Coverage;
  readonly rules: readonly string[];
  run(seed: number, steps: number): void;
}): void {
  const { seeds, steps, replaying } = o.runs;
  for (const seed of seeds) {
    void test(`Given seed ${seed}, when ${steps} random operations run on ${o.on}, then the core agrees with ${o.against} at every step`, () => {
      o.run(seed, steps);
    });
  }
  if (!replaying && steps >= 400) {
    void test('Given every seed ran, when the rules that decided their outcomes are counted, then each was exercised', () => {
      o.coverage.assertAllHit(o.rules);
    });
  }
}

/** One step of a run: `where` names it in a failure; `note` says what it did, for the trace. */
export interface Step {
  readonly n: number;
  readonly now: number;
  readonly where: string;
  note(desc: string): void;
}

type HandleOp = 'delete' | 'visibility' | 'purge';

/**
 * Runs `steps` operations drawn from `ops` with `target.rng`: DeleteMessage, ChangeMessageVisibility
 * and PurgeQueue as `handleStep` does them on `target`, with `odds`; `act` does any other on the
 * core and the model and compares their outcomes; `check` compares their states after each. A
 * failure says how to replay the seed, and the last 15 steps.
 */
export function runSteps<
  Op extends string,
  M extends HandledMessage & { readonly lastReceiveAt: number },
>(o: {
  readonly env: string;
  readonly seed: number;
  readonly steps: number;
  readonly clock: { now(): number };
  readonly ops: Readonly<Record<Op, number>>;
  readonly target: HandleTarget<M>;
  readonly odds: { readonly delete: HandleOdds; readonly visibility: HandleOdds };
  /** The run's set-up, first line of the trace. */
  readonly header: string;
  act(op: Exclude<Op, HandleOp>, s: Step): void;
  check(s: Step, last: boolean): void;
}): void {
  const trace = [o.header];
  let n = 0;
  try {
    for (n = 1; n <= o.steps; n++) {
      const op = o.target.rng.weighted(o.ops);
      let desc: string = op;
      const s: Step = {
        n,
        now: o.clock.now(),
        get where() {
          return `seed ${o.seed} step ${this.n} (${desc})`;
        },
        note: (d) => {
          desc = d;
        },
      };
      if (!handleStep(op, s, o.target, o.odds)) o.act(op as Exclude<Op, HandleOp>, s);
      trace.push(`${n}: ${desc}`);
      o.check(s, n === o.steps);
    }
  } catch (e) {
    if (e instanceof Error) {
      e.message += `\n  replay: ${o.env}_SEED=${o.seed} ${o.env}_STEPS=${n}\n  last steps:\n    ${trace.slice(-15).join('\n    ')}`;
    }
    throw e;
  }
}

/** What the handle steps need of a model: its messages, and the outcome the rules give. */
interface HandleModel<M extends HandledMessage> {
  readonly messages: readonly M[];
  tick(now: number): void;
  state(m: M, now: number): string;
  delete(handle: string, now: number): Outcome;
  changeVisibility(handle: string, timeoutMs: number, now: number): Outcome;
  purge(now: number): Outcome;
}

interface HandleQueue {
  deleteMessage(handle: string, now: number): unknown;
  changeVisibility(handle: string, timeoutMs: number, now: number): unknown;
  purge(now: number): unknown;
}

/** How often a step picks an older handle, one the queue never gave, or the 12 h limit. */
export interface HandleOdds {
  readonly older: number;
  readonly bogus: number;
  readonly atLimit?: number;
}

function sameOutcome(s: Step, desc: string, expected: Outcome, act: () => unknown): void {
  const actual = coreOutcome(() => void act());
  s.note(`${desc} -> ${show(expected)}`);
  assert.deepEqual(actual, expected, `${s.where}: outcome`);
}

function pickDescribed<M extends HandledMessage>(
  s: Step,
  rng: Rng,
  model: HandleModel<M>,
  foreign: string,
  odds: HandleOdds,
): { handle: string; who: string } {
  const handle = pickHandle(rng, model.messages, foreign, odds.older, odds.bogus);
  return { handle, who: describeHandle(model, handle, foreign, s.now) };
}

/** What the handle steps act on: the model, the queue under test, and a handle of another queue. */
export interface HandleTarget<M extends HandledMessage> {
  readonly rng: Rng;
  readonly model: HandleModel<M>;
  readonly q: HandleQueue;
  readonly foreign: string;
}

/**
 * The steps both queue types take the same way, each comparing the core's outcome with the
 * model's: DeleteMessage and ChangeMessageVisibility with a random handle (sometimes right at the
 * 12 h limit or past it), and PurgeQueue. False for any other operation.
 */
function handleStep<M extends HandledMessage & { readonly lastReceiveAt: number }>(
  op: string,
  s: Step,
  t: HandleTarget<M>,
  odds: { readonly delete: HandleOdds; readonly visibility: HandleOdds },
): op is HandleOp {
  const { rng, model, q, foreign } = t;
  switch (op) {
    case 'delete': {
      const { handle, who } = pickDescribed(s, rng, model, foreign, odds.delete);
      const expected = model.delete(handle, s.now);
      sameOutcome(s, `delete ${who}`, expected, () => q.deleteMessage(handle, s.now));
      return true;
    }
    case 'visibility': {
      const { handle, who } = pickDescribed(s, rng, model, foreign, odds.visibility);
      const target = model.messages.find((m) => m.handles.includes(handle));
      let seconds = randomVisibilitySeconds(rng);
      if (target !== undefined && target.lastReceiveAt > 0 && rng.chance(odds.visibility.atLimit ?? 0)) {
        const left = Math.floor((target.lastReceiveAt + MAX_VISIBILITY_MS - s.now) / S);
        seconds = Math.min(43_200, Math.max(0, left + rng.int(0, 1)));
      }
      const expected = model.changeVisibility(handle, seconds * S, s.now);
      sameOutcome(s, `visibility ${who} ${seconds}s`, expected, () =>
        q.changeVisibility(handle, seconds * S, s.now),
      );
      return true;
    }
    case 'purge':
      sameOutcome(s, 'purge', model.purge(s.now), () => q.purge(s.now));
      return true;
    default:
      return false;
  }
}

/** A received message's body and receive bookkeeping are the model's. */
export function assertReceivedAsModelled(s: Step, m: Message, expected: ModelMessage): void {
  assert.equal(m.body, expected.body, `${s.where}: body of ${m.id}`);
  assert.equal(m.receiveCount, expected.receiveCount, `${s.where}: receiveCount of ${m.id}`);
  assert.equal(m.firstReceiveAt, expected.firstReceiveAt, `${s.where}: firstReceiveAt of ${m.id}`);
}

/**
 * How far to move the clock: often to a moment something changes (one of `deadlines`, by kind), or
 * 1 ms either side of it, where off-by-ones hide; else a random span. `hit` names where it went.
 */
export function randomAdvance(
  rng: Rng,
  now: number,
  deadlines: ReadonlyMap<string, readonly number[]>,
  o: { deadlineWeight: number; maxMinutes: number },
): { ms: number; hit?: { kind: string; side: string } } {
  const how = rng.weighted([
    ['deadline', o.deadlineWeight],
    ['ms', 2],
    ['seconds', 4],
    ['minutes', 2],
    ['hours', 1],
  ]);
  if (how === 'deadline' && deadlines.size > 0) {
    const kind =
      deadlines.size === 1 ? ([...deadlines.keys()][0] as string) : rng.pick([...deadlines.keys()]);
    const off = rng.int(-1, 1);
    const ms = Math.max(0, rng.pick(deadlines.get(kind) ?? []) - now + off);
    return { ms, hit: { kind, side: off === 0 ? 'exactly' : off < 0 ? 'minus 1 ms' : 'plus 1 ms' } };
  }
  if (how === 'ms') return { ms: rng.int(0, 999) };
  const [unit, max] =
    how === 'minutes' ? [60 * S, o.maxMinutes] : how === 'hours' ? [60 * 60 * S, 12] : [S, 120];
  return { ms: rng.int(1, max) * unit + rng.int(0, 999) };
}

// ---- what the standard and FIFO queue models share ----------------------------------------------

export type LiveState = Exclude<MessageState, 'deleted'>;

export interface ModelMessage extends HandledMessage {
  readonly body: string;
  readonly sentAt: number;
  /** Until then delayed (never received) or in flight (received); visible from then on. */
  visibleAt: number;
  receiveCount: number;
  /** 0 until the first receive. */
  firstReceiveAt: number;
  lastReceiveAt: number;
  /** Every receipt handle the message was given, oldest first. */
  readonly handles: string[];
  gone: string | null;
}

/** What a live message looks like from outside; the core's messages are reduced to the same. */
export interface Snapshot {
  readonly id: string;
  readonly body: string;
  readonly state: LiveState;
  readonly receiveCount: number;
  readonly firstReceiveAt: number;
  /** When a delayed or in-flight message becomes visible; null for a visible one. */
  readonly visibleAt: number | null;
}

function snapshotOf(
  m: Pick<Snapshot, 'id' | 'body' | 'receiveCount' | 'firstReceiveAt'>,
  state: LiveState,
  visibleAt: number,
): Snapshot {
  return {
    id: m.id,
    body: m.body,
    state,
    receiveCount: m.receiveCount,
    firstReceiveAt: m.firstReceiveAt,
    visibleAt: state === 'visible' ? null : visibleAt,
  };
}

/** The rules QueueModel decides, which every queue model's runs must reach. */
export const QUEUE_MODEL_RULES: readonly string[] = [
  ...['deleted', 'expired', 'purged'].flatMap((gone) => [
    `delete: message ${gone} already`,
    `visibility: message ${gone}`,
  ]),
  ...['delete', 'visibility'].map((action) => `${action}: foreign or malformed handle`),
  ...['changed', 'set to 0', 'exactly 12 h after the receive', 'beyond 12 h after the receive'].map(
    (rule) => `visibility: ${rule}`,
  ),
  ...['messages removed', 'within 60 s of the last'].map((rule) => `purge: ${rule}`),
];

/**
 * The reference model's bookkeeping that does not depend on the queue type: every message ever
 * sent (gone ones too: their handles are still used), their state from the clock alone, counts,
 * snapshots, and the once-per-60-s purge rule. Subclasses hold the rules.
 */
export abstract class QueueModel<M extends ModelMessage> {
  readonly messages: M[] = [];
  protected readonly byId = new Map<string, M>();
  protected readonly byHandle = new Map<string, M>();
  lastPurgeAt = Number.NEGATIVE_INFINITY;

  constructor(
    protected readonly coverage: Coverage,
    public delayMs: number,
    public visibilityMs: number,
    public retentionMs: number,
  ) {}

  /** Applies retention (and whatever else the clock decides) up to `now`. */
  abstract tick(now: number): void;

  protected add(m: M): void {
    this.messages.push(m);
    this.byId.set(m.id, m);
  }

  live(): M[] {
    return this.messages.filter((m) => m.gone === null);
  }

  state(m: M, now: number): LiveState {
    if (now < m.visibleAt) return m.receiveCount === 0 ? 'delayed' : 'inflight';
    return 'visible';
  }

  find(id: string): M {
    const m = this.byId.get(id);
    if (m === undefined) throw new Error(`no model message ${id}`);
    return m;
  }

  counts(now: number): QueueCounts {
    this.tick(now);
    const counts = { visible: 0, inflight: 0, delayed: 0 };
    for (const m of this.live()) counts[this.state(m, now)]++;
    return counts;
  }

  protected snapshotOf(m: M, now: number): Snapshot {
    return snapshotOf(m, this.state(m, now), m.visibleAt);
  }

  snapshot(now: number): Snapshot[] {
    this.tick(now);
    return this.live().map((m) => this.snapshotOf(m, now));
  }

  /**
   * The live message a DeleteMessage or ChangeMessageVisibility handle names, or the outcome when
   * it names none: a handle this queue never gave is ReceiptHandleIsInvalid; one of a message that
   * is gone deletes nothing and succeeds, and cannot change a visibility (InvalidParameterValue).
   */
  protected lookup(handle: string, now: number, action: 'delete' | 'visibility'): M | Outcome {
    this.tick(now);
    const m = this.byHandle.get(handle);
    if (m === undefined) {
      this.coverage.hit(`${action}: foreign or malformed handle`);
      return { error: 'ReceiptHandleIsInvalid' };
    }
    if (m.gone === null) return m;
    if (action === 'delete') {
      this.coverage.hit(`delete: message ${m.gone} already`);
      return OK;
    }
    this.coverage.hit(`visibility: message ${m.gone}`);
    return { error: 'InvalidParameterValue' };
  }

  /** The new timeout counts from now and may not end more than 12 h after the last receive. */
  protected setVisibility(m: M, timeoutMs: number, now: number): Outcome {
    if (now + timeoutMs > m.lastReceiveAt + MAX_VISIBILITY_MS) {
      this.coverage.hit('visibility: beyond 12 h after the receive');
      return { error: 'InvalidParameterValue' };
    }
    this.coverage.hit(timeoutMs === 0 ? 'visibility: set to 0' : 'visibility: changed');
    if (now + timeoutMs === m.lastReceiveAt + MAX_VISIBILITY_MS)
      this.coverage.hit('visibility: exactly 12 h after the receive');
    m.visibleAt = now + timeoutMs;
    return OK;
  }

  /** The 60 s rule of PurgeQueue: its error, or null after every live message is marked purged. */
  protected purgeOrRefuse(now: number): Outcome | null {
    this.tick(now);
    if (now - this.lastPurgeAt < PURGE_INTERVAL_MS) {
      this.coverage.hit('purge: within 60 s of the last');
      return { error: 'PurgeQueueInProgress' };
    }
    this.coverage.hit(this.live().length > 0 ? 'purge: messages removed' : 'purge: empty queue');
    if (now - this.lastPurgeAt === PURGE_INTERVAL_MS) this.coverage.hit('purge: exactly 60 s after the last');
    this.lastPurgeAt = now;
    for (const m of this.live()) (m as ModelMessage).gone = 'purged';
    return null;
  }
}

/** The core's live messages in the model's terms; `extra` adds what a queue type compares too. */
function coreSnapshot<T extends object>(
  q: Queue,
  now: number,
  extra: (m: Message) => T,
): Array<Snapshot & T> {
  q.counts(now); // applies the deadlines that passed, as every operation does
  return [...q.allMessages()].map((m) => {
    assert.notEqual(m.state, 'deleted', `a deleted message ${m.id} is still linked`);
    return { ...snapshotOf(m, m.state as LiveState, m.heapKey), ...extra(m) };
  });
}

/** After a step: the counts always, and every live message every FULL_COMPARE_EVERY steps and last. */
export function compareQueue(
  s: Step,
  last: boolean,
  q: Queue,
  at: number,
  expected: { counts(now: number): QueueCounts; snapshot(now: number): object[] },
  extra: (m: Message) => object,
): boolean {
  assert.deepEqual(q.counts(at), expected.counts(at), `${s.where}: counts (visible, inflight, delayed)`);
  if (s.n % FULL_COMPARE_EVERY !== 0 && !last) return false;
  const snapshot = expected.snapshot(at);
  assert.deepEqual(coreSnapshot(q, at, extra), snapshot, `${s.where}: live messages`);
  assert.equal(q.size, snapshot.length, `${s.where}: size`);
  return true;
}

/**
 * A receipt handle this queue must refuse: a real one, of another queue in the same store
 * (`fifo`: a FIFO one, with `first`'s group and deduplication ids).
 */
export function foreignHandle(
  store: QueueStore,
  clock: ManualClock,
  name: string,
  fifo: Partial<NewMessage> | null,
): string {
  const other = store.create(
    { accountId: ACCOUNT, region: 'us-east-1', name: fifo === null ? name : `${name}.fifo` },
    fifo === null ? {} : { FifoQueue: 'true' },
    {},
  ).queue;
  other.sendMessage(msg('x', { id: name, ...fifo }), clock.now());
  const [m] = other.receive(1, undefined, clock.now());
  assert.ok(m !== undefined, `${name} setup: the other queue's message was not received`);
  return other.receiptHandle(m);
}

export const TIMING_ATTRIBUTES = ['DelaySeconds', 'VisibilityTimeout', 'MessageRetentionPeriod'] as const;

/** A random value for one of the attributes both queue types model, set on the model too. */
export function timingAttribute(
  rng: Rng,
  name: (typeof TIMING_ATTRIBUTES)[number],
  model: { delayMs: number; visibilityMs: number; retentionMs: number },
): string {
  switch (name) {
    case 'DelaySeconds':
      model.delayMs = randomDelaySeconds(rng) * S;
      return String(model.delayMs / S);
    case 'VisibilityTimeout':
      model.visibilityMs = randomVisibilitySeconds(rng) * S;
      return String(model.visibilityMs / S);
    case 'MessageRetentionPeriod':
      model.retentionMs = randomRetentionSeconds(rng) * S;
      return String(model.retentionMs / S);
  }
}

/**
 * One seeded run's world: its random source, a manual clock and a store, and the queue's random
 * DelaySeconds, VisibilityTimeout and MessageRetentionPeriod (seconds) as attributes.
 */
export function modelWorld(seed: number): {
  rng: Rng;
  clock: ManualClock;
  store: QueueStore;
  delay: number;
  visibility: number;
  retention: number;
  attributes: Record<(typeof TIMING_ATTRIBUTES)[number], string>;
} {
  const rng = new Rng(seed);
  const clock = new ManualClock();
  const delay = rng.chance(0.7) ? 0 : randomDelaySeconds(rng);
  const visibility = rng.chance(0.5) ? 30 : rng.int(0, 120);
  const retention = randomRetentionSeconds(rng);
  return {
    rng,
    clock,
    store: new QueueStore(clock),
    delay,
    visibility,
    retention,
    attributes: {
      DelaySeconds: String(delay),
      VisibilityTimeout: String(visibility),
      MessageRetentionPeriod: String(retention),
    },
  };
}
