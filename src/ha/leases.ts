/**
 * The shard leases of layout 2 (src/persistence/layout.ts): a Lua call may touch one hash tag
 * only, so each shard's writes fence on a lease under the shard's own tag instead of on the
 * leader lock. The leader holds all of them, with its term's token: active/passive as before,
 * one fencing key per shard.
 *
 * | key (per shard)  | type   | holds                                                         |
 * |------------------|--------|---------------------------------------------------------------|
 * | `<s>lease`       | string | the token `<epoch>:<instance id>` of the term, with a TTL      |
 * | `<s>lease:info`  | hash   | token, since, renewed, released (Redis TIME, ms): as the lock  |
 *
 * The epoch comes from the leader lock on the meta tag; a lease spends none. A lease held by
 * another token is never taken: that term may still be writing to the shard until its lease
 * expires (or is released), so taking it earlier would let its writes land after the new term
 * loaded the shard. A lease still holding a token of this instance's own, from a term already
 * over, is released and taken at once, as the elector does with the lock.
 *
 * Each operation is one call per lease, all sent at once: one pipeline on a single Redis; on a
 * Cluster, where an ioredis pipeline must stay on one node, concurrent calls that the client
 * routes by slot, so each node's connection still carries them back to back.
 */
import { Cluster } from 'ioredis';
import { quietLog, type LogSink } from '../log.js';
import type { Keys } from '../persistence/keys.js';
import type { Layout } from '../persistence/layout.js';
import { mastersConnected, type RedisClient } from '../persistence/redis.js';
import { loadScript, type LuaScript, type ScriptArg } from '../persistence/scripts.js';
import { systemTimers, type ElectorTimers } from './elector.js';
import { lockKeys, lockScripts, parseToken, type LockKeys } from './lock.js';

export const leaseScripts = {
  acquire: loadScript('ha/scripts', 'lease-2'),
};

/** The leases the leader holds: every shard's, then the other keyspaces' (`extra`), in that order. */
export function leaseKeys(layout: Layout, extra: readonly Keys[] = []): LockKeys[] {
  return [...layout.shards, ...extra].map(lockKeys);
}

export interface ShardLeasesOptions {
  /** The elector's connection (or a Cluster client): renewals never wait behind a large write. */
  readonly redis: RedisClient;
  readonly layout: Layout;
  /**
   * Keyspaces besides the shards whose writes fence on the term's token, each leased on its
   * `lock` key like a shard (the layout 1 keys while a term still writes them).
   */
  readonly extra?: readonly Keys[] | undefined;
  /** The term's token, won on the leader lock. */
  readonly token: string;
  readonly ttlMs: number;
  /** How often acquire() tries again for the leases another token holds. */
  readonly intervalMs: number;
  readonly timers?: ElectorTimers | undefined;
  readonly log?: LogSink | undefined;
}

/** acquire() gave up: some leases were still held by other tokens when its time was up. */
export class LeasesUnavailableError extends Error {
  override readonly name = 'LeasesUnavailableError';
  constructor(
    /** The other tokens seen at the last attempt, with how many leases each held. */
    readonly holders: ReadonlyMap<string, number>,
    readonly missing: number,
  ) {
    super(
      `${missing} lease(s) not acquired in time; held by ${[...holders.keys()].join(', ') || 'nobody (errors)'}`,
    );
  }
}

type Settled = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: Error };

/** One term's hold on every shard lease. */
export class ShardLeases {
  readonly token: string;
  /** Every lease of the term: index < shard count is that shard's. */
  readonly keys: readonly LockKeys[];
  private readonly held = new Set<number>();
  private readonly timers: ElectorTimers;
  private readonly log: LogSink;
  private readonly instanceId: string | undefined;

  constructor(private readonly opts: ShardLeasesOptions) {
    if (!(opts.ttlMs > 0 && opts.intervalMs > 0)) throw new Error('ttl and interval must be positive');
    this.token = opts.token;
    this.keys = leaseKeys(opts.layout, opts.extra);
    this.timers = opts.timers ?? systemTimers;
    this.log = opts.log ?? quietLog;
    this.instanceId = parseToken(opts.token)?.instanceId;
  }

  /** How many of the leases this term holds, as far as it knows. */
  get heldCount(): number {
    return this.held.size;
  }

  get total(): number {
    return this.keys.length;
  }

