import assert from 'node:assert/strict';
import { afterEach, mock, test } from 'node:test';

import { MOVE_TASK_HISTORY } from '../../src/core/limits.js';
import { encodeTaskHandle } from '../../src/core/movetasks.js';
import type { Queue } from '../../src/core/queue.js';

import { MoveTaskRunner } from '../../src/sqs/movetasks.js';
import { throwsCode } from '../support/assertions.js';
import { manualStore, type ManualStore } from '../support/services.js';
import { msg, sendOne } from '../support/queue.js';

/**
 * Message move tasks: the core's pure state machine (store.startMoveTask / stepMoveTask /
 * cancelMoveTask), and the driver that steps it on timers (node:test's mocked setTimeout moved
 * together with a ManualClock).
 */

const ACCOUNT = '000000000000';
const S = 1000;

const world = manualStore;

/** A DLQ holding `n` messages each moved there from `src` (maxReceiveCount 1). */
function deadLetters(w: ManualStore, src: Queue, n: number, prefix = 'm'): void {
  for (let i = 0; i < n; i++) {
    const fifo = src.fifo ? { groupId: 'g', deduplicationId: `${prefix}${i}` } : {};
    sendOne(src, msg(`${prefix}${i}`, fifo), w.clock.now());
  }
  for (let i = 0; i < n; i++) src.receive(10, 0, w.clock.now());
  src.receive(10, 0, w.clock.now());
}

function setupDlq(w: ManualStore, n: number): { dlq: Queue; src: Queue } {
  const dlq = w.create('dlq');
  const src = w.create('src', {
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 1 }),
  });
  deadLetters(w, src, n);
  assert.equal(dlq.size, n, 'the DLQ is filled');
  return { dlq, src };
}

// ---- starting -------------------------------------------------------------------------------

void test('Given a queue that no queue names as its DLQ, when a move task is started on it, then InvalidParameterValue', () => {
  const w = world();
  const q = w.create('plain');
  throwsCode(
    () => w.store.startMoveTask(ACCOUNT, q.arn, undefined, undefined),
    'InvalidParameterValue',
    /Source queue must be configured as a Dead Letter Queue/,
  );
});

void test('Given a source ARN of no queue, when a move task is started, then ResourceNotFoundException', () => {
  const w = world();
  throwsCode(
    () => w.store.startMoveTask(ACCOUNT, `arn:aws:sqs:us-east-1:${ACCOUNT}:nope`, undefined, undefined),
    'ResourceNotFoundException',
    /SourceArn/,
  );
});

void test('Given a DestinationArn of no queue, when a move task is started, then ResourceNotFoundException', () => {
  const w = world();
  const { dlq } = setupDlq(w, 1);
  throwsCode(
    () => w.store.startMoveTask(ACCOUNT, dlq.arn, `arn:aws:sqs:us-east-1:${ACCOUNT}:nope`, undefined),
    'ResourceNotFoundException',
    /DestinationArn/,
  );
});

void test('Given a running task on a DLQ, when another is started on it, then InvalidParameterValue', () => {
  const w = world();
  const { dlq } = setupDlq(w, 3);
  w.store.startMoveTask(ACCOUNT, dlq.arn, undefined, undefined);
  throwsCode(
    () => w.store.startMoveTask(ACCOUNT, dlq.arn, undefined, undefined),
    'InvalidParameterValue',
    /already a task running/,
  );
});

void test('Given a rate of 0 or 501 messages per second, when a task is started, then InvalidParameterValue', () => {
  const w = world();
  const { dlq } = setupDlq(w, 1);
  for (const rate of [0, 501]) {
    throwsCode(() => w.store.startMoveTask(ACCOUNT, dlq.arn, undefined, rate), 'InvalidParameterValue');
  }
});

// ---- progress -------------------------------------------------------------------------------

void test('Given a task over five dead letters, when it steps two at a time, then it reports its progress and completes at five', () => {
  const w = world();
  const { dlq, src } = setupDlq(w, 5);
  const task = w.store.startMoveTask(ACCOUNT, dlq.arn, undefined, undefined);
  assert.equal(task.toMove, 5);
  assert.equal(w.store.stepMoveTask(task, 2), 2);
  assert.equal(task.status, 'RUNNING');
  assert.equal(task.moved, 2);
  w.store.stepMoveTask(task, 2);
  w.store.stepMoveTask(task, 2);
  assert.equal(task.status, 'COMPLETED');
  assert.equal(task.moved, 5);
  assert.equal(dlq.size, 0);
  assert.equal(src.size, 5);
});

