/**
 * One process's share of the shards when many processes own them (docs/architecture.md, "Many
 * owners"). The shard map (written by the coordinator) says which shards this process should
 * own; this class makes it so, one shard at a time, with the shard leases of layout 2
 * (src/ha/leases.ts: `<s>lease` under each shard's own tag, which every write of the shard
 * fences on).
 *
 * - Take: a token of its own for each hold (`<epoch>:<instance id>`, the epoch an INCR under the
 *   meta tag), the lease taken only when free (a lease another token holds is waited for until it
 *   is released or expires: that holder may still be writing), then the shard read into the store
 *   (Persistence.takeShard). Only then does it serve.
 * - Hold: every lease held is renewed each interval; a shard is served only until `ttl − interval`
 *   after the send time of its last successful renewal (a monotonic clock), so a process that
 *   stalls stops answering for its shards before anyone else can take them. A lease found holding
 *   another token, or a write fenced, drops the shard at once.
 * - Refuse: a shard that does not fit this process's memory budget (Persistence refuses it by
 *   name: its queues 503, at once at every router: see refused()) keeps its lease, since the map
 *   gives it to nobody else, and is read again only after `refusedRetryMs`: reading it at every
 *   reconcile would load it in full and throw it away again many times a second.
 * - Give (the map moved it, or the process stops): the shard stops taking requests (the routers
 *   hold them and retry at the new owner), its long polls are answered, the requests in flight
 *   finish, its writes are flushed, its queues leave the store, and only then is its lease
 *   released, so the next owner reads everything that was acknowledged.
 */
import { quietLog, type LogSink } from '../log.js';
import { lockKeys, lockScripts, parseToken, type LockKeys } from '../ha/lock.js';
import { leaseScripts } from '../ha/leases.js';
import { systemTimers, type ElectorTimers } from '../ha/elector.js';
import type { Layout } from '../persistence/layout.js';
import type { OwnedShards, Persistence } from '../persistence/persistence.js';
import type { RedisClient } from '../persistence/redis.js';

/** The shard map as an owner reads it (src/owners/shard-map.ts). */
export interface ShardMapView {
  ownerOf(shard: number): string | undefined;
  onChange(fn: () => void): void;
}

export interface ShardOwnerOptions {
  /** The leases' connection: renewals never wait behind a large write. */
  readonly redis: RedisClient;
  readonly layout: Layout;
  readonly instanceId: string;
  readonly ttlMs: number;
  readonly intervalMs: number;
  readonly map: ShardMapView;
  /** The shards given away are answered here: waiting long polls of the shard's queues. */
  readonly onGive: (shard: number) => void;
  readonly timers?: ElectorTimers | undefined;
  readonly log?: LogSink | undefined;
  /** Longest wait for a shard's requests in flight when it is given away; default 10 s. */
  readonly drainTimeoutMs?: number | undefined;
  /** How long a shard refused for want of memory waits before it is read again; default 60 s. */
  readonly refusedRetryMs?: number | undefined;
}

type HoldState = 'taking' | 'serving' | 'giving';

interface Hold {
  readonly token: string;
  state: HoldState;
  /** Monotonic ms after which the shard is not answered for unless renewed. */
  deadline: number;
  inflight: number;
  idle: (() => void)[];
  /** Given away, drained: its queues are leaving the store (Persistence.dropShard). */
  dropping?: boolean;
  /** Monotonic ms of the last time reading it in was refused for want of memory. */
  refusedAt?: number;
}

export class ShardOwner implements OwnedShards {
  private readonly byShard = new Map<number, Hold>();
  private readonly keys: readonly LockKeys[];
  private readonly timers: ElectorTimers;
  private readonly log: LogSink;
  private persistence: Persistence | undefined;
  private renewTimer: unknown;
  private reconciling: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  /** Shards whose lease is being asked for: one attempt at a time each. */
  private readonly acquiring = new Set<number>();
  /** Requests waiting for a shard being read in (whenServing), by shard. */
  private readonly waiting = new Map<number, (() => void)[]>();
  private reading: Promise<void> | undefined;
  private readAgain = false;

