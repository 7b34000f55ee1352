/**
 * `--workers 2` as users run it (`node dist/main.js --workers 2 --active-active ...`, built by
 * `npm run build`) on a redis-server this file starts, through @aws-sdk/client-sqs (JSON):
 * - SQS calls on the one data port reach both workers, and the queues' shards are served by both;
 * - /metrics on the primary's control port is one text: each series the sum of the workers' own;
 * - kill -9 of a worker: the primary logs it and starts another, and every message acknowledged
 *   before the kill is received afterwards;
 * - SIGTERM to the primary: every process exits 0, and a new start receives everything
 *   acknowledged before it.
 */
import assert from 'node:assert/strict';
import { CreateQueueCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { samples } from '../support/prometheus.js';
import { freePort } from '../support/process.js';
import { startRedis, uniquePrefix, type TestRedis } from '../support/redis.js';
import { testsRequiring } from '../support/requires.js';
import { startServer, type RunningServer } from '../support/server.js';
import { drain } from '../support/sqs.js';

const { after, before, test } = testsRequiring('redis-server');

const QUEUES = Array.from({ length: 16 }, (_, i) => `workers-${i}`);

let redis: TestRedis;
const prefix = uniquePrefix();
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis.stop();
});

async function startWorkers(): Promise<RunningServer> {
  const server = await startServer({
    args: [
      ...['--workers', '2', '--active-active', '--redis-addr', `127.0.0.1:${redis.port}`],
      ...['--redis-prefix', prefix, '--internal-port', String(await freePort())],
      ...['--leader-ttl', '2s', '--leader-interval', '500ms', '--log-level', 'info'],
    ],
  });
  await until(async () => (await readiness(server)).workersReady === 2, 30_000, 'both workers ready');
  return server;
}

/** The SDK, retrying: a connection to a worker just killed fails once, as with any dead server. */
function client(server: RunningServer): SQSClient {
  return new SQSClient({
    region: 'us-east-1',
    endpoint: server.url,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts: 5,
  });
}

interface LogLine {
  readonly msg?: string;
  readonly worker?: number;
  readonly workerPid?: number;
  readonly controlUrl?: string;
  readonly code?: number | null;
  readonly signal?: string | null;
  readonly restartInMs?: number;
}

function logLines(server: RunningServer): LogLine[] {
  return server
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

/** Each worker's latest pid and private control plane, from the primary's log. */
function workers(server: RunningServer): Map<number, { pid: number; controlUrl: string }> {
  const found = new Map<number, { pid: number; controlUrl: string }>();
  for (const l of logLines(server)) {
    if (l.msg === 'worker listening' && l.worker !== undefined && l.workerPid !== undefined)
      found.set(l.worker, { pid: l.workerPid, controlUrl: l.controlUrl ?? '' });
  }
  return found;
}

async function readiness(server: RunningServer): Promise<{ ready?: boolean; workersReady?: number }> {
  const res = await fetch(`${server.controlUrl}/ready`);
  return (await res.json()) as { ready?: boolean; workersReady?: number };
}

async function scrape(controlUrl: string): Promise<string> {
  const res = await fetch(`${controlUrl}/metrics`);
  assert.equal(res.status, 200);
  return res.text();
}

/** The sum of a metric's samples whose labels include `labels`. */
function total(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const s of samples(text)) {
    if (s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) sum += s.value;
  }
  return sum;
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Sends `count` messages to every queue, 16 at a time; resolves with the bodies acknowledged. */
async function sendAll(
  sqs: SQSClient,
  urls: readonly string[],
  tag: string,
  count: number,
): Promise<string[]> {
  const bodies = urls.flatMap((url) =>
    Array.from({ length: count }, (_, i) => ({ url, body: `${tag}-${url}-${i}` })),
  );
  const acked: string[] = [];
  for (let i = 0; i < bodies.length; i += 16) {
    await Promise.all(
      bodies.slice(i, i + 16).map(async ({ url, body }) => {
        await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: body }));
        acked.push(body);
      }),
    );
  }
  return acked;
}

async function drainAll(sqs: SQSClient, urls: readonly string[]): Promise<string[]> {
  return (await Promise.all(urls.map((url) => drain(sqs, url)))).flat();
}

