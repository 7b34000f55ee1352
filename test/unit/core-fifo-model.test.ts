/**
 * Model-based test of FIFO queues: seeded random operations run against the core (a FIFO Queue,
 * through a QueueStore on a ManualClock) and against a deliberately plain reference model of the
 * FIFO rules as AWS documents them, compared after every step. The sibling of core-model.test.ts
 * (standard queues), with the same conventions.
 *
 * The model is a list of every message ever sent, in send order, with its group, deduplication id,
 * timestamps, receive count and receipt handles; its state follows from the clock alone (gone;
 * else delayed or in flight while now < visibleAt; else visible). On top of it:
 *   - Groups. A group is its live messages in send order. Its eligible messages are the leading
 *     visible ones: the first message in flight holds back the ones after it, not the ones before
 *     it (AWS, recorded), and so does a delayed one (as docs/compatibility.md declares for
 *     DelaySeconds). Every receive is first checked against the AWS rules alone: each returned
 *     message is the next one of its group in send order (only messages the core moved to the
 *     dead-letter queue in that call may be skipped), visible, and nothing comes back when no group
 *     has an eligible message. Then the exact result is compared with the core's documented choice
 *     (docs/compatibility.md, "FIFO queues"): groups in the order they became receivable (readyAt: the
 *     later of the moment their first message became visible and the moment the message before it
 *     left while in flight, AWS's recorded order; ties by their first message's send order), as
 *     many of each one's eligible messages as `max` allows, then the next group; so a receive
 *     returns min(max, the eligible messages it does not move to the dead-letter queue).
 *   - Deduplication. A list of (scope, group, deduplication id, time, MessageId, SequenceNumber):
 *     a send whose id (explicit, else the body's SHA-256 with ContentBasedDeduplication) was seen
 *     under the current DeduplicationScope (queue: anywhere; messageGroup: in its group) less than
 *     5 minutes ago is accepted, stores nothing and answers the original MessageId and
 *     SequenceNumber, even if that message is gone (deleted, expired, dead-lettered: the window
 *     survives them, docs/compatibility.md). A purge drops the records (AWS, recorded): the same id
 *     sent after it is a new message. A change of DeduplicationScope applies to sends from 60 s
 *     after it was made; until then the scope before it does (AWS, recorded).
 *   - SequenceNumber: 20 digits, increasing per queue (and in the dead-letter queue).
 *   - ReceiveRequestAttemptId (implemented by the core, so modelled): a retry within 5 minutes of
 *     the receive returns the same messages and receipt handles and starts their visibility timeout
 *     again, as long as none of them was deleted, had its visibility changed (AWS: "if none of the
 *     messages have been modified (deleted or had their visibility changes)") or became visible
 *     again; otherwise the retry is a new receive, whose (non-empty) result later retries get. A
 *     purge drops the records (docs/compatibility.md). Records are per queue, not per caller.
 *   - DeleteMessage (FIFO, docs/compatibility.md): only the current handle of an in-flight message;
 *     another handle of a live message is InvalidParameterValue; the handle of a message that is
 *     gone succeeds and changes nothing (as a repeated DeleteMessage does on AWS).
 *     ChangeMessageVisibility, PurgeQueue (one per 60 s) and retention (now >= sentAt + the
 *     current MessageRetentionPeriod) as in core-model.test.ts.
 *   - DelaySeconds: the queue's, at the time of the send. A per-message DelaySeconds other than 0
 *     is refused before the core (src/sqs/actions/send.ts); 0 is accepted and changes nothing
 *     (the queue's delay still applies), so the model sends 0 sometimes and nothing else.
 *   - Redrive (half of the seeds): a message already received maxReceiveCount times is moved to
 *     the FIFO dead-letter queue by the receive that reaches it, instead of being delivered (same
 *     id, body, group and receive count, its id as deduplication id, a new SequenceNumber, its
 *     retention counted from the move), and that receive goes on with the next message.
 *
 * Every so often the whole state is compared: each live message (group, deduplication id,
 * SequenceNumber, state, receive count, deadline), the number of groups, of deduplication and of
 * attempt records inside their 5 minutes, and the dead-letter queue's messages.
 *
 * One divergence found, now fixed: a ChangeMessageVisibility that left the deadline where it was
 * did not stop a retry from replaying (the test at the end). The random runs rarely reach it.
 *
 * Replay one seed: FIFO_MODEL_SEED=<seed> [FIFO_MODEL_STEPS=<n>] node --import tsx --test test/unit/core-fifo-model.test.ts
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { ManualClock } from '../../src/core/clock.js';
import type { CoreErrorCode } from '../../src/core/errors.js';
import type { Message } from '../../src/core/message.js';
import type { SendResult } from '../../src/core/queue.js';
import { QueueStore } from '../../src/core/store.js';
import { inGroup, msg } from '../support/queue.js';
import { randomVisibilitySeconds } from '../support/rng.js';
import {
  ACCOUNT,
  compareQueue,
  Coverage,
  coreOutcome,
  foreignHandle,
  modelWorld,
  assertReceivedAsModelled,
  isOutcome,
  type LiveState,
  MAX_VISIBILITY_MS,
  MIN,
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
  type Snapshot as BaseSnapshot,
  TIMING_ATTRIBUTES,
  timingAttribute,
} from '../support/model.js';

/** AWS: the deduplication interval is 5 minutes. */
const DEDUP_WINDOW_MS = 5 * MIN;
/** A DeduplicationScope change applies to deduplication 60 s after it is made (AWS, recorded). */
const SCOPE_CHANGE_DELAY_MS = 60 * S;
/** AWS: a ReceiveRequestAttemptId can be retried for 5 minutes. */
const ATTEMPT_WINDOW_MS = 5 * MIN;
/** The dead-letter queue keeps the default MessageRetentionPeriod, 4 days. */
const DLQ_RETENTION_MS = 345_600 * S;

