/**
 * Message and storage metrics, registered on a {@link Metrics} registry beside the request ones:
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
 * The three per-request counters are on the hot path: like observeRequest, a request bumps a plain
 * number found by one Map lookup, and the registry reads the totals at scrape time.
 */
import type { Counter, Histogram, Registry } from 'prom-client';
import type { Metrics, Prom } from './metrics.js';

export type MessageEvent = 'sent' | 'received' | 'deleted';

interface Series {
  readonly labels: { readonly tenant: string; readonly region: string; readonly queue: string };
  count: number;
  exported: number;
}

/** Per-queue totals the store keeps (Queue.deadLettered), read at scrape time. */
export interface DeadLetterStats {
  readonly tenant: string;
  readonly region: string;
  readonly queue: string;
  /** Queue identity, so a queue loaded anew (restart, failover) starts a new baseline. */
  readonly uid: string;
  readonly moved: number;
}

/** Label sets kept per event kind before new queues are counted under queue="_other". */
export const MAX_QUEUE_SERIES = 10_000;

export class MessageMetrics {
  private readonly series: Record<MessageEvent, Map<string, Series>> = {
    sent: new Map(),
    received: new Map(),
    deleted: new Map(),
  };
  private deadLetterProvider: (() => Iterable<DeadLetterStats>) | undefined;
  /** Per queue uid: how much of its dead-letter total was already added to the counter. */
  private readonly deadLetterExported = new Map<string, number>();
  /** Registered with the rest when the registry is built (see {@link Metrics.registry}). */
  private commit: { readonly writeDuration: Histogram; readonly writeFailures: Counter } | undefined;
  private replicaWait: { readonly duration: Histogram; readonly timeouts: Counter } | undefined;

  constructor(private readonly metrics: Metrics) {
    metrics.extend((registry, prom) => this.register(registry, prom));
  }

  private register(registry: Registry, prom: Prom): void {
    const registers = [registry];
    const labelNames = ['tenant', 'region', 'queue'] as const;
    for (const event of ['sent', 'received', 'deleted'] as const) {
      const counter: Counter<'tenant' | 'region' | 'queue'> = new prom.Counter({
        name: `sqs_messages_${event}_total`,
        help: `Messages ${event} through the SQS API, by tenant, region and queue`,
        labelNames,
        registers,
        collect: () => {
          for (const s of this.series[event].values()) {
            if (s.count > s.exported) {
              counter.inc(s.labels, s.count - s.exported);
              s.exported = s.count;
            }
          }
        },
      });
    }
    const dlq: Counter<'tenant' | 'region' | 'queue'> = new prom.Counter({
      name: 'sqs_messages_moved_to_dlq_total',
      help: 'Messages moved from a queue to its dead-letter queue after maxReceiveCount receives',
      labelNames,
      registers,
      collect: () => {
        const provider = this.deadLetterProvider;
        if (provider === undefined) return;
        const seen = new Set<string>();
        for (const s of provider()) {
          seen.add(s.uid);
          const before = this.deadLetterExported.get(s.uid) ?? 0;
          if (s.moved > before)
            dlq.inc({ tenant: s.tenant, region: s.region, queue: s.queue }, s.moved - before);
          this.deadLetterExported.set(s.uid, s.moved);
        }
        for (const uid of this.deadLetterExported.keys())
          if (!seen.has(uid)) this.deadLetterExported.delete(uid);
      },
    });
    this.commit = {
      writeDuration: new prom.Histogram({
        name: 'sqs_redis_commit_wait_seconds',
        help: 'How long a reply waited for its changes to be written to Redis (group commit), failed ones included',
        buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
        registers,
      }),
      writeFailures: new prom.Counter({
        name: 'sqs_redis_commit_failures_total',
        help: 'Replies whose changes could not be written to Redis (error, timeout or fenced), answered 503',
        registers,
      }),
    };
    this.replicaWait = {
      duration: new prom.Histogram({
        name: 'sqs_redis_replica_wait_seconds',
        help: 'How long each group commit waited for replicas to acknowledge it (WAIT, --redis-wait-replicas)',
        buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5],
        registers,
      }),
      timeouts: new prom.Counter({
        name: 'sqs_redis_replica_wait_timeouts_total',
        help: 'Replica waits that ended with fewer replicas than --redis-wait-replicas (their replies: 503)',
        registers,
      }),
    };
  }

  /** Counts `n` messages of one event for a queue; n = 0 is ignored. */
  count(event: MessageEvent, tenant: string, region: string, queue: string, n: number): void {
    if (n <= 0) return;
    const map = this.series[event];
    const key = `${tenant}\u0000${region}\u0000${queue}`;
    let s = map.get(key);
    if (s === undefined) {
      const overflow = map.size >= MAX_QUEUE_SERIES;
      const labels = { tenant, region, queue: overflow ? '_other' : queue };
      const realKey = overflow ? `${tenant}\u0000${region}\u0000_other` : key;
      s = map.get(realKey) ?? { labels, count: 0, exported: 0 };
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

  setDeadLetterProvider(provider: (() => Iterable<DeadLetterStats>) | undefined): void {
    this.deadLetterProvider = provider;
  }

  /** One reply's wait for Redis ended: stored (ok) or not. */
  observeCommit(seconds: number, ok: boolean): void {
    // Building the registry, if nothing has yet, registers these.
    this.metrics.build();
    this.commit?.writeDuration.observe(seconds);
    if (!ok) this.commit?.writeFailures.inc();
  }

  /** One group commit's wait for replicas ended: enough acknowledged it, or not. */
  observeReplicaWait(seconds: number, acknowledged: boolean): void {
    this.metrics.build();
    this.replicaWait?.duration.observe(seconds);
    if (!acknowledged) this.replicaWait?.timeouts.inc();
  }
}
