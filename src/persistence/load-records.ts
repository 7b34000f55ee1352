/**
 * The loader's second part: what a queue holds besides its messages (FIFO deduplication and
 * ReceiveRequestAttemptId records), the message move tasks and the tenants. Called by loader.ts
 * after a queue's messages, once after all queues of a shard (move tasks), and once for the meta
 * keys (tenants).
 *
 * Records are put back in `expiresAt` order, the order the queue expires them in (fifo.ts);
 * records whose time has passed are put back too and dropped by the queue's next tick, which
 * also deletes them from Redis.
 */
import type { MoveTask } from '../core/movetasks.js';
import type { Queue } from '../core/queue.js';
import { parseQueueArn } from '../core/redrive.js';
import type { QueueStore } from '../core/store.js';
import { shardOf } from '../shard/hash.js';
import {
  CodecError,
  deserializeAttempt,
  deserializeDedup,
  deserializeMoveTask,
  deserializeTenant,
} from './codec.js';
import type { Keys } from './keys.js';
import type { RedisClient } from './redis.js';

/** Reads a whole hash with HSCAN, in chunks (a FIFO queue under load holds 5 minutes of sends). */
export async function scanHash(
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

/**
 * The move tasks of a `tasks` hash, decoded but not yet in any store: the loader puts them back
 * only once everything else of their shard has loaded (running ones are then resumed by the
 * move-task driver). With `shard`, a task whose source queue belongs to another shard is refused:
 * its source's writes would go to that shard, and this copy would never change again.
 */
export async function readMoveTasks(redis: RedisClient, keys: Keys, shard?: number): Promise<MoveTask[]> {
  const tasks: MoveTask[] = [];
  await scanHash(redis, keys.tasks, (id, v) => {
    const task = deserializeMoveTask(v);
    if (shard !== undefined) {
      const source = taskShard(task.sourceArn);
      if (source !== shard) {
        throw new CodecError(
          `move task ${id} in ${keys.tasks} (shard ${shard}) has its source ${task.sourceArn} in ` +
            `shard ${source ?? 'none: not a queue ARN'}`,
        );
      }
    }
    tasks.push(task);
  });
  return tasks;
}

/** The shard of a task's source queue, from its ARN; undefined when it is not an SQS queue ARN. */
export function taskShard(sourceArn: string): number | undefined {
  const arn = parseQueueArn(sourceArn);
  return arn === undefined ? undefined : shardOf(arn.accountId, arn.region, arn.name);
}

/** Puts back every tenant of a `tenants` hash (a few records, one HGETALL); returns how many. */
export async function loadTenants(redis: RedisClient, key: string, store: QueueStore): Promise<number> {
  let n = 0;
  for (const [name, record] of Object.entries(await redis.hgetall(key))) {
    let tenant;
    try {
      tenant = deserializeTenant(record);
    } catch (e) {
      throw e instanceof CodecError ? new CodecError(`tenant ${name} in ${key}: ${e.message}`) : e;
    }
    store.tenants.restore(tenant);
    n++;
  }
  return n;
}
