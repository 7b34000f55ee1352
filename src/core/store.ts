import { defaultAttributes, resolveAttributes, validateAttributes } from './attributes.js';
import { Budget, QUEUE_OVERHEAD, type RefusalScope } from './budget.js';
import { Catalog, type CatalogEntry } from './catalog.js';
import type { Clock } from './clock.js';
import { CoreError } from './errors.js';
import type { ChangeEvent, CoreListener, MoveAway, RemoteQueue } from './events.js';
import type { Message } from './message.js';
import { DELETED_RECENTLY_MS, MAX_MOVE_RATE, PURGE_INTERVAL_MS } from './limits.js';
import { decodeTaskHandle, MoveTasks, type MoveAwayHooks, type MoveTask } from './movetasks.js';
import { DEFAULT_REGION, Queue, queueKey, type QueueIdentity } from './queue.js';
import {
  checkRedriveSources,
  checkRedriveTarget,
  parseQueueArn,
  parseRedrivePolicy,
  type RedriveTarget,
} from './redrive.js';
import { ownString } from './strings.js';
import { SHARD_COUNT, shardOf } from '../shard/hash.js';
import { Tenants } from './tenants.js';

export interface StoreOptions {
  /** How long a deleted queue's name stays taken; AWS: 60 s. 0 turns the rule off. */
  readonly deletedRecentlyMs: number;
  /** How long after a PurgeQueue the queue refuses another; AWS: 60 s (the default). 0 turns it off. */
  readonly purgeCooldownMs?: number;
  /** The memory budget's limit in bytes (budget.ts); unlimited when not given. */
  readonly maxMemory?: number;
  /** Told of every send the budget refuses, with the account and the limit it hit. */
  readonly onRefused?: (accountId: string, scope: RefusalScope) => void;
  /** The shards this store owns (QueueStore.setOwnedShards); every one when not given. */
  readonly ownedShards?: Iterable<number> | undefined;
}

const QUEUE_NAME = /^[A-Za-z0-9_-]{1,80}$/;
const FIFO_QUEUE_NAME = /^[A-Za-z0-9_-]{1,75}\.fifo$/;

/**
 * All queues, by account and name. Synchronous and clock-driven like everything in core; the
 * listener hears every change (for the Redis writer) and every moment messages become
 * receivable (for long-poll waiters).
 */
export class QueueStore {
  private readonly queues = new Map<string, Queue>();
  private readonly recentlyDeleted = new Map<string, number>();
  /** Shards whose queues are not here now: dropped to be loaded again, or refused (evictShard). */
  private readonly unavailable = new Set<number>();
  private readonly listener: CoreListener;
  private readonly queueByArn = (arn: string): Queue | undefined => this.byArn(arn);
  private readonly changeListeners: Array<(e: ChangeEvent) => void> = [];
  private readonly availableListeners: Array<(q: Queue) => void> = [];
  private readonly deadlineListeners: Array<(q: Queue) => void> = [];
  private readonly shardListeners: Array<(shard: number) => void> = [];
  private readonly awayListeners: Array<(q: Queue, m: Message, target: RemoteQueue) => void> = [];
  private readonly moveAwayListeners: Array<(away: MoveAway) => void> = [];
  /** A queue of a shard held elsewhere, from its remote catalog entry (many owners). */
  private readonly remoteByArn = (arn: string): RemoteQueue | undefined => {
    const a = parseQueueArn(arn);
    if (a === undefined || !this.catalog.isRemote(a.accountId, a.region, a.name)) return undefined;
    const e = this.catalog.get(a.accountId, a.region, a.name);
    return e === undefined ? undefined : { arn: e.arn, uid: e.uid, shard: e.shard, fifo: e.fifo };
  };
  /** Message move tasks, by source queue (movetasks.ts); advanced by the driver in src/sqs. */
  readonly moveTasks: MoveTasks;
  /** Tenants and their keys (tenants.ts); their changes go to the same listener as the queues'. */
  readonly tenants: Tenants;
  /**
   * What the queues hold against the memory budget, per account; every way a message comes or
   * goes (sends, moves, restores from storage, deletes, retention, purges, queue deletes) counts.
   */
  readonly budget: Budget;
  /**
   * Shards whose queues this store holds; undefined: all of them. With several processes each
   * owning some shards (docs/architecture.md, "Shards"), the others' queues are known from the
   * catalog's remote entries only.
   */
  private owned: ReadonlySet<number> | undefined;
  /**
   * Every queue's name and redrive target, also while its shard is being loaded again; and, for
   * the shards owned elsewhere, what storage says of theirs (remote entries).
   */
  readonly catalog = new Catalog((shard) => this.owns(shard));

