/**
 * sqs-consumer (v15, the npm library many Node services poll SQS with) against shared-sqs. It talks
 * through @aws-sdk/client-sqs, so this is the JSON 1.0 protocol (`X-Amz-Target: AmazonSQS.*`); the
 * queues and messages are set up through @aws-sdk/client-sqs too.
 *
 * Every consumer gets its own client with a middleware that records each command sqs-consumer
 * sends and what came back, so the tests can check which calls the library made (DeleteMessage
 * or DeleteMessageBatch, ChangeMessageVisibility) besides what the handlers saw. Nothing sleeps:
 * the tests wait for consumer events or conditions, each with a deadline.
 */
import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  type Message,
  type MessageAttributeValue,
} from '@aws-sdk/client-sqs';
import { Consumer, type ConsumerOptions } from 'sqs-consumer';
import { md5OfAttributes } from '../support/md5.js';
import { longPollWaiters, sqsClient, uniqueName, waitForLongPollWaiters } from '../support/server.js';
import { sharedServer } from '../support/sqs.js';

const DEADLINE_MS = 15_000;

const shared = sharedServer();

// ---------------------------------------------------------------------------------------------
// Consumers, and what they sent
// ---------------------------------------------------------------------------------------------

interface Call {
  readonly command: string;
  readonly input: Record<string, unknown>;
  /** Set once the reply came (undefined while in flight, or when the call failed). */
  output?: Record<string, unknown>;
  error?: unknown;
  /** Whether the consumer had been stopped when this call was sent. */
  readonly afterStop: boolean;
}

interface Harness {
  readonly consumer: Consumer;
  /** Every command the consumer sent, in order. */
  readonly calls: Call[];
  /** 'error', 'processing_error' and 'timeout_error' events. */
  readonly errors: Error[];
  /** Names of every event the consumer emitted, in order. */
  readonly events: string[];
  readonly processed: Message[];
  /** Stops the consumer (if running) and waits for 'stopped', bounded. */
  stop(options?: { abort?: boolean }): Promise<void>;
}

const running: Harness[] = [];

afterEach(async () => {
  const harnesses = running.splice(0);
  await Promise.all(harnesses.map((h) => h.stop()));
});

const WATCHED_EVENTS = [
  'started',
  'stopped',
  'empty',
  'message_received',
  'message_processed',
  'response_processed',
  'error',
  'processing_error',
  'timeout_error',
  'aborted',
  'waiting_for_polling_to_complete',
  'waiting_for_polling_to_complete_timeout_exceeded',
] as const;

/**
 * A Consumer on `queueUrl` with its own SQS client (JSON protocol), short long polls, and every call
 * and event recorded. Started by the caller; stopped by the caller or, at the latest, by afterEach.
 */
function makeConsumer(options: Omit<ConsumerOptions, 'sqs' | 'region'>): Harness {
  const sqs = sqsClient(shared.server.url);
  const calls: Call[] = [];
  const errors: Error[] = [];
  const events: string[] = [];
  const processed: Message[] = [];
  let stopCalled = false;

  sqs.middlewareStack.add(
    (next, context) => async (args) => {
      const call: Call = {
        command: String(context.commandName),
        input: { ...(args.input as Record<string, unknown>) },
        afterStop: stopCalled,
      };
      calls.push(call);
      try {
        const result = await next(args);
        call.output = result.output as unknown as Record<string, unknown>;
        return result;
      } catch (e) {
        call.error = e;
        throw e;
      }
    },
    { step: 'initialize', name: 'recordSqsConsumerCalls' },
  );

  const consumer = Consumer.create({
    waitTimeSeconds: 1,
    pollingWaitTimeMs: 10,
    // stop() waits for the poll in flight (and the messages it brought) before 'stopped'.
    pollingCompleteWaitTimeMs: 10_000,
    ...options,
    sqs,
  });
  for (const name of WATCHED_EVENTS) consumer.on(name, () => events.push(name));
  consumer.on('error', (err) => errors.push(err));
  consumer.on('processing_error', (err) => errors.push(err));
  consumer.on('timeout_error', (err) => errors.push(err));
  consumer.on('message_processed', (m) => processed.push(m));

  let stopping: Promise<void> | undefined;
  const harness: Harness = {
    consumer,
    calls,
    errors,
    events,
    processed,
    stop(stopOptions) {
      stopping ??= (async () => {
        if (!consumer.status.isRunning) {
          sqs.destroy();
          return;
        }
        // 'stopped' can be emitted inside stop() itself: listen first. (Not events.once: it
        // rejects on the 'error' event, which an aborted poll emits.)
        let timer: NodeJS.Timeout | undefined;
        const stopped = new Promise<void>((resolve, reject) => {
          consumer.once('stopped', () => resolve());
          timer = setTimeout(
            () => reject(new Error(`consumer did not emit 'stopped' within ${DEADLINE_MS} ms`)),
            DEADLINE_MS,
          );
        });
        stopCalled = true;
        consumer.stop(stopOptions);
        try {
          await stopped;
        } finally {
          clearTimeout(timer);
          sqs.destroy();
        }
      })();
      return stopping;
    },
  };
  running.push(harness);
  return harness;
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

async function createQueue(prefix: string): Promise<string> {
  const out = await shared.client.send(new CreateQueueCommand({ QueueName: uniqueName(prefix) }));
  assert.ok(out.QueueUrl, 'CreateQueue returned a QueueUrl');
  return out.QueueUrl;
}

async function sendBodies(queueUrl: string, bodies: readonly string[]): Promise<void> {
  for (let i = 0; i < bodies.length; i += 10) {
    const chunk = bodies.slice(i, i + 10);
    const out = await shared.client.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: chunk.map((body, j) => ({ Id: `m${i + j}`, MessageBody: body })),
      }),
    );
    assert.equal(out.Successful?.length, chunk.length, `SendMessageBatch: ${JSON.stringify(out.Failed)}`);
  }
}

