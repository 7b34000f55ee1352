import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, test, type TestContext } from 'node:test';

import { buildControlPlane } from '../../src/http/control.js';
import {
  escapeLabel,
  MAX_LABEL_SETS,
  Metrics,
  OVERFLOW_ACTION,
  type MetricsProviders,
  type QueueStats,
} from '../../src/http/metrics.js';
import { MessageMetrics } from '../../src/http/message-metrics.js';
import { createLogger } from '../../src/log.js';
import { samples } from '../support/prometheus.js';

/** A logger whose lines go to an array instead of stdout. */
function memoryLogger(): { logger: ReturnType<typeof createLogger>; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      callback();
    },
  });
  return { logger: createLogger('info', sink), lines };
}

function controlPlane(
  t: TestContext,
  isReady: () => boolean = () => true,
  metrics = new Metrics({ defaultMetrics: false }),
) {
  const { logger, lines } = memoryLogger();
  const app = buildControlPlane({ logger, metrics, isReady });
  t.after(() => app.close());
  return { app, metrics, lines };
}

function withProviders(providers: MetricsProviders): Metrics {
  return new Metrics({ defaultMetrics: false, providers });
}

/** The value of one sample in Prometheus text with exactly these labels, or undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const s of samples(text)) {
    if (s.name !== name || Object.keys(s.labels).length !== Object.keys(labels).length) continue;
    if (Object.entries(labels).every(([key, value]) => s.labels[key] === value)) return s.value;
  }
  return undefined;
}

void describe('control plane: /health and /ready', () => {
  void test('Given a running process, when GET /health, then 200 {"status":"ok"}', async (t) => {
    const { app } = controlPlane(t, () => false);
    const res = await app.inject({ method: 'GET', url: '/health' });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { status: 'ok' });
  });

  void test('Given an active instance, when GET /ready, then 200 {"ready":true}', async (t) => {
    const { app } = controlPlane(t, () => true);
    const res = await app.inject({ method: 'GET', url: '/ready' });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { ready: true });
  });

  void test('Given a passive instance, when GET /ready, then 503 {"ready":false}', async (t) => {
    const { app } = controlPlane(t, () => false);
    const res = await app.inject({ method: 'GET', url: '/ready' });
    assert.equal(res.statusCode, 503);
    assert.deepEqual(res.json(), { ready: false });
  });

  void test('Given readiness that changes, when GET /ready twice, then each answer is the current one', async (t) => {
    let ready = false;
    const { app } = controlPlane(t, () => ready);
    const before = await app.inject({ method: 'GET', url: '/ready' });
    ready = true;
    const after = await app.inject({ method: 'GET', url: '/ready' });
    assert.deepEqual([before.statusCode, after.statusCode], [503, 200]);
  });

  void test('Given a readiness check that throws, when GET /ready, then 503 and the error is logged', async (t) => {
    const { app, lines } = controlPlane(t, () => {
      throw new Error('elector gone');
    });
    const res = await app.inject({ method: 'GET', url: '/ready' });
    assert.equal(res.statusCode, 503);
    assert.ok(lines.some((line) => line.includes('elector gone')));
  });

  void test('Given any answer, when it is sent, then it must not be cached', async (t) => {
    const { app } = controlPlane(t);
    const res = await app.inject({ method: 'GET', url: '/ready' });
    assert.equal(res.headers['cache-control'], 'no-store');
  });

  void test('Given an unknown path, when GET, then 404 with a JSON error', async (t) => {
    const { app } = controlPlane(t);
    const res = await app.inject({ method: 'GET', url: '/nope?x=1' });
    assert.equal(res.statusCode, 404);
    assert.deepEqual(res.json(), { error: 'NotFound', message: 'no route for GET /nope' });
  });
});

/** Observes durations for one action and protocol, scrapes, and reads that label set's buckets. */
async function durationBuckets(
  t: TestContext,
  action: string,
  protocol: 'json' | 'query',
  seconds: readonly number[],
): Promise<{ text: string; labels: Record<string, string>; bucket: (le: string) => number | undefined }> {
  const { app, metrics } = controlPlane(t);
  for (const s of seconds) metrics.observeRequest(action, protocol, 200, s);
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  const labels = { action, protocol };
  return {
    text,
    labels,
    bucket: (le) => sample(text, 'sqs_request_duration_seconds_bucket', { ...labels, le }),
  };
}

