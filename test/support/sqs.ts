/**
 * SQS fixtures the e2e tests share: one server per file with an SDK v3 client on it (JSON 1.0), and
 * the set-up steps (create a queue, read its ARN or its counts, drain it) through the SDK or through
 * raw Query requests, so that a file's tests spell out only the scenario under test; a server in the
 * test's own process whose clock the test moves; and a Redis for the file with the clients the
 * persistence tests write and read it through.
 */
import assert from 'node:assert/strict';
import { after as nodeAfter, before as nodeBefore } from 'node:test';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { Redis } from 'ioredis';
import { startServer as embedServer } from 'shared-sqs';
import { ManualClock } from '../../src/core/clock.js';
import { connectRedis } from '../../src/persistence/redis.js';
import { startRedis, type TestRedis } from './redis.js';
import { sqsClient, startServer, type RunningServer } from './server.js';
import { queryOk, xmlText } from './wire.js';

type ServerOptions = Parameters<typeof startServer>[0];
type Attributes = Record<string, string>;

/** The file's hooks: node:test's, or testsRequiring(...)'s, which skip with the file's tests. */
interface Hooks {
  readonly before: typeof nodeBefore;
  readonly after: typeof nodeAfter;
}

/** What a before hook made, for a fixture's getter: the file's tests run after it. */
function made<T>(value: T | undefined, what: string): T {
  assert.ok(value, what);
  return value;
}

/** A server started before the file's tests and stopped after them, with an SDK client on it. */
export interface SharedServer {
  readonly server: RunningServer;
  readonly client: SQSClient;
  createQueue(name: string, attributes?: Record<string, string>): Promise<string>;
  createQueueWithArn(
    name: string,
    attributes?: Record<string, string>,
  ): Promise<{ url: string; arn: string }>;
  counts(url: string): Promise<Counts>;
  drain(url: string): Promise<string[]>;
}

export function sharedServer(opts: { hooks?: Hooks; server?: ServerOptions } = {}): SharedServer {
  const { before, after } = opts.hooks ?? { before: nodeBefore, after: nodeAfter };
  let server: RunningServer | undefined;
  let client: SQSClient | undefined;
  before(async () => {
    server = await startServer(opts.server);
    client = sqsClient(server.url);
  });
  after(async () => {
    client?.destroy();
    await server?.stop();
  });
  const fixture: SharedServer = {
    get server(): RunningServer {
      return made(server, 'the server is started by the before hook');
    },
    get client(): SQSClient {
      return made(client, 'the client is made by the before hook');
    },
    createQueue: (name, attributes) => createQueue(fixture.client, name, attributes),
    createQueueWithArn: (name, attributes) => createQueueWithArn(fixture.client, name, attributes),
    counts: (url) => counts(fixture.client, url),
    drain: (url) => drain(fixture.client, url),
  };
  return fixture;
}

/** A server in the test's process (the package's startServer, dist/) on a clock the test moves. */
export interface ClockedServer {
  readonly url: string;
  /** Starts at the system's time and stands still until the test advances it. */
  readonly clock: ManualClock;
  /** SDK v3 (JSON 1.0), for set-up and checks. */
  readonly client: SQSClient;
  createQueue(name: string, attributes?: Record<string, string>): Promise<string>;
}

export function clockedServer(hooks: Hooks): ClockedServer {
  const clock = new ManualClock(Date.now());
  let server: Awaited<ReturnType<typeof embedServer>> | undefined;
  let client: SQSClient | undefined;
  hooks.before(async () => {
    server = await embedServer({}, { clock });
    client = sqsClient(server.url);
  });
  hooks.after(async () => {
    client?.destroy();
    await server?.close();
  });
  const fixture: ClockedServer = {
    get url(): string {
      return made(server, 'the server is started by the before hook').url;
    },
    clock,
    get client(): SQSClient {
      return made(client, 'the client is made by the before hook');
    },
    createQueue: (name, attributes) => createQueue(fixture.client, name, attributes),
  };
  return fixture;
}

// ---- through the SDK (JSON 1.0) -------------------------------------------------------------

export async function createQueue(
  client: SQSClient,
  name: string,
  attributes?: Record<string, string>,
): Promise<string> {
  const out = await client.send(
    new CreateQueueCommand({ QueueName: name, ...(attributes ? { Attributes: attributes } : {}) }),
  );
  assert.ok(out.QueueUrl, 'CreateQueue returned a QueueUrl');
  return out.QueueUrl;
}

