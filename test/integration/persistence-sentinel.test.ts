/**
 * Persistence through Redis Sentinel: a master, a replica and one Sentinel, all started by this
 * file on free ports. A forced failover (SENTINEL FAILOVER) turns the old master into a replica
 * and makes it drop its clients; ioredis asks the Sentinel for the new master and reconnects. A
 * write that meets the old master on the way gets READONLY (or a closed connection): its request
 * is answered 503, the store is dropped and reloaded from the new master. Which of the two
 * happens depends on timing; both must lose nothing acknowledged.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { QueueStore } from '../../src/core/store.js';
import { createRedis } from '../../src/persistence/redis.js';
import { SqsError } from '../../src/sqs/errors.js';
import { track } from '../support/process.js';
import { freePort } from '../support/server.js';
import { testsRequiring } from '../support/requires.js';
import { msg, sendOne } from '../support/queue.js';
import { watchedPersistence } from '../support/persistence.js';

const { after, before, test } = testsRequiring('redis-server');

const MASTER = 'ssqmaster';
const procs: ChildProcess[] = [];
const clients: Redis[] = [];
let dir: string;
let sentinelPort: number;
let masterPort: number;

/** Starts a redis-server with these arguments; resolves when it accepts connections. */
async function launch(args: string[], ready: RegExp): Promise<ChildProcess> {
  const p = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  procs.push(p);
  track(p);
  let out = '';
  await new Promise<void>((resolve, reject) => {
    p.stdout?.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      if (ready.test(out)) resolve();
    });
    p.stderr?.resume();
    p.once('exit', (code) => reject(new Error(`redis-server ${args.join(' ')} exited (${code}):\n${out}`)));
  });
  return p;
}

function client(port: number): Redis {
  const c = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
  c.on('error', () => undefined);
  clients.push(c);
  return c;
}

/** The master's port as the Sentinel sees it. */
async function masterOf(sentinel: Redis): Promise<number> {
  const addr = (await sentinel.call('SENTINEL', 'get-master-addr-by-name', MASTER)) as string[];
  return Number(addr[1]);
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ssq-sentinel-'));
  masterPort = await freePort();
  const replicaPort = await freePort();
  sentinelPort = await freePort();
  const common = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes', '--appendfsync', 'always'];
  await launch(
    ['--port', String(masterPort), '--dir', mkdtempSync(join(dir, 'm-')), ...common],
    /Ready to accept connections/,
  );
  await launch(
    [
      '--port',
      String(replicaPort),
      '--dir',
      mkdtempSync(join(dir, 'r-')),
      '--replicaof',
      '127.0.0.1',
      String(masterPort),
      ...common,
    ],
    /MASTER <-> REPLICA sync: Finished with success/,
  );
  const conf = join(dir, 'sentinel.conf');
  writeFileSync(
    conf,
    [
      `port ${sentinelPort}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `sentinel monitor ${MASTER} 127.0.0.1 ${masterPort} 1`,
      `sentinel down-after-milliseconds ${MASTER} 1000`,
      `sentinel failover-timeout ${MASTER} 5000`,
      '',
    ].join('\n'),
  );
  // The Sentinel is usable once it has found the replica through the master.
  await launch([conf, '--sentinel'], /\+slave slave/);
});

after(async () => {
  for (const c of clients) c.disconnect();
  for (const p of procs) {
    if (p.exitCode === null && p.signalCode === null) {
      p.kill('SIGKILL');
      await new Promise((r) => p.once('exit', r));
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

test('Given Redis behind Sentinel, when the master fails over, then writes reach the new master (after a reload if one was refused) and nothing acknowledged is lost', async () => {
  const {
    p,
    layout,
    clock,
    stores,
    reloaded: nextStore,
  } = watchedPersistence(
    createRedis({ sentinels: [{ host: '127.0.0.1', port: sentinelPort }], masterName: MASTER }),
  );
  try {
    await p.start();
    const store = stores[0] as QueueStore;
    const q = store.create(
      { accountId: '000000000000', region: 'us-east-1', name: 'sentinel' },
      {},
      {},
    ).queue;
    const kept = sendOne(q, msg('before the failover', { id: 'kept' }), clock.now());
    await p.commit();
    // Acknowledged on the master; make sure the replica has it too before promoting it (Redis
    // replication is asynchronous: docs/persistence.md).
    const master = client(masterPort);
    assert.equal(await master.call('WAIT', '1', '5000'), 1);

    const sentinel = client(sentinelPort);
    const reloaded = nextStore();
    // The Sentinel refuses (NOGOODSLAVE) until it has had INFO from the replica: retry, bounded.
    const deadline = Date.now() + 20_000;
    for (;;) {
      const answer = await sentinel.call('SENTINEL', 'FAILOVER', MASTER).catch((e: Error) => e.message);
      if (answer === 'OK') break;
      assert.match(String(answer), /NOGOODSLAVE/);
      assert.ok(Date.now() < deadline, 'the Sentinel found no replica to promote within 20 s');
      await new Promise((r) => setTimeout(r, 200));
    }
    // Wait (bounded) until the Sentinel names the new master, then write: the old master refuses.
    while ((await masterOf(sentinel)) === masterPort) {
      assert.ok(Date.now() < deadline, 'no failover within 20 s');
      await new Promise((r) => setTimeout(r, 50));
    }
    sendOne(q, msg('to the old master', { id: 'refused' }), clock.now());
    const outcome = await p.commit().then(
      () => 'stored',
      (e: unknown) => (e instanceof SqsError ? e.errorName : String(e)),
    );
    // Either the old master refused it (READONLY) or the client had already moved to the new one.
    assert.ok(outcome === 'ServiceUnavailable' || outcome === 'stored', outcome);
    if (outcome === 'ServiceUnavailable') {
      const s2 = await reloaded;
      const ids = [...s2.require('000000000000', 'sentinel').allMessages()].map((m) => m.id);
      assert.deepEqual(ids, [kept.id]);
      sendOne(s2.require('000000000000', 'sentinel'), msg('to the new master', { id: 'after' }), clock.now());
      await p.commit();
    }
    const newMaster = client(await masterOf(sentinel));
    const stored = await newMaster.hkeys(layout.shards[q.shard]?.messages(q.uid) ?? '');
    assert.ok(stored.includes(kept.id), 'the acknowledged message is on the new master');
  } finally {
    await p.close();
  }
});
