import type { Queue, QueueIdentity } from './queue.js';

/** What the catalog knows of a queue: enough to list it and to find the queues that redrive to it. */
export interface CatalogEntry extends QueueIdentity {
  readonly arn: string;
  readonly uid: string;
  readonly shard: number;
  readonly fifo: boolean;
  /** Its RedrivePolicy's target, if it has one. */
  readonly deadLetterTargetArn: string | undefined;
  /**
   * Its RedriveAllowPolicy attribute as set, if it is: a queue of another process's shard is
   * checked as a dead-letter target from this alone (QueueStore.setAttributes, create).
   */
  readonly redriveAllowPolicy: string | undefined;
}

/** What storage keeps of a queue in its catalog record (the name, account and region are the key). */
export interface CatalogRecord {
  readonly shard: number;
  readonly uid: string;
  readonly fifo: boolean;
  readonly deadLetterTargetArn?: string | undefined;
  readonly redriveAllowPolicy?: string | undefined;
}

/** An entry for a queue known from its catalog record only (a shard this process does not own). */
export function catalogEntry(id: QueueIdentity, r: CatalogRecord): CatalogEntry {
  return {
    accountId: id.accountId,
    region: id.region,
    name: id.name,
    arn: `arn:aws:sqs:${id.region}:${id.accountId}:${id.name}`,
    uid: r.uid,
    shard: r.shard,
    fifo: r.fifo,
    deadLetterTargetArn: r.deadLetterTargetArn,
    redriveAllowPolicy: r.redriveAllowPolicy,
  };
}

interface Slot {
  entry: CatalogEntry;
  /** Its shard is being loaded again: dropped unless the load brings the queue back. */
  stale: boolean;
  /**
   * Its shard is another process's: the entry came from storage (putRemote) and only storage's
   * news changes it; the store's own queue events and reloads never touch it.
   */
  remote: boolean;
}

/**
 * Every queue's name, per account and region, and where its RedrivePolicy points: what ListQueues
 * and ListDeadLetterSourceQueues answer from, and what the "is it some queue's dead-letter queue"
 * check reads. Kept apart from the queues themselves, so that while a shard's queues are dropped
 * and loaded again from storage the listings still name them (docs/architecture.md, "Shards").
 *
 * A process-wide directory: the entries of the shards this process owns are the store's (put,
 * remove, markStale, dropStale), those of the other shards are "remote", mirrored from storage
 * (putRemote, removeRemote, replaceRemote: src/persistence/catalog-mirror.ts). `owns` says which
 * is which; when a shard changes hands the store moves its entries across (release, adopt).
 */
export class Catalog {
  private readonly scopes = new Map<string, Map<string, Slot>>();

  constructor(private readonly owns: (shard: number) => boolean = () => true) {}

  put(q: Queue): void {
    this.names(q.accountId, q.region).set(q.name, {
      entry: {
        accountId: q.accountId,
        region: q.region,
        name: q.name,
        arn: q.arn,
        uid: q.uid,
        shard: q.shard,
        fifo: q.fifo,
        deadLetterTargetArn: q.redrive?.deadLetterTargetArn,
        redriveAllowPolicy: q.attributes.RedriveAllowPolicy,
      },
      stale: false,
      remote: false,
    });
  }

  /** The queue is gone (not a later queue of the same name, which has another uid). */
  remove(q: Queue): void {
    const names = this.scopes.get(scopeKey(q.accountId, q.region));
    const slot = names?.get(q.name);
    if (slot !== undefined && !slot.remote && slot.entry.uid === q.uid) names?.delete(q.name);
  }

  /**
   * Storage's word on a queue of a shard owned elsewhere. Ignored (false) when its shard is owned
   * here: then the store's queue, or its reload, is what counts.
   */
  putRemote(entry: CatalogEntry): boolean {
    if (this.owns(entry.shard)) return false;
    const names = this.names(entry.accountId, entry.region);
    const slot = names.get(entry.name);
    // A local entry of a shard no longer owned was not released: keep it rather than guess.
    if (slot !== undefined && !slot.remote) return false;
    names.set(entry.name, { entry, stale: false, remote: true });
    return true;
  }

