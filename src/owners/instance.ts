/**
 * One instance's part in "many owners", assembled: its membership, its copy of the shard map and
 * its coordinator candidate, sharing one subscribed connection for the nudges (channels.ts).
 * Membership changes and pins nudge the coordinator; a released coordinator lock nudges the
 * candidates, so a graceful stop hands the coordinator over at once.
 */
import { quietLog, type LogSink } from '../log.js';
import type { ElectorTimers } from '../ha/elector.js';
import { RedisLock } from '../ha/lock.js';
import type { Layout } from '../persistence/layout.js';
import { readyWithin, type RedisClient } from '../persistence/redis.js';
import { Channels } from './channels.js';
import { Coordinator, coordinatorLockKeys } from './coordinator.js';
import { Membership } from './members.js';
import { RedisOwnersStore, ShardMap } from './shard-map.js';

export interface OwnersInstanceOptions {
  /** For commands. */
  readonly redis: RedisClient;
  /** A connection of its own, for SUBSCRIBE. */
  readonly sub: RedisClient;
  readonly layout: Layout;
  readonly id: string;
  readonly address: string;
  /** How long a member stays live after its last heartbeat. */
  readonly memberTtlMs: number;
  /** Heartbeats, map reads, coordinator lock attempts and reconciliations; under a third of the TTLs. */
  readonly intervalMs: number;
  /** The coordinator lock's TTL; default the member TTL. */
  readonly coordinatorTtlMs?: number | undefined;
  readonly timers?: ElectorTimers | undefined;
  readonly log?: LogSink | undefined;
}

export class OwnersInstance {
  readonly channels: Channels;
  readonly membership: Membership;
  readonly map: ShardMap;
  readonly coordinator: Coordinator;
  readonly store: RedisOwnersStore;

  constructor(private readonly opts: OwnersInstanceOptions) {
    const log = opts.log ?? quietLog;
    const { redis, layout, intervalMs, timers } = opts;
    this.channels = new Channels(opts.sub);
    this.store = new RedisOwnersStore(redis, layout);
    this.membership = new Membership({
      redis,
      layout,
      id: opts.id,
      address: opts.address,
      ttlMs: opts.memberTtlMs,
      intervalMs,
      channels: this.channels,
      timers,
      log,
    });
    this.map = new ShardMap({ redis, layout, intervalMs, channels: this.channels, timers, log });
    this.coordinator = new Coordinator({
      id: opts.id,
      lock: new RedisLock(redis, coordinatorLockKeys(layout)),
      store: this.store,
      live: async () => (await this.membership.live()).map((m) => m.id),
      ttlMs: opts.coordinatorTtlMs ?? opts.memberTtlMs,
      intervalMs,
      timers,
      log,
    });
    this.membership.onChange(() => this.coordinator.nudge());
    this.channels.listen(layout.meta.membersChannel, (message) => {
      if (message.startsWith('pin ')) this.coordinator.nudge();
    });
    this.channels.listen(coordinatorLockKeys(layout).channel, (token) => this.coordinator.released(token));
  }

  /**
   * Joins, reads the map and stands for coordinator; resolves once joined and the map read, and
   * rejects when either failed (the heartbeats and reads go on, every interval).
   */
  async start(): Promise<void> {
    this.channels.start();
    // The first heartbeat would otherwise go out before the connection is up and fail, logged as
    // a failure at every start. A Redis still not there after one TTL is worth the warning.
    await readyWithin(this.opts.redis, this.opts.memberTtlMs);
    // Each part goes on trying by itself when Redis is not there yet: start them all, then tell.
    let failure: Error | undefined;
    const keep = (e: unknown): void => {
      failure ??= e instanceof Error ? e : new Error(String(e));
    };
    await this.membership.start().catch(keep);
    await this.map.start().catch(keep);
    this.coordinator.start();
    if (failure !== undefined) throw failure;
  }

  /** A graceful stop: hands the coordinator over and leaves the membership at once, both announced. */
  async stop(): Promise<void> {
    await this.coordinator.stop();
    try {
      await this.membership.leave();
    } finally {
      this.map.stop();
      this.channels.close();
    }
  }
}
