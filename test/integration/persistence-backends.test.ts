/**
 * The persistence scenarios of test/support/scenarios-persistence.ts over one redis-server and
 * over a Redis Cluster of three masters and three replicas, and what only a Cluster has: the
 * writer's WAIT goes to the master that took its writes, and what it acknowledged is on that
 * master's replica; a master that stops answering is a 503 and a reload, never a resend; the
 * leader lock's release is heard by a subscriber through the Cluster client.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe } from 'node:test';
import { ManualClock } from '../../src/core/clock.js';
import { QueueStore } from '../../src/core/store.js';
import { lockKeys, RedisLock, ReleaseListener } from '../../src/ha/lock.js';
import { layoutFor } from '../../src/persistence/layout.js';
import { shardOf } from '../../src/shard/hash.js';
import { Persistence } from '../../src/persistence/persistence.js';
import { createClient } from '../../src/persistence/redis.js';
import type { ClusterMaster } from '../support/redis-cluster.js';
import { keySlot } from '../../src/shard/slot.js';
import { SqsError } from '../../src/sqs/errors.js';
import { isSqsError } from '../support/assertions.js';
import { msg, sendOne } from '../support/queue.js';
import { watchedPersistence } from '../support/persistence.js';
import { uniquePrefix } from '../support/redis.js';
import { testsRequiring } from '../support/requires.js';
import { persistenceScenarios, redisCluster, singleRedis } from '../support/scenarios-persistence.js';

const { after, before, test } = testsRequiring('redis-server');

const single = singleRedis({ before, after });
const cluster = redisCluster({ before, after });

for (const backend of [single, cluster]) {
  void describe(`over ${backend.name}`, () => {
    for (const [name, scenario] of Object.entries(persistenceScenarios)) {
      test(name, () => scenario(backend));
    }
  });
}

/** The master of the slot of `prefix`, with its replica. */
async function ownerOf(prefix: string): Promise<ClusterMaster & { readonly replica: number }> {
  const slot = keySlot(prefix);
  const owner = (await cluster.started.masters()).find((m) =>
    m.slots.some(([first, last]) => slot >= first && slot <= last),
  );
  const [replica] = owner?.replicas ?? [];
  assert.ok(owner !== undefined && replica !== undefined, `a master with a replica owns slot ${slot}`);
  return { ...owner, replica };
}

test('Given the slot master of a Redis Cluster stops answering (SIGSTOP), when a change is committed, then it is answered ServiceUnavailable, and once the master answers again the state is reloaded with what was acknowledged', async () => {
  const {
    p,
    layout,
    clock,
    stores,
    reloaded: nextStore,
  } = watchedPersistence(createClient({ cluster: cluster.started.startupNodes }));
  const owner = await ownerOf(layout.shards[shardOf('000000000000', 'us-east-1', 'frozen')]?.prefix ?? '');
  try {
    await p.start();
    const q = (stores[0] as QueueStore).create(
      { accountId: '000000000000', region: 'us-east-1', name: 'frozen' },
      {},
      {},
    ).queue;
    const kept = sendOne(q, msg('kept'), clock.now());
    await p.commit();

    cluster.started.pause(owner.port);
    const reloaded = nextStore();
    try {
      sendOne(q, msg('unknown outcome'), clock.now());
      await assert.rejects(p.commit(), isSqsError('ServiceUnavailable'));
      assert.equal(p.serving, false);
    } finally {
      cluster.started.resume(owner.port);
    }
    const again = await reloaded;
    assert.equal(p.state, 'serving');
    const bodies = [...again.require('000000000000', 'frozen').allMessages()].map((m) => m.body);
    // The timed-out write may have been applied when the node woke up: its outcome is unknown.
    assert.ok(bodies.includes(kept.body), `the acknowledged message is back: ${bodies.join(', ')}`);
    sendOne(again.require('000000000000', 'frozen'), msg('after'), clock.now());
    await p.commit();
  } finally {
    await p.close();
  }
});

