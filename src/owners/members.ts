/**
 * Who the live instances are. Each instance registers under the meta tag
 * (src/persistence/layout.ts: `members`, `member:<id>`) with its id, the address the others
 * forward to and its start time, and renews a TTL'd key every interval (`beat-2.lua`). An instance
 * whose key expired (crashed, paused, cut off from Redis) is no longer live; the next reader prunes
 * it from the hash (`live-1.lua`). A graceful stop leaves at once (`leave-2.lua`).
 *
 * Every join, leave and expiry is published on `members:changed`, and every instance also reads the
 * live members every interval (pub/sub drops messages while a connection is down), and again
 * when a member's key is due to expire before that: `onChange` reports the difference between
 * two reads, however it was learnt, once.
 *
 * Time and timers are injected (`ElectorTimers`, src/ha/elector.ts) as in the elector.
 */
import { quietLog, type LogSink } from '../log.js';
import { systemTimers, type ElectorTimers } from '../ha/elector.js';
import type { Layout } from '../persistence/layout.js';
import type { RedisClient } from '../persistence/redis.js';
import { loadScript } from '../persistence/scripts.js';
import type { Channels } from './channels.js';

export const memberScripts = {
  beat: loadScript('owners/scripts', 'beat-2'),
  leave: loadScript('owners/scripts', 'leave-2'),
  live: loadScript('owners/scripts', 'live-1'),
};

export interface MemberRecord {
  /** Unique among the instances, `<hostname>-<pid>` style. */
  readonly id: string;
  /** Where the others forward to: `host:port` or a Unix socket path, opaque here. */
  readonly address: string;
  /** Wall-clock ms when the instance started. */
  readonly startedAt: number;
}

export interface MembershipChange {
  readonly joined: readonly MemberRecord[];
  readonly left: readonly string[];
  /** The live members after the change, sorted by id. */
  readonly members: readonly MemberRecord[];
}

export interface MembershipOptions {
  readonly redis: RedisClient;
  readonly layout: Layout;
  readonly id: string;
  readonly address: string;
  /** How long a member stays live after its last heartbeat. */
  readonly ttlMs: number;
  /** How often it beats and reads the others; well under the TTL (a third of it is usual). */
  readonly intervalMs: number;
  /** Subscribed connection for the nudges; without it, changes are learnt at the next interval. */
  readonly channels?: Channels | undefined;
  readonly startedAt?: number | undefined;
  readonly timers?: ElectorTimers | undefined;
  readonly log?: LogSink | undefined;
}

/** A member record from its JSON; undefined when it is not one. */
export function parseMember(json: string): MemberRecord | undefined {
  try {
    const v = JSON.parse(json) as Partial<Record<keyof MemberRecord, unknown>>;
    if (typeof v.id === 'string' && typeof v.address === 'string' && typeof v.startedAt === 'number') {
      return { id: v.id, address: v.address, startedAt: v.startedAt };
    }
  } catch {
    // not JSON: left out below
  }
  return undefined;
}

/** The live members in Redis, pruning the expired ones; any instance (or tool) may call it. */
export async function readLiveMembers(redis: RedisClient, layout: Layout): Promise<MemberRecord[]> {
  return (await readLive(redis, layout)).members;
}

/** The live members, and in how many ms the first of their keys expires (undefined: none live). */
async function readLive(
  redis: RedisClient,
  layout: Layout,
): Promise<{ members: MemberRecord[]; expiresInMs: number | undefined }> {
  const { members, membersChannel } = layout.meta;
  const reply = await memberScripts.live.run(redis, [members], [layout.meta.member(''), membersChannel]);
  const [records, soonest] = Array.isArray(reply) ? (reply as unknown[]) : [];
  if (!Array.isArray(records)) throw new Error(`live script returned ${String(reply)}`);
  return {
    members: records
      .map((r) => parseMember(String(r)))
      .filter((m): m is MemberRecord => m !== undefined)
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
    expiresInMs: typeof soonest === 'number' && soonest >= 0 ? soonest : undefined,
  };
}

export class Membership {
  readonly record: MemberRecord;
  private readonly timers: ElectorTimers;
  private readonly log: LogSink;
  private readonly listeners = new Set<(change: MembershipChange) => void>();
  private known = new Map<string, MemberRecord>();
  /** Reads are numbered so that a slow reply never undoes what a later one showed. */
  private readsSent = 0;
  private readApplied = 0;
  private beatTimer: unknown;
  private nudgeTimer: unknown;
  private expiryTimer: unknown;
  private nudged = false;
  private running = false;
  private unlisten: (() => void)[] = [];
  private beats = 0;
  /** When the last heartbeat that succeeded was sent (timers.now()). */
  private lastBeatSent: number | undefined;

  constructor(private readonly opts: MembershipOptions) {
    if (!(opts.ttlMs > 0 && opts.intervalMs > 0 && opts.intervalMs < opts.ttlMs)) {
      throw new Error('the heartbeat interval must be positive and shorter than the TTL');
    }
    if (opts.id === '') throw new Error('a member id must not be empty');
    this.timers = opts.timers ?? systemTimers;
    this.log = opts.log ?? quietLog;
    this.record = { id: opts.id, address: opts.address, startedAt: opts.startedAt ?? this.timers.wallNow() };
  }

  get id(): string {
    return this.record.id;
  }

