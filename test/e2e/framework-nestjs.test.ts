/**
 * @ssut/nestjs-sqs in a tiny Nest application (test/e2e/frameworks/nest-app.ts): its producer sends
 * through SqsService, its consumer calls the handler method, both on @aws-sdk/client-sqs, so the
 * JSON 1.0 protocol. The library brings its own sqs-consumer 11 and sqs-producer 5.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { INestApplicationContext } from '@nestjs/common';
import { sqsClient, startServer, uniqueName, type RunningServer } from '../support/server.js';
import { GreetingHandler, GreetingProducer, startApp } from './frameworks/nest-app.js';

const DEADLINE_MS = 15_000;

let server: RunningServer;
let client: SQSClient;
let app: INestApplicationContext | undefined;

before(async () => {
  server = await startServer();
  client = sqsClient(server.url);
});

after(async () => {
  await app?.close();
  client?.destroy();
  await server?.stop();
});

test('NestJS (@ssut/nestjs-sqs): messages sent by the producer reach the handler once each, with attributes, and are deleted', async () => {
  const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: uniqueName('nest') }));
  assert.ok(QueueUrl);
  const seen: Message[] = [];
  let allSeen: () => void = () => {};
  const three = new Promise<void>((resolve) => (allSeen = resolve));
  GreetingHandler.seen = (m) => {
    seen.push(m);
    if (seen.length === 3) allSeen();
  };

  app = await startApp(server.url, QueueUrl);
  const producer = app.get(GreetingProducer);
  for (const n of [1, 2, 3]) await producer.greet(`g${n}`, `hello ${n}`);

  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    three,
    new Promise((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`handled ${seen.length} of 3 in ${DEADLINE_MS} ms`)),
        DEADLINE_MS,
      );
    }),
  ]);
  clearTimeout(timer);
  await app.close();
  app = undefined;

  assert.deepEqual(seen.map((m) => m.Body).sort(), ['hello 1', 'hello 2', 'hello 3']);
  for (const m of seen)
    assert.deepEqual(m.MessageAttributes, { lang: { DataType: 'String', StringValue: 'en' } });
  const { Attributes } = await client.send(
    new GetQueueAttributesCommand({
      QueueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  assert.deepEqual(
    Attributes,
    { ApproximateNumberOfMessages: '0', ApproximateNumberOfMessagesNotVisible: '0' },
    'every handled message deleted',
  );
});
