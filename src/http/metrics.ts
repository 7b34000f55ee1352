/**
 * Prometheus metrics of one server instance, each instance its own (no global registry), so tests
 * and a process running two servers can each have theirs.
 *
 * - sqs_requests_total{action,protocol,status}          counter; status is the HTTP status code
 * - sqs_request_duration_seconds{action,protocol}        histogram, 50 µs .. 25 s (long polls last 20 s)
 * - sqs_queue_messages{queue,tenant,region,state}         gauge, read from a provider at scrape time;
 *                                                         state is visible | inflight | delayed
 * - sqs_queue_memory_bytes{queue,tenant,region}           gauge, per queue, read like sqs_queue_messages
 * - sqs_long_poll_waiters                                 gauge, read from a provider at scrape time
 * - sqs_leader_state{state}                               gauge, 1 for this instance's elector state
 *                                                         (follower | loading | leader), else 0
 * - sqs_leader_epoch                                      gauge, the epoch of the term held (0: none)
 * - sqs_leader_takeovers_total                            counter, terms this instance won and served
 * - sqs_leader_fenced_writes_total                        counter, terms ended by a fenced write
 * - sqs_leader_renew_failures_total                       counter, renewals that failed (error/timeout)
 *                                                         (read at scrape time; without leader
 *                                                         election the state has no series and the
 *                                                         others stay 0)
 * - sqs_loading                                           gauge, 1 while the state is being loaded
 *                                                         from Redis (/ready answers 503), else 0
 * - sqs_loading_seconds                                   gauge, how long the load in progress ran
 * - sqs_loading_queues{part}, sqs_loading_messages{part}, gauges of the load in progress: part is
 *   sqs_loading_bytes{part}                               done (read so far) | all (in Redis; bytes
 *                                                         estimated from sampled records); no
 *                                                         series while not loading
 * - sqs_migration                                         gauge, 1 while layout 1 in Redis is being
 *                                                         migrated to layout 2 (before loading)
 * - sqs_migration_queues{part}, sqs_migration_messages    gauges of the migration: queues copied
 *                                                         (done) of all; messages copied
 * - sqs_shards_down{reason}                               gauge, shards not served now: reloading
 *                                                         (a write of theirs failed) | refused (too
 *                                                         big for the memory budget)
 * - sqs_shard_down{shard,reason}                          gauge, 1 per shard not served now
 * - sqs_owner_shards{state}                               gauge, --active-active: shards this instance
 *                                                         holds: taking | serving | giving
 * - sqs_owner_members, sqs_owner_coordinator,             gauges: live members it knows of; 1 while it
 *   sqs_owner_map_version                                 coordinates; the shard map's version
 * - sqs_forwarded_requests_total{outcome}                 counter, requests sent to another owner:
 *                                                         answered | not_owner | refused | unsent |
 *                                                         lost
 * - sqs_memory_budget_bytes                               gauge, the memory budget (--max-memory)
 * - sqs_memory_used_bytes                                 gauge, what the store holds against it
 * - sqs_memory_refusing                                   gauge, 1 while sends are refused (until
 *                                                         usage is under the low-water mark)
 * - sqs_tenant_memory_used_bytes{tenant}                  gauge, per tenant (account)
 * - sqs_tenant_memory_limit_bytes{tenant}                 gauge, its share of the budget, or all
 * - sqs_memory_refused_sends_total{tenant,scope}          counter, send requests refused with
 *                                                         RequestThrottled; scope is server | tenant
 * - the message and Redis series of message-metrics.ts, added through {@link Metrics.extend}
 * - process_* and nodejs_*                                prom-client's default metrics
 *
 * Every sqs_* series is written here as text, from plain numbers and from the providers, at scrape
 * time; prom-client only renders its process and Node metrics (docs/decisions/013-metrics-as-text.md).
 * {@link Metrics.observeRequest} is on the hot path, and prom-client's labelled children hash and
 * validate their labels on every call: its counter and histogram took 1.23 µs a request, this
 * 0.21 µs. prom-client Gauges for the per-queue series keep their labelled children between
 * scrapes (1-2 KB of heap per queue at 10,000 queues, here none) and scrape 7-12 times slower.
 *
 * prom-client itself is loaded by {@link Metrics.build} (or the first scrape), which src/server.ts
 * calls once both planes listen: loading it (with the default metrics) took about 60 ms of a
 * half-second start.
 */
