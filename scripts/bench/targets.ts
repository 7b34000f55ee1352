/**
 * The servers the bench drives. Each run of a scenario gets a freshly started server (started by the bench
 * as a child process, optionally pinned to a CPU with `taskset -c`, stopped at the end), so one scenario's
 * queues and garbage do not weigh on the next one's figures.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { getOnce } from './http.js';
import { freePort, sleep } from './proc.js';
import type { Protocol } from './sqs.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const WORK_DIR = path.join(ROOT, '.bench');

export type TargetName = 'shared-sqs' | 'fastify' | 'floor' | 'fauxqs';
export const TARGET_NAMES: readonly TargetName[] = ['shared-sqs', 'fastify', 'floor', 'fauxqs'];

export type ScenarioName =
  | 'send'
  | 'send-batch'
  | 'receive-delete'
  | 'fifo'
  | 'roundtrip'
  | 'idle-long-polls'
  | 'memory'
  | 'back-pressure'
  | 'cold-start';
export const SCENARIO_NAMES: readonly ScenarioName[] = [
  'send',
  'send-batch',
  'receive-delete',
  'fifo',
  'roundtrip',
  'idle-long-polls',
  'memory',
  'back-pressure',
  'cold-start',
];

export interface TargetDef {
  name: TargetName;
  protocols: readonly Protocol[];
  scenarios: readonly ScenarioName[];
  /** Why some scenarios/protocols are not run against it. */
  note: string;
}

export const TARGETS: Record<TargetName, TargetDef> = {
  'shared-sqs': {
    name: 'shared-sqs',
    protocols: ['json', 'query'],
    scenarios: SCENARIO_NAMES,
    note: 'this repository: node dist/main.js (npm run build first)',
  },
  fastify: {
    name: 'fastify',
    protocols: ['json', 'query'],
    scenarios: ['send', 'send-batch', 'cold-start'],
    note: 'scripts/bare-fastify.ts: parses the body and sends a fixed reply; keeps no state, so only send, send-batch and cold-start',
  },
  floor: {
    name: 'floor',
    protocols: ['json', 'query'],
    scenarios: ['send', 'send-batch'],
    note: 'scripts/bare-fastify.ts --floor: the bare fastify server plus what no SQS server can skip (MD5 of each body, a message id, body and id kept); only send and send-batch',
  },
  fauxqs: {
    name: 'fauxqs',
    protocols: ['json'],
    scenarios: SCENARIO_NAMES.filter((s) => s !== 'back-pressure'),
    note: 'the fauxqs npm emulator; speaks the JSON protocol only; has no memory budget (no back-pressure)',
  },
};

export interface LaunchOptions {
  /** CPU list for `taskset -c`, or undefined to leave the server unpinned. */
  cpu: string | undefined;
  /** Start with --inspect on a free port (for heap figures). */
  inspect: boolean;
  /** Write a V8 CPU profile of the server to this directory when it exits. */
  cpuProfDir: string | undefined;
  /** Path of the shared-sqs entry point (default dist/main.js). */
  sharedSqsEntry: string;
  /** Extra arguments for shared-sqs. */
  sharedSqsArgs: readonly string[];
  /** Node/V8 flags for shared-sqs alone (e.g. --initial-old-space-size=512: docs/operations.md). */
  sharedSqsNodeFlags?: readonly string[];
  /** Extra arguments for the bare fastify server (e.g. --spin-us). */
  fastifyArgs?: readonly string[];
  /** Label for CPU profile file names. */
  label: string;
  /** Scheduling priority (nice value) for the server, or undefined to leave it. */
  nice: number | undefined;
}

/** Servers started by this process and not yet exited, so an interrupted bench can stop them. */
const live = new Set<Server>();

/** SIGKILL every server this bench started that is still running (on an interrupted run). */
export function killStartedServers(): void {
  for (const s of live) {
    if (!s.exited) s.child.kill('SIGKILL');
  }
}

export class Server {
  readonly host = '127.0.0.1';
  private readonly output: string[] = [];
  exitCode: number | null | undefined;
  private readonly exitPromise: Promise<void>;

  constructor(
    readonly target: TargetName,
    readonly child: ChildProcess,
    readonly port: number,
    /** Port of the health (and, for shared-sqs, metrics) endpoint. */
    readonly healthPort: number,
    readonly controlPort: number | undefined,
    readonly inspectPort: number | undefined,
    readonly startedAtNs: bigint,
  ) {
    const keep = (chunk: Buffer): void => {
      this.output.push(chunk.toString());
      if (this.output.length > 200) this.output.splice(0, this.output.length - 200);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    live.add(this);
    this.exitPromise = new Promise((resolve) => {
      child.once('exit', (code) => {
        this.exitCode = code;
        live.delete(this);
        resolve();
      });
    });
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get exited(): boolean {
    return this.exitCode !== undefined;
  }

  get hostHeader(): string {
    return `${this.host}:${this.port}`;
  }

  /** Last lines the server printed (stdout and stderr mixed). */
  outputTail(lines = 20): string {
    return this.output.join('').split('\n').slice(-lines).join('\n');
  }

  /** Wait until GET /health answers 200 (bounded). */
  async waitHealthy(timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.exited) {
        throw new Error(
          `${this.target} exited (code ${String(this.exitCode)}) before it was ready:\n${this.outputTail()}`,
        );
      }
      try {
        const r = await getOnce(`http://${this.host}:${this.healthPort}/health`, 1_000);
        if (r.status === 200) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) {
        throw new Error(`${this.target} not healthy after ${timeoutMs} ms:\n${this.outputTail()}`);
      }
      await sleep(20);
    }
  }

