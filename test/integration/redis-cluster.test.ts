/**
 * Layout v2 on a real Redis Cluster (test/support/redis-cluster.ts: 3 masters, 3 replicas): the
 * 256 shard tags of src/shard/tags.ts spread over every master as their slots say, a script stays
 * within one tag or is refused, and writes acknowledged by a replica (`WAIT 1`) survive kill -9 of
 * their master once its replica has taken over. Through ioredis' `Cluster` client, as the server
 * will talk to a cluster.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Cluster, type Redis } from 'ioredis';
import { SHARD_COUNT } from '../../src/shard/hash.js';
import { keySlot } from '../../src/shard/slot.js';
import { META_PREFIX, SHARD_TAGS, shardPrefix } from '../../src/shard/tags.js';
import { startRedisCluster, type ClusterMaster, type TestRedisCluster } from '../support/redis-cluster.js';
import { testsRequiring } from '../support/requires.js';

const { test, before, after } = testsRequiring('redis-server');

let cluster: TestRedisCluster;
let client: Cluster;

const shards = Array.from({ length: SHARD_COUNT }, (_, s) => s);
const inRanges = (slot: number, m: ClusterMaster): boolean =>
  m.slots.some(([first, last]) => slot >= first && slot <= last);

/** Shards 17 and 18 share the first master's slots (0-5460), shard 200 is on another master. */
async function assertShardPlaces(): Promise<void> {
  const [first] = await cluster.masters();
  const onFirst = (s: number): boolean =>
    first !== undefined && inRanges(keySlot(SHARD_TAGS[s] ?? ''), first);
  assert.deepEqual([onFirst(17), onFirst(18), onFirst(200)], [true, true, false]);
}

before(async () => {
  cluster = await startRedisCluster();
  client = new Cluster([...cluster.startupNodes], {
    // As the server's own client: a command sent while a node is unreachable fails at once.
    enableOfflineQueue: false,
    redisOptions: { maxRetriesPerRequest: 0, commandTimeout: 2000 },
  });
  client.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    client.once('ready', resolve);
    client.once('error', reject);
  });
});

after(async () => {
  client?.disconnect();
  await cluster?.stop();
});

test('Given 3 masters, when a key is written under each shard tag, then every master holds the shards of its slots: 85, 86 and 85', async () => {
  const masters = await cluster.masters();
  assert.equal(masters.length, 3);
  for (const m of masters) assert.equal(m.replicas.length, 1, `master ${m.port}`);

  for (const s of shards) await client.set(`${shardPrefix(s)}probe`, String(s));
  await client.set(`${META_PREFIX}layout`, '2');

  // The node's own slot function agrees with src/shard/slot.ts for every shard and the meta tag.
  const any = cluster.node(masters[0]?.port ?? 0);
  for (const key of [...shards.map((s) => `${shardPrefix(s)}probe`), `${META_PREFIX}layout`]) {
    assert.equal(await any.call('CLUSTER', 'KEYSLOT', key), keySlot(key), key);
  }

  const shardCounts: number[] = [];
  for (const m of masters) {
    const expected = [
      ...shards.filter((s) => inRanges(keySlot(SHARD_TAGS[s] ?? ''), m)).map((s) => `${shardPrefix(s)}probe`),
      ...(inRanges(keySlot(`${META_PREFIX}layout`), m) ? [`${META_PREFIX}layout`] : []),
    ];
    const node = cluster.node(m.port);
    assert.equal(await node.dbsize(), expected.length, `DBSIZE of master ${m.port}`);
    assert.deepEqual((await node.keys('*')).sort(), expected.sort());
    shardCounts.push(expected.filter((k) => !k.startsWith(META_PREFIX)).length);
  }
  assert.deepEqual(shardCounts, [85, 86, 85]);
});