test('Given --workers 2, when SQS calls arrive on the data port, then both workers answer and the primary sums their metrics', async () => {
  const server = await startWorkers();
  try {
    const sqs = client(server);
    const urls = await Promise.all(
      QUEUES.map(async (QueueName) => (await sqs.send(new CreateQueueCommand({ QueueName }))).QueueUrl ?? ''),
    );
    await sendAll(sqs, urls, 'one', 1);

    const own = [...workers(server).values()];
    assert.equal(own.length, 2, 'two workers listening');
    const texts = await Promise.all(own.map((w) => scrape(w.controlUrl)));
    for (const [i, text] of texts.entries()) {
      // Connections are handed out in turn: each worker answered some of the concurrent calls.
      assert.ok(total(text, 'sqs_requests_total') > 0, `worker ${i} answered SQS calls`);
      // Each worker owns some of the 16 queues (their messages are counted where they are kept).
      assert.ok(
        total(text, 'sqs_queue_messages', { state: 'visible' }) > 0,
        `worker ${i} holds some of the queues`,
      );
    }

    const summed = await scrape(server.controlUrl);
    assert.equal(summed.match(/^# TYPE sqs_requests_total counter$/gm)?.length, 1, 'one family');
    assert.equal(
      total(summed, 'sqs_requests_total'),
      total(texts[0] ?? '', 'sqs_requests_total') + total(texts[1] ?? '', 'sqs_requests_total'),
    );
    assert.equal(
      total(summed, 'sqs_requests_total', { action: 'SendMessage', status: '200' }),
      QUEUES.length,
    );
    assert.equal(total(summed, 'sqs_queue_messages', { state: 'visible' }), QUEUES.length);
    assert.equal(
      total(summed, 'sqs_request_duration_seconds_count', { action: 'SendMessage' }),
      QUEUES.length,
    );
    // prom-client's own aggregators stand: a version is not summed.
    assert.equal(total(summed, 'nodejs_version_info'), 1);

    // /admin goes to a worker's control plane (closed without a token, as any instance's is).
    const admin = await fetch(`${server.controlUrl}/admin/queues`);
    assert.equal(admin.status, 403);
    assert.match(await admin.text(), /AdminDisabled/);
    assert.deepEqual(await drainAll(sqs, urls).then((b) => b.length), QUEUES.length);
    sqs.destroy();
  } finally {
    await server.stop();
  }
});

test('Given --workers 2, when a worker is killed with -9 (twice), then the primary restarts it after a growing pause and nothing acknowledged is lost', async () => {
  const server = await startWorkers();
  try {
    const sqs = client(server);
    const urls = await Promise.all(
      QUEUES.map(async (QueueName) => (await sqs.send(new CreateQueueCommand({ QueueName }))).QueueUrl ?? ''),
    );
    const acked = await sendAll(sqs, urls, 'kill', 10);
    // Killed twice within its first 10 s: each restart waits, the second twice as long (no spin).
    for (const pause of [500, 1000]) {
      const victim = workers(server).get(0);
      assert.ok(victim !== undefined);
      process.kill(victim.pid, 'SIGKILL');
      await until(
        () => Promise.resolve((workers(server).get(0)?.pid ?? victim.pid) !== victim.pid),
        30_000,
        'worker 0 started again',
      );
      const death = logLines(server).find(
        (l) => l.msg?.startsWith('worker died') === true && l.workerPid === victim.pid,
      );
      assert.deepEqual(
        [death?.worker, death?.signal, death?.restartInMs],
        [0, 'SIGKILL', pause],
        'the death logged with its signal and the pause before the restart',
      );
    }
    assert.equal(logLines(server).filter((l) => l.msg?.startsWith('worker died') === true).length, 2);

    // A fresh client: the old one's sockets to the dead worker are gone.
    sqs.destroy();
    const after = client(server);
    const received = await drainAll(after, urls);
    assert.deepEqual(received.sort(), [...acked].sort(), 'lost = 0, nothing unexpected');
    after.destroy();
  } finally {
    await server.stop();
  }
});

test('Given --workers 2, when the primary gets SIGTERM, then every process exits 0 and a new start receives everything acknowledged', async () => {
  const first = await startWorkers();
  const sqs = client(first);
  const urls = await Promise.all(
    QUEUES.map(async (QueueName) => (await sqs.send(new CreateQueueCommand({ QueueName }))).QueueUrl ?? ''),
  );
  const acked = await sendAll(sqs, urls, 'term', 10);
  sqs.destroy();
  const pids = [...workers(first).values()].map((w) => w.pid);
  first.proc.kill('SIGTERM');
  const status = await first.exited;
  assert.deepEqual(status, { code: 0, signal: null }, first.logs().slice(-3000));
  const stopped = logLines(first).filter((l) => l.msg === 'worker stopped');
  assert.deepEqual(stopped.map((l) => [l.workerPid, l.code]).sort(), pids.map((pid) => [pid, 0]).sort());
  for (const pid of pids) assert.throws(() => process.kill(pid, 0), /ESRCH/, `worker ${pid} is gone`);

  const second = await startWorkers();
  try {
    const again = client(second);
    const received = await drainAll(
      again,
      urls.map((u) => u.replace(first.url, second.url)),
    );
    assert.deepEqual(received.sort(), [...acked].sort(), 'lost = 0, nothing unexpected');
    again.destroy();
  } finally {
    await second.stop();
  }
});
