/**
 * `Metrics.families()` (src/http/metrics.ts): the scrape as prom-client's JSON, which a --workers
 * primary sums over its workers with `AggregatorRegistry.aggregate` (src/wiring/workers.ts).
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import type * as PromClient from 'prom-client';
import { Metrics, NOT_SUMMED } from '../../src/http/metrics.js';
import { samples, type Sample } from '../support/prometheus.js';

const { AggregatorRegistry } = createRequire(import.meta.url)('prom-client') as typeof PromClient;

function worker(): Metrics {
  const metrics = new Metrics({
    defaultMetrics: false,
    providers: {
      // A name no SQS queue may have, to see every escape survive the round trip.
      queues: () => [{ queue: 'q "1" \\ \n', tenant: 't', region: 'r', visible: 3, inflight: 1, delayed: 0 }],
      longPollWaiters: () => 2,
      loading: () => ({
        queues: 1,
        queuesTotal: 2,
        messages: 3,
        messagesTotal: 4,
        bytes: 5,
        bytesTotal: 6,
        seconds: 7,
      }),
    },
  });
  metrics.observeRequest('SendMessage', 'json', 200, 0.003);
  metrics.observeRequest('SendMessage', 'json', 200, 30);
  metrics.observeRequest('ReceiveMessage', 'query', 400, 0.0001);
  return metrics;
}

const key = (s: Sample): string => `${s.name}${JSON.stringify(Object.entries(s.labels).sort())}`;

void test('Given two workers, when their families are aggregated, then each sqs_* sample is the sum, under the same name and labels', async () => {
  const one = worker();
  const text = await one.metrics();
  const families = [await one.families(), await worker().families()];
  const summed = await AggregatorRegistry.aggregate(families).metrics();

  // The same clock-time or epoch on every worker is shown once, not summed.
  const expected = new Map(
    [...samples(text)].map((s) => [key(s), NOT_SUMMED[s.name] === 'max' ? s.value : s.value * 2]),
  );
  const got = new Map([...samples(summed)].map((s) => [key(s), s.value]));
  assert.ok(expected.size > 50, `a full scrape (${expected.size} samples)`);
  assert.deepEqual(got, expected);
  assert.match(
    summed,
    /^sqs_queue_messages\{queue="q \\"1\\" \\\\ \\n",tenant="t",region="r",state="visible"\} 6$/m,
  );
  assert.match(summed, /^# TYPE sqs_request_duration_seconds histogram$/m);
  assert.match(summed, /^sqs_loading_seconds 7$/m);
  assert.match(summed, /^sqs_loading_messages\{part="all"\} 8$/m);
  assert.match(
    summed,
    /^sqs_request_duration_seconds_bucket\{action="SendMessage",protocol="json",le="\+Inf"\} 4$/m,
  );
});
