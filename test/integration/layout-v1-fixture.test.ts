/**
 * Data written by the release with Redis layout 1 is served exactly: a redis-server started from
 * test/fixtures/layout-v1/dump.rdb (written by that release, README.md beside it), and this
 * build's server on it, answer what expected.json says the clients were answered before the dump.
 *
 * Each test starts its own Redis from a copy of the dump and its own server (in this process, auth
 * on, no --config: the tenants come from Redis), on an injected clock standing at the dump's time
 * + 5 s: every visibility timeout, delay, deduplication and receive-attempt window and the purge
 * cooldown of the fixture is still open, however long ago the dump was written. Tests that need
 * time to pass move that clock.
 *
 * One change comes with the load: the move task that was RUNNING (1 message/s, back to its source)
 * is picked up and moves its next message at once, and no more while the clock stands still. The
 * tests wait for that move and expect it.
 *
 * A layout change must keep this file passing unchanged against the same dump (the first check
 * below, that the dump is layout 1, included: it is what the migration starts from).
 */
import assert from 'node:assert/strict';
import {
  CancelMessageMoveTaskCommand,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListDeadLetterSourceQueuesCommand,
  ListQueuesCommand,
  ListQueueTagsCommand,
  type Message,
  PurgeQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { startServer } from 'shared-sqs';
import { ManualClock } from '../../src/core/clock.js';
import {
  ADMIN_TOKEN,
  admin,
  DEFAULT_REGION,
  FIXTURE_DUMP,
  FIXTURE_PREFIX,
  listMoveTasks,
  type FixtureMoveTask,
  type FixtureQueue,
  type PeekedMessage,
  peek,
  queuePath,
  readFixture,
  ready,
  signedClient,
  until,
} from '../support/layout-v1.js';
import { startRedis } from '../support/redis.js';
import { testsRequiring } from '../support/requires.js';

const { test } = testsRequiring('redis-server');

const fx = readFixture();
const READ_AT = fx.writtenAt + 5_000;

function fixtureQueue(accountId: string, region: string, name: string): FixtureQueue {
  const q = fx.queues.find((x) => x.accountId === accountId && x.region === region && x.name === name);
  assert.ok(q, `the fixture has ${accountId}/${region}/${name}`);
  return q;
}
const ALPHA = '111111111111';
const BETA = '222222222222';
const ORDERS = fixtureQueue(ALPHA, DEFAULT_REGION, 'orders');
const DLQ = fixtureQueue(ALPHA, DEFAULT_REGION, 'orders-dlq');
const PAYMENTS = fixtureQueue(ALPHA, DEFAULT_REGION, 'payments');
const EVENTS = fixtureQueue(ALPHA, DEFAULT_REGION, 'events.fifo');
const BILLING = fixtureQueue(BETA, DEFAULT_REGION, 'billing.fifo');
const INBOX = fixtureQueue(BETA, DEFAULT_REGION, 'inbox');

/** The RUNNING task of the dump (back to the sources, 1/s) and the message it moves after the load. */
const RUNNING: FixtureMoveTask = (() => {
  const t = fx.moveTasks[DLQ.id]?.[0];
  assert.ok(
    t && t.status === 'RUNNING' && t.destinationArn === null,
    'the dump has a RUNNING task on orders-dlq',
  );
  return t;
})();
/** Visible messages are delivered (and moved) in send order after a load: the dead-letter queue's first. */
const MOVED_ON_LOAD: PeekedMessage = (() => {
  const m = DLQ.messages[0];
  assert.ok(m && m.state === 'visible');
  return m;
})();

interface Opened {
  readonly url: string;
  readonly controlUrl: string;
  readonly clock: ManualClock;
  /** A client signing as the tenant of `accountId` (its first key), in `region`. */
  sqs(accountId: string, region?: string): SQSClient;
  /** The URL of a fixture queue on this server. */
  queueUrl(q: FixtureQueue): string;
}

/** Redis from a copy of the dump, this build's server on it; everything stopped after the test. */
async function open(t: { after(fn: () => Promise<void>): void }): Promise<Opened> {
  const redis = await startRedis({ aof: false, rdb: FIXTURE_DUMP });
  t.after(() => redis.stop());
  assert.equal(await redis.client.get(`${FIXTURE_PREFIX}layout`), '1', 'the dump is of layout 1');
  const clock = new ManualClock(READ_AT);
  const server = await startServer(
    { redisAddr: `127.0.0.1:${redis.port}`, auth: 'on', adminToken: ADMIN_TOKEN, region: DEFAULT_REGION },
    { clock },
  );
  t.after(() => server.close());
  await ready(server.controlUrl);
  const clients = new Map<string, SQSClient>();
  t.after(async () => {
    for (const c of clients.values()) c.destroy();
    await Promise.resolve();
  });
  const opened: Opened = {
    url: server.url,
    controlUrl: server.controlUrl,
    clock,
    sqs: (accountId, region = DEFAULT_REGION) => {
      const tenant = fx.tenants.find((x) => x.accountId === accountId);
      const key = tenant?.keys[0];
      assert.ok(key, `a tenant of ${accountId}`);
      const name = `${accountId}/${region}`;
      let c = clients.get(name);
      if (c === undefined) {
        c = signedClient(server.url, key, region, clock);
        clients.set(name, c);
      }
      return c;
    },
    queueUrl: (q) => `${server.url}${q.path}`,
  };
  await until(
    'the RUNNING move task moves its next message after the load',
    () => moveTasks(opened, DLQ),
    (tasks) => tasks[0]?.approximateNumberOfMessagesMoved === RUNNING.approximateNumberOfMessagesMoved + 1,
  );
  return opened;
}

function moveTasks(o: Opened, q: FixtureQueue): Promise<FixtureMoveTask[]> {
  return listMoveTasks(o.sqs(q.accountId, q.region), q.attributes['QueueArn']);
}

const byId = (ms: readonly PeekedMessage[]): PeekedMessage[] =>
  [...ms].sort((a, b) => (a.messageId < b.messageId ? -1 : 1));

/** A queue's messages and attributes as the fixture has them, after the load's one move. */
function expectedAfterLoad(q: FixtureQueue): {
  attributes: Record<string, string>;
  messages: PeekedMessage[];
} {
  const attributes = { ...q.attributes };
  let messages = [...q.messages];
  const bump = (by: number): void => {
    attributes['ApproximateNumberOfMessages'] = String(
      Number(attributes['ApproximateNumberOfMessages']) + by,
    );
  };
  if (q.id === DLQ.id) {
    messages = messages.filter((m) => m.messageId !== MOVED_ON_LOAD.messageId);
    bump(-1);
  }
  if (q.id === PAYMENTS.id) bump(1);
  return { attributes, messages: byId(messages) };
}

/** Receives every visible message of a queue (VisibilityTimeout `vt`), with all their attributes. */
async function receiveAll(o: Opened, q: FixtureQueue, vt = 600): Promise<Message[]> {
  const out: Message[] = [];
  for (;;) {
    const got = await o.sqs(q.accountId, q.region).send(
      new ReceiveMessageCommand({
        QueueUrl: o.queueUrl(q),
        MaxNumberOfMessages: 10,
        VisibilityTimeout: vt,
        WaitTimeSeconds: 0,
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['All'],
      }),
    );
    if ((got.Messages ?? []).length === 0) return out;
    out.push(...(got.Messages ?? []));
  }
}

async function rejects(p: Promise<unknown>, name: string, message?: RegExp): Promise<void> {
  await assert.rejects(p, (e: Error) => {
    assert.equal(e.name, name);
    if (message !== undefined) assert.match(e.message, message);
    return true;
  });
}

void test('Given the layout-1 dump, when the server loads it, then every queue, attribute, tag, message, move task, dead-letter source and tenant is served as written', async (t) => {
  const o = await open(t);

  // ListQueues per account and region, signed with each of the tenant's keys.
  for (const tenant of fx.tenants) {
    for (const region of [DEFAULT_REGION, 'eu-west-1']) {
      const want = fx.queues
        .filter((q) => q.accountId === tenant.accountId && q.region === region)
        .map((q) => q.path)
        .sort();
      for (const key of tenant.keys) {
        const sqs = signedClient(o.url, key, region, o.clock);
        t.after(() => sqs.destroy());
        const got = await sqs.send(new ListQueuesCommand({}));
        assert.deepEqual(
          (got.QueueUrls ?? []).map((u) => new URL(u).pathname).sort(),
          want,
          `${key.accessKeyId} in ${region}`,
        );
      }
    }
  }

  for (const q of fx.queues) {
    const sqs = o.sqs(q.accountId, q.region);
    const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: q.name }));
    assert.equal(QueueUrl, o.queueUrl(q));
    const want = expectedAfterLoad(q);
    const attrs = await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['All'] }));
    assert.deepEqual(attrs.Attributes, want.attributes, `${q.id}: attributes`);
    const tags = await sqs.send(new ListQueueTagsCommand({ QueueUrl }));
    assert.deepEqual(tags.Tags ?? {}, q.tags, `${q.id}: tags`);
    const messages = await peek(o.controlUrl, q);
    if (q.id === PAYMENTS.id) {
      // The RUNNING task's move: a new message (new id, sent now) with the moved one's body.
      const moved = messages.filter((m) => !q.messages.some((x) => x.messageId === m.messageId));
      assert.equal(moved.length, 1);
      assert.deepEqual(moved[0], {
        ...MOVED_ON_LOAD,
        messageId: moved[0]?.messageId,
        sentAt: new Date(READ_AT).toISOString(),
        receiveCount: 0,
        deadLetterSourceArn: null,
      });
      assert.deepEqual(byId(messages.filter((m) => m !== moved[0])), want.messages, `${q.id}: messages`);
    } else {
      assert.deepEqual(byId(messages), want.messages, `${q.id}: messages`);
    }
  }

  assert.deepEqual(await moveTasks(o, DLQ), [
    { ...RUNNING, approximateNumberOfMessagesMoved: RUNNING.approximateNumberOfMessagesMoved + 1 },
    ...(fx.moveTasks[DLQ.id] ?? []).slice(1),
  ]);
  for (const [id, paths] of Object.entries(fx.deadLetterSources)) {
    const q = fx.queues.find((x) => x.id === id);
    assert.ok(q);
    const got = await o
      .sqs(q.accountId, q.region)
      .send(new ListDeadLetterSourceQueuesCommand({ QueueUrl: o.queueUrl(q) }));
    assert.deepEqual((got.queueUrls ?? []).map((u) => new URL(u).pathname).sort(), paths);
  }

  const { tenants } = await admin<{ tenants: Record<string, unknown>[] }>(o.controlUrl, '/tenants');
  assert.deepEqual(
    tenants.map((x) => ({
      name: x['name'],
      accountId: x['accountId'],
      createdAt: x['createdAt'],
      queues: x['queues'],
      memoryShare: x['memoryShare'],
      keys: x['keys'],
    })),
    fx.tenants.map((x) => ({
      ...x,
      keys: x.keys.map((k) => ({ accessKeyId: k.accessKeyId, createdAt: k.createdAt })),
    })),
  );

  // The queue deleted before the dump is gone, with its messages.
  const d = fx.deleted;
  await rejects(
    o.sqs(d.accountId, d.region).send(new GetQueueUrlCommand({ QueueName: d.name })),
    'QueueDoesNotExist',
  );
});

