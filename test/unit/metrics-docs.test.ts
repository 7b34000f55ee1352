import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { MessageMetrics } from '../../src/http/message-metrics.js';
import { Metrics } from '../../src/http/metrics.js';

const dashboard = readFileSync(new URL('../../docs/grafana-dashboard.json', import.meta.url), 'utf8');
const adminDoc = readFileSync(new URL('../../docs/admin.md', import.meta.url), 'utf8');

async function exposed(): Promise<Set<string>> {
  const metrics = new Metrics();
  new MessageMetrics(metrics);
  // Every metric of a scrape: the sqs_* families and prom-client's process_* and nodejs_*.
  return new Set([...(await metrics.metrics()).matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1] ?? ''));
}

test('Given the sample Grafana dashboard, when its queries are read, then every metric they name is one the server exposes', async () => {
  const names = await exposed();
  const exprs = [...dashboard.matchAll(/"expr": "((?:[^"\\]|\\.)*)"/g)].map((m) => m[1] ?? '');
  assert.ok(exprs.length >= 10);
  for (const expr of exprs) {
    for (const [word] of expr.matchAll(/\b(?:sqs|process)_[a-z_]+/g)) {
      const base = word.replace(/_(bucket|sum|count)$/, '');
      assert.ok(
        names.has(base) || names.has(word),
        `the dashboard queries ${word}, which /metrics does not have`,
      );
    }
  }
});

test('Given docs/admin.md, when its metrics table is read, then every sqs_ metric of the server is documented', async () => {
  for (const name of await exposed()) {
    if (!name.startsWith('sqs_')) continue;
    assert.ok(adminDoc.includes(name), `docs/admin.md does not mention ${name}`);
  }
});
