/**
 * The coordinator: the one instance at a time that writes the shard map (shard-map.ts). It is
 * elected with the leader machinery of src/ha/ (an `Elector` on a `RedisLock`), on a lock of its
 * own under the meta tag, `coordinator` (src/persistence/layout.ts): active/passive's `leader` is
 * not used in this mode, but a lock apart means a leftover leader lock, or the admin API's view of
 * it, never meets the coordinator's.
 *
 * On every membership change, every pin change, on winning the lock and every interval, it reads
 * the live members, the pins and the map, computes `placement(live members, pins)`
 * (src/shard/placement.ts) and writes the shards whose owner differs, in one call of `assign-2.lua`:
 * refused unless its token still holds the lock and the map is still at the version it read.
 * A refused write for the lock ends its term at once.
 *
 * It is off the data path: the map is only ever changed, never cleared, so when the coordinator
 * dies every shard keeps the owner the map names, and only changes wait for the next coordinator.
 * With no live member at all (Redis lost every member key, say) it writes nothing.
 */
import { quietLog, type LogSink } from '../log.js';
import { Elector, systemTimers, type ElectorStatus, type ElectorTimers } from '../ha/elector.js';
import { lockKeys, type LockBackend, type LockKeys } from '../ha/lock.js';
import type { Layout } from '../persistence/layout.js';
import { SHARD_COUNT } from '../shard/hash.js';
import { placement } from '../shard/placement.js';
import type { OwnersStore } from './shard-map.js';

/** The coordinator's lock, its info hash and release channel, beside the meta tag's epoch counter. */
export function coordinatorLockKeys(layout: Layout): LockKeys {
  return lockKeys({ ...layout.meta, lock: layout.meta.coordinator });
}

/** The shards whose owner in `target` is set and differs from `current`, with that owner. */
export function changesFor(
  current: readonly (string | undefined)[],
  target: readonly (string | undefined)[],
): Map<number, string> {
  const out = new Map<number, string>();
  target.forEach((owner, s) => {
    if (owner !== undefined && owner !== current[s]) out.set(s, owner);
  });
  return out;
}

export type ReconcileOutcome =
  | { readonly kind: 'not-coordinator' }
  | { readonly kind: 'no-members' }
  | { readonly kind: 'unchanged'; readonly version: number }
  | { readonly kind: 'written'; readonly version: number; readonly moved: readonly number[] }
  /** The lock holds another token: the write was refused and the term ended. */
  | { readonly kind: 'fenced' }
  /** The map was at another version than the one read: tried again at once. */
  | { readonly kind: 'version'; readonly version: number }
  | { readonly kind: 'failed'; readonly error: string };

export interface CoordinatorOptions {
  /** This instance's id, as in its member record. */
  readonly id: string;
  /** `new RedisLock(redis, coordinatorLockKeys(layout))` in the server. */
  readonly lock: LockBackend;
  readonly store: OwnersStore;
  /** The ids of the live members, read afresh (Membership.live in the server). */
  readonly live: () => Promise<readonly string[]>;
  /** The coordinator lock's TTL. */
  readonly ttlMs: number;
  /** How often the lock is tried or renewed, and the map reconciled without a nudge. */
  readonly intervalMs: number;
  readonly shards?: number | undefined;
  readonly timers?: ElectorTimers | undefined;
  readonly log?: LogSink | undefined;
}

export interface CoordinatorStatus {
  readonly coordinating: boolean;
  readonly elector: ElectorStatus;
  readonly reconciles: number;
  readonly writes: number;
  readonly lastOutcome: ReconcileOutcome | undefined;
}

export class Coordinator {
  private readonly elector: Elector;
  private readonly timers: ElectorTimers;
  private readonly log: LogSink;
  private readonly shards: number;
  private readonly listeners = new Set<(outcome: ReconcileOutcome) => void>();
  private intervalTimer: unknown;
  private soonTimer: unknown;
  private soonPending = false;
  private running = false;
  private busy: Promise<ReconcileOutcome> | undefined;
  private again = false;
  private reconciles = 0;
  private writes = 0;
  private lastOutcome: ReconcileOutcome | undefined;

  constructor(private readonly opts: CoordinatorOptions) {
    this.timers = opts.timers ?? systemTimers;
    this.log = opts.log ?? quietLog;
    this.shards = opts.shards ?? SHARD_COUNT;
    this.elector = new Elector({
      lock: opts.lock,
      instanceId: opts.id,
      ttlMs: opts.ttlMs,
      intervalMs: opts.intervalMs,
      timers: this.timers,
      // The elector speaks of "the leader lock": say which lock it is here.
      log: tagged(this.log, { lock: 'coordinator' }),
      // Nothing to load: the map is read afresh by every reconciliation.
      load: () => Promise.resolve(),
      onLead: (term) => {
        this.log.info({ id: opts.id, epoch: term.epoch }, 'coordinating the shard map');
        this.nudge();
      },
    });
  }

