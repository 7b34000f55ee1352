/**
 * The writer: the core's change events → Redis (layout v2, layout.ts), before the requests that
 * made them are answered.
 *
 * Group commit. Events only mark objects as dirty in the open batch (a queue with what happened
 * to it, a message with its queue); nothing is serialized when an event arrives. The batch is
 * flushed on `setImmediate`, i.e. once the requests that arrived in this turn of the event loop
 * have all run, written from the objects' state at flush time. So ten events about one message
 * in one tick are one record, and a tick of 200 SendMessage calls is one round trip.
 *
 * Scopes. A Lua call may touch the keys of one hash tag only, so a batch is split by where its
 * objects live: a queue's records, messages and FIFO records in its shard (`Queue.shard`), a move
 * task in the shard of its source queue, tenants and the catalog (queue name → directory record,
 * codec.ts serializeCatalogEntry) in meta. Each shard touched, and meta, gets one call of the
 * `apply` script (more when its part is large, see pump()), with that scope's keys and lock.
 *
 * One round trip per tick. The calls of a flush go out together, as one bundle, grouped by the
 * connection `connectionFor` gives for each scope's keys: on a single Redis (or Sentinel) that is
 * one connection, and its calls go in one MULTI/EXEC, so Redis appends them to its AOF and fsyncs
 * once for the tick instead of once per shard; on a Redis Cluster each master gets one pipeline
 * of plain calls (a node refuses a transaction over several slots). Nothing inside EXEC can fall
 * back from EVALSHA to EVAL, so the script is loaded (SCRIPT LOAD, pipelined ahead of the bundle)
 * on each connection the first time a bundle goes on it, and again whenever its socket is a new
 * one (a reconnect may reach a Redis restarted without its scripts). So NOSCRIPT can only follow
 * a SCRIPT FLUSH by hand; it then fails the shards of that bundle, and the next bundle loads again.
 *
 * Pipelining. Up to MAX_CALLS bundles are in flight at once, sent in order, so Redis applies them
 * in that order: while Redis runs (and fsyncs) one, the next tick's requests run here and their
 * bundle is sent at the end of that tick, instead of waiting for the round trip. Only when
 * MAX_CALLS are unanswered does the open batch wait (and grow) until one is answered. Bundles in
 * flight together stay within the size of one call (see MAX_CALLS), so a large batch's calls go
 * one after the other, as they must to finish within the command timeout.
 *
 * The chain, per scope. Each call carries its own id (a nonce of this writer and a counter) and
 * the id of its scope's call before it; the script writes nothing unless the scope's `commit` key
 * holds that previous id, and sets it to its own id last. So when a shard's call k fails in any
 * way (an error reply, fenced, malformed), every later call of that shard already in flight is
 * refused and writes nothing: no batch answered 503 is in Redis, even though it was sent before
 * the failure was known. A scope's first call checks nothing: the store it writes for was loaded
 * after everything this server's earlier writers sent (and another instance's writes are fenced
 * by the lease).
 *
 * `commit(shards)` is what a request awaits before its reply: per shard, the promise of its newest
 * part (the open batch's, else the last one in flight, else nothing to wait for). A part resolves
 * once all of its calls were applied AND every earlier part of its scope resolved, so a scope's
 * parts resolve in order whatever order their answers are seen in.
 *
 * Failure, per scope. When a scope's call fails (a Redis error, a timeout whose outcome is
 * unknown, a refusal, too few replicas), that scope is failed: `onFailure(scope, cause)` is told
 * once, at once, its later events are ignored, its calls not yet sent are dropped, and
 * `commit` of it rejects with `unavailable(cause)`. Its parts before the failing one still
 * resolve as their answers come in (they were applied); the failing part and every later one,
 * sent or not, are rejected. Other scopes go on. A failure of a whole connection (closed, EXEC
 * refused or timed out) fails every scope that had calls in it. The shard's part of the store is
 * no longer known to match Redis: whoever owns it reloads it and then calls `resetShard`, from
 * which the scope starts a fresh chain. A timeout stays "outcome unknown": the call may still be
 * applied, with the calls behind it on its connection.
 *
 * Order inside one scope's part: queue operations first (deletes, purges, records), then FIFO
 * records and move tasks, then each queue's message writes. That is correct because a message is
 * written as it is at flush time: a message that was deleted, or purged away, is deleted; one
 * sent after a purge in the same tick survives the purge's UNLINK because it is written after it;
 * a message of a queue deleted in the batch is not written at all. FIFO deduplication and
 * receive-attempt records, move tasks, tenants and catalog entries follow the same rule: an event
 * marks the record's key dirty, and the flush writes what the queue (or the store) holds for it
 * then, or deletes it when it holds nothing. The catalog is written in meta, apart from the
 * queue's shard: the two are not one atomic write, and either may fail without the other.
 *
 * The catalog feed. A meta part that wrote catalog records also marks their account and region in
 * the catalog index (layout.ts `catalogs`, how a reader finds every catalog hash without SCAN),
 * and once it is applied the writer PUBLISHes the changed names (`<account>:<region>:<name>`
 * lines) on the catalog feed channel: what other processes' CatalogMirror (catalog-mirror.ts)
 * reads them again on. Fire and forget: a message lost (a publish that failed, a subscriber that
 * was reconnecting) is made up for by the mirror's periodic full read.
 *
 * Many owners (`sharedMeta`). When several processes each own some shards, each writes the
 * catalog records of its own queues under the one meta tag, and the tenants are written by
 * whichever process serves the admin API. A chain there would break: every process's call would
 * find another's id in meta's `commit` and be refused (-4). So with `sharedMeta` the meta scope's
 * calls go unchained (no previous id: the script checks nothing, and the `commit` it sets is
 * nobody's to read) and unfenced (no token: there is no one leader whose lock meta could check).
 * That is safe enough because what meta holds there is per key and single-writer: a catalog
 * record (one hash field per queue name) is written only by the owner of that queue's shard, and
 * the shard's own call in the same bundle is fenced by its lease; a tenant record is one field,
 * last writer wins, as for one process. What is lost is the guarantee that a refused call stops
 * the meta calls behind it, and fencing of a process that lost a shard: such a process may still
 * write the catalog records of that shard's queues in the bundles it had in flight. So the
 * catalog is a hint, never the truth about a queue (that is the shard's `queues` hash): its
 * consumers (ListQueues, ListDeadLetterSourceQueues, the dead-letter checks of another shard's
 * queues) tolerate a stale record for a while, and the owner makes it agree with the shard each
 * time it loads the shard (catalog-repair.ts, repairCatalog).
 *
 * Replicas (`replicas` option, --redis-wait-replicas). On each connection of a bundle, right
 * after its calls (pipelined: behind the EXEC), goes `WAIT n timeout` (or `WAITAOF 0 n timeout`):
 * Redis runs it after them, and answers with how many replicas acknowledged this connection's
 * writes so far, i.e. this bundle's and everything before it. It need not wait for the calls'
 * answers, as nothing is ever sent again after it (no EVAL after a NOSCRIPT). A scope's part
 * counts as applied only when at least n did; fewer fails every scope with calls on that
 * connection in that bundle (outcome unknown: the write is on the master, maybe not on the replica
 * a failover would promote). Redis blocks the connection while WAIT runs, so bundles pipelined
 * behind it are applied after it returns. On a Redis Cluster each shard's connection is the one
 * to the master of its slot (redis.ts, writeConnection): WAIT has no key and counts only the
 * writes of the connection it is sent on.
 */
