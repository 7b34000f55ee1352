/**
 * Many owners and the memory budget, against a real redis-server: a shard moved to a process
 * whose budget it does not fit is refused there by name and held (the map gives it to nobody
 * else), read again only after `refusedRetryMs`, never at every reconcile; and once it fits (here:
 * messages removed from Redis, as the refusal's log line advises) it is read in and served.
 * Meanwhile its requests are answered 503 at once, at B and forwarded from A, never held at the
 * routers for a refused shard: nobody else would serve it in the meantime. Two ShardOwners on one
 * map, each with a Persistence of its own and a Router on a forwarding channel, as two processes
 * would have.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { TestContext } from 'node:test';
import { QueueStore } from '../../src/core/store.js';
import { ShardOwner, type ShardMapView } from '../../src/owners/owner.js';
import { Router } from '../../src/owners/router.js';
import { RpcServer } from '../../src/owners/rpc.js';
import { SqsError } from '../../src/sqs/errors.js';
import { servicesFor, type RequestContext } from '../../src/sqs/service.js';
import { layoutFor, type Layout } from '../../src/persistence/layout.js';
import { sendOne } from '../support/queue.js';
import { requestContext } from '../support/services.js';
import { uniquePrefix } from '../support/redis.js';
import { until } from '../support/layout-v1.js';
import { shardKeysOf, watchedPersistence, type WatchedPersistence } from '../support/persistence.js';
import { testsRequiring } from '../support/requires.js';
import { sharedRedis } from '../support/sqs.js';

const { after, before, test } = testsRequiring('redis-server');

const redis = sharedRedis({ before, after }, { aof: false });
const ACCOUNT = '000000000000';
const REGION = 'us-east-1';

/**
 * What a request for a shard nobody serves would wait at a router before its 503: far beyond the
 * test's own timeout, so that a request held for a refused shard fails the test.
 */
const HOLD_MS = 600_000;

class TestMap implements ShardMapView {
  private readonly owners: (string | undefined)[] = Array.from({ length: 256 }, () => 'A');
  private readonly listeners: (() => void)[] = [];
  /** Times a router read the map again: once per retry of a request. */
  reads = 0;
  ownerOf(shard: number): string | undefined {
    return this.owners[shard];
  }
  refreshShared(): Promise<void> {
    this.reads++;
    return Promise.resolve();
  }
  onChange(fn: () => void): void {
    this.listeners.push(fn);
  }
  move(shard: number, owner: string): void {
    this.owners[shard] = owner;
    for (const l of this.listeners) l();
  }
}

/** Where each process's forwarding channel listens, by instance id. */
const addresses = new Map<string, string>();

async function ownerProcess(
  id: string,
  layout: Layout,
  map: TestMap,
  opts: { maxMemory?: number; refusedRetryMs?: number; refused?: number[] } = {},
): Promise<{ owner: ShardOwner; w: WatchedPersistence; router: Router; stop(): Promise<void> }> {
  const owner: ShardOwner = new ShardOwner({
    redis: await redis.connect(),
    layout,
    instanceId: id,
    ttlMs: 1500,
    intervalMs: 300,
    map,
    onGive: () => undefined,
    refusedRetryMs: opts.refusedRetryMs,
  });
  const maxMemory = opts.maxMemory;
  const w = watchedPersistence(await redis.connect(), {
    layout,
    keepConnection: true,
    owned: owner,
    onShardFenced: (s) => owner.lost(s),
    onShardRefused: (s) => opts.refused?.push(s),
    ...(maxMemory === undefined
      ? {}
      : { createStore: () => new QueueStore(w.clock, { deletedRecentlyMs: 0, maxMemory }) }),
  });
  await w.p.start();
  owner.start(w.p);
  const store = w.stores.at(-1);
  assert.ok(store);
  const router = new Router({
    instanceId: id,
    services: servicesFor(store, w.clock),
    owner,
    persistence: w.p,
    map,
    addressOf: (member) => addresses.get(member),
    holdMs: HOLD_MS,
  });
  const rpc = new RpcServer({ handle: (payload, signal) => router.handle(payload, signal) });
  const at = await rpc.listen({ host: '127.0.0.1', port: 0 });
  addresses.set(id, `127.0.0.1:${'port' in at ? at.port : 0}`);
  let stopped = false;
  return {
    owner,
    w,
    router,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await router.close();
      await rpc.close();
      await owner.stop();
      await w.p.close();
    },
  };
}

function ctx(): RequestContext {
  return requestContext({ accountId: ACCOUNT, region: REGION, defaultRegion: REGION, anyAccount: true });
}

