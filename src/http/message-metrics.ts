/**
 * Message and storage metrics, added to a {@link Metrics} scrape beside the request ones:
 *
 * - sqs_messages_sent_total{tenant,region,queue}        messages accepted by SendMessage(Batch)
 * - sqs_messages_received_total{tenant,region,queue}    messages handed out by ReceiveMessage
 * - sqs_messages_deleted_total{tenant,region,queue}     messages deleted by DeleteMessage(Batch)
 * - sqs_messages_moved_to_dlq_total{tenant,region,queue} messages of `queue` moved to its
 *                                                        dead-letter queue (read at scrape time
 *                                                        from the queues; counted since the queue
 *                                                        was loaded by this process)
 * - sqs_redis_commit_wait_seconds                       histogram: how long a reply waited for its
 *                                                        changes to be in Redis (the group commit's
 *                                                        write as each request sees it)
 * - sqs_redis_commit_failures_total                     replies that could not be stored (error,
 *                                                        timeout, fenced) and were answered 503
 * - sqs_redis_replica_wait_seconds                      histogram: how long each group commit's
 *                                                        WAIT for replicas took (--redis-wait-replicas)
 * - sqs_redis_replica_wait_timeouts_total               WAITs that ended with fewer replicas than
 *                                                        asked for (their replies: 503)
 *
 * `tenant` is the tenant's name, or the account id for an account no tenant holds.
 *
 * Written as text at scrape time from plain numbers, as metrics.ts writes every sqs_* series (why
 * is there): the per-request counters and the commit wait are on the hot path.
 */
import { Histogram, labelText, type Exposition, type Metrics } from './metrics.js';

/** Per-queue totals the store keeps (Queue.deadLettered), read at scrape time. */
export interface DeadLetterStats {
  readonly tenant: string;
  readonly region: string;
  readonly queue: string;
  /** Queue identity, so a queue loaded anew (restart, failover) starts a new baseline. */
  readonly uid: string;
  readonly moved: number;
}

export type MessageEvent = 'sent' | 'received' | 'deleted';

interface Series {
  readonly labels: string;
  count: number;
}

/** Label sets kept per event kind before new queues are counted under queue="_other". */
export const MAX_QUEUE_SERIES = 10_000;

const COMMIT_WAIT_BUCKETS = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
];
const REPLICA_WAIT_BUCKETS = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
];

export class MessageMetrics {
  private readonly series: Record<MessageEvent, Map<string, Series>> = {
    sent: new Map(),
    received: new Map(),
    deleted: new Map(),
  };
  /** Per queue uid: its dead-letter total when last scraped. */
  private readonly deadLetterSeen = new Map<string, number>();
  /** Per label set: what its queues moved, across their loads (a counter never goes down). */
  private readonly deadLettered = new Map<string, Series>();
  private readonly commitWait = new Histogram(COMMIT_WAIT_BUCKETS);
  private commitFailures = 0;
  private readonly replicaWait = new Histogram(REPLICA_WAIT_BUCKETS);
  private replicaTimeouts = 0;

  constructor(private readonly metrics: Metrics) {
    metrics.extend((out) => this.write(out));
  }

  private write(out: Exposition): void {
    for (const event of ['sent', 'received', 'deleted'] as const) {
      const name = `sqs_messages_${event}_total`;
      out.counters(
        name,
        `Messages ${event} through the SQS API, by tenant, region and queue`,
        this.series[event].values(),
      );
    }
    this.collectDeadLetters();
    out.counters(
      'sqs_messages_moved_to_dlq_total',
      'Messages moved from a queue to its dead-letter queue after maxReceiveCount receives',
      this.deadLettered.values(),
    );
    out.singleHistogram(
      'sqs_redis_commit_wait_seconds',
      'How long a reply waited for its changes to be written to Redis (group commit), failed ones included',
      this.commitWait,
    );
    out.single(
      'sqs_redis_commit_failures_total',
      'counter',
      'Replies whose changes could not be written to Redis (error, timeout or fenced), answered 503',
      this.commitFailures,
    );
    out.singleHistogram(
      'sqs_redis_replica_wait_seconds',
      'How long each group commit waited for replicas to acknowledge it (WAIT, --redis-wait-replicas)',
      this.replicaWait,
    );
    out.single(
      'sqs_redis_replica_wait_timeouts_total',
      'counter',
      'Replica waits that ended with fewer replicas than --redis-wait-replicas (their replies: 503)',
      this.replicaTimeouts,
    );
  }

