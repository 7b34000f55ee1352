/**
 * The layout 1 → layout 2 migration (src/persistence/migrate.ts) on the layout-v1 fixture
 * (test/fixtures/layout-v1/dump.rdb, written by the release with layout 1), each test on a Redis of
 * its own started from a copy of the dump:
 *
 * - migrated, layout 2 loads (loadMeta, then loadShard for every shard into one store) into the
 *   same store as layout 1 did before (loadStore), and Redis holds the same records byte for byte,
 *   each queue's under its shard's tag;
 * - killed with SIGKILL at points along the way (a child process held at a step, and one killed
 *   wherever it is), then run again: the same keyspace as a migration never stopped;
 * - the fence: an older release's writes, chained calls, reload and elector are refused.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { ManualClock } from '../../src/core/clock.js';
import { QueueStore } from '../../src/core/store.js';
import { lockKeys, RedisLock } from '../../src/ha/lock.js';
import type { LogSink } from '../../src/log.js';
import {
  serializeAttempt,
  serializeDedup,
  serializeMessage,
  serializeMoveTask,
  serializeQueue,
  serializeTenant,
} from '../../src/persistence/codec.js';
import { keysFor } from '../../src/persistence/keys.js';
import { layoutFor, type Layout } from '../../src/persistence/layout.js';
import {
  LayoutError,
  LoadProgress,
  loadMeta,
  loadShard,
  loadStore,
  V1_FENCE_MARKER,
} from '../../src/persistence/loader.js';
import { migrateV1, MigrationProgress, type MigrationResult } from '../../src/persistence/migrate.js';
import { connectRedis } from '../../src/persistence/redis.js';
import { ScriptCode, scripts } from '../../src/persistence/scripts.js';
import { keySlot } from '../../src/shard/slot.js';
import { FIXTURE_DUMP, FIXTURE_PREFIX, readFixture } from '../support/layout-v1.js';
import { track } from '../support/process.js';
import { startRedis, type TestRedis } from '../support/redis.js';
import { testsRequiring } from '../support/requires.js';

const { before, test } = testsRequiring('redis-server');

const fx = readFixture();
const LAYOUT = layoutFor(FIXTURE_PREFIX);
const V1 = keysFor(FIXTURE_PREFIX);
const CHILD = fileURLToPath(new URL('../fixtures/migrate-child.ts', import.meta.url));

interface FixtureRedis {
  readonly server: TestRedis;
  readonly client: Redis;
  stop(): Promise<void>;
}

/** A Redis of its own holding what the dump holds. */
async function fixtureRedis(): Promise<FixtureRedis> {
  const server = await startRedis({ rdb: FIXTURE_DUMP, aof: false });
  const client = await connectRedis({ url: server.url });
  return {
    server,
    client,
    stop: async () => {
      client.disconnect();
      await server.stop();
    },
  };
}

/** Every key with its content (hashes as Buffers: byte for byte); `commit` values are call ids, left out. */
type Keyspace = Record<string, string | Record<string, Buffer> | null>;

