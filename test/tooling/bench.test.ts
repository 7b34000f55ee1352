// The bench, through its command line: it runs targets and compares them, and its `floor` target
// does, per message, what no SQS server can skip (real MD5s of the bodies and a fresh id per
// message, on both protocols), where the plain ceiling (`fastify`) answers a fixed reply.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';

import { freePort, spawnProcess, waitForReady, type Spawned } from '../support/process.js';
import { redisWorkPerMessage } from '../support/redis.js';
import { requires } from '../support/requires.js';

const BARE_FASTIFY = fileURLToPath(new URL('../../scripts/bare-fastify.ts', import.meta.url));
const BENCH = fileURLToPath(new URL('../../scripts/bench.ts', import.meta.url));

/** `npm run bench -- ...args`, unpinned and without the machine lock; its exit and output. */
async function bench(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnProcess(process.execPath, [
    '--import',
    'tsx',
    BENCH,
    ...['--server-cpu', 'none', '--load-cpu', 'none', '--no-lock'],
    ...args,
  ]);
  const { code } = await child.exited;
  return { code, stdout: child.stdout(), stderr: child.stderr() };
}

interface Server {
  readonly hostHeader: string;
  stop(): Promise<void>;
}

const md5 = (s: string): string => createHash('md5').update(s).digest('hex');
const bodies = ['first body', 'x'.repeat(300), 'ünïcödé ✓'];

/** The bench's bare fastify server, started through its command line as the bench starts it. */
async function start(floor: boolean): Promise<Server> {
  const port = await freePort();
  const args = ['--import', 'tsx', BARE_FASTIFY, '--port', String(port), ...(floor ? ['--floor'] : [])];
  const child: Spawned = spawnProcess(process.execPath, args);
  await waitForReady(child.proc, port, 20_000, child.stderr, '/health');
  return { hostHeader: `127.0.0.1:${port}`, stop: () => child.stop() };
}

async function sendBatchJson(
  s: Server,
): Promise<{ Id: string; MessageId: string; MD5OfMessageBody: string }[]> {
  const r = await fetch(`http://${s.hostHeader}/`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-amz-json-1.0',
      'x-amz-target': 'AmazonSQS.SendMessageBatch',
    },
    body: JSON.stringify({
      QueueUrl: 'http://q/000000000000/bench',
      Entries: bodies.map((MessageBody, i) => ({ Id: `e${i}`, MessageBody })),
    }),
  });
  assert.equal(r.status, 200);
  const out = (await r.json()) as {
    Successful: { Id: string; MessageId: string; MD5OfMessageBody: string }[];
  };
  return out.Successful;
}

describe('bench floor target', () => {
  let floor: Server;
  let ceiling: Server;
  before(async () => {
    [floor, ceiling] = await Promise.all([start(true), start(false)]);
  });
  after(async () => {
    await Promise.all([floor.stop(), ceiling.stop()]);
  });

  test('JSON SendMessageBatch: each entry gets its body MD5 and an id of its own', async () => {
    const entries = await sendBatchJson(floor);
    assert.deepEqual(
      entries.map((e) => [e.Id, e.MD5OfMessageBody]),
      bodies.map((b, i) => [`e${i}`, md5(b)]),
    );
    const again = await sendBatchJson(floor);
    const ids = [...entries, ...again].map((e) => e.MessageId);
    assert.equal(new Set(ids).size, ids.length);
    for (const id of ids)
      assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  test('Query SendMessage and SendMessageBatch: the same per message', async () => {
    const post = async (params: [string, string][]): Promise<string> => {
      const r = await fetch(`http://${floor.hostHeader}/`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(params).toString(),
      });
      assert.equal(r.status, 200);
      return r.text();
    };
    const single = await post([
      ['Action', 'SendMessage'],
      ['MessageBody', 'x'.repeat(300)],
    ]);
    assert.match(single, new RegExp(`<MD5OfMessageBody>${md5('x'.repeat(300))}</MD5OfMessageBody>`));
    const batch = await post([
      ['Action', 'SendMessageBatch'],
      ...bodies.flatMap((b, i): [string, string][] => [
        [`SendMessageBatchRequestEntry.${i + 1}.Id`, `e${i}`],
        [`SendMessageBatchRequestEntry.${i + 1}.MessageBody`, b],
      ]),
    ]);
    const md5s = [...batch.matchAll(/<MD5OfMessageBody>([0-9a-f]{32})<\/MD5OfMessageBody>/g)].map(
      (m) => m[1],
    );
    assert.deepEqual(md5s, bodies.map(md5));
    const ids = [...batch.matchAll(/<MessageId>([^<]+)<\/MessageId>/g)].map((m) => m[1]);
    assert.equal(new Set(ids).size, bodies.length);
  });

  test('the plain ceiling does none of it: one fixed reply', async () => {
    const entries = await sendBatchJson(ceiling);
    assert.equal(new Set(entries.map((e) => e.MD5OfMessageBody)).size, 1);
    assert.notEqual(entries[0]?.MD5OfMessageBody, md5(bodies[0] ?? ''));
  });
});

test('Given two targets, When the bench runs send over JSON, Then both have figures, no errors, and a comparison', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ssq-bench-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const json = join(dir, 'out.json');
  const run = await bench(
    ...['--targets', 'fastify,floor', '--scenarios', 'send', '--protocols', 'json'],
    ...['--duration', '0.3', '--warmup', '0', '--clients', '4', '--json', json],
  );
  assert.equal(run.code, 0, run.stdout + run.stderr);
  const report = JSON.parse(readFileSync(json, 'utf8')) as {
    results: { target: string; scenario: string; errors: number; msgsPerSec: number }[];
  };
  assert.deepEqual(
    report.results.map((r) => [r.target, r.scenario, r.errors]),
    [
      ['fastify', 'send', 0],
      ['floor', 'send', 0],
    ],
  );
  for (const r of report.results) assert.ok(r.msgsPerSec > 0, `${r.target}: ${r.msgsPerSec} msgs/s`);
  assert.match(
    run.stdout,
    /Against fastify .*\n {2}json send, msgs\/s: fastify [\d.,]+, floor [\d.,]+ \([\d.]+×\)/,
  );
});