async function counts(queueUrl: string): Promise<{ visible: string; notVisible: string }> {
  const out = await shared.client.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return {
    visible: String(out.Attributes?.ApproximateNumberOfMessages),
    notVisible: String(out.Attributes?.ApproximateNumberOfMessagesNotVisible),
  };
}

/** Resolves once `condition()` holds; checks every 20 ms and fails after `timeoutMs`. */
async function waitFor(
  what: string,
  condition: () => boolean | Promise<boolean>,
  timeoutMs = DEADLINE_MS,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function numberedBodies(prefix: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(3, '0')}`);
}

/** How many times each body was seen, as sorted [body, times] pairs. */
function tally(bodies: readonly (string | undefined)[]): [string, number][] {
  const seen = new Map<string, number>();
  for (const b of bodies) seen.set(String(b), (seen.get(String(b)) ?? 0) + 1);
  return [...seen].sort(([a], [b]) => a.localeCompare(b));
}

function callsOf(h: Harness, command: string): Call[] {
  return h.calls.filter((c) => c.command === command);
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

test('handleMessage: each of 20 messages is handled exactly once and deleted, leaving the queue empty', async () => {
  const queueUrl = await createQueue('consumer-single');
  const bodies = numberedBodies('single', 20);
  await sendBodies(queueUrl, bodies);

  const handled: string[] = [];
  const h = makeConsumer({
    queueUrl,
    handleMessage: (message) => {
      handled.push(String(message.Body));
      return Promise.resolve(message);
    },
  });
  h.consumer.start();
  await waitFor('20 processed messages', () => h.processed.length >= bodies.length);
  await h.stop();

  assert.deepEqual(tally(handled), tally(bodies), 'every body handled, each exactly once');
  assert.deepEqual(h.errors, [], 'no error events');
  const deletes = callsOf(h, 'DeleteMessageCommand');
  assert.equal(deletes.length, bodies.length, 'one DeleteMessage per message');
  assert.ok(
    deletes.every((c) => c.output !== undefined),
    'every DeleteMessage succeeded',
  );
  assert.deepEqual(await counts(queueUrl), { visible: '0', notVisible: '0' }, 'queue empty afterwards');
});

test('handleMessageBatch (batchSize 10): all 25 messages arrive once and are deleted with DeleteMessageBatch', async () => {
  const queueUrl = await createQueue('consumer-batch');
  const bodies = numberedBodies('batch', 25);
  await sendBodies(queueUrl, bodies);

  const batches: string[][] = [];
  const h = makeConsumer({
    queueUrl,
    batchSize: 10,
    handleMessageBatch: (messages) => {
      batches.push(messages.map((m) => String(m.Body)));
      return Promise.resolve(messages);
    },
  });
  h.consumer.start();
  await waitFor('25 processed messages', () => h.processed.length >= bodies.length);
  await h.stop();

  assert.deepEqual(tally(batches.flat()), tally(bodies), 'every body handled, each exactly once');
  assert.ok(
    batches.every((b) => b.length >= 1 && b.length <= 10),
    `batch sizes ${JSON.stringify(batches.map((b) => b.length))}`,
  );
  assert.ok(
    batches.some((b) => b.length > 1),
    `some receive returned more than one message: ${JSON.stringify(batches.map((b) => b.length))}`,
  );
  assert.deepEqual(h.errors, [], 'no error events');
  assert.equal(callsOf(h, 'DeleteMessageCommand').length, 0, 'no single DeleteMessage');
  const deletes = callsOf(h, 'DeleteMessageBatchCommand');
  assert.equal(deletes.length, batches.length, 'one DeleteMessageBatch per handled batch');
  let successful = 0;
  for (const call of deletes) {
    const entries = call.input.Entries as unknown[];
    const out = call.output as { Successful?: unknown[]; Failed?: unknown[] } | undefined;
    assert.ok(out !== undefined, `DeleteMessageBatch failed: ${String(call.error)}`);
    assert.equal(out.Successful?.length, entries.length, 'every entry deleted');
    assert.deepEqual(out.Failed ?? [], [], 'no failed entries');
    successful += entries.length;
  }
  assert.equal(successful, bodies.length, 'DeleteMessageBatch deleted every message');
  assert.deepEqual(await counts(queueUrl), { visible: '0', notVisible: '0' }, 'queue empty afterwards');
});

test('a handler that throws once: terminateVisibilityTimeout makes the message visible again, and it comes back with ApproximateReceiveCount 2', async () => {
  const queueUrl = await createQueue('consumer-retry');
  const bodies = ['retry-ok-1', 'retry-poison', 'retry-ok-2'];
  await sendBodies(queueUrl, bodies);

  const deliveries: { body: string; receiveCount: string | undefined }[] = [];
  let thrown = false;
  const h = makeConsumer({
    queueUrl,
    // Without terminateVisibilityTimeout the failed message would stay hidden for 30 s, past the deadline.
    visibilityTimeout: 30,
    terminateVisibilityTimeout: true,
    messageSystemAttributeNames: ['ApproximateReceiveCount'],
    handleMessage: (message) => {
      const body = String(message.Body);
      deliveries.push({ body, receiveCount: message.Attributes?.ApproximateReceiveCount });
      if (body === 'retry-poison' && !thrown) {
        thrown = true;
        return Promise.reject(new Error('handler failed on purpose'));
      }
      return Promise.resolve(message);
    },
  });
  h.consumer.start();
  await waitFor('all three messages processed', () => h.processed.length >= bodies.length);
  await h.stop();

  const of = (body: string): (string | undefined)[] =>
    deliveries.filter((d) => d.body === body).map((d) => d.receiveCount);
  assert.deepEqual(
    of('retry-poison'),
    ['1', '2'],
    'the failed message: delivered twice, receive counts 1, 2',
  );
  assert.deepEqual(of('retry-ok-1'), ['1'], 'the others: delivered once');
  assert.deepEqual(of('retry-ok-2'), ['1'], 'the others: delivered once');

  assert.equal(h.errors.length, 1, `exactly one error event: ${h.errors.map((e) => e.message).join('; ')}`);
  assert.match(String(h.errors[0]?.message), /handler failed on purpose/);
  assert.equal(
    h.events.filter((e) => e === 'processing_error').length,
    1,
    'reported as one processing_error',
  );
  const changes = callsOf(h, 'ChangeMessageVisibilityCommand');
  assert.equal(changes.length, 1, 'one ChangeMessageVisibility');
  assert.equal(changes[0]?.input.VisibilityTimeout, 0);
  assert.ok(changes[0]?.output !== undefined, `ChangeMessageVisibility failed: ${String(changes[0]?.error)}`);
  assert.deepEqual(await counts(queueUrl), { visible: '0', notVisible: '0' }, 'queue empty afterwards');
});

test("message attributes sent with SendMessage reach the handler when the consumer asks for them (['All'])", async () => {
  const queueUrl = await createQueue('consumer-attrs');
  const attributes: Record<string, MessageAttributeValue> = {
    color: { DataType: 'String', StringValue: 'blue' },
    count: { DataType: 'Number', StringValue: '42' },
    blob: { DataType: 'Binary', BinaryValue: Uint8Array.from([0, 1, 2, 254, 255]) },
    kind: { DataType: 'String.custom', StringValue: 'é ünïcödé' },
  };
  const sent = await shared.client.send(
    new SendMessageCommand({
      QueueUrl: queueUrl,
      MessageBody: 'with-attributes',
      MessageAttributes: attributes,
    }),
  );

  const received: Message[] = [];
  const h = makeConsumer({
    queueUrl,
    messageAttributeNames: ['All'],
    handleMessage: (message) => {
      received.push(message);
      return Promise.resolve(message);
    },
  });
  h.consumer.start();
  await waitFor('the message processed', () => h.processed.length >= 1);
  await h.stop();

  assert.equal(received.length, 1);
  const m = received[0] as Message;
  assert.equal(m.Body, 'with-attributes');
  assert.equal(m.MessageId, sent.MessageId);
  const got = m.MessageAttributes ?? {};
  assert.deepEqual(Object.keys(got).sort(), Object.keys(attributes).sort(), 'every attribute arrived');
  assert.deepEqual(got.color, attributes.color);
  assert.deepEqual(got.count, attributes.count);
  assert.deepEqual(got.kind, attributes.kind);
  assert.equal(got.blob?.DataType, 'Binary');
  assert.deepEqual(Buffer.from(got.blob?.BinaryValue ?? []), Buffer.from([0, 1, 2, 254, 255]));
  assert.equal(m.MD5OfMessageAttributes, md5OfAttributes(attributes), 'MD5OfMessageAttributes as documented');
  assert.equal(m.MD5OfMessageAttributes, sent.MD5OfMessageAttributes, 'the same MD5 as SendMessage answered');
  assert.deepEqual(h.errors, [], 'no error events');
  assert.deepEqual(await counts(queueUrl), { visible: '0', notVisible: '0' }, 'queue empty afterwards');
});

/** A started consumer on a new empty queue, once its long poll (of `waitTimeSeconds`) is parked on the server. */
async function consumerInLongPoll(prefix: string, waitTimeSeconds: number): Promise<Harness> {
  const queueUrl = await createQueue(prefix);
  // Long polls left by earlier tests' consumers have ended (each waited at most 1 s), so the one
  // counted below is this consumer's.
  await waitFor(
    'no long polls parked on the server',
    async () => (await longPollWaiters(shared.server)) === 0,
  );
  const h = makeConsumer({
    queueUrl,
    waitTimeSeconds,
    handleMessage: (message) => Promise.resolve(message),
  });
  h.consumer.start();
  await waitForLongPollWaiters(shared.server, 1, DEADLINE_MS);
  return h;
}

test('stop() while a long poll is outstanding: waits for it, then emits stopped and polls no more', async () => {
  const h = await consumerInLongPoll('consumer-stop', 2);
  assert.equal(h.consumer.status.isPolling, true, 'the consumer is in its ReceiveMessage');

  await h.stop();

  assert.ok(
    h.events.includes('waiting_for_polling_to_complete'),
    `stop() found the poll outstanding: ${h.events.join(',')}`,
  );
  assert.ok(
    !h.events.includes('waiting_for_polling_to_complete_timeout_exceeded'),
    'the outstanding long poll ended before pollingCompleteWaitTimeMs',
  );
  assert.equal(h.events.at(-1), 'stopped');
  assert.ok(h.events.includes('empty'), 'the long poll was answered, with no messages');
  assert.deepEqual(h.consumer.status, { isRunning: false, isPolling: false });
  assert.deepEqual(h.errors, [], 'no error events');
  const receives = callsOf(h, 'ReceiveMessageCommand');
  assert.ok(receives.length >= 1);
  assert.deepEqual(
    receives.filter((c) => c.afterStop),
    [],
    'no ReceiveMessage sent after stop()',
  );
  assert.ok(
    receives.every((c) => c.output !== undefined),
    'every ReceiveMessage was answered',
  );
  assert.equal(receives.at(-1)?.input.WaitTimeSeconds, 2, 'the consumer long-polled');
  await waitFor(
    'the long poll gone from the server',
    async () => (await longPollWaiters(shared.server)) === 0,
  );
});

test('stop({ abort: true }) during a 20 s long poll: aborted, then stopped, without waiting the poll out', async () => {
  const h = await consumerInLongPoll('consumer-abort', 20);

  // Bounded by DEADLINE_MS, shorter than the 20 s poll: only the abort can end it in time.
  await h.stop({ abort: true });

  assert.ok(h.events.includes('aborted'), `events: ${h.events.join(',')}`);
  assert.ok(h.events.includes('stopped'), `events: ${h.events.join(',')}`);
  assert.ok(
    !h.events.includes('waiting_for_polling_to_complete_timeout_exceeded'),
    'the aborted poll ended before pollingCompleteWaitTimeMs',
  );
  assert.deepEqual(h.consumer.status, { isRunning: false, isPolling: false });
  // The only error the consumer may report is the abort of its own request.
  for (const e of h.errors) assert.match(e.message, /abort/i);
  assert.deepEqual(
    callsOf(h, 'ReceiveMessageCommand').filter((c) => c.afterStop),
    [],
    'no ReceiveMessage sent after stop()',
  );
  // The server noticed the client went away: its parked poll is gone long before its 20 s.
  await waitFor(
    'the aborted long poll gone from the server',
    async () => (await longPollWaiters(shared.server)) === 0,
    10_000,
  );
});
