/**
 * `npm run bench`: a load generator for SQS servers (shared-sqs, a bare fastify ceiling, the fauxqs
 * emulator). See --help, and docs/performance.md for the figures it produced.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

import {
  hasTaskset,
  LOCK_FILE,
  MachineLock,
  machineInfo,
  niceSelf,
  nodeFlagsOption,
  pinSelf,
  waitForIdle,
} from './bench/proc.js';
import {
  computeChecks,
  computeRatios,
  formatAnalysis,
  formatMarkdown,
  formatTable,
  resultLine,
  STEAL_NOTE_PCT,
} from './bench/report.js';
import type { Report } from './bench/report.js';
import { runScenario } from './bench/scenarios.js';
import type { BenchConfig, Result } from './bench/scenarios.js';
import { PROTOCOLS, type Protocol } from './bench/sqs.js';
import {
  killStartedServers,
  ROOT,
  SCENARIO_NAMES,
  TARGET_NAMES,
  TARGETS,
  type ScenarioName,
  type TargetName,
} from './bench/targets.js';

const HELP = `Usage: npm run bench -- [options]

Drives SQS servers over keep-alive HTTP/1.1 (pre-built requests, one in flight per connection) and
prints, per target, protocol and scenario: msgs/s, req/s, p50/p99 latency, server RSS before/after
(/proc/<pid>/status VmRSS), server CPU % of one core (/proc/<pid>/stat utime+stime) and the load
generator's own CPU % (near 100 % would mean the load generator, not the server, is the limit).
Every server is started by the bench (a fresh one for each scenario) and stopped at the end. Non-2xx
replies, failed batch entries and lost messages are counted as errors; a run with errors is flagged.

Targets (--targets, comma-separated; default ${TARGET_NAMES.join(',')}):
  shared-sqs   node dist/main.js --port P --control-port C --log-level warn   (npm run build first)
               ready when GET :C/health is 200; both protocols, every scenario
  fastify      scripts/bare-fastify.ts: a bare fastify 5 server that parses the body and sends a fixed
               reply, the ceiling; both protocols; send, send-batch and cold-start only
  floor        the same server with --floor: plus, per message, the MD5 of its body, a message id,
               and body and id kept in memory (what no SQS server can skip); send and send-batch
  fauxqs       the fauxqs npm emulator (logging off); JSON protocol only

Scenarios (--scenarios, comma-separated; default all):
  send             SendMessage of a 256-byte body to one queue, --clients in parallel, --duration
  send-batch       SendMessageBatch of 10 x 256 B (msgs/s counts messages)
  receive-delete   pre-fill --depth messages (batched sends), then clients loop ReceiveMessage
                   (MaxNumberOfMessages=10, WaitTimeSeconds=0) + DeleteMessageBatch until the queue is
                   drained or --duration is up; msgs/s = deleted per second. Run again at --deep-depth
                   to compare the rate deep vs shallow.
  fifo             a FIFO queue filled to --depth by SendMessageBatch (each group by one client, so a
                   group's order is its send order), then clients loop ReceiveMessage (10, long poll
                   1 s) + DeleteMessageBatch until drained or --duration is up; twice: over 1,000
                   groups, and with 90 % of the messages in one hot group (10 % over 100 groups).
                   A message out of its group's order, or received twice, is an error
  roundtrip        a producer sends --rate msgs/s whose bodies carry the send time (hrtime); --consumers
                   long-poll (WaitTimeSeconds=20, max 10) and delete; latency = receive - send time
  idle-long-polls  --polls concurrent ReceiveMessage long polls (WaitTimeSeconds=20, each on its own
                   connection) on an empty queue: server RSS increase and CPU % over --duration of
                   idling; then --wakeups times, send one message and time until a poll returns it
                   (from issuing the SendMessage)
  memory           create --queues empty queues, then send --messages 256-byte messages to one queue;
                   bytes per queue and per message, of RSS and of V8 heap (the server runs with
                   --inspect; the bench forces a full GC through the inspector before each reading)
  back-pressure    shared-sqs with --max-memory 64mb: SendMessageBatch of 3 x 256 KiB from one
                   connection, no consumer, until the first refusal; bytes accepted against the
                   budget, the refusal (403 RequestThrottled), usage and server RSS then
  cold-start       time from spawning the server to its first 200 on ListQueues, --cold-runs times

Options:
  --targets LIST        targets to run (default ${TARGET_NAMES.join(',')})
  --protocols LIST      json,query (default both; fauxqs is always JSON only)
  --scenarios LIST      scenarios to run (default all)
  --clients N           concurrent clients / connections (default 32)
  --duration S          measured seconds per scenario (default 10; --quick: 2)
  --warmup S            unmeasured warm-up seconds before send, send-batch, roundtrip (default 1; --quick: 0.5)
  --depth N             receive-delete and fifo queue depth (default 20000; --quick: 2000)
  --deep-depth N        second receive-delete depth, 0 to skip (default 200000; --quick: 20000)
  --rate N              roundtrip send rate, msgs/s (default 1000)
  --consumers N         roundtrip long-polling consumers (default 8)
  --polls N             idle-long-polls concurrent long polls (default 1000)
  --wakeups N           idle-long-polls wake-up samples (default 50; --quick: 10)
  --queues N            memory: empty queues to create (default 10000; --quick: 1000)
  --messages N          memory: messages to queue (default 100000; --quick: 10000)
  --cold-runs N         cold-start repetitions, median reported (default 5; --quick: 3)
  --body-size N         message body bytes (default 256)
  --server-cpu LIST     pin servers with taskset -c LIST (default 0; "none" to not pin)
  --load-cpu LIST       pin the load generator with taskset (default 1; "none" to not pin)
  --shared-sqs-entry F  shared-sqs entry point (default dist/main.js)
  --shared-sqs-args A   extra arguments for shared-sqs, space-separated
  --shared-sqs-node-flags F  Node/V8 flags for shared-sqs alone, space-separated, instead of
                        those it ships with (bin/shared-sqs.js's: --initial-old-space-size=512);
                        --shared-sqs-node-flags= for none
  --cpu-prof DIR        start the servers with --cpu-prof, profiles written to DIR on exit
  --rounds N            go over every scenario and target N times (default 1), the targets in reverse
                        order every other round; each ratio and target check is then the round of
                        median value, all rounds' values beside it. Runs of one scenario follow one
                        another across targets either way, so a ratio compares runs made minutes
                        apart at most
  --repeat N            run every scenario N times and keep, per run, the attempt with the fewest errors
                        and then the least CPU used by other processes meanwhile (default 1)
  --wait-idle S         on a shared machine: before each attempt, wait up to S s until the rest of the
                        machine uses < --idle-threshold % of a core (default 0: do not wait; 15 %)
  --nice=N              scheduling priority for the servers and the load generator (e.g. --nice=-5; < 0
                        needs root); on a shared machine it keeps other work from blurring the figures
  --lock-wait S         bench runs on one machine take turns, a scenario at a time, through the lock
                        file ${LOCK_FILE}; wait at most S s for it (default 1800), then run anyway
  --no-lock             do not take turns
  --quick               smoke run: 2 s per scenario, smaller depths and counts
  --json FILE           also write all results (and machine, options, ratios, checks) as JSON
  --markdown FILE       also write the results as the Markdown tables used in docs/performance.md
  --from-json F[,F...]  run nothing: re-print (and --markdown, --json) the results of earlier --json
                        files; with several, a later file's run of the same target/protocol/scenario wins
  -h, --help            this text

Examples:
  npm run bench -- --quick --targets fastify,fauxqs
  npm run build && npm run bench -- --json .bench/full.json --markdown .bench/full.md
  npm run bench -- --targets shared-sqs --scenarios send --protocols json --cpu-prof .bench/prof
`;

function parseCommandLine() {
  try {
    return parseArgs({
      options: {
        targets: { type: 'string' },
        protocols: { type: 'string' },
        scenarios: { type: 'string' },
        clients: { type: 'string' },
        duration: { type: 'string' },
        warmup: { type: 'string' },
        depth: { type: 'string' },
        'deep-depth': { type: 'string' },
        rate: { type: 'string' },
        consumers: { type: 'string' },
        polls: { type: 'string' },
        wakeups: { type: 'string' },
        queues: { type: 'string' },
        messages: { type: 'string' },
        'cold-runs': { type: 'string' },
        'body-size': { type: 'string' },
        'server-cpu': { type: 'string' },
        'load-cpu': { type: 'string' },
        'shared-sqs-entry': { type: 'string' },
        'shared-sqs-args': { type: 'string' },
        'shared-sqs-node-flags': { type: 'string' },
        'cpu-prof': { type: 'string' },
        repeat: { type: 'string' },
        rounds: { type: 'string' },
        'wait-idle': { type: 'string' },
        'idle-threshold': { type: 'string' },
        nice: { type: 'string' },
        'lock-wait': { type: 'string' },
        'no-lock': { type: 'boolean', default: false },
        quick: { type: 'boolean', default: false },
        json: { type: 'string' },
        markdown: { type: 'string' },
        'from-json': { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
      strict: true,
      allowPositionals: false,
    });
  } catch (err) {
    process.stderr.write(`bench: ${(err as Error).message}\n(see --help)\n`);
    process.exit(64);
  }
}
const { values: args } = parseCommandLine();

if (args.help) {
  process.stdout.write(HELP);
  process.exit(0);
}

function fail(msg: string): never {
  process.stderr.write(`bench: ${msg}\n`);
  process.exit(64);
}

function list<T extends string>(value: string | undefined, all: readonly T[], what: string): T[] {
  if (value === undefined) return [...all];
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const i of items) if (!all.includes(i as T)) fail(`unknown ${what} "${i}" (one of ${all.join(', ')})`);
  return items as T[];
}

function number(name: keyof typeof args, normal: number, quick: number, min = 0): number {
  const raw = args[name];
  if (raw === undefined) return args.quick ? quick : normal;
  const v = Number(raw);
  if (typeof raw !== 'string' || !Number.isFinite(v) || v < min) fail(`--${name} must be a number ≥ ${min}`);
  return v;
}

function cpuList(value: string | undefined, dflt: string): string | undefined {
  const v = value ?? dflt;
  if (v === 'none' || v === '') return undefined;
  if (!/^[0-9,-]+$/.test(v)) fail(`bad CPU list "${v}"`);
  return v;
}

function writeOut(file: string, text: string): void {
  mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  writeFileSync(file, text);
}

/** Results in table order: by target, protocol and scenario, then round. */
function resultOrder(r: Result): number {
  return (
    TARGET_NAMES.indexOf(r.target) * 1e6 +
    PROTOCOLS.indexOf(r.protocol) * 1e5 +
    SCENARIO_NAMES.indexOf(r.scenario) * 1e3 +
    (r.round ?? 0)
  );
}