  /**
   * Takes every lease with the term's token; resolves once all are held. Those another token
   * holds are tried again every interval (sooner when they expire sooner) until they are free.
   * Rejects with a LeasesUnavailableError once `withinMs` has passed without all of them, and
   * with the signal's reason when it aborts.
   */
  async acquire(opts: { signal?: AbortSignal; withinMs?: number } = {}): Promise<void> {
    const { signal } = opts;
    const giveUpAt = opts.withinMs === undefined ? Infinity : this.timers.now() + opts.withinMs;
    let lastLogged = '';
    const releasedOwn = new Set<string>();
    for (;;) {
      signal?.throwIfAborted();
      const pending = this.keys.map((_, i) => i).filter((i) => !this.held.has(i));
      let replies: Settled[];
      try {
        replies = await this.runAll(
          leaseScripts.acquire,
          pending.map((i) => this.call(i, [this.token, this.opts.ttlMs])),
        );
      } catch (e) {
        const error = e instanceof Error ? e : new Error(String(e));
        replies = pending.map(() => ({ ok: false, error }));
      }
      signal?.throwIfAborted();
      const holders = new Map<string, number>();
      /** Earlier tokens of this instance → the leases still holding them. */
      const ownStale = new Map<string, LockKeys[]>();
      let waitMs = this.opts.intervalMs;
      let errors = 0;
      replies.forEach((r, n) => {
        const i = pending[n] as number;
        if (!r.ok) {
          errors++;
          return;
        }
        const [taken, holder, pttl] = r.value as [number, string?, number?];
        if (taken === 1) {
          this.held.add(i);
          return;
        }
        const h = String(holder);
        holders.set(h, (holders.get(h) ?? 0) + 1);
        if (
          this.instanceId !== undefined &&
          parseToken(h)?.instanceId === this.instanceId &&
          !releasedOwn.has(h)
        ) {
          ownStale.set(h, [...(ownStale.get(h) ?? []), this.keys[i] as LockKeys]);
        } else if (typeof pttl === 'number' && pttl > 0) {
          // The holder's leases expire together: try again as soon as the first of them can be free.
          waitMs = Math.min(waitMs, pttl);
        }
      });
      if (this.held.size === this.keys.length) {
        this.log.info({ leases: this.keys.length }, 'holding every shard lease');
        return;
      }
      if (ownStale.size > 0) {
        // A term of ours that is over: its writes are over too, so its leases can go at once.
        this.log.info(
          { tokens: Object.fromEntries([...ownStale].map(([t, ks]) => [t, ks.length])) },
          'releasing the leases of an earlier term of this instance',
        );
        for (const t of ownStale.keys()) releasedOwn.add(t);
        try {
          await Promise.all([...ownStale].map(([t, ks]) => releaseLeases(this.opts.redis, ks, t)));
          continue;
        } catch (e) {
          this.log.warn({ error: e instanceof Error ? e.message : String(e) }, 'releasing them failed');
        }
      }
      const summary = [...holders.keys()].sort().join(',') + (errors > 0 ? '+errors' : '');
      if (summary !== lastLogged) {
        lastLogged = summary;
        this.log.warn(
          { missing: this.keys.length - this.held.size, holders: Object.fromEntries(holders), errors },
          'shard leases held by another term: waiting for them to expire',
        );
      }
      const now = this.timers.now();
      if (now >= giveUpAt) throw new LeasesUnavailableError(holders, this.keys.length - this.held.size);
      await this.wait(Math.max(1, Math.min(waitMs, giveUpAt - now)), signal);
    }
  }

  /**
   * Extends every lease held, while it still holds the token (compare-and-PEXPIRE). False when
   * one no longer does: the term is over. Rejects when Redis did not answer for all of them.
   */
  async renew(): Promise<boolean> {
    const held = [...this.held];
    const replies = await this.runAll(
      lockScripts.renew,
      held.map((i) => this.call(i, [this.token, this.opts.ttlMs])),
    );
    let ok = true;
    replies.forEach((r, n) => {
      if (!r.ok) throw r.error;
      if (r.value !== 1) {
        ok = false;
        this.held.delete(held[n] as number);
      }
    });
    return ok;
  }

  /** Deletes every lease that holds the token (compare-and-DEL); resolves with how many did. */
  async release(): Promise<number> {
    this.held.clear();
    return releaseLeases(this.opts.redis, this.keys, this.token);
  }

  private call(i: number, args: readonly ScriptArg[]): Call {
    const k = this.keys[i] as LockKeys;
    return { keys: [k.lock, k.info], args };
  }

  private runAll(script: LuaScript, calls: readonly Call[]): Promise<Settled[]> {
    return runScripts(this.opts.redis, script, calls);
  }

  private wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.timers.clearTimeout(handle);
        reject(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
      };
      const handle = this.timers.setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/** Compare-and-DEL of `token` on each of `keys`, announcing nothing; how many held it. */
export async function releaseLeases(
  redis: RedisClient,
  keys: readonly LockKeys[],
  token: string,
): Promise<number> {
  const replies = await runScripts(
    redis,
    lockScripts.release,
    keys.map((k) => ({ keys: [k.lock, k.info], args: [token, ''] })),
  );
  let released = 0;
  for (const r of replies) {
    if (!r.ok) throw r.error;
    if (r.value === 1) released++;
  }
  return released;
}

interface Call {
  readonly keys: readonly string[];
  readonly args: readonly ScriptArg[];
}

/**
 * Runs `script` once per call, all sent at once, and settles each on its own. A call that finds
 * the script missing (a new or restarted server) is sent again through LuaScript.run, which
 * loads it.
 */
async function runScripts(redis: RedisClient, script: LuaScript, calls: readonly Call[]): Promise<Settled[]> {
  const settle = (p: Promise<unknown>): Promise<Settled> =>
    p.then(
      (value) => ({ ok: true, value }),
      (e: unknown) => ({ ok: false, error: e instanceof Error ? e : new Error(String(e)) }),
    );
  if (calls.length === 0) return [];
  if (redis instanceof Cluster) {
    await mastersConnected(redis);
    return Promise.all(calls.map((c) => settle(script.run(redis, c.keys, c.args))));
  }
  const pipeline = redis.pipeline();
  for (const c of calls) pipeline.call('evalsha', [script.sha, script.numKeys, ...c.keys, ...c.args]);
  const replies = (await pipeline.exec()) ?? [];
  return Promise.all(
    calls.map((c, n): Promise<Settled> => {
      const [error, value] = replies[n] ?? [new Error('no reply in the pipeline'), undefined];
      if (error === null) return Promise.resolve({ ok: true, value });
      if (error.message.startsWith('NOSCRIPT')) return settle(script.run(redis, c.keys, c.args));
      return Promise.resolve({ ok: false, error });
    }),
  );
}
