// StartMessageMoveTask, CancelMessageMoveTask, ListMessageMoveTasks (core/movetasks.ts; the
// driver that runs the tasks is src/sqs/movetasks.ts).
import { MOVE_TASK_HISTORY } from '../../core/limits.js';
import { CoreError } from '../../core/errors.js';
import { invalidParameter } from '../errors.js';
import type { ListMessageMoveTasksResultEntry } from '../model.generated.js';
import { toSqsError, type Action } from '../service.js';

export const startMessageMoveTask: Action<'StartMessageMoveTask'> = (svc, ctx, input) => {
  try {
    const task = svc.store.startMoveTask(
      ctx.accountId,
      input.SourceArn,
      input.DestinationArn,
      input.MaxNumberOfMessagesPerSecond,
      ctx.region,
    );
    svc.mover.start(task);
    return { TaskHandle: task.handle };
  } catch (e) {
    throw toSqsError(e);
  }
};

export const cancelMessageMoveTask: Action<'CancelMessageMoveTask'> = (svc, ctx, input) => {
  try {
    const task = svc.store.cancelMoveTask(ctx.accountId, input.TaskHandle, ctx.region);
    const moved = task.moved;
    svc.mover.wake(task);
    return { ApproximateNumberOfMessagesMoved: moved };
  } catch (e) {
    throw toSqsError(e);
  }
};

/** The source's most recent tasks (MaxResults 1-10, default 1), newest first. */
export const listMessageMoveTasks: Action<'ListMessageMoveTasks'> = (svc, ctx, input) => {
  const max = input.MaxResults ?? 1;
  if (!Number.isInteger(max) || max < 1 || max > MOVE_TASK_HISTORY) {
    throw invalidParameter('MaxResults', max, `Must be between 1 and ${MOVE_TASK_HISTORY}, if provided.`);
  }
  const source = svc.store.byArnIn(input.SourceArn, ctx);
  if (source === undefined) {
    throw toSqsError(
      new CoreError(
        'ResourceNotFoundException',
        "The resource that you specified for the SourceArn parameter doesn't exist.",
      ),
    );
  }
  const Results = svc.store.moveTasks
    .list(source.arn)
    .slice(0, max)
    .map((t) => {
      const e: ListMessageMoveTasksResultEntry = {
        Status: t.status,
        SourceArn: t.sourceArn,
        ApproximateNumberOfMessagesMoved: t.moved,
        ApproximateNumberOfMessagesToMove: t.toMove,
        StartedTimestamp: t.startedAt,
      };
      // AWS: the handle only while RUNNING; DestinationArn and the rate only when they were given.
      if (t.status === 'RUNNING') e.TaskHandle = t.handle;
      if (t.destinationArn !== undefined) e.DestinationArn = t.destinationArn;
      if (t.maxNumberOfMessagesPerSecond !== undefined)
        e.MaxNumberOfMessagesPerSecond = t.maxNumberOfMessagesPerSecond;
      if (t.failureReason !== undefined) e.FailureReason = t.failureReason;
      return e;
    });
  return { Results };
};