import { randomBytes } from 'node:crypto';
import { Command, type Redis } from 'ioredis';
import { systemClock } from '../core/clock.js';
import type { ChangeEvent } from '../core/events.js';
import type { Message } from '../core/message.js';
import type { MoveTask } from '../core/movetasks.js';
import type { Queue } from '../core/queue.js';
import { parseQueueArn } from '../core/redrive.js';
import type { QueueStore } from '../core/store.js';
import type { Tenant } from '../core/tenants.js';
import { shardOf } from '../shard/hash.js';
import {
  serializeAttempt,
  serializeCatalogEntry,
  serializeDedup,
  serializeMessage,
  serializeMoveTask,
  serializeQueue,
  serializeTenant,
} from './codec.js';
import type { Keys } from './keys.js';
import { catalogChange, catalogScope, type Layout } from './layout.js';
import { markValue } from './marks.js';
import { FencedError, ScriptCode, scripts, type ScriptArg } from './scripts.js';

/** Limits of one script call, so that it runs well within the command timeout (measured: docs/decisions/001-group-commit.md). */
const CALL_BYTES = 4 * 1024 * 1024;
const CALL_OBJECTS = 10_000;
/**
 * Bundles unanswered at once: with Redis about 2 ms away, 2 gave half the gain of 4, and 8 or 16
 * little more (docs/persistence.md). A call's command timeout runs from when it is sent, i.e. it
 * covers the calls ahead of it too: so bundles are pipelined only while together they stay within
 * the limits of one call, and a bundle that alone comes near them waits until it can go alone.
 * (Here a call of 10,000 messages took 150-330 ms, and the last of four such calls pipelined was
 * answered 800 ms after it was sent: too near the 1 s timeout.)
 */
const MAX_CALLS = 4;

const PUT = 1;
const PURGE = 2;
const DELETE = 4;

/** A shard's number, or the global keys. */
export type Scope = number | 'meta';

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
  /** Queues created, changed or deleted: their names' catalog entries. */
  readonly catalog: Set<Queue>;
  /** Messages that moved from a queue of one shard to a queue of another. */
  readonly transfers: Transfer[];
  /**
   * Messages another process (many owners) sent to a queue here, by the id the queue knows them
   * by: the mark (`in:<uid>`, field `<id>`) is written after the message, in the same call, and
   * left, since the source is not this writer's to clean: it goes with the queue, or once it is
   * too old to answer a sending (marks.ts, MarkPruner).
   */
  readonly marks: { readonly dest: Queue; readonly id: string }[];
  /** The scopes it touched. */
  readonly scopes: Set<ScopeState>;
}

/**
 * A message that left a queue of one shard for a queue of another: the source's call writes the
 * removal and an outbox entry holding the message as the destination has it (`out`, field
 * `<dest uid>:<id>`); the destination's call writes the message and marks it received
 * (`in:<dest uid>`, field `<id>`, value the source scope and the time: marks.ts, which also
 * prunes the marks nobody settles). Once both are applied the outbox entry is deleted, and once
 * that is applied the mark. Whatever a crash or a failed write leaves in between, the next load
 * of either shard settles (persistence.ts, replayTransfers): an entry whose mark is there was
 * applied; one whose mark is not is applied now, so the message is never lost, and the mark is
 * what keeps a message that was received and deleted meanwhile from coming back.
 */
interface Transfer {
  readonly field: string;
  readonly source: ScopeState;
  readonly dest: Queue;
  readonly message: Message;
  /** False for a transfer replayed from the outbox: its entry is in Redis already. */
  readonly writeOut: boolean;
}

/** A field to delete from a scope's hash, and what to do once that is applied. */
interface Cleanup {
  readonly key: string;
  readonly field: string;
  readonly then?: (() => void) | undefined;
}

/** What one batch changed in one scope. */
interface Part {
  readonly scope: ScopeState;
  readonly epoch: number;
  /** Its batch's, from the flush on. */
  tally: Tally;
  /** Its calls not yet applied, and its replica wait. */
  unapplied: number;
  /** One of its calls failed. */
  failed: boolean;
  readonly done: Promise<void>;
  resolve(): void;
  reject(e: Error): void;
}

/** A batch's parts not settled yet, for `stats`. */
interface Tally {
  parts: number;
  objects: number;
  failed: boolean;
}

interface ScopeState {
  readonly id: Scope;
  readonly keys: Keys;
  /** The id of its last call built: the next one names it. */
  lastCall: string;
  failure: Error | undefined;
  /** Raised by resetShard: what is still in flight from before belongs to the failed store. */
  epoch: number;
  /** Flushed parts not yet settled, oldest first. */
  readonly pending: Part[];
  /** Its part of the open batch. */
  open: Part | undefined;
}

