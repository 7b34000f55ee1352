/**
 * The writer of layout v2 on a Redis Cluster of 3 masters (test/support/redis-cluster.ts): a tick
 * over queues whose shards are on every master is one pipeline per master, each shard's records
 * land on the master of its slot, and a shard whose lease another instance holds fails alone
 * until resetShard. And the catalog as a directory on a Cluster: a CatalogMirror finds every
 * catalog hash through the index and follows the feed, and repairCatalog runs on the meta slot.
 */
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/core/clock.js';
import type { Queue } from '../../src/core/queue.js';
import { QueueStore } from '../../src/core/store.js';
import { CatalogMirror } from '../../src/persistence/catalog-mirror.js';
import { repairCatalog } from '../../src/persistence/catalog-repair.js';
import { layoutFor, type Layout } from '../../src/persistence/layout.js';
import { createCluster } from '../../src/persistence/redis.js';
import { FencedError } from '../../src/persistence/scripts.js';
import { writeConnections } from '../../src/persistence/write-connections.js';
import { Writer, type Scope } from '../../src/persistence/writer.js';
import { shardOf } from '../../src/shard/hash.js';
import { keySlot } from '../../src/shard/slot.js';
import { SqsError } from '../../src/sqs/errors.js';
import { isSqsError } from '../support/assertions.js';
import { startRedisCluster, type ClusterMaster, type TestRedisCluster } from '../support/redis-cluster.js';
import { uniquePrefix } from '../support/redis.js';
import { testsRequiring } from '../support/requires.js';
import { msg, sendOne } from '../support/queue.js';
import type { Cluster } from 'ioredis';

const { after, before, test } = testsRequiring('redis-server');

const ACCOUNT = '000000000000';
const REGION = 'us-east-1';
const is503 = isSqsError('ServiceUnavailable');

let cluster: TestRedisCluster;
let client: Cluster;
let masters: ClusterMaster[];

before(async () => {
  cluster = await startRedisCluster();
  client = createCluster({ cluster: cluster.startupNodes, commandTimeoutMs: 5000 });
  client.on('error', () => undefined);
  await client.connect();
  masters = await cluster.masters();
});

after(async () => {
  client?.disconnect();
  await cluster?.stop();
});

const owns = (m: ClusterMaster, key: string): boolean =>
  m.slots.some(([first, last]) => keySlot(key) >= first && keySlot(key) <= last);

/** One queue name per master, each in a shard that master owns. */
function namePerMaster(layout: Layout): string[] {
  return masters.map((m) => {
    for (let i = 0; ; i++) {
      const s = shardOf(ACCOUNT, REGION, `q${i}`);
      if (owns(m, layout.shards[s]?.commit ?? '')) return `q${i}`;
    }
  });
}

async function evalshaCalls(port: number): Promise<number> {
  const info = await cluster.node(port).info('commandstats');
  return Number(/^cmdstat_evalsha:calls=(\d+)/m.exec(info)?.[1] ?? 0);
}

interface Opened {
  readonly layout: Layout;
  readonly store: QueueStore;
  readonly writer: Writer;
  readonly queues: Queue[];
  readonly failures: [Scope, Error][];
  readonly tokens: Map<Scope, string>;
  readonly clock: ManualClock;
}

async function open(): Promise<Opened> {
  const layout = layoutFor(uniquePrefix());
  const to = await writeConnections(client, layout);
  assert.equal(to.multi, false);
  const clock = new ManualClock();
  const store = new QueueStore(clock, { deletedRecentlyMs: 0 });
  const failures: [Scope, Error][] = [];
  const tokens = new Map<Scope, string>();
  const writer = new Writer({
    layout,
    connectionFor: to.connectionFor,
    multi: to.multi,
    token: (s) => tokens.get(s) ?? '',
    unavailable: (cause) => new SqsError('ServiceUnavailable', cause.message),
    onFailure: (s, e) => failures.push([s, e]),
  });
  writer.attach(store);
  const queues = namePerMaster(layout).map(
    (name) => store.create({ accountId: ACCOUNT, region: REGION, name }, {}, {}).queue,
  );
  await writer.commit();
  return { layout, store, writer, queues, failures, tokens, clock };
}

let ids = 0;
function send(o: Opened, q: Queue, body: string): string {
  return sendOne(q, msg(body, { id: `m-${++ids}`, senderId: ACCOUNT }), o.clock.now()).id;
}

