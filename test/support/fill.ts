/**
 * Fills Redis with one queue of messages as the server stores them, fast: the queue is created
 * through the Writer, then the messages are sent into the same in-memory queue (with the clock
 * standing still) and their records, from the codec, go to Redis in pipelined HSETs of 1,000
 * fields, followed by the queue's next sequence number: a million 256-byte messages in seconds,
 * not a server's request path. Used by the persistence tests.
 */
import { randomUUID } from 'node:crypto';
import { ManualClock } from '../../src/core/clock.js';
import type { Message } from '../../src/core/message.js';
import { QueueStore } from '../../src/core/store.js';
import { serializeMessage } from '../../src/persistence/codec.js';
import { layoutFor } from '../../src/persistence/layout.js';
import { connectRedis } from '../../src/persistence/redis.js';
import { Writer } from '../../src/persistence/writer.js';
import type { Redis } from 'ioredis';
import { loadLayout, shardKeysOf } from './persistence.js';
import { sendOne } from './queue.js';

export interface FillOptions {
  readonly messages: number;
  readonly bodySize: number;
  readonly prefix?: string;
  readonly queueName?: string;
  readonly accountId?: string;
  /** Messages received (in flight) after the sends, as in a real queue; default 10. */
  readonly inflight?: number;
}

/** Returns the ids of the messages written, in send order. */
export async function fillQueue(client: Redis, opts: FillOptions): Promise<string[]> {
  const layout = layoutFor(opts.prefix);
  const clock = new ManualClock(Date.now());
  const store = new QueueStore(clock);
  await loadLayout(client, layout, store);
  const writer = new Writer({ layout, connectionFor: () => client, unavailable: (e) => e });
  writer.attach(store);
  const accountId = opts.accountId ?? '000000000000';
  const name = opts.queueName ?? 'loaded';
  const q =
    store.get(accountId, name, 'us-east-1') ??
    store.create({ accountId, region: 'us-east-1', name }, {}, {}).queue;
  // From here the writer ignores the store: the records are written below, in bulk.
  await writer.close();
  const body = 'x'.repeat(opts.bodySize);
  const sent: Message[] = [];
  for (let i = 0; i < opts.messages; i++) {
    sent.push(
      sendOne(
        q,
        { id: randomUUID(), body, md5OfBody: 'd41d8cd98f00b204e9800998ecf8427e', senderId: accountId },
        clock.now(),
      ),
    );
  }
  // In flight for an hour: still so when a test reads them back after filling.
  q.receive(opts.inflight ?? 10, 3_600_000, clock.now());
  // Beside the queue's record, which the writer put in its shard.
  const shardKeys = shardKeysOf(layout, q);
  const key = shardKeys.messages(q.uid);
  // About 16 MiB per pipeline, at most 1,000 fields per HSET.
  const perHset = Math.max(1, Math.min(1000, Math.floor((4 * 2 ** 20) / (opts.bodySize + 200))));
  let pipeline = client.pipeline();
  let pending = 0;
  for (let i = 0; i < sent.length; i += perHset) {
    const args: string[] = [];
    for (const m of sent.slice(i, i + perHset)) args.push(m.id, serializeMessage(m));
    pipeline.hset(key, ...args);
    if (++pending === 4) {
      await execOk(pipeline);
      pipeline = client.pipeline();
      pending = 0;
    }
  }
  pipeline.hset(shardKeys.seq, q.uid, String(q.nextSequence));
  await execOk(pipeline);
  return sent.map((m) => m.id);
}

/** {@link fillQueue} on a connection of its own to `url` (commands may take a minute). */
export async function fillQueueAt(url: string, opts: FillOptions): Promise<string[]> {
  const client = await connectRedis({ url, commandTimeoutMs: 60_000 });
  try {
    return await fillQueue(client, opts);
  } finally {
    client.disconnect();
  }
}

async function execOk(pipeline: ReturnType<Redis['pipeline']>): Promise<void> {
  for (const [err] of (await pipeline.exec()) ?? []) if (err !== null) throw err;
}