void test('Given dead letters from two sources, when moved without a DestinationArn, then each goes back to its own source, as a new message', () => {
  const w = world();
  const dlq = w.create('dlq');
  const policy = JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 1 });
  const a = w.create('a', { RedrivePolicy: policy });
  const b = w.create('b', { RedrivePolicy: policy });
  deadLetters(w, a, 2, 'a');
  deadLetters(w, b, 1, 'b');
  const ids = new Set([...dlq.allMessages()].map((m) => m.id));
  const task = w.store.startMoveTask(ACCOUNT, dlq.arn, undefined, undefined);
  w.store.stepMoveTask(task, 10);
  assert.deepEqual(
    [...a.allMessages()].map((m) => m.body),
    ['a0', 'a1'],
  );
  assert.deepEqual(
    [...b.allMessages()].map((m) => m.body),
    ['b0'],
  );
  for (const m of [...a.allMessages(), ...b.allMessages()]) {
    assert.ok(!ids.has(m.id), 'a redriven message is a new message with a new id');
    assert.equal(m.receiveCount, 0);
  }
});

void test('Given a DestinationArn, when the task runs, then every message goes there', () => {
  const w = world();
  const { dlq, src } = setupDlq(w, 3);
  const dest = w.create('dest');
  const task = w.store.startMoveTask(ACCOUNT, dlq.arn, dest.arn, undefined);
  w.store.stepMoveTask(task, 10);
  assert.equal(dest.size, 3);
  assert.equal(src.size, 0);
  assert.equal(task.status, 'COMPLETED');
});

void test('Given a FIFO DLQ, when its messages are moved back, then their group and order are kept', () => {
  const w = world();
  const dlq = w.create('dlq.fifo');
  const src = w.create('src.fifo', {
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 1 }),
  });
  deadLetters(w, src, 3);
  const task = w.store.startMoveTask(ACCOUNT, dlq.arn, undefined, undefined);
  w.store.stepMoveTask(task, 10);
  const got = src.receive(10, undefined, w.clock.now());
  assert.deepEqual(
    got.map((m) => m.body),
    ['m0', 'm1', 'm2'],
  );
  assert.ok(got.every((m) => m.groupId === 'g'));
});

// ---- cancel and failure ---------------------------------------------------------------------

void test('Given a running task, when it is cancelled, then it is CANCELLING, and its next step makes it CANCELLED without moving more', () => {
  const w = world();
  const { dlq } = setupDlq(w, 4);
  const task = w.store.startMoveTask(ACCOUNT, dlq.arn, undefined, undefined);
  w.store.stepMoveTask(task, 1);
  const cancelled = w.store.cancelMoveTask(ACCOUNT, task.handle);
  assert.equal(cancelled, task);
  assert.equal(task.status, 'CANCELLING');
  assert.equal(w.store.stepMoveTask(task, 10), 0);
  assert.equal(task.status, 'CANCELLED');
  assert.equal(task.moved, 1);
  assert.equal(dlq.size, 3);
});

void test('Given a completed task, when it is cancelled, then ResourceNotFoundException', () => {
  const w = world();
  const { dlq } = setupDlq(w, 1);
  const task = w.store.startMoveTask(ACCOUNT, dlq.arn, undefined, undefined);
  w.store.stepMoveTask(task, 10);
  throwsCode(() => w.store.cancelMoveTask(ACCOUNT, task.handle), 'ResourceNotFoundException');
});

void test('Given handles that are not ours, name a missing source, or an unknown task, when cancelled, then InvalidParameterValue or ResourceNotFoundException', () => {
  const w = world();
  const { dlq } = setupDlq(w, 1);
  throwsCode(() => w.store.cancelMoveTask(ACCOUNT, 'not-a-handle'), 'InvalidParameterValue', /TaskHandle/);
  throwsCode(
    () => w.store.cancelMoveTask(ACCOUNT, encodeTaskHandle('t', `arn:aws:sqs:us-east-1:${ACCOUNT}:gone`)),
    'ResourceNotFoundException',
    /SourceArn/,
  );
  throwsCode(
    () => w.store.cancelMoveTask(ACCOUNT, encodeTaskHandle('no-such-task', dlq.arn)),
    'ResourceNotFoundException',
    /Task does not exist/,
  );
});