  /** Adds what each queue moved since the last scrape; a queue loaded anew starts from 0. */
  private collectDeadLetters(): void {
    const provider = this.metrics.providers.deadLetters;
    if (provider === undefined) return;
    const seen = new Set<string>();
    for (const s of provider()) {
      seen.add(s.uid);
      const before = this.deadLetterSeen.get(s.uid) ?? 0;
      if (s.moved > before) {
        const key = `${s.tenant}\u0000${s.region}\u0000${s.queue}`;
        let series = this.deadLettered.get(key);
        if (series === undefined) {
          series = { labels: labelText({ tenant: s.tenant, region: s.region, queue: s.queue }), count: 0 };
          this.deadLettered.set(key, series);
        }
        series.count += s.moved - before;
      }
      this.deadLetterSeen.set(s.uid, s.moved);
    }
    for (const uid of this.deadLetterSeen.keys()) if (!seen.has(uid)) this.deadLetterSeen.delete(uid);
  }

  /** Counts `n` messages of one event for a queue; n = 0 is ignored. */
  count(event: MessageEvent, tenant: string, region: string, queue: string, n: number): void {
    if (n <= 0) return;
    const map = this.series[event];
    const key = `${tenant}\u0000${region}\u0000${queue}`;
    let s = map.get(key);
    if (s === undefined) {
      const overflow = map.size >= MAX_QUEUE_SERIES;
      const labels = labelText({ tenant, region, queue: overflow ? '_other' : queue });
      const realKey = overflow ? `${tenant}\u0000${region}\u0000_other` : key;
      s = map.get(realKey) ?? { labels, count: 0 };
      map.set(realKey, s);
    }
    s.count += n;
  }

  /** The count of one event for a queue so far, 0 if none (the admin page charts its rates). */
  total(event: MessageEvent, tenant: string, region: string, queue: string): number {
    return this.series[event].get(`${tenant}\u0000${region}\u0000${queue}`)?.count ?? 0;
  }

  /**
   * Counts what a successful action did to messages, from its output: the data plane's onResult.
   * Only the five message actions count; everything else returns at the first comparison.
   */
  countResult(
    action: string,
    tenant: string,
    region: string,
    queue: string | undefined,
    output: unknown,
  ): void {
    if (queue === undefined) return;
    const o = output as { Messages?: unknown[]; Successful?: unknown[] } | undefined;
    switch (action) {
      case 'SendMessage':
        this.count('sent', tenant, region, queue, 1);
        break;
      case 'SendMessageBatch':
        this.count('sent', tenant, region, queue, o?.Successful?.length ?? 0);
        break;
      case 'ReceiveMessage':
        this.count('received', tenant, region, queue, o?.Messages?.length ?? 0);
        break;
      case 'DeleteMessage':
        this.count('deleted', tenant, region, queue, 1);
        break;
      case 'DeleteMessageBatch':
        this.count('deleted', tenant, region, queue, o?.Successful?.length ?? 0);
        break;
      default:
    }
  }

  /** One reply's wait for Redis ended: stored (ok) or not. */
  observeCommit(seconds: number, ok: boolean): void {
    this.commitWait.observe(seconds);
    if (!ok) this.commitFailures++;
  }

  /** One group commit's wait for replicas ended: enough acknowledged it, or not. */
  observeReplicaWait(seconds: number, acknowledged: boolean): void {
    this.replicaWait.observe(seconds);
    if (!acknowledged) this.replicaTimeouts++;
  }
}
