/**
 * The leader elector: which of the instances sharing one Redis serves, and for how long it may.
 *
 *                 acquire ok                 load done
 *   follower ───────────────────► loading ───────────────► leader
 *      ▲                             │                        │
 *      └─────────────────────────────┴────────────────────────┘
 *        renew refused, deadline passed, a write fenced, load failed, step down, stop
 *
 * - follower: every `interval` it runs the acquire script, which takes the lock only when nobody
 *   holds it: `INCR epoch`, then `SET lock <epoch>:<instance id> NX PX ttl`. So a token is new at
 *   every acquisition, and a token names its term. A release announced on pub/sub (`nudge`) makes
 *   it try at once instead of at its next interval. /ready and the data plane answer 503.
 * - loading: the lock is ours; `load(term)` reads the whole state from Redis into a fresh store
 *   (the predecessor served whatever it had loaded at its own start). Renewals already run, since
 *   a large state may take longer than the TTL to read. Still 503 everywhere.
 * - leader: serves. Every `interval` it renews (compare-and-PEXPIRE: only while the lock still
 *   holds our token). Every write script checks the token too (fencing), so a write from a term
 *   that is over is refused by Redis itself, whatever this process believes.
 *
 * The local deadline. A renewal sent at local time t, if Redis applied it, keeps the lock until at
 * least t + ttl (Redis starts counting when it receives the command, after we sent it). So each
 * success moves a deadline to t + renewDeadline, with renewDeadline = ttl - interval by default:
 * when renewals fail (Redis down, slow, or this process paused), the instance stops serving at the
 * deadline, one interval before the lock can expire and another instance can take it. That is
 * Kubernetes' renew deadline (10 s) inside its lease duration (15 s). The deadline is read from a
 * monotonic clock, and `leading` compares it with the clock on every call instead of trusting a
 * timer to have fired: after a SIGSTOP/SIGCONT, the first request the process reads sees that
 * its time is up before any timer runs. Never "leader without a lock".
 *
 * Ending a term (any of the arrows back): the state becomes follower at once, `onEnd` is told
 * synchronously (the owner answers waiting long polls and drops the in-memory state; the next term
 * loads it again), and the lock is released if it is still ours (compare-and-DEL, announced). A
 * step down then sits out one TTL, or until another instance is seen holding the lock, so that the
 * instance that stepped down does not take the lock straight back.
 *
 * Time and timers are injected (`timers`), so the unit tests drive every transition with a fake
 * clock and never sleep.
 */
import { quietLog, type LogSink } from '../log.js';
import { parseToken, type AcquireResult, type LockBackend } from './lock.js';

export type ElectorState = 'follower' | 'loading' | 'leader' | 'stopped';

/** Why a term ended. */
export type EndReason =
  | 'lost' // a renewal found another token (or none) in the lock
  | 'deadline' // no renewal succeeded before the local deadline
  | 'fenced' // a write was refused by the fencing check
  | 'load-failed' // reading the state failed
  | 'step-down' // asked to, on the control plane
  | 'leases' // the shard leases were not all free in time (leases.ts): sit out as a step down
  | 'stop'; // the process is stopping

/** One leadership term: from winning the lock to losing or releasing it. */
export interface Term {
  readonly token: string;
  readonly epoch: number;
  /** Aborted when the term ends. */
  readonly signal: AbortSignal;
}