  /** True while this instance holds the coordinator lock (before its local deadline). */
  get coordinating(): boolean {
    return this.elector.leading;
  }

  /** Calls `fn` with the outcome of every reconciliation from now on. */
  onReconcile(fn: (outcome: ReconcileOutcome) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.elector.start();
    this.scheduleInterval();
  }

  /** Stops for good, releasing the lock (announced) if held, so another instance takes over at once. */
  async stop(): Promise<void> {
    this.running = false;
    this.timers.clearTimeout(this.intervalTimer);
    this.timers.clearTimeout(this.soonTimer);
    this.soonPending = false;
    await this.elector.stop();
  }

  /** Something changed (members, pins): reconcile now rather than at the next interval. */
  nudge(): void {
    if (this.coordinating) this.soon();
  }

  /** A coordinator token was released (pub/sub): a follower tries the lock at once. */
  released(token: string): void {
    this.elector.nudge(token);
  }

  status(): CoordinatorStatus {
    return {
      coordinating: this.coordinating,
      elector: this.elector.status(),
      reconciles: this.reconciles,
      writes: this.writes,
      lastOutcome: this.lastOutcome,
    };
  }

  /**
   * Brings the map in line with the placement of the live members, if this instance coordinates.
   * Calls that come while one runs are folded into one more run after it.
   */
  async reconcile(): Promise<ReconcileOutcome> {
    if (this.busy !== undefined) {
      this.again = true;
      return this.busy;
    }
    const run = this.reconcileOnce();
    this.busy = run;
    let outcome: ReconcileOutcome;
    try {
      outcome = await run;
    } finally {
      this.busy = undefined;
    }
    if (this.again || outcome.kind === 'version') {
      this.again = false;
      this.soon();
    }
    return outcome;
  }

  // -------------------------------------------------------------------------------------------

  private scheduleInterval(): void {
    if (!this.running) return;
    this.intervalTimer = this.timers.setTimeout(() => {
      void this.reconcile().finally(() => this.scheduleInterval());
    }, this.opts.intervalMs);
  }

  private soon(): void {
    if (!this.running || this.soonPending) return;
    this.soonPending = true;
    this.soonTimer = this.timers.setTimeout(() => {
      this.soonPending = false;
      void this.reconcile();
    }, 0);
  }

  private async reconcileOnce(): Promise<ReconcileOutcome> {
    const outcome = await this.compute();
    if (outcome.kind !== 'not-coordinator') {
      this.reconciles++;
      this.lastOutcome = outcome;
      if (outcome.kind === 'written') {
        this.writes++;
        this.log.info(
          { version: outcome.version, moved: outcome.moved.length },
          'coordinator: shard map written',
        );
      } else if (outcome.kind === 'failed') {
        this.log.warn({ error: outcome.error }, 'coordinator: reconciling the shard map failed');
      }
      for (const l of this.listeners) {
        try {
          l(outcome);
        } catch (e) {
          this.log.error(
            { error: e instanceof Error ? e.message : String(e) },
            'a coordinator listener failed',
          );
        }
      }
    }
    return outcome;
  }

  private async compute(): Promise<ReconcileOutcome> {
    const token = this.elector.token;
    if (!this.coordinating || token === undefined) return { kind: 'not-coordinator' };
    try {
      const [live, pins, map] = await Promise.all([
        this.opts.live(),
        this.opts.store.pins(),
        this.opts.store.read(),
      ]);
      if (live.length === 0) return { kind: 'no-members' };
      const changes = changesFor(map.owners, placement(live, this.shards, pins));
      if (changes.size === 0) return { kind: 'unchanged', version: map.version };
      // The term may have ended while we read: no need to send a write the lock will refuse.
      if (this.elector.token !== token || !this.coordinating) return { kind: 'not-coordinator' };
      const res = await this.opts.store.assign(token, map.version, changes);
      if (res.ok) return { kind: 'written', version: res.version, moved: [...changes.keys()] };
      if (res.reason === 'version') return { kind: 'version', version: res.version };
      this.log.error(
        { id: this.opts.id },
        'coordinator: the lock holds another token: the write was refused',
      );
      this.elector.fence();
      return { kind: 'fenced' };
    } catch (e) {
      return { kind: 'failed', error: e instanceof Error ? e.message : String(e) };
    }
  }
}

function tagged(log: LogSink, tag: object): LogSink {
  return {
    info: (obj, msg) => log.info({ ...tag, ...obj }, msg),
    warn: (obj, msg) => log.warn({ ...tag, ...obj }, msg),
    error: (obj, msg) => log.error({ ...tag, ...obj }, msg),
  };
}