  constructor(private readonly opts: ShardOwnerOptions) {
    this.keys = opts.layout.shards.map(lockKeys);
    this.timers = opts.timers ?? systemTimers;
    this.log = opts.log ?? quietLog;
  }

  // ---- OwnedShards (what Persistence asks) ------------------------------------------------

  has(shard: number): boolean {
    // A shard being given away stays in the store until its requests in flight are done and it
    // is dropped: the store drops every shard not owned whenever any shard is taken or dropped,
    // and a change to a dropped (evicted) queue is never written (src/persistence/writer.ts).
    const h = this.byShard.get(shard);
    return h !== undefined && h.dropping !== true;
  }

  token(shard: number): string {
    // A token no lease ever holds: a write of a shard not held here is fenced, never applied.
    return this.byShard.get(shard)?.token ?? 'not-owned';
  }

  // ---- what the router asks ----------------------------------------------------------------

  /**
   * The shard serves here in a moment: its lease is held and it is being read in, or the map
   * gives it here and its lease is not taken yet (a planned move's previous owner is still
   * handing it over, or a dead owner's lease has not expired). Not a shard refused for want of
   * memory, which waits a minute before it is read again.
   */
  taking(shard: number): boolean {
    const h = this.byShard.get(shard);
    if (h === undefined) return !this.stopped && this.opts.map.ownerOf(shard) === this.opts.instanceId;
    return h.state === 'taking' && h.refusedAt === undefined;
  }

  /**
   * The shard is this process's (the map gives it here, its lease is held and not being given
   * away) but does not fit its memory budget: nobody else will serve it before it is read again
   * here, a minute later, so its requests are answered 503 now instead of being tried again
   * (src/owners/router.ts). Also while a try to read it again runs: that try may refuse it again.
   * Persistence's refusal counts before the hold hears of it (a shard refused while it was
   * read back after a failed write, or by a full load).
   */
  refused(shard: number): boolean {
    const h = this.byShard.get(shard);
    if (h === undefined || h.state === 'giving' || this.timers.now() >= h.deadline) return false;
    return h.refusedAt !== undefined || this.persistence?.shardsDown.get(shard) === 'refused';
  }