  /** Passed to {@link Queue.purge} by every caller, so the API and the admin purge alike. */
  get purgeCooldownMs(): number {
    return this.options.purgeCooldownMs ?? PURGE_INTERVAL_MS;
  }

  constructor(
    readonly clock: Clock,
    private readonly options: StoreOptions = { deletedRecentlyMs: DELETED_RECENTLY_MS },
  ) {
    this.listener = {
      available: (q) => {
        for (const l of this.availableListeners) l(q);
      },
      deadline: (q) => {
        for (const l of this.deadlineListeners) l(q);
      },
      usage: (q, delta) => {
        // A deleted queue's bytes left the budget with it; a long poll may still tick it.
        if (!q.deleted) this.budget.add(q.accountId, delta);
      },
    };
    this.budget = new Budget(
      options.maxMemory,
      (accountId) => this.tenants.byAccountId(accountId)?.memoryShare,
      options.onRefused,
    );
    if (options.ownedShards !== undefined) this.owned = new Set(options.ownedShards);
    this.moveTasks = new MoveTasks((e) => this.listener.change?.(e));
    this.tenants = new Tenants((e) => this.listener.change?.(e));
  }

  /** Subscribes to every change; once anyone does, queues start reporting them. */
  onChange(fn: (e: ChangeEvent) => void): void {
    this.changeListeners.push(fn);
    this.listener.change = (e) => {
      for (const l of this.changeListeners) l(e);
    };
  }

  /** Messages became receivable in a queue, or the queue was deleted (see CoreListener). */
  onAvailable(fn: (q: Queue) => void): void {
    this.availableListeners.push(fn);
  }

  /** A message is to go to a dead-letter queue another process holds (see CoreListener). */
  onDeadLetterAway(fn: (q: Queue, m: Message, target: RemoteQueue) => void): void {
    this.awayListeners.push(fn);
    // Only once someone relays them do queues hold messages for another process (Queue.hold).
    this.listener.deadLetterAway = (q, m, target) => {
      for (const l of this.awayListeners) l(q, m, target);
    };
  }

  /** A move task's message is to go to a destination another process holds (see MoveAway). */
  onMoveAway(fn: (away: MoveAway) => void): void {
    this.moveAwayListeners.push(fn);
  }

  /** A queue's next delay or visibility deadline may have moved earlier (see CoreListener). */
  onDeadline(fn: (q: Queue) => void): void {
    this.deadlineListeners.push(fn);
  }

  get(accountId: string, name: string, region?: string): Queue | undefined {
    return this.queues.get(queueKey(accountId, name, region));
  }

  require(accountId: string, name: string, region?: string): Queue {
    const q = this.queues.get(queueKey(accountId, name, region));
    if (q === undefined) {
      this.checkAvailable(accountId, region ?? DEFAULT_REGION, name);
      throw new CoreError('QueueDoesNotExist', 'The specified queue does not exist.');
    }
    return q;
  }

  /**
   * Throws ServiceUnavailable when the named queue's shard is not here now, so that a queue that
   * is being loaded is never answered as missing (nor created a second time). Called on a miss:
   * the hash costs nothing while every shard is here.
   */
  checkAvailable(accountId: string, region: string, name: string): void {
    if (this.unavailable.size === 0) return;
    const shard = shardOf(accountId, region, name);
    // A shard owned elsewhere is not being loaded here: its queue is simply not this store's.
    if (this.unavailable.has(shard) && this.owns(shard)) {
      throw new CoreError('ServiceUnavailable', 'The queue is being loaded; please retry.');
    }
  }

