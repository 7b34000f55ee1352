/**
 * `npx tsx scripts/bench/calibrate.ts`: shared-sqs's cost per request expressed as busy work. Bare
 * fastify is run with `--spin-us N` (N µs of CPU per request before it answers) for several N,
 * side by side with shared-sqs, on the bench's set-up (servers on CPU 0, this load generator on
 * CPU 1, --clients keep-alive connections, JSON). It prints:
 *
 * - each server's req/s (median of --rounds) and wall time per request;
 * - how much wall time per request one µs of busy work costs here (on a 2-vCPU VM it is about 2 µs:
 *   a server that is slower per request leaves the client's vCPU idle, and every reply then pays
 *   for waking it in the server's own writev);
 * - the busy work at which bare fastify runs as fast as shared-sqs ("shared-sqs ≙ fastify + X µs");
 * - the busy work the ratio target (--target, default 0.8× bare fastify) leaves room for.
 *
 * Options: --scenario send|send-batch (default send), --spins 0,2,4,6,8,12 (µs, from 0, increasing),
 * --duration 5 (s measured per server, after 1 s of warm-up), --rounds 2, --clients 32, --target 0.8,
 * --defer-replies (bare fastify writes its replies the way shared-sqs does: those of one event-loop
 * turn together, after its last request; see scripts/bare-fastify.ts).
 *
 * Needs `npm run build` (shared-sqs runs from dist/). Figures in the git history of docs/performance.md.
 */
import { median } from './histogram.js';
import { hasTaskset, pinSelf, scriptArgs } from './proc.js';
import { RawPool } from './rawhttp.js';
import { SqsCodec } from './sqs.js';
import { launch, ROOT, type Server, type TargetName } from './targets.js';
import path from 'node:path';

const { values: opt } = scriptArgs(import.meta.url, {
  options: {
    spins: { type: 'string', default: '0,2,4,6,8,12' },
    duration: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '2' },
    clients: { type: 'string', default: '32' },
    scenario: { type: 'string', default: 'send' },
    target: { type: 'string', default: '0.8' },
    'defer-replies': { type: 'boolean', default: false },
  },
});
const spins = opt.spins.split(',').map(Number);
const durationS = Number(opt.duration);
const rounds = Number(opt.rounds);
const clients = Number(opt.clients);
const batch = opt.scenario === 'send-batch';
const targetRatio = Number(opt.target);
if (!batch && opt.scenario !== 'send') throw new Error('--scenario is send or send-batch');
if (spins[0] !== 0 || spins.some((s, i) => i > 0 && !(s > (spins[i - 1] as number)))) {
  throw new Error('--spins must start at 0 and increase');
}

const pinned = hasTaskset();
if (pinned) pinSelf('1');

interface Config {
  label: string;
  target: TargetName;
  spin: number;
}
const configs: Config[] = [
  { label: 'shared-sqs', target: 'shared-sqs', spin: 0 },
  ...spins.map((spin) => ({ label: `fastify +${spin} µs`, target: 'fastify' as const, spin })),
];

/** Closed loop: `clients` connections, one request in flight each; 200s per second. */
async function drive(server: Server): Promise<number> {
  const pool = new RawPool(server.host, server.port, clients);
  const codec = new SqsCodec('json', pool.hostHeader);
  try {
    const created = await pool.post(codec.createQueue('calibrate'), true);
    if (created.status !== 200) throw new Error(`CreateQueue: ${created.status} ${created.body ?? ''}`);
    const url = (JSON.parse(created.body ?? '{}') as { QueueUrl: string }).QueueUrl;
    const body = 'x'.repeat(256);
    const request = batch
      ? codec.sendMessageBatch(
          url,
          Array.from({ length: 10 }, () => body),
        )
      : codec.sendMessage(url, body);
    let ok = 0;
    const run = async (seconds: number): Promise<number> => {
      ok = 0;
      const end = performance.now() + seconds * 1000;
      await Promise.all(
        Array.from({ length: clients }, async () => {
          while (performance.now() < end) {
            const r = await pool.post(request, false);
            if (r.status !== 200) throw new Error(`${server.target}: HTTP ${r.status}`);
            ok++;
          }
        }),
      );
      return ok / seconds;
    };
    await run(1); // warm-up
    return await run(durationS);
  } finally {
    pool.destroy();
  }
}

const rates = new Map<string, number[]>(configs.map((c) => [c.label, []]));
for (let round = 0; round < rounds; round++) {
  for (const c of configs) {
    const server = await launch(c.target, {
      cpu: pinned ? '0' : undefined,
      inspect: false,
      cpuProfDir: undefined,
      sharedSqsEntry: path.join(ROOT, 'dist', 'main.js'),
      sharedSqsArgs: [],
      fastifyArgs: [
        ...(c.spin > 0 ? ['--spin-us', String(c.spin)] : []),
        ...(opt['defer-replies'] ? ['--defer-replies'] : []),
      ],
      label: c.label,
      nice: undefined,
    });
    try {
      await server.waitHealthy();
      const rate = await drive(server);
      rates.get(c.label)?.push(rate);
      console.log(
        `round ${round + 1} ${c.label.padEnd(16)} ${Math.round(rate).toLocaleString('en-US')} req/s`,
      );
    } finally {
      await server.stop();
    }
  }
}

/** Wall time per request, µs, of each config's median rate. */
const usPerRequest = (label: string): number => 1e6 / median(rates.get(label) ?? []);

/** The spin at which bare fastify's time per request is `t`, interpolated (extrapolated past the ends). */
function spinFor(t: number): number {
  const pts = spins.map((s) => [s, usPerRequest(`fastify +${s} µs`)] as const);
  for (let i = 1; i < pts.length; i++) {
    const [s0, t0] = pts[i - 1] as readonly [number, number];
    const [s1, t1] = pts[i] as readonly [number, number];
    if (t <= t1 || i === pts.length - 1) return s0 + ((t - t0) * (s1 - s0)) / (t1 - t0);
  }
  return 0;
}

console.log(
  `\n${batch ? 'SendMessageBatch (10 × 256 B)' : 'SendMessage (256 B)'}, JSON, ${clients} clients, median of ${rounds}:`,
);
for (const c of configs) {
  const r = median(rates.get(c.label) ?? []);
  console.log(
    `  ${c.label.padEnd(16)} ${Math.round(r).toLocaleString('en-US').padStart(8)} req/s  ${usPerRequest(c.label).toFixed(1).padStart(6)} µs per request`,
  );
}
const t0 = usPerRequest('fastify +0 µs');
const last = spins.at(-1) as number;
const slope = (usPerRequest(`fastify +${last} µs`) - t0) / last;
const sqs = usPerRequest('shared-sqs');
console.log(
  `\none µs of busy work per request costs ${slope.toFixed(2)} µs of wall time per request here (0 → ${last} µs)\n` +
    `shared-sqs runs at ${(t0 / sqs).toFixed(2)}× bare fastify ≙ bare fastify + ${spinFor(sqs).toFixed(1)} µs of busy work per request\n` +
    `${targetRatio}× bare fastify (${(t0 / targetRatio).toFixed(1)} µs per request) ≙ bare fastify + ${spinFor(t0 / targetRatio).toFixed(1)} µs of busy work per request`,
);
