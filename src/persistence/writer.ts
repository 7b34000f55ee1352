/**
 * The writer: the core's change events → Redis, before the requests that made them are answered.
 *
 * Group commit. Events only mark objects as dirty in the open batch (a queue with what happened
 * to it, a message with its queue); nothing is serialized when an event arrives. The batch is
 * flushed on `setImmediate`, i.e. once the requests that arrived in this turn of the event loop
 * have all run, as ONE call of the `apply` script carrying every change, written from the objects'
 * state at flush time. So ten events about one message in one tick are one record, and a tick of
 * 200 SendMessage calls is one round trip.
 *
 * Pipelining. Up to MAX_CALLS script calls are in flight at once, all on the one connection, sent
 * in order, so Redis applies them in that order: while Redis runs (and fsyncs) one batch, the
 * next tick's requests run here and their batch is sent at the end of that tick, instead of
 * waiting for the round trip. Only when MAX_CALLS are unanswered does the open batch wait (and
 * grow) until one is answered. Calls in flight together stay within the size of one call (see
 * MAX_CALLS), so a large batch's calls go one after the other, as they must to finish within the
 * command timeout. A writer's first call goes alone: it may have to load the script into Redis
 * (NOSCRIPT, then EVAL), and calls pipelined behind it would find it missing or out of order.
 *
 * `commit()` is what a request awaits before its reply: the promise of the newest batch, which
 * holds every change emitted so far (the open batch, else the last one in flight, else nothing to
 * wait for). A batch resolves once all of its calls were applied AND every earlier batch resolved,
 * so batches resolve in order whatever order their answers are seen in, and the promises of one
 * batch resolve together, in the order the requests awaited them.
 *
 * The chain. Each call carries its own id (a nonce of this writer and a counter) and the id of the
 * call before it; the script writes nothing unless the `commit` key holds that previous id, and
 * sets it to its own id last. So when call k fails in any way (an error reply, fenced, malformed),
 * every later call already in flight is refused and writes nothing: no batch answered 503 is in
 * Redis, even though it was sent before the failure was known. The first call of a writer checks
 * nothing: the store it writes for was loaded after everything this server's earlier writers sent
 * (and another instance's writes are fenced by the leader lock).
 *
 * Failure. When a call fails (a Redis error, a timeout whose outcome is unknown, a refusal),
 * `commit()` rejects from then on, later events are ignored, batches not yet sent are dropped,
 * and `onFailure` is told once, at once. Batches before the failing one still resolve as their
 * answers come in (they were applied); the failing batch and every later one, sent or not, are
 * rejected with `unavailable(cause)`. The store this writer served is no longer known to match
 * Redis: whoever owns it must drop it and load a new one (persistence.ts), and that load's reads
 * go on the same connection behind the refused calls, so it sees Redis after them. A timeout
 * stays "outcome unknown": the call may still be applied, with the calls behind it.
 *
 * Order inside one batch: queue operations first (deletes, purges, records), then each queue's
 * message writes. That is correct because a message is written as it is at flush time: a message
 * that was deleted, or purged away, is deleted; one sent after a purge in the same tick survives
 * the purge's UNLINK because it is written after it; a message of a queue deleted in the batch is
 * not written at all.
 *
 * FIFO deduplication and receive-attempt records, and move tasks, follow the same rule: an event
 * marks the record's key dirty, and the flush writes what the queue (or the store) holds for it
 * then, or deletes it when it holds nothing (expired, purged, forgotten). They go after the
 * queue operations, so a purge's UNLINK of a queue's attempts comes first.
 *
 * Replicas (`replicas` option, --redis-wait-replicas). Once a batch's last call was applied, on the
 * same connection, goes `WAIT n timeout` (or `WAITAOF 0 n timeout`): Redis answers it with how
 * many replicas acknowledged the replication offset of this connection's writes so far, i.e. this
 * batch and everything before it. The batch counts as applied only when at least n did; fewer is
 * a failure like any other (outcome unknown: the write is on the master, maybe not on the replica
 * a failover would promote), so its requests get a 503 and the store is reloaded. The WAIT goes
 * after the call's answer, not pipelined right behind it: a call that met NOSCRIPT is sent again
 * as EVAL, behind a WAIT that would then not cover it. Redis blocks the connection while WAIT
 * runs, so calls pipelined behind it are applied after it returns. On a Redis Cluster `redis` is
 * the connection to the master of the prefix's slot, not the Cluster client (redis.ts,
 * writeConnection): WAIT has no key and counts only the writes of the connection it is sent on.
 */
