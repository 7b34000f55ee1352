/**
 * The memory budget end to end (docs/faults.md row 17, memory only): `--max-memory 64mb`, a producer floods 256 KiB messages.
 * Sends are refused with RequestThrottled (403) before usage passes the budget, RSS stays under the
 * budget plus what the process held before, receive and delete work throughout, sends resume once
 * usage is under the low-water mark; the SDK v3 (JSON) and Debian's boto3 1.26 (Query, botocore's
 * standard and legacy retry modes) retry the refusal with their default settings and succeed once
 * a consumer drained the queue.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  PurgeQueueCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { expectSdkError } from '../support/assertions.js';
import { boto3Calls } from '../support/boto3.js';
import { metricValue } from '../support/prometheus.js';
import { requires } from '../support/requires.js';
import { DEBIAN_PYTHON, sqsClient, startServer, uniqueName, type RunningServer } from '../support/server.js';

const MIB = 1024 ** 2;
const BUDGET = 64 * MIB;
const HEAP_MIB = 128;
const BODY = 'b'.repeat(256 * 1024);
const THROTTLED = { name: 'RequestThrottled', code: 'RequestThrottled', status: 403 };

let server: RunningServer;
let sqs: SQSClient;
/** RSS of the idle process before any flood: its base. */
let baseRss: number;

async function scrape(): Promise<string> {
  const res = await fetch(`${server.controlUrl}/metrics`);
  assert.equal(res.status, 200);
  return res.text();
}

async function memory(): Promise<{ used: number; budget: number; refusing: boolean; rss: number }> {
  const text = await scrape();
  return {
    used: metricValue(text, 'sqs_memory_used_bytes', {}),
    budget: metricValue(text, 'sqs_memory_budget_bytes', {}),
    refusing: metricValue(text, 'sqs_memory_refusing', {}) === 1,
    rss: metricValue(text, 'process_resident_memory_bytes', {}),
  };
}

async function newQueue(prefix: string): Promise<string> {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: uniqueName(prefix) }));
  assert.ok(QueueUrl);
  return QueueUrl;
}

/**
 * Sends batches of three 256 KiB messages until one is refused; checks after each batch that
 * usage is within the budget. Returns the bytes of bodies accepted.
 */
async function fillUntilRefused(queueUrl: string): Promise<number> {
  let accepted = 0;
  for (let i = 0; ; i++) {
    assert.ok(i < 200, 'never refused: 150 MiB sent to a 64 MiB budget');
    try {
      const r = await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: [0, 1, 2].map((n) => ({ Id: `e${n}`, MessageBody: BODY })),
        }),
      );
      // A batch is refused whole, never in part.
      assert.equal(r.Failed?.length ?? 0, 0);
      accepted += 3 * BODY.length;
    } catch (e) {
      assert.equal((e as { name?: string }).name, 'RequestThrottled', String(e));
      assert.equal((e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode, 403);
      return accepted;
    }
    if (i % 10 === 0) {
      const m = await memory();
      assert.ok(m.used <= m.budget, `usage ${m.used} passed the budget ${m.budget}`);
    }
  }
}

/** Receives and deletes up to 10 messages; returns how many. */
async function consume(queueUrl: string): Promise<number> {
  const r = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10 }));
  const messages = r.Messages ?? [];
  if (messages.length === 0) return 0;
  const d = await sqs.send(
    new DeleteMessageBatchCommand({
      QueueUrl: queueUrl,
      Entries: messages.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle })),
    }),
  );
  assert.equal(d.Failed?.length ?? 0, 0);
  return messages.length;
}

/** After a test: its queue emptied (a purge unless the test purged it), so the next starts below the budget. */
async function drained(queueUrl: string): Promise<void> {
  if (!(await memory()).refusing) return;
  await sqs.send(new PurgeQueueCommand({ QueueUrl: queueUrl }));
}

before(async () => {
  // The heap an operator following docs/operations.md gives a 64 MiB budget: twice the budget.
  server = await startServer({
    args: ['--max-memory', '64mb'],
    env: { NODE_OPTIONS: `--max-old-space-size=${HEAP_MIB}` },
  });
  sqs = sqsClient(server.url);
  baseRss = (await memory()).rss;
});
after(async () => {
  sqs.destroy();
  await server.stop();
});

