import type { Clock } from '../core/clock.js';
import type { MoveTask } from '../core/movetasks.js';
import type { QueueStore } from '../core/store.js';

/**
 * The move-task driver: advances the store's message move tasks (core/movetasks.ts) in the
 * background, one timer per running task, without blocking the event loop.
 *
 * - With MaxNumberOfMessagesPerSecond R: a token bucket. A step runs every max(1000/R, 50) ms and
 *   moves what the credit earned since the last step allows (at most one second's worth), so a
 *   task moves R messages a second on average whatever the timer's jitter. The first message
 *   moves at once.
 * - Without a rate (AWS: "the system will optimize the rate"): as fast as the event loop allows,
 *   CHUNK messages per step, the next step on a 0 ms timer, so requests keep being served.
 * - CancelMessageMoveTask sets the task CANCELLING; `wake` runs its next step at once, which
 *   makes it CANCELLED.
 * - A task waiting only for the answers of messages sent to another owner (core/movetasks.ts,
 *   relays), or for the holds a task read back inherited, steps every MIN_INTERVAL_MS until they
 *   come.
 * - A task that is done (COMPLETED, CANCELLED, FAILED) drops its timer. Tasks that were RUNNING
 *   in a store loaded from Redis are picked up by the constructor.
 */
const CHUNK = 500;
const MIN_INTERVAL_MS = 50;

interface Running {
  readonly task: MoveTask;
  timer: NodeJS.Timeout | undefined;
  credit: number;
  lastAt: number;
}

export class MoveTaskRunner {
  private readonly running = new Map<MoveTask, Running>();
  private closed = false;

  constructor(
    private readonly store: QueueStore,
    private readonly clock: Clock,
  ) {
    for (const task of store.moveTasks.running()) this.start(task);
    // A shard read back from storage brings its running tasks back as new objects.
    store.onShardLoaded(() => {
      for (const task of store.moveTasks.running()) this.start(task);
    });
  }

  /** How many tasks have a timer: for tests and metrics. */
  get size(): number {
    return this.running.size;
  }

  start(task: MoveTask): void {
    if (this.closed || this.running.has(task) || !task.active) return;
    const r: Running = { task, timer: undefined, credit: 1, lastAt: this.clock.now() };
    this.running.set(task, r);
    this.schedule(r, 0);
  }

  /** Runs a task's next step now (after a cancel). */
  wake(task: MoveTask): void {
    const r = this.running.get(task);
    if (r === undefined) {
      this.start(task);
      return;
    }
    this.clear(r);
    this.schedule(r, 0);
  }

  /** Stops every timer (shutdown, or the store is being replaced); the tasks stay as they are. */
  close(): void {
    this.closed = true;
    for (const r of this.running.values()) this.clear(r);
    this.running.clear();
  }

  private step(r: Running): void {
    r.timer = undefined;
    if (this.closed) return;
    const rate = r.task.maxNumberOfMessagesPerSecond;
    let budget = CHUNK;
    if (rate !== undefined) {
      const now = this.clock.now();
      r.credit = Math.min(rate, r.credit + ((now - r.lastAt) * rate) / 1000);
      r.lastAt = now;
      budget = Math.floor(r.credit);
    }
    // A cancelling task takes its last step whatever its credit.
    const moved = budget > 0 || r.task.status !== 'RUNNING' ? this.store.stepMoveTask(r.task, budget) : 0;
    if (rate !== undefined) r.credit -= moved;
    // Done, or dropped with its shard (what storage holds of it is started when it is loaded again).
    if (!r.task.active || this.store.moveTasks.find(r.task.sourceArn, r.task.taskId) !== r.task) {
      this.running.delete(r.task);
      return;
    }
    // Waiting for relays to another owner only (nothing to take meanwhile): no busy loop on them.
    const idle = moved === 0 && r.task.awaiting > 0;
    const delay = rate !== undefined ? Math.max(MIN_INTERVAL_MS, 1000 / rate) : idle ? MIN_INTERVAL_MS : 0;
    this.schedule(r, delay);
  }

  /** A timer, even for "now": other work queued on the event loop runs between two steps. */
  private schedule(r: Running, delayMs: number): void {
    const t = setTimeout(() => this.step(r), delayMs);
    // A task never holds the process open; shutdown stops it (close) and it resumes after a reload.
    t.unref();
    r.timer = t;
  }

  private clear(r: Running): void {
    if (r.timer !== undefined) clearTimeout(r.timer);
    r.timer = undefined;
  }
}