void test('Given the layout-1 dump, when its visible messages are received, then each comes with the id, body, attributes, MD5s and sequence number it was sent with', async (t) => {
  const o = await open(t);
  for (const q of fx.queues) {
    const got = await receiveAll(o, q);
    const want = expectedAfterLoad(q).messages.filter(
      (m) =>
        m.state === 'visible' &&
        // FIFO: a group with a message in flight gives nothing.
        !(m.groupId !== null && q.messages.some((x) => x.groupId === m.groupId && x.state === 'inflight')),
    );
    const received = got.filter((m) => q.messages.some((x) => x.messageId === m.MessageId));
    assert.deepEqual(
      received.map((m) => m.MessageId).sort(),
      want.map((m) => m.messageId).sort(),
      `${q.id}: received`,
    );
    // Besides those, only the message the RUNNING task moved to payments at the load.
    assert.equal(
      got.length - received.length,
      q.id === PAYMENTS.id ? 1 : 0,
      `${q.id}: nothing else received`,
    );
    for (const m of received) {
      const peeked = want.find((x) => x.messageId === m.MessageId);
      assert.ok(peeked);
      assert.equal(m.Body, peeked.body);
      assert.equal(m.MD5OfBody, peeked.md5OfBody);
      assert.equal(m.Attributes?.SentTimestamp, String(Date.parse(peeked.sentAt)));
      assert.equal(m.Attributes?.ApproximateReceiveCount, String(peeked.receiveCount + 1));
      assert.equal(m.Attributes?.SequenceNumber, peeked.sequenceNumber ?? undefined);
      assert.equal(m.Attributes?.MessageGroupId, peeked.groupId ?? undefined);
      assert.equal(m.Attributes?.MessageDeduplicationId, peeked.deduplicationId ?? undefined);
      const sent = fx.sends.find((s) => s.messageId === m.MessageId);
      if (sent === undefined) continue; // moved by a task before the dump: a message of its own
      assert.equal(m.Body, sent.body);
      assert.equal(m.MD5OfBody, sent.md5OfMessageBody);
      assert.equal(m.MD5OfMessageAttributes ?? null, sent.md5OfMessageAttributes);
      assert.equal(m.Attributes?.SequenceNumber ?? null, sent.sequenceNumber);
      const attrs: Record<string, { DataType: string; StringValue?: string; BinaryValue?: string }> = {};
      for (const [k, v] of Object.entries(m.MessageAttributes ?? {})) {
        attrs[k] = {
          DataType: v.DataType ?? '',
          ...(v.StringValue === undefined ? {} : { StringValue: v.StringValue }),
          ...(v.BinaryValue === undefined
            ? {}
            : { BinaryValue: Buffer.from(v.BinaryValue).toString('base64') }),
        };
      }
      assert.deepEqual(attrs, sent.messageAttributes, `${q.id}: ${sent.body}: attributes`);
      if (sent.md5OfMessageSystemAttributes !== null) {
        assert.equal(m.Attributes?.AWSTraceHeader, 'Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1');
      }
    }
  }
});

