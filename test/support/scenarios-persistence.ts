/**
 * Persistence scenarios written once and run over each Redis the server can use: one redis-server
 * or a Redis Cluster (test/integration/persistence-backends.test.ts). Each writes through the
 * writer as the server does (on a Cluster, on the connection of each shard's master:
 * src/persistence/write-connections.ts) and loads what Redis holds into a fresh store, as a
 * restart does, which must equal the store in memory field by field (snapshot.ts). Each scenario
 * takes its own key prefix; time is a ManualClock.
 */
import assert from 'node:assert/strict';
import { Cluster } from 'ioredis';
import { ManualClock } from '../../src/core/clock.js';
import type { Message } from '../../src/core/message.js';
import type { Queue } from '../../src/core/queue.js';
import { QueueStore } from '../../src/core/store.js';
import { layoutFor, type Layout } from '../../src/persistence/layout.js';
import { writeConnections } from '../../src/persistence/write-connections.js';
import { createClient, type RedisClient } from '../../src/persistence/redis.js';
import { Writer } from '../../src/persistence/writer.js';
import { SqsError } from '../../src/sqs/errors.js';
import { loadLayout } from './persistence.js';
import { msg, sendOne } from './queue.js';
import { startRedis, uniquePrefix, type TestRedis } from './redis.js';
import { startRedisCluster, type TestRedisCluster } from './redis-cluster.js';
import { snapshot } from './snapshot.js';

const ACCOUNT = '000000000000';
const REGION = 'us-east-1';
const S = 1000;

/** Where a scenario's Redis is; made by a before hook, closed by an after hook. */
export interface PersistenceBackend {
  readonly name: string;
  /** A client made as the server makes its own (createClient), connected. */
  readonly client: RedisClient;
}

interface Hooks {
  before(fn: () => Promise<void>): void;
  after(fn: () => Promise<void>): void;
}

function backend<T>(
  hooks: Hooks,
  name: string,
  start: () => Promise<T>,
  client: (started: T) => RedisClient,
  stop: (started: T) => Promise<void>,
): PersistenceBackend & { readonly started: T } {
  let started: T | undefined;
  let made: RedisClient | undefined;
  hooks.before(async () => {
    started = await start();
    made = client(started);
    made.on('error', () => undefined);
    await made.connect();
    // A Cluster client refuses a command for a node it is still connecting to (no offline
    // queue), and layout 2 spreads a scenario's keys over every master: connected to all first.
    if (made instanceof Cluster) await Promise.all(made.nodes('master').map((n) => n.ping()));
  });
  hooks.after(async () => {
    made?.disconnect();
    if (started !== undefined) await stop(started);
  });
  return {
    name,
    get client(): RedisClient {
      if (made === undefined) throw new Error(`${name}: the client is made by the before hook`);
      return made;
    },
    get started(): T {
      if (started === undefined) throw new Error(`${name}: started by the before hook`);
      return started;
    },
  };
}

/** One redis-server with AOF always. */
export function singleRedis(hooks: Hooks): PersistenceBackend & { readonly started: TestRedis } {
  return backend(
    hooks,
    'one Redis',
    () => startRedis({ aof: true }),
    (r) => createClient({ url: r.url }),
    (r) => r.stop(),
  );
}

/** Three masters and three replicas (redis-cluster.ts). */
export function redisCluster(hooks: Hooks): PersistenceBackend & { readonly started: TestRedisCluster } {
  return backend(
    hooks,
    'a Redis Cluster',
    startRedisCluster,
    (c) => createClient({ cluster: c.startupNodes }),
    (c) => c.stop(),
  );
}

interface Opened {
  readonly store: QueueStore;
  readonly writer: Writer;
  readonly clock: ManualClock;
}

/** Loads the state in `layout` into a fresh store and subscribes a writer, as the server does. */
async function open(b: PersistenceBackend, layout: Layout, clock = new ManualClock()): Promise<Opened> {
  const store = new QueueStore(clock, { deletedRecentlyMs: 0 });
  await loadLayout(b.client, layout, store);
  const to = await writeConnections(b.client, layout);
  const writer = new Writer({
    layout,
    connectionFor: to.connectionFor,
    multi: to.multi,
    unavailable: (cause) => new SqsError('ServiceUnavailable', cause.message),
  });
  writer.attach(store);
  return { store, writer, clock };
}

/** A fresh load of what Redis holds in `layout`, at the same moment as `clock`. */
async function reload(b: PersistenceBackend, layout: Layout, clock: ManualClock): Promise<QueueStore> {
  const store = new QueueStore(new ManualClock(clock.now()), { deletedRecentlyMs: 0 });
  await loadLayout(b.client, layout, store);
  return store;
}