const RUNS = modelRuns('FIFO_MODEL', { base: 0xf1f0, count: 50, steps: 400 });

// ---- what the runs exercised ------------------------------------------------------------------

const coverage = new Coverage();

// ---- the reference model ----------------------------------------------------------------------

type Scope = 'queue' | 'messageGroup';
type Gone = 'deleted' | 'purged' | 'expired' | 'dead-lettered';

interface ModelMessage extends BaseMessage {
  readonly group: string;
  readonly dedupId: string;
  readonly sequenceNumber: string;
  /** Successful ChangeMessageVisibility calls on it: a ReceiveRequestAttemptId record notes them. */
  visibilityChanges: number;
  gone: Gone | null;
  /**
   * Set when it went (deleted, expired) while in flight as the first live message of its group:
   * that moment, when the next one's turn began.
   */
  leftFirstAt: number | null;
}

interface DedupRecord {
  readonly scope: Scope;
  readonly group: string;
  readonly dedupId: string;
  /** The deduplication id was the body's SHA-256 (ContentBasedDeduplication). */
  readonly byContent: boolean;
  readonly at: number;
  readonly messageId: string;
  readonly sequenceNumber: string;
}

interface AttemptEntry {
  readonly id: string;
  readonly handle: string;
  readonly visibilityChanges: number;
}

interface AttemptRecord {
  readonly at: number;
  readonly entries: readonly AttemptEntry[];
}

interface DeadLetter {
  readonly id: string;
  readonly body: string;
  readonly group: string;
  readonly receiveCount: number;
  readonly firstReceiveAt: number;
  readonly movedAt: number;
  gone: boolean;
}

/** A group as a receive finds it: its live messages in send order, with their states then. */
interface GroupView {
  readonly live: ReadonlyArray<{ readonly m: ModelMessage; readonly state: LiveState }>;
  /** What a receive may take from it: its leading visible messages. */
  readonly run: readonly ModelMessage[];
}

/** What a receive must return. */
interface ReceivePlan {
  /** A retried ReceiveRequestAttemptId: the same messages and handles as the record's. */
  readonly replay: AttemptRecord | null;
  readonly deliver: readonly ModelMessage[];
  readonly deadLettered: readonly ModelMessage[];
}

type SendPlan =
  { readonly error: CoreErrorCode } | { readonly duplicateOf: DedupRecord } | { readonly dedupId: string };

/** FIFO messages are compared on their group, deduplication id and sequence number too. */
function fifoFields(m: Pick<Message, 'groupId' | 'deduplicationId' | 'sequenceNumber'>): {
  group: string | undefined;
  dedupId: string | undefined;
  sequenceNumber: string | undefined;
} {
  return { group: m.groupId, dedupId: m.deduplicationId, sequenceNumber: m.sequenceNumber };
}

type Snapshot = BaseSnapshot & ReturnType<typeof fifoFields>;

function sha256(body: string): string {
  return createHash('sha256').update(body, 'utf8').digest('hex');
}

class Model extends QueueModel<ModelMessage> {
  /** Every deduplication record ever made; those older than 5 minutes no longer count. */
  readonly dedup: DedupRecord[] = [];
  readonly attempts = new Map<string, AttemptRecord>();
  /** The DeduplicationScope changes, oldest first: each applies from 60 s after it was made. */
  private readonly scopeChanges: Array<{ readonly at: number; readonly scope: Scope }> = [];
  /** Deduplication ids whose record a purge dropped (for coverage only). */
  private readonly purgedDedupIds = new Set<string>();
  /** Attempt ids whose record a purge dropped (for coverage only). */
  private readonly purgedAttempts = new Set<string>();
  /** The dead-letter queue's messages, in the order they were moved. */
  readonly deadLetters: DeadLetter[] = [];

  constructor(
    delayMs: number,
    visibilityMs: number,
    retentionMs: number,
    public contentBased: boolean,
    /** The DeduplicationScope attribute (setScope); what deduplication uses is scopeAt. */
    public scope: Scope,
    readonly maxReceiveCount: number | null,
  ) {
    super(coverage, delayMs, visibilityMs, retentionMs);
    this.initialScope = scope;
  }

  private readonly initialScope: Scope;

  /** The attribute set to `scope` at `now` (a change when it differs from the latest value). */
  setScope(scope: Scope, now: number): void {
    if (scope === this.scope) return;
    this.scope = scope;
    this.scopeChanges.push({ at: now, scope });
  }

  /** The scope deduplication uses at `now`: that of the latest change made 60 s before or earlier. */
  scopeAt(now: number): Scope {
    let scope = this.initialScope;
    for (const c of this.scopeChanges) if (c.at + SCOPE_CHANGE_DELAY_MS <= now) scope = c.scope;
    return scope;
  }

  /** Retention: a message is gone once now >= sentAt + the queue's (current) retention period. */
  tick(now: number): void {
    for (const m of this.messages) {
      if (m.gone === null && now >= m.sentAt + this.retentionMs) {
        const state = this.state(m, now);
        const first = this.view(m.group, now).live[0]?.m === m;
        m.gone = 'expired';
        if (state === 'inflight' && first) m.leftFirstAt = m.sentAt + this.retentionMs;
        coverage.hit(`expired while ${state}`);
        const v = this.view(m.group, now);
        if (state === 'inflight' && v.run.length > 0) coverage.hit('expired: the next of its group eligible');
      }
    }
    for (const d of this.deadLetters) if (!d.gone && now >= d.movedAt + DLQ_RETENTION_MS) d.gone = true;
  }

  groupIds(): string[] {
    return [...new Set(this.live().map((m) => m.group))];
  }

  /** One group as a receive would find it now (no tick: callers do it). */
  view(group: string, now: number): GroupView {
    const live = this.messages
      .filter((m) => m.gone === null && m.group === group)
      .map((m) => ({ m, state: this.state(m, now) }));
    const run: ModelMessage[] = [];
    for (const x of live) {
      if (x.state !== 'visible') break;
      run.push(x.m);
    }
    return { live, run };
  }