  /** Whether the shard's queues are this store's (every shard unless told otherwise). */
  owns(shard: number): boolean {
    return this.owned === undefined || this.owned.has(shard);
  }

  /**
   * The shards this store owns from now on (`'all'`: every one, the default); returns those whose
   * ownership changed. A shard given away leaves at once, as an evicted one does (its long polls
   * are answered, its move tasks forgotten, no change emitted), and its catalog entries become
   * remote ones. A shard taken is unavailable (ServiceUnavailable) until its queues are restored
   * and {@link shardLoaded} is called, and its remote entries are listed until then.
   */
  setOwnedShards(shards: Iterable<number> | 'all'): number[] {
    const old = this.owned;
    const before = (s: number): boolean => old === undefined || old.has(s);
    this.owned = shards === 'all' ? undefined : new Set(shards);
    const changed: number[] = [];
    for (let s = 0; s < SHARD_COUNT; s++) {
      if (before(s) === this.owns(s)) continue;
      changed.push(s);
    }
    for (const s of changed) {
      if (this.owns(s)) {
        this.unavailable.add(s);
        this.catalog.adopt(s);
      } else {
        this.dropQueues(s);
        this.unavailable.delete(s);
        this.catalog.release(s);
      }
    }
    return changed;
  }

  /**
   * Creates a queue, or returns the existing one when every given attribute equals the queue's
   * (AWS's idempotency rule); other values are QueueNameExists.
   */
  create(
    id: QueueIdentity,
    attributes: Readonly<Record<string, string>>,
    tags: Readonly<Record<string, string>>,
  ): { queue: Queue; created: boolean } {
    const fifoName = id.name.endsWith('.fifo');
    if (!(fifoName ? FIFO_QUEUE_NAME : QUEUE_NAME).test(id.name)) {
      throw new CoreError(
        'InvalidParameterValue',
        'Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length',
      );
    }
    const fifoAttr = attributes.FifoQueue?.toLowerCase();
    if (fifoName && fifoAttr !== 'true') {
      throw new CoreError(
        'InvalidParameterValue',
        'The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length.',
      );
    }
    if (!fifoName && fifoAttr === 'true') {
      throw new CoreError(
        'InvalidParameterValue',
        'The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length.',
      );
    }
    const valid = validateAttributes(attributes, { fifo: fifoName, creating: true });
    const resolved = resolveAttributes(defaultAttributes(fifoName), valid);
    const now = this.clock.now();
    const key = queueKey(id.accountId, id.name, id.region);
    const existing = this.queues.get(key);
    if (existing === undefined) this.checkAvailable(id.accountId, id.region, id.name);
    if (existing !== undefined) {
      for (const [name, value] of Object.entries(valid)) {
        if ((existing.attributes[name] ?? '') !== value) {
          throw new CoreError(
            'QueueNameExists',
            `A queue already exists with the same name and a different value for attribute ${name}`,
          );
        }
      }
      return { queue: existing, created: false };
    }
    const deletedAt = this.recentlyDeleted.get(key);
    if (deletedAt !== undefined) {
      if (now - deletedAt < this.options.deletedRecentlyMs) {
        throw new CoreError(
          'QueueDeletedRecently',
          'You must wait 60 seconds after deleting a queue before you can create another with the same name.',
        );
      }
      this.recentlyDeleted.delete(key);
    }
    this.checkRedrive(
      { ...id, arn: `arn:aws:sqs:${id.region}:${id.accountId}:${id.name}`, fifo: fifoName },
      valid,
    );
    const queue = new Queue(
      id,
      resolved,
      tags,
      now,
      this.listener,
      this.queueByArn,
      undefined,
      this.remoteByArn,
    );
    this.queues.set(ownString(key), queue);
    this.catalog.put(queue);
    this.budget.add(queue.accountId, QUEUE_OVERHEAD);
    this.listener.change?.({ type: 'queue-put', queue });
    return { queue, created: true };
  }

