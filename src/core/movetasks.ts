/**
 * Message move tasks (StartMessageMoveTask): moving the messages of a dead-letter queue back to
 * their source queues, or to one destination queue, in the background.
 *
 * A task is pure state here; it advances only when someone calls `step(now, budget)` (the
 * driver in src/sqs/movetasks.ts, one timer per running task, at the task's rate). Its states:
 *
 *   RUNNING ──(moved ApproximateNumberOfMessagesToMove, or the source has no visible message left)──► COMPLETED
 *   RUNNING ──(CancelMessageMoveTask)──► CANCELLING ──(next step)──► CANCELLED
 *   RUNNING ──(the source, or a destination, no longer exists)──► FAILED (FailureReason: the error code)
 *
 * A step takes the source's oldest receivable message (FIFO: the head of the oldest receivable
 * group, so group order is kept), removes it and sends it to its destination as a new message
 * (AWS: "all redriven messages are considered new messages", with a new MessageId and enqueue
 * time; a FIFO message keeps its group and deduplication id). In-flight messages are skipped.
 *
 * A destination another process holds (many owners) is sent the message through `relay` instead:
 * the message is held out of sight in the source (Queue.holdForMove, so a FIFO group waits for
 * it) and leaves it, counted as moved, only when that process has it durably (`relayed`). While
 * relays are unanswered the task does not complete; one that got no answer is sent again a
 * second later under the same id (RESEND_AFTER_MS). A task read back (its shard taken from a
 * process that died, or read in again) finds the messages the process before it held for such
 * relays still held (the hold is stored) and sends them again at once under the same ids, so the
 * destination's mark answers those that had arrived; one that may be held for a dead letter of
 * the source's own instead is waited for until its hold ends, then taken as any other.
 */
import { createHash } from 'node:crypto';
import { uuid } from './ids.js';
import { CoreError } from './errors.js';
import type { ChangeEvent, RemoteQueue } from './events.js';
import { MOVE_TASK_HISTORY } from './limits.js';
import type { Message, NewMessage } from './message.js';
import { asRemote, type Queue } from './queue.js';

/**
 * How long after a relay got no answer (`unknown`) it is sent again, held meanwhile, rather than
 * once its hold ends: its destination's owner may have died with it, and the next one answers
 * within a lease TTL (the router waits for it). Sent under the same id, the message cannot arrive
 * twice (the destination's mark answers), whatever became of the sending before.
 */
export const RESEND_AFTER_MS = 1000;

/**
 * Whether a hold of `msg` in `source` may be for a dead letter of the source's own (Queue.hold
 * from a receive past its maxReceiveCount) rather than for a move task's relay.
 */
function mayBeDeadLetter(source: Queue, msg: Message): boolean {
  return source.redrive !== null && msg.receiveCount >= source.redrive.maxReceiveCount;
}

export type MoveTaskStatus = 'RUNNING' | 'COMPLETED' | 'CANCELLING' | 'CANCELLED' | 'FAILED';

const NON_EXISTENT_QUEUE = 'AWS.SimpleQueueService.NonExistentQueue';

export interface MoveTaskState {
  readonly taskId: string;
  readonly sourceArn: string;
  readonly destinationArn: string | undefined;
  readonly maxNumberOfMessagesPerSecond: number | undefined;
  readonly startedAt: number;
  readonly toMove: number;
  status: MoveTaskStatus;
  moved: number;
  failureReason: string | undefined;
}

export class MoveTask implements MoveTaskState {
  readonly taskId: string;
  readonly sourceArn: string;
  readonly destinationArn: string | undefined;
  readonly maxNumberOfMessagesPerSecond: number | undefined;
  readonly startedAt: number;
  readonly toMove: number;
  status: MoveTaskStatus;
  moved: number;
  failureReason: string | undefined;
  /**
   * Messages of its source held while they are sent to a destination another process holds (many
   * owners), until they arrived, are known not to, or their hold ends. Not stored: a task read
   * back sends its source's messages again, and the destination's mark answers those that had
   * arrived.
   */
  readonly relays = new Set<Message>();
  /**
   * Relays whose sending got no answer (`unknown`: no owner answered in time, or the answer was
   * lost), with when to send them again ({@link RESEND_AFTER_MS} later), still held meanwhile.
   */
  readonly resendAt = new Map<Message, number>();
  /**
   * Messages of its source that a hold made before this task object was read back keeps out of
   * sight, and that it does not send again at once (it may be a dead letter's hold: see step),
   * with the end of that hold: the task waits for them as for its relays, and a step takes each
   * again once it is back (the destination's mark answers one that had arrived). Found at its
   * first step.
   */
  readonly inherited = new Map<Message, number>();
  /** Read back from storage: its first step looks for {@link inherited}. */
  lookForHolds = false;

