/**
 * The lifetime of transfer marks (`in:<uid>`: src/persistence/marks.ts). A message another owner
 * sends to a queue here is taken as the router takes it (src/owners/router.ts, accept: put unless
 * marked, marked in the same write), on a real redis-server and a ManualClock; the marks are
 * pruned by Persistence.pruneMarks, one bounded step at a time. Checked: a mark older than the
 * lifetime goes and a younger one stays, to the millisecond; a mark of the format before the time
 * was recorded is stamped and lives a whole lifetime from then; a sending again within a
 * message's longest life is still answered by the mark (the message there once); one step looks
 * at about `pruneMarksCount` marks however many there are; a step whose lease is another's
 * changes nothing. And a server started without --active-active (one process, and active/passive)
 * prunes the marks an earlier active/active run left: nothing else would delete them.
 */
import assert from 'node:assert/strict';
import { CreateQueueCommand } from '@aws-sdk/client-sqs';
import { MAX_RETENTION_SECONDS } from '../../src/core/limits.js';
import type { NewMessage } from '../../src/core/message.js';
import type { Queue } from '../../src/core/queue.js';
import type { QueueStore } from '../../src/core/store.js';
import { MARK_LIFETIME_MS, MarkPruner, marksKey } from '../../src/persistence/marks.js';
import type { Persistence } from '../../src/persistence/persistence.js';
import { layoutFor } from '../../src/persistence/layout.js';
import { createRedis } from '../../src/persistence/redis.js';
import { shardOf } from '../../src/shard/hash.js';
import { until } from '../support/layout-v1.js';
import { watchedPersistence, type WatchedPersistence } from '../support/persistence.js';
import { msg } from '../support/queue.js';
import { testsRequiring } from '../support/requires.js';
import { uniquePrefix } from '../support/redis.js';
import { sqsClient, startServer } from '../support/server.js';
import { sharedRedis } from '../support/sqs.js';

const { after, before, test } = testsRequiring('redis-server');
const redis = sharedRedis({ before, after }, { aof: false });

const DAY = 86_400_000;
const ACCOUNT = '000000000000';
const REGION = 'us-east-1';

interface Started {
  readonly w: WatchedPersistence;
  readonly store: QueueStore;
  /** A queue keeping messages as long as SQS allows: where messages from another owner arrive. */
  readonly dest: Queue;
  /** Its marks' hash, as Redis names it. */
  readonly key: string;
}

async function started(pruneMarksCount?: number): Promise<Started> {
  const w = watchedPersistence(createRedis({ url: redis.url }), { pruneMarksCount });
  const first = w.reloaded();
  await w.p.start();
  const store = await first;
  const dest = store.create(
    { accountId: ACCOUNT, region: REGION, name: 'arrivals' },
    { MessageRetentionPeriod: String(MAX_RETENTION_SECONDS) },
    {},
  ).queue;
  await w.p.commit();
  return { w, store, dest, key: marksKey(w.layout, dest.shard, dest.uid) };
}

/** What the destination's owner does with a sending (Router.accept): put unless marked, then mark. */
async function accept(p: Persistence, q: Queue, m: NewMessage, now: number): Promise<'put' | 'marked'> {
  const marked = await p.transferMarked(q.shard, q.uid, m.id);
  if (!marked) {
    q.sendMessage(m, now);
    p.acceptedTransfer(q, m.id);
  }
  await p.commit(q.shard);
  return marked ? 'marked' : 'put';
}

/** Steps until a pass over every queue served ended; what it did. */
async function pass(p: Persistence): Promise<{ steps: number; deleted: number; stamped: number }> {
  const out = { steps: 0, deleted: 0, stamped: 0 };
  for (;;) {
    const step = await p.pruneMarks();
    assert.ok(step !== undefined, 'a queue is served');
    out.steps++;
    out.deleted += step.deleted;
    out.stamped += step.stamped;
    if (step.passEnded) return out;
    assert.ok(out.steps < 10_000, 'the pass ends');
  }
}

void test('Given marks of messages another owner sent, when a pass prunes them, then one exactly as old as the lifetime (14 days and one) is kept, one a millisecond older is deleted, and a younger one is kept', async () => {
  const { w, dest, key } = await started();
  const [old, young] = [msg('old'), msg('young')];
  const t0 = w.clock.now();
  assert.equal(await accept(w.p, dest, old, t0), 'put');
  w.clock.advance(10 * DAY);
  assert.equal(await accept(w.p, dest, young, w.clock.now()), 'put');
  assert.equal(await redis.client.hget(key, old.id), `${dest.shard}:${t0}`, 'the mark says when');
  assert.equal(MARK_LIFETIME_MS, 15 * DAY);

  w.clock.advance(MARK_LIFETIME_MS - 10 * DAY);
  assert.deepEqual(await pass(w.p), { steps: 1, deleted: 0, stamped: 0 });
  assert.equal(await w.p.transferMarked(dest.shard, dest.uid, old.id), true, 'kept for its whole lifetime');

  w.clock.advance(1);
  assert.deepEqual(await pass(w.p), { steps: 1, deleted: 1, stamped: 0 });
  assert.equal(await w.p.transferMarked(dest.shard, dest.uid, old.id), false);
  assert.equal(await w.p.transferMarked(dest.shard, dest.uid, young.id), true);
  assert.deepEqual(await redis.client.hkeys(key), [young.id]);
  await w.p.close();
});