test('Given an unknown target or another build that is not there, Then the bench exits 64 and says which', async () => {
  const unknown = await bench('--targets', 'elasticmq');
  assert.equal(unknown.code, 64);
  assert.match(unknown.stderr, /unknown target "elasticmq"/);
  const missing = await bench('--targets', 'shared-sqs@/nonexistent/checkout');
  assert.equal(missing.code, 64);
  assert.match(missing.stderr, /\/nonexistent\/checkout\/dist\/main\.js not found/);
});

/** INFO cpu + commandstats as Redis 7 writes it (CRLF), with the lines that must not count. */
function info(cpu: [user: number, sys: number], calls: Record<string, number>): string {
  return [
    '# CPU',
    `used_cpu_sys:${cpu[1].toFixed(6)}`,
    `used_cpu_user:${cpu[0].toFixed(6)}`,
    'used_cpu_sys_children:9.000000',
    `used_cpu_sys_main_thread:${cpu[1].toFixed(6)}`,
    '',
    '# Commandstats',
    ...Object.entries(calls).map(([cmd, n]) => `cmdstat_${cmd}:calls=${n},usec=7,usec_per_call=1.00`),
  ].join('\r\n');
}

test('Given two INFO replies, Then Redis CPU, calls (EVALSHA, EVAL, WAIT) and commands are per message', () => {
  const before = info([1.5, 0.25], { evalsha: 100, eval: 1, hset: 300, info: 7, replconf: 50 });
  const after = info([1.875, 0.375], {
    ...{ evalsha: 300, eval: 1, wait: 200, waitaof: 0, hset: 900, 'client|setname': 2 },
    ...{ info: 9, replconf: 90 },
  });
  assert.deepEqual(redisWorkPerMessage(before, after, 1000), {
    redisCpuUsPerMsg: 500, // (0.375 + 0.125) s over 1,000 messages
    redisCallsPerMsg: 0.4, // 200 EVALSHA + 200 WAIT
    redisCommandsPerMsg: 1.002, // and 600 HSET run by the scripts, and 2 CLIENT SETNAME
  });
  assert.deepEqual(redisWorkPerMessage(before, after, 0), {
    redisCpuUsPerMsg: null,
    redisCallsPerMsg: null,
    redisCommandsPerMsg: null,
  });
});

test(
  'Given a Redis target and --queues 3, When the bench sends, Then each run has Redis figures per message',
  requires('redis-server'),
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'ssq-bench-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const json = join(dir, 'out.json');
    const run = await bench(
      ...['--targets', 'redis', '--scenarios', 'send,send-batch', '--protocols', 'json', '--queues', '3'],
      ...['--duration', '0.3', '--warmup', '0', '--clients', '6', '--json', json],
    );
    assert.equal(run.code, 0, run.stdout + run.stderr);
    const report = JSON.parse(readFileSync(json, 'utf8')) as {
      results: { scenario: string; variant: string; errors: number; extra: Record<string, number> }[];
    };
    assert.deepEqual(
      report.results.map((r) => [r.scenario, r.variant, r.errors]),
      [
        ['send', '3 queues', 0],
        ['send-batch', '3 queues', 0],
      ],
    );
    for (const { scenario, extra: e } of report.results) {
      const why = `${scenario}: ${JSON.stringify(e)}`;
      assert.ok(e['redisCpuUsPerMsg']! > 0, why);
      // Group commit: at most one EVALSHA per request, and the scripts' own commands besides.
      assert.ok(e['redisCallsPerMsg']! > 0 && e['redisCallsPerMsg']! <= 1, why);
      assert.ok(e['redisCommandsPerMsg']! > e['redisCallsPerMsg']!, why);
    }
    assert.match(
      run.stdout,
      /send \(3 queues\).*Redis per msg: [\d.,]+ µs CPU, [\d.]+ calls, [\d.]+ commands/,
    );
  },
);