/** The master that owns the queue's shard. */
function masterOf(o: Opened, q: Queue): ClusterMaster {
  const m = masters.find((x) => owns(x, o.layout.shards[q.shard]?.commit ?? ''));
  assert.ok(m !== undefined);
  return m;
}

async function stored(o: Opened, q: Queue): Promise<string[]> {
  const key = o.layout.shards[q.shard]?.messages(q.uid) ?? '';
  return (await cluster.node(masterOf(o, q).port).hkeys(key)).sort();
}

test('Given queues in shards on each of 3 masters, when one tick sends to each, then each master runs one call and holds its shard’s message', async () => {
  assert.equal(masters.length, 3);
  const o = await open();
  assert.deepEqual(new Set(o.queues.map((q) => masterOf(o, q).port)).size, 3, 'one queue per master');
  const before = await Promise.all(masters.map((m) => evalshaCalls(m.port)));
  const sent = o.queues.map((q) => send(o, q, `to ${q.name}`));
  await o.writer.commit();
  const after = await Promise.all(masters.map((m) => evalshaCalls(m.port)));
  assert.deepEqual(
    after.map((n, i) => n - (before[i] ?? 0)),
    [1, 1, 1],
    'one apply call per master',
  );
  for (const [i, q] of o.queues.entries()) assert.deepEqual(await stored(o, q), [sent[i]], q.name);
  const catalog = o.layout.meta.catalog(ACCOUNT, REGION);
  const metaMaster = masters.find((m) => owns(m, catalog));
  assert.ok(metaMaster !== undefined);
  assert.equal(
    await cluster.node(metaMaster.port).hlen(catalog),
    3,
    'the catalog on the master of the meta tag',
  );
});

test('Given a shard whose lease another instance holds, when a tick writes to shards on 3 masters, then only that shard fails, until resetShard', async () => {
  const o = await open();
  const [bad, ...good] = o.queues as [Queue, Queue, Queue];
  const lease = o.layout.shards[bad.shard]?.lease ?? '';
  await client.set(lease, 'another instance');
  o.tokens.set(bad.shard, 'tok');
  const sent = o.queues.map((q) => send(o, q, 'first'));
  const settled = await Promise.allSettled(o.queues.map((q) => o.writer.commit([q.shard])));
  assert.deepEqual(
    settled.map((s) => s.status),
    ['rejected', 'fulfilled', 'fulfilled'],
  );
  assert.ok(settled[0]?.status === 'rejected' && is503(settled[0].reason));
  assert.equal(o.failures.length, 1);
  assert.equal(o.failures[0]?.[0], bad.shard);
  assert.ok(o.failures[0]?.[1] instanceof FencedError);
  for (const [i, q] of good.entries()) assert.deepEqual(await stored(o, q), [sent[i + 1]]);
  assert.deepEqual(await stored(o, bad), []);

  await client.set(lease, 'tok');
  o.writer.resetShard(bad.shard);
  const again = send(o, bad, 'again');
  await o.writer.commit();
  assert.deepEqual(await stored(o, bad), [again]);
  assert.equal(o.failures.length, 1);
});

test('Given a Cluster, when a CatalogMirror of a process owning no shard starts, then it lists the queues of every master, follows the feed, and sees what repairCatalog deletes', async () => {
  const o = await open();
  const observer = new QueueStore(new ManualClock(), { deletedRecentlyMs: 0, ownedShards: [] });
  const errors: Error[] = [];
  const mirror = new CatalogMirror({
    redis: client,
    layout: o.layout,
    catalog: observer.catalog,
    intervalMs: 600_000,
    onError: (e) => errors.push(e),
  });
  await mirror.start();
  try {
    const listed = (): string[] => observer.catalog.list(ACCOUNT, '', REGION).map((e) => e.name);
    assert.deepEqual(listed(), o.queues.map((q) => q.name).sort());
    const late = o.store.create({ accountId: ACCOUNT, region: REGION, name: 'late' }, {}, {}).queue;
    await o.writer.commit();
    for (let i = 0; !listed().includes(late.name); i++) {
      assert.ok(i < 500, 'the feed brought the new queue');
      await new Promise((r) => setTimeout(r, 20));
    }
    const [gone] = o.queues as [Queue];
    const repaired = await repairCatalog(client, o.layout, gone.shard, []);
    assert.deepEqual(repaired.deleted, [`${ACCOUNT}:${REGION}:${gone.name}`]);
    for (let i = 0; listed().includes(gone.name); i++) {
      assert.ok(i < 500, 'the repair was announced');
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.deepEqual(errors, []);
  } finally {
    await mirror.stop();
  }
});
