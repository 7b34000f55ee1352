/**
 * Fills Redis with one queue of messages the way the server writes them (through the Writer and
 * the store, so records are what the loader reads), fast: the clock does not move and the writer
 * commits every few thousand sends, so a million 256-byte messages take seconds, not a server's
 * request path. Used by the persistence tests and scripts/bench-persistence.ts.
 */
import { randomUUID } from 'node:crypto';
import { ManualClock } from '../../src/core/clock.js';
import { QueueStore } from '../../src/core/store.js';
import { keysFor } from '../../src/persistence/keys.js';
import { loadStore } from '../../src/persistence/loader.js';
import { Writer } from '../../src/persistence/writer.js';
import type { Redis } from 'ioredis';

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
  const keys = keysFor(opts.prefix);
  const clock = new ManualClock(Date.now());
  const store = new QueueStore(clock);
  await loadStore(client, keys, store);
  const writer = new Writer({ redis: client, keys, unavailable: (e) => e });
  writer.attach(store);
  const accountId = opts.accountId ?? '000000000000';
  const name = opts.queueName ?? 'loaded';
  const q =
    store.get(accountId, name, 'us-east-1') ??
    store.create({ accountId, region: 'us-east-1', name }, {}, {}).queue;
  const body = 'x'.repeat(opts.bodySize);
  // Commit about every 16 MiB or 20,000 messages: the writer splits that into calls it can send.
  const every = Math.max(1, Math.min(20_000, Math.floor((16 * 2 ** 20) / (opts.bodySize + 200))));
  const ids: string[] = [];
  for (let i = 0; i < opts.messages; i++) {
    const id = randomUUID();
    ids.push(id);
    q.send({ id, body, md5OfBody: 'd41d8cd98f00b204e9800998ecf8427e', senderId: accountId }, clock.now());
    if (i % every === every - 1) await writer.commit();
  }
  // In flight for an hour: still so when a test reads them back after filling.
  q.receive(opts.inflight ?? 10, 3_600_000, clock.now());
  await writer.commit();
  await writer.close();
  return ids;
}