void test('Given a running task, when its destination is deleted, then its next step makes it FAILED with the error code', () => {
  const w = world();
  const { dlq } = setupDlq(w, 3);
  const dest = w.create('dest');
  const task = w.store.startMoveTask(ACCOUNT, dlq.arn, dest.arn, undefined);
  w.store.stepMoveTask(task, 1);
  w.store.delete(dest);
  w.store.stepMoveTask(task, 10);
  assert.equal(task.status, 'FAILED');
  assert.equal(task.failureReason, 'AWS.SimpleQueueService.NonExistentQueue');
  assert.equal(task.moved, 1);
  assert.equal(dlq.size, 2, 'nothing is lost');
});

void test('Given more finished tasks than a source keeps, when listed, then the newest ten come, newest first', () => {
  const w = world();
  const { dlq } = setupDlq(w, 0);
  const started = [];
  for (let i = 0; i < MOVE_TASK_HISTORY + 2; i++) {
    const t = w.store.startMoveTask(ACCOUNT, dlq.arn, undefined, undefined);
    w.store.stepMoveTask(t, 1);
    started.push(t);
    w.clock.advance(1);
  }
  const listed = w.store.moveTasks.list(dlq.arn);
  assert.equal(listed.length, MOVE_TASK_HISTORY);
  assert.equal(listed[0], started[started.length - 1]);
});

// ---- the driver ---------------------------------------------------------------------------

afterEach(() => mock.timers.reset());

async function advance(w: ManualStore, ms: number): Promise<void> {
  for (let left = ms; left > 0; left -= 10) {
    w.clock.advance(Math.min(10, left));
    mock.timers.tick(Math.min(10, left));
    await Promise.resolve();
  }
}

/** Mocked timers, a DLQ holding `messages`, and how to start a task from it and make a driver. */
function driverWorld(messages: number): {
  w: ManualStore;
  start: (rate: number | undefined) => ReturnType<ManualStore['store']['startMoveTask']>;
  driver: () => MoveTaskRunner;
  /** A driver running a new task at `rate`. */
  running: (rate: number) => {
    runner: MoveTaskRunner;
    task: ReturnType<ManualStore['store']['startMoveTask']>;
  };
} {
  mock.timers.enable({ apis: ['setTimeout'] });
  const w = world();
  const { dlq } = setupDlq(w, messages);
  const start = (rate: number | undefined): ReturnType<ManualStore['store']['startMoveTask']> =>
    w.store.startMoveTask(ACCOUNT, dlq.arn, undefined, rate);
  const driver = (): MoveTaskRunner => new MoveTaskRunner(w.store, w.clock);
  return {
    w,
    start,
    driver,
    running: (rate) => {
      const runner = driver();
      const task = start(rate);
      runner.start(task);
      return { runner, task };
    },
  };
}

void test('Given a task at 2 messages per second, when the driver runs it for a second and a half, then about three have moved and it completes later', async () => {
  const { w, running } = driverWorld(6);
  const { runner, task } = running(2);
  await advance(w, 1500);
  assert.ok(task.moved >= 3 && task.moved <= 4, `moved ${task.moved}`);
  assert.equal(task.status, 'RUNNING');
  await advance(w, 3000);
  assert.equal(task.status, 'COMPLETED');
  assert.equal(runner.size, 0);
  runner.close();
});

void test('Given a running task under the driver, when cancelled and woken, then it is CANCELLED at once', async () => {
  const { w, running } = driverWorld(10);
  const { runner, task } = running(1);
  await advance(w, 10);
  w.store.cancelMoveTask(ACCOUNT, task.handle);
  runner.wake(task);
  await advance(w, 10);
  assert.equal(task.status, 'CANCELLED');
  assert.equal(task.moved, 1);
  runner.close();
});

void test('Given a store holding a RUNNING task (as after a reload), when a driver is made for it, then it picks the task up', async () => {
  const { w, start, driver } = driverWorld(3);
  const task = start(undefined);
  const runner = driver();
  await advance(w, 10);
  assert.equal(task.status, 'COMPLETED');
  runner.close();
});

void test('Given a closed driver, when time passes, then its tasks do not move', async () => {
  const { w, start, driver } = driverWorld(3);
  const runner = driver();
  const task = start(1);
  runner.close();
  runner.start(task);
  await advance(w, 5 * S);
  assert.equal(task.moved, 0);
});
