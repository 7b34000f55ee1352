/**
 * Active/passive: the elector (elector.ts) joined to the Redis persistence, the data-plane gate and
 * the drain. server.ts builds one of these instead of a plain Persistence when leader election is on.
 *
 * - The leader lock is the meta tag's (layout 2: `lockKeys(layout.meta)`), and the term also holds
 *   every shard's lease with its token (leases.ts), each shard's writes fencing on its own lease.
 *   The leases are taken before the term's Persistence exists, renewed in the same tick as the
 *   lock (a renewal counts only when both succeed: the local deadline logic is the elector's),
 *   and released before the lock when the term ends. A term that cannot get them all within
 *   ttl + 2 intervals (by then an earlier holder's would have expired) steps down and sits out.
 * - Each term has its own Persistence (src/persistence/persistence.ts), created when the lock is
 *   won, with that term's token as its fencing token: the whole state is loaded from Redis into a
 *   fresh store before the term can serve (so nothing the previous leader wrote is missed), and
 *   every write of the term carries the token, so Redis refuses it once the lock has moved on.
 * - `serving` (the gate, and /ready) is true only while the elector leads (before its local
 *   deadline), the term's store is loaded and in step with Redis, and no drain is going on.
 * - `commit()` (awaited before every reply) also checks the lease after the write: a request never
 *   gets a 200 from an instance whose term ended while it ran.
 * - A fenced write ends the term at once. A term that ends for any reason drops the in-memory
 *   state (`onDrop`: waiting long polls are answered, the store is replaced by an empty one) and
 *   closes its Persistence; the next term loads everything again.
 * - Step down and stop drain first: the gate closes (new requests get 503, which nginx passes to
 *   the other instance), waiting long polls are answered while the lock is still ours, requests in
 *   flight finish, the writer flushes; only then is the lock released and the release announced
 *   on pub/sub, so the follower takes over at once instead of at its next interval.
 */
import type { Durability } from '../core/durability.js';
import type { QueueStore } from '../core/store.js';
import { quietLog, type LogSink } from '../log.js';
import type { Layout } from '../persistence/layout.js';
import { UnloadableError, type LoadProgress, type LoadStats } from '../persistence/loader.js';
import type { MigrationProgress } from '../persistence/migrate.js';
import { Persistence } from '../persistence/persistence.js';
import type { ReplicaWait } from '../persistence/writer.js';
import { FencedError } from '../persistence/scripts.js';
import { Elector, type ElectorStatus, type ElectorTimers, type Term } from './elector.js';
import { leaseKeys, LeasesUnavailableError, releaseLeases, ShardLeases } from './leases.js';
import {
  lockKeys,
  RedisLock,
  ReleaseListener,
  type LockBackend,
  type LockInfo,
  type LockKeys,
} from './lock.js';
import type { RedisClient } from '../persistence/redis.js';

export interface ActivePassiveOptions {
  /** The connection of the writer and the loader, shared by the terms. */
  readonly redis: RedisClient;
  /** The elector's own connection: renewals never wait behind a large write. */
  readonly lockRedis: RedisClient;
  /** A connection for the release channel (a subscribed connection can do nothing else). */
  readonly subscriber: RedisClient;
  /** The leader lock on its meta tag, a lease per shard that the term's writes fence on. */
  readonly layout: Layout;
  /** hostname-pid: unique among the instances, part of every token. */
  readonly instanceId: string;
  readonly ttlMs: number;
  readonly intervalMs: number;
  readonly createStore: () => QueueStore;
  /** What commit() rejects with when a change cannot be acknowledged (an SqsError: a 503). */
  readonly unavailable: (cause: Error) => Error;
  /** A term's store is loaded: serve it (still gated until the elector leads). */
  readonly onStore: (store: QueueStore, stats: LoadStats) => void;
  /** The in-memory state is no longer ours: answer waiting long polls, swap in an empty store. */
  readonly onDrop: () => void;
  /** A drain began: answer waiting long polls now (the lock is still ours, so they get a 200). */
  readonly onDrain: () => void;
  /** The data in Redis cannot be loaded by this process (layout, too big, or a Redis without the WAITAOF asked for): it should exit. */
  readonly onFatal: (e: Error) => void;
  readonly log?: LogSink | undefined;
  /** Longest wait for requests in flight during a drain; default 10 s. */
  readonly drainTimeoutMs?: number | undefined;
  readonly timers?: ElectorTimers | undefined;
  /** Each term's writer waits for replicas (--redis-wait-replicas); undefined: no wait. */
  readonly replicaWait?: ReplicaWait | undefined;
  /** Each term prunes old transfer marks, a step this often (Persistence's option); undefined: never. */
  readonly pruneMarksEveryMs?: number | undefined;
}

