/**
 * Model-based test of standard queues: seeded random operations run against the core (Queue,
 * through a QueueStore on a ManualClock) and against a deliberately plain reference model of the
 * SQS rules as AWS documents them, compared after every step.
 *
 * The model is a list of every message ever sent, with its timestamps, receive count and receipt
 * handles; a message's state follows from the clock alone:
 *   - gone (deleted, purged, or expired: now >= sentAt + MessageRetentionPeriod, the queue's
 *     current period, which AWS applies to messages already in the queue);
 *   - else delayed (never received) or in flight (received) while now < visibleAt;
 *   - else visible.
 * Standard queues deliver in best-effort order, so a receive is checked as a set: every message it
 * returns must be visible in the model, and there must be min(max, visible) of them (the core's
 * contract: Queue.receive takes up to `max` visible messages, and without a RedrivePolicy nothing
 * stops it early).
 *
 * Where AWS documents only what "might" happen, the model takes the core's documented choice
 * (docs/compatibility.md, core-queue.test.ts): DeleteMessage with an older handle of a standard
 * queue's message deletes it (AWS: "the request will still succeed, but the message might not be
 * deleted"). ChangeMessageVisibility follows AWS's recorded answers: any handle the message was
 * given changes its visibility, also an older one after a later receive and one whose timeout
 * has passed (AWS documents only that this "might result in an error").
 *
 * Replay one seed: MODEL_SEED=<seed> [MODEL_STEPS=<n>] node --import tsx --test test/unit/core-model.test.ts
 */
import assert from 'node:assert/strict';
import { randomDelaySeconds, randomVisibilitySeconds } from '../support/rng.js';
import {
  ACCOUNT,
  compareQueue,
  Coverage,
  foreignHandle,
  modelWorld,
  assertReceivedAsModelled,
  isOutcome,
  MAX_VISIBILITY_MS,
  type ModelMessage as BaseMessage,
  modelRuns,
  modelTests,
  OK,
  type Outcome,
  PURGE_INTERVAL_MS,
  QUEUE_MODEL_RULES,
  QueueModel,
  randomAdvance,
  runSteps,
  S,
  TIMING_ATTRIBUTES,
  timingAttribute,
} from '../support/model.js';
import { msg, sendOne } from '../support/queue.js';

const RUNS = modelRuns('MODEL', { base: 0x5eed, count: 50, steps: 400 });

// ---- what the runs exercised ------------------------------------------------------------------

const coverage = new Coverage();

// ---- the reference model ----------------------------------------------------------------------

interface ModelMessage extends BaseMessage {
  gone: 'deleted' | 'purged' | 'expired' | null;
}

class Model extends QueueModel<ModelMessage> {
  /** Retention: a message is gone once now >= sentAt + the queue's (current) retention period. */
  tick(now: number): void {
    for (const m of this.messages) {
      if (m.gone === null && now >= m.sentAt + this.retentionMs) {
        m.gone = 'expired';
        coverage.hit(`expired while ${this.state(m, now)}`);
      }
    }
  }

  /** A message's own DelaySeconds wins over the queue's. */
  send(id: string, body: string, delaySeconds: number | undefined, now: number): void {
    this.tick(now);
    this.add({
      id,
      body,
      sentAt: now,
      visibleAt: now + (delaySeconds === undefined ? this.delayMs : delaySeconds * S),
      receiveCount: 0,
      firstReceiveAt: 0,
      lastReceiveAt: 0,
      handles: [],
      gone: null,
    });
  }

  /** The messages a receive at `now` may return: the visible ones, never delayed, in flight or gone. */
  receivable(now: number): Set<string> {
    this.tick(now);
    return new Set(
      this.live()
        .filter((m) => this.state(m, now) === 'visible')
        .map((m) => m.id),
    );
  }