function finish(report: Report): void {
  console.log('\n' + formatTable(report.results));
  const analysis = formatAnalysis(report.ratios, report.checks);
  if (analysis) console.log('\n' + analysis);
  const errored = report.results.filter((r) => r.errors > 0);
  if (errored.length) {
    console.log(`\n⚠ ${errored.length} run(s) had errors:`);
    for (const r of errored) {
      console.log(
        `  ${r.target} ${r.protocol} ${r.scenario} ${r.variant}: ${r.errors} — ${r.errorSamples.join(' | ')}`,
      );
    }
  }
  for (const n of report.notes) console.log(`note: ${n}`);
  if (args.json) {
    writeOut(args.json, JSON.stringify(report, null, 2) + '\n');
    console.log(`\nJSON written to ${args.json}`);
  }
  if (args.markdown) {
    writeOut(args.markdown, formatMarkdown(report));
    console.log(`Markdown written to ${args.markdown}`);
  }
}

if (args['from-json']) {
  // Several files merge: a later file's run of the same target, protocol, scenario and variant replaces
  // an earlier one's (so a noisy run can be redone on its own and folded in).
  const files = args['from-json'].split(',').filter(Boolean);
  const reports = files.map((f) => JSON.parse(readFileSync(f, 'utf8')) as Report);
  const report = reports[0];
  if (!report) fail('--from-json needs a file');
  const byKey = new Map<string, Result>();
  for (const rep of reports) {
    for (const r of rep.results) {
      byKey.set(`${r.target}|${r.protocol}|${r.scenario}|${r.variant}|${r.round ?? ''}`, r);
    }
  }
  report.results = [...byKey.values()].sort((a, b) => resultOrder(a) - resultOrder(b));
  if (reports.length > 1) {
    report.notes = [...new Set(reports.flatMap((rep) => rep.notes))];
    report.notes.push(
      `merged from ${files.length} runs: ${reports.map((rep, i) => `${files[i] ?? ''} (${rep.startedAt}, ${rep.gitCommit ?? '?'})`).join(', ')}`,
    );
    report.finishedAt =
      reports
        .map((rep) => rep.finishedAt)
        .sort()
        .pop() ?? report.finishedAt;
  }
  report.ratios = computeRatios(report.results);
  report.checks = computeChecks(report.results);
  finish(report);
  process.exit(0);
}

