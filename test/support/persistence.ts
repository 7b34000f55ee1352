/**
 * A Persistence for the tests that drive it directly (not through the server): on a ManualClock,
 * under a key prefix of its own, recording every store it hands over and every divergence.
 */
import { ManualClock } from '../../src/core/clock.js';
import { QueueStore } from '../../src/core/store.js';
import { layoutFor, type Layout } from '../../src/persistence/layout.js';
import { Persistence, type PersistenceOptions } from '../../src/persistence/persistence.js';
import type { RedisClient } from '../../src/persistence/redis.js';
import { SqsError } from '../../src/sqs/errors.js';
import { uniquePrefix } from './redis.js';

export interface WatchedPersistence {
  readonly p: Persistence;
  readonly layout: Layout;
  readonly clock: ManualClock;
  /** Every store handed over, the first one (at start) first. */
  readonly stores: QueueStore[];
  readonly diverged: Error[];
  /** The next store handed over; call it before what makes the reload happen. */
  readonly reloaded: () => Promise<QueueStore>;
}

/** `options` replace the defaults (e.g. `replicaWait`, `maxBackoffMs`). */
export function watchedPersistence(
  redis: RedisClient,
  options: Partial<Omit<PersistenceOptions, 'redis' | 'onStore' | 'onDiverged'>> = {},
): WatchedPersistence {
  const clock = new ManualClock();
  const layout = options.layout ?? layoutFor(uniquePrefix());
  const stores: QueueStore[] = [];
  const diverged: Error[] = [];
  let next: ((s: QueueStore) => void) | undefined;
  const p = new Persistence({
    redis,
    layout,
    createStore: () => new QueueStore(clock, { deletedRecentlyMs: 0 }),
    unavailable: (cause) => new SqsError('ServiceUnavailable', cause.message),
    maxBackoffMs: 200,
    ...options,
    onStore: (s) => {
      stores.push(s);
      next?.(s);
      next = undefined;
    },
    onDiverged: (e) => diverged.push(e),
  });
  return {
    p,
    layout,
    clock,
    stores,
    diverged,
    reloaded: () => new Promise<QueueStore>((resolve) => (next = resolve)),
  };
}
