/**
 * The catalog as a process-wide directory, against a real redis-server: two writers in many-owner
 * mode (`sharedMeta`), each owning other shards, write catalog records under the one meta tag in
 * interleaved ticks; a CatalogMirror in a third "process" (its own connections and store, owning
 * none of those shards) reads them all, follows the feed, and catches up on a lost feed message
 * with its interval read. And repairCatalog, which makes Redis's catalog agree with a loaded shard.
 */
import assert from 'node:assert/strict';
import type { Redis } from 'ioredis';
import { ManualClock } from '../../src/core/clock.js';
import type { Queue, QueueIdentity } from '../../src/core/queue.js';
import { QueueStore } from '../../src/core/store.js';
import { CatalogMirror } from '../../src/persistence/catalog-mirror.js';
import { repairCatalog } from '../../src/persistence/catalog-repair.js';
import { deserializeCatalogEntry, serializeCatalogEntry } from '../../src/persistence/codec.js';
import { layoutFor, type Layout } from '../../src/persistence/layout.js';
import { Writer, type Scope } from '../../src/persistence/writer.js';
import { shardOf } from '../../src/shard/hash.js';
import { SqsError } from '../../src/sqs/errors.js';
import { sleep } from '../support/process.js';
import { uniquePrefix } from '../support/redis.js';
import { testsRequiring } from '../support/requires.js';
import { sharedRedis } from '../support/sqs.js';

const { after, before, test } = testsRequiring('redis-server');

const redis = sharedRedis({ before, after }, { aof: false });

const ACCOUNT = '000000000000';
const REGION = 'us-east-1';

function id(name: string): QueueIdentity {
  return { accountId: ACCOUNT, region: REGION, name };
}

/** A name in `shard`: `<stem>-<i>`, the first such. */
function nameIn(shard: number, stem: string, fifo = false): string {
  for (let i = 0; ; i++) {
    const name = `${stem}-${i}${fifo ? '.fifo' : ''}`;
    if (shardOf(ACCOUNT, REGION, name) === shard) return name;
  }
}

/** One server process of many owners: its own connection, a store owning `shards`, a writer on shared meta. */
interface Owner {
  readonly c: Redis;
  readonly store: QueueStore;
  readonly writer: Writer;
  readonly failures: [Scope, Error][];
}

async function owner(layout: Layout, shards: readonly number[]): Promise<Owner> {
  const c = await redis.connect({ commandTimeoutMs: 10_000 });
  const store = new QueueStore(new ManualClock(), { deletedRecentlyMs: 0, ownedShards: shards });
  const failures: [Scope, Error][] = [];
  const writer = new Writer({
    layout,
    connectionFor: () => c,
    // Meta's lock is held by nobody: a meta call that checked this token would be fenced.
    token: (s) => (s === 'meta' ? 'no-leader-in-many-owner-mode' : ''),
    unavailable: (cause) => new SqsError('ServiceUnavailable', cause.message),
    onFailure: (s, e) => failures.push([s, e]),
    sharedMeta: true,
  });
  writer.attach(store);
  return { c, store, writer, failures };
}

/** A third process's view: a store owning no shard and a mirror of the catalog into it. */
async function observer(
  layout: Layout,
  intervalMs: number,
): Promise<{ store: QueueStore; mirror: CatalogMirror; errors: Error[] }> {
  const c = await redis.connect({ commandTimeoutMs: 10_000 });
  const store = new QueueStore(new ManualClock(), { deletedRecentlyMs: 0, ownedShards: [] });
  const errors: Error[] = [];
  const mirror = new CatalogMirror({
    redis: c,
    layout,
    catalog: store.catalog,
    intervalMs,
    onError: (e) => errors.push(e),
  });
  return { store, mirror, errors };
}

async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) assert.fail(`timed out waiting: ${what}`);
    await sleep(20);
  }
}

const names = (s: QueueStore): string[] => s.catalog.list(ACCOUNT, '', REGION).map((e) => e.name);

