/**
 * `tsx scripts/bench-persistence.ts`: what Redis write-through costs, measured in one run (figures
 * in docs/performance.md, "Persistence"). It starts its own redis-server (AOF, `appendfsync
 * always` unless --fsync everysec) on a free port and a temporary directory, and:
 *
 * 1. throughput: scripts/bench.ts's send, send-batch and receive-delete scenarios (JSON protocol,
 *    --clients connections), memory-only and with --redis-addr, alternating, --rounds times; the
 *    Redis keyspace is flushed before every run. Medians are printed, and the median of each
 *    round's Redis/memory ratio (a round's two runs are neighbours, so a drifting VM moves both).
 * 2. latency at half of peak: SendMessage at a fixed rate (half the median Redis send rate, or
 *    half of --rate), open loop (latency counted from when each request was due, so a stall is not
 *    hidden), with Redis and memory-only, --rounds times each; the median and worst p99 are printed.
 *    Each run starts a new server, and its first --warmup seconds (default 3) at the same rate are
 *    not counted: a cold server (interpreted code, V8 compiling on the same pinned CPU) falls behind
 *    the rate at first, and on a slower VM the backlog it builds took up to 2 s to drain, which with
 *    the old 1 s warm-up put p99s of 0.1-0.4 s into the figure for steady state. The warm-up's own
 *    p99 is printed beside it, so what a just-started server does under that load stays visible.
 *    With --prewarm N, N SendMessage go first, closed loop, to a queue of their own (kept), then
 *    1 s of rest: the fixed rate then meets compiled code and no backlog of its own start.
 *    With --drain N, N consumers (ReceiveMessage of 10, 1 s long poll, + DeleteMessageBatch) keep
 *    the queue near empty meanwhile, so the server's heap does not grow with a backlog.
 *    The requests that took 10 ms or more are printed as windows of when they came due, beside the
 *    times an AOF rewrite was running: one window holding most of them is one stall.
 * 2b. redis-alone: no shared-sqs, 8 clients writing a field each to Redis back to back for twice
 *    --duration: Redis's own write latency and its stalls on this disk (with `appendfsync always`
 *    every write waits for an fsync), the floor under the latency phase's Redis figures.
 * 3. capacity: SendMessage offered at --capacity-rate (default 30,000/s, above what the server
 *    takes) to a Redis-mode server, open loop, --rounds times: the rate the --clients connections
 *    completed, the server's mean time per SendMessage and mean commit wait (its /metrics), and
 *    --clients / that mean, the most they could complete. One request is in flight per connection
 *    and every reply waits for its commit, so that bound, not the server's CPU, is what a backlog
 *    drains at; the load generator's CPU is printed to show it did not set the rate.
 * 4. takeover: the same fixed rate sent to a follower (--leader-election) the moment it took over
 *    from a leader stopped with SIGTERM, the follower having waited 3 s beside the leader with its
 *    warm-up (src/http/warmup.ts) on and off, --rounds times each; the p99 of the first --warmup
 *    seconds after the takeover and of the --duration seconds after them are printed.
 * 5. loading: --messages messages of --body-size bytes written to Redis (test/support/fill.ts); Redis
 *    memory per message (INFO used_memory); then, in a child process with --expose-gc, the loader
 *    alone: time, longest event-loop block, RSS and heap per message after a full GC; and the
 *    server itself: spawn to /ready 200, and its RSS then.
 *
 * Each Redis run also reports how many AOF rewrites Redis started meanwhile (`INFO persistence`):
 * a run with one is a different run (the forked child competes for the same CPUs).
 * `--aof-rewrite off` turns off Redis's automatic AOF rewrite (`auto-aof-rewrite-percentage 0`);
 * by default (auto) Redis rewrites as it does unconfigured: the datasets here are small, so the AOF
 * reaches the 64 MB minimum within seconds and the rewrite (a forked child) runs during the run, on the
 * same two cores as everything else.
 *
 * The servers run with the Node flags shared-sqs ships with (bin/shared-sqs.js's shebang);
 * `--node-flags "..."` passes others instead (e.g. `--single-threaded`, which keeps V8's compiler
 * and GC threads from competing with the event loop on the server's one core; `--node-flags=` for
 * none).
 *
 * Options, with their defaults: --rounds 3, --duration 5 (seconds per run), --warmup 3,
 * --prewarm 0, --clients 32 (connections, for every phase: the fixed-rate phase queues requests
 * in the generator when all are busy, so with write-through a stall's backlog drains at most at
 * --clients / the commit time), --rate (the Redis peak to halve; measured when unset), --fsync
 * always|everysec, --aof-rewrite auto|off, --aof-rewrite-min-size SIZE (e.g. 8gb; Redis's
 * default 64mb), --skip throughput,latency,redis-alone,capacity,takeover,load,
 * --messages 1000000 and --body-size 256 (loading), --capacity-rate 30000, --drain 0,
 * --node-flags, --server-cpus 0, --redis-cpus, --nice 0, --wait-idle 0, --json FILE (results).
 *
 * Needs `npm run build` (the servers run from dist/). Pins like scripts/bench.ts: servers on CPU 0
 * (--server-cpus LIST to change that, e.g. 0,1 for not pinned), load generator on CPU 1; Redis is
 * not pinned unless --redis-cpus LIST is given (taskset -c LIST).
 * On a shared machine, --nice N (e.g. -10) runs Redis, the servers and bench.ts at a higher
 * priority than the rest, and --wait-idle S is passed to bench.ts. Not by default: above the
 * kernel's own worker threads, which complete Redis's fsyncs, it slows every `appendfsync always`
 * commit (measured: the kernel workers waited 2.5 times as long for a CPU, and Redis mode kept 45 %
 * of the memory-only send rate instead of 52-60 %; docs/performance.md, "Persistence").
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { PerformanceObserver } from 'node:perf_hooks';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ManualClock } from '../src/core/clock.js';
import { QueueStore } from '../src/core/store.js';
import { keysFor } from '../src/persistence/keys.js';
import { loadStore } from '../src/persistence/loader.js';
import { connectRedis } from '../src/persistence/redis.js';
import { fillQueue } from '../test/support/fill.js';
import { Histogram, median } from './bench/histogram.js';
import {
  freePort,
  hasTaskset,
  machineInfo,
  niceSelf,
  nodeFlagsOption,
  pinSelf,
  readCpuSeconds,
  readRss,
  scriptArgs,
  sleep,
  track,
  waitForReady,
} from './bench/proc.js';
import { RawPool } from './bench/rawhttp.js';
import { SqsCodec } from './bench/sqs.js';
import type { Redis } from 'ioredis';

const ROOT = path.resolve(import.meta.dirname, '..');

const { values: opt } = scriptArgs(import.meta.url, {
  options: {
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '3' },
    prewarm: { type: 'string', default: '0' },
    clients: { type: 'string', default: '32' },
    fsync: { type: 'string', default: 'always' },
    'aof-rewrite': { type: 'string', default: 'auto' },
    'aof-rewrite-min-size': { type: 'string' },
    rate: { type: 'string' },
    messages: { type: 'string', default: '1000000' },
    'body-size': { type: 'string', default: '256' },
    skip: { type: 'string', default: '' },
    nice: { type: 'string', default: '0' },
    // Unset: the flags shared-sqs ships with (bin/shared-sqs.js); set, even to '', instead of them.
    'node-flags': { type: 'string' },
    'wait-idle': { type: 'string', default: '0' },
    'redis-cpus': { type: 'string', default: '' },
    'server-cpus': { type: 'string', default: '0' },
    drain: { type: 'string', default: '0' },
    'capacity-rate': { type: 'string', default: '30000' },
    json: { type: 'string' },
    // Internal: the loader measurement, run in a child process.
    phase: { type: 'string' },
    port: { type: 'string' },
  },
});

const rounds = Number(opt.rounds);
const durationS = Number(opt.duration);
const clients = Number(opt.clients);
const messages = Number(opt.messages);
const bodySize = Number(opt['body-size']);
/** Consumers (ReceiveMessage of 10 + DeleteMessageBatch) draining the queue during the latency phase. */
const drainers = Number(opt.drain);
const skip = new Set(opt.skip.split(',').filter(Boolean));
const nice = opt.nice;
/** A command line run at priority --nice (every thread of it), when that is allowed. */
function niced(cmd: string, args: string[]): [string, string[]] {
  return nice === '0' ? [cmd, args] : ['nice', ['-n', nice, cmd, ...args]];
}
/** `cmd args` under `taskset -c cpus` when cpus is given and taskset works. */
function pinned(cpus: string, cmd: string, args: string[]): [string, string[]] {
  return cpus !== '' && hasTaskset() ? ['taskset', ['-c', cpus, cmd, ...args]] : [cmd, args];
}
const MAIN = path.join(ROOT, 'dist', 'main.js');
/** Redis's latency monitor records events at least this long (reported after each latency run). */
const LATENCY_THRESHOLD_MS = 10;
/** Node/V8 flags for the servers, e.g. --single-threaded (see docs/performance.md, "Persistence"). */
const nodeFlags = nodeFlagsOption(opt['node-flags']);

