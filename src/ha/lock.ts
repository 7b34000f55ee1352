/**
 * The leader lock in Redis: the three compare-and-act scripts of `scripts/` (acquire, renew,
 * release), the announcement channel a release is published on, and the subscriber that hears it.
 *
 * | key / channel          | type    | holds                                                        |
 * |------------------------|---------|--------------------------------------------------------------|
 * | `<p>leader`            | string  | the token `<epoch>:<instance id>` of the term, with a TTL    |
 * | `<p>epoch`             | string  | the last epoch handed out (INCR at every acquisition)        |
 * | `<p>leader:info`       | hash    | token, since, renewed, released (Redis TIME, ms): status     |
 * | `<p>leader:released`   | channel | a released token: followers try to take the lock at once     |
 *
 * `<p>` is the meta tag's prefix in layout 2 (`lockKeys(layout.meta)`, src/persistence/layout.ts);
 * in layout 1 it was `{ssq}:`, and the write scripts fenced on this key. In layout 2 a script may
 * touch one tag only, so each shard's writes fence on the shard's lease instead, which the term
 * holds with the same token (leases.ts: `lockKeys(shard)` names a lease's key and info hash).
 */
import { loadScript } from '../persistence/scripts.js';
import type { Keys } from '../persistence/keys.js';
import type { RedisClient } from '../persistence/redis.js';

/** What taking the lock gave: a new term, or who holds it. */
export type AcquireResult =
  | { readonly acquired: true; readonly token: string; readonly epoch: number }
  | { readonly acquired: false; readonly holder: string; readonly pttlMs: number };

/** The lock as the elector sees it; RedisLock in the server, a fake in the unit tests. */
export interface LockBackend {
  /** Takes the lock when nobody holds it: a new epoch, and `SET lock <epoch>:<id> NX PX ttl`. */
  acquire(instanceId: string, ttlMs: number): Promise<AcquireResult>;
  /** Extends the TTL while the lock holds `token`; false: it does not (the term is over). */
  renew(token: string, ttlMs: number): Promise<boolean>;
  /** Deletes the lock while it holds `token`, and announces it; false: it did not hold it. */
  release(token: string): Promise<boolean>;
  /** The token in the lock now; undefined when nobody holds it. */
  holder(): Promise<string | undefined>;
}

/** Status of the lock as Redis has it, for the admin API. */
export interface LockInfo {
  /** The token in the lock now, or undefined when nobody holds it. */
  readonly holder: string | undefined;
  /** ms left on the lock, when held. */
  readonly pttlMs: number | undefined;
  /** The last term's token and its times (ms since the epoch, Redis' clock). */
  readonly lastToken: string | undefined;
  readonly since: number | undefined;
  readonly renewed: number | undefined;
  readonly released: number | undefined;
}

export interface LockKeys {
  readonly lock: string;
  readonly epoch: string;
  readonly info: string;
  readonly channel: string;
}

/** The lock of `keys.lock`, and its epoch, info hash and channel beside it under the same tag. */
export function lockKeys(keys: Keys): LockKeys {
  return {
    lock: keys.lock,
    epoch: `${keys.prefix}epoch`,
    info: `${keys.lock}:info`,
    channel: `${keys.lock}:released`,
  };
}

/** `<epoch>:<instance id>` → its parts; undefined for anything else. */
export function parseToken(token: string): { epoch: number; instanceId: string } | undefined {
  const m = /^(\d+):(.+)$/.exec(token);
  if (m === null) return undefined;
  return { epoch: Number(m[1]), instanceId: m[2] ?? '' };
}

export const lockScripts = {
  acquire: loadScript('ha/scripts', 'acquire-3'),
  renew: loadScript('ha/scripts', 'renew-2'),
  release: loadScript('ha/scripts', 'release-2'),
};

export class RedisLock implements LockBackend {
  constructor(
    private readonly redis: RedisClient,
    readonly keys: LockKeys,
  ) {}

  async acquire(instanceId: string, ttlMs: number): Promise<AcquireResult> {
    const { lock, epoch, info } = this.keys;
    const reply = await lockScripts.acquire.run(this.redis, [lock, epoch, info], [instanceId, ttlMs]);
    if (!Array.isArray(reply)) throw new Error(`acquire script returned ${String(reply)}`);
    const [taken, a, b] = reply as [unknown, unknown, unknown];
    if (taken === 1) return { acquired: true, token: String(a), epoch: Number(b) };
    return { acquired: false, holder: String(a), pttlMs: Number(b) };
  }

  async renew(token: string, ttlMs: number): Promise<boolean> {
    const { lock, info } = this.keys;
    return (await lockScripts.renew.run(this.redis, [lock, info], [token, ttlMs])) === 1;
  }

  async release(token: string): Promise<boolean> {
    const { lock, info, channel } = this.keys;
    return (await lockScripts.release.run(this.redis, [lock, info], [token, channel])) === 1;
  }

  async holder(): Promise<string | undefined> {
    return (await this.redis.get(this.keys.lock)) ?? undefined;
  }

  async info(): Promise<LockInfo> {
    const [[, holder], [, pttl], [, hash]] = (await this.redis
      .multi()
      .get(this.keys.lock)
      .pttl(this.keys.lock)
      .hgetall(this.keys.info)
      .exec()) as [[unknown, string | null], [unknown, number], [unknown, Record<string, string>]];
    const ms = (v: string | undefined): number | undefined =>
      v === undefined || v === '' ? undefined : Number(v);
    return {
      holder: holder ?? undefined,
      pttlMs: holder === null || pttl < 0 ? undefined : pttl,
      lastToken: hash.token,
      since: ms(hash.since),
      renewed: ms(hash.renewed),
      released: ms(hash.released),
    };
  }
}

/**
 * Listens on the release channel with a connection of its own (a subscribed connection can do
 * nothing else). ioredis subscribes again after every reconnect; a release missed while
 * disconnected only costs the follower one interval.
 */
export class ReleaseListener {
  private closed = false;

  constructor(
    private readonly sub: RedisClient,
    private readonly channel: string,
    onRelease: (token: string) => void,
  ) {
    sub.on('error', () => undefined);
    sub.on('message', (ch: string, token: string) => {
      if (ch === channel && !this.closed) onRelease(token);
    });
    sub.on('ready', () => void this.subscribe());
  }

  start(): void {
    if (this.sub.status === 'wait' || this.sub.status === 'end') this.sub.connect().catch(() => undefined);
  }

  private async subscribe(): Promise<void> {
    try {
      await this.sub.subscribe(this.channel);
    } catch {
      // Reconnecting: 'ready' comes again and we subscribe then.
    }
  }

  close(): void {
    this.closed = true;
    this.sub.disconnect();
  }
}
