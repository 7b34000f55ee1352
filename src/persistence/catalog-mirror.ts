/**
 * The catalog as a process-wide directory: every queue of every account and region, also those
 * of the shards another process owns. `CatalogMirror` reads the catalog hashes of layout 2
 * (layout.ts: meta `cat:<account>:<region>`, found through the `catalogs` index) into a
 * `Catalog` as remote entries, and keeps them current:
 *
 * - the feed: after each meta write that changed catalog records, its writer PUBLISHes the names
 *   (writer.ts, "The catalog feed"); the mirror reads those names again (HMGET) and updates;
 * - a full read every `intervalMs`, and after its subscription was made again: pub/sub delivers
 *   at most once, and a message sent while the subscriber reconnects is lost for good.
 *
 * Entries of shards this process owns are the store's: `Catalog.putRemote` ignores them, asking
 * the catalog's owner predicate (the store's `owns`). When the owned set changes, the store moves
 * the shard's entries across (QueueStore.setOwnedShards) and `owned()` here reads everything
 * again, so a shard given away is described by what Redis holds rather than by what it was.
 *
 * Reads and their updates run one at a time, in order: an update is always from a later read
 * than the one it replaces, so a full read that took long cannot undo the feed's newer news.
 */
import { Cluster } from 'ioredis';
import { catalogEntry, type Catalog, type CatalogEntry } from '../core/catalog.js';
import { deserializeCatalogEntry } from './codec.js';
import { parseCatalogChanges, parseCatalogScope, type Layout } from './layout.js';
import type { RedisClient } from './redis.js';

/** How often everything is read again by default: what a lost feed message may go unseen for. */
export const CATALOG_MIRROR_INTERVAL_MS = 30_000;

export interface CatalogMirrorOptions {
  /** Where the catalog is read from. */
  readonly redis: RedisClient;
  /**
   * A connection for SUBSCRIBE alone (a subscribed connection takes no other command); when not
   * given, one is made from `redis` (duplicate) and closed by stop().
   */
  readonly subscriber?: RedisClient | undefined;
  readonly layout: Layout;
  /** The store's catalog: its owner predicate says which shards' entries are remote. */
  readonly catalog: Catalog;
  /** Full read interval; default {@link CATALOG_MIRROR_INTERVAL_MS}. */
  readonly intervalMs?: number | undefined;
  /** Told of every failed read or bad record; the next full read tries again. */
  readonly onError?: ((e: Error) => void) | undefined;
}

export interface CatalogMirrorStats {
  /** Full reads finished. */
  fullReads: number;
  /** Feed messages' names read again. */
  feedReads: number;
}

type Name = { readonly accountId: string; readonly region: string; readonly name: string };

export class CatalogMirror {
  readonly stats: CatalogMirrorStats = { fullReads: 0, feedReads: 0 };
  private readonly subscriber: RedisClient;
  private readonly ownSubscriber: boolean;
  /** The read running or last queued: each starts when the one before it ended. */
  private work: Promise<void> = Promise.resolve();
  /** A full read queued and not started yet: a second request joins it. */
  private fullQueued: Promise<void> | undefined;
  /** Names announced and not read yet, by `<account>:<region>:<name>`. */
  private readonly announced = new Map<string, Name>();
  private feedQueued = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly onMessage = (channel: string, message: string): void => {
    if (channel !== this.opts.layout.meta.catalogFeed) return;
    for (const n of parseCatalogChanges(message)) {
      this.announced.set(`${n.accountId}:${n.region}:${n.name}`, n);
    }
    this.queueFeed();
  };
  private readonly onReady = (): void => {
    // Resubscribed after a reconnect (ioredis does it): what was announced meanwhile is lost.
    void this.refresh();
  };

  constructor(private readonly opts: CatalogMirrorOptions) {
    this.ownSubscriber = opts.subscriber === undefined;
    const r = opts.redis;
    this.subscriber = opts.subscriber ?? (r instanceof Cluster ? r.duplicate() : r.duplicate());
  }

  /** Subscribes to the feed, then reads everything; resolves once that first read is in. */
  async start(): Promise<void> {
    const sub = this.subscriber;
    sub.on('error', (e: unknown) => this.error(e));
    sub.on('message', this.onMessage);
    if (sub.status === 'wait') await sub.connect();
    // Subscribed before the first read: a change made during it is announced, not missed.
    await sub.subscribe(this.opts.layout.meta.catalogFeed);
    sub.on('ready', this.onReady);
    const every = this.opts.intervalMs ?? CATALOG_MIRROR_INTERVAL_MS;
    this.timer = setInterval(() => void this.refresh(), every);
    this.timer.unref();
    await this.fullRead();
  }