void describe('--max-memory 64mb, a producer flooding 256 KiB messages (JSON, SDK v3 without retries)', () => {
  test('Given the flood, when the budget is reached, then sends are refused before usage passes it, and the metrics say so', async (t) => {
    const m0 = await memory();
    assert.equal(m0.budget, BUDGET);
    assert.equal(m0.refusing, false);
    const queueUrl = await newQueue('flood');
    t.after(() => sqs.send(new PurgeQueueCommand({ QueueUrl: queueUrl })).then(() => undefined));
    const accepted = await fillUntilRefused(queueUrl);
    const m = await memory();
    assert.ok(m.used <= BUDGET, `usage ${m.used} passed the budget`);
    // Refused near the budget, not long before: the last batch (768 KiB) did not fit.
    assert.ok(accepted > BUDGET - 2 * MIB, `refused after only ${accepted} bytes`);
    assert.ok(m.refusing);
    // What is not stored is garbage V8 collects as the heap nears its limit: RSS stays under the
    // idle process's plus that heap (twice the budget), and the process lives on.
    assert.ok(m.rss < baseRss + HEAP_MIB * MIB, `RSS ${m.rss} over base ${baseRss} + ${HEAP_MIB} MiB`);
    assert.ok(server.alive());
    const text = await scrape();
    assert.ok(metricValue(text, 'sqs_memory_refused_sends_total', { scope: 'server' }) >= 1);
    assert.ok(metricValue(text, 'sqs_queue_memory_bytes', {}) > 0);

    // Refusing: receive and delete still work, and one delete does not let sends in again.
    assert.equal(await consume(queueUrl), 10);
    await expectSdkError(
      sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'x' })),
      THROTTLED,
    );

    // Drained under the low-water mark (90 %): sends are taken again.
    while ((await memory()).refusing)
      assert.ok((await consume(queueUrl)) > 0, 'queue empty but still refusing');
    const after = await memory();
    assert.ok(after.used <= 0.9 * BUDGET);
    const r = await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: BODY }));
    assert.ok(r.MessageId);
  });

  test('Given a full budget, when a SendMessage of the SDK v3 with its default retries is refused once and a consumer drains, then the retry succeeds', async (t) => {
    const queueUrl = await newQueue('sdk-retry');
    t.after(() => drained(queueUrl));
    await fillUntilRefused(queueUrl);
    // Default retry settings: only the endpoint and credentials are given.
    const retrying = new SQSClient({
      region: 'us-east-1',
      endpoint: server.url,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
    const refusals: string[] = [];
    // Inside the retry loop (after the retry middleware): sees each attempt's error before the SDK
    // decides to retry it, and drains the queue as a consumer would, once.
    retrying.middlewareStack.add(
      (next) => async (args) => {
        try {
          return await next(args);
        } catch (e) {
          refusals.push((e as Error).name);
          if (refusals.length === 1) await sqs.send(new PurgeQueueCommand({ QueueUrl: queueUrl }));
          throw e;
        }
      },
      { step: 'finalizeRequest', priority: 'low', name: 'drainOnRefusal' },
    );
    try {
      const r = await retrying.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: BODY }));
      assert.ok(r.MessageId);
      assert.deepEqual(refusals, ['RequestThrottled']);
      assert.equal(r.$metadata.attempts, 2);
    } finally {
      retrying.destroy();
    }
  });
});

void describe(
  '--max-memory 64mb: Debian boto3 1.26 (Query) retries RequestThrottled by default',
  requires('boto3'),
  () => {
    for (const mode of ['standard', 'legacy'] as const) {
      test(`Given a full budget, when boto3 (${mode} retry mode, its defaults) sends, is refused and a consumer drains, then the retry succeeds`, async (t) => {
        const queueUrl = await newQueue(`boto3-${mode}`);
        t.after(() => drained(queueUrl));
        await fillUntilRefused(queueUrl);
        const run = await boto3Calls(
          server.url,
          [{ op: 'send_message', params: { QueueUrl: queueUrl, MessageBody: BODY } }],
          DEBIAN_PYTHON,
          { retryMode: mode, onThrottled: [{ op: 'purge_queue', params: { QueueUrl: queueUrl } }] },
        );
        assert.equal(run.protocol, 'query');
        const [sent] = run.results;
        assert.ok(sent?.ok, JSON.stringify(sent));
        assert.equal(sent.attempts, 2);
        assert.equal(run.onThrottledResults?.[0]?.ok, true, JSON.stringify(run.onThrottledResults));
      });
    }
  },
);
