/**
 * The router (src/owners/router.ts) between two "instances" in one process: each has a store of
 * its own, a forwarding channel on loopback (rpc.ts) and an owner whose shards the test sets. A
 * request runs where its shard is served; elsewhere it is forwarded; "not the owner" is retried
 * until the shard is served somewhere or the hold time is up; "refused" (a shard its owner holds
 * but cannot fit in memory) is a 503 at once, never a retry; an answer lost after delivery, or one
 * the router does not know, is a 503, never a retry. A dead letter sent to another owner that got
 * no answer is held and sent again a moment later.
 */
import assert from 'node:assert/strict';
import { after, test, type TestContext } from 'node:test';
import { catalogEntry } from '../../src/core/catalog.js';
import { QueueStore } from '../../src/core/store.js';
import { systemClock } from '../../src/core/clock.js';
import type { ShardOwner } from '../../src/owners/owner.js';
import { Router } from '../../src/owners/router.js';
import { RpcServer } from '../../src/owners/rpc.js';
import type { Persistence } from '../../src/persistence/persistence.js';
import { shardOf } from '../../src/shard/hash.js';
import { SqsError } from '../../src/sqs/errors.js';
import { servicesFor, type RequestContext } from '../../src/sqs/service.js';
import { requestContext } from '../support/services.js';

const ACCOUNT = '000000000000';
const REGION = 'us-east-1';

/** The shards each instance serves, and a map the routers read: shard → instance id. */
const owners = new Map<number, string>();
const served = { A: new Set<number>(), B: new Set<number>() };
/** Shards an instance holds and is reading in, and the requests waiting for them there. */
const taking = { A: new Set<number>(), B: new Set<number>() };
/** Shards an instance holds but refused for want of memory (ShardOwner.refused). */
const refused = { A: new Set<number>(), B: new Set<number>() };
const waiting: (() => void)[] = [];
const commits: { A: number[]; B: number[] } = { A: [], B: [] };
let mapReads = 0;

const map = {
  ownerOf: (shard: number) => owners.get(shard),
  onChange: () => undefined,
  refreshShared: () => {
    mapReads++;
    return Promise.resolve();
  },
};

interface Instance {
  readonly router: Router;
  readonly store: QueueStore;
  readonly rpc: RpcServer;
  address: string;
}

const instances: Record<'A' | 'B', Instance> = {} as Record<'A' | 'B', Instance>;

/** What A's router logged as warnings. */
const warnings: string[] = [];

async function instance(id: 'A' | 'B', holdMs: number): Promise<Instance> {
  const store = new QueueStore(systemClock, { deletedRecentlyMs: 0 });
  const owner = {
    serves: (s: number) => served[id].has(s),
    holds: (s: number) => served[id].has(s),
    enter: () => () => undefined,
    taking: (s: number) => taking[id].has(s),
    refused: (s: number) => refused[id].has(s),
    whenServing: () => new Promise<void>((resolve) => waiting.push(resolve)),
  } as unknown as ShardOwner;
  /** Transfer marks (Persistence.transferMarked): `<uid>:<id>`. */
  const marks = new Set<string>();
  const persistence = {
    commit: (shard?: number) => {
      commits[id].push(shard ?? -1);
      return Promise.resolve();
    },
    transferMarked: (_shard: number, uid: string, mid: string) => Promise.resolve(marks.has(`${uid}:${mid}`)),
    acceptedTransfer: (q: { uid: string }, mid: string) => marks.add(`${q.uid}:${mid}`),
  } as unknown as Persistence;
  const router: Router = new Router({
    instanceId: id,
    services: servicesFor(store, systemClock),
    owner,
    persistence,
    map,
    addressOf: (member) => instances[member as 'A' | 'B'].address,
    holdMs,
    log:
      id === 'A'
        ? { info: () => undefined, warn: (_o, msg) => warnings.push(msg), error: () => undefined }
        : undefined,
  });
  const rpc = new RpcServer({ handle: (payload, signal) => router.handle(payload, signal) });
  const at = await rpc.listen({ host: '127.0.0.1', port: 0 });
  const inst: Instance = { router, store, rpc, address: `127.0.0.1:${'port' in at ? at.port : 0}` };
  instances[id] = inst;
  return inst;
}

const a = await instance('A', 2000);
const b = await instance('B', 2000);
after(async () => {
  for (const i of [a, b]) {
    await i.router.close();
    await i.rpc.close();
  }
});

function ctx(): RequestContext {
  return requestContext({ accountId: ACCOUNT, region: REGION, defaultRegion: REGION, anyAccount: true });
}

function shardOfName(name: string): number {
  return shardOf(ACCOUNT, REGION, name);
}

