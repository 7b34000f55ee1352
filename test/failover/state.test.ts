/**
 * docs/faults.md rows 5 to 8: who leads when both start at once, and what the new leader knows after a
 * takeover (queues and attributes, visibility deadlines and receipt handles, FIFO deduplication
 * and group order): all of it must come from Redis, reloaded when the lock is won.
 */
import assert from 'node:assert/strict';
import {
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ListQueuesCommand,
  ListQueueTagsCommand,
  PurgeQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  TagQueueCommand,
  DeleteQueueCommand,
  SetQueueAttributesCommand,
} from '@aws-sdk/client-sqs';
import { uniqueName } from '../support/server.js';
import { createQueue, loadClient, pause, startCluster, until, type Instance, clusterFor } from './harness.js';
import { testsRequiring } from '../support/requires.js';

const { test } = testsRequiring('nginx', 'redis-server');

test(
  'docs/faults.md row 5: Given two instances, When both start at the same moment, again and again, Then exactly one answers /ready 200 each time',
  { timeout: 120_000 },
  async (t) => {
    const c = await startCluster({ start: 'none' });
    t.after(() => c.stop());
    const rounds = 6;
    const leaders: string[] = [];
    for (let round = 0; round < rounds; round++) {
      await Promise.all([c.a.start(), c.b.start()]);
      const leader = await c.leader();
      // Sampled for a while: never both.
      for (let i = 0; i < 10; i++) {
        const [ra, rb] = await Promise.all([c.a.ready(), c.b.ready()]);
        assert.ok(ra !== rb, `round ${round}: exactly one /ready 200 (a ${ra}, b ${rb})`);
        await pause(50);
      }
      leaders.push(leader.name);
      // SIGTERM releases the lock, so the next round starts from a free lock.
      await Promise.all([c.a.terminate(), c.b.terminate()]);
    }
    t.diagnostic(`leaders per round: ${leaders.join(' ')}`);
    assert.equal(leaders.length, rounds);
  },
);

async function snapshot(url: string): Promise<Record<string, unknown>> {
  const client = loadClient(url, 1);
  try {
    const urls = ((await client.send(new ListQueuesCommand({}))).QueueUrls ?? []).sort();
    const out: Record<string, unknown> = {};
    for (const q of urls) {
      const name = q.slice(q.lastIndexOf('/') + 1);
      const attrs = (
        await client.send(new GetQueueAttributesCommand({ QueueUrl: q, AttributeNames: ['All'] }))
      ).Attributes;
      const tags = (await client.send(new ListQueueTagsCommand({ QueueUrl: q }))).Tags ?? {};
      out[name] = { attrs, tags };
    }
    return out;
  } finally {
    client.destroy();
  }
}

test(
  'docs/faults.md row 6: Given queues, attributes, tags, purges and deletes, When the leader is killed (SIGKILL), Then the new leader has the same queues, attributes and tags',
  { timeout: 90_000 },
  async (t) => {
    const { c, leader, follower } = await clusterFor(t);
    const sqs = loadClient(c.nginx.url);
    t.after(() => sqs.destroy());
    const q1 = await createQueue(c.nginx.url, uniqueName('s6a'), {
      VisibilityTimeout: '45',
      MessageRetentionPeriod: '3600',
    });
    const q2 = await createQueue(c.nginx.url, uniqueName('s6b'), { MaximumMessageSize: '2048' });
    const q3 = await createQueue(c.nginx.url, uniqueName('s6c'));
    await sqs.send(new TagQueueCommand({ QueueUrl: q1, Tags: { team: 'core', env: 'test' } }));
    await sqs.send(
      new SetQueueAttributesCommand({ QueueUrl: q2, Attributes: { ReceiveMessageWaitTimeSeconds: '5' } }),
    );
    for (let i = 0; i < 5; i++) {
      await sqs.send(new SendMessageCommand({ QueueUrl: q1, MessageBody: `a${i}` }));
      await sqs.send(new SendMessageCommand({ QueueUrl: q2, MessageBody: `b${i}` }));
      await sqs.send(new SendMessageCommand({ QueueUrl: q3, MessageBody: `c${i}` }));
    }
    await sqs.send(new PurgeQueueCommand({ QueueUrl: q2 }));
    const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl: q3, MaxNumberOfMessages: 2 }));
    for (const m of got.Messages ?? []) {
      await sqs.send(new DeleteMessageCommand({ QueueUrl: q3, ReceiptHandle: m.ReceiptHandle }));
    }
    const q4 = await createQueue(c.nginx.url, uniqueName('s6d'));
    await sqs.send(new DeleteQueueCommand({ QueueUrl: q4 }));

    const before = await snapshot(leader.url);
    await leader.kill9();
    await until('the follower leads', () => follower.ready(), 20_000);
    const after = await snapshot(follower.url);
    assert.equal(Object.keys(before).length, 3);
    assert.deepEqual(after, before);
  },
);