import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';
import type { DeadLetterStats } from './message-metrics.js';

// prom-client is CommonJS, so it can be required synchronously where it is first used.
const requireCommonJs = createRequire(import.meta.url);
const loadPromClient = (): typeof PromClient => requireCommonJs('prom-client') as typeof PromClient;

export interface QueueStats {
  readonly queue: string;
  /** The owning tenant's name (or account id); a label when given. */
  readonly tenant?: string;
  /** The queue's region; a label when given (one name may exist in several regions). */
  readonly region?: string;
  readonly visible: number;
  readonly inflight: number;
  readonly delayed: number;
  /** What its messages count against the memory budget; sqs_queue_memory_bytes when given. */
  readonly bytes?: number;
}

/** The memory budget as /metrics shows it (src/core/budget.ts). */
export interface MemoryStats {
  readonly limit: number;
  readonly used: number;
  readonly refusing: boolean;
  readonly tenants: Iterable<{ readonly tenant: string; readonly used: number; readonly limit: number }>;
}

/** A load from Redis in progress (src/persistence/loader.ts, LoadProgress). */
export interface MigrationStats {
  readonly queues: number;
  readonly queuesTotal: number;
  readonly messages: number;
}

export interface LoadingStats {
  readonly queues: number;
  readonly queuesTotal: number;
  readonly messages: number;
  readonly messagesTotal: number;
  readonly bytes: number;
  readonly bytesTotal: number;
  readonly seconds: number;
}

/** The elector's numbers (src/ha/elector.ts); counters are totals since the process started. */
export interface LeaderStats {
  readonly state: 'follower' | 'loading' | 'leader' | 'stopped';
  readonly epoch: number;
  readonly takeovers: number;
  readonly fenced: number;
  readonly renewFailures: number;
}

const LEADER_STATES = ['follower', 'loading', 'leader'] as const;

/** Seconds: 50 µs .. 25 s in 1-2.5-5 steps. */
const REQUEST_DURATION_BUCKETS: readonly number[] = [
  0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
  25,
];

/**
 * Distinct (action, protocol, status) sets kept before new actions are counted as `_other`: the
 * action label may come from client input (an unknown `Action=`), and each label set is a time
 * series forever. Callers should still pass a known action name or a fixed one such as `Unknown`.
 */
export const MAX_LABEL_SETS = 1000;
export const OVERFLOW_ACTION = '_other';

/** What /metrics reads at each scrape; each absent one shows as "nothing there". */
export interface MetricsProviders {
  /** sqs_queue_messages and sqs_queue_memory_bytes; absent: no series. */
  readonly queues?: () => Iterable<QueueStats>;
  /** sqs_long_poll_waiters; absent: 0. */
  readonly longPollWaiters?: () => number;
  /** The sqs_leader_* series; absent or undefined: no leader election. */
  readonly leader?: () => LeaderStats | undefined;
  /** The sqs_loading* series; absent or undefined: not loading. */
  readonly loading?: () => LoadingStats | undefined;
  /** The sqs_migration* series; absent or undefined: no migration running. */
  readonly migration?: () => MigrationStats | undefined;
  /** The sqs_owner_* and sqs_forwarded_* series; absent or undefined: not --active-active. */
  readonly owners?: () => OwnersStats | undefined;
  /** The shards not served now, and why; absent: none. */
  readonly shardsDown?: () => ReadonlyMap<number, 'reloading' | 'refused'> | undefined;
  /** The sqs_memory_* and sqs_tenant_memory_* gauges; absent: 0 and no series. */
  readonly memory?: () => MemoryStats;
  /** sqs_messages_moved_to_dlq_total (message-metrics.ts); absent: no series. */
  readonly deadLetters?: () => Iterable<DeadLetterStats>;
}

