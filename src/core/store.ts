import { validateAttributes } from './attributes.js';
import type { Clock } from './clock.js';
import { CoreError } from './errors.js';
import type { ChangeEvent, CoreListener } from './events.js';
import { Queue, queueKey, type QueueIdentity } from './queue.js';

export interface StoreOptions {
  /** How long a deleted queue's name stays taken; AWS: 60 s. 0 turns the rule off. */
  readonly deletedRecentlyMs: number;
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
  private readonly listener: CoreListener;
  private readonly changeListeners: Array<(e: ChangeEvent) => void> = [];
  private readonly availableListeners: Array<(q: Queue) => void> = [];
  private readonly deadlineListeners: Array<(q: Queue) => void> = [];

  constructor(
    readonly clock: Clock,
    private readonly options: StoreOptions = { deletedRecentlyMs: 60_000 },
  ) {
    this.listener = {
      available: (q) => {
        for (const l of this.availableListeners) l(q);
      },
      deadline: (q) => {
        for (const l of this.deadlineListeners) l(q);
      },
    };
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

  /** A queue's next delay or visibility deadline may have moved earlier (see CoreListener). */
  onDeadline(fn: (q: Queue) => void): void {
    this.deadlineListeners.push(fn);
  }

  get(accountId: string, name: string): Queue | undefined {
    return this.queues.get(queueKey(accountId, name));
  }

  require(accountId: string, name: string): Queue {
    const q = this.queues.get(queueKey(accountId, name));
    if (q === undefined) throw new CoreError('QueueDoesNotExist', 'The specified queue does not exist.');
    return q;
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
    if (!fifoName) delete valid.FifoQueue;
    const now = this.clock.now();
    const key = queueKey(id.accountId, id.name);
    const existing = this.queues.get(key);
    if (existing !== undefined) {
      for (const [name, value] of Object.entries(valid)) {
        if (existing.attributes[name] !== value) {
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
    const queue = new Queue(id, valid, tags, now, this.listener);
    this.queues.set(key, queue);
    this.listener.change?.({ type: 'queue-put', queue });
    return { queue, created: true };
  }

  /** Puts back a queue read from storage, as it was; emits nothing. */
  restore(queue: Queue): void {
    this.queues.set(queue.key, queue);
  }

  /** Builds a Queue bound to this store's listeners, for the loader. */
  newQueue(
    id: QueueIdentity,
    attributes: Record<string, string>,
    tags: Record<string, string>,
    createdAt: number,
    uid: string,
  ): Queue {
    return new Queue(id, attributes, tags, createdAt, this.listener, uid);
  }

  delete(queue: Queue): void {
    if (this.queues.get(queue.key) !== queue) return;
    this.queues.delete(queue.key);
    queue.deleted = true;
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

  /** The account's queues whose names start with prefix, sorted by name. */
  list(accountId: string, prefix = ''): Queue[] {
    const out: Queue[] = [];
    for (const q of this.queues.values()) {
      if (q.accountId === accountId && q.name.startsWith(prefix)) out.push(q);
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  all(): IterableIterator<Queue> {
    return this.queues.values();
  }

  get size(): number {
    return this.queues.size;
  }
}