  /**
   * When a receivable group became receivable (docs/compatibility.md, "FIFO queues"): the later of the
   * moment its first message became visible and the last moment a first message of the group left
   * while in flight (deleted or expired). A purge starts its groups anew.
   */
  readyAt(v: GroupView): number {
    const head = v.live[0]?.m;
    if (head === undefined) throw new Error('readyAt of an empty group');
    let at = head.visibleAt;
    for (const m of this.messages) {
      if (m.group === head.group && m.gone !== 'purged' && m.leftFirstAt !== null)
        at = Math.max(at, m.leftFirstAt);
    }
    return at;
  }

  /** Every group with live messages, the one whose first live message is oldest first. */
  views(now: number): Map<string, GroupView> {
    this.tick(now);
    const out = new Map<string, GroupView>();
    for (const g of this.groupIds()) out.set(g, this.view(g, now));
    return out;
  }

  override snapshot(now: number): Snapshot[] {
    this.tick(now);
    return this.live().map((m) => ({
      ...this.snapshotOf(m, now),
      group: m.group,
      dedupId: m.dedupId,
      sequenceNumber: m.sequenceNumber,
    }));
  }

  liveDeadLetters(now: number): DeadLetter[] {
    this.tick(now);
    return this.deadLetters.filter((d) => !d.gone);
  }

  /** Deduplication records still inside their 5 minutes. */
  liveDedupRecords(now: number): number {
    return this.dedup.filter((r) => now < r.at + DEDUP_WINDOW_MS).length;
  }

  liveAttemptRecords(now: number): number {
    return [...this.attempts.values()].filter((r) => now < r.at + ATTEMPT_WINDOW_MS).length;
  }

  /**
   * A send: MissingParameter without a group; InvalidParameterValue without a deduplication id
   * unless ContentBasedDeduplication; a duplicate when its id was seen under the current scope in
   * the last 5 minutes; else a new message (stored by `stored`, with the core's SequenceNumber).
   */
  send(group: string | undefined, explicit: string | undefined, body: string, now: number): SendPlan {
    this.tick(now);
    if (group === undefined) {
      coverage.hit('send: no MessageGroupId');
      return { error: 'MissingParameter' };
    }
    if (explicit === undefined && !this.contentBased) {
      coverage.hit('send: no deduplication id, no content-based deduplication');
      return { error: 'InvalidParameterValue' };
    }
    const dedupId = explicit ?? sha256(body);
    const sameId = this.dedup.filter((r) => r.dedupId === dedupId);
    const scope = this.scopeAt(now);
    if (scope !== this.scope)
      coverage.hit('send: within 60 s of a DeduplicationScope change: the scope before it');
    const matches = (r: DedupRecord): boolean =>
      r.scope === scope && (scope === 'queue' || r.group === group);
    const seen = sameId.find((r) => now < r.at + DEDUP_WINDOW_MS && matches(r));
    if (seen !== undefined) {
      coverage.hit(explicit === undefined ? 'send: duplicate by content' : 'send: duplicate by explicit id');
      if (explicit !== undefined && seen.byContent)
        coverage.hit('send: explicit id equal to an earlier body hash');
      const original = this.byId.get(seen.messageId);
      coverage.hit(`send: duplicate of a ${original?.gone ?? 'live'} message`);
      if (seen.group !== group) coverage.hit('send: duplicate from another group (scope queue)');
      if (now === seen.at + DEDUP_WINDOW_MS - 1) coverage.hit('send: duplicate 1 ms before the window ends');
      return { duplicateOf: seen };
    }
    if (this.purgedDedupIds.has(dedupId)) coverage.hit('send: same id after a purge: new');
    if (sameId.some((r) => matches(r) && now === r.at + DEDUP_WINDOW_MS))
      coverage.hit('send: same id exactly when the window ends: new');
    else if (sameId.some(matches)) coverage.hit('send: same id after the window: new');
    if (sameId.some((r) => now < r.at + DEDUP_WINDOW_MS && r.scope === 'messageGroup' && r.group !== group))
      if (scope === 'messageGroup') coverage.hit('send: same id in another group (scope messageGroup): new');
    if (sameId.some((r) => now < r.at + DEDUP_WINDOW_MS && r.scope !== scope))
      coverage.hit('send: same id under the other DeduplicationScope: new');
    return { dedupId };
  }

  /** A new message the core stored; it waits for the queue's delay at the time of the send. */
  stored(
    id: string,
    body: string,
    group: string,
    dedupId: string,
    byContent: boolean,
    seq: string,
    now: number,
  ): void {
    const m: ModelMessage = {
      id,
      body,
      group,
      dedupId,
      sequenceNumber: seq,
      sentAt: now,
      visibleAt: now + this.delayMs,
      receiveCount: 0,
      firstReceiveAt: 0,
      lastReceiveAt: 0,
      handles: [],
      visibilityChanges: 0,
      gone: null,
      leftFirstAt: null,
    };
    this.add(m);
    this.dedup.push({
      scope: this.scopeAt(now),
      group,
      dedupId,
      byContent,
      at: now,
      messageId: id,
      sequenceNumber: seq,
    });
  }

  /** Why an attempt record no longer holds, or null when a retry may replay it. */
  private broken(rec: AttemptRecord, now: number): string | null {
    for (const e of rec.entries) {
      const m = this.find(e.id);
      if (m.gone !== null) return `one was ${m.gone}`;
      if (m.visibilityChanges !== e.visibilityChanges) return 'its visibility was changed';
      if (this.state(m, now) !== 'inflight' || m.handles[m.handles.length - 1] !== e.handle)
        return 'one became visible again';
    }
    return null;
  }

