/**
 * The loader's second part: what a queue holds besides its messages (FIFO deduplication and
 * ReceiveRequestAttemptId records) and the store's message move tasks. Called by loader.ts after
 * a queue's messages, and once after all queues.
 *
 * Records are put back in `expiresAt` order, the order the queue expires them in (fifo.ts);
 * records whose time has passed are put back too and dropped by the queue's next tick, which
 * also deletes them from Redis.
 */
import type { Queue } from '../core/queue.js';
import type { QueueStore } from '../core/store.js';
import { deserializeAttempt, deserializeDedup, deserializeMoveTask } from './codec.js';
import type { Keys } from './keys.js';
import type { RedisClient } from './redis.js';

/** Reads a whole hash with HSCAN, in chunks (a FIFO queue under load holds 5 minutes of sends). */
async function scanHash(
  redis: RedisClient,
  key: string,
  each: (field: string, value: string) => void,
): Promise<void> {
  let cursor = '0';
  do {
    const [next, flat] = await redis.hscan(key, cursor, 'COUNT', 1000);
    for (let i = 0; i + 1 < flat.length; i += 2) each(flat[i] as string, flat[i + 1] as string);
    cursor = next;
  } while (cursor !== '0');
}

/** Returns how many records were put back. */
export async function loadQueueRecords(redis: RedisClient, keys: Keys, queue: Queue): Promise<number> {
  const fifo = queue.fifoState;
  if (fifo === null) return 0;
  const dedups = new Map<string, ReturnType<typeof deserializeDedup>>();
  await scanHash(redis, keys.dedup(queue.uid), (k, v) => dedups.set(k, deserializeDedup(k, v)));
  for (const [k, r] of [...dedups].sort((a, b) => a[1].expiresAt - b[1].expiresAt)) fifo.restoreDedup(k, r);
  const attempts = new Map<string, ReturnType<typeof deserializeAttempt>>();
  await scanHash(redis, keys.attempts(queue.uid), (k, v) => attempts.set(k, deserializeAttempt(k, v)));
  for (const [k, r] of [...attempts].sort((a, b) => a[1].expiresAt - b[1].expiresAt)) {
    fifo.restoreAttempt(k, r);
  }
  return dedups.size + attempts.size;
}

/** Returns how many tasks were put back (running ones are resumed by the move-task driver). */
export async function loadMoveTasks(redis: RedisClient, keys: Keys, store: QueueStore): Promise<number> {
  let n = 0;
  await scanHash(redis, keys.tasks, (_id, v) => {
    store.moveTasks.restore(deserializeMoveTask(v));
    n++;
  });
  return n;
}