test('Given two owners writing catalog records in interleaved ticks on shared meta, then both succeed, and a mirror in a third process sees every record, later changes through the feed, and a deleted queue leave', async () => {
  const layout = layoutFor(uniquePrefix());
  const a = shardOf(ACCOUNT, REGION, 'owner-a');
  const b = [...Array(256).keys()].find((s) => s !== a) as number;
  const A = await owner(layout, [a]);
  const B = await owner(layout, [b]);

  // Each commit of one owner lands between two of the other's: two chains on one `commit` key
  // would refuse each other (-4), and the unheld meta token would fence both (-1).
  const x1 = A.store.create(id(nameIn(a, 'x')), {}, {}).queue;
  const y1 = B.store.create(id(nameIn(b, 'y')), {}, {}).queue;
  await Promise.all([A.writer.commit(), B.writer.commit()]);
  const x2 = A.store.create(id(nameIn(a, 'x2')), {}, {}).queue;
  await A.writer.commit();
  const y2 = B.store.create(id(nameIn(b, 'y2', true)), { FifoQueue: 'true' }, {}).queue;
  await B.writer.commit();
  A.store.setAttributes(x1, { RedriveAllowPolicy: '{"redrivePermission":"denyAll"}' });
  await A.writer.commit();
  assert.deepEqual([A.failures, B.failures], [[], []]);
  const stored = await redis.client.hgetall(layout.meta.catalog(ACCOUNT, REGION));
  assert.deepEqual(Object.keys(stored).sort(), [x1.name, x2.name, y1.name, y2.name].sort());
  assert.equal(
    deserializeCatalogEntry(x1.name, stored[x1.name] ?? '').redriveAllowPolicy,
    '{"redrivePermission":"denyAll"}',
    'SetQueueAttributes rewrote the record',
  );

  // No interval read within the test: what changes after start() comes through the feed.
  const C = await observer(layout, 600_000);
  await C.mirror.start();
  assert.deepEqual(names(C.store), [x1.name, x2.name, y1.name, y2.name].sort());
  assert.equal(C.store.catalog.get(ACCOUNT, REGION, y2.name)?.fifo, true);
  assert.equal(
    C.store.catalog.get(ACCOUNT, REGION, x1.name)?.redriveAllowPolicy,
    '{"redrivePermission":"denyAll"}',
  );
  assert.equal(C.store.catalog.get(ACCOUNT, REGION, x1.name)?.arn, x1.arn);

  const y3 = B.store.create(
    id(nameIn(b, 'y3')),
    { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: y1.arn, maxReceiveCount: 2 }) },
    {},
  ).queue;
  A.store.delete(x2);
  await Promise.all([A.writer.commit(), B.writer.commit()]);
  await until('the feed brings y3 and takes x2', () => {
    const n = names(C.store);
    return n.includes(y3.name) && !n.includes(x2.name);
  });
  assert.deepEqual(
    C.store.catalog.deadLetterSources(y1).map((e) => e.name),
    [y3.name],
  );
  assert.equal(C.mirror.stats.fullReads, 1, 'only the first read was a full one');
  assert.deepEqual(C.errors, []);
  await C.mirror.stop();
});

test('Given a feed message that never reached the mirror, when the next interval read runs, then the deleted queue leaves the mirror', async () => {
  const layout = layoutFor(uniquePrefix());
  const shard = 17;
  const A = await owner(layout, [shard]);
  const kept = A.store.create(id(nameIn(shard, 'kept')), {}, {}).queue;
  const doomed = A.store.create(id(nameIn(shard, 'doomed')), {}, {}).queue;
  await A.writer.commit();
  const C = await observer(layout, 500);
  await C.mirror.start();
  assert.deepEqual(names(C.store), [doomed.name, kept.name].sort());

  // The PUBLISH after this write is lost, as pub/sub may lose it.
  const publish = A.c.publish.bind(A.c);
  (A.c as unknown as { publish: () => Promise<number> }).publish = () => Promise.resolve(0);
  const readsBefore = C.mirror.stats.fullReads;
  A.store.delete(doomed);
  await A.writer.commit();
  await sleep(100);
  if (C.mirror.stats.fullReads === readsBefore) {
    assert.ok(names(C.store).includes(doomed.name), 'without a full read, nothing told the mirror');
  }
  await until('a full read after the delete', () => C.mirror.stats.fullReads >= readsBefore + 2);
  assert.deepEqual(names(C.store), [kept.name]);
  A.c.publish = publish;
  assert.deepEqual(C.errors, []);
  await C.mirror.stop();
});

test("Given a mirror, when the process takes the shard of a remote entry, then the entry is the store's (listed while loading, dropped if the load does not bring it) and the mirror no longer touches it", async () => {
  const layout = layoutFor(uniquePrefix());
  const shard = 42;
  const A = await owner(layout, [shard]);
  const q = A.store.create(id(nameIn(shard, 'moving')), {}, {}).queue;
  await A.writer.commit();
  const C = await observer(layout, 600_000);
  await C.mirror.start();
  assert.equal(C.store.catalog.isRemote(ACCOUNT, REGION, q.name), true);

  assert.deepEqual(C.store.setOwnedShards([shard]), [shard]);
  await C.mirror.owned([shard]);
  assert.equal(
    C.store.catalog.isRemote(ACCOUNT, REGION, q.name),
    false,
    'a read of Redis does not take it back',
  );
  assert.deepEqual(names(C.store), [q.name]);
  C.store.shardLoaded(shard);
  assert.deepEqual(names(C.store), [], 'the load brought nothing back');

  C.store.setOwnedShards([]);
  await C.mirror.owned([shard]);
  assert.deepEqual(names(C.store), [q.name], 'given away again: the mirror reads it back');
  await C.mirror.stop();
});