  /**
   * A receive: a retried attempt id whose record holds replays it; otherwise the groups with an
   * eligible message, in the order they became receivable (readyAt), each as far as `max` allows; a message received
   * maxReceiveCount times already goes to the dead-letter queue instead, and the walk goes on.
   */
  receive(
    max: number,
    visibilityMs: number | undefined,
    attemptId: string | undefined,
    now: number,
  ): ReceivePlan {
    this.tick(now);
    const vt = visibilityMs ?? this.visibilityMs;
    if (attemptId !== undefined) {
      const rec = this.attempts.get(attemptId);
      if (rec !== undefined && now < rec.at + ATTEMPT_WINDOW_MS) {
        const why = this.broken(rec, now);
        if (why === null) {
          coverage.hit('attempt: retried, same messages');
          if (now === rec.at + ATTEMPT_WINDOW_MS - 1)
            coverage.hit('attempt: retried 1 ms before its 5 minutes end');
          if (vt === 0) coverage.hit('attempt: retried with visibility 0');
          // "If a retry occurs within the deduplication interval, it resets the visibility timeout."
          for (const e of rec.entries) this.find(e.id).visibleAt = now + vt;
          return { replay: rec, deliver: [], deadLettered: [] };
        }
        coverage.hit(`attempt: retried after ${why}`);
        this.attempts.delete(attemptId);
      } else if (rec !== undefined) {
        coverage.hit(
          now === rec.at + ATTEMPT_WINDOW_MS
            ? 'attempt: retried exactly when its 5 minutes end'
            : 'attempt: retried after its 5 minutes',
        );
        this.attempts.delete(attemptId);
      } else if (this.purgedAttempts.has(attemptId)) {
        coverage.hit('attempt: retried after a purge');
      } else {
        coverage.hit('attempt: first use');
      }
    }
    const views = [...this.views(now).values()]
      .filter((v) => v.run.length > 0)
      .map((v) => ({
        v,
        at: this.readyAt(v),
        first: this.messages.indexOf(v.live[0]?.m as ModelMessage),
      }))
      .sort((a, b) => a.at - b.at || a.first - b.first)
      .map((x) => x.v);
    if (
      views.length > 1 &&
      views[0]?.live[0] !== [...this.views(now).values()].find((v) => v.run.length > 0)?.live[0]
    )
      coverage.hit('receive: a group that came back waits behind older waiting groups');
    const deliver: ModelMessage[] = [];
    const deadLettered: ModelMessage[] = [];
    for (const v of views) {
      if (deliver.length >= max) break;
      for (const m of v.run) {
        if (deliver.length >= max) break;
        if (this.maxReceiveCount !== null && m.receiveCount >= this.maxReceiveCount) {
          m.gone = 'dead-lettered';
          deadLettered.push(m);
          this.deadLetters.push({
            id: m.id,
            body: m.body,
            group: m.group,
            receiveCount: m.receiveCount,
            firstReceiveAt: m.firstReceiveAt,
            movedAt: now,
            gone: false,
          });
          coverage.hit('receive: dead-lettered');
          if (v.run.indexOf(m) < v.run.length - 1)
            coverage.hit('receive: dead-lettered, the next of its group goes on');
          continue;
        }
        if (m.receiveCount > 0 && v.run.indexOf(m) < v.run.length - 1 && deliver.length + 1 < max)
          coverage.hit('receive: redelivered before the later messages of its group');
        m.receiveCount++;
        if (m.firstReceiveAt === 0) m.firstReceiveAt = now;
        m.lastReceiveAt = now;
        // A timeout of 0 leaves it visible (and its group eligible).
        m.visibleAt = now + vt;
        deliver.push(m);
      }
    }
    if (vt === 0 && deliver.length > 0) coverage.hit('receive: visibility 0');
    return { replay: null, deliver, deadLettered };
  }

  /** The handles the core gave a new receive; with an attempt id, what its retries get. */
  handed(
    got: ReadonlyArray<{ id: string; handle: string }>,
    attemptId: string | undefined,
    now: number,
  ): void {
    for (const { id, handle } of got) {
      const m = this.find(id);
      m.handles.push(handle);
      this.byHandle.set(handle, m);
    }
    if (attemptId !== undefined && got.length > 0) {
      this.purgedAttempts.delete(attemptId);
      this.attempts.set(attemptId, {
        at: now,
        entries: got.map(({ id, handle }) => ({
          id,
          handle,
          visibilityChanges: this.find(id).visibilityChanges,
        })),
      });
    }
  }

  /**
   * FIFO: only the current handle of an in-flight message deletes it; any other handle of a live
   * message is InvalidParameterValue; a handle of a message that is gone succeeds and changes
   * nothing; a handle this queue never gave is ReceiptHandleIsInvalid.
   */
  delete(handle: string, now: number): Outcome {
    const m = this.lookup(handle, now, 'delete');
    if (isOutcome(m)) return m;
    const latest = m.handles[m.handles.length - 1] === handle;
    const state = this.state(m, now);
    if (!latest || state !== 'inflight') {
      coverage.hit(`delete: ${latest ? 'current' : 'older'} handle of a ${state} message`);
      return { error: 'InvalidParameterValue' };
    }
    coverage.hit('delete: current handle of an inflight message');
    const first = this.view(m.group, now).live[0]?.m === m;
    m.gone = 'deleted';
    if (first) {
      m.leftFirstAt = now;
      if (this.view(m.group, now).run.length > 0) coverage.hit('delete: the next of its group eligible');
    } else {
      coverage.hit('delete: not the first of its group');
    }
    return OK;
  }