const targets = list(args.targets, TARGET_NAMES, 'target');
const protocols = list(args.protocols, PROTOCOLS, 'protocol');
const scenarios = list(args.scenarios, SCENARIO_NAMES, 'scenario');
const serverCpu = cpuList(args['server-cpu'], '0');
const loadCpu = cpuList(args['load-cpu'], '1');
const sharedSqsEntry = args['shared-sqs-entry'] ?? 'dist/main.js';
const repeat = number('repeat', 1, 1, 1);
const rounds = number('rounds', 1, 1, 1);
const lockWaitS = number('lock-wait', 1800, 1800, 0);
const lock = args['no-lock'] ? undefined : new MachineLock();
const waitIdleS = number('wait-idle', 0, 0, 0);
const idleThreshold = number('idle-threshold', 15, 15, 0);

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
  messages: number('messages', 100_000, 10_000, 10),
  coldRuns: number('cold-runs', 5, 3, 1),
  bodySize: number('body-size', 256, 256, 20),
  launch: {
    cpu: undefined,
    cpuProfDir: args['cpu-prof'] ? path.resolve(args['cpu-prof']) : undefined,
    sharedSqsEntry,
    sharedSqsArgs: (args['shared-sqs-args'] ?? '').split(' ').filter(Boolean),
    sharedSqsNodeFlags: nodeFlagsOption(args['shared-sqs-node-flags']),
    nice: args.nice === undefined ? undefined : Number(args.nice),
  },
  log: (line) => console.log(line),
};

