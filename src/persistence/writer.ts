/**
 * The writer: the core's change events → Redis, before the requests that made them are answered.
 *
 * Group commit. Events only mark objects as dirty in the open batch (a queue with what happened
 * to it, a message with its queue); nothing is serialized when an event arrives. The batch is
 * flushed on `setImmediate`, i.e. once the requests that arrived in this turn of the event loop
 * have all run, as ONE call of the `apply` script carrying every change, written from the objects'
 * state at flush time. So ten events about one message in one tick are one record, and a tick of
 * 200 SendMessage calls is one round trip. At most one batch is in flight: events that arrive
 * meanwhile go to the next batch, which is flushed as soon as the one in flight is done (under
 * load, batches grow by themselves instead of queueing round trips).
 *
 * `commit()` is what a request awaits before its reply: the promise of the newest batch, which
 * holds every change emitted so far (the open batch, else the one in flight, else nothing to
 * wait for). Batches complete in order and the promises of one batch resolve together, in the
 * order the requests awaited them.
 *
 * Failure. When a batch fails (a Redis error, a timeout whose outcome is unknown, or a fenced
 * write), it and the open batch are rejected with `unavailable(cause)`, `commit()` rejects from
 * then on, later events are ignored, and `onFailure` is told once. The store this writer served is
 * no longer known to match Redis: whoever owns it must drop it and load a new one (persistence.ts).
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
 */
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

/** Limits of one script call, so that it runs well within the command timeout (measured: docs/performance.md). */
const CALL_BYTES = 4 * 1024 * 1024;
const CALL_OBJECTS = 10_000;

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
}

export interface WriterStats {
  batches: number;
  /** Changed objects written (queues + messages), after collapsing repeated events. */
  objects: number;
}

const RESOLVED = Promise.resolve();

export class Writer {
  private open: Batch | undefined;
  private inflight: Batch | undefined;
  private failure: Error | undefined;
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
    }
  }

  /** Resolves when every change recorded so far is in Redis; rejects once a write has failed. */
  commit(): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.opts.unavailable(this.failure));
    return (this.open ?? this.inflight)?.done ?? RESOLVED;
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
      done,
      resolve,
      reject,
    };
    this.open = b;
    if (this.inflight === undefined) this.schedule();
    return b;
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
    if (b === undefined || this.inflight !== undefined || this.failure !== undefined) return;
    this.open = undefined;
    this.inflight = b;
    this.write(b).then(
      () => {
        this.stats.batches++;
        this.stats.objects += b.queues.size + b.messages.size + b.tasks.size;
        this.inflight = undefined;
        b.resolve();
        if (this.open !== undefined) this.schedule();
      },
      (e: unknown) => this.fail(e instanceof Error ? e : new Error(String(e))),
    );
  }

  /**
   * One script call per batch; a batch too large for one call within the command timeout (a
   * loop that sent 100,000 messages in one tick, or many large bodies) is cut into calls of at
   * most CALL_BYTES / CALL_OBJECTS, run one after the other. They are not one atomic unit, and
   * need not be: if one fails, the whole batch is answered 503 and the store is reloaded from
   * what Redis holds.
   */
  private async write(b: Batch): Promise<void> {
    const { keys, redis } = this.opts;
    for (const args of this.build(b)) {
      const code = await scripts.apply.run(redis, [keys.lock, keys.queues, keys.seq], args);
      if (code === ScriptCode.FENCED) throw new FencedError();
      if (code !== ScriptCode.OK) throw new Error(`apply script returned ${String(code)}`);
    }
  }

  /** The apply script's ARGV lists (see scripts/apply-3.lua for the operations). */
  private build(b: Batch): ScriptArg[][] {
    const head = (): ScriptArg[] => [this.opts.token?.() ?? '', this.opts.keys.prefix];
    const calls: ScriptArg[][] = [];
    let args = head();
    let bytes = 0;
    let objects = 0;
    const full = (): boolean => bytes >= CALL_BYTES || objects >= CALL_OBJECTS;
    const cut = (): void => {
      calls.push(args);
      args = head();
      bytes = objects = 0;
    };

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
      }
    }

    // FIFO records and move tasks: written as they are now, deleted when they are gone.
    const hash = (key: string, puts: string[], dels: string[]): void => {
      for (let i = 0; i < puts.length;) {
        if (full()) cut();
        const at = args.length;
        args.push('S', key, 0);
        let n = 0;
        for (; i < puts.length && !full(); i += 2, n++) {
          args.push(puts[i] as string, puts[i + 1] as string);
          bytes += (puts[i] as string).length + (puts[i + 1] as string).length;
          objects++;
        }
        args[at + 2] = n;
      }
      for (let i = 0; i < dels.length;) {
        if (full()) cut();
        const at = args.length;
        args.push('R', key, 0);
        let n = 0;
        for (; i < dels.length && !full(); i++, n++) {
          args.push(dels[i] as string);
          bytes += (dels[i] as string).length;
          objects++;
        }
        args[at + 2] = n;
      }
    };
    for (const [q, keys] of b.dedups) {
      if (q.deleted) continue;
      const puts: string[] = [];
      const dels: string[] = [];
      for (const k of keys) {
        const r = q.dedupRecord(k);
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
        const r = q.attemptRecord(id);
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
      for (let i = 0; i < g.puts.length;) {
        if (full()) cut();
        const at = args.length;
        args.push('M', q.uid, q.nextSequence, 0);
        let n = 0;
        for (; i < g.puts.length && !full(); i += 2, n++) {
          const id = g.puts[i] as string;
          const record = g.puts[i + 1] as string;
          args.push(id, record);
          bytes += id.length + record.length;
          objects++;
        }
        args[at + 3] = n;
      }
      for (let i = 0; i < g.dels.length;) {
        if (full()) cut();
        const at = args.length;
        args.push('X', q.uid, 0);
        let n = 0;
        for (; i < g.dels.length && !full(); i++, n++) {
          const id = g.dels[i] as string;
          args.push(id);
          bytes += id.length;
          objects++;
        }
        args[at + 2] = n;
      }
    }
    calls.push(args);
    return calls;
  }

  private fail(cause: Error): void {
    if (this.failure !== undefined) return;
    this.failure = cause;
    const err = this.opts.unavailable(cause);
    this.inflight?.reject(err);
    this.open?.reject(err);
    this.inflight = this.open = undefined;
    this.opts.onFailure?.(cause);
  }
}

function keysOf(m: Map<Queue, Set<string>>, q: Queue): Set<string> {
  let s = m.get(q);
  if (s === undefined) {
    s = new Set();
    m.set(q, s);
  }
  return s;
}
