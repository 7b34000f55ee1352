/**
 * The layout-v1 fixture (test/fixtures/layout-v1/): a Redis dump written by the release whose
 * Redis layout is version 1 (src/persistence/keys.ts), and what its clients were answered. Shared
 * by the program that wrote it (test/fixtures/layout-v1/generate.ts) and the test that reads it
 * (test/integration/layout-v1-fixture.test.ts): where the files are, the admin token, the JSON's
 * shape, and clients that sign with a tenant's key at the server's injected clock.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ListMessageMoveTasksCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Clock } from '../../src/core/clock.js';

export const FIXTURE_DIR = fileURLToPath(new URL('../fixtures/layout-v1/', import.meta.url));
export const FIXTURE_DUMP = `${FIXTURE_DIR}dump.rdb`;
export const FIXTURE_JSON = `${FIXTURE_DIR}expected.json`;

/** The key prefix the fixture was written under: the default one. */
export const FIXTURE_PREFIX = '{ssq}:';
export const ADMIN_TOKEN = 'layout-v1-fixture-admin-token';
/** The server's --region: a queue of another region has the region in its URL path. */
export const DEFAULT_REGION = 'us-east-1';

export interface FixtureKey {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

export interface FixtureTenant {
  readonly name: string;
  readonly accountId: string;
  /** As the admin API shows it (ISO 8601). */
  readonly createdAt: string;
  /** How many queues its account has. */
  readonly queues: number;
  readonly memoryShare: number | null;
  readonly keys: readonly (FixtureKey & { readonly createdAt: string })[];
}

/** One message as the admin peek showed it (src/http/admin.ts, messageView). */
export interface PeekedMessage {
  readonly messageId: string;
  readonly state: string;
  readonly visibleAt: string | null;
  readonly sentAt: string;
  readonly receiveCount: number;
  readonly body: string;
  readonly bodyTruncated: boolean;
  readonly md5OfBody: string;
  readonly attributes: Record<string, unknown>;
  readonly groupId: string | null;
  readonly deduplicationId: string | null;
  readonly sequenceNumber: string | null;
  readonly deadLetterSourceArn: string | null;
}

export interface FixtureQueue {
  /** `<account>/<region>/<name>`: how the JSON's other entries name it. */
  readonly id: string;
  readonly accountId: string;
  readonly region: string;
  readonly name: string;
  /** The path of its QueueUrl (the host is the server's). */
  readonly path: string;
  /** GetQueueAttributes All. */
  readonly attributes: Record<string, string>;
  readonly tags: Record<string, string>;
  /** Every message, in any state, as peeked. */
  readonly messages: readonly PeekedMessage[];
}

/** What SendMessage answered for one message that is still in its queue. */
export interface FixtureSend {
  /** The queue it was sent to (a dead-lettered message is in the dead-letter queue now, same id). */
  readonly queue: string;
  readonly messageId: string;
  readonly body: string;
  readonly md5OfMessageBody: string;
  readonly md5OfMessageAttributes: string | null;
  readonly md5OfMessageSystemAttributes: string | null;
  readonly sequenceNumber: string | null;
  /** The message attributes as sent (the SDK's shape; Binary values as base64). */
  readonly messageAttributes: Record<
    string,
    { DataType: string; StringValue?: string; BinaryValue?: string }
  >;
}

/** A receipt handle a client was given and kept. */
export interface FixtureHandle {
  readonly queue: string;
  readonly messageId: string;
  readonly receiptHandle: string;
  /** The receive it came from is still the current one (false: a later receive superseded it). */
  readonly current: boolean;
}

export interface FixtureMoveTask {
  readonly taskHandle: string | null;
  readonly status: string;
  readonly sourceArn: string;
  readonly destinationArn: string | null;
  readonly maxNumberOfMessagesPerSecond: number | null;
  readonly approximateNumberOfMessagesMoved: number;
  readonly approximateNumberOfMessagesToMove: number | null;
  readonly startedTimestamp: number;
}

/** ListMessageMoveTasks of `sourceArn`, as the fixture records a task. */
export async function listMoveTasks(
  sqs: SQSClient,
  sourceArn: string | undefined,
): Promise<FixtureMoveTask[]> {
  const out = await sqs.send(new ListMessageMoveTasksCommand({ SourceArn: sourceArn, MaxResults: 10 }));
  return (out.Results ?? []).map((t) => ({
    taskHandle: t.TaskHandle ?? null,
    status: t.Status ?? '',
    sourceArn: t.SourceArn ?? '',
    destinationArn: t.DestinationArn ?? null,
    maxNumberOfMessagesPerSecond: t.MaxNumberOfMessagesPerSecond ?? null,
    approximateNumberOfMessagesMoved: t.ApproximateNumberOfMessagesMoved ?? 0,
    approximateNumberOfMessagesToMove: t.ApproximateNumberOfMessagesToMove ?? null,
    startedTimestamp: t.StartedTimestamp ?? 0,
  }));
}

export interface LayoutV1Fixture {
  /** Which build wrote the dump, and with which Redis. */
  readonly writtenBy: { readonly commit: string; readonly redisVersion: string; readonly node: string };
  /** The server's clock (ms) when the dump was saved: read it at this time plus a few seconds. */
  readonly writtenAt: number;
  readonly tenants: readonly FixtureTenant[];
  readonly queues: readonly FixtureQueue[];
  readonly sends: readonly FixtureSend[];
  readonly handles: Readonly<Record<string, FixtureHandle>>;
  /** FIFO: a ReceiveRequestAttemptId and what the receive that carried it returned. */
  readonly attempt: {
    readonly queue: string;
    readonly attemptId: string;
    readonly messages: readonly { readonly messageId: string; readonly receiptHandle: string }[];
  };
  /** FIFO: deduplication ids whose message is gone (received and deleted) but still remembered. */
  readonly dedup: readonly {
    readonly queue: string;
    readonly groupId: string;
    readonly deduplicationId: string;
    readonly body: string;
    readonly messageId: string;
    readonly sequenceNumber: string;
  }[];
  /** FIFO: the last SequenceNumber each queue gave. */
  readonly lastSequenceNumbers: Readonly<Record<string, string>>;
  /** ListMessageMoveTasks of each source queue (MaxResults 10), most recent first. */
  readonly moveTasks: Readonly<Record<string, readonly FixtureMoveTask[]>>;
  /** ListDeadLetterSourceQueues of each dead-letter queue: the sources' URL paths, sorted. */
  readonly deadLetterSources: Readonly<Record<string, readonly string[]>>;
  /** A queue purged less than 60 s before the dump was written. */
  readonly purged: { readonly queue: string; readonly at: number };
  /** A queue deleted shortly before the dump was written. */
  readonly deleted: { readonly accountId: string; readonly region: string; readonly name: string };
  /** Every key in the dump (sorted), with its Redis type. */
  readonly redisKeys: Readonly<Record<string, string>>;
}

export function readFixture(): LayoutV1Fixture {
  return JSON.parse(readFileSync(FIXTURE_JSON, 'utf8')) as LayoutV1Fixture;
}

/** `<account>/<region>/<name>` */
export function queueId(accountId: string, region: string, name: string): string {
  return `${accountId}/${region}/${name}`;
}

/** The path of a queue's URL: `/<account>/<name>`, with the region first when it is not the server's. */
export function queuePath(accountId: string, region: string, name: string): string {
  return region === DEFAULT_REGION ? `/${accountId}/${name}` : `/${region}/${accountId}/${name}`;
}

/**
 * @aws-sdk/client-sqs (JSON 1.0) signing with `key` in `region`, at `clock`'s time: the server
 * checks a signature's date against its injected clock (15 minutes either way), so every request
 * is signed at that clock's time, however far a test has moved it. No retries.
 */
export function signedClient(url: string, key: FixtureKey, region: string, clock: Clock): SQSClient {
  const client = new SQSClient({
    region,
    endpoint: url,
    credentials: { accessKeyId: key.accessKeyId, secretAccessKey: key.secretAccessKey },
    maxAttempts: 1,
  });
  const config = client.config as { systemClockOffset?: number };
  client.middlewareStack.add(
    (next) => (args) => {
      config.systemClockOffset = clock.now() - Date.now();
      return next(args);
    },
    { step: 'initialize', name: 'layoutV1Clock' },
  );
  return client;
}

/** GET or POST on the admin API with the fixture's token; rejects unless the status is 2xx. */
export async function admin<T>(
  controlUrl: string,
  path: string,
  init: { method?: string; body?: unknown } = {},
): Promise<T> {
  const res = await fetch(`${controlUrl}/admin${path}`, {
    method: init.method ?? 'GET',
    headers: {
      authorization: `Bearer ${ADMIN_TOKEN}`,
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  const text = await res.text();
  if (res.status < 200 || res.status > 299) {
    throw new Error(`${init.method ?? 'GET'} /admin${path}: ${res.status} ${text}`);
  }
  return JSON.parse(text) as T;
}

/** Every message of a queue, in any state, without receiving them (admin peek, at most 100). */
export async function peek(
  controlUrl: string,
  q: { accountId: string; region: string; name: string },
): Promise<PeekedMessage[]> {
  const out = await admin<{ messages: PeekedMessage[]; total: number }>(
    controlUrl,
    `/queues/${q.accountId}/${q.region}/${encodeURIComponent(q.name)}/messages?max=100`,
  );
  if (out.total !== out.messages.length)
    throw new Error(`${q.name}: ${out.total} messages, peek showed ${out.messages.length}`);
  return out.messages;
}

/** Resolves once GET /ready answers 200: the state is loaded from Redis and served. */
export async function ready(controlUrl: string, timeoutMs = 30_000): Promise<void> {
  await until(
    'GET /ready is 200',
    async () => (await fetch(`${controlUrl}/ready`)).status,
    (status) => status === 200,
    timeoutMs,
  );
}

/** Polls `read` until `done` holds of its value (every 20 ms, at most `timeoutMs`); returns that value. */
export async function until<T>(
  what: string,
  read: () => Promise<T>,
  done: (v: T) => boolean,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > deadline)
      throw new Error(`${what}: not within ${timeoutMs} ms; last: ${JSON.stringify(v)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
