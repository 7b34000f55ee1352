/**
 * Membership, the shard map and the coordinator (src/owners/) against a real redis-server, and
 * once on a Redis Cluster: three instances in one process, each with its own connections, as
 * three servers would have. Each test takes its own key prefix. Nothing asserts a duration: each
 * waits (bounded) for the state it expects, and a member's expiry is a real TTL of 1.5 s.
 */
import assert from 'node:assert/strict';
import { RedisLock } from '../../src/ha/lock.js';
import { layoutFor, type Layout } from '../../src/persistence/layout.js';
import { createClient, type RedisClient } from '../../src/persistence/redis.js';
import { SHARD_COUNT } from '../../src/shard/hash.js';
import { placement } from '../../src/shard/placement.js';
import { Channels } from '../../src/owners/channels.js';
import { coordinatorLockKeys } from '../../src/owners/coordinator.js';
import { OwnersInstance } from '../../src/owners/instance.js';
import { Membership, readLiveMembers, type MembershipChange } from '../../src/owners/members.js';
import { RedisOwnersStore, ShardMap, type ShardMapChange } from '../../src/owners/shard-map.js';
import { startRedis, uniquePrefix, type TestRedis } from '../support/redis.js';
import { startRedisCluster, type TestRedisCluster } from '../support/redis-cluster.js';
import { testsRequiring } from '../support/requires.js';
import { watchedLog } from '../support/log.js';
import { sleep } from '../support/process.js';

const { after, before, test } = testsRequiring('redis-server');

const MEMBER_TTL = 1500;
const INTERVAL = 100;
const IDS = ['host-a-101', 'host-b-202', 'host-c-303'];

let redis: TestRedis;
let cluster: TestRedisCluster | undefined;
const closers: (() => Promise<void>)[] = [];

before(async () => {
  redis = await startRedis({ aof: false });
});

after(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  await redis?.stop();
  await cluster?.stop();
});

type Target = { url: string } | { cluster: TestRedisCluster['startupNodes'] };

async function connected(target: Target): Promise<RedisClient> {
  const c = createClient('url' in target ? { url: target.url } : { cluster: target.cluster });
  c.on('error', () => undefined);
  await c.connect();
  closers.push(() => Promise.resolve(c.disconnect()));
  return c;
}

interface Node {
  readonly id: string;
  readonly inst: OwnersInstance;
  readonly client: RedisClient;
  readonly sub: RedisClient;
  /** What a crash does: no leave, no release; its connections close, its timers stop. */
  crash(): Promise<void>;
}

async function startNode(target: Target, layout: Layout, id: string): Promise<Node> {
  const client = await connected(target);
  const sub = createClient('url' in target ? { url: target.url } : { cluster: target.cluster });
  const inst = new OwnersInstance({
    redis: client,
    sub,
    layout,
    id,
    address: `127.0.0.1:${4100 + IDS.indexOf(id)}`,
    memberTtlMs: MEMBER_TTL,
    intervalMs: INTERVAL,
  });
  let crashed = false;
  const crash = async (): Promise<void> => {
    crashed = true;
    inst.membership.halt();
    inst.map.stop();
    inst.channels.close();
    client.disconnect();
    // Its elector now fails every call; stop() only ends its timers (the release cannot reach Redis).
    await inst.coordinator.stop();
  };
  closers.push(() => (crashed ? Promise.resolve() : inst.stop()));
  await inst.start();
  return { id, inst, client, sub, crash };
}

async function startThree(target: Target, layout: Layout): Promise<Node[]> {
  const nodes: Node[] = [];
  for (const id of IDS) nodes.push(await startNode(target, layout, id));
  return nodes;
}