  /**
   * Only the current handle of a message in flight; the new timeout counts from now and may not end
   * more than 12 h after the receive. Another handle, or the handle of a message that is gone, is
   * InvalidParameterValue; the current handle of a message that is visible again is
   * MessageNotInflight.
   */
  changeVisibility(handle: string, timeoutMs: number, now: number): Outcome {
    const m = this.lookup(handle, now, 'visibility');
    if (isOutcome(m)) return m;
    if (m.handles[m.handles.length - 1] !== handle) {
      coverage.hit(`visibility: older handle of a ${this.state(m, now)} message`);
      return { error: 'InvalidParameterValue' };
    }
    if (this.state(m, now) !== 'inflight') {
      coverage.hit('visibility: message not in flight');
      return { error: 'MessageNotInflight' };
    }
    const outcome = this.setVisibility(m, timeoutMs, now);
    if (!('ok' in outcome)) return outcome;
    m.visibilityChanges++;
    if (timeoutMs === 0) {
      coverage.hit(
        this.view(m.group, now).run[0] === m
          ? 'visibility: 0 on the first of its group: eligible'
          : 'visibility: 0 behind an earlier message of its group',
      );
    }
    return OK;
  }

  /** Every message goes, and the attempt and deduplication records. Once per 60 s. */
  purge(now: number): Outcome {
    const refused = this.purgeOrRefuse(now);
    if (refused !== null) return refused;
    for (const id of this.attempts.keys()) this.purgedAttempts.add(id);
    for (const r of this.dedup) if (now < r.at + DEDUP_WINDOW_MS) this.purgedDedupIds.add(r.dedupId);
    this.dedup.length = 0;
    this.attempts.clear();
    return OK;
  }

  /** The moments something changes by itself, by kind: where the advances like to land. */
  deadlines(now: number): Map<string, number[]> {
    this.tick(now);
    const out = new Map<string, number[]>();
    const add = (kind: string, t: number): void => {
      if (!Number.isFinite(t) || t <= now) return;
      let list = out.get(kind);
      if (list === undefined) out.set(kind, (list = []));
      list.push(t);
    };
    add('purge rule', this.lastPurgeAt + PURGE_INTERVAL_MS);
    for (const m of this.live()) {
      add('visibility', m.visibleAt);
      add('retention', m.sentAt + this.retentionMs);
      if (m.receiveCount > 0) add('12 h limit', m.lastReceiveAt + MAX_VISIBILITY_MS);
    }
    for (const d of this.deadLetters) if (!d.gone) add('retention', d.movedAt + DLQ_RETENTION_MS);
    for (const r of this.dedup) add('dedup window', r.at + DEDUP_WINDOW_MS);
    for (const r of this.attempts.values()) add('attempt window', r.at + ATTEMPT_WINDOW_MS);
    for (const c of this.scopeChanges) add('scope change', c.at + SCOPE_CHANGE_DELAY_MS);
    return out;
  }
}

/**
 * The AWS rules alone, before the exact comparison: each returned message is the next of its
 * group in send order (skipping only messages the core moved to the dead-letter queue in this
 * call, so never one in flight or delayed) and was visible; nothing comes back when no group had
 * an eligible message.
 */
function checkFifoRules(
  before: Map<string, GroupView>,
  got: readonly Message[],
  deadLettered: ReadonlySet<string>,
  max: number,
  where: string,
): void {
  assert.ok(got.length <= max, `${where}: ${got.length} messages for max ${max}`);
  const eligible = [...before.values()].reduce((n, v) => n + v.run.length, 0);
  if (eligible === 0)
    assert.deepEqual(
      got.map((m) => m.id),
      [],
      `${where}: returned messages while none was eligible`,
    );
  const next = new Map<string, number>();
  for (const m of got) {
    const group = m.groupId ?? '';
    const v = before.get(group);
    assert.ok(v !== undefined, `${where}: ${m.id} returned from group ${group}, which had no live message`);
    const from = next.get(group) ?? 0;
    const i = v.live.findIndex((x, k) => k >= from && x.m.id === m.id);
    assert.ok(
      i >= 0,
      `${where}: ${m.id} returned, not a live message of group ${group} after [${v.live
        .slice(0, from)
        .map((x) => x.m.id)
        .join(' ')}]`,
    );
    for (const skipped of v.live.slice(from, i)) {
      assert.ok(
        skipped.state === 'visible' && deadLettered.has(skipped.m.id),
        `${where}: ${m.id} returned ahead of ${skipped.m.id} (${skipped.state}) of its group ${group}`,
      );
    }
    const x = v.live[i] as GroupView['live'][number];
    assert.equal(x.state, 'visible', `${where}: ${m.id} returned while ${x.state}`);
    next.set(group, i + 1);
  }
}

// ---- one random run ---------------------------------------------------------------------------

type Op = 'send' | 'receive' | 'delete' | 'visibility' | 'purge' | 'advance' | 'attributes';

const OPS: Readonly<Record<Op, number>> = {
  send: 24,
  receive: 22,
  delete: 14,
  visibility: 10,
  advance: 22,
  purge: 3,
  attributes: 4,
};

/** Bodies that repeat, so ContentBasedDeduplication finds duplicates. */
const BODY_POOL = 12;

