/**
 * docs/faults.md row 17: a producer-only flood past the memory budget through nginx, with leader
 * election and Redis. Bounded by volume, not by a fixed 60 s: the producer sends three times
 * the budget in 256 KiB messages (on a fast machine that is a few seconds, on a loaded one longer).
 * Neither instance dies, the leader refuses with RequestThrottled (403, which nginx does not pass
 * to the follower) and keeps serving receives and deletes, no leader change, lost = 0, and sends
 * resume after draining.
 */
import assert from 'node:assert/strict';
import {
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { testsRequiring } from '../support/requires.js';
import { uniqueName } from '../support/server.js';
import { createQueue, loadClient, clusterFor } from './harness.js';

const { test } = testsRequiring('nginx', 'redis-server');

const MIB = 1024 ** 2;
const BUDGET_MIB = 32;
const BODY_BYTES = 256 * 1024;

/** Receives and deletes up to 10 messages through `sqs`; returns their ids. */
async function consume(sqs: SQSClient, queueUrl: string): Promise<string[]> {
  const r = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 60 }),
  );
  const messages = r.Messages ?? [];
  if (messages.length === 0) return [];
  const d = await sqs.send(
    new DeleteMessageBatchCommand({
      QueueUrl: queueUrl,
      Entries: messages.map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle })),
    }),
  );
  assert.equal(d.Failed?.length ?? 0, 0, JSON.stringify(d.Failed));
  return messages.map((m) => m.MessageId ?? '');
}

test(
  'docs/faults.md row 17: Given leader election behind nginx and a 32 MiB budget, When a producer floods three times the budget with no consumer, Then the leader refuses with RequestThrottled and keeps serving receives, no instance dies, lost = 0, and sends resume after draining',
  { timeout: 300_000 },
  async (t) => {
    const { c, leader } = await clusterFor(t, { extraArgs: ['--max-memory', `${BUDGET_MIB}mb`] });
    const queueUrl = await createQueue(c.nginx.url, uniqueName('flood'));
    // One attempt: every refusal is seen and counted here, not retried away.
    const sqs = loadClient(c.nginx.url, 1);
    t.after(() => sqs.destroy());

    const acknowledged = new Set<string>();
    let refused = 0;
    let consumedWhileRefusing: string[] = [];
    const sends = Math.ceil((3 * BUDGET_MIB * MIB) / BODY_BYTES);
    for (let i = 0; i < sends; i++) {
      try {
        const r = await sqs.send(
          new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: `${i} `.padEnd(BODY_BYTES, 'x') }),
        );
        acknowledged.add(r.MessageId ?? '');
      } catch (e) {
        const err = e as { name?: string; $metadata?: { httpStatusCode?: number } };
        assert.equal(err.name, 'RequestThrottled', String(e));
        assert.equal(err.$metadata?.httpStatusCode, 403);
        refused++;
        // The first refusal: receives and deletes go on through nginx while sends are refused.
        if (refused === 1) consumedWhileRefusing = await consume(sqs, queueUrl);
      }
    }
    t.diagnostic(`${acknowledged.size} sends acknowledged, ${refused} refused, of ${sends}`);
    assert.ok(refused > 0, 'never refused');
    assert.equal(consumedWhileRefusing.length, 10);
    assert.ok(c.a.running && c.b.running, 'an instance died');
    assert.equal(await c.leader(), leader, 'the leader changed');
    // Never more accepted than the budget holds (plus the 10 consumed while refusing).
    assert.ok((acknowledged.size - 10) * BODY_BYTES <= BUDGET_MIB * MIB);

    // Drain: every acknowledged message is received (lost = 0), none that was never sent.
    const received = new Set(consumedWhileRefusing);
    for (let ids = await consume(sqs, queueUrl); ids.length > 0; ids = await consume(sqs, queueUrl)) {
      for (const id of ids) received.add(id);
    }
    const lost = [...acknowledged].filter((id) => !received.has(id));
    const unexpected = [...received].filter((id) => !acknowledged.has(id));
    assert.deepEqual({ lost: lost.length, unexpected: unexpected.length }, { lost: 0, unexpected: 0 });

    const after = await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'after' }));
    assert.ok(after.MessageId);
  },
);
