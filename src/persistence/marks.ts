/**
 * The lifetime of transfer marks (`in:<uid>`, field `<message id>`: writer.ts, Transfer and
 * `marks`). A mark answers a second sending of a message that arrived already: a transfer between
 * shards replayed from an outbox, or, with many owners, a relay whose answer was lost and which
 * the sender sends again. The marks of transfers within one process are deleted once their
 * outbox entry is (Writer.settleTransfer); those of messages another owner sent have no outbox
 * here to settle them by, so without a bound their hash would grow by one field per message for
 * as long as the queue lives.
 *
 * The bound: a sender sends a message again only while it holds it (marked `relayed`, until the
 * answer comes), and no message outlives its queue's retention, 14 days at most
 * (MAX_RETENTION_SECONDS); an outbox entry older than that holds an expired message too. So a
 * mark older than 14 days and a day's margin (for the clocks of two hosts) answers nothing.
 *
 * Why the time is in the mark's value (`<scope id>:<ms>`) and not in a sorted set beside it:
 * per message that costs a few bytes more of the one HSET the writer sends anyway, where a
 * sorted set would add a ZADD and an entry about as large as the mark itself (a skiplist node
 * and a dict entry), and would have to be kept in step by every deletion of a mark (a settled
 * transfer, a queue deleted). What the sorted set would save is the scan: pruning by value visits
 * every mark once per pass instead of only the old ones. Passes are paced (one HSCAN of about
 * `count` fields per step, MarkPruner) and a mark lives 15 days, so a pass may take hours and each
 * mark is visited a few dozen times in its life: cheaper than a second structure per message.
 *
 * Marks written before the time was recorded hold only the scope id. Their age is unknown: the
 * first pass that sees one stamps it with its own time, so it lives a whole lifetime from then
 * (prune-marks-2.lua).
 */
import { MAX_RETENTION_SECONDS } from '../core/limits.js';
import type { Layout } from './layout.js';
import type { RedisClient } from './redis.js';
import { loadScript, ScriptCode } from './scripts.js';

/** How long a mark is kept: the longest retention and a day. */
export const MARK_LIFETIME_MS = (MAX_RETENTION_SECONDS + 86_400) * 1000;

/** Fields one pruning step asks HSCAN for. */
export const PRUNE_COUNT = 256;

/**
 * How often a process that owns shards among many takes a step: about half a millisecond of Redis
 * a second (0.56 ms a step over 100,000 marks, half of them deleted, on a busy 2-core VM), and a
 * pass over a million marks in about an hour, well within a lifetime.
 */
export const PRUNE_EVERY_MS = 1000;

const pruneScript = loadScript('persistence/scripts', 'prune-marks-2');

/** A mark's value: the scope that wrote it and when (ms since the epoch). */
export function markValue(scope: number, at: number): string {
  return `${String(scope)}:${String(at)}`;
}

/** The key of a queue's marks under its shard's prefix (the writer's `in:<uid>`, prefixed). */
export function marksKey(layout: Layout, shard: number, uid: string): string {
  const keys = layout.shards[shard];
  if (keys === undefined) throw new RangeError(`no shard ${shard}`);
  return `${keys.prefix}in:${uid}`;
}

/** A queue whose marks a pass looks at. */
export interface MarkedQueue {
  readonly shard: number;
  readonly uid: string;
}

/** What one step did. */
export interface PruneStep {
  readonly shard: number;
  readonly uid: string;
  /** The lease holds another token: nothing was read or written, the queue was passed over. */
  readonly fenced: boolean;
  /** Marks looked at, deleted (older than the lifetime), stamped with the time (legacy ones). */
  readonly visited: number;
  readonly deleted: number;
  readonly stamped: number;
  /** This step ended the pass: the next one starts over with the queues as they are then. */
  readonly passEnded: boolean;
}

export interface MarkPrunerOptions {
  readonly redis: RedisClient;
  readonly layout: Layout;
  /** The fencing token of the shard, as its writes carry it ('' checks nothing). */
  readonly token: (shard: number) => string;
  /** HSCAN's COUNT per step; default {@link PRUNE_COUNT}. */
  readonly count?: number | undefined;
  /** Default {@link MARK_LIFETIME_MS}. */
  readonly lifetimeMs?: number | undefined;
}

/**
 * Goes over the marks of the queues it is given, one bounded script call per step, one queue
 * after the other; the caller paces the steps and gives the time (its clock).
 */
export class MarkPruner {
  private pass: MarkedQueue[] = [];
  private at = 0;
  private cursor = '0';

  constructor(private readonly opts: MarkPrunerOptions) {}

  /**
   * One call on the current queue's marks: `queues` is asked for a new pass when the last one
   * ended. Undefined when there is no queue to look at. Rejects when Redis does (the step is
   * tried again from the same place).
   */
  async step(now: number, queues: () => Iterable<MarkedQueue>): Promise<PruneStep | undefined> {
    if (this.at >= this.pass.length) {
      this.pass = [...queues()];
      this.at = 0;
      this.cursor = '0';
      if (this.pass.length === 0) return undefined;
    }
    const q = this.pass[this.at] as MarkedQueue;
    const { layout, token } = this.opts;
    const lease = layout.shards[q.shard]?.lock;
    if (lease === undefined) throw new RangeError(`no shard ${q.shard}`);
    const reply = await pruneScript.run(
      this.opts.redis,
      [lease, marksKey(layout, q.shard, q.uid)],
      [
        token(q.shard),
        this.cursor,
        this.opts.count ?? PRUNE_COUNT,
        now,
        now - (this.opts.lifetimeMs ?? MARK_LIFETIME_MS),
      ],
    );
    // The queues of the pass may have changed meanwhile: only this queue's place moves on.
    const fenced = reply === ScriptCode.FENCED;
    const [cursor, visited, deleted, stamped] = fenced
      ? ['0', 0, 0, 0]
      : (reply as [string, number, number, number]);
    if (this.pass[this.at] === q) {
      if (cursor === '0') {
        this.at++;
        this.cursor = '0';
      } else {
        this.cursor = cursor;
      }
    }
    return {
      shard: q.shard,
      uid: q.uid,
      fenced,
      visited,
      deleted,
      stamped,
      passEnded: this.at >= this.pass.length,
    };
  }

  /** Starts the next pass afresh (a store replaced: its queues are other objects, maybe others). */
  reset(): void {
    this.pass = [];
    this.at = 0;
    this.cursor = '0';
  }
}