test("Given --redis-wait-replicas 1 on a Redis Cluster, when a message is sent, then WAIT went to the master of its queue's shard only, and the change is on its replica", async () => {
  const nodes = cluster.started;
  const layout = layoutFor(uniquePrefix());
  const masters = await nodes.masters();
  const { port: ownerPort, replica } = await ownerOf(
    layout.shards[shardOf('000000000000', 'us-east-1', 'waited')]?.prefix ?? '',
  );
  const waits = async (port: number): Promise<number> => {
    const stats = (await nodes.node(port).call('INFO', 'commandstats')) as string;
    return Number(/^cmdstat_wait:calls=(\d+)/m.exec(stats)?.[1] ?? 0);
  };
  let store: QueueStore | undefined;
  const observed: boolean[] = [];
  const persistence = new Persistence({
    redis: createClient({ cluster: nodes.startupNodes }),
    layout,
    createStore: () => new QueueStore(new ManualClock(), { deletedRecentlyMs: 0 }),
    unavailable: (cause) => new SqsError('ServiceUnavailable', cause.message),
    onStore: (s) => (store = s),
    onDiverged: () => assert.fail('no write failed'),
    replicaWait: { count: 1, timeoutMs: 250, aof: false, observe: (_, ok) => observed.push(ok) },
  });
  await persistence.start();
  try {
    assert.ok(store !== undefined);
    const q = store.create({ accountId: '000000000000', region: 'us-east-1', name: 'waited' }, {}, {}).queue;
    // The creation writes the catalog on the meta tag's master too: counted from the send on.
    await persistence.commit();
    const before = await Promise.all(masters.map((m) => waits(m.port)));
    const m = sendOne(q, msg('acknowledged by a replica'), store.clock.now());
    await persistence.commit();
    assert.ok(observed.length > 0 && observed.every((ok) => ok), 'every WAIT counted the replica');

    const after = await Promise.all(masters.map((m) => waits(m.port)));
    assert.deepEqual(
      masters.map((_, i) => (after[i] ?? 0) - (before[i] ?? 0) > 0),
      masters.map((master) => master.port === ownerPort),
      "WAIT was sent to the master of the queue's shard and to no other",
    );
    // A replica answers reads of its master's slots once the connection asks for READONLY.
    const fromReplica = nodes.node(replica);
    await fromReplica.call('READONLY');
    assert.ok(
      (await fromReplica.hget(layout.shards[q.shard]?.messages(q.uid) ?? '', m.id)) !== null,
      'the message is on the replica',
    );
  } finally {
    await persistence.close();
  }
});

test('Given the leader lock on a Redis Cluster, when the leader releases it, then a follower subscribed through the Cluster client hears the token', async () => {
  const nodes = cluster.started;
  const lock = new RedisLock(cluster.client, lockKeys(layoutFor(uniquePrefix()).meta));
  const sub = createClient({ cluster: nodes.startupNodes, connectionName: 'release-listener' });
  let heard!: (token: string) => void;
  const announced = new Promise<string>((resolve) => (heard = resolve));
  const listener = new ReleaseListener(sub, lock.keys.channel, heard);
  listener.start();
  try {
    await once(sub, 'ready');
    // Subscribed once a node counts the subscriber on the channel (whichever node ioredis chose:
    // classic PUBLISH reaches every node of the cluster).
    const subscribers = async (): Promise<number> => {
      let n = 0;
      for (const { port } of nodes.startupNodes) {
        const [, count] = (await nodes.node(port).pubsub('NUMSUB', lock.keys.channel)) as [string, number];
        n += count;
      }
      return n;
    };
    for (let i = 0; i < 200 && (await subscribers()) === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(await subscribers(), 1);

    const taken = await lock.acquire('leader', 5000);
    assert.ok(taken.acquired);
    // The admin API's view of the lock: a MULTI of the lock's keys, all on the slot's master.
    assert.equal((await lock.info()).holder, taken.token);
    assert.equal(await lock.release(taken.token), true);
    assert.equal(await announced, taken.token);
  } finally {
    listener.close();
  }
});