void test('Given the layout-1 dump, when the receipt handles its clients kept are used, then they delete and change visibility within the 12 h of their receive, and the ReceiveRequestAttemptId returns the same receive; the move task is cancelled by its handle', async (t) => {
  const o = await open(t);
  const sqs = o.sqs(ALPHA);
  const handle = (name: string): string => {
    const h = fx.handles[name];
    assert.ok(h, name);
    return h.receiptHandle;
  };

  await sqs.send(
    new DeleteMessageCommand({ QueueUrl: o.queueUrl(ORDERS), ReceiptHandle: handle('orders-inflight-1') }),
  );
  const left = await peek(o.controlUrl, ORDERS);
  assert.equal(
    left.some((m) => m.messageId === fx.handles['orders-inflight-1']?.messageId),
    false,
  );

  await sqs.send(
    new ChangeMessageVisibilityCommand({
      QueueUrl: o.queueUrl(ORDERS),
      ReceiptHandle: handle('orders-inflight-2'),
      VisibilityTimeout: 0,
    }),
  );
  const again = (await receiveAll(o, ORDERS)).find(
    (m) => m.MessageId === fx.handles['orders-inflight-2']?.messageId,
  );
  assert.equal(again?.Attributes?.ApproximateReceiveCount, '2');

  // 12 h from the receive the handle came from, which was before the dump: 43,200 s from now is
  // past it, 600 s is not.
  const twice = (seconds: number): ChangeMessageVisibilityCommand =>
    new ChangeMessageVisibilityCommand({
      QueueUrl: o.queueUrl(ORDERS),
      ReceiptHandle: handle('orders-inflight-twice'),
      VisibilityTimeout: seconds,
    });
  await rejects(sqs.send(twice(43_200)), 'InvalidParameterValue', /beyond the limit \[43200 seconds\]/);
  await sqs.send(twice(600));
  // A standard queue takes the handle of an earlier receive too (a FIFO queue would not).
  await sqs.send(
    new ChangeMessageVisibilityCommand({
      QueueUrl: o.queueUrl(ORDERS),
      ReceiptHandle: handle('orders-stale'),
      VisibilityTimeout: 0,
    }),
  );
  assert.deepEqual(
    (await receiveAll(o, ORDERS)).map((m) => [m.MessageId, m.Attributes?.ApproximateReceiveCount]),
    [[fx.handles['orders-stale']?.messageId, '3']],
  );

  // FIFO: the attempt id gives back the same receive, handle and all; the kept handle deletes the
  // group's head, and the group's next message is received.
  const retried = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: o.queueUrl(EVENTS),
      MaxNumberOfMessages: 1,
      VisibilityTimeout: 43_200,
      ReceiveRequestAttemptId: fx.attempt.attemptId,
    }),
  );
  assert.deepEqual(
    (retried.Messages ?? []).map((m) => ({ messageId: m.MessageId, receiptHandle: m.ReceiptHandle })),
    fx.attempt.messages,
  );
  await sqs.send(
    new DeleteMessageCommand({ QueueUrl: o.queueUrl(EVENTS), ReceiptHandle: handle('events-inflight-g1') }),
  );
  const g1 = EVENTS.messages.filter((m) => m.groupId === 'g1' && m.state === 'visible');
  const next = (await receiveAll(o, EVENTS)).filter((m) => m.Attributes?.MessageGroupId === 'g1');
  assert.deepEqual(
    next.map((m) => m.MessageId),
    g1.map((m) => m.messageId),
    'the group gives its next messages, in order',
  );

  // The RUNNING move task's handle cancels it.
  const cancelled = await sqs.send(
    new CancelMessageMoveTaskCommand({ TaskHandle: RUNNING.taskHandle ?? '' }),
  );
  assert.equal(cancelled.ApproximateNumberOfMessagesMoved, RUNNING.approximateNumberOfMessagesMoved + 1);
  await until(
    'the task is CANCELLED',
    () => moveTasks(o, DLQ),
    (tasks) => tasks[0]?.status === 'CANCELLED',
  );
});