  /**
   * Resolves once the shard serves here, or after `ms` (whatever happened to it meanwhile: the
   * caller asks serves() again). A request that reached the new owner of a shard being read in
   * waits for it here rather than going back to its router to try again later.
   */
  whenServing(shard: number, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const list = this.waiting.get(shard) ?? [];
      this.waiting.set(shard, list);
      const timer = this.timers.setTimeout(done, ms);
      const timers = this.timers;
      function done(): void {
        timers.clearTimeout(timer);
        const i = list.indexOf(done);
        if (i >= 0) list.splice(i, 1);
        resolve();
      }
      list.push(done);
    });
  }

  /** Ends the waits (whenServing) of the requests for `shard`: they ask serves() again. */
  private wake(shard: number): void {
    for (const done of [...(this.waiting.get(shard) ?? [])]) done();
    this.waiting.delete(shard);
  }

  /** This process answers for the shard now. */
  serves(shard: number): boolean {
    const h = this.byShard.get(shard);
    return (
      h !== undefined &&
      h.state === 'serving' &&
      this.timers.now() < h.deadline &&
      this.persistence?.serves(shard) === true
    );
  }

  /**
   * The shard's lease is still this process's as far as it can tell (before its deadline), even
   * while it is being given away: what a request that ran here checks before its 200.
   */
  holds(shard: number): boolean {
    const h = this.byShard.get(shard);
    return h !== undefined && this.timers.now() < h.deadline;
  }

  /** A request for the shard runs here; call the returned function when its reply is done. */
  enter(shard: number): () => void {
    const h = this.byShard.get(shard);
    if (h === undefined) return () => undefined;
    h.inflight++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      h.inflight--;
      if (h.inflight === 0) for (const w of h.idle.splice(0)) w();
    };
  }

  /** How many shards are held, and in which state. */
  counts(): Record<HoldState, number> {
    const out: Record<HoldState, number> = { taking: 0, serving: 0, giving: 0 };
    for (const h of this.byShard.values()) out[h.state]++;
    return out;
  }

  /** The shards held, with their state (admin, metrics). */
  held(): ReadonlyMap<number, { readonly state: HoldState; readonly token: string }> {
    return this.byShard;
  }

  // ---- life ---------------------------------------------------------------------------------

  /** Starts following the map, with the Persistence that reads the shards taken. */
  start(persistence: Persistence): void {
    this.persistence = persistence;
    this.opts.map.onChange(() => this.reconcile());
    this.scheduleRenew();
    this.reconcile();
  }

  /** Gives every shard away (drain, flush, release), then stops renewing. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.timers.clearTimeout(this.renewTimer);
    this.timers.clearTimeout(this.refusedTimer);
    await this.reconciling?.catch(() => undefined);
    const shards = [...this.byShard.keys()];
    await Promise.all(shards.map((s) => this.give(s)));
    this.log.info({ shards: shards.length }, 'every shard given away');
  }

  /** A write of the shard was fenced (Persistence dropped it): the lease is another's. */
  lost(shard: number): void {
    if (this.byShard.delete(shard)) this.log.error({ shard }, 'shard lost: its lease holds another token');
    this.reconcile();
  }

  /** Brings the holds in line with the map; runs again at once if asked while running. */
  reconcile(): void {
    if (this.stopped) return;
    if (this.reconciling !== undefined) {
      this.again = true;
      return;
    }
    this.reconciling = this.reconcileOnce()
      .catch((e: unknown) => {
        this.log.warn(
          { error: e instanceof Error ? e.message : String(e) },
          'following the shard map failed',
        );
      })
      .finally(() => {
        this.reconciling = undefined;
        if (this.again) {
          this.again = false;
          this.reconcile();
        }
      });
  }

  private async reconcileOnce(): Promise<void> {
    const me = this.opts.instanceId;
    const gives: Promise<void>[] = [];
    for (const [shard, h] of this.byShard) {
      if (h.state !== 'giving' && this.opts.map.ownerOf(shard) !== me) gives.push(this.give(shard));
    }
    const wanted: number[] = [];
    for (let s = 0; s < this.keys.length; s++) {
      if (this.opts.map.ownerOf(s) !== me) continue;
      const h = this.byShard.get(s);
      if (h === undefined) wanted.push(s);
      else if (h.state === 'taking' || (h.state === 'serving' && this.persistence?.serves(s) !== true)) {
        // Held but not read in: the store served was replaced meanwhile (a divergence reloads
        // the owned shards, but one taken during that load may have been passed over).
        this.readIn();
      }
    }
    if (wanted.length > 0) await this.take(wanted);
    await Promise.all(gives);
  }

  /** Takes the leases of `shards` (those free now; the rest at a later reconcile), then reads them in. */
  private async take(shards: readonly number[]): Promise<void> {
    const fresh = shards.filter((s) => !this.acquiring.has(s));
    if (fresh.length === 0) return;
    for (const s of fresh) this.acquiring.add(s);
    try {
      const epoch = await this.opts.redis.incr(lockKeys(this.opts.layout.meta).epoch);
      const token = `${epoch}:${this.opts.instanceId}`;
      const sent = this.timers.now();
      const replies = await Promise.allSettled(
        fresh.map((s) => {
          const k = this.keys[s] as LockKeys;
          return leaseScripts.acquire.run(this.opts.redis, [k.lock, k.info], [token, this.opts.ttlMs]);
        }),
      );
      let busy = 0;
      const stale: [number, string][] = [];
      replies.forEach((r, i) => {
        const s = fresh[i] as number;
        if (r.status === 'rejected') return;
        const [taken, holder] = r.value as [number, string?];
        if (taken === 1) {
          if (this.stopped || this.opts.map.ownerOf(s) !== this.opts.instanceId) {
            // The map moved on while we asked: hand it straight back.
            void this.release(s, token);
            return;
          }
          const h: Hold = {
            token,
            state: 'taking',
            deadline: sent + this.deadlineMs(),
            inflight: 0,
            idle: [],
          };
          this.byShard.set(s, h);
          return;
        }
        if (holder !== undefined && parseToken(holder)?.instanceId === this.opts.instanceId)
          stale.push([s, holder]);
        else busy++;
      });
      // A hold of this process that it gave up (self-fenced, dropped) but Redis still has: nothing
      // of it is written any more, so it can go now rather than at its expiry.
      this.readIn();
      await Promise.all(stale.map(([s, t]) => this.release(s, t)));
      if (busy > 0 || stale.length > 0) this.retrySoon();
    } finally {
      for (const s of fresh) this.acquiring.delete(s);
    }
  }

  /**
   * Reads the shards whose lease is held but which are not served yet into the store, all in one
   * go (one connection, one settling of transfers); once at a time, again when asked meanwhile.
   */
  private readIn(): void {
    if (this.reading !== undefined) {
      this.readAgain = true;
      return;
    }
    this.reading = this.readInOnce().finally(() => {
      this.reading = undefined;
      if (this.readAgain) {
        this.readAgain = false;
        this.readIn();
      }
    });
  }

  private async readInOnce(): Promise<void> {
    const p = this.persistence;
    if (p === undefined) return;
    const started = this.timers.now();
    const list = [...this.byShard]
      .filter(
        ([s, h]) =>
          (h.state === 'taking' || (h.state === 'serving' && !p.serves(s))) &&
          (h.refusedAt === undefined || started - h.refusedAt >= this.refusedRetryMs()),
      )
      .map(([s]) => s);
    if (list.length === 0) {
      this.retryRefusedLater();
      return;
    }
    try {
      let now = 0;
      const serve = (s: number): void => {
        const h = this.byShard.get(s);
        if (h !== undefined) delete h.refusedAt;
        if (h !== undefined && h.state === 'taking' && p.serves(s)) {
          h.state = 'serving';
          now++;
          this.wake(s);
        }
      };
      // Each shard serves once it is read in, not when the last of a takeover's is.
      const read = await p.takeShards(list, serve);
      for (const s of read) serve(s);
      if (now > 0)
        this.log.info({ shards: now, serving: this.counts().serving }, 'shards taken: serving their queues');
      let refused = 0;
      for (const s of list) {
        const h = this.byShard.get(s);
        if (h === undefined || read.includes(s) || p.shardsDown.get(s) !== 'refused') continue;
        h.refusedAt = this.timers.now();
        refused++;
        // The requests waiting for it to serve are answered 503 now, not at their timeout.
        this.wake(s);
      }
      if (read.length + refused < list.length) this.retrySoon();
    } catch (e) {
      this.log.warn(
        { shards: list.length, error: e instanceof Error ? e.message : String(e) },
        'reading shards in failed',
      );
      this.retrySoon();
    } finally {
      this.retryRefusedLater();
    }
  }

  /** Drain, flush, drop, release: the next owner reads all that was acknowledged here. */
  private async give(shard: number): Promise<void> {
    const h = this.byShard.get(shard);
    if (h === undefined || h.state === 'giving') return;
    h.state = 'giving';
    this.opts.onGive(shard);
    await this.idle(h);
    h.dropping = true;
    await this.persistence?.dropShard(shard);
    if (this.byShard.get(shard) === h) this.byShard.delete(shard);
    await this.release(shard, h.token);
    this.given++;
    this.logGiven();
  }

  private idle(h: Hold): Promise<void> {
    if (h.inflight === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = this.timers.setTimeout(() => {
        this.log.warn(
          { inflight: h.inflight },
          'giving a shard away: requests still in flight after the drain timeout',
        );
        resolve();
      }, this.opts.drainTimeoutMs ?? 10_000);
      h.idle.push(() => {
        this.timers.clearTimeout(timer);
        resolve();
      });
    });
  }

  private async release(shard: number, token: string): Promise<void> {
    const k = this.keys[shard] as LockKeys;
    try {
      // Announced on the lease's channel: the next owner need not wait for its next try.
      await lockScripts.release.run(this.opts.redis, [k.lock, k.info], [token, k.channel]);
    } catch (e) {
      this.log.warn(
        { shard, error: e instanceof Error ? e.message : String(e) },
        'releasing a lease failed; it expires',
      );
    }
  }

  /** Served until ttl − interval after a renewal was sent (as the elector's deadline). */
  private deadlineMs(): number {
    return this.opts.ttlMs - this.opts.intervalMs;
  }

  private given = 0;
  private givenLog: unknown;
  /** One line for a burst of shards given away (a stop gives them all), not one per shard. */
  private logGiven(): void {
    if (this.givenLog !== undefined) return;
    this.givenLog = this.timers.setTimeout(() => {
      this.givenLog = undefined;
      this.log.info({ shards: this.given, serving: this.counts().serving }, 'shards given away');
      this.given = 0;
    }, 0);
  }

  private refusedRetryMs(): number {
    return this.opts.refusedRetryMs ?? 60_000;
  }

  private refusedTimer: unknown;
  /** One timer for the refused shards, set for the first whose wait ends. */
  private retryRefusedLater(): void {
    if (this.refusedTimer !== undefined || this.stopped) return;
    let wait = Infinity;
    const now = this.timers.now();
    for (const h of this.byShard.values()) {
      if (h.refusedAt !== undefined) wait = Math.min(wait, h.refusedAt + this.refusedRetryMs() - now);
    }
    if (wait === Infinity) return;
    this.refusedTimer = this.timers.setTimeout(
      () => {
        this.refusedTimer = undefined;
        this.readIn();
      },
      Math.max(0, wait),
    );
  }

  private retryTimer: unknown;
  /** Leases another holds are tried again soon: a planned move releases them within a moment. */
  private retrySoon(): void {
    if (this.retryTimer !== undefined || this.stopped) return;
    this.retryTimer = this.timers.setTimeout(
      () => {
        this.retryTimer = undefined;
        this.reconcile();
      },
      Math.min(50, this.opts.intervalMs),
    );
  }

  private scheduleRenew(): void {
    this.renewTimer = this.timers.setTimeout(() => {
      void this.renew().finally(() => {
        if (!this.stopped) this.scheduleRenew();
      });
    }, this.opts.intervalMs);
  }

  /** One compare-and-PEXPIRE per lease held, all sent at once; a lease not ours is dropped. */
  private async renew(): Promise<void> {
    const held = [...this.byShard].filter(([, h]) => h.state !== 'giving');
    if (held.length === 0) {
      this.reconcile();
      return;
    }
    const sent = this.timers.now();
    const replies = await Promise.allSettled(
      held.map(([s, h]) => {
        const k = this.keys[s] as LockKeys;
        return lockScripts.renew.run(this.opts.redis, [k.lock, k.info], [h.token, this.opts.ttlMs]);
      }),
    );
    replies.forEach((r, i) => {
      const [s, h] = held[i] as [number, Hold];
      if (this.byShard.get(s) !== h) return;
      if (r.status === 'fulfilled' && r.value === 1) {
        h.deadline = sent + this.deadlineMs();
      } else if (r.status === 'fulfilled') {
        this.log.error({ shard: s, token: h.token }, 'a shard lease holds another token: dropping the shard');
        this.byShard.delete(s);
        this.opts.onGive(s);
        void this.persistence?.dropShard(s);
      }
      // A renewal Redis did not answer: the deadline stands, and passes unless the next one succeeds.
    });
    this.reconcile();
  }
}