  constructor(s: MoveTaskState) {
    this.taskId = s.taskId;
    this.sourceArn = s.sourceArn;
    this.destinationArn = s.destinationArn;
    this.maxNumberOfMessagesPerSecond = s.maxNumberOfMessagesPerSecond;
    this.startedAt = s.startedAt;
    this.toMove = s.toMove;
    this.status = s.status;
    this.moved = s.moved;
    this.failureReason = s.failureReason;
  }

  /** The opaque TaskHandle: names the task and its source, as AWS's handles do. */
  get handle(): string {
    return encodeTaskHandle(this.taskId, this.sourceArn);
  }

  get active(): boolean {
    return this.status === 'RUNNING' || this.status === 'CANCELLING';
  }

  /** Messages of its source it waits for before it may complete: its relays and those it inherited. */
  get awaiting(): number {
    return this.relays.size + this.inherited.size;
  }
}

export function encodeTaskHandle(taskId: string, sourceArn: string): string {
  return Buffer.from(JSON.stringify({ taskId, sourceArn }), 'utf8').toString('base64');
}

/** The parts of a TaskHandle; InvalidParameterValue when it is not one of ours. */
export function decodeTaskHandle(handle: string): { taskId: string; sourceArn: string } {
  try {
    const v: unknown = JSON.parse(Buffer.from(handle, 'base64').toString('utf8'));
    if (
      v !== null &&
      typeof v === 'object' &&
      'taskId' in v &&
      'sourceArn' in v &&
      typeof v.taskId === 'string' &&
      typeof v.sourceArn === 'string'
    ) {
      return { taskId: v.taskId, sourceArn: v.sourceArn };
    }
  } catch {
    // falls through
  }
  throw new CoreError('InvalidParameterValue', 'Value for parameter TaskHandle is invalid.');
}

/**
 * Every source queue's tasks, the most recent last, at most MOVE_TASK_HISTORY each (the oldest
 * finished one is forgotten when a new one starts). Owned by the QueueStore.
 */
export class MoveTasks {
  private readonly bySource = new Map<string, MoveTask[]>();

  constructor(private readonly emit: (e: ChangeEvent) => void) {}

  /** The source's running (or cancelling) task, if any. */
  active(sourceArn: string): MoveTask | undefined {
    return this.bySource.get(sourceArn)?.find((t) => t.active);
  }

  start(source: Queue, destinationArn: string | undefined, rate: number | undefined, now: number): MoveTask {
    if (this.active(source.arn) !== undefined) {
      throw new CoreError(
        'InvalidParameterValue',
        'There is already a task running. Only one active task is allowed for a source queue arn at a given time.',
      );
    }
    const task = new MoveTask({
      taskId: uuid(),
      sourceArn: source.arn,
      destinationArn,
      maxNumberOfMessagesPerSecond: rate,
      startedAt: now,
      toMove: source.counts(now).visible,
      status: 'RUNNING',
      moved: 0,
      failureReason: undefined,
    });
    this.add(task);
    this.emit({ type: 'move-task-put', task });
    return task;
  }

  /** The source's tasks, most recent first. */
  list(sourceArn: string): MoveTask[] {
    return [...(this.bySource.get(sourceArn) ?? [])].reverse();
  }

  find(sourceArn: string, taskId: string): MoveTask | undefined {
    return this.bySource.get(sourceArn)?.find((t) => t.taskId === taskId);
  }

  /** Every task that still has work: for the driver, at start and after a reload. */
  running(): MoveTask[] {
    const out: MoveTask[] = [];
    for (const tasks of this.bySource.values()) for (const t of tasks) if (t.active) out.push(t);
    return out;
  }

  all(): MoveTask[] {
    return [...this.bySource.values()].flat();
  }

  /** A running task stops moving at its next step; returns how many it had moved. */
  cancel(task: MoveTask): number {
    if (task.status !== 'RUNNING') {
      throw new CoreError('ResourceNotFoundException', 'Task does not exist.');
    }
    task.status = 'CANCELLING';
    this.emit({ type: 'move-task-put', task });
    return task.moved;
  }