export interface WriterOptions {
  readonly layout: Layout;
  /**
   * The connection a scope's calls (and its replica wait) go on, asked at each bundle: the one
   * client on a single Redis or Sentinel, the connection to the master of the shard's slot on a
   * Redis Cluster (redis.ts, writeConnection). Scopes given the same object share its bundles.
   */
  readonly connectionFor: (keys: Keys) => Redis;
  /**
   * Wrap each connection's calls of a bundle in MULTI/EXEC (default true): for a single Redis or
   * Sentinel. false on a Redis Cluster, whose nodes refuse a transaction over several slots.
   */
  readonly multi?: boolean | undefined;
  /** The fencing token of a scope (its lease; meta: the leader lock), read at each flush; '' skips the check. */
  readonly token?: ((scope: Scope) => string) | undefined;
  /** What commit() rejects with after a failure; the data plane turns an SqsError into a 503. */
  readonly unavailable: (cause: Error) => Error;
  /** Told once per failure of a scope, with the cause (a FencedError when fenced). */
  readonly onFailure?: ((scope: Scope, cause: Error) => void) | undefined;
  /** Each bundle is acknowledged by this many replicas before it counts as applied; undefined: no wait. */
  readonly replicas?: ReplicaWait | undefined;
  /**
   * Several processes write meta (many owners, each owning some shards): its calls go unchained
   * and unfenced (see "Many owners" above). Default false: one process writes meta, chained and
   * fenced by `token('meta')`.
   */
  readonly sharedMeta?: boolean | undefined;
}

export interface ReplicaWait {
  /** Replicas that must acknowledge (WAIT's numreplicas), at least 1. */
  readonly count: number;
  /** WAIT's timeout in ms, at least 1 (0 would block forever); keep it well under the command timeout. */
  readonly timeoutMs: number;
  /** WAITAOF 0 count timeout (Redis 7.2+): the replicas fsynced it to their AOF, not only received it. */
  readonly aof: boolean;
  /**
   * Each wait, as it ended: how long after its connection's last call was answered, and whether
   * enough replicas acknowledged.
   */
  readonly observe?: ((seconds: number, acknowledged: boolean) => void) | undefined;
}

/** Fewer replicas acknowledged a bundle than --redis-wait-replicas asks for. */
export class ReplicaWaitError extends Error {
  override readonly name = 'ReplicaWaitError';
}

export interface WriterStats {
  /** Batches (ticks) whose every part was applied. */
  batches: number;
  /** Changed objects written (queues + messages + tasks), after collapsing repeated events. */
  objects: number;
}

const RESOLVED = Promise.resolve();

interface Call {
  readonly part: Part;
  readonly args: ScriptArg[];
  readonly bytes: number;
  readonly objects: number;
  /** Its part's last call: the replica wait after it settles the part. */
  readonly last: boolean;
}

/** Calls sent together, and what of them is unanswered. */
interface Bundle {
  readonly bytes: number;
  readonly objects: number;
  /** Connections whose answers are not all in. */
  connections: number;
}

export class Writer {
  private open: Batch | undefined;
  /** Calls built, in order, waiting to be sent. */
  private unsent: Call[] = [];
  /** Bundles sent and not answered, and their size. */
  private inFlight = 0;
  private sentBytes = 0;
  private sentObjects = 0;
  private readonly nonce = randomBytes(6).toString('hex');
  private calls = 0;
  private readonly meta: ScopeState;
  private readonly shards: readonly ScopeState[];
  /** Scopes with a part open or unsettled (and failed ones, until reset): what commit() of all looks at. */
  private readonly busy = new Set<ScopeState>();
  /** Per connection, the socket the script was loaded on: another one (a reconnect) loads it again. */
  private readonly loaded = new WeakMap<Redis, unknown>();
  /** The shard of a move task's source queue, computed once per task. */
  private readonly taskShards = new WeakMap<MoveTask, number>();
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
  private store: QueueStore | undefined;
  readonly stats: WriterStats = { batches: 0, objects: 0 };
  /** Outbox fields of transfers written and not yet settled (see Transfer). */
  private readonly transfers = new Set<string>();
  /** Per scope, the hash fields to delete in its next part. */
  private readonly cleanups = new Map<ScopeState, Cleanup[]>();

  constructor(private readonly opts: WriterOptions) {
    const scope = (id: Scope, keys: Keys): ScopeState => ({
      id,
      keys,
      lastCall: '',
      failure: undefined,
      epoch: 0,
      pending: [],
      open: undefined,
    });
    this.meta = scope('meta', opts.layout.meta);
    this.shards = opts.layout.shards.map((k) => scope(k.shard, k));
  }

  /** Records every change of `store` from now on. */
  attach(store: QueueStore): void {
    this.store = store;
    store.onChange((e) => this.record(e));
  }

  record(e: ChangeEvent): void {
    if (this.closed) return;
    // A queue dropped with its shard says nothing about Redis: its shard is being read back.
    if ('queue' in e && e.queue.evicted) return;
    switch (e.type) {
      case 'message-put':
      case 'message-delete': {
        const b = this.touch(this.shardOf(e.queue));
        b?.messages.set(e.message, e.queue);
        break;
      }
      case 'queue-put':
      case 'queue-purge':
      case 'queue-delete': {
        const what = e.type === 'queue-put' ? PUT : e.type === 'queue-purge' ? PURGE : DELETE;
        const b = this.touch(this.shardOf(e.queue));
        b?.queues.set(e.queue, (b.queues.get(e.queue) ?? 0) | what);
        if (what !== PURGE) this.touch(this.meta)?.catalog.add(e.queue);
        break;
      }
      case 'dedup-put':
      case 'dedup-delete': {
        const b = this.touch(this.shardOf(e.queue));
        if (b !== undefined) keysOf(b.dedups, e.queue).add(e.key);
        break;
      }
      case 'attempt-put':
      case 'attempt-delete': {
        const b = this.touch(this.shardOf(e.queue));
        if (b !== undefined) keysOf(b.attempts, e.queue).add(e.attemptId);
        break;
      }
      case 'move-task-put':
      case 'move-task-delete':
        this.touch(this.taskScope(e.task))?.tasks.add(e.task);
        break;
      case 'tenant-put':
      case 'tenant-delete':
        this.touch(this.meta)?.tenants.add(e.tenant);
        break;
      case 'message-moved': {
        const source = this.shardOf(e.from);
        const dest = this.shardOf(e.queue);
        // One shard holds both queues: the delete and the put are in one call already.
        if (source === dest) break;
        // The destination's part may be failed (the shard is being read back): the outbox
        // entry alone carries the message, and that shard's load applies it.
        this.touch(dest);
        this.touch(source)?.transfers.push({
          field: `${e.queue.uid}:${e.message.id}`,
          source,
          dest: e.queue,
          message: e.message,
          writeOut: true,
        });
        break;
      }
    }
  }