if (opt.phase === 'load-child') {
  await loadChild(Number(opt.port));
  process.exit(0);
}

// ---------------------------------------------------------------------------------------------

interface RedisProc {
  port: number;
  proc: ChildProcess;
  client: Redis;
  stop(): Promise<void>;
}

async function startRedis(fsync: string): Promise<RedisProc> {
  const dir = mkdtempSync(path.join(tmpdir(), 'ssq-bench-redis-'));
  const port = await freePort();
  const proc = spawn(
    ...niced(
      ...pinned(opt['redis-cpus'], 'redis-server', [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--dir',
        dir,
      ]),
    ),
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  track(proc);
  await new Promise<void>((resolve, reject) => {
    let out = '';
    proc.stdout?.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      if (out.includes('Ready to accept connections')) resolve();
    });
    proc.once('exit', () => reject(new Error(`redis-server exited:\n${out}`)));
  });
  const client = await connectRedis({ url: `127.0.0.1:${port}`, commandTimeoutMs: 120_000 });
  await client.config('SET', 'appendonly', 'yes');
  await client.config('SET', 'appendfsync', fsync);
  if (opt['aof-rewrite'] === 'off') await client.config('SET', 'auto-aof-rewrite-percentage', '0');
  else if (opt['aof-rewrite'] !== 'auto') throw new Error('--aof-rewrite is auto or off');
  // docs/persistence.md sizes it from the write rate, so that rewrites come seldom.
  const minSize = opt['aof-rewrite-min-size'];
  if (minSize !== undefined) await client.config('SET', 'auto-aof-rewrite-min-size', minSize);
  // Redis's own record of slow events (fsync of the AOF, commands), read after the latency runs.
  await client.config('SET', 'latency-monitor-threshold', String(LATENCY_THRESHOLD_MS));
  return {
    port,
    proc,
    client,
    stop: async () => {
      client.disconnect();
      proc.kill('SIGKILL');
      await new Promise((r) => proc.once('exit', r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

interface BenchRow {
  msgsPerSec: number;
  /** msgs/s per core of server CPU: the rate the server would reach with a whole core to itself. */
  perCore: number;
  p50: number;
  p99: number;
  serverCpuPct: number;
  /** What the rest of the machine used meanwhile, in % of one core: the disturbance gauge. */
  otherCpuPct: number;
  /** Of otherCpuPct, the hypervisor's steal: on some VMs it grows with every vCPU wake-up. */
  stealCpuPct: number;
  errors: number;
  errorSamples: string[];
  /** Redis mode: AOF rewrites Redis started during the run (a forked child on the same CPUs). */
  aofRewrites?: number;
}

/** One scenario of scripts/bench.ts, through its --json output. */
function runBench(scenario: string, redisPort: number | undefined): BenchRow {
  const out = path.join(tmpdir(), `ssq-bench-${process.pid}-${scenario}.json`);
  const args = [
    '--import',
    'tsx',
    path.join(ROOT, 'scripts', 'bench.ts'),
    '--targets',
    'shared-sqs',
    '--protocols',
    'json',
    '--scenarios',
    scenario,
    '--clients',
    String(clients),
    '--duration',
    String(durationS),
    '--deep-depth',
    '0',
    '--json',
    out,
    `--nice=${nice}`,
    `--wait-idle=${opt['wait-idle']}`,
  ];
  if (redisPort !== undefined) args.push(`--shared-sqs-args=--redis-addr 127.0.0.1:${redisPort}`);
  try {
    execFileSync(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  } catch {
    // bench.ts exits 1 when a run had errors; the row says how many.
  }
  const report = JSON.parse(readFileSync(out, 'utf8')) as {
    results: {
      msgsPerSec: number | null;
      errors: number;
      errorSamples: string[];
      serverCpuPct: number | null;
      otherCpuPct: number | null;
      stealCpuPct?: number | null;
      latency: { p50: number | null; p99: number | null } | null;
    }[];
  };
  rmSync(out, { force: true });
  const r = report.results[0];
  if (r === undefined) throw new Error(`bench.ts gave no result for ${scenario}`);
  const cpu = r.serverCpuPct ?? NaN;
  return {
    msgsPerSec: r.msgsPerSec ?? NaN,
    perCore: cpu > 0 ? (r.msgsPerSec ?? NaN) / (cpu / 100) : NaN,
    p50: r.latency?.p50 ?? NaN,
    p99: r.latency?.p99 ?? NaN,
    serverCpuPct: r.serverCpuPct ?? NaN,
    otherCpuPct: r.otherCpuPct ?? NaN,
    stealCpuPct: r.stealCpuPct ?? NaN,
    errors: r.errors,
    errorSamples: r.errorSamples.slice(0, 3),
  };
}

const fmt = (n: number, digits = 0): string =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits }) : 'n/a';

interface Server {
  proc: ChildProcess;
  port: number;
  controlPort: number;
  output: () => string;
  stop(): Promise<void>;
}

/** Log level warn unless asked (info logs a line per request, which would weigh on the figures). */
async function startServer(
  extra: string[],
  logLevel = 'warn',
  readyTimeoutMs = 600_000,
  readyPath = '/ready',
): Promise<Server & { readyMs: number }> {
  const port = await freePort();
  const controlPort = await freePort();
  const args = [
    ...nodeFlags,
    MAIN,
    '--port',
    String(port),
    '--control-port',
    String(controlPort),
    '--host',
    '127.0.0.1',
    '--log-level',
    logLevel,
    ...extra,
  ];
  const t0 = performance.now();
  const [cmd, argv] = hasTaskset()
    ? niced('taskset', ['-c', opt['server-cpus'], process.execPath, ...args])
    : niced(process.execPath, args);
  const proc = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  track(proc);
  let out = '';
  proc.stdout?.setEncoding('utf8').on('data', (c: string) => (out += c));
  proc.stderr?.setEncoding('utf8').on('data', (c: string) => (out += c));
  await waitForReady(proc, controlPort, readyTimeoutMs, () => out, readyPath);
  const readyMs = performance.now() - t0;
  return {
    proc,
    port,
    controlPort,
    readyMs,
    output: () => out,
    stop: async () => {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
    },
  };
}

/** A request this late (from its due time) counts as caught in a stall. */
const STALL_MS = 10;

interface Stall {
  /** Due times of the first and last late request, in ms since the run's start. */
  fromMs: number;
  toMs: number;
  requests: number;
  worstMs: number;
}

/**
 * Late requests grouped by when they came due (gaps under 20 ms join a window), largest first: a
 * p99 made by one stall shows as one window holding most of them; scattered ones as many small.
 */
function stallWindows(slow: readonly [number, number][]): Stall[] {
  const sorted = [...slow].sort((a, b) => a[0] - b[0]);
  const out: Stall[] = [];
  for (const [due, took] of sorted) {
    const last = out.at(-1);
    if (last !== undefined && due - last.toMs < 20) {
      last.toMs = due;
      last.requests++;
      last.worstMs = Math.max(last.worstMs, took);
    } else out.push({ fromMs: due, toMs: due, requests: 1, worstMs: took });
  }
  return out.sort((a, b) => b.requests - a.requests);
}

function formatStalls(
  stalls: readonly Stall[],
  measured: number,
  rewrites: readonly { fromMs: number; toMs: number }[] = [],
): string {
  const late = stalls.reduce((n, w) => n + w.requests, 0);
  const windows = stalls
    .slice(0, 3)
    .map((w) => `${w.requests} due at +${fmt(w.fromMs)}–${fmt(w.toMs)} ms (worst ${fmt(w.worstMs, 1)} ms)`)
    .join(', ');
  const running = rewrites.map((w) => `+${fmt(w.fromMs)}–${Number.isNaN(w.toMs) ? 'end' : fmt(w.toMs)} ms`);
  return (
    `    ${late} of ${measured} measured requests ≥ ${STALL_MS} ms` +
    (late > 0 ? ` in ${stalls.length} windows; the largest: ${windows}` : '') +
    (running.length > 0 ? `; AOF rewrite running ${running.join(', ')}` : '')
  );
}

const REDIS_WRITERS = 8;

/** REDIS_WRITERS clients writing one hash field each, back to back, for `seconds`: Redis's own latency. */
async function redisAlone(
  client: Redis,
  seconds: number,
): Promise<{ writes: number; summary: ReturnType<Histogram['summaryMs']>; stalls: Stall[] }> {
  const value = 'x'.repeat(bodySize);
  const hist = new Histogram();
  const slow: [number, number][] = [];
  const start = process.hrtime.bigint();
  const end = start + BigInt(seconds * 1e9);
  let writes = 0;
  await Promise.all(
    Array.from({ length: REDIS_WRITERS }, async () => {
      while (process.hrtime.bigint() < end) {
        const t = process.hrtime.bigint();
        await client.hset('alone', `f${writes++}`, value);
        const ms = Number(process.hrtime.bigint() - t) / 1e6;
        hist.record(ms * 1000);
        if (ms >= STALL_MS) slow.push([Number(t - start) / 1e6, ms]);
      }
    }),
  );
  return { writes, summary: hist.summaryMs(), stalls: stallWindows(slow) };
}

/** SendMessage at `rate` per second for `seconds`, open loop; latency from each request's due time. */
async function fixedRate(
  server: Server,
  rate: number,
  seconds: number,
  /** Redis to watch for AOF rewrites during the run (their start and end are reported). */
  watch?: Redis,
): Promise<{
  p50: number;
  p99: number;
  max: number;
  sendLagP99: number;
  sendLagMax: number;
  warmupP99: number;
  sent: number;
  errors: number;
  /** Replies received during the measured seconds, per second: what the connections got through. */
  completedPerSec: number;
  /** The load generator's CPU over the measured seconds, in % of a core (near 100: it set the rate). */
  generatorCpuPct: number;
  /** The server's mean time per SendMessage and mean Redis commit wait over them (its /metrics). */
  serverMeanMs: number;
  commitMeanMs: number;
  /** The server's longest event-loop delay over the measured seconds (ms). */
  lagMaxMs: number;
  /** When the measured requests that took ≥ STALL_MS came due, as windows; the largest first. */
  stalls: Stall[];
  /** AOF rewrites seen running, in ms since the run's start (warm-up included). */
  rewrites: { fromMs: number; toMs: number }[];
}> {
  const pool = new RawPool('127.0.0.1', server.port, clients);
  const codec = new SqsCodec('json', pool.hostHeader);
  const create = await pool.post(codec.createQueue('fixed-rate'), true);
  const url = (JSON.parse(create.body) as { QueueUrl: string }).QueueUrl;
  const request = codec.sendMessage(url, 'x'.repeat(bodySize));
  const prewarm = Number(opt.prewarm);
  if (prewarm > 0) {
    // Closed loop, as fast as the server answers, on a queue of its own that keeps its messages.
    const other = await pool.post(codec.createQueue('prewarm'), true);
    const send = codec.sendMessage(
      (JSON.parse(other.body) as { QueueUrl: string }).QueueUrl,
      'x'.repeat(bodySize),
    );
    let left = prewarm;
    await Promise.all(
      Array.from({ length: clients }, async () => {
        while (left-- > 0) await pool.post(send, false);
      }),
    );
    await sleep(1_000);
  }
  // One scrape before the rate starts. The first of a run, taken cold at the end of the warm-up,
  // put 50-110 ms windows of late requests into every Redis-mode run (p99 12-17 ms; 4.7-5.3 ms
  // with this; docs/performance.md, "Persistence").
  await metricSums(server.controlPort);
  // With --drain, consumers keep the queue near empty, so the heap does not grow with a backlog.
  let producing = true;
  const drainPool = new RawPool('127.0.0.1', server.port, Math.max(1, drainers));
  const drained = Array.from({ length: drainers }, async () => {
    const receive = codec.receiveMessage(url, 10, 1);
    while (producing) {
      const r = await drainPool.post(receive, true);
      if (r.status !== 200) throw new Error(`ReceiveMessage: HTTP ${r.status}`);
      const handles = codec.parseMessages(r.body ?? '').map((m) => m.receiptHandle);
      if (handles.length === 0) continue;
      const d = await drainPool.post(codec.deleteMessageBatch(url, handles), true);
      if (d.status !== 200) throw new Error(`DeleteMessageBatch: HTTP ${d.status}`);
    }
  });
  const hist = new Histogram();
  const warmHist = new Histogram();
  /** Measured requests of STALL_MS or more: when each came due (ms from start) and its latency. */
  const slow: [number, number][] = [];
  /** How late the load generator itself issued each request: its own stalls, not the server's. */
  const sendLag = new Histogram();
  let errors = 0;
  let sent = 0;
  const inflight = new Set<Promise<void>>();
  const warmupNs = Number(opt.warmup) * 1e9;
  const start = process.hrtime.bigint();
  const endNs = BigInt(Math.round(seconds * 1e9 + warmupNs));
  const rewrites: { fromMs: number; toMs: number }[] = [];
  let watching = watch !== undefined;
  const watched = (async () => {
    let since: number | undefined;
    while (watching && watch !== undefined) {
      const running = /aof_rewrite_in_progress:1/.test(await watch.info('persistence'));
      const at = Number(process.hrtime.bigint() - start) / 1e6;
      if (running && since === undefined) since = at;
      if (!running && since !== undefined) {
        rewrites.push({ fromMs: since, toMs: at });
        since = undefined;
      }
      await sleep(10);
    }
    if (since !== undefined) rewrites.push({ fromMs: since, toMs: NaN });
  })();
  let measuring = false;
  let completed = 0;
  let window: { at: number; cpu: NodeJS.CpuUsage; sums: Promise<MetricSums> } | undefined;
  for (;;) {
    const elapsed = process.hrtime.bigint() - start;
    if (elapsed >= endNs) break;
    if (window === undefined && elapsed >= BigInt(warmupNs)) {
      // Not awaited here: sends due while the scrape is answered must still go out on time.
      window = { at: performance.now(), cpu: process.cpuUsage(), sums: metricSums(server.controlPort) };
      measuring = true;
    }
    const due = Math.floor((Number(elapsed) / 1e9) * rate);
    while (sent < due) {
      const dueNs = start + BigInt(Math.round((sent / rate) * 1e9));
      const measured = dueNs - start >= BigInt(warmupNs);
      if (measured) sendLag.recordSince(dueNs);
      sent++;
      const p = pool.post(request, false).then(
        (r) => {
          if (r.status !== 200) errors++;
          else {
            const tookMs = Number(process.hrtime.bigint() - dueNs) / 1e6;
            (measured ? hist : warmHist).record(tookMs * 1000);
            if (measuring) completed++;
            if (measured && tookMs >= STALL_MS) slow.push([Number(dueNs - start) / 1e6, tookMs]);
          }
        },
        () => void errors++,
      );
      inflight.add(p);
      void p.finally(() => inflight.delete(p));
    }
    // A timer, not setImmediate: a load generator spinning on its core starved Redis, which
    // shares that core, and showed stalls of 0.1-0.7 s that neither the server's event loop nor
    // Redis's latency monitor saw. The wait (~1 ms) counts against us: latency is from the due time.
    await new Promise((r) => setTimeout(r, 1));
  }
  measuring = false;
  const windowS = window === undefined ? NaN : (performance.now() - window.at) / 1000;
  const cpu = process.cpuUsage(window?.cpu);
  const sums = await metricSums(server.controlPort);
  const before = await window?.sums;
  await Promise.all(inflight);
  watching = false;
  await watched;
  producing = false;
  await Promise.all(drained);
  drainPool.destroy();
  pool.destroy();
  const s = hist.summaryMs();
  const lag = sendLag.summaryMs();
  return {
    p50: s.p50 ?? NaN,
    p99: s.p99 ?? NaN,
    max: s.max ?? NaN,
    sendLagP99: lag.p99 ?? NaN,
    sendLagMax: lag.max ?? NaN,
    warmupP99: warmHist.summaryMs().p99 ?? NaN,
    sent,
    errors,
    completedPerSec: completed / windowS,
    generatorCpuPct: ((cpu.user + cpu.system) / 1e6 / windowS) * 100,
    serverMeanMs: before === undefined ? NaN : meanMs(before.duration, sums.duration),
    commitMeanMs: before === undefined ? NaN : meanMs(before.commit, sums.commit),
    lagMaxMs: before === undefined ? NaN : sums.lagMaxMs,
    stalls: stallWindows(slow),
    rewrites,
  };
}

interface MetricSums {
  /** SendMessage durations (JSON), and the Redis commit waits: [sum in s, count]. */
  duration: [number, number];
  commit: [number, number];
  /**
   * The longest event-loop delay since the previous scrape: prom-client resets its histogram on
   * every collect, so read at the end of a window opened by a scrape, it covers that window alone.
   */
  lagMaxMs: number;
}

/** The sums and counts of two of the server's histograms, from its /metrics. */
async function metricSums(controlPort: number): Promise<MetricSums> {
  const text = await (await fetch(`http://127.0.0.1:${controlPort}/metrics`)).text();
  const value = (name: string, labels: string): number =>
    Number(new RegExp(`^${name}${labels.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  const series = (name: string, labels: string): [number, number] => [
    value(`${name}_sum`, labels),
    value(`${name}_count`, labels),
  ];
  return {
    duration: series('sqs_request_duration_seconds', '{action="SendMessage",protocol="json"}'),
    // Memory-only servers have no such series: NaN.
    commit: series('sqs_redis_commit_wait_seconds', ''),
    lagMaxMs: Math.round(value('nodejs_eventloop_lag_max_seconds', '') * 1000 * 10) / 10,
  };
}

/** The mean (ms) of what a histogram observed between two readings. */
function meanMs(before: [number, number], after: [number, number]): number {
  return ((after[0] - before[0]) / (after[1] - before[1])) * 1000;
}

/**
 * What the server saw of the same run, from its /metrics: the bucket bound under which 99 % of its
 * SendMessage replies fell (request to reply, Redis wait included), and the same for its commit
 * waits. A client-side tail far above these (and fixedRate's lagMaxMs) lies outside the server.
 */
async function serverSide(
  controlPort: number,
): Promise<{ p99Bound: number; commitP50Bound: number; commitP99Bound: number }> {
  const text = await (await fetch(`http://127.0.0.1:${controlPort}/metrics`)).text();
  return {
    p99Bound: bucketBound(
      text,
      'sqs_request_duration_seconds',
      '{action="SendMessage",protocol="json",',
      0.99,
    ),
    // Memory-only servers have no such series: NaN.
    commitP50Bound: bucketBound(text, 'sqs_redis_commit_wait_seconds', '{', 0.5),
    commitP99Bound: bucketBound(text, 'sqs_redis_commit_wait_seconds', '{', 0.99),
  };
}

/** The upper bound (ms) of the histogram bucket that holds quantile `q` of a series, from /metrics text. */
function bucketBound(text: string, name: string, labelsPrefix: string, q: number): number {
  const buckets: [number, number][] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}_bucket${labelsPrefix}`)) continue;
    const m = /le="([^"]+)"\} (\d+)$/.exec(line);
    if (m) buckets.push([m[1] === '+Inf' ? Infinity : Number(m[1]), Number(m[2])]);
  }
  const total = buckets.at(-1)?.[1] ?? 0;
  if (total === 0) return NaN;
  return (buckets.find(([, n]) => n >= total * q)?.[0] ?? NaN) * 1000;
}

/** Redis's LATENCY LATEST: each kind of event over the threshold since the last reset, with its worst. */
async function latencyEvents(client: Redis): Promise<{ event: string; maxMs: number }[]> {
  const rows = (await client.call('LATENCY', 'LATEST')) as [string, number, number, number][];
  return rows.map(([event, , , maxMs]) => ({ event, maxMs }));
}

/** AOF rewrites Redis has started: those finished since it started, and one running now. */
async function aofRewrites(client: Redis): Promise<number> {
  const info = await client.info('persistence');
  const field = (name: string): number => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? NaN);
  return field('aof_rewrites') + field('aof_rewrite_in_progress');
}

/** `run`'s result, and how many AOF rewrites Redis started while it ran. */
async function countingRewrites<T>(client: Redis, run: () => Promise<T>): Promise<[T, number]> {
  const before = await aofRewrites(client);
  const result = await run();
  return [result, (await aofRewrites(client)) - before];
}

async function usedMemory(client: Redis): Promise<number> {
  const info = await client.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1]);
}

/** In a child with --expose-gc: the loader alone, its time, longest block and memory. */
async function loadChild(port: number): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with --expose-gc');
  const client = await connectRedis({ url: `127.0.0.1:${port}`, commandTimeoutMs: 60_000 });
  gc();
  const before = process.memoryUsage();
  // GC pauses, to tell them apart from the loader's own work in the longest block.
  let gcMs = 0;
  let gcMaxMs = 0;
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gcMs += e.duration;
      gcMaxMs = Math.max(gcMaxMs, e.duration);
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  const cpu0 = process.cpuUsage();
  const store = new QueueStore(new ManualClock(Date.now()));
  const stats = await loadStore(client, keysFor(), store);
  const cpu = process.cpuUsage(cpu0);
  const peakRss = process.memoryUsage().rss;
  await new Promise((r) => setImmediate(r));
  observer.disconnect();
  gc();
  const after = process.memoryUsage();
  client.disconnect();
  process.stdout.write(
    JSON.stringify({
      ...stats,
      cpuMs: (cpu.user + cpu.system) / 1000,
      gcMs,
      gcMaxMs,
      rssBefore: before.rss,
      rssAfter: after.rss,
      rssPeak: peakRss,
      heapBefore: before.heapUsed,
      heapAfter: after.heapUsed,
      size: [...store.all()].reduce((n, q) => n + q.size, 0),
    }) + '\n',
  );
}

// ---------------------------------------------------------------------------------------------

// The load generator (fixed-rate phase) on CPU 1, servers on CPU 0, as scripts/bench.ts does.
if (hasTaskset()) pinSelf('1');
if (nice !== '0') niceSelf(Number(nice));

const report: Record<string, unknown> = {
  machine: machineInfo(),
  options: {
    rounds,
    durationS,
    clients,
    fsync: opt.fsync,
    aofRewrite: opt['aof-rewrite'],
    messages,
    bodySize,
  },
};
const log = (line: string): void => console.log(line);
log(
  `bench-persistence: ${machineInfo().nproc} × ${machineInfo().cpuModel}, node ${process.version}, ` +
    `appendfsync ${opt.fsync}, AOF rewrite ${opt['aof-rewrite']}` +
    (opt['aof-rewrite-min-size'] === undefined ? '' : ` (min size ${opt['aof-rewrite-min-size']})`) +
    `, ${clients} clients, ${durationS} s per run, ${rounds} rounds, ` +
    `server node flags [${nodeFlags.join(' ')}]`,
);

const redis = await startRedis(opt.fsync);
try {
  let redisSendRate = Number(opt.rate ?? NaN);
  if (!skip.has('throughput')) {
    const scenarios = ['send', 'send-batch', 'receive-delete'];
    const rows: Record<string, { memory: BenchRow[]; redis: BenchRow[] }> = {};
    for (let r = 0; r < rounds; r++) {
      for (const scenario of scenarios) {
        const entry = (rows[scenario] ??= { memory: [], redis: [] });
        const mem = runBench(scenario, undefined);
        await redis.client.flushall();
        const [red, rewrites] = await countingRewrites(redis.client, () =>
          Promise.resolve(runBench(scenario, redis.port)),
        );
        red.aofRewrites = rewrites;
        await redis.client.flushall();
        entry.memory.push(mem);
        entry.redis.push(red);
        for (const [mode, row] of [
          ['memory', mem],
          ['redis', red],
        ] as const) {
          if (row.errors > 0)
            log(`  ${scenario} ${mode}: ${row.errors} errors, e.g. ${row.errorSamples.join(' | ')}`);
        }
        log(
          `  round ${r + 1} ${scenario}: memory ${fmt(mem.msgsPerSec)} msgs/s (${fmt(mem.perCore)}/core, ` +
            `p99 ${mem.p99} ms, other CPU ${fmt(mem.otherCpuPct)} %, steal ${fmt(mem.stealCpuPct)} %), redis ${fmt(red.msgsPerSec)} msgs/s ` +
            `(${fmt(red.perCore)}/core, p99 ${red.p99} ms, other CPU ${fmt(red.otherCpuPct)} %, steal ${fmt(red.stealCpuPct)} %, ` +
            `AOF rewrites started ${red.aofRewrites}) = ${fmt((red.msgsPerSec / mem.msgsPerSec) * 100)} %`,
        );
      }
    }
    log(
      '\nscenario        memory msgs/s   redis msgs/s   ratio   p50/p99 ms memory   p50/p99 ms redis   errors',
    );
    const summary: Record<string, unknown> = {};
    for (const [scenario, { memory, redis: red }] of Object.entries(rows)) {
      const m = median(memory.map((x) => x.msgsPerSec));
      const d = median(red.map((x) => x.msgsPerSec));
      const ratios = memory.map((x, i) => (red[i]?.msgsPerSec ?? NaN) / x.msgsPerSec);
      const coreRatios = memory.map((x, i) => (red[i]?.perCore ?? NaN) / x.perCore);
      summary[scenario] = {
        memory,
        redis: red,
        medianMemory: m,
        medianRedis: d,
        ratios,
        medianRatio: median(ratios),
        coreRatios,
        medianCoreRatio: median(coreRatios),
      };
      log(
        `${scenario.padEnd(15)} ${fmt(m).padStart(13)} ${fmt(d).padStart(14)} ${fmt(median(ratios) * 100).padStart(6)} %` +
          `   ${fmt(median(memory.map((x) => x.p50)), 1)}/${fmt(median(memory.map((x) => x.p99)), 1)}`.padEnd(
            22,
          ) +
          `${fmt(median(red.map((x) => x.p50)), 1)}/${fmt(median(red.map((x) => x.p99)), 1)}`.padEnd(19) +
          `${[...memory, ...red].reduce((n, x) => n + x.errors, 0)}` +
          `   (per-round ratios ${ratios.map((x) => `${fmt(x * 100)} %`).join(', ')}, whose median is the ratio column; ` +
          `ratio of the two medians ${fmt((d / m) * 100)} %; per server core ${fmt(median(coreRatios) * 100)} %; ` +
          `AOF rewrites started per Redis run ${red.map((x) => x.aofRewrites ?? 'n/a').join(', ')})`,
      );
      if (scenario === 'send' && !Number.isFinite(redisSendRate)) redisSendRate = d;
    }
    report.throughput = summary;
  }

  if (!skip.has('latency') && Number.isFinite(redisSendRate)) {
    const rate = Math.round(redisSendRate / 2);
    log(
      `\nSendMessage at ${rate} msgs/s (half the Redis peak), open loop, ${durationS} s after ${opt.warmup} s of warm-up, ${rounds} rounds` +
        (drainers > 0 ? `, ${drainers} consumers draining the queue:` : ':'),
    );
    type Run = Awaited<ReturnType<typeof fixedRate>> & {
      redisEvents: { event: string; maxMs: number }[];
      aofRewrites: number;
      server: Awaited<ReturnType<typeof serverSide>>;
    };
    const runs: Record<'memory' | 'redis', Run[]> = { memory: [], redis: [] };
    // Every round, not one draw: a single open-loop run's p99 swings with the machine.
    for (let round = 0; round < rounds; round++) {
      for (const mode of ['memory', 'redis'] as const) {
        await redis.client.flushall();
        const server = await startServer(mode === 'redis' ? ['--redis-addr', `127.0.0.1:${redis.port}`] : []);
        try {
          await redis.client.call('LATENCY', 'RESET');
          const [r, rewrites] = await countingRewrites(redis.client, () =>
            fixedRate(server, rate, durationS, mode === 'redis' ? redis.client : undefined),
          );
          const redisEvents = mode === 'redis' ? await latencyEvents(redis.client) : [];
          const seen = await serverSide(server.controlPort);
          runs[mode].push({ ...r, redisEvents, aofRewrites: rewrites, server: seen });
          log(
            `  ${mode.padEnd(6)}: p50 ${r.p50} ms, p99 ${r.p99} ms, max ${r.max} ms (warm-up p99 ${r.warmupP99} ms; ${r.sent} sent, ${r.errors} errors; ` +
              `the load generator's own lag p99 ${r.sendLagP99} ms, max ${r.sendLagMax} ms)` +
              `; the server's own p99 ≤ ${seen.p99Bound} ms, event-loop lag max ${r.lagMaxMs} ms` +
              (mode === 'redis'
                ? `; its Redis commit wait p50 ≤ ${seen.commitP50Bound} ms, p99 ≤ ${seen.commitP99Bound} ms` +
                  `; Redis's slow events (≥ ${LATENCY_THRESHOLD_MS} ms): ${redisEvents.length === 0 ? 'none' : redisEvents.map((e) => `${e.event} max ${e.maxMs} ms`).join(', ')}` +
                  `; AOF rewrites started ${rewrites}`
                : '') +
              `\n${formatStalls(r.stalls, Math.round(rate * durationS), r.rewrites)}`,
          );
        } finally {
          await server.stop();
        }
      }
    }
    const out: Record<string, unknown> = { rate, warmupS: Number(opt.warmup) };
    for (const mode of ['memory', 'redis'] as const) {
      const p99s = runs[mode].map((r) => r.p99);
      out[mode] = { runs: runs[mode], medianP99: median(p99s), worstP99: Math.max(...p99s) };
      log(
        `  ${mode.padEnd(6)} p99 over ${rounds} rounds: median ${fmt(median(p99s), 1)} ms, worst ${fmt(Math.max(...p99s), 1)} ms`,
      );
    }
    report.latency = out;
  }

  if (!skip.has('redis-alone')) {
    // What the fsync-bound tail of Redis is without shared-sqs: the floor under the latency phase.
    const seconds = durationS * 2;
    log(
      `\nRedis alone (no shared-sqs): ${REDIS_WRITERS} writers, each an HSET of ${bodySize} bytes as soon as its ` +
        `last was answered, ${seconds} s, ${rounds} rounds (appendfsync ${opt.fsync}):`,
    );
    const runs = [];
    for (let round = 0; round < rounds; round++) {
      await redis.client.flushall();
      const [r, rewrites] = await countingRewrites(redis.client, () => redisAlone(redis.client, seconds));
      runs.push({ ...r, aofRewrites: rewrites });
      const s = r.summary;
      log(
        `  ${r.writes} writes: p50 ${s.p50} ms, p99 ${s.p99} ms, max ${s.max} ms; AOF rewrites started ${rewrites}\n` +
          formatStalls(r.stalls, r.writes),
      );
    }
    report.redisAlone = runs;
  }

  if (!skip.has('capacity')) {
    const rate = Number(opt['capacity-rate']);
    log(
      `\nCapacity: SendMessage offered at ${rate} msgs/s to a Redis-mode server over ${clients} connections, ` +
        `${durationS} s after ${opt.warmup} s, ${rounds} rounds:`,
    );
    const runs = [];
    for (let round = 0; round < rounds; round++) {
      await redis.client.flushall();
      const server = await startServer(['--redis-addr', `127.0.0.1:${redis.port}`]);
      try {
        const [r, rewrites] = await countingRewrites(redis.client, () => fixedRate(server, rate, durationS));
        runs.push({ ...r, aofRewrites: rewrites });
        log(
          `  completed ${fmt(r.completedPerSec)} msgs/s (load generator ${fmt(r.generatorCpuPct)} % of a core); ` +
            `the server: ${fmt(r.serverMeanMs, 2)} ms per SendMessage on average, of which ${fmt(r.commitMeanMs, 2)} ms ` +
            `waiting for Redis; ${clients} / that = ${fmt((clients / r.serverMeanMs) * 1000)} msgs/s, the most the ` +
            `connections could complete (${r.errors} errors; AOF rewrites started ${rewrites})`,
        );
      } finally {
        await server.stop();
      }
    }
    report.capacity = { rate, runs };
  }

  if (!skip.has('takeover') && Number.isFinite(redisSendRate)) {
    const rate = Math.round(redisSendRate / 2);
    log(
      `\nSendMessage at ${rate} msgs/s to a follower just after it took over (${opt.warmup} s, then ${durationS} s), ` +
        `its warm-up on and off, ${rounds} rounds:`,
    );
    const variants = { warm: [] as string[], cold: ['--warmup-requests', '0'] };
    const out: Record<string, { first: number[]; after: number[] }> = {};
    for (let round = 0; round < rounds; round++) {
      for (const [name, flags] of Object.entries(variants)) {
        await redis.client.flushall();
        const ha = ['--redis-addr', `127.0.0.1:${redis.port}`, '--leader-election'];
        const leader = await startServer([...ha, '--warmup-requests', '0']);
        let follower: Server | undefined;
        try {
          follower = await startServer([...ha, ...flags], 'warn', 60_000, '/health');
          // The same wait for both: long enough for the default warm-up on this machine.
          await sleep(3_000);
          await leader.stop();
          await waitForReady(follower.proc, follower.controlPort, 30_000, follower.output);
          const r = await fixedRate(follower, rate, durationS);
          (out[name] ??= { first: [], after: [] }).first.push(r.warmupP99);
          out[name].after.push(r.p99);
          log(
            `  ${name}: first ${opt.warmup} s p99 ${r.warmupP99} ms, then p99 ${r.p99} ms, max ${r.max} ms ` +
              `(${r.sent} sent, ${r.errors} errors)`,
          );
        } finally {
          await follower?.stop();
          if (leader.proc.exitCode === null) await leader.stop();
        }
      }
    }
    for (const [name, o] of Object.entries(out)) {
      log(
        `  ${name} over ${rounds} rounds: first ${opt.warmup} s p99 median ${fmt(median(o.first), 1)} ms, ` +
          `then median ${fmt(median(o.after), 1)} ms`,
      );
    }
    report.takeover = { rate, ...out };
  }

  if (!skip.has('load')) {
    await redis.client.flushall();
    const before = await usedMemory(redis.client);
    const t0 = performance.now();
    await fillQueue(redis.client, { messages, bodySize });
    const fillMs = performance.now() - t0;
    const after = await usedMemory(redis.client);
    const perMessage = (after - before) / messages;
    log(
      `\nloading ${fmt(messages)} messages of ${bodySize} B (written in ${fmt(fillMs / 1000, 1)} s): ` +
        `Redis used_memory +${fmt((after - before) / 2 ** 20)} MiB = ${fmt(perMessage)} B per message ` +
        `(${fmt(perMessage - bodySize)} B over the body)`,
    );
    const childOut = execFileSync(
      ...niced(process.execPath, [
        '--expose-gc',
        '--import',
        'tsx',
        path.join(ROOT, 'scripts', 'bench-persistence.ts'),
        '--phase',
        'load-child',
        '--port',
        String(redis.port),
      ]),
      { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const child = JSON.parse(childOut.trim().split('\n').pop() ?? '{}') as {
      ms: number;
      cpuMs: number;
      gcMs: number;
      gcMaxMs: number;
      maxBlockMs: number;
      messages: number;
      rssBefore: number;
      rssAfter: number;
      rssPeak: number;
      heapBefore: number;
      heapAfter: number;
    };
    const rssPer = (child.rssAfter - child.rssBefore) / child.messages;
    const heapPer = (child.heapAfter - child.heapBefore) / child.messages;
    log(
      `  loader alone: ${fmt(child.messages)} messages in ${fmt(child.ms / 1000, 2)} s ` +
        `(CPU ${fmt(child.cpuMs / 1000, 2)} s, of which GC ${fmt(child.gcMs / 1000, 2)} s), longest block ` +
        `${fmt(child.maxBlockMs)} ms (longest GC pause ${fmt(child.gcMaxMs)} ms); after GC: RSS +${fmt((child.rssAfter - child.rssBefore) / 2 ** 20)} MiB ` +
        `= ${fmt(rssPer)} B per message (${fmt(rssPer - bodySize)} B over the body), heap ${fmt(heapPer)} B per message; ` +
        `peak RSS while loading +${fmt((child.rssPeak - child.rssBefore) / 2 ** 20)} MiB`,
    );
    const empty = await startServer([]);
    const emptyRss = readRss(empty.proc.pid ?? -1);
    await empty.stop();
    // info: the loader's 'state loaded from Redis' line (time, longest block) is read from the log.
    const server = await startServer(['--redis-addr', `127.0.0.1:${redis.port}`], 'info');
    const loadedRss = readRss(server.proc.pid ?? -1);
    const serverCpuS = readCpuSeconds(server.proc.pid ?? -1);
    const line = server
      .output()
      .split('\n')
      .find((l) => l.includes('state loaded from Redis'));
    await server.stop();
    log(
      `  server: spawn to /ready ${fmt(server.readyMs / 1000, 2)} s, CPU ${fmt(serverCpuS, 2)} s ` +
        `(${line ?? 'no load log line'}); ` +
        `RSS ${fmt(loadedRss / 2 ** 20)} MiB vs ${fmt(emptyRss / 2 ** 20)} MiB memory-only and empty ` +
        `(${fmt((loadedRss - emptyRss) / messages)} B per message, before any GC)`,
    );
    report.load = {
      fillMs,
      redisBytesPerMessage: perMessage,
      child,
      serverReadyMs: server.readyMs,
      serverCpuS,
      loadedRss,
      emptyRss,
    };
  }
} finally {
  await redis.stop();
}
if (opt.json !== undefined) writeFileSync(opt.json, JSON.stringify(report, null, 2));