/** A router's answer to GetQueueAttributes of `name`: the message count, or the SQS error's name. */
async function depth(router: Router, name: string): Promise<number | string> {
  try {
    const out = (await router.execute('GetQueueAttributes', ctx(), {
      QueueUrl: `http://localhost:4100/${ACCOUNT}/${name}`,
      AttributeNames: ['ApproximateNumberOfMessages'],
    })) as { Attributes?: Record<string, string> };
    return Number(out.Attributes?.['ApproximateNumberOfMessages']);
  } catch (e) {
    if (e instanceof SqsError) return e.errorName;
    throw e;
  }
}

void test(
  "Given a shard bigger than B's memory budget, when the map moves it to B, then B refuses it once, holds it, and reads it again only after refusedRetryMs, its requests answered 503 at once at both routers; once it fits, B serves it",
  { timeout: 60_000 },
  async (t: TestContext) => {
    const layout = layoutFor(uniquePrefix());
    const map = new TestMap();
    const a = await ownerProcess('A', layout, map);
    const refused: number[] = [];
    const b = await ownerProcess('B', layout, map, {
      maxMemory: 256 * 1024,
      refusedRetryMs: 2000,
      refused,
    });
    // A timed-out test closes the routers, so that a request they hold ends with it.
    t.signal.addEventListener('abort', () => void Promise.all([a.stop(), b.stop()]), { once: true });
    try {
      await until(
        'A serves every shard',
        () => Promise.resolve(a.owner.counts().serving),
        (n) => n === 256,
      );
      const store = a.w.stores.at(-1);
      assert.ok(store);
      const q = store.create({ accountId: ACCOUNT, region: REGION, name: 'too-big' }, {}, {}).queue;
      for (let i = 0; i < 8; i++) {
        sendOne(
          q,
          { id: randomUUID(), body: `${i}`.padEnd(64 * 1024, 'x'), md5OfBody: 'md5', senderId: ACCOUNT },
          a.w.clock.now(),
        );
      }
      await a.w.p.commit(q.shard);

      map.move(q.shard, 'B');
      await until(
        'B refused the shard',
        () => Promise.resolve(refused.length),
        (n) => n > 0,
      );
      // What must not happen is B reading it again and again: the reconciles of 1 s (renewals every
      // 300 ms, and the 100 ms retries of shards not read in) would each have done so.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      assert.deepEqual(refused, [q.shard], 'refused once, by name');
      assert.equal(b.w.p.shardsDown.get(q.shard), 'refused');
      assert.equal(b.owner.held().get(q.shard)?.state, 'taking', 'B holds the lease, and does not serve it');
      assert.equal(b.owner.serves(q.shard), false);
      assert.ok(
        (b.w.stores.at(-1)?.budget.used ?? Infinity) <= 256 * 1024,
        'B holds no more than its budget',
      );

      // Its requests get their 503 at once, at its owner and forwarded there, without a retry: held
      // for HOLD_MS they would outlast the test's timeout.
      const reads = map.reads;
      const forwarded = { ...a.router.forwarded };
      assert.equal(await depth(b.router, 'too-big'), 'ServiceUnavailable', 'at B, the owner: 503');
      assert.equal(await depth(a.router, 'too-big'), 'ServiceUnavailable', 'forwarded from A: 503');
      assert.deepEqual(
        a.router.forwarded,
        { ...forwarded, refused: forwarded.refused + 1 },
        'B answered A "refused", never "not the owner"',
      );
      assert.equal(map.reads, reads, 'neither router read the map again to retry');
      assert.deepEqual(b.router.forwarded, { answered: 0, not_owner: 0, refused: 0, unsent: 0, lost: 0 });

      // Removed from Redis but one: the shard fits now, and B's next try (refusedRetryMs) reads it in.
      const key = shardKeysOf(layout, q).messages(q.uid);
      const ids = await redis.client.hkeys(key);
      await redis.client.hdel(key, ...ids.slice(1));
      await until('B serves the shard', () => Promise.resolve(b.owner.serves(q.shard)), Boolean, 10_000);
      assert.deepEqual(refused, [q.shard], 'not refused a second time');
      assert.equal(await depth(a.router, 'too-big'), 1, 'forwarded from A, answered by B');
      const there = b.w.stores.at(-1)?.get(ACCOUNT, 'too-big', REGION);
      assert.equal(there?.receive(10, undefined, b.w.clock.now()).length, 1, 'the one message left is there');
    } finally {
      await b.stop();
      await a.stop();
    }
  },
);