void test('Given the layout-1 dump, when FIFO messages are sent again, then recorded deduplication ids and the pending scope still hold and sequence numbers go on; the purge cooldown holds; the deleted name is free', async (t) => {
  const o = await open(t);
  const alpha = o.sqs(ALPHA);
  const beta = o.sqs(BETA);

  for (const d of fx.dedup) {
    const out = await alpha.send(
      new SendMessageCommand({
        QueueUrl: o.queueUrl(EVENTS),
        MessageBody: d.body,
        MessageGroupId: d.groupId,
        MessageDeduplicationId: d.deduplicationId,
      }),
    );
    assert.equal(out.MessageId, d.messageId);
    assert.equal(out.SequenceNumber, d.sequenceNumber);
  }
  // Content-based deduplication of a message still in the queue.
  const g2b = EVENTS.messages.find((m) => m.body === 'g2-b');
  assert.ok(g2b);
  const dup = await alpha.send(
    new SendMessageCommand({ QueueUrl: o.queueUrl(EVENTS), MessageBody: 'g2-b', MessageGroupId: 'g2' }),
  );
  assert.equal(dup.MessageId, g2b.messageId);
  assert.equal(dup.SequenceNumber, g2b.sequenceNumber);
  // billing.fifo went from DeduplicationScope queue to messageGroup 60 s before this clock: the
  // queue scope is still in effect, so a deduplication id of another group is a duplicate.
  const inv2 = BILLING.messages.find((m) => m.deduplicationId === 'inv-2');
  assert.ok(inv2);
  const cross = await beta.send(
    new SendMessageCommand({
      QueueUrl: o.queueUrl(BILLING),
      MessageBody: 'invoice 2 again',
      MessageGroupId: 'acct-1',
      MessageDeduplicationId: 'inv-2',
    }),
  );
  assert.equal(cross.MessageId, inv2.messageId);
  assert.equal((await peek(o.controlUrl, EVENTS)).length, EVENTS.messages.length, 'no duplicate stored');
  assert.equal((await peek(o.controlUrl, BILLING)).length, BILLING.messages.length, 'no duplicate stored');

  for (const [q, sqs] of [
    [EVENTS, alpha],
    [BILLING, beta],
  ] as const) {
    const last = fx.lastSequenceNumbers[q.id];
    assert.ok(last);
    const out = await sqs.send(
      new SendMessageCommand({
        QueueUrl: o.queueUrl(q),
        MessageBody: 'new',
        MessageGroupId: 'new',
        MessageDeduplicationId: 'new',
      }),
    );
    assert.ok(
      out.SequenceNumber !== undefined && BigInt(out.SequenceNumber) > BigInt(last),
      `${q.id}: ${out.SequenceNumber} > ${last}`,
    );
  }

  assert.ok(READ_AT - fx.purged.at < 60_000, 'the fixture purged less than 60 s before this clock');
  await rejects(beta.send(new PurgeQueueCommand({ QueueUrl: o.queueUrl(INBOX) })), 'PurgeQueueInProgress');

  // "Deleted recently" is kept in memory only (docs/persistence.md, "Loading"): after a load the
  // name can be used at once, and the queue made under it starts empty.
  const d = fx.deleted;
  const { QueueUrl } = await o.sqs(d.accountId, d.region).send(new CreateQueueCommand({ QueueName: d.name }));
  assert.equal(new URL(QueueUrl ?? '').pathname, queuePath(d.accountId, d.region, d.name));
  const attrs = await o
    .sqs(d.accountId, d.region)
    .send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }));
  assert.equal(attrs.Attributes?.ApproximateNumberOfMessages, '0');
});