export interface LeaderStatus extends ElectorStatus {
  /** This instance answers SQS requests now. */
  readonly serving: boolean;
  readonly draining: boolean;
  /** The lock as Redis has it (undefined fields when Redis could not be read). */
  readonly lock: (LockInfo & { readonly error?: string }) | { readonly error: string };
  /** The current term's leases: how many it holds of how many; undefined without a term. */
  readonly leases: { readonly held: number; readonly total: number } | undefined;
}

export class ActivePassive implements Durability {
  readonly kind = 'active-passive';
  readonly elector: Elector;
  /** The leader lock, on the meta tag. */
  readonly lock: RedisLock;
  readonly layout: Layout;
  private readonly listener: ReleaseListener;
  /** Every lease a term holds: the shards', then the layout 1 keys'. */
  private readonly leaseKeys: readonly LockKeys[];
  /** The current term's, from its load on. */
  private leases: ShardLeases | undefined;
  private persistence: Persistence | undefined;
  private readonly closing = new Set<Promise<void>>();
  private draining = false;
  private inflight = 0;
  private idleWaiters: (() => void)[] = [];
  private readonly log: LogSink;
  private stopped: Promise<void> | undefined;

  constructor(private readonly opts: ActivePassiveOptions) {
    this.log = opts.log ?? quietLog;
    this.layout = opts.layout;
    this.leaseKeys = leaseKeys(this.layout);
    const keys = lockKeys(this.layout.meta);
    opts.lockRedis.on('error', () => undefined);
    this.lock = new RedisLock(opts.lockRedis, keys);
    this.elector = new Elector({
      lock: this.termLock(),
      instanceId: opts.instanceId,
      ttlMs: opts.ttlMs,
      intervalMs: opts.intervalMs,
      timers: opts.timers,
      load: (term) => this.load(term),
      onEnd: () => this.endTerm(),
      log: this.log,
    });
    this.listener = new ReleaseListener(opts.subscriber, keys.channel, (token) => this.elector.nudge(token));
  }

  /** The gate: true while this instance may answer SQS requests. */
  get serving(): boolean {
    return !this.draining && this.elector.leading && this.persistence?.serving === true;
  }

  /** Connects and starts the election (after the planes listen: /health answers meanwhile). */
  start(): void {
    this.listener.start();
    // The first attempt waits for the connection (else it fails and waits a whole interval);
    // when Redis is not there yet, the elector starts anyway and keeps trying.
    const lockRedis = this.opts.lockRedis;
    const connecting =
      lockRedis.status === 'wait' ? lockRedis.connect().catch(() => undefined) : Promise.resolve();
    void connecting.then(() => this.elector.start());
  }

  /** Resolves when the changes so far are in Redis and the term still holds; rejects otherwise. */
  async commit(shard?: number): Promise<void> {
    const p = this.persistence;
    if (p === undefined) throw this.opts.unavailable(new Error('this instance is not the leader'));
    await p.commit(shard);
    if (!this.elector.leading) {
      throw this.opts.unavailable(new Error('the leader term ended before the reply'));
    }
  }