  /** Puts back a queue read from storage, as it was; emits nothing. */
  restore(queue: Queue): void {
    const old = this.queues.get(queue.key);
    if (old !== undefined) this.forget(old);
    this.queues.set(ownString(queue.key), queue);
    this.catalog.put(queue);
    // Its messages were counted as they were restored into it (restoreMessage).
    this.budget.add(queue.accountId, QUEUE_OVERHEAD);
  }

  /** Builds a Queue bound to this store's listeners, for the loader. */
  newQueue(
    id: QueueIdentity,
    attributes: Record<string, string>,
    tags: Record<string, string>,
    createdAt: number,
    uid: string,
  ): Queue {
    return new Queue(id, attributes, tags, createdAt, this.listener, this.queueByArn, uid, this.remoteByArn);
  }

  delete(queue: Queue): void {
    if (this.queues.get(queue.key) !== queue) return;
    this.queues.delete(queue.key);
    this.catalog.remove(queue);
    this.forget(queue);
    if (this.options.deletedRecentlyMs > 0) {
      const now = this.clock.now();
      this.recentlyDeleted.set(queue.key, now);
      // Forget names whose 60 s have passed, so the map stays as small as the recent deletes.
      for (const [k, at] of this.recentlyDeleted) {
        if (now - at >= this.options.deletedRecentlyMs) this.recentlyDeleted.delete(k);
      }
    }
    this.listener.change?.({ type: 'queue-delete', queue });
    // Long-poll waiters on it are answered now, not at the end of their wait.
    this.listener.available?.(queue);
  }

  /** Takes a queue that leaves the store out of the budget; it counts nothing from now on. */
  private forget(queue: Queue): void {
    queue.deleted = true;
    this.budget.add(queue.accountId, -(QUEUE_OVERHEAD + queue.bytes));
  }

