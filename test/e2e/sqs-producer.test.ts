/**
 * sqs-producer 8 (the npm library paired with sqs-consumer) against shared-sqs, with sqs-consumer 15
 * at the other end; both on @aws-sdk/client-sqs, so the JSON 1.0 protocol.
 *
 * The SQS clients here are configured as docs/clients.md tells users to: the endpoint from
 * AWS_ENDPOINT_URL_SQS in the environment, nothing in code but `useQueueUrlAsEndpoint: false`.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CreateQueueCommand, SQSClient, type Message, type MessageAttributeValue } from '@aws-sdk/client-sqs';
import { Consumer } from 'sqs-consumer';
import { Producer } from 'sqs-producer';
import { md5OfAttributes } from '../support/md5.js';
import { startServer, uniqueName, type RunningServer } from '../support/server.js';

const DEADLINE_MS = 15_000;

let server: RunningServer;
const clients: SQSClient[] = [];

before(async () => {
  server = await startServer();
  // This test process's own environment, as an application's would be.
  Object.assign(process.env, {
    AWS_ENDPOINT_URL_SQS: server.url,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_CONFIG_FILE: '/dev/null',
    AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
  });
});

after(async () => {
  for (const c of clients) c.destroy();
  await server?.stop();
});

function envClient(): SQSClient {
  // docs/clients.md quotes this block.
  // --- sdk-v3 ---
  // AWS_ENDPOINT_URL_SQS=http://127.0.0.1:4100, AWS_REGION and credentials come from the environment.
  const sqs = new SQSClient({ useQueueUrlAsEndpoint: false });
  // --- end sdk-v3 ---
  clients.push(sqs);
  return sqs;
}

async function createQueue(
  sqs: SQSClient,
  name: string,
  attributes?: Record<string, string>,
): Promise<string> {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  assert.ok(QueueUrl);
  return QueueUrl;
}

/** Runs a consumer on `queueUrl` until it has processed `n` messages; returns them in order. */
async function consume(sqs: SQSClient, queueUrl: string, n: number): Promise<Message[]> {
  const got: Message[] = [];
  const errors: Error[] = [];
  const consumer = Consumer.create({
    sqs,
    queueUrl,
    waitTimeSeconds: 1,
    batchSize: 10,
    messageAttributeNames: ['All'],
    suppressFifoWarning: true,
    handleMessage: (m) => {
      got.push(m);
      return Promise.resolve(m);
    },
  });
  consumer.on('error', (e) => errors.push(e));
  consumer.on('processing_error', (e) => errors.push(e));
  const stopped = new Promise<void>((resolve) => consumer.once('stopped', () => resolve()));
  consumer.start();
  const deadline = Date.now() + DEADLINE_MS;
  while (got.length < n && errors.length === 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  consumer.stop();
  await stopped;
  assert.deepEqual(errors, [], 'no consumer errors');
  assert.equal(got.length, n, `processed ${got.length} of ${n} within ${DEADLINE_MS} ms`);
  return got;
}

test('sqs-producer sends 25 messages with attributes in batches; queueSize counts them; sqs-consumer gets each once', async () => {
  const sqs = envClient();
  const queueUrl = await createQueue(sqs, uniqueName('producer'));
  const producer = Producer.create({ sqs, queueUrl, batchSize: 10 });
  const attributes: Record<string, MessageAttributeValue> = {
    source: { DataType: 'String', StringValue: 'sqs-producer' },
    n: { DataType: 'Number', StringValue: '7' },
  };
  const messages = Array.from({ length: 25 }, (_, i) => ({
    id: `m${i}`,
    body: `body-${i}`,
    messageAttributes: attributes,
  }));
  const sent = await producer.send(messages);
  assert.equal(sent.length, 25, 'one result entry per message');
  assert.ok(
    sent.every((e) => e.MD5OfMessageAttributes === md5OfAttributes(attributes)),
    'MD5OfMessageAttributes as documented',
  );
  assert.equal(await producer.queueSize(), 25);

  const got = await consume(sqs, queueUrl, 25);
  assert.deepEqual(got.map((m) => m.Body).sort(), messages.map((m) => m.body).sort());
  for (const m of got) assert.deepEqual(m.MessageAttributes, attributes);
  assert.equal(await producer.queueSize(), 0, 'all deleted');
});

test('sqs-producer on a FIFO queue: a repeated deduplication id is dropped, and each group comes in order', async () => {
  const sqs = envClient();
  const queueUrl = await createQueue(sqs, `${uniqueName('producer')}.fifo`, { FifoQueue: 'true' });
  const producer = Producer.create({ sqs, queueUrl });
  await producer.send([
    { id: 'a1', body: 'a1', groupId: 'a', deduplicationId: 'a1' },
    { id: 'b1', body: 'b1', groupId: 'b', deduplicationId: 'b1' },
    { id: 'a2', body: 'a2', groupId: 'a', deduplicationId: 'a2' },
    { id: 'again', body: 'a1 again', groupId: 'a', deduplicationId: 'a1' },
    { id: 'b2', body: 'b2', groupId: 'b', deduplicationId: 'b2' },
  ]);
  const got = await consume(sqs, queueUrl, 4);
  const bodies = (group: string): string[] =>
    got.map((m) => String(m.Body)).filter((body) => body.startsWith(group));
  assert.deepEqual(bodies('a'), ['a1', 'a2'], 'group a in order, the duplicate dropped');
  assert.deepEqual(bodies('b'), ['b1', 'b2'], 'group b in order');
});

test('useQueueUrlAsEndpoint: false sends to AWS_ENDPOINT_URL_SQS whatever host the queue URL names; without it the SDK goes to that host', async () => {
  const sqs = envClient();
  const realUrl = await createQueue(sqs, uniqueName('producer'));
  // A queue URL as a server behind a proxy or in a container may hand out: a host the client cannot reach.
  const unreachable = realUrl.replace(server.url, 'http://127.0.0.1:1');

  // A string is both the body and the batch entry Id, so it must be a valid Id (AWS: [A-Za-z0-9_-]{1,80}).
  await Producer.create({ sqs, queueUrl: unreachable }).send('through-the-endpoint');
  assert.equal(await Producer.create({ sqs, queueUrl: realUrl }).queueSize(), 1);

  const byQueueUrl = new SQSClient({
    maxAttempts: 1,
    logger: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
  });
  clients.push(byQueueUrl);
  await assert.rejects(
    Producer.create({ sqs: byQueueUrl, queueUrl: unreachable }).send('to-port-1'),
    /ECONNREFUSED/,
  );
});