async function keyspace(c: Redis): Promise<Keyspace> {
  const out: Keyspace = {};
  let cursor = '0';
  const keys: string[] = [];
  do {
    const [next, batch] = await c.scan(cursor, 'COUNT', 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  for (const key of keys.sort()) {
    const type = await c.type(key);
    if (type === 'hash') out[key] = await c.hgetallBuffer(key);
    else if (type === 'string') out[key] = key.endsWith('commit') ? null : await c.get(key);
    else out[key] = `(${type})`;
  }
  return out;
}

/** Layout 2, every shard, into one store (one progress shared by the 256 loads). */
async function loadV2(c: Redis, layout: Layout): Promise<{ store: QueueStore; progress: LoadProgress }> {
  const store = new QueueStore(new ManualClock(fx.writtenAt + 5_000));
  const meta = await loadMeta(c, layout, store);
  assert.deepEqual(meta, { state: 'ready', tenants: fx.tenants.length, claimed: false });
  const progress = new LoadProgress();
  for (const shard of layout.shards) await loadShard(c, shard, store, { progress });
  return { store, progress };
}

/** Everything a store holds, as the codec writes it (messages, FIFO records and tasks sorted). */
function storeImage(store: QueueStore): unknown {
  const queues = [...store.all()]
    .sort((a, b) => a.key.localeCompare(b.key))
    .map((q) => ({
      key: q.key,
      uid: q.uid,
      record: serializeQueue(q),
      messages: [...q.allMessages()].map((m) => [m.id, serializeMessage(m)]).sort(),
      dedup: [...(q.fifoState?.dedupRecords() ?? [])].map(([k, r]) => [k, serializeDedup(r)]).sort(),
      attempts: [...(q.fifoState?.attemptRecords() ?? [])].map(([k, r]) => [k, serializeAttempt(r)]).sort(),
    }));
  return {
    queues,
    tasks: store.moveTasks
      .all()
      .map((t) => serializeMoveTask(t))
      .sort(),
    tenants: store.tenants
      .list()
      .map((t) => serializeTenant(t))
      .sort(),
  };
}

function recorder(): LogSink & { lines: string[] } {
  const lines: string[] = [];
  const add = (_o: object, msg: string): void => void lines.push(msg);
  return { lines, info: add, warn: add, error: add };
}

/** What an uninterrupted migration of the fixture leaves in Redis. */
let reference: Keyspace;

before(async () => {
  const r = await fixtureRedis();
  try {
    await migrateV1(r.client, LAYOUT);
    reference = await keyspace(r.client);
  } finally {
    await r.stop();
  }
});

test('Given the layout 1 fixture, when it is migrated, then layout 2 loads into the store layout 1 loaded, and Redis holds the same records under the shard tags', async () => {
  const r = await fixtureRedis();
  try {
    const c = r.client;
    const before = await keyspace(c);
    const v1Store = new QueueStore(new ManualClock(fx.writtenAt + 5_000));
    await loadStore(c, V1, v1Store);
    assert.equal(v1Store.size, fx.queues.length);

    const log = recorder();
    const progress = new MigrationProgress();
    const result = await migrateV1(c, LAYOUT, { log, progress });
    const messages = fx.queues.reduce((n, q) => n + q.messages.length, 0);
    assert.deepEqual({ ...result, ms: 0 }, {
      queues: fx.queues.length,
      resumed: 0,
      messages,
      tasks: Object.values(fx.moveTasks).flat().length,
      tenants: fx.tenants.length,
      deleted: Object.keys(fx.redisKeys).length - 2, // all but layout and commit
      ms: 0,
    } satisfies MigrationResult);
    assert.equal(progress.phase, 'done');
    assert.equal(progress.queues, progress.queuesTotal);
    assert.equal(progress.messages, progress.messagesTotal);
    // Between the two, a line every 5 s: as many as the migration took that long.
    assert.deepEqual(
      log.lines.filter((l) => l !== 'migration of Redis layout 1 to layout 2 under way'),
      ['migrating Redis layout 1 to layout 2', 'Redis layout 1 migrated to layout 2'],
    );

    const { store, progress: loaded } = await loadV2(c, LAYOUT);
    assert.deepEqual(storeImage(store), storeImage(v1Store));
    assert.equal(loaded.queues, fx.queues.length);
    assert.equal(loaded.queuesTotal, fx.queues.length);
    assert.equal(loaded.messages, messages);
    assert.equal(loaded.messagesTotal, messages);

    // Byte for byte: each queue's hashes and fields moved under its shard's prefix, unchanged.
    const after = await keyspace(c);
    const v1Queues = before[V1.queues] as Record<string, Buffer>;
    const v1Seq = before[V1.seq] as Record<string, Buffer>;
    const moved = new Set<string>();
    for (const q of store.all()) {
      const shard = LAYOUT.shards[q.shard];
      assert.ok(shard);
      for (const [from, to] of [
        [V1.messages(q.uid), shard.messages(q.uid)],
        [V1.dedup(q.uid), shard.dedup(q.uid)],
        [V1.attempts(q.uid), shard.attempts(q.uid)],
      ] as const) {
        assert.deepEqual(after[to], before[from], `${from} → ${to}`);
        if (after[to] !== undefined) moved.add(to);
      }
      assert.deepEqual((after[shard.queues] as Record<string, Buffer>)[q.uid], v1Queues[q.uid]);
      assert.deepEqual((after[shard.seq] as Record<string, Buffer>)[q.uid], v1Seq[q.uid]);
      moved.add(shard.queues).add(shard.seq).add(shard.commit);
    }
    const tasks: Record<string, Buffer> = {};
    for (const t of store.moveTasks.all()) {
      const source = store.byArn(t.sourceArn);
      assert.ok(source, `the source of task ${t.taskId} is loaded`);
      const key = LAYOUT.shards[source.shard]?.tasks ?? '';
      const record = (after[key] as Record<string, Buffer> | undefined)?.[t.taskId];
      assert.ok(record, `task ${t.taskId} in ${key}`);
      tasks[t.taskId] = record;
      moved.add(key).add(LAYOUT.shards[source.shard]?.commit ?? '');
    }
    assert.deepEqual(tasks, before[V1.tasks]);
    assert.deepEqual(after[LAYOUT.meta.tenants], before[V1.tenants]);

    // Nothing of layout 1 but its fence; everything else is a shard's key or a meta key.
    const fence = {
      [V1.layout]: '2',
      [V1.lock]: V1_FENCE_MARKER,
      [V1.commit]: null,
    };
    assert.deepEqual(
      Object.fromEntries(Object.entries(after).filter(([k]) => k.startsWith(FIXTURE_PREFIX))),
      fence,
    );
    assert.equal(await c.get(V1.commit), V1_FENCE_MARKER);
    assert.equal(await c.pttl(V1.lock), -1, 'the marker never expires');
    const meta = [LAYOUT.meta.layout, LAYOUT.meta.tenants, LAYOUT.meta.migration, LAYOUT.meta.commit];
    assert.deepEqual(
      Object.keys(after).sort(),
      [...Object.keys(fence), ...meta, ...moved].sort(),
      'no key but the fence, the meta keys and the shards of the queues and tasks',
    );
    assert.deepEqual(after[LAYOUT.meta.layout], { version: Buffer.from('2'), shards: Buffer.from('256') });
    for (const key of moved) {
      const shard = LAYOUT.shards.find((s) => key.startsWith(s.prefix));
      assert.ok(shard, `${key} is a shard's`);
      assert.equal(keySlot(key), 64 * shard.shard + 32, `${key}: its shard's slot`);
    }
    for (const key of meta) assert.equal(keySlot(key), keySlot(LAYOUT.meta.layout));
    assert.deepEqual(after, reference, 'the same as the other uninterrupted run');

    // Run again once done: it finds the stamp and nothing left to delete.
    const again = await migrateV1(c, LAYOUT);
    assert.deepEqual({ ...again, ms: 0 }, { ...result, resumed: fx.queues.length, deleted: 0, ms: 0 });
    assert.deepEqual(await keyspace(c), reference);
  } finally {
    await r.stop();
  }
});

/** Runs the child migrator until it prints `until`, then SIGKILLs it; returns the lines it printed. */
async function killChildAt(url: string, stop: string, until: (line: string) => boolean): Promise<string[]> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, url, FIXTURE_PREFIX, stop, '1'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  track(child);
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_c, s) => resolve(s)));
  const lines: string[] = [];
  for await (const line of createInterface({ input: child.stdout })) {
    lines.push(line);
    if (until(line)) break;
  }
  child.kill('SIGKILL');
  assert.equal(await exited, 'SIGKILL', `killed, not finished: ${lines.join(' | ')}`);
  return lines;
}