  /** The live members as last read, sorted by id. */
  get members(): readonly MemberRecord[] {
    return sortById([...this.known.values()]);
  }

  /** Heartbeats that succeeded so far. */
  get beatCount(): number {
    return this.beats;
  }

  /**
   * The others count this instance as live: it is beating, and its last heartbeat was sent less
   * than a TTL ago (measured from the send, so a late reply cannot stretch it).
   */
  get isLive(): boolean {
    return (
      this.running &&
      this.lastBeatSent !== undefined &&
      this.timers.now() - this.lastBeatSent < this.opts.ttlMs
    );
  }

  /** Calls `fn` with every change seen from now on; the returned function stops it. */
  onChange(fn: (change: MembershipChange) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /**
   * Registers, then beats and reads the others every interval. Resolves after the first round;
   * rejects when it failed (the rounds go on, so a Redis that comes back is joined).
   */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    const { channels, layout } = this.opts;
    if (channels !== undefined) {
      this.unlisten.push(
        channels.listen(layout.meta.membersChannel, (message) => {
          if (/^(join|leave|expired) /.test(message)) this.nudge();
        }),
        channels.onReady(() => this.nudge()),
      );
    }
    await this.round();
  }

  /**
   * The live members now (the expired ones pruned), and `onChange` told of any difference from
   * the last read.
   */
  async live(): Promise<readonly MemberRecord[]> {
    const seq = ++this.readsSent;
    const { members, expiresInMs } = await readLive(this.opts.redis, this.opts.layout);
    if (seq > this.readApplied) {
      this.readApplied = seq;
      this.apply(members);
      this.readAtExpiry(expiresInMs);
    }
    return members;
  }

  /** Stops beating without leaving: what a crash does (the others drop it after the TTL). */
  halt(): void {
    this.running = false;
    this.timers.clearTimeout(this.beatTimer);
    this.timers.clearTimeout(this.nudgeTimer);
    this.timers.clearTimeout(this.expiryTimer);
    this.nudged = false;
    for (const u of this.unlisten) u();
    this.unlisten = [];
  }

  /** Stops beating and leaves at once, announced (SIGTERM). */
  async leave(): Promise<void> {
    this.halt();
    const { redis, layout } = this.opts;
    await memberScripts.leave.run(
      redis,
      [layout.meta.members, layout.meta.member(this.id)],
      [this.id, layout.meta.membersChannel],
    );
    this.log.info({ id: this.id }, 'left the membership');
  }

  // -------------------------------------------------------------------------------------------

  /** A change was announced: read the members now, apart from the heartbeats' rhythm. */
  private nudge(): void {
    if (!this.running || this.nudged) return;
    this.nudged = true;
    this.nudgeTimer = this.timers.setTimeout(() => {
      this.nudged = false;
      if (!this.running) return;
      this.live().catch((e: unknown) =>
        this.log.warn({ id: this.id, error: errorText(e) }, 'membership: reading the members failed'),
      );
    }, 0);
  }

  /**
   * A member's key expires before the next round's read: read again just after it would, so that
   * a crashed member is found gone (and its shards moved) at its TTL rather than up to an interval
   * later. A live member's key is renewed every interval, so in a steady state this never fires
   * before the round's read.
   */
  private readAtExpiry(expiresInMs: number | undefined): void {
    if (!this.running || expiresInMs === undefined || expiresInMs >= this.opts.intervalMs) return;
    this.timers.clearTimeout(this.expiryTimer);
    this.expiryTimer = this.timers.setTimeout(() => {
      this.expiryTimer = undefined;
      this.nudge();
    }, expiresInMs + 1);
  }

  /** One heartbeat and one read, then the next round an interval on. */
  private async round(): Promise<void> {
    if (!this.running) return;
    let failure: Error | undefined;
    try {
      await this.beat();
      await this.live();
    } catch (e) {
      failure = e instanceof Error ? e : new Error(String(e));
      this.log.warn({ id: this.id, error: errorText(e) }, 'membership: heartbeat or read failed');
    }
    if (this.running) {
      this.beatTimer = this.timers.setTimeout(
        () => void this.round().catch(() => undefined),
        this.opts.intervalMs,
      );
    }
    if (failure !== undefined) throw failure;
  }

  private async beat(): Promise<void> {
    const { redis, layout, ttlMs } = this.opts;
    const sent = this.timers.now();
    const joined = await memberScripts.beat.run(
      redis,
      [layout.meta.members, layout.meta.member(this.id)],
      [this.id, JSON.stringify(this.record), ttlMs, layout.meta.membersChannel],
    );
    this.beats++;
    this.lastBeatSent = sent;
    if (joined === 1) this.log.info({ id: this.id, address: this.record.address }, 'joined the membership');
  }

  private apply(members: readonly MemberRecord[]): void {
    const next = new Map(members.map((m) => [m.id, m]));
    const joined = members.filter((m) => !this.known.has(m.id));
    const left = [...this.known.keys()].filter((id) => !next.has(id)).sort();
    this.known = next;
    if (joined.length === 0 && left.length === 0) return;
    const change: MembershipChange = { joined, left, members: sortById([...members]) };
    for (const l of this.listeners) {
      try {
        l(change);
      } catch (e) {
        this.log.error({ error: errorText(e) }, 'a membership listener failed');
      }
    }
  }
}

function sortById(members: MemberRecord[]): MemberRecord[] {
  return members.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
