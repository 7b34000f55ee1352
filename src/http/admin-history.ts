/**
 * What the admin page charts: each queue's last ten minutes, sampled every 5 s into a ring buffer
 * held in this process. A sample holds the messages sent, received and deleted since the one
 * before (differences of the message metrics' counters, which count what the SQS API did: a send
 * or delete through the admin API is not in them) and the depth at that moment (visible, in
 * flight, delayed).
 *
 * Nothing is stored elsewhere: a restart, a failover or a reload from Redis starts the charts
 * anew, and an instance that is not serving takes no samples. A queue gets a history from the
 * first sample that sees it and loses it with the first that does not (deleted, or a new store).
 * At most MAX_CHARTED_QUEUES queues are charted (the first ones seen), so the memory this takes is
 * bounded: 120 slots × 6 counts × 4 bytes ≈ 2.9 KB a queue, under 3 MB in all.
 */
import type { Queue } from '../core/queue.js';
import type { QueueStore } from '../core/store.js';
import type { MessageEvent } from './message-metrics.js';
import { tenantLabel } from './tenancy.js';

export const SAMPLE_MS = 5_000;
/** Ten minutes of 5-second samples. */
export const SLOTS = 120;
export const MAX_CHARTED_QUEUES = 1_000;

/** The counters the data plane keeps per queue (MessageMetrics), by their metric labels. */
export interface MessageTotals {
  total(event: MessageEvent, tenant: string, region: string, queue: string): number;
}

/**
 * One queue's samples, oldest first, one array per series (all of the same length), one every
 * `intervalSeconds` up to the newest at `end`.
 */
export interface QueueHistory {
  readonly intervalSeconds: number;
  /** When the newest sample was taken (ms since the epoch). */
  readonly end: number;
  readonly sent: number[];
  readonly received: number[];
  readonly deleted: number[];
  readonly visible: number[];
  readonly inflight: number[];
  readonly delayed: number[];
}

const SERIES = ['sent', 'received', 'deleted', 'visible', 'inflight', 'delayed'] as const;
const WIDTH = SERIES.length;

class Track {
  /** Series after series, each a ring of SLOTS. */
  readonly values = new Uint32Array(SLOTS * WIDTH);
  /** The counters' totals at the last sample, which the next one subtracts. */
  readonly totals: [number, number, number];
  seenAt: number;

  constructor(
    /** The index of the first sample this queue is in. */
    readonly first: number,
    totals: [number, number, number],
  ) {
    this.totals = totals;
    this.seenAt = first;
  }
}

export class History {
  private readonly tracks = new Map<string, Track>();
  /** Samples taken so far; the next goes to slot `taken % SLOTS`. */
  private taken = 0;
  private lastAt = 0;

  constructor(private readonly counters: MessageTotals) {}

  sample(store: QueueStore, now: number): void {
    const n = this.taken;
    const slot = n % SLOTS;
    for (const q of store.all()) {
      let t = this.tracks.get(q.uid);
      if (t === undefined && this.tracks.size >= MAX_CHARTED_QUEUES) continue;
      const totals = this.totalsOf(store, q);
      if (t === undefined) {
        // Its first sample counts nothing: what came before it has no interval to go in.
        t = new Track(n, totals);
        this.tracks.set(q.uid, t);
      }
      const counts = q.counts(now);
      const v = t.values;
      for (let i = 0; i < 3; i++) v[i * SLOTS + slot] = Math.max(0, totals[i]! - t.totals[i]!);
      v[3 * SLOTS + slot] = counts.visible;
      v[4 * SLOTS + slot] = counts.inflight;
      v[5 * SLOTS + slot] = counts.delayed;
      t.totals[0] = totals[0];
      t.totals[1] = totals[1];
      t.totals[2] = totals[2];
      t.seenAt = n;
    }
    for (const [uid, t] of this.tracks) if (t.seenAt !== n) this.tracks.delete(uid);
    this.taken = n + 1;
    this.lastAt = now;
  }

  /**
   * The queue's samples, oldest first; undefined when it is not charted (yet, or beyond the cap).
   * `every` > 1 merges that many samples into one (counts added, depths their largest), ending
   * with the newest: the page's small charts need a quarter of the points.
   */
  of(q: Queue, every = 1): QueueHistory | undefined {
    const t = this.tracks.get(q.uid);
    if (t === undefined) return undefined;
    const start = Math.max(t.first, this.taken - SLOTS);
    // The oldest point may merge fewer samples, so that the newest holds `every` of them.
    const skipped = Math.ceil((this.taken - start) / every) * every - (this.taken - start);
    const out: Partial<Record<(typeof SERIES)[number], number[]>> = {};
    for (let i = 0; i < WIDTH; i++) {
      const points: number[] = [];
      const ring = t.values.subarray(i * SLOTS, (i + 1) * SLOTS);
      let acc = 0;
      let merged = skipped;
      for (let n = start; n < this.taken; n++) {
        const v = ring[n % SLOTS]!;
        acc = i < 3 ? acc + v : Math.max(acc, v);
        if (++merged === every) {
          points.push(acc);
          acc = 0;
          merged = 0;
        }
      }
      out[SERIES[i]!] = points;
    }
    return {
      intervalSeconds: (SAMPLE_MS / 1000) * every,
      end: this.lastAt,
      ...(out as Record<(typeof SERIES)[number], number[]>),
    };
  }

  private totalsOf(store: QueueStore, q: Queue): [number, number, number] {
    const tenant = tenantLabel(store, q.accountId);
    return [
      this.counters.total('sent', tenant, q.region, q.name),
      this.counters.total('received', tenant, q.region, q.name),
      this.counters.total('deleted', tenant, q.region, q.name),
    ];
  }
}