/** Time and timers; `now` is monotonic milliseconds (performance.now in the server). */
export interface ElectorTimers {
  now(): number;
  /** Wall-clock ms since the epoch, for the status only. */
  wallNow(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemTimers: ElectorTimers = {
  now: () => performance.now(),
  wallNow: () => Date.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    // Timers of the elector never keep a stopping process alive.
    t.unref();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

export interface ElectorOptions {
  readonly lock: LockBackend;
  /** Unique among the instances: hostname-pid. */
  readonly instanceId: string;
  readonly ttlMs: number;
  readonly intervalMs: number;
  /** How long after a successful renewal this instance may still serve; default ttl - interval. */
  readonly renewDeadlineMs?: number | undefined;
  /** Retry delay after a renewal that failed (error or timeout); default interval / 3. */
  readonly retryMs?: number | undefined;
  /** A lock call not answered within this is taken as failed; default the interval. */
  readonly callTimeoutMs?: number | undefined;
  readonly timers?: ElectorTimers | undefined;
  /** Load the state for `term`; resolve when it can serve. A rejection ends the term. */
  readonly load: (term: Term) => Promise<void>;
  /** A term ended (called synchronously, before the lock is released). */
  readonly onEnd?: ((term: Term, reason: EndReason) => void) | undefined;
  /** A term reached `leader`. */
  readonly onLead?: ((term: Term) => void) | undefined;
  readonly log?: LogSink | undefined;
}

export interface ElectorStatus {
  readonly instanceId: string;
  readonly state: ElectorState;
  /** True while this instance may serve (leader, before its deadline). */
  readonly leading: boolean;
  readonly epoch: number | undefined;
  readonly token: string | undefined;
  /** Wall-clock ms when this instance won the lock for the current term. */
  readonly since: number | undefined;
  /** Wall-clock ms of the last successful renewal. */
  readonly lastRenewal: number | undefined;
  /** ms until the local deadline (negative: passed). */
  readonly deadlineInMs: number | undefined;
  /** The holder seen at the last failed acquisition (a follower's view). */
  readonly lastSeenHolder: string | undefined;
  /** Terms that reached leader. */
  readonly takeovers: number;
  /** Terms ended by a fenced write. */
  readonly fenced: number;
  readonly renewFailures: number;
  readonly lastEnd: { readonly reason: EndReason; readonly at: number } | undefined;
  /** Wall-clock ms until which a step-down sits out; undefined when not sitting out. */
  readonly sittingOutUntil: number | undefined;
}

interface ActiveTerm extends Term {
  readonly controller: AbortController;
  readonly since: number;
  /** Monotonic ms after which this term may not serve. */
  deadline: number;
  lastRenewal: number;
}

export class Elector {
  private stateNow: ElectorState = 'follower';
  private term: ActiveTerm | undefined;
  private readonly timers: ElectorTimers;
  private readonly log: LogSink;
  private readonly renewDeadlineMs: number;
  private readonly retryMs: number;
  private readonly callTimeoutMs: number;
  private tickTimer: unknown;
  private deadlineTimer: unknown;
  private started = false;
  /** An acquire or renew call is in flight; ticks meanwhile are folded into one after it. */
  private busy = false;
  private tickAgain = false;
  private lastSeenHolder: string | undefined;
  private sitOutUntil: number | undefined;
  private takeovers = 0;
  private fenced = 0;
  private renewFailures = 0;
  private lastEnd: { reason: EndReason; at: number } | undefined;
  private readonly releases = new Set<Promise<unknown>>();

  constructor(private readonly opts: ElectorOptions) {
    if (!(opts.ttlMs > 0 && opts.intervalMs > 0)) throw new Error('ttl and interval must be positive');
    this.timers = opts.timers ?? systemTimers;
    this.log = opts.log ?? quietLog;
    this.renewDeadlineMs = opts.renewDeadlineMs ?? opts.ttlMs - opts.intervalMs;
    if (!(this.renewDeadlineMs > 0 && this.renewDeadlineMs < opts.ttlMs)) {
      throw new Error('the renew deadline must be shorter than the ttl');
    }
    this.retryMs = opts.retryMs ?? Math.max(1, Math.floor(opts.intervalMs / 3));
    this.callTimeoutMs = opts.callTimeoutMs ?? opts.intervalMs;
  }

  get state(): ElectorState {
    return this.stateNow;
  }

  /** True while this instance may serve: leader, and its local deadline not yet passed. */
  get leading(): boolean {
    return this.stateNow === 'leader' && this.term !== undefined && this.timers.now() < this.term.deadline;
  }

  /** The token of the current term (loading or leader). */
  get token(): string | undefined {
    return this.term?.token;
  }

  get epoch(): number | undefined {
    return this.term?.epoch;
  }

  /** Starts the first attempt at once, then every interval. */
  start(): void {
    if (this.started || this.stateNow === 'stopped') return;
    this.started = true;
    this.log.info(
      { instanceId: this.opts.instanceId, ttlMs: this.opts.ttlMs, intervalMs: this.opts.intervalMs },
      'leader election started',
    );
    this.schedule(0);
  }

  /** A release was announced: a follower tries at once (unless it is sitting out for that token). */
  nudge(releasedToken: string): void {
    if (this.stateNow !== 'follower' || !this.started) return;
    if (parseToken(releasedToken)?.instanceId === this.opts.instanceId) return; // our own release
    if (this.sitOutUntil !== undefined) {
      // Another instance led since we stepped down, and gave it up: the sit-out is over.
      this.sitOutUntil = undefined;
    }
    this.schedule(0);
  }

  /** A write was refused by the fencing check: end the term now. */
  fence(): void {
    if (this.term === undefined) return;
    this.fenced++;
    void this.end('fenced');
  }

  /**
   * Ends the term on purpose, releasing and announcing the lock, then sits out one TTL (or until
   * another instance is seen holding the lock). The caller drains before calling this.
   * Resolves with false when there was no term to end. `reason` is what the status and the log
   * tell: 'leases' when the term gives up for want of its shard leases.
   */
  async stepDown(reason: 'step-down' | 'leases' = 'step-down'): Promise<boolean> {
    if (this.term === undefined) return false;
    this.sitOutUntil = this.timers.now() + this.opts.ttlMs;
    await this.end(reason);
    return true;
  }

  /** Ends the term (releasing the lock) and stops for good. */
  async stop(): Promise<void> {
    if (this.stateNow === 'stopped') return;
    const ending = this.term === undefined ? undefined : this.end('stop');
    this.stateNow = 'stopped';
    this.timers.clearTimeout(this.tickTimer);
    this.timers.clearTimeout(this.deadlineTimer);
    await ending;
    await Promise.allSettled([...this.releases]);
  }

  status(): ElectorStatus {
    const t = this.term;
    const now = this.timers.now();
    return {
      instanceId: this.opts.instanceId,
      state: this.stateNow,
      leading: this.leading,
      epoch: t?.epoch,
      token: t?.token,
      since: t?.since,
      lastRenewal: t?.lastRenewal,
      deadlineInMs: t === undefined ? undefined : Math.round(t.deadline - now),
      lastSeenHolder: this.lastSeenHolder,
      takeovers: this.takeovers,
      fenced: this.fenced,
      renewFailures: this.renewFailures,
      lastEnd: this.lastEnd,
      sittingOutUntil:
        this.sitOutUntil === undefined || this.sitOutUntil <= now
          ? undefined
          : Math.round(this.timers.wallNow() + (this.sitOutUntil - now)),
    };
  }

  // -------------------------------------------------------------------------------------------

  private schedule(ms: number): void {
    if (this.stateNow === 'stopped') return;
    this.timers.clearTimeout(this.tickTimer);
    this.tickTimer = this.timers.setTimeout(() => void this.tick(), ms);
  }

  private async tick(): Promise<void> {
    if (this.stateNow === 'stopped') return;
    if (this.busy) {
      this.tickAgain = true;
      return;
    }
    this.busy = true;
    try {
      if (this.term === undefined) await this.tryAcquire();
      else await this.renew(this.term);
    } finally {
      this.busy = false;
    }
    if (this.tickAgain) {
      this.tickAgain = false;
      this.schedule(0);
    }
  }

  private async tryAcquire(): Promise<void> {
    const { lock, instanceId, ttlMs, intervalMs } = this.opts;
    const sentAt = this.timers.now();
    if (this.sitOutUntil !== undefined) {
      if (sentAt >= this.sitOutUntil) this.sitOutUntil = undefined;
      else {
        // Sitting out after a step down: look, but do not take.
        await this.look();
        this.schedule(Math.min(intervalMs, Math.max(0, (this.sitOutUntil ?? sentAt) - sentAt)));
        return;
      }
    }
    let res: AcquireResult;
    try {
      res = await this.call(lock.acquire(instanceId, ttlMs));
      if (!res.acquired && parseToken(res.holder)?.instanceId === instanceId) {
        // The lock holds a token of ours from a term that is over (we demoted on the local
        // deadline while Redis kept it, or an answer was lost): nobody else can hold it, so
        // clear it and try again.
        await this.call(lock.release(res.holder));
        res = await this.call(lock.acquire(instanceId, ttlMs));
      }
    } catch (e) {
      this.log.warn({ error: errorText(e) }, 'leader election: cannot reach Redis to try the lock');
      this.schedule(intervalMs);
      return;
    }
    if (this.stateNow === 'stopped') {
      if (res.acquired) void this.releaseLater(res.token);
      return;
    }
    if (!res.acquired) {
      if (res.holder !== this.lastSeenHolder) {
        this.log.info(
          { holder: res.holder, expiresInMs: res.pttlMs },
          'leader election: another instance leads',
        );
      }
      this.lastSeenHolder = res.holder;
      this.schedule(intervalMs);
      return;
    }
    if (this.timers.now() >= sentAt + this.renewDeadlineMs) {
      // The answer took so long that our deadline passed on the way: do not start a term on it.
      void this.releaseLater(res.token);
      this.schedule(intervalMs);
      return;
    }
    this.begin(res.token, res.epoch, sentAt);
  }

  /** While sitting out: has another instance taken the lock since? Then the sit-out is over. */
  private async look(): Promise<void> {
    try {
      const holder = await this.call(this.opts.lock.holder());
      if (holder !== undefined && parseToken(holder)?.instanceId !== this.opts.instanceId) {
        this.sitOutUntil = undefined;
        this.lastSeenHolder = holder;
      }
    } catch {
      // Redis unreachable: keep sitting out.
    }
  }

  private begin(token: string, epoch: number, sentAt: number): void {
    const controller = new AbortController();
    const term: ActiveTerm = {
      token,
      epoch,
      controller,
      signal: controller.signal,
      since: this.timers.wallNow(),
      deadline: sentAt + this.renewDeadlineMs,
      lastRenewal: this.timers.wallNow(),
    };
    this.term = term;
    this.stateNow = 'loading';
    this.lastSeenHolder = token;
    this.log.info(
      { epoch, instanceId: this.opts.instanceId },
      'leader lock won: loading the state from Redis',
    );
    this.armDeadline(term);
    this.schedule(this.opts.intervalMs);
    let loading: Promise<void>;
    try {
      loading = this.opts.load(term);
    } catch (e) {
      loading = Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
    loading.then(
      () => {
        if (this.term !== term || this.stateNow !== 'loading') return;
        if (this.timers.now() >= term.deadline) {
          void this.end('deadline');
          return;
        }
        this.stateNow = 'leader';
        this.takeovers++;
        this.log.info({ epoch, instanceId: this.opts.instanceId }, 'leading: serving');
        this.opts.onLead?.(term);
      },
      (e: unknown) => {
        if (this.term !== term) return;
        this.log.error({ epoch, error: errorText(e) }, 'loading the state failed: giving up the lock');
        void this.end('load-failed');
      },
    );
  }

  private async renew(term: ActiveTerm): Promise<void> {
    const sentAt = this.timers.now();
    let ok: boolean;
    try {
      ok = await this.call(this.opts.lock.renew(term.token, this.opts.ttlMs));
    } catch (e) {
      if (this.term !== term) return;
      this.renewFailures++;
      this.log.warn(
        {
          epoch: term.epoch,
          error: errorText(e),
          deadlineInMs: Math.round(term.deadline - this.timers.now()),
        },
        'renewing the leader lock failed',
      );
      this.schedule(this.retryMs);
      return;
    }
    if (this.term !== term) return;
    if (!ok) {
      this.log.error({ epoch: term.epoch }, 'the leader lock holds another token: this term is over');
      void this.end('lost');
      return;
    }
    term.deadline = Math.max(term.deadline, sentAt + this.renewDeadlineMs);
    term.lastRenewal = this.timers.wallNow();
    this.armDeadline(term);
    this.schedule(this.opts.intervalMs);
  }

  private armDeadline(term: ActiveTerm): void {
    this.timers.clearTimeout(this.deadlineTimer);
    this.deadlineTimer = this.timers.setTimeout(
      () => {
        if (this.term !== term) return;
        if (this.timers.now() >= term.deadline) {
          this.log.error(
            { epoch: term.epoch },
            'no renewal of the leader lock succeeded before the local deadline: demoting',
          );
          void this.end('deadline');
        } else {
          this.armDeadline(term);
        }
      },
      Math.max(0, term.deadline - this.timers.now()),
    );
  }

  /** Ends the current term: follower at once, owner told, lock released if still ours. */
  private end(reason: EndReason): Promise<void> {
    const term = this.term;
    if (term === undefined) return Promise.resolve();
    this.term = undefined;
    if (this.stateNow !== 'stopped') this.stateNow = 'follower';
    this.lastEnd = { reason, at: this.timers.wallNow() };
    this.timers.clearTimeout(this.deadlineTimer);
    term.controller.abort(new Error(`term ${term.epoch} ended: ${reason}`));
    const level = reason === 'step-down' || reason === 'stop' ? 'info' : 'warn';
    this.log[level]({ epoch: term.epoch, reason }, 'leader term ended: not serving');
    try {
      this.opts.onEnd?.(term, reason);
    } catch (e) {
      this.log.error({ error: errorText(e) }, 'onEnd failed');
    }
    const released = this.releaseLater(term.token);
    if (reason !== 'stop') this.schedule(this.opts.intervalMs);
    return released;
  }

  /** `p`, or a rejection once callTimeoutMs passed without an answer (the elector never hangs on one). */
  private call<T>(p: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = this.timers.setTimeout(
        () => reject(new Error(`no answer from Redis within ${this.callTimeoutMs} ms`)),
        this.callTimeoutMs,
      );
      p.then(
        (v) => {
          this.timers.clearTimeout(timer);
          resolve(v);
        },
        (e: unknown) => {
          this.timers.clearTimeout(timer);
          reject(e instanceof Error ? e : new Error(String(e)));
        },
      );
    });
  }

  /** Compare-and-DEL of `token` (a no-op when the lock holds another); never rejects. */
  private releaseLater(token: string): Promise<void> {
    const p = this.call(this.opts.lock.release(token)).then(
      (released) => {
        if (released) this.log.info({ epoch: Number(token.split(':')[0]) }, 'leader lock released');
      },
      (e: unknown) => this.log.warn({ error: errorText(e) }, 'releasing the leader lock failed'),
    );
    this.releases.add(p);
    void p.finally(() => this.releases.delete(p));
    return p;
  }
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