void test('Given a queue whose shard B serves, when A is asked to create and send to it, then both run at B and wait for that shard', async () => {
  const s = shardOfName('at-b');
  owners.set(s, 'B');
  served.B.add(s);
  commits.B.length = 0;
  const created = (await a.router.execute('CreateQueue', ctx(), { QueueName: 'at-b' })) as {
    QueueUrl: string;
  };
  assert.equal(created.QueueUrl, 'http://localhost:4100/000000000000/at-b');
  await a.router.execute('SendMessage', ctx(), { QueueUrl: created.QueueUrl, MessageBody: 'hello' });
  assert.ok(b.store.get(ACCOUNT, 'at-b', REGION), 'the queue is in B');
  assert.equal(a.store.get(ACCOUNT, 'at-b', REGION), undefined, 'and not in A');
  assert.deepEqual(commits.B, [s, s], "B waited for the shard's writes before each answer");
  const got = (await b.router.execute('ReceiveMessage', ctx(), { QueueUrl: created.QueueUrl })) as {
    Messages?: { Body: string }[];
  };
  assert.deepEqual(
    got.Messages?.map((m) => m.Body),
    ['hello'],
  );
});

void test('Given a queue on B, when A forwards a request its action refuses, then the SQS error comes back as it was', async () => {
  const s = shardOfName('missing-at-b');
  owners.set(s, 'B');
  served.B.add(s);
  await assert.rejects(
    a.router.execute('GetQueueAttributes', ctx(), {
      QueueUrl: 'http://localhost:4100/000000000000/missing-at-b',
      AttributeNames: ['All'],
    }),
    (e: unknown) => e instanceof SqsError && e.errorName === 'QueueDoesNotExist',
  );
});

void test('Given the map names B but B does not serve the shard yet, when A forwards, then it is retried until B serves it', async () => {
  const s = shardOfName('moving');
  owners.set(s, 'B');
  served.B.delete(s);
  const reads = mapReads;
  const pending = a.router.execute('CreateQueue', ctx(), { QueueName: 'moving' });
  // B starts serving only once A has been told "not the owner" and read the map again.
  while (mapReads === reads) await new Promise((resolve) => setImmediate(resolve));
  served.B.add(s);
  await pending;
  assert.ok(b.store.get(ACCOUNT, 'moving', REGION));
});

void test('Given a shard nobody serves, when the hold time passes, then the answer is 503 ServiceUnavailable', async () => {
  const short = await instance('A', 50);
  try {
    const s = shardOfName('nowhere');
    owners.set(s, 'B');
    served.B.delete(s);
    await assert.rejects(
      short.router.execute('CreateQueue', ctx(), { QueueName: 'nowhere' }),
      (e: unknown) => e instanceof SqsError && e.errorName === 'ServiceUnavailable',
    );
    assert.equal(b.store.get(ACCOUNT, 'nowhere', REGION), undefined, 'nothing ran');
  } finally {
    await short.router.close();
    await short.rpc.close();
    instances.A = a;
  }
});

void test('Given B goes away after taking a request, when its answer is lost, then A answers 503 and does not send it again', async () => {
  const s = shardOfName('lost');
  owners.set(s, 'B');
  served.B.add(s);
  let calls = 0;
  const real = b.address;
  const dying = new RpcServer({
    handle: () => {
      calls++;
      // A retry would now reach the real B, which serves the shard: the test would see a 200.
      b.address = real;
      // The connection closes with the request taken and no answer sent.
      void dying.close();
      return new Promise(() => undefined);
    },
  });
  const at = await dying.listen({ host: '127.0.0.1', port: 0 });
  b.address = `127.0.0.1:${'port' in at ? at.port : 0}`;
  try {
    await assert.rejects(
      a.router.execute('CreateQueue', ctx(), { QueueName: 'lost' }),
      (e: unknown) => e instanceof SqsError && e.errorName === 'ServiceUnavailable',
    );
    assert.equal(calls, 1, 'delivered once');
    assert.equal(b.store.get(ACCOUNT, 'lost', REGION), undefined, 'and never sent again');
  } finally {
    b.address = real;
  }
});

void test('Given ListQueues, when any instance is asked, then it answers from its own catalog without forwarding', async () => {
  const listed = (await a.router.execute('ListQueues', ctx(), {})) as { QueueUrls?: string[] };
  // A's store holds none of B's queues and no mirror runs here: only what A itself knows.
  assert.deepEqual(listed.QueueUrls ?? [], []);
});

/** A CreateQueue of `name` as A's forwarding channel hands it to A's router (its handler). */
function forwardedCreate(name: string): Promise<unknown> {
  return a.router.handle(
    {
      s: shardOfName(name),
      a: 'CreateQueue',
      c: {
        requestId: 'r',
        accountId: ACCOUNT,
        region: REGION,
        defaultRegion: REGION,
        baseUrl: 'http://x',
        senderId: ACCOUNT,
      },
      i: { QueueName: name },
    },
    new AbortController().signal,
  );
}

