/**
 * Prometheus metrics of one server instance, in a registry of its own (not prom-client's global one),
 * so tests and a process running two servers can each have theirs.
 *
 * - sqs_requests_total{action,protocol,status}          counter; status is the HTTP status code
 * - sqs_request_duration_seconds{action,protocol}        histogram, 50 µs .. 25 s (long polls last 20 s)
 * - sqs_queue_messages{tenant,region,queue,state}         gauge, read from a provider at scrape time;
 *                                                         state is visible | inflight | delayed
 * - sqs_long_poll_waiters                                 gauge, read from a provider at scrape time
 * - sqs_leader_state{state}                               gauge, 1 for this instance's elector state
 *                                                         (follower | loading | leader), else 0
 * - sqs_leader_epoch                                      gauge, the epoch of the term held (0: none)
 * - sqs_leader_takeovers_total                            counter, terms this instance won and served
 * - sqs_leader_fenced_writes_total                        counter, terms ended by a fenced write
 * - sqs_leader_renew_failures_total                       counter, renewals that failed (error/timeout)
 *                                                         (read at scrape time; without leader
 *                                                         election the gauges have no series and
 *                                                         the counters stay 0)
 * - sqs_loading                                           gauge, 1 while the state is being loaded
 *                                                         from Redis (/ready answers 503), else 0
 * - sqs_loading_seconds                                   gauge, how long the load in progress ran
 * - sqs_loading_queues{part}, sqs_loading_messages{part}, gauges of the load in progress: part is
 *   sqs_loading_bytes{part}                               done (read so far) | all (in Redis; bytes
 *                                                         estimated from sampled records); no
 *                                                         series while not loading
 * - sqs_memory_budget_bytes                               gauge, the memory budget (--max-memory)
 * - sqs_memory_used_bytes                                 gauge, what the store holds against it
 * - sqs_memory_refusing                                   gauge, 1 while sends are refused (until
 *                                                         usage is under the low-water mark)
 * - sqs_tenant_memory_used_bytes{tenant}                  gauge, per tenant (account)
 * - sqs_tenant_memory_limit_bytes{tenant}                 gauge, its share of the budget, or all
 * - sqs_queue_memory_bytes{tenant,region,queue}           gauge, per queue, written like
 *                                                         sqs_queue_messages
 * - sqs_memory_refused_sends_total{tenant,scope}          counter, send requests refused with
 *                                                         RequestThrottled; scope is server | tenant
 * - process_* and nodejs_*                                prom-client's default metrics
 *
 * {@link Metrics.observeRequest} is on the hot path. prom-client's own labelled children still hash
 * and validate their labels on every call (0.3-1 µs each here), so a request only bumps plain
 * numbers in a series found by one Map lookup on a string key; the registry reads the totals at
 * scrape time (the counter through prom-client's public `inc`, the histogram as a collector of its
 * own in prom-client's metric shape).
 *
 * prom-client itself is loaded when the registry is first needed: main builds it once both planes
 * listen, since loading it (with the default metrics) took about 60 ms of a half-second start.
 */
import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';
import type { Counter, Gauge, Metric, Registry } from 'prom-client';

export type Prom = typeof PromClient;

// prom-client is CommonJS, so it can be required synchronously where the registry is first used.
const requireCommonJs = createRequire(import.meta.url);
const loadPromClient = (): Prom => requireCommonJs('prom-client') as Prom;

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

export type QueueStatsProvider = () => Iterable<QueueStats>;

/** A load from Redis in progress (src/persistence/loader.ts, LoadProgress). */
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

export const LEADER_STATES = ['follower', 'loading', 'leader'] as const;