  /**
   * Resolves when every change recorded so far in these shards (undefined: in every shard and in
   * meta) is in Redis; rejects with `unavailable` when one of them has failed.
   */
  commit(shards?: readonly Scope[]): Promise<void> {
    if (shards === undefined) return this.commitAll();
    if (shards.length === 1) return this.commitOne(this.scope(shards[0] as Scope));
    return Promise.all(shards.map((s) => this.commitOne(this.scope(s)))).then(() => undefined);
  }

  private commitOne(st: ScopeState): Promise<void> {
    if (st.failure !== undefined) return Promise.reject(this.opts.unavailable(st.failure));
    return (st.open ?? st.pending.at(-1))?.done ?? RESOLVED;
  }

  /**
   * Every scope's newest part, except those of scopes failed already: their queues were dropped
   * with them (their owner reads them back), so nothing recorded since is theirs, and a request
   * that names no queue (ListQueues) is not refused for a shard it never touched. A part that
   * fails later still rejects.
   */
  private commitAll(): Promise<void> {
    const waits: Promise<void>[] = [];
    for (const st of this.busy) {
      if (st.failure !== undefined) continue;
      const p = st.open ?? st.pending.at(-1);
      if (p !== undefined) waits.push(p.done);
    }
    if (waits.length < 2) return waits[0] ?? RESOLVED;
    return Promise.all(waits).then(() => undefined);
  }

  /**
   * A transfer found in `sourceShard`'s outbox whose message `dest` did not have: `message` was
   * put in `dest` again (Queue.adoptMessage, whose message-put is in the open batch); it is
   * marked there, then the entry and the mark are deleted as for a live transfer.
   */
  replayTransfer(sourceShard: number, dest: Queue, message: Message): void {
    const b = this.touch(this.shardOf(dest));
    b?.transfers.push({
      field: `${dest.uid}:${message.id}`,
      source: this.scope(sourceShard),
      dest,
      message,
      writeOut: false,
    });
  }

  /**
   * A message another process sent to `dest` (a dead-letter move or a move task's step across
   * owners) was put in it as `id` (its message-put is in the open batch), or was a duplicate of
   * one (FIFO deduplication): marked there in the same call, so that the sender's retry of it is
   * known for what it is (persistence.ts, transferMarked).
   */
  acceptedTransfer(dest: Queue, id: string): void {
    this.touch(this.shardOf(dest))?.marks.push({ dest, id });
  }

  /** A transfer found settled (marked, or its queue gone): its outbox entry and mark go. */
  settleTransfer(sourceShard: number, destShard: number, destUid: string, id: string): void {
    const field = `${destUid}:${id}`;
    if (this.transfers.has(field)) return;
    this.clean(this.scope(sourceShard), 'out', field, () =>
      this.clean(this.scope(destShard), `in:${destUid}`, id),
    );
  }

  /** The transfer is being written by this writer now: a replay must leave it alone. */
  transferring(destUid: string, id: string): boolean {
    return this.transfers.has(`${destUid}:${id}`);
  }

  /** Queues a field of a scope's hash for deletion in the next batch; `then` once applied. */
  private clean(st: ScopeState, key: string, field: string, then?: () => void): void {
    // Closed (stopping): left for the next load to settle, like after a crash.
    if (this.closed || this.touch(st) === undefined) return;
    let list = this.cleanups.get(st);
    if (list === undefined) this.cleanups.set(st, (list = []));
    list.push({ key, field, then });
  }

  /** The cause of the failure that stopped the scope, until resetShard. */
  failure(scope: Scope): Error | undefined {
    return this.scope(scope).failure;
  }

  /**
   * The owner has read the scope from Redis (again): its next call starts a fresh chain (checks
   * nothing), since `commit` may hold another writer's id by now: another process that held the
   * shard since this one last wrote it. If the scope had failed, its changes are recorded and
   * written again from now on, and what of its earlier parts is still unsettled is rejected: it
   * belongs to the store that was dropped.
   */
  resetShard(scope: Scope): void {
    const st = this.scope(scope);
    st.lastCall = '';
    const cause = st.failure;
    if (cause === undefined) return;
    const err = this.opts.unavailable(cause);
    for (const p of st.pending.splice(0)) this.rejectPart(p, err);
    st.failure = undefined;
    st.epoch++;
    this.busy.delete(st);
  }

  /** Waits for everything recorded so far, then ignores further events. */
  async close(): Promise<void> {
    const last = this.commit();
    this.closed = true;
    await last;
  }

  private scope(id: Scope): ScopeState {
    const st = id === 'meta' ? this.meta : this.shards[id];
    if (st === undefined) throw new RangeError(`no shard ${id}`);
    return st;
  }

  private shardOf(q: Queue): ScopeState {
    return this.scope(q.shard);
  }

  /** A task lives with its source queue; an ARN that names none (never started so) goes to meta. */
  private taskScope(t: MoveTask): ScopeState {
    let shard = this.taskShards.get(t);
    if (shard === undefined) {
      const a = parseQueueArn(t.sourceArn);
      if (a === undefined) return this.meta;
      shard = shardOf(a.accountId, a.region, a.name);
      this.taskShards.set(t, shard);
    }
    return this.scope(shard);
  }

  /** The open batch, with a part for `st`; undefined when `st` is failed, so the event is dropped. */
  private touch(st: ScopeState): Batch | undefined {
    if (st.failure !== undefined) return undefined;
    const b = this.open ?? this.newBatch();
    if (st.open === undefined) {
      st.open = this.newPart(st);
      b.scopes.add(st);
      this.busy.add(st);
    }
    return b;
  }

  private newBatch(): Batch {
    const b: Batch = {
      queues: new Map(),
      messages: new Map(),
      dedups: new Map(),
      attempts: new Map(),
      tasks: new Set(),
      tenants: new Set(),
      catalog: new Set(),
      transfers: [],
      marks: [],
      scopes: new Set(),
    };
    this.open = b;
    if (this.room()) this.schedule();
    return b;
  }

  private newPart(st: ScopeState): Part {
    let resolve!: () => void;
    let reject!: (e: Error) => void;
    const done = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    // Changes nobody awaits (a deadline passed on a timer) must not become unhandled rejections;
    // a request that awaits `done` still sees the rejection.
    done.catch(() => undefined);
    return {
      scope: st,
      epoch: st.epoch,
      // Replaced at flush by the batch's tally.
      tally: { parts: 0, objects: 0, failed: false },
      unapplied: 0,
      failed: false,
      done,
      resolve,
      reject,
    };
  }