void test('Given a forwarded request for a shard this instance does not serve, then it answers "not the owner" without running it', async () => {
  const s = shardOfName('not-here');
  served.A.delete(s);
  const answer = await forwardedCreate('not-here');
  assert.deepEqual(answer, { n: 1 });
  assert.equal(a.store.get(ACCOUNT, 'not-here', REGION), undefined);
});

void test('Given B holds a shard it is still reading in, when A forwards a request for it, then B runs it once the shard serves, with no "not the owner" and no retry', async () => {
  const s = shardOfName('being-read');
  owners.set(s, 'B');
  served.B.add(s);
  await a.router.execute('CreateQueue', ctx(), { QueueName: 'being-read' });
  served.B.delete(s);
  taking.B.add(s);
  const before = { ...a.router.forwarded };
  const sent = a.router.execute('SendMessage', ctx(), {
    QueueUrl: 'http://localhost:4100/000000000000/being-read',
    MessageBody: 'waited',
  });
  const deadline = Date.now() + 5000;
  while (waiting.length === 0) {
    assert.ok(Date.now() < deadline, 'the request waits at B for the shard');
    await new Promise((r) => setImmediate(r));
  }
  taking.B.delete(s);
  served.B.add(s);
  for (const done of waiting.splice(0)) done();
  await sent;
  assert.equal(a.router.forwarded.not_owner, before.not_owner, 'B never answered "not the owner"');
  assert.equal(a.router.forwarded.answered, before.answered + 1, 'one forwarded request, answered');
  assert.equal(b.store.get(ACCOUNT, 'being-read', REGION)?.size, 1);
});

/**
 * A router for A that would hold a request for 10 minutes: a request it held instead of
 * answering would outlast its test's own timeout. Registered as A while `fn` runs; closed when the
 * test ends, timed out too, so that a held request does not keep the file running.
 */
async function withLongHold(t: TestContext, fn: (long: Instance) => Promise<void>): Promise<void> {
  const long = await instance('A', 600_000);
  t.signal.addEventListener('abort', () => void long.router.close(), { once: true });
  try {
    await fn(long);
  } finally {
    await long.router.close();
    await long.rpc.close();
    instances.A = a;
  }
}

/**
 * A request for a shard its holder refused for want of memory, asked at A (through a router that
 * would hold a request for 10 minutes): B holds it, so A forwards and B answers "refused"; or A
 * holds it itself. Either way a 503 at once, no retry, nothing run, and the admin API's calls
 * about its queues answer 503 too.
 */
for (const holder of ['B', 'A'] as const) {
  const name = `refused-at-${holder.toLowerCase()}`;
  void test(
    `Given ${holder} holds a shard it refused for want of memory, when A is asked for it, then A answers 503 at once, with no retry${holder === 'B' ? ' (B answered "refused")' : ', forwarding nothing'}`,
    { timeout: 20_000 },
    async (t) => {
      const s = shardOfName(name);
      owners.set(s, holder);
      served[holder].delete(s);
      refused[holder].add(s);
      try {
        await withLongHold(t, async (long) => {
          const reads = mapReads;
          await assert.rejects(
            long.router.execute('CreateQueue', ctx(), { QueueName: name }),
            (e: unknown) => e instanceof SqsError && e.errorName === 'ServiceUnavailable',
          );
          assert.deepEqual(long.router.forwarded, {
            answered: 0,
            not_owner: 0,
            refused: holder === 'B' ? 1 : 0,
            unsent: 0,
            lost: 0,
          });
          assert.equal(mapReads, reads, 'the map was not read again: no retry');
          const store = holder === 'B' ? b.store : long.store;
          assert.equal(store.get(ACCOUNT, name, REGION), undefined, 'nothing ran');
          const admin = await long.router.adminAtOwner(s, { method: 'GET', url: '/admin/queues/x' });
          assert.notEqual(admin, 'here');
          assert.equal(admin === 'here' ? 0 : admin.status, 503);
        });
      } finally {
        refused[holder].delete(s);
      }
    },
  );
}

void test('Given a forwarded request for a shard this instance refused for want of memory, then it answers "refused" without running it', async () => {
  const s = shardOfName('refused-here');
  served.A.delete(s);
  refused.A.add(s);
  try {
    const answer = await forwardedCreate('refused-here');
    assert.deepEqual(answer, { r: 1 });
    assert.equal(a.store.get(ACCOUNT, 'refused-here', REGION), undefined);
  } finally {
    refused.A.delete(s);
  }
});

