/**
 * `npx tsx scripts/bench/gc-trace.ts`: the server's garbage collections under a fixed SendMessage
 * rate, from V8's own trace (`--trace-gc-nvp`, one line per collection), so that GC settings can be
 * compared by their pauses rather than by end-to-end latency, which a shared VM's noise swamps.
 *
 * It starts `node FLAGS --trace-gc-nvp dist/main.js` (FLAGS: --node-flags, by default the ones
 * shared-sqs ships with, bin/shared-sqs.js's) under `taskset -c --cpus` (memory-only,
 * or with --redis-addr), sends --rate SendMessage/s of --body-size bytes for --seconds (open loop, 32
 * connections, JSON protocol; the queue keeps every message, so the old generation grows), stops
 * the server and prints, per Mark-Compact: its pause, the marking done inside the pause (`mark`),
 * the helper threads' marking during the cycle (`background.mark`) and the main thread's
 * incremental steps; and the scavenges' count, median, longest and total pause. Needs `npm run build`.
 *
 * Example (docs/performance.md, "GC on one CPU", in its git history):
 *   npx tsx scripts/bench/gc-trace.ts --rate 8000 --seconds 6
 *   npx tsx scripts/bench/gc-trace.ts --rate 8000 --seconds 6 --node-flags=--no-concurrent-marking
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, hasTaskset, nodeFlagsOption, scriptArgs, waitForReady } from './proc.js';
import { RawPool } from './rawhttp.js';
import { SqsCodec } from './sqs.js';

const { values: opt } = scriptArgs(import.meta.url, {
  options: {
    rate: { type: 'string', default: '8000' },
    seconds: { type: 'string', default: '6' },
    'body-size': { type: 'string', default: '256' },
    cpus: { type: 'string', default: '0' },
    // Unset: the flags shared-sqs ships with (bin/shared-sqs.js); set, even to '', instead of them.
    'node-flags': { type: 'string' },
    'redis-addr': { type: 'string' },
  },
});
const rate = Number(opt.rate);
const seconds = Number(opt.seconds);
const MAIN = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../dist/main.js');

/** The numeric fields of one `--trace-gc-nvp` line, e.g. `pause=7.5 ... gc=mc ...`. */
function fields(line: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of line.matchAll(/(?:^|\s)([\w.]+)=(\S+)/g)) out.set(m[1] as string, m[2] as string);
  return out;
}

const num = (f: Map<string, string>, key: string): number => Number(f.get(key) ?? NaN);

const port = await freePort();
const controlPort = await freePort();
const nodeFlags = nodeFlagsOption(opt['node-flags']);
const nodeArgs = [...nodeFlags, '--trace-gc-nvp', MAIN];
const serverArgs = ['--port', String(port), '--control-port', String(controlPort), '--host', '127.0.0.1'];
if (opt['redis-addr'] !== undefined) serverArgs.push('--redis-addr', opt['redis-addr']);
const argv = [...nodeArgs, ...serverArgs, '--log-level', 'warn'];
const [cmd, args] = hasTaskset()
  ? ['taskset', ['-c', opt.cpus, process.execPath, ...argv]]
  : [process.execPath, argv];
const server = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
let out = '';
server.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
const exited = new Promise((r) => server.once('exit', r));

await waitForReady(server, controlPort, 10_000, () => out);

const pool = new RawPool('127.0.0.1', port, 32);
const codec = new SqsCodec('json', pool.hostHeader);
const created = await pool.post(codec.createQueue('gc-trace'), true);
const queueUrl = (JSON.parse(created.body ?? '{}') as { QueueUrl: string }).QueueUrl;
const request = codec.sendMessage(queueUrl, 'x'.repeat(Number(opt['body-size'])));
// Collections from here on: start-up's own are not the load's.
const startAt = out.length;
const inflight: Promise<unknown>[] = [];
let errors = 0;
const t0 = performance.now();
let sent = 0;
while (performance.now() - t0 < seconds * 1000) {
  const due = Math.floor(((performance.now() - t0) / 1000) * rate);
  for (; sent < due; sent++) {
    inflight.push(pool.post(request, false).then((r) => void (r.status !== 200 && errors++)));
  }
  await new Promise((r) => setTimeout(r, 1));
}
await Promise.all(inflight);
pool.destroy();
server.kill('SIGTERM');
await exited;

const lines = out.slice(startAt).split('\n');
const markCompacts = lines.filter((l) => / gc=mc /.test(l)).map(fields);
const scavenges = lines
  .filter((l) => / gc=s /.test(l))
  .map((l) => num(fields(l), 'pause'))
  .sort((a, b) => a - b);
console.log(
  `gc-trace: ${sent} SendMessage at ${rate}/s for ${seconds} s (${errors} errors), CPUs ${opt.cpus}, ` +
    `node flags [${nodeFlags.join(' ')}], ${opt['redis-addr'] === undefined ? 'memory-only' : 'Redis'}`,
);
for (const f of markCompacts) {
  console.log(
    `  Mark-Compact: pause ${num(f, 'pause')} ms (marking ${num(f, 'mark')}, evacuation ${num(f, 'evacuate')}, ` +
      `clearing ${num(f, 'clear')}, sweeping ${num(f, 'sweep')} ms); helper-thread ` +
      `marking ${num(f, 'background.mark')} ms; ${num(f, 'incremental_steps_count')} incremental steps ` +
      `(${num(f, 'incremental')} ms) over ${num(f, 'incremental_walltime_duration')} ms`,
  );
}
if (markCompacts.length === 0) console.log('  no Mark-Compact');
const at = (q: number): number =>
  scavenges[Math.min(scavenges.length - 1, Math.floor(q * scavenges.length))] ?? NaN;
const total = Math.round(scavenges.reduce((a, b) => a + b, 0));
console.log(
  `  ${scavenges.length} scavenges: pause median ${at(0.5)} ms, longest ${at(1)} ms, ${total} ms in all`,
);