export async function queueArn(client: SQSClient, url: string): Promise<string> {
  const out = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }),
  );
  const arn = out.Attributes?.QueueArn;
  assert.ok(arn, 'GetQueueAttributes returned the QueueArn');
  return arn;
}

/** A queue as a redrive policy needs it: its URL, and its ARN (a redrive policy names queues by ARN). */
export interface QueueWithArn {
  readonly url: string;
  readonly arn: string;
}

/** Creates the queue and reads its ARN. */
export async function createQueueWithArn(
  client: SQSClient,
  name: string,
  attributes: Attributes = {},
): Promise<QueueWithArn> {
  const url = await createQueue(client, name, attributes);
  return { url, arn: await queueArn(client, url) };
}

export interface Counts {
  readonly visible: number;
  readonly notVisible: number;
  readonly delayed: number;
}

export async function counts(client: SQSClient, url: string): Promise<Counts> {
  const out = await client.send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: [
        'ApproximateNumberOfMessages',
        'ApproximateNumberOfMessagesNotVisible',
        'ApproximateNumberOfMessagesDelayed',
      ],
    }),
  );
  return {
    visible: Number(out.Attributes?.ApproximateNumberOfMessages),
    notVisible: Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible),
    delayed: Number(out.Attributes?.ApproximateNumberOfMessagesDelayed),
  };
}

/** Receives (and deletes) until a receive comes back empty; the bodies, in the order received. */
export async function drain(client: SQSClient, url: string): Promise<string[]> {
  const bodies: string[] = [];
  for (;;) {
    const out = await client.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        VisibilityTimeout: 600,
      }),
    );
    const messages = out.Messages ?? [];
    if (messages.length === 0) return bodies;
    for (const m of messages) bodies.push(m.Body ?? '');
    await client.send(
      new DeleteMessageBatchCommand({
        QueueUrl: url,
        Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
      }),
    );
  }
}

// ---- through raw Query requests ----------------------------------------------------------------

/** CreateQueue as a form POST (Query protocol), with `Attribute.N.Name/Value` pairs. */
export async function queryCreateQueue(
  serverUrl: string,
  name: string,
  attributes: Record<string, string> = {},
): Promise<string> {
  const params: Record<string, string> = { Action: 'CreateQueue', QueueName: name };
  Object.entries(attributes).forEach(([k, v], i) => {
    params[`Attribute.${i + 1}.Name`] = k;
    params[`Attribute.${i + 1}.Value`] = v;
  });
  const url = xmlText(await queryOk(serverUrl, params), 'QueueUrl');
  assert.ok(url, 'CreateQueue returned a QueueUrl');
  return url;
}

/** A RedrivePolicy attribute value. */
export const redrivePolicy = (deadLetterTargetArn: string, maxReceiveCount: number): string =>
  JSON.stringify({ deadLetterTargetArn, maxReceiveCount });

// ---- a Redis for the file ----------------------------------------------------------------------

/** A redis-server started before the file's tests and stopped after them. */
export interface SharedRedis {
  readonly server: TestRedis;
  readonly url: string;
  /** A client made as the server makes its own (connectRedis). */
  readonly client: Redis;
  /** One more such client; all are closed after the file's tests. */
  connect(opts?: { commandTimeoutMs?: number }): Promise<Redis>;
}

export function sharedRedis(hooks: Hooks, opts: { aof: boolean }): SharedRedis {
  let server: TestRedis | undefined;
  let client: Redis | undefined;
  const clients: Redis[] = [];
  hooks.before(async () => {
    server = await startRedis({ aof: opts.aof });
    client = await connectRedis({ url: server.url });
    clients.push(client);
  });
  hooks.after(async () => {
    for (const c of clients) c.disconnect();
    await server?.stop();
  });
  const fixture: SharedRedis = {
    get server(): TestRedis {
      return made(server, 'redis-server is started by the before hook');
    },
    get url(): string {
      return fixture.server.url;
    },
    get client(): Redis {
      return made(client, 'the client is made by the before hook');
    },
    async connect(o = {}): Promise<Redis> {
      const c = await connectRedis({ url: fixture.url, ...o });
      clients.push(c);
      return c;
    },
  };
  return fixture;
}