  /**
   * Moves up to `budget` messages (a relay started counts as one); returns how many. Sets the
   * final status when the task is done, cancelled or cannot go on. `lookup` finds a queue by ARN
   * (the store's); `away`, one another process holds, and sends a message there.
   */
  step(
    task: MoveTask,
    now: number,
    budget: number,
    lookup: (arn: string) => Queue | undefined,
    away?: MoveAwayHooks,
  ): number {
    if (task.status === 'CANCELLING') {
      this.finish(task, 'CANCELLED');
      return 0;
    }
    if (task.status !== 'RUNNING') return 0;
    const source = lookup(task.sourceArn);
    if (source === undefined) {
      this.finish(task, 'FAILED', NON_EXISTENT_QUEUE);
      return 0;
    }
    const fixed = task.destinationArn === undefined ? undefined : lookup(task.destinationArn);
    const fixedAway =
      task.destinationArn === undefined || fixed !== undefined
        ? undefined
        : away?.remote(task.destinationArn);
    if (task.destinationArn !== undefined && fixed === undefined && fixedAway === undefined) {
      this.finish(task, 'FAILED', NON_EXISTENT_QUEUE);
      return 0;
    }
    /** Where `msg` goes: a queue held here (`dest`), or one another process holds (`target`). */
    const whereTo = (msg: Message): { dest: Queue | undefined; target: RemoteQueue | undefined } => {
      const origin = msg.deadLetterSourceArn;
      const dest =
        fixedAway === undefined ? (fixed ?? (origin === undefined ? undefined : lookup(origin))) : undefined;
      // A message sent away before goes by the destination's mark even to a queue held here: it
      // may be there already (Queue.hold).
      const target =
        dest === undefined
          ? (fixedAway ?? (origin === undefined ? undefined : away?.remote(origin)))
          : msg.relayed && away !== undefined
            ? asRemote(dest)
            : undefined;
      return { dest, target: away === undefined ? undefined : target };
    };
    let n = 0;
    /** Sends `msg`, held, to `target` as the new message it makes there, under its one id. */
    const relay = (msg: Message, target: RemoteQueue, via: MoveAwayHooks): void => {
      n++;
      task.relays.add(msg);
      via.relay(source, msg, target, redriven(msg, target.fifo, redriveId(msg.id, target.uid)));
    };
    // A relay whose answer never came is over when its message's hold is: a later step takes it.
    for (const m of task.relays) if (!source.holds(m, now)) task.relays.delete(m);
    for (const [m, at] of task.resendAt) {
      if (!task.relays.has(m)) task.resendAt.delete(m);
      else if (at <= now && away !== undefined) {
        const { target } = whereTo(m);
        if (target === undefined || !source.holdAgain(m, now)) continue;
        task.resendAt.delete(m);
        relay(m, target, away);
      }
    }
    if (task.lookForHolds) {
      task.lookForHolds = false;
      for (const m of source.heldBefore(now)) {
        // Most likely held for this task's relay by the process before: sent again now, under
        // the same id, so the destination's mark answers it if it had arrived. One that may be
        // held for a dead letter of the source's own (its receives passed the source's
        // maxReceiveCount) might be on its way elsewhere: waited for until its hold ends.
        const target = mayBeDeadLetter(source, m) ? undefined : whereTo(m).target;
        if (target === undefined || away === undefined || !source.holdAgain(m, now)) {
          task.inherited.set(m, m.heapKey);
          continue;
        }
        relay(m, target, away);
      }
    }
    // Likewise for a hold inherited: back in sight, received or gone.
    for (const [m, until] of task.inherited) {
      if (m.state !== 'inflight' || m.heapKey !== until || until <= now) task.inherited.delete(m);
    }
    let moved = 0;
    while (n < budget && task.moved + task.relays.size < task.toMove && task.relays.size < MAX_RELAYING) {
      const msg = source.nextToMove(now);
      if (msg === undefined) break;
      const { dest, target } = whereTo(msg);
      if (target !== undefined && away !== undefined) {
        source.holdForMove(msg, now);
        relay(msg, target, away);
        continue;
      }
      if (dest === undefined) {
        // A message sent to the DLQ directly has no source to go back to (give a DestinationArn);
        // a source that was deleted since is gone.
        this.finish(task, 'FAILED', NON_EXISTENT_QUEUE);
        if (moved > 0) this.emit({ type: 'move-task-put', task });
        return n;
      }
      n++;
      source.takeOut(msg, now);
      const sent = dest.sendMessage(redriven(msg, dest.fifo, uuid()), now).message;
      if (sent !== undefined) this.emit({ type: 'message-moved', from: source, queue: dest, message: sent });
      task.moved++;
      moved++;
    }
    // Not done while messages it sent away are unanswered: they may come back to be taken again.
    if (task.awaiting === 0 && (task.moved >= task.toMove || source.nextToMove(now) === undefined)) {
      this.finish(task, 'COMPLETED');
    } else if (moved > 0) this.emit({ type: 'move-task-put', task });
    return n;
  }