  /** A batch flushed now could be sent at once, unless it is large. */
  private room(): boolean {
    return this.unsent.length === 0 && this.inFlight < MAX_CALLS;
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
    if (b === undefined || !this.room()) return;
    this.open = undefined;
    const tally: Tally = { parts: 0, objects: 0, failed: false };
    const parts = new Map<ScopeState, Part>();
    for (const st of b.scopes) {
      const open = st.open;
      if (open === undefined) continue;
      st.open = undefined;
      open.tally = tally;
      tally.parts++;
      parts.set(st, open);
      st.pending.push(open);
    }
    if (parts.size === 0) return;
    const perScope = this.build(b, parts, tally);
    const waits = this.opts.replicas === undefined ? 0 : 1;
    // Round robin, so that a shard's large part does not hold the small parts of the others back.
    const calls: Call[] = [];
    for (let i = 0, more = true; more; i++) {
      more = false;
      for (const list of perScope) {
        const c = list[i];
        if (c === undefined) continue;
        calls.push(c);
        more = true;
      }
    }
    for (const list of perScope) {
      const first = list[0];
      if (first !== undefined) first.part.unapplied = list.length + waits;
    }
    for (const c of calls) this.unsent.push(c);
    this.pump();
  }

  /**
   * Sends waiting calls as bundles while there are free slots. A part too large for one call
   * within the command timeout (a loop that sent 100,000 messages in one tick, or many large
   * bodies) is cut into calls of at most CALL_BYTES / CALL_OBJECTS; they are not one atomic unit,
   * and need not be: if one fails, the chain refuses the rest, the whole part is answered 503 and
   * the shard is reloaded from what Redis holds.
   */
  private pump(): void {
    while (this.unsent.length > 0 && this.inFlight < MAX_CALLS) {
      let n = 0;
      let bytes = 0;
      let objects = 0;
      for (const call of this.unsent) {
        const fits =
          (this.inFlight === 0 && n === 0) ||
          (this.sentBytes + bytes + call.bytes <= CALL_BYTES &&
            this.sentObjects + objects + call.objects <= CALL_OBJECTS);
        if (!fits) break;
        n++;
        bytes += call.bytes;
        objects += call.objects;
      }
      if (n === 0) return;
      this.send(this.unsent.splice(0, n), { bytes, objects, connections: 0 });
    }
  }

  private send(calls: readonly Call[], bundle: Bundle): void {
    this.inFlight++;
    this.sentBytes += bundle.bytes;
    this.sentObjects += bundle.objects;
    const byConnection = new Map<Redis, Call[]>();
    const unsendable: [Call, Error][] = [];
    for (const call of calls) {
      let redis: Redis;
      try {
        redis = this.opts.connectionFor(call.part.scope.keys);
      } catch (e) {
        // No connection to the scope's node (a Cluster whose slots moved): that scope fails.
        unsendable.push([call, toError(e)]);
        continue;
      }
      const list = byConnection.get(redis);
      if (list === undefined) byConnection.set(redis, [call]);
      else list.push(call);
    }
    bundle.connections = byConnection.size;
    for (const [redis, list] of byConnection) this.sendOn(redis, list, bundle);
    for (const [call, e] of unsendable) this.answered(undefined, call, e);
    if (byConnection.size === 0) {
      // Answered later, as any bundle is: not from inside pump()'s loop.
      bundle.connections = 1;
      queueMicrotask(() => this.bundleAnswered(bundle));
    }
  }

  /**
   * One connection's calls of a bundle, one round trip: in a pipeline around MULTI/EXEC, else each
   * command written as it is made (a connection sends in order; a Pipeline object per tick cost a
   * few percent of a receive-and-delete load).
   */
  private sendOn(redis: Redis, calls: readonly Call[], bundle: Bundle): void {
    // One call needs no transaction: a script is applied, and appended to the AOF, as one unit.
    const multi = (this.opts.multi ?? true) && calls.length > 1;
    const pipeline = multi ? redis.pipeline() : undefined;
    // The Pipeline's own queueing (untyped): each command keeps its promise, answered as it comes.
    const queue = (pipeline ?? redis) as unknown as { sendCommand(c: Command): unknown };
    const command = (name: string, args: ScriptArg[]): Promise<unknown> => {
      const c = new Command(name, args);
      queue.sendCommand(c);
      return c.promise as Promise<unknown>;
    };
    const stream: unknown = redis.stream;
    if (stream === undefined || this.loaded.get(redis) !== stream) {
      // Everything after it on this socket runs after it: no need to wait for its answer.
      this.loaded.set(redis, stream);
      command('script', ['load', scripts.apply.lua]).catch(() => {
        if (this.loaded.get(redis) === stream) this.loaded.delete(redis);
      });
    }
    if (multi) command('multi', []).catch(() => undefined);
    const answers: Promise<unknown>[] = [];
    for (const call of calls) {
      const k = call.part.scope.keys;
      const argv: ScriptArg[] = [scripts.apply.sha, 4, k.lock, k.queues, k.seq, k.commit];
      for (const a of call.args) argv.push(a);
      const answer = command('evalsha', argv);
      if (multi) answer.catch(() => undefined);
      else answers.push(answer);
    }
    let applied: Promise<void>;
    if (multi) {
      // An error of EXEC itself (EXECABORT, a timeout, the connection) is every call's.
      const each = (reply: unknown): readonly unknown[] => {
        if (Array.isArray(reply) && reply.length === calls.length) return reply;
        const e = reply instanceof Error ? reply : new Error(`EXEC answered ${String(reply)}`);
        return calls.map(() => e);
      };
      applied = command('exec', []).then(
        (reply) => {
          const replies = each(reply);
          calls.forEach((call, i) => this.answered(redis, call, replies[i]));
        },
        (e: unknown) => calls.forEach((call) => this.answered(redis, call, toError(e))),
      );
    } else {
      applied = Promise.all(
        answers.map((a, i) =>
          a.then(
            (reply) => this.answered(redis, calls[i] as Call, reply),
            (e: unknown) => this.answered(redis, calls[i] as Call, toError(e)),
          ),
        ),
      ).then(() => undefined);
    }
    const w = this.opts.replicas;
    let done = applied;
    if (w !== undefined) {
      const wait = w.aof
        ? command('waitaof', [0, w.count, w.timeoutMs])
        : command('wait', [w.count, w.timeoutMs]);
      done = applied.then(() => {
        const started = performance.now();
        return wait.then(
          (reply) => {
            const acks = Number(Array.isArray(reply) ? reply[1] : reply);
            const ok = acks >= w.count;
            w.observe?.((performance.now() - started) / 1000, ok);
            this.replicated(
              calls,
              ok
                ? undefined
                : new ReplicaWaitError(
                    `${acks} of ${w.count} replicas acknowledged the write within ${w.timeoutMs} ms`,
                  ),
            );
          },
          (e: unknown) => this.replicated(calls, toError(e)),
        );
      });
    }
    const answered = (): void => this.bundleAnswered(bundle);
    void done.then(answered, answered);
    pipeline?.exec().catch(() => undefined);
  }