void test('Given the layout-1 dump, when its clock moves on, then delayed and in-flight messages become visible exactly at the deadlines they were written with', async (t) => {
  const o = await open(t);
  // What is visible now is taken for 12 h, out of the way.
  await receiveAll(o, ORDERS, 43_200);
  await receiveAll(o, EVENTS, 43_200);

  const delayed = ORDERS.messages.find((m) => m.state === 'delayed');
  assert.ok(delayed?.visibleAt);
  o.clock.advance(Date.parse(delayed.visibleAt) - 1 - o.clock.now());
  assert.deepEqual(await receiveAll(o, ORDERS), []);
  o.clock.advance(1);
  assert.deepEqual(
    (await receiveAll(o, ORDERS, 43_200)).map((m) => m.MessageId),
    [delayed.messageId],
  );

  for (const q of [ORDERS, EVENTS]) {
    const inflight = q.messages.filter((m) => m.state === 'inflight');
    assert.ok(inflight.length > 0);
    // FIFO: the rest of an in-flight message's group comes with it.
    const groups = new Set(inflight.map((m) => m.groupId).filter((g) => g !== null));
    const comes = q.messages.filter(
      (m) => m.state === 'inflight' || (m.groupId !== null && groups.has(m.groupId)),
    );
    const deadlines = inflight.map((m) => Date.parse(m.visibleAt ?? ''));
    o.clock.advance(Math.min(...deadlines) - 1 - o.clock.now());
    assert.deepEqual(await receiveAll(o, q), [], `${q.id}: nothing before the first deadline`);
    o.clock.advance(Math.max(...deadlines) - o.clock.now());
    const back = await receiveAll(o, q);
    assert.deepEqual(
      back.map((m) => [m.MessageId, m.Attributes?.ApproximateReceiveCount]).sort(),
      comes.map((m) => [m.messageId, String(m.receiveCount + 1)]).sort(),
      `${q.id}: the in-flight messages are back, each with one more receive`,
    );
  }
});