test("Given a catalog that disagrees with a loaded shard, when repairCatalog runs, then stray records of the shard go, missing and changed ones are written, other shards' records stay, and the changes are announced", async () => {
  const layout = layoutFor(uniquePrefix());
  const shard = 99;
  const store = new QueueStore(new ManualClock(), { deletedRecentlyMs: 0 });
  const fine = store.create(id(nameIn(shard, 'fine')), {}, {}).queue;
  const missing = store.create(id(nameIn(shard, 'missing')), {}, {}).queue;
  const changed = store.create(id(nameIn(shard, 'changed', true)), { FifoQueue: 'true' }, {}).queue;
  const other = { accountId: '111111111111', region: 'eu-west-1' };
  const elsewhere = store.create({ ...other, name: 'far-away' }, {}, {}).queue;
  const inOther = store.create({ ...other, name: nameInScope(other, shard) }, {}, {}).queue;
  const c = redis.client;
  const catalog = layout.meta.catalog(ACCOUNT, REGION);
  const ghost = nameIn(shard, 'ghost');
  await c.hset(catalog, fine.name, serializeCatalogEntry(fine));
  await c.hset(catalog, changed.name, JSON.stringify({ v: 1, shard, uid: 'an-older-uid', fifo: true }));
  await c.hset(catalog, ghost, JSON.stringify({ v: 1, shard, uid: 'ghost-uid', fifo: false }));
  // A record naming the shard's number only as a prefix of its own: shard 9 and 99 differ.
  const nine = nameIn(9, 'nine');
  await c.hset(catalog, nine, JSON.stringify({ v: 1, shard: 9, uid: 'nine-uid', fifo: false }));
  const otherCatalog = layout.meta.catalog(other.accountId, other.region);
  await c.hset(otherCatalog, elsewhere.name, serializeCatalogEntry(elsewhere));
  await c.hset(
    layout.meta.catalogIndex,
    `${ACCOUNT}:${REGION}`,
    '1',
    `${other.accountId}:${other.region}`,
    '1',
  );

  const sub = await redis.connect();
  const heard: string[] = [];
  sub.on('message', (_ch: string, m: string) => heard.push(...m.split('\n')));
  await sub.subscribe(layout.meta.catalogFeed);

  const loaded: Queue[] = [fine, missing, changed];
  const result = await repairCatalog(c, layout, shard, loaded);
  assert.deepEqual(
    result.written.sort(),
    [`${ACCOUNT}:${REGION}:${changed.name}`, `${ACCOUNT}:${REGION}:${missing.name}`].sort(),
  );
  assert.deepEqual(result.deleted, [`${ACCOUNT}:${REGION}:${ghost}`]);
  const now = await c.hgetall(catalog);
  assert.deepEqual(now, {
    [fine.name]: serializeCatalogEntry(fine),
    [missing.name]: serializeCatalogEntry(missing),
    [changed.name]: serializeCatalogEntry(changed),
    [nine]: JSON.stringify({ v: 1, shard: 9, uid: 'nine-uid', fifo: false }),
  });
  assert.deepEqual(await c.hgetall(otherCatalog), { [elsewhere.name]: serializeCatalogEntry(elsewhere) });

  // The other account's queue of this shard was not loaded this time: it is written when it is.
  await repairCatalog(c, layout, shard, [inOther]);
  assert.equal(await c.hget(otherCatalog, inOther.name), serializeCatalogEntry(inOther));
  assert.equal(await c.hget(catalog, fine.name), null, 'this load did not bring it: a stray record now');

  await until('both repairs announced', () => heard.length === 3 + 4);
  assert.ok(heard.includes(`${ACCOUNT}:${REGION}:${ghost}`));
  assert.ok(heard.includes(`${other.accountId}:${other.region}:${inOther.name}`));
  await assert.rejects(repairCatalog(c, layout, shard + 1, [fine]), RangeError);
});

function nameInScope(scope: { accountId: string; region: string }, shard: number): string {
  for (let i = 0; ; i++) {
    const name = `o-${i}`;
    if (shardOf(scope.accountId, scope.region, name) === shard) return name;
  }
}