const middle = Math.ceil(fx.queues.length / 2);
for (const [stop, resumed] of [
  ['fenced', 0],
  ['chunk:1', 0],
  ['queue:1', 1],
  [`queue:${middle}`, middle],
  [`chunk@${middle}`, middle],
  ['copied', fx.queues.length],
  ['stamped', fx.queues.length],
] as const) {
  test(`Given a migration killed with SIGKILL at ${stop}, when it is run again, then Redis holds what an uninterrupted migration leaves`, async () => {
    const r = await fixtureRedis();
    try {
      const lines = await killChildAt(r.server.url, stop, (line) => line === 'paused');
      assert.equal(lines.at(-1), 'paused');
      if (stop === 'stamped') {
        const meta = await loadMeta(r.client, LAYOUT, new QueueStore(new ManualClock()));
        assert.equal(meta.state, 'needs-migration', 'the layout 1 keys are not deleted yet');
      } else {
        assert.equal((await keyspace(r.client))[LAYOUT.meta.layout], undefined, 'not stamped when killed');
      }

      const result = await migrateV1(r.client, LAYOUT);
      assert.equal(result.resumed, resumed);
      assert.equal(result.queues, fx.queues.length);
      assert.deepEqual(await keyspace(r.client), reference);
      const { store } = await loadV2(r.client, LAYOUT);
      assert.equal(store.size, fx.queues.length);
    } finally {
      await r.stop();
    }
  });
}