  private bundleAnswered(bundle: Bundle): void {
    if (--bundle.connections > 0) return;
    this.inFlight--;
    this.sentBytes -= bundle.bytes;
    this.sentObjects -= bundle.objects;
    this.pump();
    if (this.open !== undefined && this.room()) this.schedule();
  }

  /** A call's answer: the script's code, or an error (a reply, or the connection's). */
  private answered(redis: Redis | undefined, call: Call, reply: unknown): void {
    const { part } = call;
    const st = part.scope;
    if (part.epoch !== st.epoch) return;
    let error: Error | undefined;
    if (reply instanceof Error) {
      error = reply;
      if (redis !== undefined && reply.message.startsWith('NOSCRIPT')) this.loaded.delete(redis);
    } else if (reply !== ScriptCode.OK) {
      error = refusal(reply);
    }
    if (error === undefined) part.unapplied--;
    else this.fail(part, error);
    this.settle(st);
  }

  /** The replica wait after a connection's calls: it counts for every part that had one there. */
  private replicated(calls: readonly Call[], error: Error | undefined): void {
    const seen = new Set<ScopeState>();
    for (const call of calls) {
      const { part } = call;
      const st = part.scope;
      if (part.epoch !== st.epoch) continue;
      if (error !== undefined) {
        if (!seen.has(st)) this.fail(part, error);
      } else if (call.last) {
        part.unapplied--;
      }
      seen.add(st);
    }
    for (const st of seen) this.settle(st);
  }

  /** Resolves a scope's applied parts from the oldest on; from the first failed one on, rejects them all. */
  private settle(st: ScopeState): void {
    while (st.pending.length > 0) {
      const p = st.pending[0] as Part;
      if (p.failed) {
        const err = this.opts.unavailable(st.failure as Error);
        for (const rest of st.pending.splice(0)) this.rejectPart(rest, err);
        return;
      }
      if (p.unapplied > 0) return;
      st.pending.shift();
      if (--p.tally.parts === 0 && !p.tally.failed) {
        this.stats.batches++;
        this.stats.objects += p.tally.objects;
      }
      p.resolve();
    }
    if (st.open === undefined) this.busy.delete(st);
  }

  private rejectPart(p: Part, err: Error): void {
    p.tally.failed = true;
    p.tally.parts--;
    p.reject(err);
  }

  /** Fails `part` and, the first time, its scope: nothing more of it is recorded or sent. */
  private fail(part: Part, cause: Error): void {
    part.failed = true;
    const st = part.scope;
    if (st.failure !== undefined) return;
    st.failure = cause;
    this.unsent = this.unsent.filter((c) => c.part.scope !== st);
    if (st.open !== undefined) {
      // Rejected by settle() behind the failed part.
      st.open.tally = { parts: 1, objects: 0, failed: false };
      st.pending.push(st.open);
      st.open = undefined;
    }
    if (this.open !== undefined) forget(this.open, st, (t) => this.taskScope(t));
    this.opts.onFailure?.(st.id, cause);
  }

  /**
   * Publishes applied changes on a feed (see "The catalog feed" above; the tenants' likewise); a
   * failure is left to the mirrors' full reads.
   */
  private announce(channel: string, changes: readonly string[]): void {
    let redis: Redis;
    try {
      redis = this.opts.connectionFor(this.opts.layout.meta);
    } catch {
      return;
    }
    redis.publish(channel, changes.join('\n')).catch(() => undefined);
  }

  /**
   * Writes the outbox entries of the batch's transfers in their sources' calls; returns the
   * transfers whose message the destination is to be marked for (after its message writes).
   */
  private outbox(b: Batch, to: (st: ScopeState) => CallBuilder | undefined): Transfer[] {
    const marked: Transfer[] = [];
    for (const t of b.transfers) {
      const destScope = this.shardOf(t.dest);
      if (t.dest.deleted || t.message.state === 'deleted') {
        // The message went with its queue, or was received and deleted in this very tick.
        if (!t.writeOut)
          this.settleTransfer(t.source.id as number, destScope.id as number, t.dest.uid, t.message.id);
        continue;
      }
      if (t.writeOut) {
        const src = to(t.source);
        if (src === undefined) continue;
        src.hash('out', [t.field, `${String(destScope.id)}:${serializeMessage(t.message)}`], []);
      }
      marked.push(t);
    }
    return marked;
  }

  /** The queued cleanups of the scopes in this flush, into their calls. */
  private cleanupsInto(
    parts: ReadonlyMap<ScopeState, Part>,
    to: (st: ScopeState) => CallBuilder | undefined,
  ): void {
    for (const [st, list] of this.cleanups) {
      const cb = to(st);
      const part = parts.get(st);
      if (cb === undefined || part === undefined) continue;
      this.cleanups.delete(st);
      const byKey = new Map<string, string[]>();
      for (const c of list) {
        let fields = byKey.get(c.key);
        if (fields === undefined) byKey.set(c.key, (fields = []));
        fields.push(c.field);
        if (c.then !== undefined) part.done.then(c.then, () => undefined);
      }
      for (const [key, fields] of byKey) cb.hash(key, [], fields);
    }
  }