test(
  'docs/faults.md row 7: Given messages received with a visibility timeout, When the leader is killed (SIGKILL), Then the new leader keeps them hidden until their deadline and the old receipt handle still deletes',
  { timeout: 90_000 },
  async (t) => {
    const { c, leader, follower } = await clusterFor(t);
    const sqs = loadClient(c.nginx.url);
    t.after(() => sqs.destroy());
    const q = await createQueue(c.nginx.url, uniqueName('s7'));
    await sqs.send(new SendMessageCommand({ QueueUrl: q, MessageBody: 'deleted-later' }));
    const a = (await sqs.send(new ReceiveMessageCommand({ QueueUrl: q, VisibilityTimeout: 30 })))
      .Messages?.[0];
    assert.equal(a?.Body, 'deleted-later');
    await sqs.send(new SendMessageCommand({ QueueUrl: q, MessageBody: 'comes-back' }));
    const receivedAt = Date.now();
    const b = (await sqs.send(new ReceiveMessageCommand({ QueueUrl: q, VisibilityTimeout: 8 })))
      .Messages?.[0];
    assert.equal(b?.Body, 'comes-back');

    await leader.kill9();
    await until('the follower leads', () => follower.ready(), 20_000);
    const early = await sqs.send(new ReceiveMessageCommand({ QueueUrl: q, MaxNumberOfMessages: 10 }));
    assert.deepEqual(early.Messages ?? [], [], 'both still hidden after the takeover');
    assert.ok(Date.now() < receivedAt + 8000, 'checked before the 8 s deadline');
    await sqs.send(new DeleteMessageCommand({ QueueUrl: q, ReceiptHandle: a?.ReceiptHandle }));

    const again = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: q,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 15,
        VisibilityTimeout: 30,
      }),
    );
    const returnedAt = Date.now();
    assert.deepEqual(
      (again.Messages ?? []).map((m) => m.Body),
      ['comes-back'],
      'only the undeleted one comes back',
    );
    assert.ok(
      returnedAt >= receivedAt + 8000 - 250,
      `not before its deadline (${returnedAt - receivedAt} ms)`,
    );
    const attrs = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: q,
        AttributeNames: ['ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    assert.equal(attrs.Attributes?.ApproximateNumberOfMessagesNotVisible, '1', 'the deleted one is gone');
  },
);

test(
  'docs/faults.md row 8: Given a FIFO queue, When the leader is killed and a send is repeated with the same deduplication id, Then it is delivered once and group order is kept',
  { timeout: 90_000 },
  async (t) => {
    const { c, leader } = await clusterFor(t);
    const follower: Instance = c.other(leader);
    const sqs = loadClient(c.nginx.url);
    t.after(() => sqs.destroy());
    const q = await createQueue(c.nginx.url, `${uniqueName('s8')}.fifo`.slice(-80), { FifoQueue: 'true' });
    const send = (body: string, dedup: string) =>
      sqs.send(
        new SendMessageCommand({
          QueueUrl: q,
          MessageBody: body,
          MessageGroupId: 'g1',
          MessageDeduplicationId: dedup,
        }),
      );
    const first = await send('m1', 'd1');
    await send('m2', 'd2');
    await send('m3', 'd3');

    await leader.kill9();
    await until('the follower leads', () => follower.ready(), 20_000);
    const repeated = await send('m1', 'd1');
    assert.equal(repeated.MessageId, first.MessageId, 'the repeat is recognised as the same message');
    await send('m4', 'd4');

    const bodies: string[] = [];
    for (let i = 0; i < 10 && bodies.length < 5; i++) {
      const got = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: q, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
      );
      for (const m of got.Messages ?? []) {
        bodies.push(m.Body ?? '');
        await sqs.send(new DeleteMessageCommand({ QueueUrl: q, ReceiptHandle: m.ReceiptHandle }));
      }
      if ((got.Messages ?? []).length === 0 && bodies.length >= 4) break;
    }
    assert.deepEqual(bodies, ['m1', 'm2', 'm3', 'm4']);
  },
);