/** Polls `check` until it returns true; fails after `ms` with `what`. */
async function waitFor(what: string, check: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const giveUp = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > giveUp) assert.fail(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

function sameOwners(a: readonly (string | undefined)[], b: readonly (string | undefined)[]): boolean {
  return a.length === b.length && a.every((o, s) => o === b[s]);
}

/** Every node's cached map is `expected`, at one version; resolves with that version. */
async function converged(nodes: readonly Node[], expected: readonly (string | undefined)[]): Promise<number> {
  await waitFor(
    'every map to show the placement',
    () =>
      nodes.every((n) => sameOwners(n.inst.map.owners, expected)) &&
      nodes.every((n) => n.inst.map.version === nodes[0]?.inst.map.version),
  );
  return nodes[0]?.inst.map.version ?? -1;
}

function coordinatorOf(nodes: readonly Node[]): Node {
  const now = nodes.filter((n) => n.inst.coordinator.coordinating);
  assert.equal(now.length, 1, `one coordinator, not ${now.map((n) => n.id).join(',') || 'none'}`);
  return now[0] as Node;
}

/** A reader that polls once in 10 minutes: within a test, only a pub/sub nudge can bring it news. */
async function pubsubOnlyReader(
  target: Target,
  layout: Layout,
): Promise<{ map: ShardMap; changes: ShardMapChange[] }> {
  const sub = createClient('url' in target ? { url: target.url } : { cluster: target.cluster });
  const channels = new Channels(sub);
  const subscribed = new Promise<void>((resolve) => channels.onReady(resolve));
  const map = new ShardMap({ redis: await connected(target), layout, intervalMs: 600_000, channels });
  const changes: ShardMapChange[] = [];
  map.onChange((c) => changes.push(c));
  channels.start();
  await map.start();
  await subscribed;
  closers.push(() => {
    map.stop();
    channels.close();
    return Promise.resolve();
  });
  return { map, changes };
}

const single = (): Target => ({ url: redis.url });

test('Given three instances, When they start, Then one coordinates and every map converges to the placement of the three', async () => {
  const layout = layoutFor(uniquePrefix());
  const nodes = await startThree(single(), layout);
  const version = await converged(nodes, placement(IDS));
  assert.ok(version >= 1);
  coordinatorOf(nodes);
  const live = await readLiveMembers(nodes[0]?.client as RedisClient, layout);
  assert.deepEqual(
    live.map((m) => [m.id, m.address]),
    IDS.map((id, i) => [id, `127.0.0.1:${4100 + i}`]),
  );
  assert.ok(live.every((m) => m.startedAt > 0));
  assert.equal(await redis.client.hlen(layout.meta.owners), SHARD_COUNT + 1, 'every shard and the version');
});

test('Given a connection not yet made, When an instance starts on it, Then it joins at its first heartbeat and logs no failure', async () => {
  const layout = layoutFor(uniquePrefix());
  // As the server makes them (src/wiring/owners.ts): lazy, no offline queue, not connected.
  const client = createClient({ url: redis.url });
  const sub = createClient({ url: redis.url });
  client.on('error', () => undefined);
  const log = watchedLog();
  const inst = new OwnersInstance({
    redis: client,
    sub,
    layout,
    id: 'host-fresh-1',
    address: '127.0.0.1:4199',
    memberTtlMs: MEMBER_TTL,
    intervalMs: INTERVAL,
    log,
  });
  closers.push(async () => {
    await inst.stop();
    client.disconnect();
  });
  await inst.start();
  assert.equal(inst.membership.beatCount >= 1, true, 'joined by the time start() resolved');
  assert.deepEqual(
    log.lines.filter((l) => /fail|cannot/.test(l)),
    [],
    'a start on a connection still being made is no failure',
  );
});

test('Given three converged instances, When one leaves, Then only its shards move, to the other two, the version is bumped and a reader hears it by pub/sub', async () => {
  const layout = layoutFor(uniquePrefix());
  const nodes = await startThree(single(), layout);
  const before = placement(IDS);
  const v = await converged(nodes, before);
  const reader = await pubsubOnlyReader(single(), layout);
  assert.equal(reader.map.version, v);
  const leaving = nodes.find((n) => !n.inst.coordinator.coordinating) as Node;
  const rest = nodes.filter((n) => n !== leaving);
  const left: string[][] = [];
  rest[0]?.inst.membership.onChange((c) => left.push([...c.left]));

  await leaving.inst.stop();
  const expected = placement(rest.map((n) => n.id));
  const v2 = await converged(rest, expected);
  assert.ok(v2 > v, `version ${v2} after ${v}`);
  for (let s = 0; s < SHARD_COUNT; s++) {
    if (before[s] === leaving.id)
      assert.ok(
        rest.some((n) => n.id === expected[s]),
        `shard ${s} went to a live member`,
      );
    else assert.equal(expected[s], before[s], `shard ${s} stayed`);
  }
  await waitFor('the pub/sub-only reader to see the new map', () => reader.map.version === v2);
  assert.ok(sameOwners(reader.map.owners, expected));
  const moved = reader.changes.at(-1)?.moved ?? [];
  assert.deepEqual(
    moved,
    before.flatMap((o, s) => (o === leaving.id ? [s] : [])),
    'the change names the shards of the member that left',
  );
  assert.deepEqual(left, [[leaving.id]], 'the leave was seen once');
  assert.equal(await redis.client.exists(layout.meta.member(leaving.id)), 0);
});

test('Given three converged instances, When the coordinator crashes, Then it stays live until its TTL, then another coordinates and its shards go to the other two', async () => {
  const layout = layoutFor(uniquePrefix());
  const nodes = await startThree(single(), layout);
  const before = placement(IDS);
  const v = await converged(nodes, before);
  const crashed = coordinatorOf(nodes);
  const rest = nodes.filter((n) => n !== crashed);

  await crashed.crash();
  // Its key has a TTL of 1.5 s and was renewed within the last interval: still live now.
  assert.ok((await redis.client.pttl(layout.meta.member(crashed.id))) > 0);
  assert.ok((await redis.client.get(coordinatorLockKeys(layout).lock))?.endsWith(`:${crashed.id}`));

  const expected = placement(rest.map((n) => n.id));
  const v2 = await converged(rest, expected);
  assert.ok(v2 > v);
  assert.ok(rest.some((n) => n.inst.coordinator.coordinating));
  for (let s = 0; s < SHARD_COUNT; s++) if (before[s] !== crashed.id) assert.equal(expected[s], before[s]);
  assert.equal(await redis.client.hexists(layout.meta.members, crashed.id), 0, 'pruned from the hash');
  assert.deepEqual(
    (await readLiveMembers(redis.client, layout)).map((m) => m.id),
    rest.map((n) => n.id),
  );
});

test('Given three converged instances, When the coordinator alone stops, Then another takes over and leaves the map as it is until the membership changes', async () => {
  const layout = layoutFor(uniquePrefix());
  const nodes = await startThree(single(), layout);
  const before = placement(IDS);
  const v = await converged(nodes, before);
  const old = coordinatorOf(nodes);
  const rest = nodes.filter((n) => n !== old);

  await old.inst.coordinator.stop();
  await waitFor('another coordinator', () => rest.some((n) => n.inst.coordinator.coordinating));
  const next = coordinatorOf(rest);
  // Its first reconciliations, on winning the lock and at its interval, find nothing to change.
  await waitFor(
    'two reconciliations by the new coordinator',
    () => next.inst.coordinator.status().reconciles >= 2,
  );
  assert.equal(next.inst.coordinator.status().writes, 0);
  assert.equal(next.inst.coordinator.status().lastOutcome?.kind, 'unchanged');
  await next.inst.map.refresh();
  assert.equal(next.inst.map.version, v);
  assert.ok(sameOwners(next.inst.map.owners, before));

  await old.inst.membership.leave();
  const v2 = await converged(rest, placement(rest.map((n) => n.id)));
  assert.equal(v2, v + 1, 'one write moved every shard of the member that left');
  assert.equal(next.inst.coordinator.status().writes, 1);
});

test('Given a member that reads the others once in 5 minutes, When another joins and leaves, Then it learns both by pub/sub, once each', async () => {
  const layout = layoutFor(uniquePrefix());
  const sub = createClient({ url: redis.url });
  const channels = new Channels(sub);
  const subscribed = new Promise<void>((resolve) => channels.onReady(resolve));
  channels.start();
  const slow = new Membership({
    redis: await connected(single()),
    layout,
    id: 'host-slow-1',
    address: '/run/ssq/slow.sock',
    ttlMs: 600_000,
    intervalMs: 300_000,
    channels,
  });
  closers.push(async () => {
    await slow.leave();
    channels.close();
  });
  const changes: MembershipChange[] = [];
  slow.onChange((c) => changes.push(c));
  await slow.start();
  await subscribed;
  assert.deepEqual(
    slow.members.map((m) => m.id),
    ['host-slow-1'],
  );
  const other = await startNode(single(), layout, 'host-a-101');
  await waitFor('the join', () => slow.members.length === 2);
  await other.inst.stop();
  await waitFor('the leave', () => slow.members.length === 1);
  assert.deepEqual(
    changes.map((c) => [c.joined.map((m) => m.id), c.left]),
    [
      [['host-slow-1'], []],
      [['host-a-101'], []],
      [[], ['host-a-101']],
    ],
  );
  assert.equal(slow.beatCount, 1, 'no second heartbeat: the news came by pub/sub');
});

test("Given a coordinator's token that no longer holds the lock, When it writes the map, Then the script refuses it and nothing changes", async () => {
  const layout = layoutFor(uniquePrefix());
  const client = await connected(single());
  const store = new RedisOwnersStore(client, layout);
  const lock = new RedisLock(client, coordinatorLockKeys(layout));
  const first = await lock.acquire('host-a-101', 60_000);
  assert.ok(first.acquired);
  assert.deepEqual(await store.assign(first.token, 0, new Map([[0, 'host-a-101']])), {
    ok: true,
    version: 1,
  });
  // The term's lock expires (as after a pause longer than the TTL) and another instance wins it.
  await client.del(layout.meta.coordinator);
  const second = await lock.acquire('host-b-202', 60_000);
  assert.ok(second.acquired);

  assert.deepEqual(await store.assign(first.token, 1, new Map([[1, 'host-a-101']])), {
    ok: false,
    reason: 'fenced',
    version: 1,
  });
  assert.deepEqual(await store.assign(second.token, 0, new Map([[1, 'host-b-202']])), {
    ok: false,
    reason: 'version',
    version: 1,
  });
  const map = await store.read();
  assert.equal(map.version, 1);
  assert.deepEqual(map.owners.slice(0, 2), ['host-a-101', undefined]);
  assert.deepEqual(await store.assign(second.token, 1, new Map([[1, 'host-b-202']])), {
    ok: true,
    version: 2,
  });
});

test('Given three converged instances, When a shard is pinned to another live member, Then the map follows the pin, and goes back when it is removed', async () => {
  const layout = layoutFor(uniquePrefix());
  const nodes = await startThree(single(), layout);
  const before = placement(IDS);
  await converged(nodes, before);
  const shard = 7;
  const other = IDS.find((id) => id !== before[shard]) as string;
  await nodes[0]?.inst.store.pin(shard, other);
  const pinned = placement(IDS, SHARD_COUNT, new Map([[shard, other]]));
  await converged(nodes, pinned);
  assert.equal(nodes[1]?.inst.map.ownerOf(shard), other);
  await nodes[2]?.inst.store.unpin(shard);
  await converged(nodes, before);
});

test('Given a Redis Cluster of three masters, When three instances start and one leaves, Then the meta keys work there and the map follows', async () => {
  cluster = await startRedisCluster();
  const target: Target = { cluster: cluster.startupNodes };
  const layout = layoutFor(uniquePrefix());
  const nodes = await startThree(target, layout);
  const v = await converged(nodes, placement(IDS));
  const leaving = nodes[1] as Node;
  await leaving.inst.stop();
  const rest = nodes.filter((n) => n !== leaving);
  const v2 = await converged(rest, placement(rest.map((n) => n.id)));
  assert.ok(v2 > v);
  coordinatorOf(rest);
});
