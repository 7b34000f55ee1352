/**
 * The writer's replica wait with layout v2: one WAIT per connection per bundle, whatever the
 * number of shards in it, counting for each of them. Against real redis-servers: a master with
 * one replica (a tick over three shards is one EXEC and one WAIT, and every message is on the
 * replica when the commit resolves) and a master alone (WAIT 1 cannot be satisfied: every shard
 * of the bundle fails, each told once).
 */
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/core/clock.js';
import type { Queue } from '../../src/core/queue.js';
import { QueueStore } from '../../src/core/store.js';
import { layoutFor, type Layout } from '../../src/persistence/layout.js';
import { connectRedis } from '../../src/persistence/redis.js';
import { ReplicaWaitError, Writer, type Scope } from '../../src/persistence/writer.js';
import { shardOf } from '../../src/shard/hash.js';
import { SqsError } from '../../src/sqs/errors.js';
import { isSqsError } from '../support/assertions.js';
import { startRedis, uniquePrefix, type TestRedis } from '../support/redis.js';
import { testsRequiring } from '../support/requires.js';
import { msg, sendOne } from '../support/queue.js';
import type { Redis } from 'ioredis';

const { after, before, test } = testsRequiring('redis-server');

const ACCOUNT = '000000000000';
const REGION = 'us-east-1';

let master: TestRedis;
let alone: TestRedis;
let replica: TestRedis;
const clients: Redis[] = [];

before(async () => {
  [master, alone] = await Promise.all([startRedis(), startRedis()]);
  replica = await startRedis({ replicaOf: master.port });
});
after(async () => {
  for (const c of clients) c.disconnect();
  await replica.stop();
  await Promise.all([master.stop(), alone.stop()]);
});

/** Three names whose shards differ. */
function names(): string[] {
  const out: string[] = [];
  const shards = new Set<number>();
  for (let i = 0; out.length < 3; i++) {
    const s = shardOf(ACCOUNT, REGION, `r${i}`);
    if (!shards.has(s)) {
      shards.add(s);
      out.push(`r${i}`);
    }
  }
  return out;
}

interface Opened {
  readonly c: Redis;
  readonly layout: Layout;
  readonly writer: Writer;
  readonly queues: Queue[];
  readonly clock: ManualClock;
  readonly failures: [Scope, Error][];
  readonly waits: boolean[];
}

async function open(on: TestRedis, timeoutMs: number): Promise<Opened> {
  const c = await connectRedis({ url: on.url, commandTimeoutMs: 10_000 });
  clients.push(c);
  const layout = layoutFor(uniquePrefix());
  const clock = new ManualClock();
  const store = new QueueStore(clock, { deletedRecentlyMs: 0 });
  const failures: [Scope, Error][] = [];
  const waits: boolean[] = [];
  const writer = new Writer({
    layout,
    connectionFor: () => c,
    unavailable: (cause) => new SqsError('ServiceUnavailable', cause.message),
    onFailure: (s, e) => failures.push([s, e]),
    replicas: { count: 1, timeoutMs, aof: false, observe: (_s, ok) => waits.push(ok) },
  });
  writer.attach(store);
  const queues = names().map(
    (name) => store.create({ accountId: ACCOUNT, region: REGION, name }, {}, {}).queue,
  );
  return { c, layout, writer, queues, clock, failures, waits };
}

async function calls(c: Redis, name: string): Promise<number> {
  const info = await c.info('commandstats');
  return Number(new RegExp(`^cmdstat_${name}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
}

let ids = 0;
function sendToEach(o: Opened): string[] {
  return o.queues.map(
    (q) => sendOne(q, msg('replicated', { id: `m-${++ids}`, senderId: ACCOUNT }), o.clock.now()).id,
  );
}

test('Given a master with a replica, when a tick writes to three shards, then one WAIT follows its one EXEC, and every message is on the replica once the commit resolves', async () => {
  const o = await open(master, 5000);
  await o.writer.commit();
  const [exec, wait] = [await calls(master.client, 'exec'), await calls(master.client, 'wait')];
  const sent = sendToEach(o);
  await o.writer.commit();
  assert.equal((await calls(master.client, 'exec')) - exec, 1);
  assert.equal((await calls(master.client, 'wait')) - wait, 1, 'one WAIT for the three shards');
  assert.deepEqual(o.waits, [true, true], 'the queues created, then the messages');
  for (const [i, q] of o.queues.entries()) {
    const key = o.layout.shards[q.shard]?.messages(q.uid) ?? '';
    assert.deepEqual(await replica.client.hkeys(key), [sent[i]], `${q.name} on the replica`);
  }
  assert.deepEqual(o.failures, []);
});

test('Given a master alone and a wait for 1 replica, when a tick writes to three shards and meta, then each of them fails once, as a ReplicaWaitError', async () => {
  const o = await open(alone, 20);
  await assert.rejects(o.writer.commit(), isSqsError('ServiceUnavailable'));
  for (const q of o.queues)
    await assert.rejects(o.writer.commit([q.shard]), isSqsError('ServiceUnavailable'));
  await assert.rejects(o.writer.commit(['meta']), isSqsError('ServiceUnavailable'));
  assert.deepEqual(
    o.failures.map(([s]) => s).sort(),
    ['meta', ...o.queues.map((q) => q.shard)].sort(),
    'every scope of the bundle, once',
  );
  assert.ok(o.failures.every(([, e]) => e instanceof ReplicaWaitError));
  assert.deepEqual(o.waits, [false]);
  // Outcome unknown, not refused: the writes are on the master.
  const [first] = o.queues as [Queue];
  assert.ok((await alone.client.hget(o.layout.shards[first.shard]?.queues ?? '', first.uid)) !== null);
});
