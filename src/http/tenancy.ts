/**
 * Glue between the store's tenants and the planes, for server.ts: the data plane's key lookup, the
 * queue stats and dead-letter totals the metrics read.
 */
import type { KeyOwner } from '../auth/authenticate.js';
import type { QueueStore } from '../core/store.js';
import type { MemoryStats, QueueStats } from './metrics.js';
import type { DeadLetterStats } from './message-metrics.js';

/** The data plane's `keyOwner`: a tenant's key in the store being served now. */
export function keyOwnerIn(store: () => QueueStore): (accessKeyId: string) => KeyOwner | undefined {
  return (accessKeyId) => {
    const hit = store().tenants.byAccessKeyId(accessKeyId);
    if (hit === undefined) return undefined;
    return {
      accountId: hit.tenant.accountId,
      secretAccessKey: hit.key.secretAccessKey,
      tenant: hit.tenant.name,
    };
  };
}

/** The label a queue's account gets in metrics: its tenant's name, else the account id. */
export function tenantLabel(store: QueueStore, accountId: string): string {
  return store.tenants.byAccountId(accountId)?.name ?? accountId;
}

export function queueStats(store: QueueStore, now: number): QueueStats[] {
  const out: QueueStats[] = [];
  for (const q of store.all()) {
    out.push({
      queue: q.name,
      tenant: tenantLabel(store, q.accountId),
      region: q.region,
      bytes: q.bytes,
      ...q.counts(now),
    });
  }
  return out;
}

export function deadLetterStats(store: QueueStore): DeadLetterStats[] {
  const out: DeadLetterStats[] = [];
  for (const q of store.all()) {
    if (q.deadLettered === 0) continue;
    out.push({
      tenant: tenantLabel(store, q.accountId),
      region: q.region,
      queue: q.name,
      uid: q.uid,
      moved: q.deadLettered,
    });
  }
  return out;
}

export function memoryStats(store: QueueStore): MemoryStats {
  const b = store.budget;
  return {
    limit: b.limit,
    used: b.used,
    refusing: b.refusing(),
    tenants: [...b.usage()].map(([accountId, used, limit]) => ({
      tenant: tenantLabel(store, accountId),
      used,
      limit,
    })),
  };
}