function run(seed: number, steps: number): void {
  const { rng, clock, store, delay, visibility, retention, attributes } = modelWorld(seed);
  const groups = Array.from({ length: rng.int(2, 6) }, (_, i) => `g${i}`);
  const contentBased = rng.chance(0.5);
  const scope: Scope = rng.chance(0.5) ? 'queue' : 'messageGroup';
  const maxReceiveCount = rng.chance(0.5) ? rng.int(1, 4) : null;
  const dlq = store.create(
    { accountId: ACCOUNT, region: 'us-east-1', name: `dlq-${seed}.fifo` },
    { FifoQueue: 'true' },
    {},
  ).queue;
  const q = store.create(
    { accountId: ACCOUNT, region: 'us-east-1', name: `model-${seed}.fifo` },
    {
      FifoQueue: 'true',
      ...attributes,
      ContentBasedDeduplication: String(contentBased),
      DeduplicationScope: scope,
      ...(maxReceiveCount === null
        ? {}
        : { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount }) }),
    },
    {},
  ).queue;
  const model = new Model(delay * S, visibility * S, retention * S, contentBased, scope, maxReceiveCount);

  const foreign = foreignHandle(store, clock, `other-${seed}`, inGroup('g0', 'x'));

  let sent = 0;
  let lastSequence = 0n;
  let lastDlqSequence = 0n;
  runSteps({
    env: 'FIFO_MODEL',
    seed,
    steps,
    clock,
    ops: OPS,
    target: { rng, model, q, foreign },
    odds: { delete: { older: 0.3, bogus: 0.06 }, visibility: { older: 0.2, bogus: 0.06, atLimit: 0.25 } },
    header: `queue groups=${groups.length} DelaySeconds=${delay} VisibilityTimeout=${visibility} Retention=${retention} ContentBasedDeduplication=${contentBased} DeduplicationScope=${scope} maxReceiveCount=${maxReceiveCount ?? '-'}`,
    act: (op, s) => {
      const { now } = s;
      switch (op) {
        case 'send': {
          const n = rng.chance(0.7) ? 1 : rng.int(2, 5);
          const parts: string[] = [];
          for (let i = 0; i < n; i++) {
            const id = `m${++sent}`;
            const group = rng.chance(0.02) ? undefined : rng.pick(groups);
            const body = rng.chance(0.5) ? `body-${rng.int(0, BODY_POOL - 1)}` : `body-${seed}-${sent}`;
            let explicit: string | undefined;
            if (rng.chance(model.contentBased ? 0.5 : 0.97)) {
              explicit = rng.chance(0.1) ? sha256(`body-${rng.int(0, BODY_POOL - 1)}`) : `d${rng.int(0, 24)}`;
            }
            // A per-message DelaySeconds of 0 is the only one that reaches a FIFO queue's core.
            const delaySeconds = rng.chance(0.2) ? 0 : undefined;
            if (delaySeconds === 0 && model.delayMs > 0)
              coverage.hit('send: DelaySeconds 0 with a queue delay');
            const plan = model.send(group, explicit, body, now);
            const part = `${id}[${group ?? 'no group'} ${explicit === undefined ? 'content' : explicit.slice(0, 8)} ${body}]`;
            const message = msg(body, { id, groupId: group, deduplicationId: explicit, delaySeconds });
            let result: SendResult | undefined;
            const actual = coreOutcome(() => {
              result = q.sendMessage(message, now);
            });
            if ('error' in plan) {
              parts.push(`${part} -> ${plan.error}`);
              s.note(`send ${parts.join(' ')}`);
              assert.deepEqual(actual, { error: plan.error }, `${s.where}: outcome of ${id}`);
              continue;
            }
            assert.deepEqual(actual, OK, `${s.where}: outcome of ${id}`);
            const r = result as SendResult;
            if ('duplicateOf' in plan) {
              parts.push(`${part} -> duplicate of ${plan.duplicateOf.messageId}`);
              s.note(`send ${parts.join(' ')}`);
              assert.ok(
                r.message === undefined,
                `${s.where}: ${id} stored, but it duplicates ${plan.duplicateOf.messageId}`,
              );
              assert.equal(
                r.messageId,
                plan.duplicateOf.messageId,
                `${s.where}: MessageId of the duplicate ${id}`,
              );
              assert.equal(
                r.sequenceNumber,
                plan.duplicateOf.sequenceNumber,
                `${s.where}: SequenceNumber of the duplicate ${id}`,
              );
              continue;
            }
            parts.push(part);
            s.note(`send ${parts.join(' ')}`);
            assert.ok(r.message !== undefined, `${s.where}: ${id} not stored (answered as ${r.messageId})`);
            assert.equal(r.messageId, id, `${s.where}: MessageId of ${id}`);
            const seq = r.sequenceNumber ?? '';
            assert.match(seq, /^\d{20}$/, `${s.where}: SequenceNumber of ${id}`);
            assert.ok(
              BigInt(seq) > lastSequence,
              `${s.where}: SequenceNumber ${seq} of ${id} not above ${lastSequence}`,
            );
            lastSequence = BigInt(seq);
            model.stored(id, body, group as string, plan.dedupId, explicit === undefined, seq, now);
            coverage.hit(model.delayMs > 0 ? 'send: new, delayed by the queue' : 'send: new, not delayed');
          }
          break;
        }
        case 'receive': {
          const max = rng.int(1, 10);
          // Often a retry of an attempt id that has a record (most often one whose 5 minutes end
          // about now); else one of a few, so they come back.
          const recorded = [...model.attempts.keys()];
          const due = recorded.filter((id) => {
            const r = model.attempts.get(id);
            return r !== undefined && Math.abs(r.at + ATTEMPT_WINDOW_MS - now) <= 1;
          });
          const attemptId = !rng.chance(due.length > 0 ? 0.9 : 0.45)
            ? undefined
            : due.length > 0
              ? rng.pick(due)
              : recorded.length > 0 && rng.chance(0.6)
                ? rng.pick(recorded)
                : `attempt-${rng.int(0, 3)}`;
          // A consumer that retries by attempt id sometimes asks for more than the 5 minutes.
          const vtSeconds =
            attemptId !== undefined && rng.chance(0.3)
              ? rng.int(301, 3600)
              : rng.chance(0.4)
                ? undefined
                : randomVisibilitySeconds(rng);
          const vtMs = vtSeconds === undefined ? undefined : vtSeconds * S;
          const before = model.views(now);
          const eligible = [...before.values()].reduce((n, v) => n + v.run.length, 0);
          const plan = model.receive(max, vtMs, attemptId, now);
          const got = q.receive(max, vtMs, now, attemptId);
          const ids = got.map((m) => m.id);
          const expectedIds = plan.replay?.entries.map((e) => e.id) ?? plan.deliver.map((m) => m.id);
          s.note(
            `receive max=${max} vt=${vtSeconds ?? 'default'}${attemptId === undefined ? '' : ` ${attemptId}`} -> [${ids.join(' ')}]` +
              `${plan.replay === null ? '' : ' (replay)'}${plan.deadLettered.length > 0 ? ` dead-lettered [${plan.deadLettered.map((m) => m.id).join(' ')}]` : ''}`,
          );
          assert.equal(new Set(ids).size, ids.length, `${s.where}: a message returned twice`);
          if (plan.replay === null) {
            const inDlq = new Set([...dlq.allMessages()].map((m) => m.id));
            checkFifoRules(before, got, inDlq, max, s.where);
            for (const v of before.values()) {
              const stop = v.live[v.run.length]?.state;
              if (stop === undefined) continue;
              if (v.run.length === 0) {
                if (v.live.some((x) => x.state === 'visible'))
                  coverage.hit(`receive: a group held back by its ${stop} first message`);
              } else {
                coverage.hit(`receive: a group stops at a ${stop} message`);
              }
            }
            if (eligible > max) coverage.hit('receive: more eligible than max');
            else if (eligible > 0) coverage.hit('receive: every eligible message');
            else if (model.live().length > 0) coverage.hit('receive: none eligible, some waiting');
            if (new Set(plan.deliver.map((m) => m.group)).size > 1)
              coverage.hit('receive: several groups in one call');
            if (plan.deliver.length > new Set(plan.deliver.map((m) => m.group)).size)
              coverage.hit('receive: several messages of one group in one call');
            assert.equal(
              got.length,
              plan.deliver.length,
              `${s.where}: ${got.length} messages, the model expects ${plan.deliver.length} (${eligible} eligible, ${plan.deadLettered.length} dead-lettered)`,
            );
          }
          assert.deepEqual(
            ids,
            expectedIds,
            `${s.where}: messages (the model expects [${expectedIds.join(' ')}])`,
          );
          if (plan.replay !== null) {
            assert.deepEqual(
              got.map((m) => q.receiptHandle(m)),
              plan.replay.entries.map((e) => e.handle),
              `${s.where}: a retried attempt's receipt handles`,
            );
          } else {
            // Read the handles now: a later receive gives the message a new one.
            model.handed(
              got.map((m) => ({ id: m.id, handle: q.receiptHandle(m) })),
              attemptId,
              now,
            );
          }
          for (const m of got) {
            const expected = model.find(m.id);
            assert.equal(m.groupId, expected.group, `${s.where}: MessageGroupId of ${m.id}`);
            assert.equal(
              m.deduplicationId,
              expected.dedupId,
              `${s.where}: MessageDeduplicationId of ${m.id}`,
            );
            assert.equal(m.sequenceNumber, expected.sequenceNumber, `${s.where}: SequenceNumber of ${m.id}`);
            assertReceivedAsModelled(s, m, expected);
          }
          break;
        }
        case 'advance': {
          const { ms, hit } = randomAdvance(rng, now, model.deadlines(now), {
            deadlineWeight: 6,
            maxMinutes: 10,
          });
          if (hit !== undefined) coverage.hit(`advance: to a ${hit.kind} end ${hit.side}`);
          clock.advance(ms);
          s.note(`advance ${ms} ms${hit === undefined ? '' : ` (${hit.kind} end ${hit.side})`}`);
          break;
        }
        case 'attributes': {
          const name = rng.pick([
            ...TIMING_ATTRIBUTES,
            'ContentBasedDeduplication',
            'DeduplicationScope',
          ] as const);
          let value: string;
          switch (name) {
            case 'DelaySeconds':
            case 'VisibilityTimeout':
            case 'MessageRetentionPeriod':
              value = timingAttribute(rng, name, model);
              break;
            case 'ContentBasedDeduplication':
              model.contentBased = !model.contentBased;
              value = String(model.contentBased);
              break;
            case 'DeduplicationScope': {
              const scope: Scope = model.scope === 'queue' ? 'messageGroup' : 'queue';
              model.setScope(scope, now);
              value = scope;
              break;
            }
          }
          store.setAttributes(q, { [name]: value });
          s.note(`set ${name}=${value}`);
          break;
        }
      }
    },
    check: (s, last) => {
      const at = clock.now();
      const deadLetters = model.liveDeadLetters(at);
      assert.deepEqual(
        dlq.counts(at),
        { visible: deadLetters.length, inflight: 0, delayed: 0 },
        `${s.where}: dead-letter queue counts`,
      );
      if (compareQueue(s, last, q, at, model, fifoFields)) {
        assert.equal(q.fifoState?.groupCount, model.groupIds().length, `${s.where}: groups`);
        assert.equal(
          [...(q.fifoState?.dedupRecords() ?? [])].length,
          model.liveDedupRecords(at),
          `${s.where}: deduplication records`,
        );
        assert.equal(
          [...(q.fifoState?.attemptRecords() ?? [])].length,
          model.liveAttemptRecords(at),
          `${s.where}: attempt records`,
        );
        const inDlq = [...dlq.allMessages()];
        assert.deepEqual(
          inDlq.map((m) => ({
            id: m.id,
            body: m.body,
            group: m.groupId,
            dedupId: m.deduplicationId,
            receiveCount: m.receiveCount,
            firstReceiveAt: m.firstReceiveAt,
            source: m.deadLetterSourceArn,
            state: m.state,
          })),
          deadLetters.map((d) => ({
            id: d.id,
            body: d.body,
            group: d.group,
            dedupId: d.id,
            receiveCount: d.receiveCount,
            firstReceiveAt: d.firstReceiveAt,
            source: q.arn,
            state: 'visible',
          })),
          `${s.where}: dead-letter queue messages`,
        );
        for (const m of inDlq) {
          const seq = m.sequenceNumber ?? '';
          assert.match(seq, /^\d{20}$/, `${s.where}: SequenceNumber of ${m.id} in the dead-letter queue`);
          if (BigInt(seq) > lastDlqSequence) lastDlqSequence = BigInt(seq);
        }
        for (let i = 1; i < inDlq.length; i++) {
          assert.ok(
            BigInt(inDlq[i]?.sequenceNumber ?? '') > BigInt(inDlq[i - 1]?.sequenceNumber ?? ''),
            `${s.where}: dead-letter queue SequenceNumbers out of order at ${inDlq[i]?.id}`,
          );
        }
      }
    },
  });
  if (lastDlqSequence > 0n) coverage.hit('dead-letter queue: SequenceNumbers checked');
}

