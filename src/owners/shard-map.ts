/**
 * The shard map: which instance owns each shard, under the meta tag (src/persistence/layout.ts:
 * `owners`, a hash of `version` and `<shard>` → owner id). Only the coordinator writes it
 * (coordinator.ts, through `assign-2.lua`: fenced on its lock, onto the version it read, bumping
 * the version and publishing it on `owners:changed`). Every instance reads it: `ShardMap` caches
 * it, fetches it again when a new version is published, and also every interval, since pub/sub
 * loses what is published while a connection is down.
 *
 * Admin pins (`pins`: shard → owner id) are an input of the coordinator, not part of the map: a
 * pin is honoured while its owner is live (src/shard/placement.ts).
 */
import { quietLog, type LogSink } from '../log.js';
import { systemTimers, type ElectorTimers } from '../ha/elector.js';
import type { Layout } from '../persistence/layout.js';
import type { RedisClient } from '../persistence/redis.js';
import { loadScript } from '../persistence/scripts.js';
import { SHARD_COUNT } from '../shard/hash.js';
import type { Channels } from './channels.js';

export const mapScripts = {
  assign: loadScript('owners/scripts', 'assign-2'),
};

export interface MapState {
  /** 0 for a map never written; bumped by every write. */
  readonly version: number;
  /** Indexed by shard; undefined for a shard never assigned. */
  readonly owners: readonly (string | undefined)[];
}

export type AssignResult =
  | { readonly ok: true; readonly version: number }
  | { readonly ok: false; readonly reason: 'fenced' | 'version'; readonly version: number };

/** What the coordinator reads and writes; RedisOwnersStore in the server, a fake in the unit tests. */
export interface OwnersStore {
  read(): Promise<MapState>;
  pins(): Promise<ReadonlyMap<number, string>>;
  /** Writes `changes` onto `expectedVersion` while the coordinator's lock holds `token`. */
  assign(token: string, expectedVersion: number, changes: ReadonlyMap<number, string>): Promise<AssignResult>;
}

/** The map from HGETALL of the `owners` hash; fields that are not shards are ignored. */
export function parseMap(hash: Readonly<Record<string, string>>, shards = SHARD_COUNT): MapState {
  const owners: (string | undefined)[] = new Array<string | undefined>(shards).fill(undefined);
  for (const [field, owner] of Object.entries(hash)) {
    if (!/^\d+$/.test(field)) continue;
    const s = Number(field);
    if (s < shards && owner !== '') owners[s] = owner;
  }
  return { version: Number(hash['version'] ?? 0), owners };
}

export class RedisOwnersStore implements OwnersStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly layout: Layout,
  ) {}

  async read(): Promise<MapState> {
    return parseMap(await this.redis.hgetall(this.layout.meta.owners));
  }

  async pins(): Promise<ReadonlyMap<number, string>> {
    const hash = await this.redis.hgetall(this.layout.meta.pins);
    const out = new Map<number, string>();
    for (const [field, owner] of Object.entries(hash)) {
      if (/^\d+$/.test(field) && Number(field) < SHARD_COUNT) out.set(Number(field), owner);
    }
    return out;
  }

  async assign(
    token: string,
    expectedVersion: number,
    changes: ReadonlyMap<number, string>,
  ): Promise<AssignResult> {
    const { meta } = this.layout;
    const args: (string | number)[] = [token, expectedVersion, meta.ownersChannel];
    for (const [shard, owner] of changes) args.push(shard, owner);
    const reply = await mapScripts.assign.run(this.redis, [meta.coordinator, meta.owners], args);
    if (!Array.isArray(reply)) throw new Error(`assign script returned ${String(reply)}`);
    const [code, version] = reply as [number, number];
    if (code === 0) return { ok: true, version };
    return { ok: false, reason: code === -1 ? 'fenced' : 'version', version };
  }

  /**
   * Pins `shard` to `owner` (an admin move), and nudges the coordinator. Not fenced: a pin is a
   * wish the coordinator applies while `owner` is live, and the last one written wins.
   */
  async pin(shard: number, owner: string): Promise<void> {
    checkShard(shard);
    if (owner === '') throw new Error('a pin needs an owner id');
    await this.redis.hset(this.layout.meta.pins, String(shard), owner);
    await this.redis.publish(this.layout.meta.membersChannel, `pin ${shard}`);
  }

  /** Removes the pin of `shard`: it goes back to its rendezvous owner. */
  async unpin(shard: number): Promise<void> {
    checkShard(shard);
    await this.redis.hdel(this.layout.meta.pins, String(shard));
    await this.redis.publish(this.layout.meta.membersChannel, `pin ${shard}`);
  }
}

