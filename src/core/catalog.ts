import type { Queue, QueueIdentity } from './queue.js';

/** What the catalog knows of a queue: enough to list it and to find the queues that redrive to it. */
export interface CatalogEntry extends QueueIdentity {
  readonly arn: string;
  readonly uid: string;
  readonly shard: number;
  readonly fifo: boolean;
  /** Its RedrivePolicy's target, if it has one. */
  readonly deadLetterTargetArn: string | undefined;
}

interface Slot {
  entry: CatalogEntry;
  /** Its shard is being loaded again: dropped unless the load brings the queue back. */
  stale: boolean;
}

/**
 * Every queue's name, per account and region, and where its RedrivePolicy points: what ListQueues
 * and ListDeadLetterSourceQueues answer from, and what the "is it some queue's dead-letter queue"
 * check reads. Kept apart from the queues themselves, so that while a shard's queues are dropped
 * and loaded again from storage the listings still name them (docs/architecture.md, "Shards").
 */
export class Catalog {
  private readonly scopes = new Map<string, Map<string, Slot>>();

  put(q: Queue): void {
    const scope = scopeKey(q.accountId, q.region);
    let names = this.scopes.get(scope);
    if (names === undefined) this.scopes.set(scope, (names = new Map<string, Slot>()));
    names.set(q.name, {
      entry: {
        accountId: q.accountId,
        region: q.region,
        name: q.name,
        arn: q.arn,
        uid: q.uid,
        shard: q.shard,
        fifo: q.fifo,
        deadLetterTargetArn: q.redrive?.deadLetterTargetArn,
      },
      stale: false,
    });
  }

  /** The queue is gone (not a later queue of the same name, which has another uid). */
  remove(q: Queue): void {
    const names = this.scopes.get(scopeKey(q.accountId, q.region));
    if (names?.get(q.name)?.entry.uid === q.uid) names.delete(q.name);
  }

  get(accountId: string, region: string, name: string): CatalogEntry | undefined {
    return this.scopes.get(scopeKey(accountId, region))?.get(name)?.entry;
  }

  /** The account's queues in `region` whose names start with `prefix`, sorted by name. */
  list(accountId: string, prefix: string, region: string): CatalogEntry[] {
    const out: CatalogEntry[] = [];
    for (const [name, slot] of this.scopes.get(scopeKey(accountId, region)) ?? []) {
      if (name.startsWith(prefix)) out.push(slot.entry);
    }
    return out.sort(byName);
  }

  /** The queues of `dlq`'s account and region whose RedrivePolicy names it, sorted by name. */
  deadLetterSources(dlq: {
    readonly accountId: string;
    readonly region: string;
    readonly arn: string;
  }): CatalogEntry[] {
    const out: CatalogEntry[] = [];
    for (const slot of this.scopes.get(scopeKey(dlq.accountId, dlq.region))?.values() ?? []) {
      if (slot.entry.deadLetterTargetArn === dlq.arn) out.push(slot.entry);
    }
    return out.sort(byName);
  }

  /** The shard is about to be loaded again: its entries stay listed until {@link dropStale}. */
  markStale(shard: number): void {
    for (const names of this.scopes.values()) {
      for (const slot of names.values()) if (slot.entry.shard === shard) slot.stale = true;
    }
  }

  /** The shard's load is over: entries it did not bring back (never stored) are dropped. */
  dropStale(shard: number): void {
    for (const [scope, names] of this.scopes) {
      for (const [name, slot] of names) if (slot.stale && slot.entry.shard === shard) names.delete(name);
      if (names.size === 0) this.scopes.delete(scope);
    }
  }
}

function scopeKey(accountId: string, region: string): string {
  return `${accountId}/${region}`;
}

function byName(a: CatalogEntry, b: CatalogEntry): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