const EXPECTED_RULES = [
  ...QUEUE_MODEL_RULES,
  'send: new, not delayed',
  'send: new, delayed by the queue',
  'send: DelaySeconds 0 with a queue delay',
  'send: no MessageGroupId',
  'send: no deduplication id, no content-based deduplication',
  'send: duplicate by explicit id',
  'send: duplicate by content',
  'send: explicit id equal to an earlier body hash',
  'send: duplicate of a live message',
  'send: duplicate of a deleted message',
  'send: same id after a purge: new',
  'receive: a group that came back waits behind older waiting groups',
  'send: duplicate from another group (scope queue)',
  'send: duplicate 1 ms before the window ends',
  'send: same id exactly when the window ends: new',
  'send: same id after the window: new',
  'send: same id in another group (scope messageGroup): new',
  'send: same id under the other DeduplicationScope: new',
  'send: within 60 s of a DeduplicationScope change: the scope before it',
  'receive: a group held back by its inflight first message',
  'receive: a group held back by its delayed first message',
  'receive: a group stops at a inflight message',
  'receive: a group stops at a delayed message',
  'receive: more eligible than max',
  'receive: every eligible message',
  'receive: none eligible, some waiting',
  'receive: several groups in one call',
  'receive: several messages of one group in one call',
  'receive: redelivered before the later messages of its group',
  'receive: visibility 0',
  'receive: dead-lettered',
  'receive: dead-lettered, the next of its group goes on',
  'dead-letter queue: SequenceNumbers checked',
  'attempt: first use',
  'attempt: retried, same messages',
  'attempt: retried 1 ms before its 5 minutes end',
  'attempt: retried exactly when its 5 minutes end',
  'attempt: retried after its 5 minutes',
  'attempt: retried with visibility 0',
  'attempt: retried after one was deleted',
  'attempt: retried after its visibility was changed',
  'attempt: retried after one became visible again',
  'attempt: retried after a purge',
  'expired while visible',
  'expired while inflight',
  'expired while delayed',
  'expired: the next of its group eligible',
  'delete: current handle of an inflight message',
  'delete: the next of its group eligible',
  'delete: not the first of its group',
  'delete: older handle of a inflight message',
  'delete: older handle of a visible message',
  'delete: current handle of a visible message',
  'delete: message dead-lettered already',
  'visibility: 0 on the first of its group: eligible',
  'visibility: 0 behind an earlier message of its group',
  'visibility: message not in flight',
  'visibility: older handle of a inflight message',
  'visibility: older handle of a visible message',
  'purge: exactly 60 s after the last',
  ...['visibility', 'dedup window', 'attempt window', 'purge rule', 'scope change'].flatMap((kind) =>
    ['exactly', 'minus 1 ms', 'plus 1 ms'].map((side) => `advance: to a ${kind} end ${side}`),
  ),
];