  /**
   * The answer to the relay of `msg` (see step): `arrived`, the destination has it durably and
   * the caller took it out of the source (counted as moved, also when the task was cancelled
   * since: it did move); `gone`, the destination does not exist (the task fails; the caller shows
   * the message again); `unknown`, it stays held, and the task waits for it, and sends it again
   * {@link RESEND_AFTER_MS} after `now`.
   */
  relayed(task: MoveTask, msg: Message, outcome: 'arrived' | 'gone' | 'unknown', now: number): void {
    if (outcome === 'unknown') {
      if (task.relays.has(msg)) task.resendAt.set(msg, now + RESEND_AFTER_MS);
      return;
    }
    task.relays.delete(msg);
    task.resendAt.delete(msg);
    if (outcome === 'arrived') {
      task.moved++;
      if (task.status === 'RUNNING' && task.awaiting === 0 && task.moved >= task.toMove) {
        this.finish(task, 'COMPLETED');
      } else this.emit({ type: 'move-task-put', task });
    } else if (task.status === 'RUNNING') {
      this.finish(task, 'FAILED', NON_EXISTENT_QUEUE);
    }
  }

  /** Drops the tasks of a source whose shard is loaded again (their records are in storage); emits nothing. */
  forgetSource(sourceArn: string): void {
    this.bySource.delete(sourceArn);
  }

  /**
   * Puts back a task read from storage; emits nothing. Its first step looks in its source for the
   * holds of whoever ran it before (MoveTask.inherited).
   */
  restore(task: MoveTask): void {
    task.lookForHolds = true;
    this.add(task, false);
  }

  private finish(task: MoveTask, status: MoveTaskStatus, reason?: string): void {
    task.status = status;
    task.failureReason = reason;
    this.emit({ type: 'move-task-put', task });
  }

  private add(task: MoveTask, trim = true): void {
    let tasks = this.bySource.get(task.sourceArn);
    if (tasks === undefined) {
      tasks = [];
      this.bySource.set(task.sourceArn, tasks);
    }
    tasks.push(task);
    if (tasks.length > 1) tasks.sort((a, b) => a.startedAt - b.startedAt);
    while (trim && tasks.length > MOVE_TASK_HISTORY) {
      const i = tasks.findIndex((t) => !t.active);
      if (i < 0) break;
      const [old] = tasks.splice(i, 1);
      if (old !== undefined) this.emit({ type: 'move-task-delete', task: old });
    }
  }
}

/** How the store lets a step send messages to destinations other processes hold (many owners). */
export interface MoveAwayHooks {
  /** The queue an ARN names when another process holds it (in the task's account and region). */
  remote(arn: string): RemoteQueue | undefined;
  /** `msg` is held in `source` now: send `redriven` to `target`, and answer with `relayed`. */
  relay(source: Queue, msg: Message, target: RemoteQueue, redriven: NewMessage): void;
}

/** At most this many relays of one task wait for their answer at once. */
const MAX_RELAYING = 64;

/**
 * The id a message moved to a destination of another process gets there: the same every time it
 * is sent to that queue, so that a sending whose answer was lost, sent again (by this process or
 * by the next owner of the task's shard), finds the destination's mark for it instead of making
 * a second message. A UUID in form, as every message id is.
 */
export function redriveId(messageId: string, destUid: string): string {
  const h = createHash('sha256').update(`redrive:${destUid}:${messageId}`).digest('hex');
  const v = ((parseInt(h.slice(16, 17), 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${v}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The message a moved message becomes in its destination: a new one, same content and group. */
export function redriven(msg: Message, fifo: boolean, id: string): NewMessage {
  return {
    id,
    body: msg.body,
    md5OfBody: msg.md5OfBody,
    attributes: msg.attributes,
    md5OfAttributes: msg.md5OfAttributes,
    systemAttributes: msg.systemAttributes,
    md5OfSystemAttributes: msg.md5OfSystemAttributes,
    senderId: msg.senderId,
    groupId: msg.groupId,
    deduplicationId: fifo ? (msg.deduplicationId ?? msg.id) : undefined,
  };
}
