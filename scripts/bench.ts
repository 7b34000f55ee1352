/**
 * `npm run bench`: a load generator for SQS servers (shared-sqs, memory-only or with Redis, and
 * other builds of it; a bare fastify ceiling; the fauxqs emulator). See --help, and
 * docs/performance.md for the figures it produced.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

import { LOCK_FILE, MachineLock, machineInfo, pinSelf } from './bench/meter.js';
import { formatComparison, formatTable, resultLine, STEAL_NOTE_PCT, type Report } from './bench/report.js';
import { runScenario, type BenchConfig, type Result } from './bench/scenarios.js';
import { PROTOCOLS, type Protocol } from './bench/sqs.js';
import { parseTarget, ROOT, SCENARIO_NAMES, type ScenarioName, type Target } from './bench/targets.js';

const DEFAULT_TARGETS = 'shared-sqs,fastify,floor,fauxqs';

const HELP = `Usage: npm run bench -- [options]

Drives SQS servers over keep-alive HTTP/1.1 (pre-built requests, one in flight per connection) and
prints, per target, protocol and scenario: msgs/s, req/s, p50/p99 latency, server RSS before/after,
server CPU % of one core, the load generator's own CPU % (near 100 % means the load generator, not
the server, was the limit) and the CPU the rest of the machine used meanwhile; for the Redis
targets, the redis-server's CPU µs, calls (EVALSHA, EVAL, WAIT) and commands (the scripts' own
included) per message. Every server is started fresh for each scenario and stopped at the end.
Non-2xx replies, failed batch entries and lost or misordered messages count as errors; a run with
errors exits 1.

Targets (--targets, comma-separated; default ${DEFAULT_TARGETS}):
  shared-sqs     node dist/main.js, memory only, with the Node flags it ships with (npm run build first)
  redis          the same with write-through to a redis-server the bench starts (AOF, appendfsync always)
  redis-replica  the same with a replica of that Redis, not waited for (--redis-wait-replicas 0)
  redis-wait1    the same, every commit waiting for the replica (--redis-wait-replicas 1)
  KIND@PATH      one of the four above run from another checkout (PATH: its directory or its
                 dist/main.js), named KIND@<directory>: shared-sqs,shared-sqs@../main compares builds
  fastify        scripts/bare-fastify.ts: parses the body, sends a fixed reply; the ceiling; send,
                 send-batch and cold-start only
  floor          the same plus, per message, the MD5 of its body, an id, both kept; send, send-batch
  fauxqs         the fauxqs npm emulator; JSON only

Scenarios (--scenarios, comma-separated; default all):
  send             SendMessage of a --body-size body to one queue, --clients in parallel, --duration
  send-batch       SendMessageBatch of 10 (msgs/s counts messages)
  receive-delete   pre-fill --depth messages, then ReceiveMessage (10, no wait) + DeleteMessageBatch
                   until drained or --duration is up; again at --deep-depth
  fifo             a FIFO queue filled to --depth, drained as above (long poll 1 s) over 1,000 groups,
                   then with 90 % of it in one hot group; a message out of its group's order is an error
  roundtrip        --rate msgs/s sent with the send time in the body, --consumers long-poll and delete;
                   latency = receive - send time
  idle-long-polls  --polls parked long polls on an empty queue: RSS and CPU over --duration; then
                   --wakeups times, the time from a SendMessage to a poll returning it
  memory           --queues empty queues, then --messages messages: bytes per queue and per message,
                   of RSS and of V8 heap after a full GC
  back-pressure    shared-sqs with --max-memory 64mb, batches of 3 x 256 KiB until the first refusal
  cold-start       spawn to the first 200 on ListQueues, --cold-runs times

Options:
  --targets LIST        targets (default ${DEFAULT_TARGETS}); the first is what the others are compared with
  --protocols LIST      json,query (default both; fauxqs is JSON only)
  --scenarios LIST      scenarios (default all)
  --rounds N            go over every scenario N times (default 1), the targets in reverse order every
                        other round; comparisons take the median of the rounds. Use it on a VM, whose
                        speed drifts from one run to the next
  --clients N           concurrent connections (default 32)
  --duration S          measured seconds per scenario (default 10; --quick: 2)
  --warmup S            unmeasured seconds before send, send-batch, roundtrip (default 1; --quick: 0.5)
  --depth N             receive-delete and fifo depth (default 20000; --quick: 2000)
  --deep-depth N        second receive-delete depth, 0 to skip (default 200000; --quick: 20000)
  --rate N              roundtrip msgs/s (default 1000)      --consumers N   roundtrip consumers (default 8)
  --polls N             idle long polls (default 1000)       --wakeups N     wake-up samples (default 50; --quick: 10)
  --queues N            memory: queues (default 10000; --quick: 1000); send, send-batch: client i sends
                        to queue i mod N (default 1)
  --messages N          memory: messages (default 100000; --quick: 10000)
  --cold-runs N         cold starts, median reported (default 5; --quick: 3)
  --body-size N         message body bytes (default 256)
  --server-cpu LIST     pin servers with taskset -c LIST (default 0; "none" to not pin)
  --load-cpu LIST       pin the load generator (default 1; "none" to not pin)
  --shared-sqs-args A   extra arguments for every shared-sqs target, space-separated
  --shared-sqs-node-flags F  Node flags for shared-sqs instead of those it ships with (= for none)
  --lock-wait S         runs on one machine take turns, a scenario at a time, through ${LOCK_FILE};
                        wait at most S s for it (default 1800), then run anyway
  --no-lock             do not take turns
  --quick               smoke run: 2 s per scenario, smaller depths and counts
  --json FILE           also write every figure (and the machine and options) as JSON
  -h, --help            this text

Examples:
  npm run bench -- --quick --targets fastify,fauxqs
  npm run bench -- --targets shared-sqs,shared-sqs@/path/to/other/checkout --scenarios send,send-batch --rounds 3
  npm run bench -- --targets redis,redis-wait1 --scenarios send,send-batch --rounds 3
`;

function fail(msg: string): never {
  process.stderr.write(`bench: ${msg}\n(see --help)\n`);
  process.exit(64);
}

const STRING_OPTIONS =
  'targets protocols scenarios rounds clients duration warmup depth deep-depth rate consumers polls ' +
  'wakeups queues messages cold-runs body-size server-cpu load-cpu shared-sqs-args shared-sqs-node-flags lock-wait json';

const args = (() => {
  const text = { type: 'string' } as const;
  try {
    return parseArgs({
      options: {
        ...Object.fromEntries(STRING_OPTIONS.split(' ').map((name) => [name, text])),
        'no-lock': { type: 'boolean', default: false },
        quick: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
      allowPositionals: false,
    }).values as Record<string, string | undefined> & { 'no-lock': boolean; quick: boolean; help: boolean };
  } catch (err) {
    fail((err as Error).message);
  }
})();

if (args.help) {
  process.stdout.write(HELP);
  process.exit(0);
}

function list<T extends string>(value: string | undefined, all: readonly T[], what: string): T[] {
  if (value === undefined) return [...all];
  const items = value.split(',').filter(Boolean) as T[];
  for (const i of items) if (!all.includes(i)) fail(`unknown ${what} "${i}" (one of ${all.join(', ')})`);
  return items;
}

function number(name: string, normal: number, quick: number, min = 0): number {
  const raw = args[name];
  if (raw === undefined) return args.quick ? quick : normal;
  const v = Number(raw);
  if (!Number.isFinite(v) || v < min) fail(`--${name} must be a number ≥ ${min}`);
  return v;
}

function cpuList(value: string | undefined, dflt: string): string | undefined {
  const v = value ?? dflt;
  if (v === 'none' || v === '') return undefined;
  if (!/^[0-9,-]+$/.test(v)) fail(`bad CPU list "${v}"`);
  return v;
}

let targets: Target[];
try {
  targets = (args['targets'] ?? DEFAULT_TARGETS).split(',').filter(Boolean).map(parseTarget);
} catch (err) {
  fail((err as Error).message);
}
const names = targets.map((t) => t.name);
if (new Set(names).size !== names.length) fail(`a target named twice in ${names.join(', ')}`);
const protocols = list<Protocol>(args['protocols'], PROTOCOLS, 'protocol');
const scenarios = list<ScenarioName>(args['scenarios'], SCENARIO_NAMES, 'scenario');
let serverCpu = cpuList(args['server-cpu'], '0');
let loadCpu = cpuList(args['load-cpu'], '1');
const rounds = number('rounds', 1, 1, 1);
const lockWaitS = number('lock-wait', 1800, 1800, 0);
const lock = args['no-lock'] ? undefined : new MachineLock();
const nodeFlags = args['shared-sqs-node-flags'];

const cfg: BenchConfig = {
  clients: number('clients', 32, 32, 1),
  durationS: number('duration', 10, 2, 0.1),
  warmupS: number('warmup', 1, 0.5, 0),
  depth: number('depth', 20_000, 2_000, 10),
  deepDepth: number('deep-depth', 200_000, 20_000, 0),
  rate: number('rate', 1_000, 1_000, 1),
  consumers: number('consumers', 8, 8, 1),
  polls: number('polls', 1_000, 1_000, 1),
  wakeups: number('wakeups', 50, 10, 0),
  queues: number('queues', 10_000, 1_000, 1),
  sendQueues: number('queues', 1, 1, 1),
  messages: number('messages', 100_000, 10_000, 10),
  coldRuns: number('cold-runs', 5, 3, 1),
  bodySize: number('body-size', 256, 256, 20),
  launch: {
    cpu: undefined,
    sharedSqsArgs: (args['shared-sqs-args'] ?? '').split(' ').filter(Boolean),
    sharedSqsNodeFlags: nodeFlags === undefined ? undefined : nodeFlags.split(' ').filter(Boolean),
  },
};

const notes: string[] = [];
// Pinned with taskset, the server and the load generator do not take each other's core.
if (loadCpu !== undefined && !pinSelf(loadCpu)) {
  notes.push('taskset not available: servers and load generator were not pinned');
  serverCpu = loadCpu = undefined;
}
cfg.launch.cpu = serverCpu;
const loadAverage = os.loadavg()[0] ?? 0;
if (loadAverage > 0.5) {
  notes.push(`the machine was busy when the bench started (1-minute load average ${loadAverage.toFixed(2)})`);
}

process.once('exit', () => lock?.release());
const machine = machineInfo();
const startedAt = new Date();
console.log(
  `bench: ${machine.nproc} × ${machine.cpuModel}, node ${machine.node}; servers on CPU ${serverCpu ?? 'any'}, ` +
    `load generator on CPU ${loadCpu ?? 'any'}; ${cfg.clients} clients, ${cfg.durationS} s per scenario` +
    (args.quick ? ' (quick)' : ''),
);

async function runOne(
  target: Target,
  protocol: Protocol,
  scenario: ScenarioName,
  round: number,
): Promise<Result[]> {
  if (lock) {
    const had = await lock.acquire(lockWaitS, (holder) =>
      console.log(`  (waiting for the bench run of pid ${holder} to finish its scenario: ${LOCK_FILE})`),
    );
    if (!had) notes.push(`ran ${target.name} ${protocol} ${scenario} without the machine lock`);
  }
  const t0 = Date.now();
  console.log(
    `… ${target.name} ${protocol} ${scenario}${rounds > 1 ? ` (round ${round} of ${rounds})` : ''}`,
  );
  const rs = await runScenario(cfg, target, protocol, scenario).finally(() => lock?.release());
  for (const r of rs) {
    if (rounds > 1) r.round = round;
    console.log(`  ${resultLine(r)}  [${((Date.now() - t0) / 1000).toFixed(1)} s]`);
  }
  return rs;
}

const results: Result[] = [];
// Targets innermost: the runs a comparison takes follow one another, minutes apart at most, and
// every other round takes them in reverse (A B, B A, ...), so that neither always runs first.
for (let round = 1; round <= rounds; round++) {
  const order = round % 2 === 1 ? targets : [...targets].reverse();
  for (const protocol of protocols) {
    for (const scenario of scenarios) {
      for (const target of order) {
        if (target.protocols.includes(protocol) && target.scenarios.includes(scenario)) {
          results.push(...(await runOne(target, protocol, scenario, round)));
        }
      }
    }
  }
}
const rank = (r: Result): number =>
  names.indexOf(r.target) * 1e6 +
  PROTOCOLS.indexOf(r.protocol) * 1e5 +
  SCENARIO_NAMES.indexOf(r.scenario) * 1e3 +
  (r.round ?? 0);
results.sort((a, b) => rank(a) - rank(b));

const stolen = results.filter((r) => (r.stealCpuPct ?? 0) >= STEAL_NOTE_PCT).length;
if (stolen > 0)
  notes.push(`the hypervisor took CPU time from ${stolen} of ${results.length} runs: see the notes column`);

console.log('\n' + formatTable(results));
const comparison = formatComparison(results, names);
if (comparison) console.log('\n' + comparison);
for (const r of results.filter((x) => x.errors > 0)) {
  console.log(
    `⚠ ${r.target} ${r.protocol} ${r.scenario} ${r.variant}: ${r.errors} errors — ${r.errorSamples.join(' | ')}`,
  );
}
for (const n of notes) console.log(`note: ${n}`);

if (args['json']) {
  let gitCommit: string | null = null;
  try {
    gitCommit = execFileSync('git', ['describe', '--always', '--dirty'], {
      cwd: ROOT,
      encoding: 'utf8',
    }).trim();
  } catch {
    // not a checkout
  }
  const { launch, ...sizes } = cfg;
  const report: Report = {
    version: 2,
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    gitCommit,
    machine,
    options: {
      targets: targets.map((t) => `${t.name} ${t.entry}`),
      protocols,
      scenarios,
      rounds,
      serverCpu,
      loadCpu,
      ...sizes,
      ...launch,
    },
    notes,
    results,
  };
  mkdirSync(path.dirname(path.resolve(args['json'])), { recursive: true });
  writeFileSync(args['json'], JSON.stringify(report, null, 2) + '\n');
  console.log(`JSON written to ${args['json']}`);
}
process.exitCode = results.some((r) => r.errors > 0) ? 1 : 0;