void test('Given a mark written before marks held their time (its value only the scope), when passes prune long after, then the first stamps it with its own time and it is deleted only a whole lifetime after that', async () => {
  const { w, dest, key } = await started();
  await redis.client.hset(key, 'legacy-id', String(dest.shard));
  // How old it really is cannot be told: it may be older than any lifetime.
  w.clock.advance(100 * DAY);
  const stampedAt = w.clock.now();
  assert.deepEqual(await pass(w.p), { steps: 1, deleted: 0, stamped: 1 });
  assert.equal(await redis.client.hget(key, 'legacy-id'), `${dest.shard}:${stampedAt}`);

  w.clock.advance(MARK_LIFETIME_MS);
  assert.deepEqual(await pass(w.p), { steps: 1, deleted: 0, stamped: 0 });
  assert.equal(await w.p.transferMarked(dest.shard, dest.uid, 'legacy-id'), true, 'never deleted early');

  w.clock.advance(1);
  assert.deepEqual(await pass(w.p), { steps: 1, deleted: 1, stamped: 0 });
  assert.equal(await redis.client.exists(key), 0);
  await w.p.close();
});

void test('Given a message taken from another owner, when the sender sends it again as late as the message can live, after passes pruned meanwhile, then the mark answers it: the queue holds it once, in memory and in Redis', async () => {
  const { w, dest } = await started();
  const m = msg('relayed once');
  assert.equal(await accept(w.p, dest, m, w.clock.now()), 'put');
  for (let day = 0; day < 14; day++) {
    w.clock.advance(DAY - (day === 13 ? 1 : 0));
    await pass(w.p);
  }
  assert.equal(await accept(w.p, dest, m, w.clock.now()), 'marked');
  const ids = (q: Queue): string[] => [...q.allMessages()].map((x) => x.id);
  assert.deepEqual(ids(dest), [m.id], 'lost = 0, no duplicate');
  await w.p.close();

  // What Redis holds, as the next owner of the shard would read it.
  const next = watchedPersistence(createRedis({ url: redis.url }), { layout: w.layout });
  const loaded = next.reloaded();
  await next.p.start();
  const store = await loaded;
  assert.deepEqual(ids(store.require(ACCOUNT, 'arrivals', REGION)), [m.id]);
  assert.equal(await next.p.transferMarked(dest.shard, dest.uid, m.id), true);
  await next.p.close();
});

void test('Given 2,000 marks past their lifetime in one queue, when pruned with a count of 100, then each step deletes about that many, never all, and steps go on until none is left', async () => {
  const count = 100;
  const { w, dest, key } = await started(count);
  const old = w.clock.now() - MARK_LIFETIME_MS - 1;
  const fields: string[] = [];
  for (let i = 0; i < 2000; i++) fields.push(`old-${i}`, `${dest.shard}:${old}`);
  await redis.client.hset(key, ...fields);

  const first = await w.p.pruneMarks();
  assert.ok(first !== undefined && !first.passEnded);
  assert.ok(first.deleted > 0, 'the step deleted some');
  // HSCAN's COUNT is a number of buckets: a bucket's chain may bring a few more.
  assert.ok(first.visited <= 2 * count, `one step looked at ${first.visited} marks`);
  assert.equal(first.deleted, first.visited);
  assert.equal(await redis.client.hlen(key), 2000 - first.deleted);

  const rest = await pass(w.p);
  assert.equal(first.deleted + rest.deleted, 2000);
  assert.ok(rest.steps + 1 >= 2000 / (2 * count), `${rest.steps + 1} steps`);
  assert.equal(await redis.client.exists(key), 0);
  await w.p.close();
});

void test("Given a shard's lease held by another token, when a pruning step runs with this process's token, then it is refused (fenced) and no mark changes", async () => {
  const { w, dest, key } = await started();
  const lease = w.layout.shards[dest.shard]?.lease ?? '';
  await redis.client.set(lease, 'the-new-owner');
  await redis.client.hset(key, 'old', `${dest.shard}:1`, 'legacy', String(dest.shard));
  const pruner = new MarkPruner({ redis: redis.client, layout: w.layout, token: () => 'the-old-owner' });
  const step = await pruner.step(w.clock.now(), () => [{ shard: dest.shard, uid: dest.uid }]);
  assert.equal(step?.fenced, true);
  assert.deepEqual(await redis.client.hgetall(key), { old: `${dest.shard}:1`, legacy: String(dest.shard) });
  await w.p.close();
});

for (const [mode, args] of [
  ['one process', []],
  ['active/passive', ['--leader-election']],
] as const) {
  void test(`Given marks an earlier active/active run left, when a server (${mode}) serves their queue, then the one older than the lifetime is pruned and the younger one kept`, async (t) => {
    const prefix = uniquePrefix();
    const server = await startServer({
      args: ['--redis-addr', `127.0.0.1:${redis.server.port}`, '--redis-prefix', prefix, ...args],
    });
    t.after(() => server.stop());
    const sqs = sqsClient(server.url);
    t.after(() => sqs.destroy());
    // JSON 1.0; an active/passive instance answers once it leads.
    await until(
      'the queue created',
      () =>
        sqs.send(new CreateQueueCommand({ QueueName: 'arrivals' })).then(
          () => true,
          () => false,
        ),
      (ok) => ok,
    );
    const keys = layoutFor(prefix).shards[shardOf(ACCOUNT, REGION, 'arrivals')];
    assert.ok(keys !== undefined);
    const [uid] = Object.keys(await redis.client.hgetall(keys.queues));
    assert.ok(uid !== undefined);
    const key = `${keys.prefix}in:${uid}`;
    const now = Date.now();
    await redis.client.hset(key, 'old', `7:${now - MARK_LIFETIME_MS - DAY}`, 'young', `7:${now - DAY}`);
    await until(
      'the old mark pruned',
      () => redis.client.hkeys(key),
      (k) => !k.includes('old'),
    );
    assert.deepEqual(await redis.client.hkeys(key), ['young']);
  });
}
