/**
 * Many owners: every process checks SigV4 against the tenants and keys in its own store, but a
 * change made through one process's admin API is in that store and in Redis only; the others
 * would have it at their next load. `TenantsMirror` brings it to them at once:
 *
 * - the feed: after each applied meta write of tenants, the writer PUBLISHes the names it wrote
 *   (writer.ts, `sharedMeta`); on a message the mirror reads the whole `tenants` hash again (a few
 *   records, one HGETALL) and, when it differs from the store's tenants, replaces them;
 * - a full read every `intervalMs`, and each time the subscription is made again: pub/sub loses
 *   what is published while the subscriber reconnects.
 *
 * A read must not undo a change made here that is in the store but not yet in Redis (an admin
 * call between its change and its commit). So a read is not made while such a change is pending,
 * and its result is dropped when one was made while it ran; the change's own message, published
 * once it is written, brings the next read.
 */
import type { QueueStore } from '../core/store.js';
import type { Tenant } from '../core/tenants.js';
import { deserializeTenant, serializeTenant } from './codec.js';
import type { Layout } from './layout.js';
import type { RedisClient } from './redis.js';

/** How often the tenants are read again without a message: what a lost one may go unseen for. */
export const TENANTS_MIRROR_INTERVAL_MS = 30_000;

/** A subscribed connection shared with others (src/owners/channels.ts). */
export interface Subscriptions {
  listen(channel: string, fn: (message: string) => void): () => void;
  /** Called each time the connection is subscribed (again). */
  onReady(fn: () => void): () => void;
}

export interface TenantsMirrorOptions {
  readonly redis: RedisClient;
  readonly channels: Subscriptions;
  readonly layout: Layout;
  /** The store served now; undefined while none is (loading: the load reads the tenants). */
  readonly store: () => QueueStore | undefined;
  /** Resolves (or rejects) once every change made so far was written (Persistence.commit). */
  readonly commit: () => Promise<void>;
  /** Full read interval; default {@link TENANTS_MIRROR_INTERVAL_MS}. */
  readonly intervalMs?: number | undefined;
  /** The store's tenants were replaced by what Redis holds: how many there are now. */
  readonly onApplied?: ((tenants: number) => void) | undefined;
  /** A read failed, or a record did not parse (that tenant is kept as the store has it). */
  readonly onError?: ((e: Error) => void) | undefined;
}

export class TenantsMirror {
  readonly stats = { reads: 0, applied: 0 };
  /** Tenant changes made in this process's stores, and those of them not yet written. */
  private changes = 0;
  private pending = 0;
  private work: Promise<void> = Promise.resolve();
  private queued = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private unlisten: (() => void)[] = [];

  constructor(private readonly opts: TenantsMirrorOptions) {}

  start(): void {
    const { channels, layout } = this.opts;
    this.unlisten.push(
      channels.listen(layout.meta.tenantsFeed, () => void this.refresh()),
      channels.onReady(() => void this.refresh()),
    );
    this.timer = setInterval(() => void this.refresh(), this.opts.intervalMs ?? TENANTS_MIRROR_INTERVAL_MS);
    this.timer.unref();
    void this.refresh();
  }

  /** A store about to be served: the tenant changes made in it are kept until written. */
  watch(store: QueueStore): void {
    store.onChange((e) => {
      if (e.type !== 'tenant-put' && e.type !== 'tenant-delete') return;
      this.changes++;
      this.pending++;
      // In a microtask: the writer, another listener of this event, has it by then, so the
      // commit covers it.
      queueMicrotask(() => {
        void this.opts
          .commit()
          .catch(() => undefined)
          .finally(() => this.pending--);
      });
    });
  }

  /** Reads the tenants again after the read running, if any; one queued read serves every caller. */
  refresh(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.queued) return this.work;
    this.queued = true;
    this.work = this.work
      .then(() => {
        this.queued = false;
        return this.read();
      })
      .catch((e: unknown) => this.error(e));
    return this.work;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    for (const u of this.unlisten) u();
    this.unlisten = [];
    await this.work;
  }

  private async read(): Promise<void> {
    const store = this.opts.store();
    if (this.stopped || store === undefined || this.pending > 0) return;
    const seen = this.changes;
    const hash = await this.opts.redis.hgetall(this.opts.layout.meta.tenants);
    this.stats.reads++;
    if (this.stopped || this.changes !== seen || this.pending > 0 || this.opts.store() !== store) return;
    const local = store.tenants.list();
    const names = Object.keys(hash).sort();
    const same =
      names.length === local.length &&
      local.every((t, i) => t.name === names[i] && serializeTenant(t) === hash[t.name]);
    if (same) return;
    const tenants: Tenant[] = [];
    for (const name of names) {
      try {
        tenants.push(deserializeTenant(hash[name] ?? ''));
      } catch (e) {
        this.error(new Error(`tenant ${name}: ${e instanceof Error ? e.message : String(e)}`));
        const kept = store.tenants.get(name);
        if (kept !== undefined) tenants.push(kept);
      }
    }
    store.tenants.replaceAll(tenants);
    this.stats.applied++;
    this.opts.onApplied?.(tenants.length);
  }

  private error(e: unknown): void {
    this.opts.onError?.(e instanceof Error ? e : new Error(String(e)));
  }
}
