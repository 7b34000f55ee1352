/**
 * A FIFO queue under several producers and consumers at once, through @aws-sdk/client-sqs:
 * every group's messages are received in the order they were sent, and nothing is delivered twice,
 * though producers resend some messages (as after a lost acknowledgement) within the 5-minute
 * deduplication window, singly and in batches.
 *
 * Each group has one producer that sends its messages one after another, so the group's order is
 * the send order. Consumers receive, record and delete; a consumer's record of a group happens
 * before its deletes are sent, and no other consumer can get that group's next messages before
 * those deletes, so the records of each group are in delivery order. The visibility timeout
 * (120 s) is longer than the test, so nothing is redelivered by expiry. Bounded: 60 s at most.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { sqsClient, startServer, uniqueName, type RunningServer } from '../support/server.js';

const GROUPS = 16;
const PER_GROUP = 20;
const PRODUCERS = 4;
const CONSUMERS = 4;
const DEADLINE_MS = 60_000;

let server: RunningServer;
const clients: SQSClient[] = [];

before(async () => {
  server = await startServer();
  for (let i = 0; i < PRODUCERS + CONSUMERS; i++) clients.push(sqsClient(server.url));
});

after(async () => {
  for (const c of clients) c.destroy();
  await server?.stop();
});

interface Received {
  readonly group: string;
  readonly index: number;
  readonly seq: bigint;
}

test('Given producers resending within the dedup window and concurrent consumers over many groups, When the queue is drained, Then each group arrives in order and nothing twice', async () => {
  const admin = clients[0] as SQSClient;
  const { QueueUrl } = await admin.send(
    new CreateQueueCommand({
      QueueName: `${uniqueName('fifo-many')}.fifo`,
      Attributes: { FifoQueue: 'true', VisibilityTimeout: '120' },
    }),
  );
  assert.ok(QueueUrl);
  const url = QueueUrl;
  const deadline = Date.now() + DEADLINE_MS;

  // Producer p owns groups p, p + PRODUCERS, ...; sends each of its groups' messages in order,
  // interleaving its groups; every 4th message is sent twice (the retry of a lost reply), every
  // 7th as a batch of the message and its own duplicate.
  const sentIds = new Map<string, string>();
  const producer = async (p: number): Promise<void> => {
    const client = clients[p] as SQSClient;
    const groups: number[] = [];
    for (let g = p; g < GROUPS; g += PRODUCERS) groups.push(g);
    for (let i = 0; i < PER_GROUP; i++) {
      for (const g of groups) {
        const group = `g${g}`;
        const body = `${group}:${i}`;
        const entry = { MessageBody: body, MessageGroupId: group, MessageDeduplicationId: body };
        if (i % 7 === 3) {
          const out = await client.send(
            new SendMessageBatchCommand({
              QueueUrl: url,
              Entries: [
                { Id: 'first', ...entry },
                { Id: 'again', ...entry },
              ],
            }),
          );
          const ids = (out.Successful ?? []).map((e) => e.MessageId);
          assert.equal(ids.length, 2);
          assert.equal(ids[0], ids[1], 'a duplicate in the same batch answers with the first MessageId');
          sentIds.set(body, ids[0] ?? '');
          continue;
        }
        const out = await client.send(new SendMessageCommand({ QueueUrl: url, ...entry }));
        sentIds.set(body, out.MessageId ?? '');
        if (i % 4 === 1) {
          const again = await client.send(new SendMessageCommand({ QueueUrl: url, ...entry }));
          assert.equal(again.MessageId, out.MessageId, 'a resend answers with the original MessageId');
        }
      }
    }
  };

  const received: Received[] = [];
  const total = GROUPS * PER_GROUP;
  let producing = true;
  const consumer = async (c: number): Promise<void> => {
    const client = clients[PRODUCERS + c] as SQSClient;
    while (Date.now() < deadline && (producing || received.length < total)) {
      const out = await client.send(
        new ReceiveMessageCommand({
          QueueUrl: url,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
          MessageSystemAttributeNames: ['MessageGroupId', 'SequenceNumber'],
        }),
      );
      const got = out.Messages ?? [];
      if (got.length === 0) {
        if (!producing && received.length >= total) return;
        continue;
      }
      for (const m of got) {
        const [group, index] = (m.Body ?? '').split(':');
        assert.equal(m.Attributes?.MessageGroupId, group);
        received.push({
          group: group ?? '',
          index: Number(index),
          seq: BigInt(m.Attributes?.SequenceNumber ?? '0'),
        });
      }
      const del = await client.send(
        new DeleteMessageBatchCommand({
          QueueUrl: url,
          Entries: got.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? '' })),
        }),
      );
      assert.equal(del.Failed?.length ?? 0, 0, 'every delete succeeds while the messages are in flight');
    }
  };

  const consumers = Array.from({ length: CONSUMERS }, (_, c) => consumer(c));
  await Promise.all(Array.from({ length: PRODUCERS }, (_, p) => producer(p)));
  producing = false;
  await Promise.all(consumers);

  assert.equal(sentIds.size, total, 'every message was sent');
  assert.equal(received.length, total, 'every message was received exactly once (no more, no fewer)');
  const seen = new Set(received.map((r) => `${r.group}:${r.index}`));
  assert.equal(seen.size, total, 'no message was delivered twice');
  const byGroup = new Map<string, Received[]>();
  for (const r of received) {
    const list = byGroup.get(r.group) ?? [];
    list.push(r);
    byGroup.set(r.group, list);
  }
  assert.equal(byGroup.size, GROUPS);
  for (const [group, list] of byGroup) {
    assert.deepEqual(
      list.map((r) => r.index),
      Array.from({ length: PER_GROUP }, (_, i) => i),
      `group ${group} in send order`,
    );
    for (let i = 1; i < list.length; i++) {
      assert.ok(
        (list[i] as Received).seq > (list[i - 1] as Received).seq,
        `group ${group}: SequenceNumbers increase`,
      );
    }
  }
});