test('Given a migration killed with SIGKILL wherever it is after a few writes, when it is run again, then Redis holds what an uninterrupted migration leaves', async () => {
  const r = await fixtureRedis();
  try {
    let steps = 0;
    await killChildAt(r.server.url, 'none', (line) => line.startsWith('step') && ++steps === 7);
    await migrateV1(r.client, LAYOUT);
    assert.deepEqual(await keyspace(r.client), reference);
  } finally {
    await r.stop();
  }
});

test('Given layout 1 fenced by a migration, when an older release writes, chains, reloads or takes the lock, then each is refused', async () => {
  const r = await fixtureRedis();
  try {
    const c = r.client;
    const applyKeysV1 = [V1.lock, V1.queues, V1.seq, V1.commit];
    // An older leader, its lock held and its writer's chain at c1: both accepted before the fence.
    await c.set(V1.lock, 'old-token');
    assert.equal(
      await scripts.apply.run(c, applyKeysV1, ['old-token', FIXTURE_PREFIX, '', 'c1']),
      ScriptCode.OK,
    );
    assert.equal(await scripts.apply.run(c, applyKeysV1, ['', FIXTURE_PREFIX, 'c1', 'c2']), ScriptCode.OK);
    const stopped = new Error('stopped after the fence');
    await assert.rejects(
      migrateV1(c, LAYOUT, {
        onStep: (s) => {
          if (s.kind === 'fenced') throw stopped;
        },
      }),
      (e) => e === stopped,
    );
    const frozen = await keyspace(c);

    const write = ['Q', 'x', '{}'];
    assert.equal(
      await scripts.apply.run(c, applyKeysV1, ['old-token', FIXTURE_PREFIX, 'c2', 'c3', ...write]),
      ScriptCode.FENCED,
    );
    assert.equal(
      await scripts.apply.run(c, applyKeysV1, ['', FIXTURE_PREFIX, 'c2', 'c3', ...write]),
      ScriptCode.OUT_OF_CHAIN,
    );
    assert.equal(await scripts.init.run(c, [V1.lock, V1.layout, V1.queues], ['', 1]), 2);
    await assert.rejects(loadStore(c, V1, new QueueStore(new ManualClock())), LayoutError);
    const lock = new RedisLock(c, lockKeys(V1));
    const taken = await lock.acquire('old-instance', 10_000);
    assert.equal(taken.acquired, false);
    assert.equal(await lock.renew('old-token', 10_000), false);
    assert.deepEqual(await keyspace(c), frozen, 'nothing written by the refused calls');

    // Not stamped: a start finds a migration to finish, and finishing it gives the same keys.
    const meta = await loadMeta(c, LAYOUT, new QueueStore(new ManualClock()));
    assert.equal(meta.state, 'needs-migration');
    await migrateV1(c, LAYOUT);
    assert.deepEqual(await keyspace(c), reference);
  } finally {
    await r.stop();
  }
});

test('Given the meta lock held by another token, when a migrator with its own meta token runs, then it copies nothing', async () => {
  const r = await fixtureRedis();
  try {
    const c = r.client;
    await c.set(LAYOUT.meta.lock, 'meta-new');
    await assert.rejects(migrateV1(c, LAYOUT, { metaToken: 'meta-old' }), { name: 'FencedError' });
    const written = Object.keys(await keyspace(c)).filter((k) => !k.startsWith(FIXTURE_PREFIX));
    assert.deepEqual(written, [LAYOUT.meta.lock]);
    await migrateV1(c, LAYOUT, { metaToken: 'meta-new' });
    assert.equal((await loadV2(c, LAYOUT)).store.size, fx.queues.length);
  } finally {
    await r.stop();
  }
});

test('Given the fixture with its shard leases held, when a migrator whose token they do not hold runs, then it writes nothing to any shard', async () => {
  const r = await fixtureRedis();
  try {
    const c = r.client;
    for (const s of LAYOUT.shards) await c.set(s.lease, 'tok-new');
    await assert.rejects(migrateV1(c, LAYOUT, { token: 'tok-old' }), { name: 'FencedError' });
    const ks = await keyspace(c);
    const written = Object.keys(ks).filter(
      (k) => LAYOUT.shards.some((s) => k.startsWith(s.prefix)) && !k.endsWith('lease'),
    );
    assert.deepEqual(written, []);
    const result = await migrateV1(c, LAYOUT, { token: 'tok-new' });
    assert.equal(result.queues, fx.queues.length);
    assert.equal((await loadV2(c, LAYOUT)).store.size, fx.queues.length);
  } finally {
    await r.stop();
  }
});