/** Seconds: 50 µs .. 25 s in 1-2.5-5 steps. */
export const REQUEST_DURATION_BUCKETS: readonly number[] = [
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

/** One (action, protocol) histogram series: per-bucket (not cumulative) counts, sum, count. */
class DurationSeries {
  /** buckets[i] counts observations in (bound[i-1], bound[i]]; the last slot is above every bound. */
  readonly buckets = new Float64Array(REQUEST_DURATION_BUCKETS.length + 1);
  sum = 0;
  count = 0;

  constructor(readonly labels: { readonly action: string; readonly protocol: string }) {}

  observe(seconds: number): void {
    let i = 0;
    while (i < REQUEST_DURATION_BUCKETS.length && seconds > (REQUEST_DURATION_BUCKETS[i] ?? Infinity)) i++;
    this.buckets[i] = (this.buckets[i] ?? 0) + 1;
    this.sum += seconds;
    this.count++;
  }
}

/** One (action, protocol, status) counter series, and the duration series it feeds. */
interface RequestSeries {
  readonly labels: { readonly action: string; readonly protocol: string; readonly status: string };
  count: number;
  /** The part of `count` already added to the prom-client counter. */
  exported: number;
  readonly duration: DurationSeries;
}

interface HistogramValue {
  readonly labels: Record<string, string | number>;
  readonly value: number;
  readonly metricName: string;
}

/**
 * sqs_request_duration_seconds as a registry entry: the shape prom-client's Registry reads from its
 * own metrics (`get()` resolving to name, help, type, aggregator and values, plus `reset()`).
 */
class DurationHistogram {
  readonly name = 'sqs_request_duration_seconds';
  readonly help = 'Time from request to reply, by action and wire protocol (long polls included)';
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly labelNames = ['action', 'protocol'];

  constructor(private readonly series: () => Iterable<DurationSeries>) {}

  get(): Promise<{
    name: string;
    help: string;
    type: string;
    aggregator: string;
    values: HistogramValue[];
  }> {
    const values: HistogramValue[] = [];
    for (const s of this.series()) {
      if (s.count === 0) continue;
      let cumulative = 0;
      REQUEST_DURATION_BUCKETS.forEach((bound, i) => {
        cumulative += s.buckets[i] ?? 0;
        values.push({
          labels: { ...s.labels, le: bound },
          value: cumulative,
          metricName: `${this.name}_bucket`,
        });
      });
      values.push({ labels: { ...s.labels, le: '+Inf' }, value: s.count, metricName: `${this.name}_bucket` });
      values.push({ labels: s.labels, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: s.labels, value: s.count, metricName: `${this.name}_count` });
    }
    return Promise.resolve({
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values,
    });
  }

  reset(): void {
    for (const s of this.series()) {
      s.buckets.fill(0);
      s.sum = 0;
      s.count = 0;
    }
  }
}

const QUEUE_MEMORY = 'sqs_queue_memory_bytes';
const QUEUE_MEMORY_HELP = "Bytes a queue's messages count against the memory budget, read at scrape time";
const QUEUE_MESSAGES = 'sqs_queue_messages';
const QUEUE_MESSAGES_HELP = 'Messages per queue and state (visible, inflight, delayed), read at scrape time';

/** A label value in the text exposition format: backslash, double quote and newline escaped. */
export function escapeLabel(value: string): string {
  return /[\\"\n]/.test(value) ? value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`)) : value;
}

export interface MetricsOptions {
  /** prom-client's process_* / nodejs_* metrics; default true. */
  readonly defaultMetrics?: boolean;
}

export class Metrics {
  private builtRegistry: Registry | undefined;
  /** Registrations of other metrics (MessageMetrics'), run when the registry is built. */
  private readonly extensions: ((registry: Registry, prom: Prom) => void)[] = [];
  /** Keyed by `action \0 protocol \0 status`. */
  private readonly requestSeries = new Map<string, RequestSeries>();
  /** Keyed by `action \0 protocol`. */
  private readonly durationSeries = new Map<string, DurationSeries>();
  private queueStatsProvider: QueueStatsProvider | undefined;
  private longPollWaitersProvider: (() => number) | undefined;
  private leaderStatsProvider: (() => LeaderStats) | undefined;
  private loadingProvider: (() => LoadingStats | undefined) | undefined;
  private memoryStatsProvider: (() => MemoryStats) | undefined;
  /** Refused sends by `tenant \0 scope`, with the part already added to the prom-client counter. */
  private readonly refusedSends = new Map<
    string,
    { labels: { tenant: string; scope: string }; count: number; exported: number }
  >();

  constructor(private readonly options: MetricsOptions = {}) {}

  /** This instance's registry, with every metric; built (and prom-client loaded) on first use. */
  get registry(): Registry {
    this.builtRegistry ??= this.buildRegistry();
    return this.builtRegistry;
  }

  /** Builds the registry now, if nothing has yet: the default metrics start counting from here. */
  build(): void {
    void this.registry;
  }

  /** Registers more metrics on the registry: when it is built, or at once if it is. */
  extend(register: (registry: Registry, prom: Prom) => void): void {
    if (this.builtRegistry === undefined) this.extensions.push(register);
    else register(this.builtRegistry, loadPromClient());
  }

  private buildRegistry(): Registry {
    const prom = loadPromClient();
    const registry = new prom.Registry();
    const registers = [registry];

    const requests: Counter<'action' | 'protocol' | 'status'> = new prom.Counter({
      name: 'sqs_requests_total',
      help: 'SQS API requests answered, by action, wire protocol (json|query) and HTTP status',
      labelNames: ['action', 'protocol', 'status'] as const,
      registers,
      collect: () => {
        for (const series of this.requestSeries.values()) {
          if (series.count > series.exported) {
            requests.inc(series.labels, series.count - series.exported);
            series.exported = series.count;
          }
        }
      },
    });

    // Not a prom-client class: see DurationHistogram. The Registry only reads what its type says.
    registry.registerMetric(new DurationHistogram(() => this.durationSeries.values()) as unknown as Metric);

    const longPollWaiters: Gauge = new prom.Gauge({
      name: 'sqs_long_poll_waiters',
      help: 'ReceiveMessage calls currently waiting for messages (long polls)',
      registers,
      collect: () => {
        longPollWaiters.set(this.longPollWaitersProvider?.() ?? 0);
      },
    });

    this.registerLeaderMetrics(prom, registers);
    this.registerLoadingMetrics(prom, registers);
    this.registerMemoryMetrics(prom, registers);

    if (this.options.defaultMetrics ?? true) prom.collectDefaultMetrics({ register: registry });
    for (const register of this.extensions.splice(0)) register(registry, prom);
    return registry;
  }

  /** The Content-Type of {@link metrics}' text (Prometheus exposition format 0.0.4). */
  get contentType(): string {
    return this.registry.contentType;
  }

  /**
   * Counts one answered request and its duration. `status` is the HTTP status code of the reply;
   * `seconds` a finite, non-negative duration (others are counted but not timed).
   */
  observeRequest(action: string, protocol: string, status: number, seconds: number): void {
    const key = `${action}\u0000${protocol}\u0000${status}`;
    const series = this.requestSeries.get(key) ?? this.addRequestSeries(key, action, protocol, status);
    series.count++;
    if (seconds >= 0 && seconds !== Infinity) series.duration.observe(seconds);
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
      duration = new DurationSeries({ action, protocol });
      this.durationSeries.set(durationKey, duration);
    }
    const series: RequestSeries = {
      labels: { action, protocol, status: String(status) },
      count: 0,
      exported: 0,
      duration,
    };
    this.requestSeries.set(key, series);
    return series;
  }

  /** Where sqs_queue_messages comes from; called at each scrape. Undefined: no series. */
  setQueueStatsProvider(provider: QueueStatsProvider | undefined): void {
    this.queueStatsProvider = provider;
  }

  /** Where sqs_long_poll_waiters comes from; called at each scrape. Undefined: 0. */
  setLongPollWaitersProvider(provider: (() => number) | undefined): void {
    this.longPollWaitersProvider = provider;
  }

  /** Where the sqs_leader_* series come from (with leader election only); called at each scrape. */
  setLeaderStatsProvider(provider: (() => LeaderStats) | undefined): void {
    this.leaderStatsProvider = provider;
  }

  /** Where the sqs_loading* series come from; called at each scrape. Undefined: not loading. */
  setLoadingProvider(provider: (() => LoadingStats | undefined) | undefined): void {
    this.loadingProvider = provider;
  }

  private registerLoadingMetrics(prom: Prom, registers: Registry[]): void {
    const loading: Gauge = new prom.Gauge({
      name: 'sqs_loading',
      help: '1 while the state is being loaded from Redis (the instance is not ready), else 0',
      registers,
      collect: () => loading.set(this.loadingProvider?.() === undefined ? 0 : 1),
    });
    const seconds: Gauge = new prom.Gauge({
      name: 'sqs_loading_seconds',
      help: 'How long the load from Redis in progress has run',
      registers,
      collect: () => {
        seconds.reset();
        const s = this.loadingProvider?.();
        if (s !== undefined) seconds.set(s.seconds);
      },
    });
    const part = (name: string, help: string, done: keyof LoadingStats, all: keyof LoadingStats): void => {
      const g: Gauge<'part'> = new prom.Gauge({
        name,
        help,
        labelNames: ['part'] as const,
        registers,
        collect: () => {
          g.reset();
          const s = this.loadingProvider?.();
          if (s === undefined) return;
          g.set({ part: 'done' }, s[done]);
          g.set({ part: 'all' }, s[all]);
        },
      });
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

  /** Where the sqs_memory_* and sqs_tenant_memory_* gauges come from; called at each scrape. */
  setMemoryStatsProvider(provider: (() => MemoryStats) | undefined): void {
    this.memoryStatsProvider = provider;
  }

  /** Counts one send request refused over the memory budget (sqs_memory_refused_sends_total). */
  observeRefusedSend(tenant: string, scope: 'server' | 'tenant'): void {
    const key = `${tenant}\u0000${scope}`;
    let series = this.refusedSends.get(key);
    if (series === undefined) {
      series = { labels: { tenant, scope }, count: 0, exported: 0 };
      this.refusedSends.set(key, series);
    }
    series.count++;
  }

  private registerMemoryMetrics(prom: Prom, registers: Registry[]): void {
    const stats = (): MemoryStats | undefined => this.memoryStatsProvider?.();
    const gauge = (name: string, help: string, read: (s: MemoryStats) => number): void => {
      const g: Gauge = new prom.Gauge({
        name,
        help,
        registers,
        collect: () => {
          const s = stats();
          if (s === undefined) g.reset();
          else g.set(read(s));
        },
      });
    };
    gauge('sqs_memory_budget_bytes', 'The memory budget of stored messages (--max-memory)', (s) =>
      Number.isFinite(s.limit) ? s.limit : 0,
    );
    gauge(
      'sqs_memory_used_bytes',
      'Bytes the stored messages and queues count against the budget',
      (s) => s.used,
    );
    gauge(
      'sqs_memory_refusing',
      '1 while sends are refused over the memory budget (until usage is under the low-water mark)',
      (s) => (s.refusing ? 1 : 0),
    );
    const perTenant = (
      name: string,
      help: string,
      read: (t: { used: number; limit: number }) => number,
    ): void => {
      const g: Gauge<'tenant'> = new prom.Gauge({
        name,
        help,
        labelNames: ['tenant'] as const,
        registers,
        collect: () => {
          g.reset();
          for (const t of stats()?.tenants ?? []) g.set({ tenant: t.tenant }, read(t));
        },
      });
    };
    perTenant(
      'sqs_tenant_memory_used_bytes',
      "Bytes a tenant's queues count against the memory budget",
      (t) => t.used,
    );
    perTenant(
      'sqs_tenant_memory_limit_bytes',
      "The bytes a tenant's queues may hold: its memoryShare of the budget, or the whole budget",
      (t) => (Number.isFinite(t.limit) ? t.limit : 0),
    );
    const refused: Counter<'tenant' | 'scope'> = new prom.Counter({
      name: 'sqs_memory_refused_sends_total',
      help: 'Send requests refused with RequestThrottled over the memory budget (scope: server) or a tenant share (tenant)',
      labelNames: ['tenant', 'scope'] as const,
      registers,
      collect: () => {
        for (const series of this.refusedSends.values()) {
          if (series.count > series.exported) {
            refused.inc(series.labels, series.count - series.exported);
            series.exported = series.count;
          }
        }
      },
    });
  }

  private registerLeaderMetrics(prom: Prom, registers: Registry[]): void {
    const stats = (): LeaderStats | undefined => this.leaderStatsProvider?.();
    const state: Gauge<'state'> = new prom.Gauge({
      name: 'sqs_leader_state',
      help: "1 for this instance's leader-election state (follower, loading, leader), 0 for the others",
      labelNames: ['state'] as const,
      registers,
      collect: () => {
        state.reset();
        const s = stats();
        if (s === undefined) return;
        for (const name of LEADER_STATES) state.set({ state: name }, s.state === name ? 1 : 0);
      },
    });
    const epoch: Gauge = new prom.Gauge({
      name: 'sqs_leader_epoch',
      help: 'Epoch of the leader term this instance holds (loading or leader); 0 when it holds none',
      registers,
      collect: () => {
        epoch.reset();
        const s = stats();
        if (s !== undefined) epoch.set(s.epoch);
      },
    });
    // Counters from totals kept by the elector: add what is new since the last scrape.
    const counter = (name: string, help: string, read: (s: LeaderStats) => number): void => {
      let exported = 0;
      const c: Counter = new prom.Counter({
        name,
        help,
        registers,
        collect: () => {
          const s = stats();
          if (s === undefined) return;
          const total = read(s);
          if (total > exported) c.inc(total - exported);
          exported = Math.max(exported, total);
        },
      });
    };
    counter('sqs_leader_takeovers_total', 'Leader terms this instance won and served', (s) => s.takeovers);
    counter(
      'sqs_leader_fenced_writes_total',
      'Leader terms ended because Redis refused a write with our token (fencing)',
      (s) => s.fenced,
    );
    counter(
      'sqs_leader_renew_failures_total',
      'Renewals of the leader lock that failed (error or timeout)',
      (s) => s.renewFailures,
    );
  }

  /** The scrape: every metric of this registry in Prometheus text format, then the queue depths. */
  async metrics(): Promise<string> {
    return (await this.registry.metrics()) + this.queueMessagesText() + this.queueMemoryText();
  }

  /** sqs_queue_memory_bytes, as text for the reason queueMessagesText gives. */
  private queueMemoryText(): string {
    let text = `# HELP ${QUEUE_MEMORY} ${QUEUE_MEMORY_HELP}\n# TYPE ${QUEUE_MEMORY} gauge\n`;
    for (const stats of this.queueStatsProvider?.() ?? []) {
      if (stats.bytes === undefined) continue;
      let labels = `queue="${escapeLabel(stats.queue)}"`;
      if (stats.tenant !== undefined) labels += `,tenant="${escapeLabel(stats.tenant)}"`;
      if (stats.region !== undefined) labels += `,region="${escapeLabel(stats.region)}"`;
      text += `${QUEUE_MEMORY}{${labels}} ${stats.bytes}\n`;
    }
    return text;
  }

  /**
   * sqs_queue_messages, written as text straight from the provider. As a prom-client Gauge it kept
   * three labelled children per queue between scrapes and built them anew at each: about 6 KB of
   * RSS per queue at 10,000 queues, more than an empty queue costs in the store.
   */
  private queueMessagesText(): string {
    const provider = this.queueStatsProvider;
    let text = `# HELP ${QUEUE_MESSAGES} ${QUEUE_MESSAGES_HELP}\n# TYPE ${QUEUE_MESSAGES} gauge\n`;
    if (provider === undefined) return text;
    for (const stats of provider()) {
      let labels = `queue="${escapeLabel(stats.queue)}"`;
      if (stats.tenant !== undefined) labels += `,tenant="${escapeLabel(stats.tenant)}"`;
      if (stats.region !== undefined) labels += `,region="${escapeLabel(stats.region)}"`;
      text +=
        `${QUEUE_MESSAGES}{${labels},state="visible"} ${stats.visible}\n` +
        `${QUEUE_MESSAGES}{${labels},state="inflight"} ${stats.inflight}\n` +
        `${QUEUE_MESSAGES}{${labels},state="delayed"} ${stats.delayed}\n`;
    }
    return text;
  }
}
