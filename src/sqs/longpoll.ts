import type { Clock } from '../core/clock.js';
import type { Message } from '../core/message.js';
import type { Queue } from '../core/queue.js';
import type { QueueStore } from '../core/store.js';

/**
 * Long-poll waiters: ReceiveMessage calls that found nothing and may wait up to 20 s.
 *
 * A waiter is parked on its queue's list, oldest first. It is served when the core says messages
 * became receivable (a send, a visibility set to 0, or a deadline that passed), never by polling:
 * - `available(queue)` from the core schedules one drain of that queue on a microtask, so the
 *   core's operation finishes before we receive from it again;
 * - while a queue has waiters, one timer per queue is armed for its next delay or visibility
 *   deadline (FIFO: or retention deadline, which can unlock a group), and re-armed when the core
 *   reports an earlier one (`deadline`); when it fires, `queue.tick()` moves messages and calls
 *   `available` itself;
 * - a deleted queue calls `available` too, and its waiters are answered with no messages;
 * - each waiter has its own timeout timer, answered with no messages at its WaitTimeSeconds;
 * - a waiter whose client went away is dropped before it can take messages, so nothing is hidden
 *   for a receiver that will never see it.
 */
interface Waiter {
  readonly queue: Queue;
  readonly max: number;
  readonly visibilityTimeoutMs: number | undefined;
  /** FIFO: the ReceiveRequestAttemptId the receive came with, so what it gets is recorded. */
  readonly attemptId: string | undefined;
  readonly resolve: (messages: Message[]) => void;
  timer: NodeJS.Timeout | undefined;
  done: boolean;
}

interface QueueWaiters {
  readonly waiters: Waiter[];
  timer: NodeJS.Timeout | undefined;
  timerAt: number;
  drainScheduled: boolean;
}

export class LongPoller {
  private readonly byQueue = new Map<Queue, QueueWaiters>();
  private count = 0;
  private closed = false;

  constructor(
    store: QueueStore,
    private readonly clock: Clock,
  ) {
    store.onAvailable((q) => this.available(q));
    // A delayed send, a receive or a visibility change can bring the next deadline forward.
    store.onDeadline((q) => {
      const qw = this.byQueue.get(q);
      if (qw !== undefined) this.armDeadline(q, qw);
    });
  }

  get waiting(): number {
    return this.count;
  }

  /**
   * Waits up to waitMs for messages. `onAbort` is handed a function to call when the client goes
   * away; after it, the waiter takes nothing.
   */
  wait(
    queue: Queue,
    max: number,
    visibilityTimeoutMs: number | undefined,
    waitMs: number,
    onAbort: (abort: () => void) => void,
    attemptId?: string,
  ): Promise<Message[]> {
    if (this.closed) return Promise.resolve([]);
    return new Promise<Message[]>((resolve) => {
      const waiter: Waiter = {
        queue,
        max,
        visibilityTimeoutMs,
        attemptId,
        resolve,
        timer: undefined,
        done: false,
      };
      waiter.timer = setTimeout(() => this.finish(waiter, []), waitMs);
      let qw = this.byQueue.get(queue);
      if (qw === undefined) {
        qw = { waiters: [], timer: undefined, timerAt: Number.POSITIVE_INFINITY, drainScheduled: false };
        this.byQueue.set(queue, qw);
      }
      qw.waiters.push(waiter);
      this.count++;
      this.armDeadline(queue, qw);
      onAbort(() => this.finish(waiter, []));
    });
  }

  /** Answers every waiter with no messages: for shutdown and for losing leadership. */
  closeAll(): void {
    this.closed = true;
    for (const qw of [...this.byQueue.values()]) {
      for (const w of [...qw.waiters]) this.finish(w, []);
    }
  }

  /** Answers the waiters of one shard's queues with no messages: the shard is being given away. */
  closeShard(shard: number): void {
    for (const [queue, qw] of [...this.byQueue]) {
      if (queue.shard !== shard) continue;
      for (const w of [...qw.waiters]) this.finish(w, []);
    }
  }

  private available(queue: Queue): void {
    const qw = this.byQueue.get(queue);
    if (qw === undefined || qw.drainScheduled) return;
    qw.drainScheduled = true;
    queueMicrotask(() => {
      qw.drainScheduled = false;
      this.drain(queue, qw);
    });
  }

  private drain(queue: Queue, qw: QueueWaiters): void {
    if (queue.deleted) {
      for (const w of [...qw.waiters]) this.finish(w, []);
      return;
    }
    const now = this.clock.now();
    while (qw.waiters.length > 0) {
      const w = qw.waiters[0] as Waiter;
      let got: Message[];
      try {
        got = queue.receive(w.max, w.visibilityTimeoutMs, now, w.attemptId);
      } catch {
        // OverLimit: nothing can be handed out now; the waiters time out as usual.
        break;
      }
      if (got.length === 0) break;
      this.finish(w, got);
      // VisibilityTimeout 0 left them receivable, so the next waiter would receive them again,
      // and the one just served builds its receipt handles and receive counts from these
      // messages only when its `await` resumes. That resumption was queued by finish(); the rest
      // waits for a microtask queued after it.
      if (got.some((m) => m.state === 'visible')) {
        this.available(queue);
        return;
      }
    }
    this.armDeadline(queue, qw);
  }

  private armDeadline(queue: Queue, qw: QueueWaiters): void {
    if (qw.waiters.length === 0) return;
    const at = queue.nextTransitionAt();
    if (at === qw.timerAt) return;
    if (qw.timer !== undefined) clearTimeout(qw.timer);
    qw.timer = undefined;
    qw.timerAt = at;
    if (at === Number.POSITIVE_INFINITY) return;
    qw.timer = setTimeout(
      () => {
        qw.timer = undefined;
        qw.timerAt = Number.POSITIVE_INFINITY;
        queue.tick(this.clock.now());
        // tick() calls available() when something became visible; otherwise re-arm for the next.
        this.armDeadline(queue, qw);
      },
      Math.max(0, at - this.clock.now()),
    );
  }

  private finish(w: Waiter, messages: Message[]): void {
    if (w.done) return;
    w.done = true;
    if (w.timer !== undefined) clearTimeout(w.timer);
    const qw = this.byQueue.get(w.queue);
    if (qw !== undefined) {
      const i = qw.waiters.indexOf(w);
      if (i >= 0) qw.waiters.splice(i, 1);
      if (qw.waiters.length === 0) {
        if (qw.timer !== undefined) clearTimeout(qw.timer);
        this.byQueue.delete(w.queue);
      }
    }
    this.count--;
    w.resolve(messages);
  }
}