  private build(b: Batch, parts: ReadonlyMap<ScopeState, Part>, tally: Tally): Call[][] {
    const builders = new Map<ScopeState, CallBuilder>();
    const to = (st: ScopeState): CallBuilder | undefined => {
      let cb = builders.get(st);
      if (cb === undefined) {
        const part = parts.get(st);
        if (part === undefined) return undefined;
        const shared = st === this.meta && this.opts.sharedMeta === true;
        cb = new CallBuilder(part, () => {
          const previous = shared ? '' : st.lastCall;
          st.lastCall = `${this.nonce}:${++this.calls}`;
          const token = shared ? '' : (this.opts.token?.(st.id) ?? '');
          return [token, st.keys.prefix, previous, st.lastCall];
        });
        builders.set(st, cb);
      }
      return cb;
    };
    // Every part sends a call, even one left with nothing to write (what it named is gone), so
    // that it settles in its turn.
    for (const st of parts.keys()) to(st);

    // A FIFO queue's last sequence number is in its record: rewrite the record when it moved on.
    for (const q of b.messages.values()) {
      if (q.fifo && !q.deleted && q.fifoState?.lastSequenceNumber !== this.sentLastSequence.get(q)) {
        b.queues.set(q, (b.queues.get(q) ?? 0) | PUT);
      }
    }
    for (const [q, what] of b.queues) {
      // Dropped from the store, not deleted (its shard is read back, or is another process's
      // now): what Redis holds of it stands. Written as deleted it would be gone for good.
      if (q.evicted) continue;
      const cb = to(this.shardOf(q));
      if (cb === undefined) continue;
      cb.room();
      cb.objects++;
      if ((what & DELETE) !== 0 || q.deleted) {
        cb.args.push('D', q.uid);
        continue;
      }
      if ((what & PURGE) !== 0) cb.args.push('P', q.uid);
      // A purge changes the queue too (its lastPurgeAt).
      if ((what & (PUT | PURGE)) !== 0) {
        const record = serializeQueue(q);
        cb.bytes += record.length;
        cb.args.push('Q', q.uid, record);
        this.sentLastSequence.set(q, q.fifoState?.lastSequenceNumber);
      }
    }

    // FIFO records and move tasks: written as they are now, deleted when they are gone.
    for (const [q, keys] of b.dedups) {
      const cb = to(this.shardOf(q));
      if (cb === undefined || q.deleted) continue;
      const puts: string[] = [];
      const dels: string[] = [];
      for (const k of keys) {
        const r = q.fifoState?.dedupRecord(k);
        if (r === undefined) dels.push(k);
        else puts.push(k, serializeDedup(r));
      }
      cb.hash(`d:${q.uid}`, puts, dels);
    }
    for (const [q, ids] of b.attempts) {
      const cb = to(this.shardOf(q));
      if (cb === undefined || q.deleted) continue;
      const puts: string[] = [];
      const dels: string[] = [];
      for (const id of ids) {
        const r = q.fifoState?.attemptRecord(id);
        if (r === undefined) dels.push(id);
        else puts.push(id, serializeAttempt(r));
      }
      cb.hash(`a:${q.uid}`, puts, dels);
    }
    const tasks = new Map<CallBuilder, { puts: string[]; dels: string[] }>();
    for (const t of b.tasks) {
      const cb = to(this.taskScope(t));
      if (cb === undefined) continue;
      let g = tasks.get(cb);
      if (g === undefined) {
        g = { puts: [], dels: [] };
        tasks.set(cb, g);
      }
      const kept = this.store === undefined || this.store.moveTasks.find(t.sourceArn, t.taskId) === t;
      if (kept) g.puts.push(t.taskId, serializeMoveTask(t));
      else g.dels.push(t.taskId);
    }
    for (const [cb, g] of tasks) cb.hash('tasks', g.puts, g.dels);

    const meta = to(this.meta);
    const metaPart = parts.get(this.meta);
    if (meta !== undefined && b.tenants.size > 0) {
      const puts: string[] = [];
      const dels: string[] = [];
      for (const t of b.tenants) {
        // Written as the store holds it now; gone: deleted (a newer tenant of the name is in the batch too).
        const live = this.store === undefined ? t : this.store.tenants.get(t.name);
        if (live === t) puts.push(t.name, serializeTenant(t));
        else if (live === undefined) dels.push(t.name);
      }
      meta.hash('tenants', puts, dels);
      // Many owners: the others hold the tenants in memory too, and re-read them on this
      // (tenants-mirror.ts); a lost message is made up for by their periodic read.
      if (this.opts.sharedMeta === true && metaPart !== undefined && puts.length + dels.length > 0) {
        const names = [...dels];
        for (let i = 0; i < puts.length; i += 2) names.push(puts[i] as string);
        metaPart.done.then(
          () => this.announce(this.opts.layout.meta.tenantsFeed, names),
          () => undefined,
        );
      }
    }
    if (meta !== undefined && metaPart !== undefined && b.catalog.size > 0) {
      const metaKeys = this.opts.layout.meta;
      // Per catalog hash, each name once, as the store holds that name now: a queue deleted and
      // created again in one tick leaves the new one's entry, one deleted for good none.
      const byKey = new Map<string, { q: Queue; names: Map<string, string | undefined> }>();
      for (const q of b.catalog) {
        // As above: a queue dropped from the store keeps its catalog record.
        if (q.evicted) continue;
        const key = metaKeys.catalog(q.accountId, q.region).slice(metaKeys.prefix.length);
        let scope = byKey.get(key);
        if (scope === undefined) {
          scope = { q, names: new Map() };
          byKey.set(key, scope);
        }
        if (scope.names.has(q.name)) continue;
        const live = this.store === undefined ? q : this.store.get(q.accountId, q.name, q.region);
        scope.names.set(q.name, live === undefined || live.deleted ? undefined : serializeCatalogEntry(live));
      }
      const indexed: string[] = [];
      const changes: string[] = [];
      for (const [key, { q, names }] of byKey) {
        const puts: string[] = [];
        const dels: string[] = [];
        for (const [name, record] of names) {
          if (record === undefined) dels.push(name);
          else puts.push(name, record);
          changes.push(catalogChange(q.accountId, q.region, name));
        }
        meta.hash(key, puts, dels);
        // Each time, not once per writer: one more field in a rare call, and an index lost or
        // never written (records older than it) comes back with the next change.
        if (puts.length > 0) indexed.push(catalogScope(q.accountId, q.region), '1');
      }
      if (indexed.length > 0) meta.hash(metaKeys.catalogIndex.slice(metaKeys.prefix.length), indexed, []);
      metaPart.done.then(
        () => this.announce(this.opts.layout.meta.catalogFeed, changes),
        () => undefined,
      );
    }

    // Outbox entries before the message writes, marks after them: when a part is cut into several
    // chained calls, a call is applied only if those before it were, so an entry is never
    // missing where its removal was written, and a mark never stands for a missing message.
    const outbox = this.outbox(b, to);
    // When the marks below were written: what their pruning goes by (marks.ts).
    const now = (this.store?.clock ?? systemClock).now();

    // Per queue: [id, record, id, record...] written and [id...] deleted. Most ticks touch one queue.
    const groups = new Map<Queue, { cb: CallBuilder; puts: string[]; dels: string[] }>();
    for (const [m, q] of b.messages) {
      if (q.deleted) continue;
      let g = groups.get(q);
      if (g === undefined) {
        const cb = to(this.shardOf(q));
        if (cb === undefined) continue;
        g = { cb, puts: [], dels: [] };
        groups.set(q, g);
      }
      if (m.state !== 'deleted') {
        g.puts.push(m.id, serializeMessage(m));
      } else if (((b.queues.get(q) ?? 0) & PURGE) === 0) {
        // (After a purge in this batch the UNLINK has removed it already.)
        g.dels.push(m.id);
      }
    }
    for (const [q, { cb, puts, dels }] of groups) {
      if (puts.length === 0 && q.nextSequence !== this.sentNextSeq.get(q)) {
        // Only deletes, but of messages sent in this batch: the next seq moves on all the same.
        cb.room();
        cb.args.push('M', q.uid, q.nextSequence, 0);
      }
      this.sentNextSeq.set(q, q.nextSequence);
      cb.chunked(['M', q.uid, q.nextSequence], puts, true);
      cb.chunked(['X', q.uid], dels, false);
    }

    for (const t of outbox) {
      const destScope = this.shardOf(t.dest);
      const dst = to(destScope);
      const srcPart = parts.get(t.source);
      const dstPart = parts.get(destScope);
      if (dst === undefined || dstPart === undefined || (t.writeOut && srcPart === undefined)) continue;
      dst.hash(`in:${t.dest.uid}`, [t.message.id, markValue(t.source.id as number, now)], []);
      this.transfers.add(t.field);
      const settled =
        t.writeOut && srcPart !== undefined ? Promise.all([srcPart.done, dstPart.done]) : dstPart.done;
      const id = t.message.id;
      const destUid = t.dest.uid;
      settled.then(
        () => {
          this.transfers.delete(t.field);
          this.settleTransfer(t.source.id as number, destScope.id as number, destUid, id);
        },
        () => this.transfers.delete(t.field),
      );
    }
    // Marked even when already received and deleted here: the mark says it arrived.
    for (const { dest, id } of b.marks) {
      const scope = this.shardOf(dest);
      const dst = to(scope);
      if (dest.deleted || dst === undefined || !parts.has(scope)) continue;
      dst.hash(`in:${dest.uid}`, [id, markValue(scope.id as number, now)], []);
    }
    this.cleanupsInto(parts, to);
    const out: Call[][] = [];
    for (const cb of builders.values()) {
      const calls = cb.finish();
      for (const c of calls) tally.objects += c.objects;
      out.push(calls);
    }
    return out;
  }
}