modelTests({
  runs: RUNS,
  on: 'a FIFO queue',
  against: 'the model of the FIFO rules',
  coverage,
  rules: EXPECTED_RULES,
  run,
});

/**
 * A divergence the model found: the core told whether an attempt's message "had its visibility
 * changed" by comparing its visibility deadline with the one recorded, so a ChangeMessageVisibility
 * that ended where the timeout already ended (changed away and back, or to the same end) went
 * unnoticed and the retry replayed the old messages and receipt handles. Messages now carry a
 * visibilityChanged flag from the change to their next receive. AWS (ReceiveMessage, ReceiveRequestAttemptId): a retry returns the
 * same messages only "if none of the messages have been modified (deleted or had their visibility
 * changes)"; docs/compatibility.md says the same. The random runs rarely reach it (a change must
 * land on the very millisecond); here it is the shortest sequence, against the same model.
 */
void test('Given a receive with a ReceiveRequestAttemptId, when its message has its visibility changed and changed back, then a retry is a new receive, not a replay', () => {
  const clock = new ManualClock();
  const store = new QueueStore(clock);
  const q = store.create(
    { accountId: ACCOUNT, region: 'us-east-1', name: 'attempt-changed.fifo' },
    { FifoQueue: 'true', VisibilityTimeout: '30' },
    {},
  ).queue;
  const model = new Model(0, 30 * S, 345_600 * S, false, 'queue', null);
  const now = clock.now();
  const plan = model.send('a', 'd1', 'a1', now);
  assert.ok('dedupId' in plan);
  const sent = q.sendMessage(msg('a1', { id: 'a1', ...inGroup('a', 'd1') }), now);
  model.stored('a1', 'a1', 'a', 'd1', false, sent.sequenceNumber ?? '', now);
  assert.deepEqual(
    model.receive(1, undefined, 'x', now).deliver.map((m) => m.id),
    ['a1'],
  );
  const [a1] = q.receive(1, undefined, now, 'x');
  assert.ok(a1 !== undefined);
  const handle = q.receiptHandle(a1);
  model.handed([{ id: 'a1', handle }], 'x', now);
  for (const seconds of [60, 30]) {
    assert.deepEqual(model.changeVisibility(handle, seconds * S, now), OK);
    q.changeVisibility(handle, seconds * S, now);
  }
  const expected = model.receive(1, undefined, 'x', now);
  assert.equal(expected.replay, null, 'the model: the retry is a new receive');
  const retry = q.receive(1, undefined, now, 'x');
  assert.deepEqual(
    retry.map((m) => m.id),
    expected.deliver.map((m) => m.id),
    'a1 is in flight and first in its group: a new receive returns nothing, a replay returns a1',
  );
});
