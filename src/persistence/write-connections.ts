/**
 * What a Writer of layout v2 sends on (writer.ts, `connectionFor` and `multi`), for the client the
 * server has: on a single Redis or Sentinel that one client, for every scope, with MULTI/EXEC; on
 * a Redis Cluster, per scope, the connection to the master that owns the slot of its tag
 * (redis.ts, writeConnection: WAIT counts only the writes of the connection it is sent on), and
 * plain pipelines, as a node refuses a transaction over several slots.
 */
import { Cluster, type Redis } from 'ioredis';
import type { Keys } from './keys.js';
import type { Layout } from './layout.js';
import { writeConnection, type RedisClient } from './redis.js';

export interface WriteConnections {
  /** Throws for keys not of the layout given. */
  readonly connectionFor: (keys: Keys) => Redis;
  readonly multi: boolean;
  /**
   * Asks the Cluster again for the master of one scope's slot: after that scope failed (a MOVED,
   * a connection closed by a failover) and before it is written again.
   */
  refresh(keys: Keys): Promise<void>;
}

export async function writeConnections(client: RedisClient, layout: Layout): Promise<WriteConnections> {
  if (!(client instanceof Cluster)) {
    return { connectionFor: () => client, multi: true, refresh: () => Promise.resolve() };
  }
  const scopes: Keys[] = [layout.meta, ...layout.shards];
  const byPrefix = new Map<string, Redis>();
  const refresh = async (keys: Keys): Promise<void> => {
    byPrefix.set(keys.prefix, await writeConnection(client, keys.commit));
  };
  // One after the other: the Cluster client refuses a command for a node whose connection is
  // still being made (no offline queue), which all but the first of a burst would meet.
  for (const keys of scopes) await refresh(keys);
  return {
    connectionFor: (keys) => {
      const c = byPrefix.get(keys.prefix);
      if (c === undefined) throw new Error(`no write connection for ${keys.prefix}`);
      return c;
    },
    multi: false,
    refresh,
  };
}