  /** The account's queues whose names start with prefix (in `region`, or all), sorted by name. */
  list(accountId: string, prefix = '', region?: string): Queue[] {
    const out: Queue[] = [];
    for (const q of this.queues.values()) {
      if (
        q.accountId === accountId &&
        q.name.startsWith(prefix) &&
        (region === undefined || q.region === region)
      ) {
        out.push(q);
      }
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  all(): IterableIterator<Queue> {
    return this.queues.values();
  }

  get size(): number {
    return this.queues.size;
  }

  // ---- attributes that involve other queues --------------------------------------------

  /**
   * SetQueueAttributes: validates, checks a RedrivePolicy against its target (exists in the same
   * account, same kind, its RedriveAllowPolicy lets this queue name it), then applies.
   */
  setAttributes(queue: Queue, given: Readonly<Record<string, string>>): void {
    const valid = validateAttributes(given, { fifo: queue.fifo, creating: false });
    this.checkRedrive(queue, valid);
    queue.setAttributes(valid, this.clock.now());
    this.catalog.put(queue);
  }

  /**
   * Drops a shard's queues, and the move tasks whose source is one of them, to load them again
   * from storage (restore); emits no change. The catalog keeps naming them meanwhile, and long
   * polls waiting on them are answered now, as for a deleted queue. {@link shardLoaded} ends it.
   */
  evictShard(shard: number): void {
    this.unavailable.add(shard);
    this.catalog.markStale(shard);
    this.dropQueues(shard);
  }

  /** Drops a shard's queues and their move tasks without a change event (evictShard, setOwnedShards). */
  private dropQueues(shard: number): void {
    for (const q of [...this.queues.values()]) {
      if (q.shard !== shard) continue;
      this.queues.delete(q.key);
      q.evicted = true;
      this.forget(q);
      this.moveTasks.forgetSource(q.arn);
      this.listener.available?.(q);
    }
  }

  /** The shard's queues are back: catalog entries of queues it did not bring back go. */
  shardLoaded(shard: number): void {
    this.catalog.dropStale(shard);
    this.unavailable.delete(shard);
    for (const l of this.shardListeners) l(shard);
  }

  /** A shard's queues (and move tasks) were loaded again into this store. */
  onShardLoaded(fn: (shard: number) => void): void {
    this.shardListeners.push(fn);
  }

  /**
   * A queue's RedriveAllowPolicy may name only queues of its own account and region, and its
   * RedrivePolicy only a target there: another tenant's queue is answered as a missing one,
   * whether it exists or not.
   */
  private checkRedrive(
    source: QueueIdentity & { readonly arn: string; readonly fifo: boolean },
    valid: Readonly<Record<string, string>>,
  ): void {
    const allow = valid.RedriveAllowPolicy;
    if (allow !== undefined && allow !== '') checkRedriveSources(allow, source);
    const raw = valid.RedrivePolicy;
    if (raw === undefined || raw === '') return;
    const arn = parseRedrivePolicy(raw).deadLetterTargetArn;
    const target = this.byArnIn(arn, source);
    checkRedriveTarget(
      raw,
      source,
      target === undefined
        ? this.remoteTarget(arn, source)
        : { arn: target.arn, fifo: target.fifo, redriveAllowPolicy: target.attributes.RedriveAllowPolicy },
    );
  }

  /**
   * A dead-letter target in a shard owned elsewhere, as the catalog's remote entry has it: its
   * owner alone holds the queue, and the entry carries what the checks need (kind, allow policy).
   */
  private remoteTarget(
    arn: string,
    home: { readonly accountId: string; readonly region: string },
  ): RedriveTarget | undefined {
    const a = parseQueueArn(arn);
    if (a === undefined || a.accountId !== home.accountId || a.region !== home.region) return undefined;
    if (!this.catalog.isRemote(a.accountId, a.region, a.name)) return undefined;
    const e = this.catalog.get(a.accountId, a.region, a.name);
    return e === undefined
      ? undefined
      : { arn: e.arn, fifo: e.fifo, redriveAllowPolicy: e.redriveAllowPolicy };
  }

  /** The queue an ARN names, if it exists (in any account and region). */
  byArn(arn: string): Queue | undefined {
    const a = parseQueueArn(arn);
    if (a === undefined) return undefined;
    return this.queues.get(queueKey(a.accountId, a.name, a.region));
  }

  /**
   * The queue an ARN names when it is in `home`'s account and region; undefined otherwise, as for
   * a queue that does not exist (a caller learns nothing of other accounts' queues).
   */
  byArnIn(arn: string, home: { readonly accountId: string; readonly region: string }): Queue | undefined {
    const a = parseQueueArn(arn);
    if (a === undefined || a.accountId !== home.accountId || a.region !== home.region) return undefined;
    const q = this.queues.get(queueKey(a.accountId, a.name, a.region));
    if (q === undefined) this.checkAvailable(a.accountId, a.region, a.name);
    return q;
  }

  /** ListDeadLetterSourceQueues: the queues of `dlq`'s account and region whose RedrivePolicy names it. */
  deadLetterSources(dlq: Queue): CatalogEntry[] {
    return this.catalog.deadLetterSources(dlq);
  }

  // ---- message move tasks -------------------------------------------------------------

  /**
   * StartMessageMoveTask, with AWS's checks: the source exists and is a dead-letter queue of some
   * queue, a destination (when given) exists and is of the source's kind, the rate is 1-500,
   * and no task is running on the source already.
   */
  startMoveTask(
    accountId: string,
    sourceArn: string,
    destinationArn: string | undefined,
    rate: number | undefined,
    region: string = DEFAULT_REGION,
  ): MoveTask {
    const caller = { accountId, region };
    const source = this.byArnIn(sourceArn, caller);
    if (source === undefined) {
      throw new CoreError(
        'ResourceNotFoundException',
        "The resource that you specified for the SourceArn parameter doesn't exist.",
      );
    }
    if (this.deadLetterSources(source).length === 0) {
      throw new CoreError('InvalidParameterValue', 'Source queue must be configured as a Dead Letter Queue.');
    }
    if (destinationArn !== undefined) {
      // Another process's queue is known from its remote catalog entry, kind included.
      const dest = this.byArnIn(destinationArn, caller) ?? this.remoteTarget(destinationArn, caller);
      if (dest === undefined) {
        throw new CoreError(
          'ResourceNotFoundException',
          "The resource that you specified for the DestinationArn parameter doesn't exist.",
        );
      }
      if (dest.fifo !== source.fifo) {
        throw new CoreError(
          'InvalidParameterValue',
          'The destination queue must be the same type of queue as the source queue (standard or FIFO).',
        );
      }
    }
    if (rate !== undefined && (!Number.isInteger(rate) || rate < 1 || rate > MAX_MOVE_RATE)) {
      throw new CoreError(
        'InvalidParameterValue',
        `Value ${rate} for parameter MaxNumberOfMessagesPerSecond is invalid. Reason: Must be between 1 and ${MAX_MOVE_RATE}.`,
      );
    }
    return this.moveTasks.start(source, destinationArn, rate, this.clock.now());
  }

  /** CancelMessageMoveTask: the task a handle names, if it is running; it is CANCELLING after. */
  cancelMoveTask(accountId: string, handle: string, region: string = DEFAULT_REGION): MoveTask {
    const { taskId, sourceArn } = decodeTaskHandle(handle);
    const source = this.byArnIn(sourceArn, { accountId, region });
    if (source === undefined) {
      throw new CoreError(
        'ResourceNotFoundException',
        "The resource that you specified for the SourceArn parameter doesn't exist.",
      );
    }
    const task = this.moveTasks.find(sourceArn, taskId);
    if (task === undefined) throw new CoreError('ResourceNotFoundException', 'Task does not exist.');
    this.moveTasks.cancel(task);
    return task;
  }

  /**
   * Advances a task by up to `budget` messages (the driver's call); returns how many moved. Only
   * queues of the source's account and region are found: a message whose origin is another
   * account's queue (dead-lettered there by a policy stored before that was refused) stays put.
   */
  stepMoveTask(task: MoveTask, budget: number): number {
    // A task dropped with its shard (evictShard) is not this store's any more: what storage holds
    // of it comes back with the shard, as another object.
    if (this.moveTasks.find(task.sourceArn, task.taskId) !== task) return 0;
    const home = parseQueueArn(task.sourceArn);
    // Without anyone to send them (one process holds every shard), no destination is remote.
    const away: MoveAwayHooks | undefined =
      home === undefined || this.moveAwayListeners.length === 0
        ? undefined
        : {
            remote: (arn) => (this.remoteTarget(arn, home) === undefined ? undefined : this.remoteByArn(arn)),
            relay: (source, message, target, redriven) => {
              for (const l of this.moveAwayListeners) l({ task, source, message, target, redriven });
            },
          };
    try {
      return this.moveTasks.step(
        task,
        this.clock.now(),
        budget,
        (arn) => (home === undefined ? undefined : this.byArnIn(arn, home)),
        away,
      );
    } catch (e) {
      // The source's or the destination's shard is being loaded: the task waits, it does not fail.
      if (e instanceof CoreError && e.code === 'ServiceUnavailable') return 0;
      throw e;
    }
  }

  /**
   * The answer to a move task's relay (onMoveAway): `arrived`, the destination's owner has the
   * message durably, so it leaves the source now (unless its hold is over: then a later step
   * sends it again and the destination's mark answers); `gone`, the destination does not exist,
   * so the task fails and the message is visible again at once; `unknown`, it stays held and is
   * sent again a moment later (MoveTasks.relayed). A task or queue no longer this store's (its
   * shard read back or given away) is left alone: its next owner sends what it finds again.
   */
  movedAway(away: MoveAway, outcome: 'arrived' | 'gone' | 'unknown'): void {
    const { task, source, message } = away;
    if (this.moveTasks.find(task.sourceArn, task.taskId) !== task || source.deleted) return;
    const now = this.clock.now();
    if (outcome === 'arrived') {
      // Its hold over (taken again by a later step, or gone): that sending's answer decides.
      if (source.completeMove(message, now)) this.moveTasks.relayed(task, message, 'arrived', now);
      return;
    }
    if (outcome === 'gone') source.releaseHold(message, now);
    this.moveTasks.relayed(task, message, outcome, now);
  }
}