const machine = machineInfo();
const notes: string[] = [];
const loadAvgAtStart = os.loadavg()[0] ?? 0;
if (loadAvgAtStart > 0.5) {
  const msg = `the machine was busy when the bench started (1-minute load average ${loadAvgAtStart.toFixed(2)}): figures may be noisy; see the "other CPU %" column`;
  notes.push(msg);
  console.log(`warning: ${msg}`);
}
if ((serverCpu !== undefined || loadCpu !== undefined) && !hasTaskset()) {
  notes.push('taskset not available: servers and load generator were not pinned');
} else {
  cfg.launch.cpu = serverCpu;
  if (loadCpu !== undefined) pinSelf(loadCpu);
}

if (cfg.launch.nice !== undefined) {
  if (!Number.isInteger(cfg.launch.nice) || cfg.launch.nice < -20 || cfg.launch.nice > 19) {
    fail('--nice must be an integer from -20 to 19');
  }
  niceSelf(cfg.launch.nice);
}

if (targets.includes('shared-sqs') && !existsSync(path.resolve(ROOT, sharedSqsEntry))) {
  fail(`${sharedSqsEntry} not found: run "npm run build" first, or leave shared-sqs out of --targets`);
}

function gitDescribe(): string | null {
  try {
    return execFileSync('git', ['describe', '--always', '--dirty'], { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    return null;
  }
}
const gitCommit = gitDescribe();

function onSignal(sig: NodeJS.Signals): void {
  killStartedServers();
  lock?.release();
  process.stderr.write(`\nbench: interrupted by ${sig}; started servers killed\n`);
  process.exit(130);
}
process.once('SIGINT', onSignal);
process.once('SIGTERM', onSignal);
process.once('exit', () => {
  killStartedServers();
  lock?.release();
});

const startedAt = new Date();
console.log(
  `bench: ${machine.nproc} × ${machine.cpuModel}, node ${machine.node}; servers on CPU ${serverCpu ?? 'any'}, ` +
    `load generator on CPU ${loadCpu ?? 'any'}; ${cfg.clients} clients, ${cfg.durationS} s per scenario` +
    (args.quick ? ' (quick)' : '') +
    `; shared-sqs node flags [${(cfg.launch.sharedSqsNodeFlags ?? []).join(' ')}]`,
);

/** Of several attempts at one run, keep the one with the fewest errors, then the least disturbed. */
function better(a: Result, b: Result): Result {
  if (a.errors !== b.errors) return a.errors < b.errors ? a : b;
  return (b.otherCpuPct ?? Number.POSITIVE_INFINITY) < (a.otherCpuPct ?? Number.POSITIVE_INFINITY) ? b : a;
}

/**
 * One scenario of one target, --repeat times: per variant, the attempt `better` keeps, told the
 * round it belongs to (with --rounds) and, with --repeat, the other CPU of every attempt.
 */
async function runKept(
  target: TargetName,
  protocol: Protocol,
  scenario: ScenarioName,
  round: number,
): Promise<Result[]> {
  const kept = new Map<string, Result>();
  const others = new Map<string, number[]>();
  for (let attempt = 1; attempt <= repeat; attempt++) {
    if (lock) {
      const had = await lock.acquire(lockWaitS, (holder) =>
        console.log(`  (waiting for the bench run of pid ${holder} to finish its scenario: ${LOCK_FILE})`),
      );
      if (!had)
        notes.push(`ran ${target} ${protocol} ${scenario} without the machine lock (waited ${lockWaitS} s)`);
    }
    if (waitIdleS > 0) {
      const w = await waitForIdle(waitIdleS, idleThreshold);
      if (!w.idle)
        console.log(`  (machine still busy after ${waitIdleS} s: other CPU ${w.otherPct.toFixed(0)} %)`);
    }
    const t0 = Date.now();
    console.log(
      `… ${target} ${protocol} ${scenario}` +
        (rounds > 1 ? ` (round ${round} of ${rounds})` : '') +
        (repeat > 1 ? ` (attempt ${attempt} of ${repeat})` : ''),
    );
    const rs = await runScenario(cfg, target, protocol, scenario).finally(() => lock?.release());
    for (const r of rs) {
      if (rounds > 1) r.round = round;
      console.log(`  ${resultLine(r)}  [${((Date.now() - t0) / 1000).toFixed(1)} s]`);
      const prev = kept.get(r.variant);
      kept.set(r.variant, prev ? better(prev, r) : r);
      others.set(r.variant, [...(others.get(r.variant) ?? []), r.otherCpuPct ?? Number.NaN]);
    }
  }
  for (const [variant, r] of kept) {
    if (repeat > 1) {
      r.extra['attempts'] = repeat;
      r.extra['attemptsOtherCpuPct'] = (others.get(variant) ?? []).map((x) => Math.round(x)).join('/');
    }
  }
  return [...kept.values()];
}

const results: Result[] = [];
// Targets innermost: the runs a ratio compares follow one another, minutes apart at most, instead of
// a whole target's runs apart; a VM whose speed drifts over the bench then moves both sides alike.
// Every other round takes them in reverse (A B, B A, ...), so that neither always runs first.
for (let round = 1; round <= rounds; round++) {
  const order = round % 2 === 1 ? targets : [...targets].reverse();
  for (const protocol of protocols) {
    for (const scenario of scenarios) {
      for (const target of order) {
        const def = TARGETS[target];
        if (def.protocols.includes(protocol) && def.scenarios.includes(scenario)) {
          results.push(...(await runKept(target, protocol, scenario, round)));
        }
      }
    }
  }
}
results.sort((a, b) => resultOrder(a) - resultOrder(b));

const stolen = results.filter((r) => (r.stealCpuPct ?? 0) >= STEAL_NOTE_PCT);
if (stolen.length > 0) {
  const worst = Math.max(...stolen.map((r) => r.stealCpuPct ?? 0));
  const msg =
    `the hypervisor took CPU time from ${stolen.length} of ${results.length} runs (steal up to ${worst.toFixed(0)} % of a core): ` +
    'their figures are slowed and their ratios skewed; see the notes column';
  notes.push(msg);
  console.log(`warning: ${msg}`);
}

const report: Report = {
  version: 1,
  startedAt: startedAt.toISOString(),
  finishedAt: new Date().toISOString(),
  gitCommit,
  machine,
  options: {
    targets,
    protocols,
    scenarios,
    quick: args.quick,
    repeat,
    rounds,
    waitIdleS,
    nice: cfg.launch.nice ?? null,
    serverCpu: serverCpu ?? null,
    loadCpu: loadCpu ?? null,
    ...Object.fromEntries(Object.entries(cfg).filter(([k]) => k !== 'launch' && k !== 'log')),
    sharedSqsEntry,
    sharedSqsArgs: cfg.launch.sharedSqsArgs,
    sharedSqsNodeFlags: cfg.launch.sharedSqsNodeFlags ?? [],
  },
  notes,
  loadAverage: { atStart: loadAvgAtStart, atEnd: os.loadavg()[0] ?? null },
  results,
  ratios: computeRatios(results),
  checks: computeChecks(results),
};
finish(report);
process.exitCode = results.some((r) => r.errors > 0) ? 1 : 0;