  /** A request passed the gate; call the returned function when its reply is done. */
  enter(): () => void {
    this.inflight++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.inflight--;
      if (this.inflight === 0) {
        const waiters = this.idleWaiters;
        this.idleWaiters = [];
        for (const w of waiters) w();
      }
    };
  }

  /** How far the term's load got, while it loads. */
  get loading(): LoadProgress | undefined {
    return this.persistence?.loading;
  }

  /** How far a migration from layout 1 got; undefined unless one runs. */
  get migrating(): MigrationProgress | undefined {
    return this.persistence?.migrating;
  }

  /** The shards of this term not served now, and why. */
  get shardsDown(): ReadonlyMap<number, 'reloading' | 'refused'> | undefined {
    return this.persistence?.shardsDown;
  }

  /**
   * Planned switchover without exiting: drain, flush, release, announce; then sit out one TTL (or
   * until another instance leads). False when this instance held no term.
   */
  async stepDown(): Promise<boolean> {
    const state = this.elector.state;
    if (state !== 'leader' && state !== 'loading') return false;
    try {
      await this.drain();
      return await this.elector.stepDown();
    } finally {
      this.draining = false;
    }
  }

  /** SIGTERM: drain, flush, release and announce (when leading), then close the connections. */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      const state = this.elector.state;
      if (state === 'leader' || state === 'loading') await this.drain();
      await this.elector.stop();
      await Promise.allSettled([...this.closing]);
      this.listener.close();
      for (const r of [this.opts.lockRedis, this.opts.redis]) {
        try {
          await r.quit();
        } catch {
          r.disconnect();
        }
      }
    })();
    return this.stopped;
  }

  async status(): Promise<LeaderStatus> {
    let lock: LeaderStatus['lock'];
    try {
      lock = await this.lock.info();
    } catch (e) {
      lock = { error: e instanceof Error ? e.message : String(e) };
    }
    const l = this.leases;
    return {
      ...this.elector.status(),
      serving: this.serving,
      draining: this.draining,
      lock,
      leases: l === undefined ? undefined : { held: l.heldCount, total: l.total },
    };
  }

  stats(): {
    state: ElectorStatus['state'];
    epoch: number;
    takeovers: number;
    fenced: number;
    renewFailures: number;
  } {
    const s = this.elector.status();
    return {
      state: s.state,
      epoch: s.epoch ?? 0,
      takeovers: s.takeovers,
      fenced: s.fenced,
      renewFailures: s.renewFailures,
    };
  }

  // -------------------------------------------------------------------------------------------

  /**
   * The leader lock as the elector uses it, with the term's leases joined to it: a renewal is
   * one tick for both (true only when both held), and a release drops the leases first, so that
   * the follower the lock's release wakes finds them free.
   */
  private termLock(): LockBackend {
    const lock = this.lock;
    return {
      acquire: (instanceId, ttlMs) => lock.acquire(instanceId, ttlMs),
      holder: () => lock.holder(),
      renew: async (token, ttlMs) => {
        const leases = this.leases?.token === token ? this.leases : undefined;
        const [ours, leased] = await Promise.all([lock.renew(token, ttlMs), leases?.renew() ?? true]);
        if (ours && !leased)
          this.log.error({ token }, 'a shard lease holds another token: this term is over');
        return ours && leased;
      },
      release: async (token) => {
        try {
          await releaseLeases(this.opts.lockRedis, this.leaseKeys, token);
        } catch (e) {
          // They expire with their TTL; the lock is released all the same.
          this.log.warn(
            { error: e instanceof Error ? e.message : String(e) },
            'releasing the shard leases failed',
          );
        }
        return lock.release(token);
      },
    };
  }

  private async load(term: Term): Promise<void> {
    const { ttlMs, intervalMs } = this.opts;
    const leases = new ShardLeases({
      redis: this.opts.lockRedis,
      layout: this.layout,
      token: term.token,
      ttlMs,
      intervalMs,
      timers: this.opts.timers,
      log: this.log,
    });
    this.leases = leases;
    try {
      await leases.acquire({ signal: term.signal, withinMs: ttlMs + 2 * intervalMs });
    } catch (e) {
      if (e instanceof LeasesUnavailableError && !term.signal.aborted) {
        this.log.error(
          { epoch: term.epoch, missing: e.missing, holders: Object.fromEntries(e.holders) },
          'the shard leases were not all free in time: stepping down',
        );
        void this.elector.stepDown('leases');
      }
      throw e;
    }
    const p = new Persistence({
      redis: this.opts.redis,
      layout: this.layout,
      createStore: this.opts.createStore,
      unavailable: this.opts.unavailable,
      keepConnection: true,
      token: () => term.token,
      onStore: (store, stats) => {
        if (!term.signal.aborted) this.opts.onStore(store, stats);
      },
      onDiverged: (cause) => {
        if (term.signal.aborted) return;
        // The store no longer matches Redis: stop serving it now (Persistence reloads it unless
        // the term ends, which a fenced write does at once).
        this.opts.onDrop();
        if (cause instanceof FencedError) this.elector.fence();
      },
      onFatal: (e) => this.opts.onFatal(e),
      log: this.log,
      replicaWait: this.opts.replicaWait,
      pruneMarksEveryMs: this.opts.pruneMarksEveryMs,
    });
    this.persistence = p;
    try {
      await p.start();
    } catch (e) {
      if (e instanceof UnloadableError) this.opts.onFatal(e);
      throw e;
    }
  }

  /** The term ended (elector's onEnd, synchronous): drop the state, close its Persistence. */
  private endTerm(): void {
    const p = this.persistence;
    this.persistence = undefined;
    this.leases = undefined;
    this.opts.onDrop();
    if (p !== undefined) {
      const closing = p.close().catch(() => undefined);
      this.closing.add(closing);
      void closing.finally(() => this.closing.delete(closing));
    }
  }

  /** Closes the gate, answers long polls, waits for requests in flight, flushes the writer. */
  private async drain(): Promise<void> {
    this.draining = true;
    this.log.info({ inflight: this.inflight }, 'draining: new requests get 503, finishing those in flight');
    this.opts.onDrain();
    await this.idle(this.opts.drainTimeoutMs ?? 10_000);
    await this.persistence?.commit().catch(() => undefined);
  }

  private idle(timeoutMs: number): Promise<void> {
    if (this.inflight === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.log.warn({ inflight: this.inflight }, 'drain timed out with requests still in flight');
        resolve();
      }, timeoutMs);
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}