test('Given a script, when its keys share one shard tag then it runs on the cluster, and when they span two tags Redis refuses it with CROSSSLOT', async () => {
  const lua = `
    redis.call('SET', KEYS[1], ARGV[1])
    redis.call('HSET', KEYS[2], 'f', ARGV[1])
    redis.call('INCR', KEYS[3])
    return redis.call('GET', KEYS[1])`;
  const one = shardPrefix(17);
  assert.equal(await client.eval(lua, 3, `${one}queues`, `${one}m:uid`, `${one}seq`, 'v'), 'v');
  assert.equal(await client.hget(`${one}m:uid`, 'f'), 'v');

  // Shards 17 and 18 sit on one master, shards 17 and 200 on two: refused either way, by slot.
  for (const other of [18, 200]) {
    await assert.rejects(
      client.eval(lua, 3, `${one}queues`, `${shardPrefix(other)}m:uid`, `${one}seq`, 'w'),
      /CROSSSLOT/,
    );
  }
  assert.equal(await client.get(`${one}queues`), 'v', 'a refused script wrote nothing');

  // A script defined once runs on every master: ioredis sends EVAL on a connection's first use
  // and EVALSHA after, so each master ends up with it in its own script cache.
  const touchLua =
    "redis.call('HSET', KEYS[1], ARGV[1], 1) return redis.call('HLEN', KEYS[1]) + redis.call('INCR', KEYS[2])";
  client.defineCommand('touchShard', { numberOfKeys: 2, lua: touchLua });
  const touching = client as unknown as { touchShard(h: string, n: string, member: string): Promise<number> };
  for (const s of shards) {
    assert.equal(await touching.touchShard(`${shardPrefix(s)}touch-h`, `${shardPrefix(s)}touch-n`, 'm'), 2);
  }
  const sha = createHash('sha1').update(touchLua).digest('hex');
  for (const m of await cluster.masters()) {
    assert.deepEqual(await cluster.node(m.port).script('EXISTS', sha), [1], `master ${m.port}`);
  }
});

test('Given a script that builds key names from its arguments, as apply-4.lua does, then only a script with the #!lua shebang is held to its own slot on its master', async () => {
  // KEYS[1] declares the slot; the script writes `<prefix>m:<uid>`, the prefix coming from ARGV.
  const body =
    "redis.call('HSET', ARGV[1] .. 'm:' .. ARGV[2], 'f', 'v') return redis.call('HLEN', ARGV[1] .. 'm:' .. ARGV[2])";
  const run = (lua: string, other: number, uid: string): Promise<unknown> =>
    client.eval(lua, 1, `${shardPrefix(17)}commit`, shardPrefix(other), uid);
  await assertShardPlaces();

  for (const lua of [body, `#!lua\n${body}`]) assert.equal(await run(lua, 17, `own-${lua.length}`), 1);
  // Without the shebang, Redis 7 lets a script reach another slot of the same master: a mistake
  // that would only show once a resharding or a failover parts the two slots.
  assert.equal(await run(body, 18, 'legacy'), 1);
  await assert.rejects(run(`#!lua\n${body}`, 18, 'strict'), /do not hash to the same slot/);
  await assert.rejects(run(body, 200, 'legacy'), /non local key/);
  assert.equal(await client.exists(`${shardPrefix(18)}m:strict`), 0);
  assert.equal(await client.exists(`${shardPrefix(200)}m:legacy`), 0);
});

test('Given a pipeline, then it may carry the calls of several shards of one master and one WAIT, and ioredis refuses one that spans masters', async () => {
  await assertShardPlaces();
  const replies = await client
    .pipeline()
    .incr(`${shardPrefix(17)}pipelined`)
    .incr(`${shardPrefix(18)}pipelined`)
    .wait(1, 5000)
    .exec();
  assert.deepEqual(replies, [
    [null, 1],
    [null, 1],
    [null, 1],
  ]);
  await assert.rejects(
    client
      .pipeline()
      .incr(`${shardPrefix(17)}pipelined`)
      .incr(`${shardPrefix(200)}pipelined`)
      .exec(),
    /same slots allocation group/,
  );
  assert.equal(await client.get(`${shardPrefix(17)}pipelined`), '1', 'the refused pipeline sent nothing');
});

test('Given writes acknowledged by WAIT 1, when their master is killed with SIGKILL, then its replica takes over with every one of them', async () => {
  const before = await cluster.masters();
  const victim = before[1];
  assert.ok(victim !== undefined);

  // WAIT has no key: alone, the Cluster client sends it to any node. In a pipeline it goes with the
  // pipeline's keys, to the node that took the write, and counts the replicas that have it.
  for (const s of shards) {
    const replies = await client
      .pipeline()
      .set(`${shardPrefix(s)}acked`, `a${s}`)
      .wait(1, 5000)
      .exec();
    assert.deepEqual(replies, [
      [null, 'OK'],
      [null, 1],
    ]);
  }

  const promoted = await cluster.killMaster(victim.port);
  assert.equal(promoted, victim.replicas[0]);
  const afterKill = await cluster.masters();
  assert.deepEqual(
    afterKill.map((m) => [m.port, m.slots]),
    before.map((m) => [m === victim ? promoted : m.port, m.slots]),
  );

  const node: Redis = cluster.node(promoted);
  const victimShards = shards.filter((s) => inRanges(keySlot(SHARD_TAGS[s] ?? ''), victim));
  assert.equal(victimShards.length, 86);
  for (const s of victimShards) assert.equal(await node.get(`${shardPrefix(s)}acked`), `a${s}`);

  // Through the Cluster client too, once it has learnt the new owner of the slots (MOVED).
  for (const s of shards) assert.equal(await client.get(`${shardPrefix(s)}acked`), `a${s}`);
});
