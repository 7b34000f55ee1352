/**
 * The servers the bench drives. Each run of a scenario gets a freshly started server (and, for the
 * Redis targets, fresh redis-servers), optionally pinned to a CPU with `taskset -c`, stopped at the
 * end, so one scenario's queues and garbage do not weigh on the next one's figures. Processes are
 * spawned and Redis started by test/support/process.ts, as the tests do.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import {
  freePort,
  productNodeFlags,
  spawnProcess,
  startRedis,
  waitForReady,
  type Spawned,
  type TestRedis,
} from '../../test/support/process.js';
import type { Protocol } from './sqs.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export const SCENARIO_NAMES = [
  'send',
  'send-batch',
  'receive-delete',
  'fifo',
  'roundtrip',
  'idle-long-polls',
  'memory',
  'back-pressure',
  'cold-start',
] as const;
export type ScenarioName = (typeof SCENARIO_NAMES)[number];

/**
 * What a target runs. The shared-sqs kinds differ in persistence: memory only; write-through to one
 * redis-server (AOF, `appendfsync always`); the same with a replica, not waited for (N = 0) or
 * waited for by every commit (`--redis-wait-replicas 1`).
 */
export const KINDS = [
  'shared-sqs',
  'redis',
  'redis-replica',
  'redis-wait1',
  'fastify',
  'floor',
  'fauxqs',
] as const;
export type Kind = (typeof KINDS)[number];
const SHARED_SQS_KINDS: readonly Kind[] = ['shared-sqs', 'redis', 'redis-replica', 'redis-wait1'];

export interface Target {
  /** The name in the tables: the kind, with `@<checkout>` for another build. */
  name: string;
  kind: Kind;
  /** The shared-sqs entry point (dist/main.js of this checkout or of the one named). */
  entry: string;
  protocols: readonly Protocol[];
  scenarios: readonly ScenarioName[];
}

/**
 * `KIND` or `KIND@PATH` (a shared-sqs kind run from another checkout, PATH its directory or its
 * dist/main.js): `--targets shared-sqs,shared-sqs@../other` compares two builds in one run.
 */
export function parseTarget(spec: string): Target {
  const at = spec.indexOf('@');
  const kind = (at < 0 ? spec : spec.slice(0, at)) as Kind;
  if (!KINDS.includes(kind)) throw new Error(`unknown target "${spec}" (one of ${KINDS.join(', ')})`);
  const shared = SHARED_SQS_KINDS.includes(kind);
  let entry = path.join(ROOT, 'dist', 'main.js');
  let name: string = kind;
  if (at >= 0) {
    if (!shared) throw new Error(`${kind} has no other builds: "${spec}"`);
    const where = path.resolve(spec.slice(at + 1));
    const checkout = where.endsWith('.js') ? path.dirname(path.dirname(where)) : where;
    entry = where.endsWith('.js') ? where : path.join(checkout, 'dist', 'main.js');
    name = `${kind}@${path.basename(checkout)}`;
  }
  if (shared && !existsSync(entry)) throw new Error(`${entry} not found: run "npm run build" there first`);
  const all = SCENARIO_NAMES;
  return {
    name,
    kind,
    entry,
    protocols: kind === 'fauxqs' ? ['json'] : ['json', 'query'],
    scenarios:
      kind === 'fastify'
        ? ['send', 'send-batch', 'cold-start']
        : kind === 'floor'
          ? ['send', 'send-batch']
          : kind === 'fauxqs'
            ? all.filter((s) => s !== 'back-pressure')
            : all,
  };
}

export interface LaunchOptions {
  /** CPU list for `taskset -c`, or undefined to leave the server unpinned. */
  cpu: string | undefined;
  /** Extra arguments for the shared-sqs kinds. */
  sharedSqsArgs: readonly string[];
  /** Node/V8 flags for the shared-sqs kinds; undefined: those it ships with. */
  sharedSqsNodeFlags: readonly string[] | undefined;
  /** Let `heapAfterGc()` ask the server for its used heap after a full GC. */
  gcProbe?: boolean;
}

/**
 * Loaded into a server with --expose-gc when the memory scenario asks for heap figures: on SIGUSR2
 * it runs a full GC and prints the used heap, so that no figure counts garbage not yet collected.
 */
const GC_PROBE =
  'data:text/javascript,process.on("SIGUSR2",()=>{globalThis.gc();' +
  'process.stderr.write(`\\nheap-after-gc ${process.memoryUsage().heapUsed}\\n`)})';

export class Server {
  readonly host = '127.0.0.1';

  constructor(
    readonly target: Target,
    private readonly child: Spawned,
    readonly port: number,
    /** shared-sqs's control port (health, readiness, metrics); the data port for the others. */
    readonly controlPort: number,
    readonly startedAtNs: bigint,
    readonly redis: readonly TestRedis[],
  ) {}

  get pid(): number {
    return this.child.proc.pid ?? -1;
  }

  get exited(): boolean {
    return !this.child.alive();
  }