  /** The core returned these (checked against receivable): each is received once more. */
  received(
    got: ReadonlyArray<{ id: string; handle: string }>,
    visibilityMs: number | undefined,
    now: number,
  ): void {
    const timeout = visibilityMs ?? this.visibilityMs;
    for (const { id, handle } of got) {
      const m = this.find(id);
      coverage.hit(m.receiveCount === 0 ? 'receive: first' : 'receive: again');
      if (timeout === 0) coverage.hit('receive: visibility 0');
      m.receiveCount++;
      if (m.firstReceiveAt === 0) m.firstReceiveAt = now;
      m.lastReceiveAt = now;
      // A timeout of 0 leaves it visible.
      m.visibleAt = now + timeout;
      m.handles.push(handle);
      this.byHandle.set(handle, m);
    }
  }

  /**
   * Standard queues: any handle the message was ever given deletes it; deleting a message that is
   * gone already succeeds and changes nothing. A handle this queue never gave is
   * ReceiptHandleIsInvalid.
   */
  delete(handle: string, now: number): Outcome {
    const m = this.lookup(handle, now, 'delete');
    if (isOutcome(m)) return m;
    const latest = m.handles[m.handles.length - 1] === handle;
    coverage.hit(`delete: ${latest ? 'latest' : 'older'} handle of a ${this.state(m, now)} message`);
    m.gone = 'deleted';
    return OK;
  }

  /**
   * Any handle the message was given, whether it is in flight or visible again; the new timeout
   * counts from now and may not end more than 12 h after the last receive. The handle of a message
   * that is gone is InvalidParameterValue ("Message does not exist or is not available ...").
   */
  changeVisibility(handle: string, timeoutMs: number, now: number): Outcome {
    const m = this.lookup(handle, now, 'visibility');
    if (isOutcome(m)) return m;
    const latest = m.handles[m.handles.length - 1] === handle;
    coverage.hit(`visibility: ${latest ? 'latest' : 'older'} handle of a ${this.state(m, now)} message`);
    return this.setVisibility(m, timeoutMs, now);
  }

  /** Every message sent before the purge goes (here: every message); once per 60 s. */
  purge(now: number): Outcome {
    return this.purgeOrRefuse(now) ?? OK;
  }

  /** The moments something changes by itself: delays and timeouts ending, retention, the purge rule. */
  deadlines(now: number): number[] {
    this.tick(now);
    const out = [this.lastPurgeAt + PURGE_INTERVAL_MS];
    for (const m of this.live()) {
      out.push(m.visibleAt, m.sentAt + this.retentionMs);
      if (m.receiveCount > 0) out.push(m.lastReceiveAt + MAX_VISIBILITY_MS);
    }
    return out.filter((t) => Number.isFinite(t) && t > now);
  }
}

// ---- one random run ---------------------------------------------------------------------------

type Op = 'send' | 'receive' | 'delete' | 'visibility' | 'purge' | 'advance' | 'attributes';

const OPS: Readonly<Record<Op, number>> = {
  send: 24,
  receive: 20,
  delete: 14,
  visibility: 12,
  advance: 22,
  purge: 3,
  attributes: 5,
};

