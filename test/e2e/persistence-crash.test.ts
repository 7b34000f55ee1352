/**
 * shared-sqs as users run it (`node dist/main.js --redis-url ...`, built by `npm run build`)
 * against a redis-server this file starts (AOF always), through @aws-sdk/client-sqs:
 * - kill -9 of the server under a producer sending as fast as it can, restart, drain: every
 *   message that got a 200 is received (lost = 0), nothing unexpected;
 * - Redis gone: 503 within 2 s and never a 200; service comes back with Redis.
 */
import assert from 'node:assert/strict';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { startRedis, uniquePrefix, type TestRedis } from '../helpers/redis.js';
import { sqsClient, startServer, type RunningServer } from '../helpers/server.js';
import { testsRequiring } from '../helpers/requires.js';

const { after, before, test } = testsRequiring('redis-server');

let redis: TestRedis;
const servers: RunningServer[] = [];
const clients: SQSClient[] = [];

before(async () => {
  redis = await startRedis({ aof: true });
});

after(async () => {
  for (const c of clients) c.destroy();
  for (const s of servers) await s.stop();
  await redis.stop();
});

async function server(prefix: string): Promise<{ server: RunningServer; sqs: SQSClient }> {
  const s = await startServer({ args: ['--redis-url', redis.url, '--redis-prefix', prefix] });
  servers.push(s);
  const sqs = sqsClient(s.url);
  clients.push(sqs);
  return { server: s, sqs };
}

function statusOf(e: unknown): number | undefined {
  return (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
}

/** Waits (bounded) until GET /ready answers 200: the state is loaded and the instance serves. */
async function ready(s: RunningServer, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(`${s.controlUrl}/ready`, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`/ready not 200 after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Receives and deletes until a receive comes back empty; returns the bodies. */
async function drain(sqs: SQSClient, queueUrl: string): Promise<string[]> {
  const bodies: string[] = [];
  for (;;) {
    const r = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        VisibilityTimeout: 600,
      }),
    );
    const got = r.Messages ?? [];
    if (got.length === 0) return bodies;
    for (const m of got) bodies.push(m.Body ?? '');
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: got.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? '' })),
      }),
    );
  }
}

test('Given a producer sending as fast as it can, when the server is killed -9 at a random moment and restarted, then every acknowledged message is received', async () => {
  const prefix = uniquePrefix();
  const first = await server(prefix);
  await ready(first.server);
  const { QueueUrl } = await first.sqs.send(new CreateQueueCommand({ QueueName: 'crash' }));
  assert.ok(QueueUrl !== undefined);

  // Kill after a random number of acknowledgements, while 16 senders keep requests in flight.
  const killAfter = 200 + Math.floor(Math.random() * 1500);
  const acked = new Set<number>();
  let next = 0;
  let failures = 0;
  let killed = false;
  const sender = async (): Promise<void> => {
    while (!killed) {
      const n = next++;
      try {
        await first.sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: `msg-${n}` }));
        acked.add(n);
        if (acked.size >= killAfter && !killed) {
          killed = true;
          first.server.proc.kill('SIGKILL');
        }
      } catch {
        failures++;
      }
    }
  };
  await Promise.all(Array.from({ length: 16 }, sender));
  await first.server.exited;

  const second = await server(prefix);
  await ready(second.server);
  const url = (await second.sqs.send(new GetQueueUrlCommand({ QueueName: 'crash' }))).QueueUrl;
  assert.ok(url !== undefined);
  const bodies = await drain(second.sqs, url);

  const received = new Map<number, number>();
  const unexpected: string[] = [];
  for (const b of bodies) {
    const m = /^msg-(\d+)$/.exec(b);
    const n = Number(m?.[1]);
    if (m === null || n >= next) unexpected.push(b);
    else received.set(n, (received.get(n) ?? 0) + 1);
  }
  const lost = [...acked].filter((n) => !received.has(n));
  const duplicated = [...received.values()].filter((c) => c > 1).length;
  const recovered = [...received.keys()].filter((n) => !acked.has(n)).length;
  console.log(
    `# sent ${next}, acknowledged ${acked.size}, failed ${failures}, received ${received.size}: ` +
      `lost ${lost.length}, unexpected ${unexpected.length}, duplicated ${duplicated}, recovered ${recovered}`,
  );
  assert.deepEqual(lost, [], 'acknowledged but never received');
  assert.deepEqual(unexpected, [], 'received but never sent');
});

test('Given Redis stops, when a client sends, then it gets a 503 within 2 s and never a 200; when Redis returns, then service resumes with nothing lost', async () => {
  const prefix = uniquePrefix();
  const { server: s, sqs } = await server(prefix);
  await ready(s);
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'outage' }));
  await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'before' }));

  await redis.kill9();
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    const status = await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: `during-${i}` })).then(
      () => 200,
      (e: unknown) => statusOf(e),
    );
    const ms = performance.now() - t0;
    assert.equal(status, 503, `send ${i} during the outage`);
    assert.ok(ms < 2000, `503 after ${Math.round(ms)} ms`);
  }
  const notReady = await fetch(`${s.controlUrl}/ready`);
  assert.equal(notReady.status, 503);
  await notReady.arrayBuffer();

  await redis.restart();
  await ready(s);
  await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'after' }));
  const bodies = await drain(sqs, QueueUrl ?? '');
  assert.deepEqual(bodies.sort(), ['after', 'before']);
});