function create(store: QueueStore, name: string, attrs: Record<string, string> = {}, tags = {}): Queue {
  const fifo = name.endsWith('.fifo') ? { FifoQueue: 'true' } : {};
  return store.create({ accountId: ACCOUNT, region: REGION, name }, { ...fifo, ...attrs }, tags).queue;
}

const key = (id: string, createdAt = 1_000) => ({
  accessKeyId: id,
  secretAccessKey: `secret-of-${id}`,
  createdAt,
});

/** Scenario name → body; the test file runs each over every backend. */
export const persistenceScenarios: Readonly<Record<string, (b: PersistenceBackend) => Promise<void>>> = {
  'Given every kind of change to standard queues, when the state is reloaded from Redis, then it equals the state in memory field by field':
    async (backend) => {
      const layout = layoutFor(uniquePrefix());
      const { store, writer, clock } = await open(backend, layout);

      // Queues: created with attributes and tags, changed, tagged, untagged.
      const a = create(
        store,
        'alpha',
        { VisibilityTimeout: '40', Policy: '{"Version":"2012-10-17"}' },
        { team: 'a' },
      );
      const b = create(store, 'beta', { DelaySeconds: '10' });
      const gone = create(store, 'gone');
      const purged = create(store, 'purged');
      await writer.commit();
      clock.advance(S);
      a.setAttributes({ MessageRetentionPeriod: '3600', ReceiveMessageWaitTimeSeconds: '5' }, clock.now());
      a.setTags({ env: 'prod', owner: 'x' });
      a.removeTags(['owner']);

      // Messages: plain, with attributes, delayed (queue default and per message), received,
      // visibility extended, made visible again, deleted.
      const a1 = sendOne(a, msg('a1'), clock.now());
      sendOne(
        a,
        msg('a2 with attributes', {
          attributes: {
            k: { DataType: 'String', StringValue: 'v' },
            n: { DataType: 'Number', StringValue: '1' },
          },
          md5OfAttributes: 'attrs-md5',
          systemAttributes: { AWSTraceHeader: { DataType: 'String', StringValue: 'Root=1' } },
          md5OfSystemAttributes: 'sys-md5',
        }),
        clock.now(),
      );
      const a3 = sendOne(a, msg('a3'), clock.now());
      sendOne(a, msg('a4 delayed', { delaySeconds: 30 }), clock.now());
      sendOne(a, msg('a5'), clock.now());
      sendOne(b, msg('b1 queue delay'), clock.now());
      await writer.commit();

      clock.advance(S);
      const got = a.receive(3, undefined, clock.now());
      assert.deepEqual(
        got.map((m) => m.id),
        [a1.id, got[1]?.id, a3.id],
      );
      a.changeVisibility(a.receiptHandle(got[0] as Message), 300 * S, clock.now());
      a.changeVisibility(a.receiptHandle(got[1] as Message), 0, clock.now());
      a.deleteMessage(a.receiptHandle(got[2] as Message), clock.now());

      // A purge with messages sent before and after it in the same tick.
      sendOne(purged, msg('p-before'), clock.now());
      await writer.commit();
      sendOne(purged, msg('p-before-2'), clock.now());
      purged.purge(clock.now());
      sendOne(purged, msg('p-after'), clock.now());

      // A deleted queue with messages, and a queue deleted and created again in one tick.
      sendOne(gone, msg('g1'), clock.now());
      await writer.commit();
      store.delete(gone);
      const again = create(store, 'again');
      sendOne(again, msg('r1'), clock.now());
      store.delete(again);
      const again2 = create(store, 'again', { VisibilityTimeout: '5' });
      sendOne(again2, msg('r2'), clock.now());
      await writer.commit();

      // A deadline passes: the delayed message becomes visible, the extended one stays hidden.
      clock.advance(60 * S);
      const restored = await reload(backend, layout, clock);
      assert.deepEqual(snapshot(restored), snapshot(store));
      assert.equal(restored.get(ACCOUNT, 'gone'), undefined);
      assert.equal(restored.get(ACCOUNT, 'purged')?.size, 1);
      assert.equal(restored.get(ACCOUNT, 'again')?.uid, again2.uid);
      await writer.commit();
    },

  'Given a receipt handle issued before a restart, when used after it, then it still changes visibility and deletes':
    async (backend) => {
      const layout = layoutFor(uniquePrefix());
      const { store, writer, clock } = await open(backend, layout);
      const q = create(store, 'handles');
      sendOne(q, msg('hello'), clock.now());
      const [m] = q.receive(1, 30 * S, clock.now());
      assert.ok(m !== undefined);
      const handle = q.receiptHandle(m);
      await writer.commit();

      const after = await open(backend, layout, new ManualClock(clock.now() + S));
      const q2 = after.store.require(ACCOUNT, 'handles');
      q2.changeVisibility(handle, 60 * S, after.clock.now());
      q2.deleteMessage(handle, after.clock.now());
      assert.equal(q2.size, 0);
      await after.writer.commit();
      const third = await reload(backend, layout, after.clock);
      assert.equal(third.require(ACCOUNT, 'handles').size, 0);
    },

  'Given FIFO queues with messages in flight in their groups, deduplication and receive-attempt records, a dead letter and a move task, when reloaded, then they equal the state in memory and go on from it':
    async (backend) => {
      const layout = layoutFor(uniquePrefix());
      const { store, writer, clock } = await open(backend, layout);
      const dlq = create(store, 'dlq.fifo');
      const q = create(store, 'q.fifo', {
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 1 }),
        VisibilityTimeout: '30',
      });
      const sent = (
        [
          ['a1', 'a'],
          ['a2', 'a'],
          ['b1', 'b'],
          ['c1', 'c'],
        ] as const
      ).map(([body, group]) =>
        q.sendMessage(msg(body, { groupId: group, deduplicationId: body }), clock.now()),
      );
      // a1 in flight, received with a ReceiveRequestAttemptId: a2 waits behind it.
      const attempt = q.receive(1, undefined, clock.now(), 'attempt');
      assert.deepEqual(
        attempt.map((m) => m.body),
        ['a1'],
      );
      // c1 is received twice: over maxReceiveCount, it moves to the DLQ on the next receive.
      const [b1, c1] = q.receive(2, undefined, clock.now());
      assert.deepEqual([b1?.body, c1?.body], ['b1', 'c1']);
      q.deleteMessage(q.receiptHandle(b1 as Message), clock.now());
      q.changeVisibility(q.receiptHandle(c1 as Message), 0, clock.now());
      await writer.commit();
      clock.advance(S);
      q.receive(10, undefined, clock.now());
      assert.equal(dlq.size, 1, 'c1 moved to the DLQ on its second receive');
      await writer.commit();
      // The dead letter goes back to its source (the move task stepped once).
      const task = store.startMoveTask(ACCOUNT, dlq.arn, undefined, 1);
      await writer.commit();

      clock.advance(S);
      const restored = await open(backend, layout, new ManualClock(clock.now()));
      assert.deepEqual(snapshot(restored.store), snapshot(store));
      assert.equal(restored.store.moveTasks.list(dlq.arn)[0]?.taskId, task.taskId);
      const back = restored.store.require(ACCOUNT, 'q.fifo');
      // The same attempt id returns the same receipt handle; a deduplicated send is a duplicate.
      assert.deepEqual(
        back.receive(1, undefined, restored.clock.now(), 'attempt').map((m) => back.receiptHandle(m)),
        attempt.map((m) => q.receiptHandle(m)),
      );
      const again = back.sendMessage(
        msg('b1', { groupId: 'b', deduplicationId: 'b1' }),
        restored.clock.now(),
      );
      assert.equal(again.message, undefined, 'b1 is still a duplicate within 5 minutes');
      const next = back.sendMessage(msg('d1', { groupId: 'd', deduplicationId: 'd1' }), restored.clock.now());
      assert.ok(
        BigInt(next.sequenceNumber ?? '0') > BigInt(sent.at(-1)?.sequenceNumber ?? '0'),
        'sequence numbers go on',
      );
      await restored.writer.commit();
    },

  'Given tenants created, given new keys and deleted, when reloaded, then they equal the tenants in memory':
    async (backend) => {
      const layout = layoutFor(uniquePrefix());
      const { store, writer, clock } = await open(backend, layout);
      const a = store.tenants.create('team-a', '111111111111', [key('AKIAA1')], clock.now());
      store.tenants.create('team-b', '222222222222', [key('AKIAB1')], clock.now());
      const gone = store.tenants.create('gone', '333333333333', [key('AKIAG1')], clock.now());
      await writer.commit();
      store.tenants.addKey(a, key('AKIAA2', 2_000), false);
      store.tenants.addKey(a, key('AKIAA3', 3_000), true);
      store.tenants.delete(gone);
      await writer.commit();

      const restored = await reload(backend, layout, clock);
      assert.deepEqual(snapshot(restored), snapshot(store));
      assert.equal(restored.tenants.byAccessKeyId('AKIAA1'), undefined, 'a replaced key stays gone');
      assert.equal(restored.tenants.get('gone'), undefined);
    },
};