  /** Storage holds no queue of this name any more; a local entry stays. */
  removeRemote(accountId: string, region: string, name: string): void {
    const scope = scopeKey(accountId, region);
    const names = this.scopes.get(scope);
    if (names?.get(name)?.remote !== true) return;
    names.delete(name);
    if (names.size === 0) this.scopes.delete(scope);
  }

  /**
   * The remote entries of one account and region become exactly `entries` (of that account and
   * region; those of shards owned here are ignored): a full read of its catalog.
   */
  replaceRemote(accountId: string, region: string, entries: Iterable<CatalogEntry>): void {
    const names = this.scopes.get(scopeKey(accountId, region));
    const keep = new Set<string>();
    for (const e of entries) if (this.putRemote(e)) keep.add(e.name);
    if (names === undefined) return;
    for (const [name, slot] of names) if (slot.remote && !keep.has(name)) names.delete(name);
    if (names.size === 0) this.scopes.delete(scopeKey(accountId, region));
  }

  /** The accounts and regions that have remote entries, for a full read to drop those storage no longer has. */
  /** How many queues each shard holds, as listed here (local and remote entries). */
  shardCounts(shards: number): number[] {
    const counts = new Array<number>(shards).fill(0);
    for (const names of this.scopes.values()) {
      for (const slot of names.values()) {
        const s = slot.entry.shard;
        if (s >= 0 && s < shards) counts[s] = (counts[s] ?? 0) + 1;
      }
    }
    return counts;
  }

  remoteScopes(): { accountId: string; region: string }[] {
    const out: { accountId: string; region: string }[] = [];
    for (const names of this.scopes.values()) {
      for (const slot of names.values()) {
        if (!slot.remote) continue;
        out.push({ accountId: slot.entry.accountId, region: slot.entry.region });
        break;
      }
    }
    return out;
  }

  /** Whether the name's entry is a remote one. */
  isRemote(accountId: string, region: string, name: string): boolean {
    return this.scopes.get(scopeKey(accountId, region))?.get(name)?.remote === true;
  }

  /**
   * The shard was given away: its local entries become remote, as storage holds them (the writer
   * wrote them), so that listings keep naming its queues until the mirror reads them again.
   */
  release(shard: number): void {
    for (const names of this.scopes.values()) {
      for (const slot of names.values()) {
        if (slot.remote || slot.entry.shard !== shard) continue;
        // Stale too (given away while loading): what was listed stays listed until the mirror reads.
        slot.remote = true;
        slot.stale = false;
      }
    }
  }

  /**
   * The shard was taken over: its remote entries become the store's, stale, so that they are
   * listed while the shard loads and go (dropStale) unless the load brings their queue back.
   */
  adopt(shard: number): void {
    for (const names of this.scopes.values()) {
      for (const slot of names.values()) {
        if (!slot.remote || slot.entry.shard !== shard) continue;
        slot.remote = false;
        slot.stale = true;
      }
    }
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
      for (const slot of names.values()) if (!slot.remote && slot.entry.shard === shard) slot.stale = true;
    }
  }

  /** The shard's load is over: entries it did not bring back (never stored) are dropped. */
  dropStale(shard: number): void {
    for (const names of this.scopes.values()) {
      for (const [name, slot] of names) if (slot.stale && slot.entry.shard === shard) names.delete(name);
    }
    this.dropEmpty();
  }

  private names(accountId: string, region: string): Map<string, Slot> {
    const scope = scopeKey(accountId, region);
    let names = this.scopes.get(scope);
    if (names === undefined) this.scopes.set(scope, (names = new Map<string, Slot>()));
    return names;
  }

  private dropEmpty(): void {
    for (const [scope, names] of this.scopes) if (names.size === 0) this.scopes.delete(scope);
  }
}

function scopeKey(accountId: string, region: string): string {
  return `${accountId}/${region}`;
}

function byName(a: CatalogEntry, b: CatalogEntry): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