import { randomBytes } from 'node:crypto';
import type { ChangeEvent } from '../core/events.js';
import type { Message } from '../core/message.js';
import type { MoveTask } from '../core/movetasks.js';
import type { Queue } from '../core/queue.js';
import type { QueueStore } from '../core/store.js';
import {
  serializeAttempt,
  serializeDedup,
  serializeMessage,
  serializeMoveTask,
  serializeQueue,
  serializeTenant,
} from './codec.js';
import type { Tenant } from '../core/tenants.js';
import type { Keys } from './keys.js';
import { FencedError, ScriptCode, scripts, type ScriptArg } from './scripts.js';
import type { Redis } from 'ioredis';

/** Limits of one script call, so that it runs well within the command timeout (measured: docs/decisions/001-group-commit.md). */
const CALL_BYTES = 4 * 1024 * 1024;
const CALL_OBJECTS = 10_000;
/**
 * Script calls unanswered at once: with Redis about 2 ms away, 2 gave half the gain of 4, and 8 or
 * 16 little more (docs/persistence.md). A call's command timeout runs from when it is sent, i.e. it
 * covers the calls ahead of it too: so calls are pipelined only while together they stay within
 * the limits of one call, and a call that alone comes near them waits until it can go alone. (Here
 * a call of 10,000 messages took 150-330 ms, and the last of four such calls pipelined was
 * answered 800 ms after it was sent: too near the 1 s timeout.)
 */
const MAX_CALLS = 4;

const PUT = 1;
const PURGE = 2;
const DELETE = 4;

interface Batch {
  /** Queue → what happened to it (PUT | PURGE | DELETE), in first-touched order. */
  readonly queues: Map<Queue, number>;
  /** Message → its queue. */
  readonly messages: Map<Message, Queue>;
  /** FIFO: queue → deduplication keys / ReceiveRequestAttemptIds whose records changed. */
  readonly dedups: Map<Queue, Set<string>>;
  readonly attempts: Map<Queue, Set<string>>;
  /** Move tasks started, changed or forgotten. */
  readonly tasks: Set<MoveTask>;
  /** Tenants created, changed (keys) or deleted. */
  readonly tenants: Set<Tenant>;
  /** Its script calls not yet applied. */
  unapplied: number;
  /** One of its calls failed. */
  failed: boolean;
  readonly done: Promise<void>;
  resolve(): void;
  reject(e: Error): void;
}

export interface WriterOptions {
  readonly redis: Redis;
  readonly keys: Keys;
  /** The fencing token the scripts check, read at each flush; '' skips the check. */
  readonly token?: (() => string) | undefined;
  /** What commit() rejects with after a failure; the data plane turns an SqsError into a 503. */
  readonly unavailable: (cause: Error) => Error;
  /** Told once, with the cause (a FencedError when fenced), when a write failed. */
  readonly onFailure?: ((cause: Error) => void) | undefined;
  /** Each batch is acknowledged by this many replicas before it counts as applied; undefined: no wait. */
  readonly replicas?: ReplicaWait | undefined;
}