  /** Reads every catalog hash again, after what is queued; failures go to onError. */
  refresh(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.fullQueued ??= this.enqueue(() => {
      this.fullQueued = undefined;
      return this.fullRead();
    });
    return this.fullQueued;
  }

  /**
   * The shards owned here changed (after QueueStore.setOwnedShards): reads everything again, so
   * that the shards given away are described by what Redis holds. `changed` is for the log only:
   * a full read is as cheap as a read of a few shards' names, which are spread over every hash.
   */
  owned(changed: Iterable<number>): Promise<void> {
    void changed;
    return this.refresh();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.subscriber.off('message', this.onMessage);
    this.subscriber.off('ready', this.onReady);
    if (this.ownSubscriber) this.subscriber.disconnect();
    else await this.subscriber.unsubscribe(this.opts.layout.meta.catalogFeed).catch(() => undefined);
    await this.work;
  }

  private enqueue(task: () => Promise<void>): Promise<void> {
    const run = this.work
      .then(() => (this.stopped ? undefined : task()))
      .catch((e: unknown) => this.error(e));
    this.work = run;
    return run;
  }

  private queueFeed(): void {
    if (this.feedQueued || this.stopped) return;
    this.feedQueued = true;
    void this.enqueue(() => {
      this.feedQueued = false;
      const names = [...this.announced.values()];
      this.announced.clear();
      return this.readNames(names);
    });
  }

  private async fullRead(): Promise<void> {
    const { redis, layout, catalog } = this.opts;
    const fields = await redis.hkeys(layout.meta.catalogIndex);
    const scopes: { accountId: string; region: string }[] = [];
    for (const f of fields) {
      const scope = parseCatalogScope(f);
      if (scope !== undefined) scopes.push(scope);
    }
    // Sent back to back on one connection (on a Cluster, the meta tag's node): one round trip.
    const hashes = await Promise.all(
      scopes.map((s) => redis.hgetall(layout.meta.catalog(s.accountId, s.region))),
    );
    const seen = new Set<string>();
    scopes.forEach((s, i) => {
      seen.add(`${s.accountId}/${s.region}`);
      catalog.replaceRemote(s.accountId, s.region, this.entries(s, hashes[i] ?? {}));
    });
    // An account and region the index no longer names (it was deleted by hand): nothing remote left there.
    for (const s of catalog.remoteScopes()) {
      if (!seen.has(`${s.accountId}/${s.region}`)) catalog.replaceRemote(s.accountId, s.region, []);
    }
    this.stats.fullReads++;
  }

  private async readNames(names: readonly Name[]): Promise<void> {
    const { redis, layout, catalog } = this.opts;
    const byScope = new Map<string, Name[]>();
    for (const n of names) {
      const key = layout.meta.catalog(n.accountId, n.region);
      const list = byScope.get(key);
      if (list === undefined) byScope.set(key, [n]);
      else list.push(n);
    }
    const groups = [...byScope];
    const records = await Promise.all(
      groups.map(([key, list]) => redis.hmget(key, ...list.map((n) => n.name))),
    );
    groups.forEach(([, list], i) => {
      const got = records[i] ?? [];
      list.forEach((n, j) => {
        const record = got[j] ?? null;
        if (record === null) {
          catalog.removeRemote(n.accountId, n.region, n.name);
          return;
        }
        const [entry] = this.entries(n, { [n.name]: record });
        if (entry !== undefined) catalog.putRemote(entry);
      });
    });
    this.stats.feedReads++;
  }

  /** The entries of one catalog hash's fields; a record that does not parse is reported and skipped. */
  private entries(
    scope: { accountId: string; region: string },
    hash: Record<string, string>,
  ): CatalogEntry[] {
    const out: CatalogEntry[] = [];
    for (const [name, record] of Object.entries(hash)) {
      try {
        const r = deserializeCatalogEntry(name, record);
        out.push(catalogEntry({ accountId: scope.accountId, region: scope.region, name }, r));
      } catch (e) {
        this.error(e);
      }
    }
    return out;
  }

  private error(e: unknown): void {
    this.opts.onError?.(e instanceof Error ? e : new Error(String(e)));
  }
}