  get hostHeader(): string {
    return `${this.host}:${this.port}`;
  }

  outputTail(lines = 20): string {
    return (this.child.stdout() + this.child.stderr()).split('\n').slice(-lines).join('\n');
  }

  /** Until shared-sqs is ready (its state loaded, with Redis), the others answer /health. */
  async waitReady(timeoutMs = 20_000): Promise<void> {
    const shared = SHARED_SQS_KINDS.includes(this.target.kind);
    await waitForReady(
      this.child.proc,
      this.controlPort,
      timeoutMs,
      () => this.outputTail(),
      shared ? '/ready' : '/health',
    );
  }

  async metrics(): Promise<string | undefined> {
    if (!SHARED_SQS_KINDS.includes(this.target.kind)) return undefined;
    const res = await fetch(`http://${this.host}:${this.controlPort}/metrics`).catch(() => undefined);
    return res?.status === 200 ? res.text() : undefined;
  }

  /** The server's used V8 heap after a full GC (needs `gcProbe`), or null. */
  async heapAfterGc(): Promise<number | null> {
    const seen = (this.child.stderr().match(/heap-after-gc \d+/g) ?? []).length;
    this.child.proc.kill('SIGUSR2');
    for (let i = 0; i < 500; i++) {
      const all = this.child.stderr().match(/heap-after-gc (\d+)/g) ?? [];
      if (all.length > seen) return Number(all[all.length - 1]?.split(' ')[1]);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return null;
  }

  async stop(): Promise<void> {
    await this.child.stop();
    await Promise.all(this.redis.map((r) => r.stop()));
  }
}

let bareFastifyJs: string | undefined;

/**
 * The bare fastify server is TypeScript; run it as plain JavaScript (types stripped once by the
 * esbuild that tsx ships) so that its start-up time is not charged with a TypeScript loader.
 */
function bareFastifyCommand(): string[] {
  const src = path.join(ROOT, 'scripts', 'bare-fastify.ts');
  if (bareFastifyJs === undefined) {
    const out = path.join(ROOT, '.bench', 'bare-fastify.mjs');
    mkdirSync(path.dirname(out), { recursive: true });
    const esbuild = path.join(ROOT, 'node_modules', '.bin', 'esbuild');
    const args = [
      src,
      '--format=esm',
      '--platform=node',
      '--target=node20',
      `--outfile=${out}`,
      '--log-level=error',
    ];
    bareFastifyJs =
      existsSync(esbuild) && spawnSync(esbuild, args, { stdio: 'inherit' }).status === 0 ? out : '';
  }
  return bareFastifyJs ? [bareFastifyJs] : ['--import', 'tsx', src];
}

/** Starts a target's server (and its redis-servers); it is not necessarily listening yet. */
export async function launch(target: Target, opts: LaunchOptions): Promise<Server> {
  const port = await freePort();
  const shared = SHARED_SQS_KINDS.includes(target.kind);
  const controlPort = shared ? await freePort() : port;
  const nodeFlags = opts.gcProbe ? ['--expose-gc', `--import=${GC_PROBE}`] : [];
  // The servers' settings come from the bench alone, not from whatever the shell has set.
  const env: NodeJS.ProcessEnv = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^(SHARED_SQS_|FAUXQS_|REDIS_|NODE_OPTIONS$)/.test(k)),
  );
  env['NODE_ENV'] = 'production';
  const redis: TestRedis[] = [];
  let args: string[];
  if (shared) {
    const redisArgs: string[] = [];
    if (target.kind !== 'shared-sqs') {
      const master = await startRedis({ aof: true });
      redis.push(master);
      redisArgs.push('--redis-addr', `127.0.0.1:${master.port}`);
      if (target.kind !== 'redis') redis.push(await startRedis({ aof: true, replicaOf: master.port }));
      if (target.kind === 'redis-wait1') redisArgs.push('--redis-wait-replicas', '1');
    }
    args = [
      ...nodeFlags,
      ...(opts.sharedSqsNodeFlags ?? productNodeFlags()),
      target.entry,
      ...['--port', String(port), '--control-port', String(controlPort), '--host', '127.0.0.1'],
      ...['--log-level', 'warn', ...redisArgs, ...opts.sharedSqsArgs],
    ];
  } else if (target.kind === 'fauxqs') {
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
  } else {
    args = [
      ...nodeFlags,
      ...bareFastifyCommand(),
      '--port',
      String(port),
      ...(target.kind === 'floor' ? ['--floor'] : []),
    ];
  }
  // taskset execs the server, so child.pid is the server's own pid (what /proc is read for).
  const argv =
    opts.cpu === undefined
      ? [process.execPath, ...args]
      : ['taskset', '-c', opts.cpu, process.execPath, ...args];
  const [command, ...rest] = argv as [string, ...string[]];
  const startedAtNs = process.hrtime.bigint();
  const child = spawnProcess(command, rest, { cwd: ROOT, env });
  return new Server(target, child, port, controlPort, startedAtNs, redis);
}