void describe('control plane: /metrics', () => {
  void test('Given a scrape, when GET /metrics, then the content type is the registry one', async (t) => {
    const { app, metrics } = controlPlane(t);
    const res = await app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], metrics.contentType);
    assert.match(metrics.contentType, /^text\/plain; version=0\.0\.4/);
  });

  void test('Given observed requests, when scraping, then sqs_requests_total counts each label set', async (t) => {
    const { app, metrics } = controlPlane(t);
    metrics.observeRequest('SendMessage', 'json', 200, 0.001);
    metrics.observeRequest('SendMessage', 'json', 200, 0.002);
    metrics.observeRequest('SendMessage', 'query', 400, 0.0005);
    const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.equal(
      sample(text, 'sqs_requests_total', { action: 'SendMessage', protocol: 'json', status: '200' }),
      2,
    );
    assert.equal(
      sample(text, 'sqs_requests_total', { action: 'SendMessage', protocol: 'query', status: '400' }),
      1,
    );
  });

  void test('Given observed durations, when scraping, then the histogram has their count, sum and buckets', async (t) => {
    const { text, labels, bucket } = await durationBuckets(t, 'ReceiveMessage', 'json', [0.00004, 20.01]);
    assert.equal(sample(text, 'sqs_request_duration_seconds_count', labels), 2);
    assert.equal(sample(text, 'sqs_request_duration_seconds_sum', labels), 0.00004 + 20.01);
    assert.deepEqual([bucket('0.00005'), bucket('10'), bucket('25'), bucket('+Inf')], [1, 1, 2, 2]);
  });

  void test('Given a duration equal to a bucket bound, when scraping, then that bucket (le) includes it', async (t) => {
    const { bucket } = await durationBuckets(t, 'SendMessage', 'json', [0.001]);
    assert.deepEqual([bucket('0.0005'), bucket('0.001')], [0, 1]);
  });

  void test('Given a duration above the last bound, when scraping, then only +Inf counts it', async (t) => {
    const { bucket } = await durationBuckets(t, 'ReceiveMessage', 'query', [30]);
    assert.deepEqual([bucket('25'), bucket('+Inf')], [0, 1]);
  });

  void test('Given requests between two scrapes, when scraping twice, then the counter keeps growing', async (t) => {
    const { app, metrics } = controlPlane(t);
    const labels = { action: 'DeleteMessage', protocol: 'json', status: '200' };
    metrics.observeRequest('DeleteMessage', 'json', 200, 0.001);
    const first = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    metrics.observeRequest('DeleteMessage', 'json', 200, 0.001);
    metrics.observeRequest('DeleteMessage', 'json', 200, 0.001);
    const second = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.deepEqual(
      [sample(first, 'sqs_requests_total', labels), sample(second, 'sqs_requests_total', labels)],
      [1, 3],
    );
  });

  void test('Given the histogram, when scraping, then it is declared as a histogram', async (t) => {
    const { app, metrics } = controlPlane(t);
    metrics.observeRequest('SendMessage', 'json', 200, 0.001);
    const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.match(text, /^# TYPE sqs_request_duration_seconds histogram$/m);
    assert.match(text, /^# TYPE sqs_requests_total counter$/m);
  });

  void test('Given a negative duration, when observing, then the request is counted but not timed', async (t) => {
    const { app, metrics } = controlPlane(t);
    metrics.observeRequest('ListQueues', 'query', 200, -1);
    const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.equal(
      sample(text, 'sqs_requests_total', { action: 'ListQueues', protocol: 'query', status: '200' }),
      1,
    );
    assert.equal(
      sample(text, 'sqs_request_duration_seconds_count', { action: 'ListQueues', protocol: 'query' }),
      undefined,
    );
  });

  void test('Given a queue stats provider, when scraping, then each queue has visible, inflight and delayed', async (t) => {
    const { app } = controlPlane(
      t,
      undefined,
      withProviders({ queues: () => [{ queue: 'orders', visible: 3, inflight: 2, delayed: 1 }] }),
    );
    const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.deepEqual(
      ['visible', 'inflight', 'delayed'].map((state) =>
        sample(text, 'sqs_queue_messages', { queue: 'orders', state }),
      ),
      [3, 2, 1],
    );
  });

  void test('Given a queue that was deleted, when scraping again, then its series is gone', async (t) => {
    let queues: QueueStats[] = [{ queue: 'old', visible: 1, inflight: 0, delayed: 0 }];
    const { app } = controlPlane(t, undefined, withProviders({ queues: () => queues }));
    await app.inject({ method: 'GET', url: '/metrics' });
    queues = [];
    const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.equal(sample(text, 'sqs_queue_messages', { queue: 'old', state: 'visible' }), undefined);
  });

  void test('Given queue and tenant names with quotes, backslashes and newlines, when scraping, then the label values are escaped', async () => {
    const metrics = withProviders({
      queues: () => [
        { queue: 'q', tenant: 'a"b\\c\nd', region: 'us-east-1', visible: 4, inflight: 0, delayed: 0 },
      ],
    });
    const text = await metrics.metrics();
    assert.ok(
      text.includes(
        'sqs_queue_messages{queue="q",tenant="a\\"b\\\\c\\nd",region="us-east-1",state="visible"} 4\n',
      ),
      text,
    );
    assert.equal(escapeLabel('plain'), 'plain');
  });

  void test('Given a long-poll waiters provider, when scraping, then sqs_long_poll_waiters is its value', async (t) => {
    const { app } = controlPlane(t, undefined, withProviders({ longPollWaiters: () => 7 }));
    const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.equal(sample(text, 'sqs_long_poll_waiters'), 7);
  });

  void test('Given no long-poll waiters provider, when scraping, then sqs_long_poll_waiters is 0', async (t) => {
    const { app } = controlPlane(t);
    const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.equal(sample(text, 'sqs_long_poll_waiters'), 0);
  });

  void test('Given a provider that throws, when scraping, then 500 without the error text and it is logged', async (t) => {
    const { app, lines } = controlPlane(
      t,
      undefined,
      withProviders({
        queues: () => {
          throw new Error('core exploded');
        },
      }),
    );
    const res = await app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(res.statusCode, 500);
    assert.doesNotMatch(res.body, /core exploded/);
    assert.ok(lines.some((line) => line.includes('core exploded')));
  });

  void test('Given default metrics on, when scraping, then process metrics are included', async (t) => {
    const { app } = controlPlane(t, () => true, new Metrics());
    const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.ok(sample(text, 'process_cpu_user_seconds_total') !== undefined);
  });

  void test('Given two Metrics, when one observes a request, then the other does not count it', async () => {
    const a = new Metrics({ defaultMetrics: false });
    const b = new Metrics({ defaultMetrics: false });
    a.observeRequest('SendMessage', 'json', 200, 0.001);
    const labels = { action: 'SendMessage', protocol: 'json', status: '200' };
    assert.deepEqual(
      [
        sample(await a.metrics(), 'sqs_requests_total', labels),
        sample(await b.metrics(), 'sqs_requests_total', labels),
      ],
      [1, undefined],
    );
  });

  void test('Given more distinct actions than the label cap, when observing, then the excess is counted as _other', async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    for (let i = 0; i < MAX_LABEL_SETS; i++) metrics.observeRequest(`Bogus${i}`, 'query', 400, 0.001);
    metrics.observeRequest('OneTooMany', 'query', 400, 0.001);
    metrics.observeRequest('TwoTooMany', 'query', 400, 0.001);
    const text = await metrics.metrics();
    assert.equal(
      sample(text, 'sqs_requests_total', { action: 'OneTooMany', protocol: 'query', status: '400' }),
      undefined,
    );
    assert.equal(
      sample(text, 'sqs_requests_total', { action: OVERFLOW_ACTION, protocol: 'query', status: '400' }),
      2,
    );
  });
});