void test(
  'Given a request waiting at B for a shard B is reading in, when B refuses the shard for want of memory, then A answers 503 with no "not the owner" and no retry',
  { timeout: 20_000 },
  async (t) => {
    const s = shardOfName('refused-while-read');
    owners.set(s, 'B');
    served.B.delete(s);
    taking.B.add(s);
    try {
      await withLongHold(t, async (long) => {
        const reads = mapReads;
        const sent = long.router.execute('CreateQueue', ctx(), { QueueName: 'refused-while-read' });
        const deadline = Date.now() + 5000;
        while (waiting.length === 0) {
          assert.ok(Date.now() < deadline, 'the request waits at B for the shard');
          await new Promise((r) => setImmediate(r));
        }
        // What ShardOwner does when the read is refused: the hold is marked, its waiters woken.
        taking.B.delete(s);
        refused.B.add(s);
        for (const done of waiting.splice(0)) done();
        await assert.rejects(
          sent,
          (e: unknown) => e instanceof SqsError && e.errorName === 'ServiceUnavailable',
        );
        assert.deepEqual(long.router.forwarded, {
          answered: 0,
          not_owner: 0,
          refused: 1,
          unsent: 0,
          lost: 0,
        });
        assert.equal(mapReads, reads, 'the map was not read again: no retry');
      });
    } finally {
      taking.B.delete(s);
      refused.B.delete(s);
    }
  },
);

void test('Given an owner whose answer the router does not know, when A forwards to it, then A answers 503 and does not send it again', async () => {
  const s = shardOfName('unknown-answer');
  owners.set(s, 'B');
  served.B.add(s);
  let calls = 0;
  const real = b.address;
  const other = new RpcServer({
    handle: () => {
      calls++;
      return Promise.resolve({ x: 1 });
    },
  });
  const at = await other.listen({ host: '127.0.0.1', port: 0 });
  b.address = `127.0.0.1:${'port' in at ? at.port : 0}`;
  try {
    await assert.rejects(
      a.router.execute('CreateQueue', ctx(), { QueueName: 'unknown-answer' }),
      (e: unknown) => e instanceof SqsError && e.errorName === 'ServiceUnavailable',
    );
    assert.equal(calls, 1, 'delivered once');
  } finally {
    b.address = real;
    await other.close();
  }
});

/** Polls `ok` every 20 ms until it holds, for at most `ms`. */
async function eventually(what: string, ok: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) assert.fail(`${what}: not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

void test("Given a queue at A whose dead-letter queue is B's, when a message's sending there gets no answer in time (B does not serve that shard then), then A sends it again a moment later, while it is still held, not when its 60 s hold ends, and B takes it once it serves", async (t) => {
  const dlqName = 'dl-target';
  const srcName = 'dl-source';
  const ds = shardOfName(dlqName);
  const ss = shardOfName(srcName);
  assert.notEqual(ds, ss);
  owners.set(ds, 'B');
  served.B.add(ds);
  owners.set(ss, 'A');
  served.A.add(ss);
  await b.router.execute('CreateQueue', ctx(), { QueueName: dlqName });
  const dlq = b.store.get(ACCOUNT, dlqName, REGION) ?? assert.fail();
  // A owns every shard but the dead-letter queue's (a store of many owners knows which it owns).
  a.store.setOwnedShards([...Array(256).keys()].filter((x) => x !== ds));
  t.after(() => a.store.setOwnedShards('all'));
  a.store.catalog.putRemote(
    catalogEntry(
      { accountId: ACCOUNT, region: REGION, name: dlqName },
      { shard: ds, uid: dlq.uid, fifo: false },
    ),
  );
  a.store.onDeadLetterAway((q, m, t) => a.router.relayDeadLetter(q, m, t));
  const { QueueUrl } = (await a.router.execute('CreateQueue', ctx(), {
    QueueName: srcName,
    Attributes: {
      VisibilityTimeout: '0',
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 1 }),
    },
  })) as { QueueUrl: string };
  const src = a.store.get(ACCOUNT, srcName, REGION) ?? assert.fail();
  await a.router.execute('SendMessage', ctx(), { QueueUrl, MessageBody: 'poison' });
  await a.router.execute('ReceiveMessage', ctx(), { QueueUrl });

  served.B.delete(ds);
  warnings.length = 0;
  const held = (await a.router.execute('ReceiveMessage', ctx(), { QueueUrl })) as { Messages?: unknown[] };
  assert.equal(held.Messages, undefined, 'past its maxReceiveCount: held for the dead-letter queue');
  await eventually('the sending given up (2 s of "not the owner")', () =>
    warnings.some((w) => w.includes('sent again in a moment')),
  );
  assert.deepEqual(src.counts(Date.now()), { visible: 0, inflight: 1, delayed: 0 }, 'still held');

  served.B.add(ds);
  await eventually('the dead letter at B', () => dlq.counts(Date.now()).visible === 1);
  await eventually('gone from A', () => src.counts(Date.now()).inflight === 0);
  assert.deepEqual(src.counts(Date.now()), { visible: 0, inflight: 0, delayed: 0 });
});