function run(seed: number, steps: number): void {
  const { rng, clock, store, delay, visibility, retention, attributes } = modelWorld(seed);
  const q = store.create(
    { accountId: ACCOUNT, region: 'us-east-1', name: `model-${seed}` },
    attributes,
    {},
  ).queue;
  const model = new Model(coverage, delay * S, visibility * S, retention * S);

  const foreign = foreignHandle(store, clock, `other-${seed}`, null);

  let sent = 0;
  runSteps({
    env: 'MODEL',
    seed,
    steps,
    clock,
    ops: OPS,
    target: { rng, model, q, foreign },
    odds: { delete: { older: 0.35, bogus: 0.08 }, visibility: { older: 0.2, bogus: 0.08, atLimit: 0.3 } },
    header: `queue DelaySeconds=${delay} VisibilityTimeout=${visibility} Retention=${retention}`,
    act: (op, s) => {
      const { now } = s;
      switch (op) {
        case 'send': {
          const n = rng.chance(0.7) ? 1 : rng.int(2, 6);
          const ids: string[] = [];
          for (let i = 0; i < n; i++) {
            const id = `m${++sent}`;
            const delaySeconds = rng.chance(0.5) ? undefined : randomDelaySeconds(rng);
            const body = `body-${seed}-${sent}-${rng.int(0, 1e6)}`;
            const stored = sendOne(q, msg(body, { id, delaySeconds }), now);
            assert.equal(stored.id, id, s.where);
            model.send(id, body, delaySeconds, now);
            const d = delaySeconds ?? model.delayMs / S;
            coverage.hit(
              `send: ${d > 0 ? 'delayed' : 'not delayed'} by ${delaySeconds === undefined ? 'the queue' : 'the message'}`,
            );
            ids.push(`${id}${delaySeconds === undefined ? '' : `+${delaySeconds}s`}`);
          }
          s.note(`send ${ids.join(' ')}`);
          break;
        }
        case 'receive': {
          const max = rng.int(1, 10);
          const vtSeconds = rng.chance(0.4) ? undefined : randomVisibilitySeconds(rng);
          const vtMs = vtSeconds === undefined ? undefined : vtSeconds * S;
          const receivable = model.receivable(now);
          if (receivable.size > max) coverage.hit('receive: more visible than max');
          else if (receivable.size > 0) coverage.hit('receive: every visible message');
          else if (model.live().length > 0) coverage.hit('receive: none visible, some delayed or in flight');
          const got = q.receive(max, vtMs, now);
          const ids = got.map((m) => m.id);
          s.note(`receive max=${max} vt=${vtSeconds ?? 'default'} -> [${ids.join(' ')}]`);
          assert.equal(
            got.length,
            Math.min(max, receivable.size),
            `${s.where}: ${got.length} messages, of ${receivable.size} visible`,
          );
          assert.equal(new Set(ids).size, ids.length, `${s.where}: a message returned twice`);
          for (const id of ids) {
            assert.ok(
              receivable.has(id),
              `${s.where}: ${id} returned but the model has it ${
                model.messages.some((m) => m.id === id)
                  ? (model.find(id).gone ?? model.state(model.find(id), now))
                  : 'unknown'
              }`,
            );
          }
          // Read the handles now: a later receive gives the message a new one.
          model.received(
            got.map((m) => ({ id: m.id, handle: q.receiptHandle(m) })),
            vtMs,
            now,
          );
          for (const m of got) {
            const expected = model.find(m.id);
            assertReceivedAsModelled(s, m, expected);
          }
          break;
        }
        case 'advance': {
          const deadlines = model.deadlines(now);
          const { ms, hit } = randomAdvance(
            rng,
            now,
            new Map(deadlines.length > 0 ? [['deadline', deadlines]] : []),
            {
              deadlineWeight: 5,
              maxMinutes: 60,
            },
          );
          if (hit !== undefined) coverage.hit(`advance: to a deadline ${hit.side}`);
          clock.advance(ms);
          s.note(`advance ${ms} ms`);
          break;
        }
        case 'attributes': {
          const name = rng.pick(TIMING_ATTRIBUTES);
          const value = timingAttribute(rng, name, model);
          store.setAttributes(q, { [name]: value });
          s.note(`set ${name}=${value}`);
          break;
        }
      }
    },
    check: (s, last) => {
      compareQueue(s, last, q, clock.now(), model, () => ({}));
    },
  });
}

const EXPECTED_RULES = [
  ...QUEUE_MODEL_RULES,
  'send: delayed by the queue',
  'send: delayed by the message',
  'send: not delayed by the queue',
  'send: not delayed by the message',
  'receive: first',
  'receive: again',
  'receive: visibility 0',
  'receive: more visible than max',
  'receive: every visible message',
  'receive: none visible, some delayed or in flight',
  'expired while visible',
  'expired while inflight',
  'expired while delayed',
  'delete: latest handle of a inflight message',
  'delete: latest handle of a visible message',
  'delete: older handle of a inflight message',
  'delete: older handle of a visible message',
  'visibility: latest handle of a inflight message',
  'visibility: latest handle of a visible message',
  'visibility: older handle of a inflight message',
  'visibility: older handle of a visible message',
  'advance: to a deadline exactly',
  'advance: to a deadline minus 1 ms',
  'advance: to a deadline plus 1 ms',
];

modelTests({
  runs: RUNS,
  on: 'a standard queue',
  against: 'the model of the SQS rules',
  coverage,
  rules: EXPECTED_RULES,
  run,
});
