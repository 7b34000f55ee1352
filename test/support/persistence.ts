/**
 * A Persistence for the tests that drive it directly (not through the server): on a ManualClock,
 * under a key prefix of its own, recording every store it hands over and every divergence. And
 * {@link loadLayout}, layout 2 whole into a store, for the tests that load without a Persistence.
 */
import { ManualClock } from '../../src/core/clock.js';
import { QueueStore } from '../../src/core/store.js';
import { layoutFor, type Layout, type ShardKeys } from '../../src/persistence/layout.js';
import { loadMeta, loadShard, type LoadOptions, type LoadStats } from '../../src/persistence/loader.js';
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

/**
 * What Redis holds in `layout` into `store`, as a start loads it (without the migration, which
 * has its own tests, nor the settling of transfers between shards, which is Persistence's):
 * loadMeta, which must find layout 2 ready, then every shard with the same options (one progress
 * adds up all of them). The statistics are summed; `maxBlockMs` is the longest of the shards'.
 * Throws what the first failing load throws, as a start does (no shard is refused on its own).
 */
export async function loadLayout(
  redis: RedisClient,
  layout: Layout,
  store: QueueStore,
  opts: LoadOptions = {},
): Promise<LoadStats> {
  const meta = await loadMeta(redis, layout, store, { token: opts.token });
  if (meta.state !== 'ready') throw new Error(`${layout.meta.layout}: ${meta.state}, not layout 2`);
  const total: LoadStats = { queues: 0, messages: 0, bytes: 0, ms: 0, maxBlockMs: 0 };
  for (const keys of layout.shards) {
    const s = await loadShard(redis, keys, store, opts);
    total.queues += s.queues;
    total.messages += s.messages;
    total.bytes += s.bytes;
    total.ms += s.ms;
    total.maxBlockMs = Math.max(total.maxBlockMs, s.maxBlockMs);
  }
  return total;
}

/** The keys of the shard `queue` lives in. */
export function shardKeysOf(layout: Layout, queue: { readonly shard: number }): ShardKeys {
  const keys = layout.shards[queue.shard];
  if (keys === undefined) throw new Error(`no shard ${queue.shard} in the layout`);
  return keys;
}