/** One scope's calls of a flush: a new call starts whenever the current one is full. */
class CallBuilder {
  args: ScriptArg[];
  bytes = 0;
  objects = 0;
  private readonly calls: Call[] = [];

  constructor(
    private readonly part: Part,
    private readonly head: () => ScriptArg[],
  ) {
    this.args = head();
  }

  /** Starts a new call when the current one is full. */
  room(): void {
    if (this.bytes < CALL_BYTES && this.objects < CALL_OBJECTS) return;
    this.calls.push({
      part: this.part,
      args: this.args,
      bytes: this.bytes,
      objects: this.objects,
      last: false,
    });
    this.args = this.head();
    this.bytes = this.objects = 0;
  }

  private full(): boolean {
    return this.bytes >= CALL_BYTES || this.objects >= CALL_OBJECTS;
  }

  /**
   * One command of apply-4.lua per call it spans: `...header, n` and then n items, an item being
   * one string (a field to delete) or two (a field and its record) as `pairs` says. A large hash
   * or queue is split.
   */
  chunked(header: readonly ScriptArg[], items: readonly string[], pairs: boolean): void {
    const stride = pairs ? 2 : 1;
    for (let i = 0; i < items.length;) {
      this.room();
      const args = this.args;
      for (const h of header) args.push(h);
      const at = args.length;
      args.push(0);
      let n = 0;
      for (; i < items.length && !this.full(); i += stride, n++) {
        const field = items[i] as string;
        args.push(field);
        this.bytes += field.length;
        if (pairs) {
          const record = items[i + 1] as string;
          args.push(record);
          this.bytes += record.length;
        }
        this.objects++;
      }
      args[at] = n;
    }
  }

  hash(key: string, puts: string[], dels: string[]): void {
    this.chunked(['S', key], puts, true);
    this.chunked(['R', key], dels, false);
  }

  finish(): Call[] {
    this.calls.push({
      part: this.part,
      args: this.args,
      bytes: this.bytes,
      objects: this.objects,
      last: true,
    });
    return this.calls;
  }
}

/** Drops what the open batch holds for a scope that failed: the store behind it is to be reloaded. */
function forget(b: Batch, st: ScopeState, taskScope: (t: MoveTask) => ScopeState): void {
  b.scopes.delete(st);
  if (st.id === 'meta') {
    b.tenants.clear();
    b.catalog.clear();
    for (const t of b.tasks) if (taskScope(t) === st) b.tasks.delete(t);
    return;
  }
  const mine = (q: Queue): boolean => q.shard === st.id;
  for (const q of b.queues.keys()) if (mine(q)) b.queues.delete(q);
  for (const [m, q] of b.messages) if (mine(q)) b.messages.delete(m);
  for (const q of b.dedups.keys()) if (mine(q)) b.dedups.delete(q);
  for (const q of b.attempts.keys()) if (mine(q)) b.attempts.delete(q);
  for (const t of b.tasks) if (taskScope(t) === st) b.tasks.delete(t);
}

function refusal(code: unknown): Error {
  if (code === ScriptCode.FENCED) return new FencedError();
  const e = new Error(
    code === ScriptCode.OUT_OF_CHAIN
      ? 'apply script refused a call: the call before it was not applied'
      : `apply script returned ${String(code)}`,
  );
  // Redis answered: the outcome is known (persistence.ts reads back that shard alone).
  e.name = 'ScriptRefusal';
  return e;
}

function toError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}

function keysOf(m: Map<Queue, Set<string>>, q: Queue): Set<string> {
  let s = m.get(q);
  if (s === undefined) {
    s = new Set();
    m.set(q, s);
  }
  return s;
}