export interface ReplicaWait {
  /** Replicas that must acknowledge (WAIT's numreplicas), at least 1. */
  readonly count: number;
  /** WAIT's timeout in ms, at least 1 (0 would block forever); keep it well under the command timeout. */
  readonly timeoutMs: number;
  /** WAITAOF 0 count timeout (Redis 7.2+): the replicas fsynced it to their AOF, not only received it. */
  readonly aof: boolean;
  /** Each wait, as it ended: its duration and whether enough replicas acknowledged. */
  readonly observe?: ((seconds: number, acknowledged: boolean) => void) | undefined;
}

/** Fewer replicas acknowledged a batch than --redis-wait-replicas asks for. */
export class ReplicaWaitError extends Error {
  override readonly name = 'ReplicaWaitError';
}

export interface WriterStats {
  batches: number;
  /** Changed objects written (queues + messages), after collapsing repeated events. */
  objects: number;
}

const RESOLVED = Promise.resolve();

interface Call {
  readonly batch: Batch;
  readonly args: ScriptArg[];
  readonly bytes: number;
  readonly objects: number;
  /** The batch's last call: the replica wait follows its answer. */
  readonly last: boolean;
}

export class Writer {
  private open: Batch | undefined;
  /** Flushed batches not yet resolved or rejected, oldest first. */
  private readonly flushed: Batch[] = [];
  /** Calls built, in order, waiting to be sent. */
  private readonly unsent: Call[] = [];
  /** Calls sent and not answered, and their size. */
  private sent = 0;
  private sentBytes = 0;
  private sentObjects = 0;
  /** The first call was applied: from then on calls are pipelined. */
  private chained = false;
  private readonly nonce = randomBytes(6).toString('hex');
  private calls = 0;
  private lastCall = '';
  private failure: Error | undefined;
  /**
   * What this writer last sent of each queue's counters. They also reach Redis with the records that
   * carry them (a message's seq, a FIFO message's or dedup record's sequence number), but a batch
   * can drop the last carrier: a message sent and deleted in one tick, the newest FIFO message
   * deleted after its dedup record expired, or a dead letter (no dedup record) deleted. The loader
   * would then start the queue below numbers it already handed out. Keyed by the Queue object: a
   * store reloaded after a failure has new ones, so nothing here outlives what Redis holds.
   */
  private readonly sentNextSeq = new WeakMap<Queue, number>();
  private readonly sentLastSequence = new WeakMap<Queue, string | undefined>();
  private scheduled = false;
  private closed = false;
  readonly stats: WriterStats = { batches: 0, objects: 0 };

  constructor(private readonly opts: WriterOptions) {}

  /** Records every change of `store` from now on. */
  attach(store: QueueStore): void {
    this.store = store;
    store.onChange((e) => this.record(e));
  }

  private store: QueueStore | undefined;

  record(e: ChangeEvent): void {
    if (this.failure !== undefined || this.closed) return;
    const b = this.open ?? this.newBatch();
    switch (e.type) {
      case 'message-put':
      case 'message-delete':
        b.messages.set(e.message, e.queue);
        break;
      case 'queue-put':
        b.queues.set(e.queue, (b.queues.get(e.queue) ?? 0) | PUT);
        break;
      case 'queue-purge':
        b.queues.set(e.queue, (b.queues.get(e.queue) ?? 0) | PURGE);
        break;
      case 'queue-delete':
        b.queues.set(e.queue, (b.queues.get(e.queue) ?? 0) | DELETE);
        break;
      case 'dedup-put':
      case 'dedup-delete':
        keysOf(b.dedups, e.queue).add(e.key);
        break;
      case 'attempt-put':
      case 'attempt-delete':
        keysOf(b.attempts, e.queue).add(e.attemptId);
        break;
      case 'move-task-put':
      case 'move-task-delete':
        b.tasks.add(e.task);
        break;
      case 'tenant-put':
      case 'tenant-delete':
        b.tenants.add(e.tenant);
        break;
      case 'message-moved':
        // One shard holds both queues: the delete and the put are in this one call already.
        break;
    }
  }