  /** Prometheus text from shared-sqs's control port, if it has one. */
  async metrics(): Promise<string | undefined> {
    if (this.controlPort === undefined) return undefined;
    try {
      const r = await getOnce(`http://${this.host}:${this.controlPort}/metrics`, 5_000);
      return r.status === 200 ? r.body : undefined;
    } catch {
      return undefined;
    }
  }

  /** SIGTERM, then SIGKILL if it has not exited within `graceMs`. */
  async stop(graceMs = 5_000): Promise<void> {
    if (this.exited) return;
    this.child.kill('SIGTERM');
    const timer = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), graceMs));
    const r = await Promise.race([this.exitPromise.then(() => 'exited' as const), timer]);
    if (r === 'timeout' && !this.exited) {
      this.child.kill('SIGKILL');
      await this.exitPromise;
    }
  }
}

let bareFastifyJs: string | undefined;

/**
 * The bare fastify server is TypeScript; run it as plain JavaScript (types stripped once by the esbuild
 * that tsx ships) so its start-up time is not charged with a TypeScript loader. Falls back to
 * `node --import tsx` if esbuild is not there.
 */
function bareFastifyCommand(): string[] {
  const src = path.join(ROOT, 'scripts', 'bare-fastify.ts');
  if (bareFastifyJs === undefined) {
    bareFastifyJs = '';
    const esbuild = path.join(ROOT, 'node_modules', '.bin', 'esbuild');
    if (existsSync(esbuild)) {
      mkdirSync(WORK_DIR, { recursive: true });
      const out = path.join(WORK_DIR, 'bare-fastify.mjs');
      const r = spawnSync(
        esbuild,
        [
          src,
          // Its few imports from src/ are bundled in; packages stay imports.
          '--bundle',
          '--packages=external',
          '--format=esm',
          '--platform=node',
          '--target=node20',
          `--outfile=${out}`,
          '--log-level=error',
        ],
        { cwd: ROOT, stdio: 'inherit' },
      );
      if (r.status === 0) bareFastifyJs = out;
    }
  }
  return bareFastifyJs ? [bareFastifyJs] : ['--import', 'tsx', src];
}

/** Start a target server; it is not necessarily listening yet when this returns. */
export async function launch(target: TargetName, opts: LaunchOptions): Promise<Server> {
  const port = await freePort();
  const controlPort = target === 'shared-sqs' ? await freePort() : undefined;
  const inspectPort = opts.inspect ? await freePort() : undefined;
  const nodeFlags: string[] = [];
  if (inspectPort !== undefined) nodeFlags.push(`--inspect=127.0.0.1:${inspectPort}`);
  if (opts.cpuProfDir) {
    mkdirSync(opts.cpuProfDir, { recursive: true });
    nodeFlags.push(
      '--cpu-prof',
      `--cpu-prof-dir=${opts.cpuProfDir}`,
      `--cpu-prof-name=${opts.label}-${Date.now()}.cpuprofile`,
    );
  }
  let args: string[];
  // The servers' own settings come from the bench alone, not from whatever the shell has set.
  const env: NodeJS.ProcessEnv = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !/^(SHARED_SQS_|FAUXQS_|REDIS_ADDR$|REDIS_PASSWORD$|NODE_OPTIONS$)/.test(k),
    ),
  );
  env['NODE_ENV'] = 'production';
  switch (target) {
    case 'shared-sqs':
      args = [
        ...nodeFlags,
        ...(opts.sharedSqsNodeFlags ?? []),
        opts.sharedSqsEntry,
        '--port',
        String(port),
        '--control-port',
        String(controlPort),
        '--host',
        '127.0.0.1',
        '--log-level',
        'warn',
        ...opts.sharedSqsArgs,
      ];
      break;
    case 'fastify':
    case 'floor':
      args = [
        ...nodeFlags,
        ...bareFastifyCommand(),
        '--port',
        String(port),
        ...(target === 'floor' ? ['--floor'] : []),
        ...(opts.fastifyArgs ?? []),
      ];
      break;
    case 'fauxqs':
      env['FAUXQS_LOGGER'] = 'false';
      args = [
        ...nodeFlags,
        '--input-type=module',
        '-e',
        `import { startFauxqs } from 'fauxqs';\n` +
          `const s = await startFauxqs({ port: ${port}, logger: false });\n` +
          `const stop = () => s.stop().then(() => process.exit(0), () => process.exit(1));\n` +
          `process.once('SIGTERM', stop);\nprocess.once('SIGINT', stop);`,
      ];
      break;
  }
  // nice and taskset set up the process and exec the next program, so every thread of the server has
  // the same priority and CPU mask, and child.pid is the server's own pid (what /proc is read for).
  let argv = [process.execPath, ...args];
  if (opts.cpu !== undefined) argv = ['taskset', '-c', opts.cpu, ...argv];
  // `nice -n` adds to the current niceness (the bench's own, which --nice may have set already).
  if (opts.nice !== undefined) argv = ['nice', '-n', String(opts.nice - os.getPriority()), ...argv];
  const [command, ...rest] = argv as [string, ...string[]];
  const startedAtNs = process.hrtime.bigint();
  const child = spawn(command, rest, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', () => resolve());
    child.once('error', reject);
  });
  return new Server(target, child, port, controlPort ?? port, controlPort, inspectPort, startedAtNs);
}
