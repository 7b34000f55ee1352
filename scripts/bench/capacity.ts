/**
 * `npx tsx scripts/bench/capacity.ts --rate R --clients C`: how many SendMessage a second C
 * connections get through a server with Redis write-through, and why (docs/performance.md,
 * "Persistence"). One request in flight per connection, so C connections complete at most
 * C / (round trip) a second, whatever the server's CPU: with `appendfsync always` every reply waits
 * for a commit, and that bound, not the CPU, is what a backlog drains at.
 *
 * It starts its own redis-server (AOF `appendfsync` --fsync, default always) on a free port and a
 * temporary directory and a server (`dist/main.js --redis-addr`, pinned to --server-cpus, default
 * 0), sends --prewarm SendMessage closed loop, rests 1 s, then sends --rate a second open loop for
 * --seconds, and prints: the rate completed, per second; the server's mean time per SendMessage and
 * mean commit wait (its /metrics, over the open-loop part); and C / that mean time, the most C
 * connections could complete if nothing outside the server's handling took time.
 * Run it pinned to the load generator's CPU (`taskset -c 1`). Needs `npm run build`.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, hasTaskset, sleep, waitForReady } from './proc.js';
import { RawPool } from './rawhttp.js';
import { SqsCodec } from './sqs.js';

const { values: opt } = parseArgs({
  options: {
    rate: { type: 'string', default: '12000' },
    clients: { type: 'string', default: '32' },
    seconds: { type: 'string', default: '6' },
    prewarm: { type: 'string', default: '20000' },
    fsync: { type: 'string', default: 'always' },
    'server-cpus': { type: 'string', default: '0' },
    'body-size': { type: 'string', default: '256' },
  },
});
const rate = Number(opt.rate);
const clients = Number(opt.clients);
const seconds = Number(opt.seconds);

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const dir = mkdtempSync(path.join(tmpdir(), 'ssq-capacity-'));
const redisPort = await freePort();
const redis = spawn(
  'redis-server',
  ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--dir', dir],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
redis.once('exit', (code) => {
  if (code !== null && code !== 0) console.error(`redis-server exited with ${code}`);
});
await new Promise<void>((resolve) => {
  let out = '';
  redis.stdout.setEncoding('utf8').on('data', (c: string) => {
    out += c;
    if (out.includes('Ready to accept connections')) resolve();
  });
});
// Set at run time, as bench-persistence.ts does, so Redis starts with an empty AOF.
const config = spawn(
  'redis-cli',
  ['-p', String(redisPort), 'config', 'set', 'appendonly', 'yes', 'appendfsync', opt.fsync],
  {
    stdio: 'inherit',
  },
);
await new Promise((r) => config.once('exit', r));
const port = await freePort();
const controlPort = await freePort();
const serverArgs = [
  path.join(ROOT, 'dist', 'main.js'),
  '--port',
  String(port),
  '--control-port',
  String(controlPort),
  '--log-level',
  'warn',
  '--redis-addr',
  `127.0.0.1:${redisPort}`,
];
const server = hasTaskset()
  ? spawn('taskset', ['-c', opt['server-cpus'], process.execPath, ...serverArgs], { stdio: 'inherit' })
  : spawn(process.execPath, serverArgs, { stdio: 'inherit' });

try {
  await waitForReady(server, controlPort, 10_000, () => '');
  const pool = new RawPool('127.0.0.1', port, clients);
  const codec = new SqsCodec('json', pool.hostHeader);
  const created = await pool.post(codec.createQueue('capacity'), true);
  const url = (JSON.parse(created.body) as { QueueUrl: string }).QueueUrl;
  const request = codec.sendMessage(url, 'x'.repeat(Number(opt['body-size'])));

  let left = Number(opt.prewarm);
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (left-- > 0) await pool.post(request, false);
    }),
  );
  await sleep(1_000);

  const before = await serverSums(controlPort);
  const cpuBefore = process.cpuUsage();
  let done = 0;
  let sent = 0;
  const perSecond: number[] = [];
  let counted = 0;
  const inflight: Promise<unknown>[] = [];
  const start = performance.now();
  const tick = setInterval(() => {
    perSecond.push(done - counted);
    counted = done;
  }, 1_000);
  while (performance.now() - start < seconds * 1000) {
    const due = Math.floor(((performance.now() - start) / 1000) * rate);
    while (sent < due) {
      sent++;
      inflight.push(pool.post(request, false).then(() => void done++));
    }
    await sleep(1);
  }
  const elapsedS = (performance.now() - start) / 1000;
  const completed = done / elapsedS;
  const cpu = process.cpuUsage(cpuBefore);
  // Near 100 % means the generator, not the server, set the rate completed.
  const generatorPct = ((cpu.user + cpu.system) / 1e6 / elapsedS) * 100;
  clearInterval(tick);
  const after = await serverSums(controlPort);
  await Promise.all(inflight);
  pool.destroy();

  const perRequestMs =
    ((after.durationSum - before.durationSum) / (after.durationCount - before.durationCount)) * 1000;
  const commitMs = ((after.commitSum - before.commitSum) / (after.commitCount - before.commitCount)) * 1000;
  console.log(
    `offered ${rate}/s over ${clients} connections (appendfsync ${opt.fsync}): completed ${completed.toFixed(0)}/s ` +
      `(per second: ${perSecond.join(', ')}); load generator ${generatorPct.toFixed(0)} % of a core\n` +
      `  server: ${perRequestMs.toFixed(2)} ms per SendMessage on average, of which ${commitMs.toFixed(2)} ms waiting for Redis; ` +
      `${clients} / that = ${((clients / perRequestMs) * 1000).toFixed(0)}/s, the most the connections could complete`,
  );
} finally {
  server.kill('SIGTERM');
  redis.kill('SIGKILL');
  await Promise.all([once(server), once(redis)]);
  rmSync(dir, { recursive: true, force: true });
}

function once(p: ReturnType<typeof spawn>): Promise<void> {
  return p.exitCode !== null || p.signalCode !== null
    ? Promise.resolve()
    : new Promise((r) => p.once('exit', () => r()));
}

/** Sums and counts of the server's SendMessage durations and Redis commit waits, from /metrics. */
async function serverSums(
  controlPort: number,
): Promise<{ durationSum: number; durationCount: number; commitSum: number; commitCount: number }> {
  const text = await (await fetch(`http://127.0.0.1:${controlPort}/metrics`)).text();
  const sum = (re: RegExp): number => {
    let s = 0;
    for (const m of text.matchAll(re)) s += Number(m[1]);
    return s;
  };
  return {
    durationSum: sum(/^sqs_request_duration_seconds_sum\{action="SendMessage"[^}]*\} (\S+)$/gm),
    durationCount: sum(/^sqs_request_duration_seconds_count\{action="SendMessage"[^}]*\} (\S+)$/gm),
    commitSum: sum(/^sqs_redis_commit_wait_seconds_sum(?:\{[^}]*\})? (\S+)$/gm),
    commitCount: sum(/^sqs_redis_commit_wait_seconds_count(?:\{[^}]*\})? (\S+)$/gm),
  };
}
