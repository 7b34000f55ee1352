/**
 * After its owner loaded a shard, the catalog in Redis is made to agree with what was loaded. The
 * catalog is written apart from the shard (writer.ts: another scope, not one atomic write), and
 * with many owners a process that lost a shard may still have written some of its records
 * (writer.ts, "Many owners"): so it is a hint, and the load is where the owner repairs it.
 */
import type { Queue } from '../core/queue.js';
import { serializeCatalogEntry } from './codec.js';
import { catalogScope, type Layout } from './layout.js';
import type { RedisClient } from './redis.js';
import { loadScript, type ScriptArg } from './scripts.js';

const repairScript = loadScript('persistence/scripts', 'catalog-repair-1');

export interface CatalogRepair {
  /** `<account>:<region>:<name>` of the records written (missing or different). */
  readonly written: string[];
  /** `<account>:<region>:<name>` of the records of the shard whose queue was not loaded. */
  readonly deleted: string[];
}

/**
 * Makes the catalog records of `shard` those of `queues`, the shard's queues as just loaded: one
 * script on the meta tag (catalog-repair-1.lua), then the changes announced on the catalog feed.
 * Call it before the shard serves (before QueueStore.shardLoaded): a queue created after the
 * load and written by the writer before the script runs would be taken for a stray record and
 * deleted.
 */
export async function repairCatalog(
  redis: RedisClient,
  layout: Layout,
  shard: number,
  queues: Iterable<Queue>,
): Promise<CatalogRepair> {
  const args: ScriptArg[] = [layout.meta.prefix, shard];
  for (const q of queues) {
    if (q.shard !== shard) throw new RangeError(`queue ${q.name} is in shard ${q.shard}, not ${shard}`);
    args.push(catalogScope(q.accountId, q.region), q.name, serializeCatalogEntry(q));
  }
  const reply = await repairScript.run(redis, [layout.meta.catalogIndex], args);
  const [written, deleted] = reply as [string[], string[]];
  // Already in the feed's form (layout.ts, catalogChange).
  const changed = [...written, ...deleted];
  if (changed.length > 0) {
    await redis.publish(layout.meta.catalogFeed, changed.join('\n')).catch(() => undefined);
  }
  return { written, deleted };
}