void describe('control plane: /metrics families', () => {
  // What dashboards and alerts (docs/grafana-dashboard.json, docs/prometheus-alerts.yml) rely on:
  // each family's type and the label names of its samples.
  const FAMILIES: Record<string, [string, string[]]> = {
    sqs_requests_total: ['counter', ['action', 'protocol', 'status']],
    sqs_request_duration_seconds: ['histogram', ['action', 'protocol', 'le']],
    sqs_long_poll_waiters: ['gauge', []],
    sqs_leader_state: ['gauge', ['state']],
    sqs_leader_epoch: ['gauge', []],
    sqs_leader_takeovers_total: ['counter', []],
    sqs_leader_fenced_writes_total: ['counter', []],
    sqs_leader_renew_failures_total: ['counter', []],
    sqs_loading: ['gauge', []],
    sqs_loading_seconds: ['gauge', []],
    sqs_loading_queues: ['gauge', ['part']],
    sqs_loading_messages: ['gauge', ['part']],
    sqs_loading_bytes: ['gauge', ['part']],
    sqs_migration: ['gauge', []],
    sqs_migration_queues: ['gauge', ['part']],
    sqs_migration_messages: ['gauge', []],
    sqs_shards_down: ['gauge', ['reason']],
    sqs_shard_down: ['gauge', ['shard', 'reason']],
    sqs_memory_budget_bytes: ['gauge', []],
    sqs_memory_used_bytes: ['gauge', []],
    sqs_memory_refusing: ['gauge', []],
    sqs_tenant_memory_used_bytes: ['gauge', ['tenant']],
    sqs_tenant_memory_limit_bytes: ['gauge', ['tenant']],
    sqs_memory_refused_sends_total: ['counter', ['tenant', 'scope']],
    sqs_messages_sent_total: ['counter', ['tenant', 'region', 'queue']],
    sqs_messages_received_total: ['counter', ['tenant', 'region', 'queue']],
    sqs_messages_deleted_total: ['counter', ['tenant', 'region', 'queue']],
    sqs_messages_moved_to_dlq_total: ['counter', ['tenant', 'region', 'queue']],
    sqs_redis_commit_wait_seconds: ['histogram', ['le']],
    sqs_redis_commit_failures_total: ['counter', []],
    sqs_redis_replica_wait_seconds: ['histogram', ['le']],
    sqs_redis_replica_wait_timeouts_total: ['counter', []],
    sqs_queue_messages: ['gauge', ['queue', 'tenant', 'region', 'state']],
    sqs_queue_memory_bytes: ['gauge', ['queue', 'tenant', 'region']],
  };

  let deadLettered = { uid: 'u1', moved: 2 };
  const metrics = withProviders({
    queues: () => [{ queue: 'q', tenant: 't', region: 'r', visible: 1, inflight: 2, delayed: 3, bytes: 40 }],
    longPollWaiters: () => 5,
    leader: () => ({ state: 'loading', epoch: 9, takeovers: 3, fenced: 1, renewFailures: 4 }),
    loading: () => ({
      queues: 1,
      queuesTotal: 2,
      messages: 10,
      messagesTotal: 20,
      bytes: 100,
      bytesTotal: 200,
      seconds: 1.5,
    }),
    migration: () => ({ queues: 3, queuesTotal: 8, messages: 70 }),
    shardsDown: () =>
      new Map<number, 'reloading' | 'refused'>([
        [17, 'reloading'],
        [200, 'refused'],
      ]),
    memory: () => ({
      limit: 1000,
      used: 600,
      refusing: true,
      tenants: [{ tenant: 't', used: 600, limit: 500 }],
    }),
    deadLetters: () => [{ tenant: 't', region: 'r', queue: 'q', ...deadLettered }],
  });
  const messages = new MessageMetrics(metrics);
  metrics.observeRequest('SendMessage', 'json', 200, 0.001);
  metrics.observeRefusedSend('t', 'tenant');
  for (const event of ['sent', 'received', 'deleted'] as const) messages.count(event, 't', 'r', 'q', 2);
  messages.observeCommit(0.002, false);
  messages.observeReplicaWait(0.3, false);

  void test('Given every provider and some traffic, when scraping, then each sqs_ family has its type and labels, and nothing else is there', async () => {
    const text = await metrics.metrics();
    const types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1] ?? '', m[2] ?? '']));
    const labels = new Map<string, Set<string>>();
    for (const s of samples(text)) {
      const family = types.has(s.name) ? s.name : s.name.replace(/_(bucket|sum|count)$/, '');
      const names = labels.get(family) ?? new Set();
      for (const name of Object.keys(s.labels)) names.add(name);
      labels.set(family, names);
    }
    const seen = Object.fromEntries(
      [...types]
        .filter(([name]) => name.startsWith('sqs_'))
        .map(([name, type]) => [name, [type, [...(labels.get(name) ?? [])]]]),
    );
    assert.deepEqual(seen, FAMILIES);
    assert.match(text, /^# HELP sqs_loading_bytes Bytes of message records of the load in progress/m);
  });

  void test('Given every provider, when scraping, then the values are the providers’ and the counters’', async () => {
    const text = await metrics.metrics();
    assert.deepEqual(
      [
        sample(text, 'sqs_queue_messages', { queue: 'q', tenant: 't', region: 'r', state: 'delayed' }),
        sample(text, 'sqs_queue_memory_bytes', { queue: 'q', tenant: 't', region: 'r' }),
        sample(text, 'sqs_long_poll_waiters'),
        sample(text, 'sqs_leader_state', { state: 'loading' }),
        sample(text, 'sqs_leader_state', { state: 'leader' }),
        sample(text, 'sqs_leader_epoch'),
        sample(text, 'sqs_leader_renew_failures_total'),
        sample(text, 'sqs_loading'),
        sample(text, 'sqs_loading_seconds'),
        sample(text, 'sqs_loading_bytes', { part: 'all' }),
        sample(text, 'sqs_memory_refusing'),
        sample(text, 'sqs_tenant_memory_limit_bytes', { tenant: 't' }),
        sample(text, 'sqs_memory_refused_sends_total', { tenant: 't', scope: 'tenant' }),
        sample(text, 'sqs_messages_deleted_total', { tenant: 't', region: 'r', queue: 'q' }),
        sample(text, 'sqs_redis_commit_failures_total'),
        sample(text, 'sqs_redis_commit_wait_seconds_bucket', { le: '0.001' }),
        sample(text, 'sqs_redis_commit_wait_seconds_bucket', { le: '0.0025' }),
        sample(text, 'sqs_redis_replica_wait_seconds_bucket', { le: '+Inf' }),
        sample(text, 'sqs_redis_replica_wait_timeouts_total'),
        sample(text, 'sqs_migration'),
        sample(text, 'sqs_migration_queues', { part: 'done' }),
        sample(text, 'sqs_migration_messages'),
        sample(text, 'sqs_shards_down', { reason: 'reloading' }),
        sample(text, 'sqs_shards_down', { reason: 'refused' }),
        sample(text, 'sqs_shard_down', { shard: '200', reason: 'refused' }),
      ],
      [3, 40, 5, 1, 0, 9, 4, 1, 1.5, 200, 1, 500, 1, 2, 1, 0, 1, 1, 1, 1, 3, 70, 1, 1, 1],
    );
  });

  void test('Given a queue whose dead-letter total restarts (loaded anew), when scraping, then the counter keeps growing', async () => {
    const dlq = { tenant: 't', region: 'r', queue: 'q' };
    const first = sample(await metrics.metrics(), 'sqs_messages_moved_to_dlq_total', dlq) ?? 0;
    deadLettered = { uid: 'u2', moved: 3 };
    assert.equal(sample(await metrics.metrics(), 'sqs_messages_moved_to_dlq_total', dlq), first + 3);
  });
});