export interface OwnersStats {
  readonly shards: Readonly<Record<'taking' | 'serving' | 'giving', number>>;
  readonly members: number;
  readonly coordinator: boolean;
  readonly mapVersion: number;
  readonly forwarded: Readonly<Record<'answered' | 'not_owner' | 'refused' | 'unsent' | 'lost', number>>;
}

export interface MetricsOptions {
  /** prom-client's process_* / nodejs_* metrics; default true. */
  readonly defaultMetrics?: boolean;
  readonly providers?: MetricsProviders;
}

/** The Content-Type of {@link Metrics.metrics}' text (Prometheus exposition format 0.0.4). */
const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** A label value in the text exposition format: backslash, double quote and newline escaped. */
export function escapeLabel(value: string): string {
  return /[\\"\n]/.test(value) ? value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`)) : value;
}

/** `name="value",...` of a label set, values escaped, in the order given. */
export function labelText(labels: Readonly<Record<string, string>>): string {
  let text = '';
  for (const [name, value] of Object.entries(labels)) {
    text += `${text === '' ? '' : ','}${name}="${escapeLabel(value)}"`;
  }
  return text;
}

function valueText(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (!Number.isFinite(value)) return value < 0 ? '-Inf' : '+Inf';
  return String(value);
}

/** The text of one scrape, family after family. */
export class Exposition {
  text = '';

  family(name: string, type: 'counter' | 'gauge' | 'histogram', help: string): void {
    this.text += `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n`;
  }

  /** One sample; `labels` as {@link labelText} writes them, '' for none. */
  sample(name: string, labels: string, value: number): void {
    this.text += labels === '' ? `${name} ${valueText(value)}\n` : `${name}{${labels}} ${valueText(value)}\n`;
  }

  /** A family of one series without labels. */
  single(name: string, type: 'counter' | 'gauge', help: string, value: number): void {
    this.family(name, type, help);
    this.sample(name, '', value);
  }

  /** A counter family whose series are kept as their label text and a count. */
  counters(name: string, help: string, series: Iterable<{ labels: string; count: number }>): void {
    this.family(name, 'counter', help);
    for (const s of series) this.sample(name, s.labels, s.count);
  }

  /** A histogram family of one series without labels. */
  singleHistogram(name: string, help: string, h: Histogram): void {
    this.family(name, 'histogram', help);
    this.histogram(name, '', h);
  }

  /** A histogram's series: cumulative buckets, +Inf, sum and count. */
  histogram(name: string, labels: string, h: Histogram): void {
    const sep = labels === '' ? '' : ',';
    let cumulative = 0;
    h.bounds.forEach((bound, i) => {
      cumulative += h.buckets[i] ?? 0;
      this.sample(`${name}_bucket`, `${labels}${sep}le="${bound}"`, cumulative);
    });
    this.sample(`${name}_bucket`, `${labels}${sep}le="+Inf"`, h.count);
    this.sample(`${name}_sum`, labels, h.sum);
    this.sample(`${name}_count`, labels, h.count);
  }
}

/** One histogram series as plain numbers: per-bucket (not cumulative) counts, sum and count. */
export class Histogram {
  /** buckets[i] counts observations in (bound[i-1], bound[i]]; the last slot is above every bound. */
  readonly buckets: Float64Array;
  sum = 0;
  count = 0;

  constructor(readonly bounds: readonly number[]) {
    this.buckets = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    let i = 0;
    while (i < this.bounds.length && value > (this.bounds[i] ?? Infinity)) i++;
    this.buckets[i] = (this.buckets[i] ?? 0) + 1;
    this.sum += value;
    this.count++;
  }
}

/** One (action, protocol, status) counter series, and the (action, protocol) durations it feeds. */
interface RequestSeries {
  readonly labels: string;
  count: number;
  readonly duration: { readonly labels: string; readonly histogram: Histogram };
}

/** The families message-metrics.ts (and any other part) adds to a scrape. */
export type Section = (out: Exposition) => void;

export class Metrics {
  readonly providers: MetricsProviders;
  private readonly sections: Section[] = [];
  /** prom-client's registry of the process and Node metrics, once {@link build} ran. */
  private defaults: PromClient.Registry | undefined;
  /** Keyed by `action \0 protocol \0 status`. */
  private readonly requestSeries = new Map<string, RequestSeries>();
  /** Keyed by `action \0 protocol`. */
  private readonly durationSeries = new Map<string, RequestSeries['duration']>();
  /** Refused sends by `tenant \0 scope`. */
  private readonly refusedSends = new Map<string, { readonly labels: string; count: number }>();
  /** The leader counters as last shown: a counter never goes down, whatever a provider says. */
  private readonly leaderTotals = { takeovers: 0, fenced: 0, renewFailures: 0 };

  constructor(private readonly options: MetricsOptions = {}) {
    this.providers = options.providers ?? {};
  }

  /** Starts prom-client's process and Node metrics (they count from here), if they are on. */
  build(): void {
    if (this.defaults !== undefined || !(this.options.defaultMetrics ?? true)) return;
    const prom = loadPromClient();
    this.defaults = new prom.Registry();
    prom.collectDefaultMetrics({ register: this.defaults });
  }

  /** Adds families to every scrape, after this module's own. */
  extend(section: Section): void {
    this.sections.push(section);
  }

  get contentType(): string {
    return CONTENT_TYPE;
  }

  /**
   * Counts one answered request and its duration. `status` is the HTTP status code of the reply;
   * `seconds` a finite, non-negative duration (others are counted but not timed).
   */
  observeRequest(action: string, protocol: string, status: number, seconds: number): void {
    const key = `${action}\u0000${protocol}\u0000${status}`;
    const series = this.requestSeries.get(key) ?? this.addRequestSeries(key, action, protocol, status);
    series.count++;
    if (seconds >= 0 && seconds !== Infinity) series.duration.histogram.observe(seconds);
  }

  private addRequestSeries(key: string, action: string, protocol: string, status: number): RequestSeries {
    if (this.requestSeries.size >= MAX_LABEL_SETS && action !== OVERFLOW_ACTION) {
      // Not cached under `key`: the overflow series is cached under its own key.
      const overflowKey = `${OVERFLOW_ACTION}\u0000${protocol}\u0000${status}`;
      return (
        this.requestSeries.get(overflowKey) ??
        this.addRequestSeries(overflowKey, OVERFLOW_ACTION, protocol, status)
      );
    }
    const durationKey = `${action}\u0000${protocol}`;
    let duration = this.durationSeries.get(durationKey);
    if (duration === undefined) {
      duration = {
        labels: labelText({ action, protocol }),
        histogram: new Histogram(REQUEST_DURATION_BUCKETS),
      };
      this.durationSeries.set(durationKey, duration);
    }
    const series: RequestSeries = {
      labels: labelText({ action, protocol, status: String(status) }),
      count: 0,
      duration,
    };
    this.requestSeries.set(key, series);
    return series;
  }

  /** Counts one send request refused over the memory budget (sqs_memory_refused_sends_total). */
  observeRefusedSend(tenant: string, scope: 'server' | 'tenant'): void {
    const key = `${tenant}\u0000${scope}`;
    let series = this.refusedSends.get(key);
    if (series === undefined) {
      series = { labels: labelText({ tenant, scope }), count: 0 };
      this.refusedSends.set(key, series);
    }
    series.count++;
  }

  /** The scrape: every sqs_* family, then prom-client's process and Node metrics. */
  async metrics(): Promise<string> {
    this.build();
    return this.sqsText() + (this.defaults === undefined ? '' : await this.defaults.metrics());
  }

  /**
   * The scrape as prom-client's `getMetricsAsJSON` gives it, for a cluster primary's
   * `AggregatorRegistry` (src/wiring/workers.ts), which sums each series over the workers: the
   * sqs_* text read back into families, then prom-client's own (with their aggregators: a
   * version is not summed).
   */
  async families(): Promise<readonly (MetricFamily | PromClient.MetricObject)[]> {
    this.build();
    return [...parseExposition(this.sqsText()), ...((await this.defaults?.getMetricsAsJSON()) ?? [])];
  }

  private sqsText(): string {
    const out = new Exposition();
    this.writeRequests(out);
    out.single(
      'sqs_long_poll_waiters',
      'gauge',
      'ReceiveMessage calls currently waiting for messages (long polls)',
      this.providers.longPollWaiters?.() ?? 0,
    );
    this.writeLeader(out);
    this.writeLoading(out);
    this.writeShards(out);
    this.writeOwners(out);
    this.writeMemory(out);
    for (const section of this.sections) section(out);
    this.writeQueues(out);
    return out.text;
  }

  private writeRequests(out: Exposition): void {
    out.counters(
      'sqs_requests_total',
      'SQS API requests answered, by action, wire protocol (json|query) and HTTP status',
      this.requestSeries.values(),
    );
    out.family(
      'sqs_request_duration_seconds',
      'histogram',
      'Time from request to reply, by action and wire protocol (long polls included)',
    );
    for (const d of this.durationSeries.values()) {
      if (d.histogram.count > 0) out.histogram('sqs_request_duration_seconds', d.labels, d.histogram);
    }
  }

  private writeLeader(out: Exposition): void {
    const s = this.providers.leader?.();
    out.family(
      'sqs_leader_state',
      'gauge',
      "1 for this instance's leader-election state (follower, loading, leader), 0 for the others",
    );
    if (s !== undefined) {
      for (const name of LEADER_STATES)
        out.sample('sqs_leader_state', `state="${name}"`, s.state === name ? 1 : 0);
    }
    out.single(
      'sqs_leader_epoch',
      'gauge',
      'Epoch of the leader term this instance holds (loading or leader); 0 when it holds none',
      s?.epoch ?? 0,
    );
    const totals = this.leaderTotals;
    if (s !== undefined) {
      totals.takeovers = Math.max(totals.takeovers, s.takeovers);
      totals.fenced = Math.max(totals.fenced, s.fenced);
      totals.renewFailures = Math.max(totals.renewFailures, s.renewFailures);
    }
    out.single(
      'sqs_leader_takeovers_total',
      'counter',
      'Leader terms this instance won and served',
      totals.takeovers,
    );
    out.single(
      'sqs_leader_fenced_writes_total',
      'counter',
      'Leader terms ended because Redis refused a write with our token (fencing)',
      totals.fenced,
    );
    out.single(
      'sqs_leader_renew_failures_total',
      'counter',
      'Renewals of the leader lock that failed (error or timeout)',
      totals.renewFailures,
    );
  }

  private writeLoading(out: Exposition): void {
    const s = this.providers.loading?.();
    out.single(
      'sqs_loading',
      'gauge',
      '1 while the state is being loaded from Redis (the instance is not ready), else 0',
      s === undefined ? 0 : 1,
    );
    out.single(
      'sqs_loading_seconds',
      'gauge',
      'How long the load from Redis in progress has run',
      s?.seconds ?? 0,
    );
    const part = (name: string, help: string, done: keyof LoadingStats, all: keyof LoadingStats): void => {
      out.family(name, 'gauge', help);
      if (s === undefined) return;
      out.sample(name, 'part="done"', s[done]);
      out.sample(name, 'part="all"', s[all]);
    };
    part(
      'sqs_loading_queues',
      'Queues of the load in progress: loaded (done) and in Redis (all)',
      'queues',
      'queuesTotal',
    );
    part(
      'sqs_loading_messages',
      'Messages of the load in progress: read (done) and in Redis (all)',
      'messages',
      'messagesTotal',
    );
    part(
      'sqs_loading_bytes',
      'Bytes of message records of the load in progress: read (done) and in Redis (all, estimated from samples)',
      'bytes',
      'bytesTotal',
    );
  }

  private writeShards(out: Exposition): void {
    const m = this.providers.migration?.();
    out.single(
      'sqs_migration',
      'gauge',
      '1 while layout 1 in Redis is being migrated to layout 2 (before the state is loaded), else 0',
      m === undefined ? 0 : 1,
    );
    out.family(
      'sqs_migration_queues',
      'gauge',
      'Queues of the migration in progress: copied (done) and in layout 1 (all)',
    );
    if (m !== undefined) {
      out.sample('sqs_migration_queues', 'part="done"', m.queues);
      out.sample('sqs_migration_queues', 'part="all"', m.queuesTotal);
    }
    out.single(
      'sqs_migration_messages',
      'gauge',
      'Messages the migration in progress has copied',
      m?.messages ?? 0,
    );
    const down = this.providers.shardsDown?.();
    let reloading = 0;
    let refused = 0;
    for (const why of down?.values() ?? []) {
      if (why === 'refused') refused++;
      else reloading++;
    }
    out.family(
      'sqs_shards_down',
      'gauge',
      'Shards whose queues are not served now: reloading (a write of theirs failed) or refused (too big for the memory budget)',
    );
    out.sample('sqs_shards_down', 'reason="reloading"', reloading);
    out.sample('sqs_shards_down', 'reason="refused"', refused);
    out.family('sqs_shard_down', 'gauge', '1 for each shard whose queues are not served now, with why');
    for (const [shard, why] of down ?? [])
      out.sample('sqs_shard_down', `shard="${shard}",reason="${why}"`, 1);
  }

  private writeOwners(out: Exposition): void {
    const o = this.providers.owners?.();
    if (o === undefined) return;
    out.family('sqs_owner_shards', 'gauge', 'Shards this instance holds, by state: taking, serving, giving');
    for (const [state, n] of Object.entries(o.shards)) out.sample('sqs_owner_shards', `state="${state}"`, n);
    out.single('sqs_owner_members', 'gauge', 'Live members this instance knows of', o.members);
    out.single(
      'sqs_owner_coordinator',
      'gauge',
      '1 while this instance writes the shard map',
      o.coordinator ? 1 : 0,
    );
    out.single(
      'sqs_owner_map_version',
      'gauge',
      'Version of the shard map this instance follows',
      o.mapVersion,
    );
    out.family(
      'sqs_forwarded_requests_total',
      'counter',
      "Requests sent to their shard's owner: answered, not_owner (retried), refused (503: too big for the owner's memory), unsent (retried), lost (503)",
    );
    for (const [outcome, n] of Object.entries(o.forwarded))
      out.sample('sqs_forwarded_requests_total', `outcome="${outcome}"`, n);
  }

  private writeMemory(out: Exposition): void {
    const s = this.providers.memory?.();
    const finite = (n: number): number => (Number.isFinite(n) ? n : 0);
    out.single(
      'sqs_memory_budget_bytes',
      'gauge',
      'The memory budget of stored messages (--max-memory)',
      finite(s?.limit ?? 0),
    );
    out.single(
      'sqs_memory_used_bytes',
      'gauge',
      'Bytes the stored messages and queues count against the budget',
      s?.used ?? 0,
    );
    out.single(
      'sqs_memory_refusing',
      'gauge',
      '1 while sends are refused over the memory budget (until usage is under the low-water mark)',
      s?.refusing === true ? 1 : 0,
    );
    // Read once: the provider builds the list anew at each call.
    const tenants = [...(s?.tenants ?? [])];
    out.family(
      'sqs_tenant_memory_used_bytes',
      'gauge',
      "Bytes a tenant's queues count against the memory budget",
    );
    for (const t of tenants)
      out.sample('sqs_tenant_memory_used_bytes', labelText({ tenant: t.tenant }), t.used);
    out.family(
      'sqs_tenant_memory_limit_bytes',
      'gauge',
      "The bytes a tenant's queues may hold: its memoryShare of the budget, or the whole budget",
    );
    for (const t of tenants) {
      out.sample('sqs_tenant_memory_limit_bytes', labelText({ tenant: t.tenant }), finite(t.limit));
    }
    out.counters(
      'sqs_memory_refused_sends_total',
      'Send requests refused with RequestThrottled over the memory budget (scope: server) or a tenant share (tenant)',
      this.refusedSends.values(),
    );
  }

  /**
   * sqs_queue_messages and sqs_queue_memory_bytes, straight from the provider: nothing is kept
   * between scrapes, and each queue's labels are written once into a local string (this is the
   * scrape's largest part: three lines a queue).
   */
  private writeQueues(out: Exposition): void {
    let messages = '';
    let memory = '';
    for (const q of this.providers.queues?.() ?? []) {
      let labels = `queue="${escapeLabel(q.queue)}"`;
      if (q.tenant !== undefined) labels += `,tenant="${escapeLabel(q.tenant)}"`;
      if (q.region !== undefined) labels += `,region="${escapeLabel(q.region)}"`;
      messages +=
        `sqs_queue_messages{${labels},state="visible"} ${q.visible}\n` +
        `sqs_queue_messages{${labels},state="inflight"} ${q.inflight}\n` +
        `sqs_queue_messages{${labels},state="delayed"} ${q.delayed}\n`;
      if (q.bytes !== undefined) memory += `sqs_queue_memory_bytes{${labels}} ${q.bytes}\n`;
    }
    out.family(
      'sqs_queue_messages',
      'gauge',
      'Messages per queue and state (visible, inflight, delayed), read at scrape time',
    );
    out.text += messages;
    out.family(
      'sqs_queue_memory_bytes',
      'gauge',
      "Bytes a queue's messages count against the memory budget, read at scrape time",
    );
    out.text += memory;
  }
}

/**
 * How a --workers primary combines a family over its workers where a sum says the wrong thing:
 * every worker has the same clock-time of a load or the same epoch, not one each. The others are
 * summed (requests, messages, bytes, budgets: the machine's totals).
 */
export const NOT_SUMMED: Readonly<Record<string, 'max'>> = {
  sqs_leader_epoch: 'max',
  sqs_loading_seconds: 'max',
  // Every worker sees the same members and the same map.
  sqs_owner_members: 'max',
  sqs_owner_map_version: 'max',
};

/** One family as prom-client's `getMetricsAsJSON` gives it. */
export interface MetricFamily {
  readonly name: string;
  readonly help: string;
  type: string;
  readonly values: { value: number; labels: Record<string, string>; metricName?: string }[];
  readonly aggregator: 'sum' | 'max';
}

/**
 * Text as {@link Exposition} writes it, back into prom-client's JSON families (summed when
 * aggregated, but for {@link NOT_SUMMED}). Only this module's own writing is read: `# HELP` and `# TYPE` before each
 * family's samples, label values escaped by {@link escapeLabel}.
 */
export function parseExposition(text: string): MetricFamily[] {
  const families: MetricFamily[] = [];
  let family: MetricFamily | undefined;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('# HELP ')) {
      const space = line.indexOf(' ', 7);
      const name = line.slice(7, space);
      family = {
        name,
        help: line.slice(space + 1),
        type: 'untyped',
        values: [],
        aggregator: NOT_SUMMED[name] ?? 'sum',
      };
      families.push(family);
      continue;
    }
    if (line.startsWith('# TYPE ')) {
      if (family !== undefined) family.type = line.slice(line.lastIndexOf(' ') + 1);
      continue;
    }
    if (family === undefined) continue;
    const brace = line.indexOf('{');
    const end = brace === -1 ? line.indexOf(' ') : line.lastIndexOf('} ');
    const name = line.slice(0, brace === -1 ? end : brace);
    const labels: Record<string, string> = {};
    if (brace !== -1) {
      for (const m of line.slice(brace + 1, end).matchAll(/([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
        labels[m[1] ?? ''] = (m[2] ?? '').replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
      }
    }
    const value = line.slice(brace === -1 ? end + 1 : end + 2);
    family.values.push({
      value: value === '+Inf' ? Infinity : value === '-Inf' ? -Infinity : Number(value),
      labels,
      ...(name === family.name ? {} : { metricName: name }),
    });
  }
  return families;
}