  /** Resolves when every change recorded so far is in Redis; rejects once a write has failed. */
  commit(): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.opts.unavailable(this.failure));
    return (this.open ?? this.flushed.at(-1))?.done ?? RESOLVED;
  }

  /** The cause of the failure that stopped this writer, if one did. */
  get failed(): Error | undefined {
    return this.failure;
  }

  /** Waits for everything recorded so far, then ignores further events. */
  async close(): Promise<void> {
    const last = this.commit();
    this.closed = true;
    await last;
  }

  private newBatch(): Batch {
    let resolve!: () => void;
    let reject!: (e: Error) => void;
    const done = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    // Changes nobody awaits (a deadline passed on a timer) must not become unhandled rejections;
    // a request that awaits `done` still sees the rejection.
    done.catch(() => undefined);
    const b: Batch = {
      queues: new Map(),
      messages: new Map(),
      dedups: new Map(),
      attempts: new Map(),
      tasks: new Set(),
      tenants: new Set(),
      unapplied: 0,
      failed: false,
      done,
      resolve,
      reject,
    };
    this.open = b;
    if (this.room()) this.schedule();
    return b;
  }

  /** A batch flushed now could be sent at once, unless it is large. */
  private room(): boolean {
    return this.unsent.length === 0 && (this.sent === 0 || (this.chained && this.sent < MAX_CALLS));
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    const b = this.open;
    if (b === undefined || this.failure !== undefined || !this.room()) return;
    this.open = undefined;
    const calls = this.build(b);
    // The replica wait counts as one more call to be answered.
    b.unapplied = calls.length + (this.opts.replicas === undefined ? 0 : 1);
    this.flushed.push(b);
    this.unsent.push(...calls);
    this.pump();
  }

  /**
   * Sends waiting calls while there are free slots. A batch too large for one call within the
   * command timeout (a loop that sent 100,000 messages in one tick, or many large bodies) is cut
   * into calls of at most CALL_BYTES / CALL_OBJECTS; they are not one atomic unit, and need not
   * be: if one fails, the chain refuses the rest, the whole batch is answered 503 and the store
   * is reloaded from what Redis holds.
   */
  private pump(): void {
    const { keys, redis } = this.opts;
    for (;;) {
      const call = this.unsent[0];
      if (call === undefined) return;
      const fits =
        this.sent === 0 ||
        (this.chained &&
          this.sent < MAX_CALLS &&
          this.sentBytes + call.bytes <= CALL_BYTES &&
          this.sentObjects + call.objects <= CALL_OBJECTS);
      if (!fits) return;
      this.unsent.shift();
      this.sent++;
      this.sentBytes += call.bytes;
      this.sentObjects += call.objects;
      scripts.apply.run(redis, [keys.lock, keys.queues, keys.seq, keys.commit], call.args).then(
        (code) => this.answered(call, code === ScriptCode.OK ? undefined : refusal(code)),
        (e: unknown) => this.answered(call, e instanceof Error ? e : new Error(String(e))),
      );
    }
  }

  private waitReplicas(b: Batch, w: ReplicaWait): void {
    const started = performance.now();
    const sent = w.aof
      ? this.opts.redis.call('WAITAOF', 0, w.count, w.timeoutMs)
      : this.opts.redis.call('WAIT', w.count, w.timeoutMs);
    sent.then(
      (reply) => {
        const acks = Number(Array.isArray(reply) ? reply[1] : reply);
        const ok = acks >= w.count;
        w.observe?.((performance.now() - started) / 1000, ok);
        this.replicated(
          b,
          ok
            ? undefined
            : new ReplicaWaitError(
                `${acks} of ${w.count} replicas acknowledged the write within ${w.timeoutMs} ms`,
              ),
        );
      },
      (e: unknown) => this.replicated(b, e instanceof Error ? e : new Error(String(e))),
    );
  }

  private replicated(b: Batch, error: Error | undefined): void {
    if (error === undefined) b.unapplied--;
    else {
      b.failed = true;
      this.fail(error);
    }
    this.settle();
  }

  private answered(call: Call, error: Error | undefined): void {
    this.sent--;
    this.sentBytes -= call.bytes;
    this.sentObjects -= call.objects;
    const b = call.batch;
    if (error === undefined) {
      b.unapplied--;
      this.chained = true;
      const replicas = this.opts.replicas;
      if (call.last && replicas !== undefined && this.failure === undefined) this.waitReplicas(b, replicas);
    } else {
      b.failed = true;
      this.fail(error);
    }
    this.settle();
    if (this.failure !== undefined) return;
    this.pump();
    if (this.open !== undefined && this.room()) this.schedule();
  }

  /** Resolves applied batches from the oldest on; from the first failed one on, rejects them all. */
  private settle(): void {
    while (this.flushed.length > 0) {
      const b = this.flushed[0] as Batch;
      if (b.failed) {
        const err = this.opts.unavailable(this.failure as Error);
        for (const rest of this.flushed.splice(0)) rest.reject(err);
        return;
      }
      if (b.unapplied > 0) return;
      this.flushed.shift();
      this.stats.batches++;
      this.stats.objects += b.queues.size + b.messages.size + b.tasks.size;
      b.resolve();
    }
  }

  /** The apply script's ARGV lists (see scripts/apply-4.lua for the operations), chained. */
  private build(b: Batch): Call[] {
    const head = (): ScriptArg[] => {
      const previous = this.lastCall;
      this.lastCall = `${this.nonce}:${++this.calls}`;
      return [this.opts.token?.() ?? '', this.opts.keys.prefix, previous, this.lastCall];
    };
    const calls: Call[] = [];
    let args = head();
    let bytes = 0;
    let objects = 0;
    const full = (): boolean => bytes >= CALL_BYTES || objects >= CALL_OBJECTS;
    const cut = (): void => {
      calls.push({ batch: b, args, bytes, objects, last: false });
      args = head();
      bytes = objects = 0;
    };
    /**
     * One command of apply-4.lua per call it spans: `...header, n` and then n items, an item
     * being one string (a field to delete) or two (a field and its record) as `pairs` says. A
     * new call starts whenever the current one is full, so a large hash or queue is split.
     */
    const chunked = (header: readonly ScriptArg[], items: readonly string[], pairs: boolean): void => {
      const stride = pairs ? 2 : 1;
      for (let i = 0; i < items.length;) {
        if (full()) cut();
        for (const h of header) args.push(h);
        const at = args.length;
        args.push(0);
        let n = 0;
        for (; i < items.length && !full(); i += stride, n++) {
          const field = items[i] as string;
          args.push(field);
          bytes += field.length;
          if (pairs) {
            const record = items[i + 1] as string;
            args.push(record);
            bytes += record.length;
          }
          objects++;
        }
        args[at] = n;
      }
    };

    // A FIFO queue's last sequence number is in its record: rewrite the record when it moved on.
    for (const q of b.messages.values()) {
      if (q.fifo && !q.deleted && q.fifoState?.lastSequenceNumber !== this.sentLastSequence.get(q)) {
        b.queues.set(q, (b.queues.get(q) ?? 0) | PUT);
      }
    }
    for (const [q, what] of b.queues) {
      if (full()) cut();
      objects++;
      if ((what & DELETE) !== 0 || q.deleted) {
        args.push('D', q.uid);
        continue;
      }
      if ((what & PURGE) !== 0) args.push('P', q.uid);
      // A purge changes the queue too (its lastPurgeAt).
      if ((what & (PUT | PURGE)) !== 0) {
        const record = serializeQueue(q);
        bytes += record.length;
        args.push('Q', q.uid, record);
        this.sentLastSequence.set(q, q.fifoState?.lastSequenceNumber);
      }
    }

    // FIFO records and move tasks: written as they are now, deleted when they are gone.
    const hash = (key: string, puts: string[], dels: string[]): void => {
      chunked(['S', key], puts, true);
      chunked(['R', key], dels, false);
    };
    for (const [q, keys] of b.dedups) {
      if (q.deleted) continue;
      const puts: string[] = [];
      const dels: string[] = [];
      for (const k of keys) {
        const r = q.fifoState?.dedupRecord(k);
        if (r === undefined) dels.push(k);
        else puts.push(k, serializeDedup(r));
      }
      hash(`d:${q.uid}`, puts, dels);
    }
    for (const [q, ids] of b.attempts) {
      if (q.deleted) continue;
      const puts: string[] = [];
      const dels: string[] = [];
      for (const id of ids) {
        const r = q.fifoState?.attemptRecord(id);
        if (r === undefined) dels.push(id);
        else puts.push(id, serializeAttempt(r));
      }
      hash(`a:${q.uid}`, puts, dels);
    }
    if (b.tasks.size > 0) {
      const puts: string[] = [];
      const dels: string[] = [];
      for (const t of b.tasks) {
        const kept = this.store === undefined || this.store.moveTasks.find(t.sourceArn, t.taskId) === t;
        if (kept) puts.push(t.taskId, serializeMoveTask(t));
        else dels.push(t.taskId);
      }
      hash('tasks', puts, dels);
    }
    if (b.tenants.size > 0) {
      const puts: string[] = [];
      const dels: string[] = [];
      for (const t of b.tenants) {
        // Written as the store holds it now; gone: deleted (a newer tenant of the name is in the batch too).
        const live = this.store === undefined ? t : this.store.tenants.get(t.name);
        if (live === t) puts.push(t.name, serializeTenant(t));
        else if (live === undefined) dels.push(t.name);
      }
      hash('tenants', puts, dels);
    }

    // Per queue: [id, record, id, record...] written and [id...] deleted. Most ticks touch one queue.
    const groups = new Map<Queue, { puts: string[]; dels: string[] }>();
    for (const [m, q] of b.messages) {
      if (q.deleted) continue;
      let g = groups.get(q);
      if (g === undefined) {
        g = { puts: [], dels: [] };
        groups.set(q, g);
      }
      if (m.state !== 'deleted') {
        g.puts.push(m.id, serializeMessage(m));
      } else if (((b.queues.get(q) ?? 0) & PURGE) === 0) {
        // (After a purge in this batch the UNLINK has removed it already.)
        g.dels.push(m.id);
      }
    }
    for (const [q, g] of groups) {
      if (g.puts.length === 0 && q.nextSequence !== this.sentNextSeq.get(q)) {
        // Only deletes, but of messages sent in this batch: the next seq moves on all the same.
        if (full()) cut();
        args.push('M', q.uid, q.nextSequence, 0);
      }
      this.sentNextSeq.set(q, q.nextSequence);
      chunked(['M', q.uid, q.nextSequence], g.puts, true);
      chunked(['X', q.uid], g.dels, false);
    }
    calls.push({ batch: b, args, bytes, objects, last: true });
    return calls;
  }

  /** Stops the writer; the batches are rejected in order by settle(). */
  private fail(cause: Error): void {
    if (this.failure !== undefined) return;
    this.failure = cause;
    this.unsent.length = 0;
    if (this.open !== undefined) this.flushed.push(this.open);
    this.open = undefined;
    this.opts.onFailure?.(cause);
  }
}

function refusal(code: unknown): Error {
  if (code === ScriptCode.FENCED) return new FencedError();
  if (code === ScriptCode.OUT_OF_CHAIN) {
    return new Error('apply script refused a call: the call before it was not applied');
  }
  return new Error(`apply script returned ${String(code)}`);
}

function keysOf(m: Map<Queue, Set<string>>, q: Queue): Set<string> {
  let s = m.get(q);
  if (s === undefined) {
    s = new Set();
    m.set(q, s);
  }
  return s;
}