function checkShard(shard: number): void {
  if (!Number.isInteger(shard) || shard < 0 || shard >= SHARD_COUNT) {
    throw new RangeError(`no shard ${shard}: shards are 0..${SHARD_COUNT - 1}`);
  }
}

export interface ShardMapChange {
  readonly version: number;
  /** The shards whose owner differs from the map read before. */
  readonly moved: readonly number[];
}

export interface ShardMapOptions {
  readonly redis: RedisClient;
  readonly layout: Layout;
  /** How often the map is read even without a nudge. */
  readonly intervalMs: number;
  /** Subscribed connection for the nudges; without it, changes are learnt at the next interval. */
  readonly channels?: Channels | undefined;
  readonly timers?: ElectorTimers | undefined;
  readonly log?: LogSink | undefined;
}

/** An instance's cached copy of the shard map. */
export class ShardMap {
  private state: MapState = {
    version: 0,
    owners: new Array<string | undefined>(SHARD_COUNT).fill(undefined),
  };
  private readonly store: RedisOwnersStore;
  private readonly timers: ElectorTimers;
  private readonly log: LogSink;
  private readonly listeners = new Set<(change: ShardMapChange) => void>();
  private readsSent = 0;
  private readApplied = 0;
  private timer: unknown;
  private running = false;
  private unlisten: (() => void)[] = [];

  constructor(private readonly opts: ShardMapOptions) {
    if (!(opts.intervalMs > 0)) throw new Error('the interval must be positive');
    this.store = new RedisOwnersStore(opts.redis, opts.layout);
    this.timers = opts.timers ?? systemTimers;
    this.log = opts.log ?? quietLog;
  }

  /** The version of the map cached; 0 before the first read or for a map never written. */
  get version(): number {
    return this.state.version;
  }

  /** The owner id of `shard` as cached; undefined when the map has none (yet). */
  ownerOf(shard: number): string | undefined {
    return this.state.owners[shard];
  }

  /** Every shard's owner as cached. */
  get owners(): readonly (string | undefined)[] {
    return this.state.owners;
  }

  /** Calls `fn` with every new version read from now on; the returned function stops it. */
  onChange(fn: (change: ShardMapChange) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Reads the map, then again on every nudge and every interval. Resolves after the first read. */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    const { channels, layout } = this.opts;
    if (channels !== undefined) {
      this.unlisten.push(
        channels.listen(layout.meta.ownersChannel, (message) => {
          if (Number(message) !== this.state.version) this.refreshSoon();
        }),
        channels.onReady(() => this.refreshSoon()),
      );
    }
    try {
      await this.refresh();
    } finally {
      this.schedule();
    }
  }

  stop(): void {
    this.running = false;
    this.timers.clearTimeout(this.timer);
    for (const u of this.unlisten) u();
    this.unlisten = [];
  }

  /**
   * A read of the map, shared with the one in flight if there is one: what the routers ask for
   * between the tries of each request they hold, so that a thousand requests held through a
   * failover make a few reads of the map, not one each.
   */
  refreshShared(): Promise<void> {
    this.shared ??= this.refresh().finally(() => {
      this.shared = undefined;
    });
    return this.shared;
  }

  private shared: Promise<void> | undefined;

  /**
   * Reads the map now; `onChange` is told when its version differs from the cached one. Any
   * different version is taken, a lower one too: a Redis restored from a backup starts again.
   */
  async refresh(): Promise<void> {
    const seq = ++this.readsSent;
    const next = await this.store.read();
    if (seq <= this.readApplied) return;
    this.readApplied = seq;
    const before = this.state;
    if (next.version === before.version) return;
    this.state = next;
    const moved: number[] = [];
    next.owners.forEach((o, s) => {
      if (o !== before.owners[s]) moved.push(s);
    });
    this.log.info({ version: next.version, moved: moved.length }, 'shard map changed');
    for (const l of this.listeners) {
      try {
        l({ version: next.version, moved });
      } catch (e) {
        this.log.error({ error: e instanceof Error ? e.message : String(e) }, 'a shard map listener failed');
      }
    }
  }

  private refreshSoon(): void {
    if (!this.running) return;
    this.refresh().catch((e: unknown) =>
      this.log.warn({ error: e instanceof Error ? e.message : String(e) }, 'reading the shard map failed'),
    );
  }

  private schedule(): void {
    this.timers.clearTimeout(this.timer);
    if (!this.running) return;
    this.timer = this.timers.setTimeout(() => {
      this.refresh()
        .catch((e: unknown) =>
          this.log.warn(
            { error: e instanceof Error ? e.message : String(e) },
            'reading the shard map failed',
          ),
        )
        .finally(() => this.schedule());
    }, this.opts.intervalMs);
  }
}
