/**
 * The e2e harness: starts shared-sqs as users start it (`node dist/main.js ...`, built by
 * `npm run build`), on two free loopback ports, and builds the clients the e2e suites talk through:
 * - `sqsClient(url)`: @aws-sdk/client-sqs, the JSON 1.0 protocol (`X-Amz-Target`);
 * - `awsCli(url, args)`: Debian's aws-cli 2.9 at /usr/bin/aws, the Query protocol (form POST + XML).
 *   The `aws` first on PATH may be pyenv's, whose botocore speaks JSON: never call that one here.
 *
 * Every test file stops what it starts (`after(() => server.stop())`).
 */
import { execFile, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SQSClient } from '@aws-sdk/client-sqs';
import {
  freePort,
  spawnProcess,
  startRedis,
  waitForReady,
  type ExitStatus,
  type Spawned,
  type TestRedis,
} from './process.js';

// Ports and spawning are shared with the bench (test/support/process.ts); these names stay here
// for the tests that import them from this module.
export { freePort, type ExitStatus };

/** The repository root: test/support/ is two levels below it. */
export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const MAIN_JS = fileURLToPath(new URL('../../dist/main.js', import.meta.url));

const HEALTH_DEADLINE_MS = 10_000;
const READY_DEADLINE_MS = 60_000;

export interface RunningServer {
  /** Data plane, e.g. http://127.0.0.1:41234 */
  readonly url: string;
  /** Control plane (/health, /ready, /metrics). */
  readonly controlUrl: string;
  readonly port: number;
  readonly controlPort: number;
  readonly proc: ChildProcess;
  /** Resolves when the process has exited (also when it died by itself). */
  readonly exited: Promise<ExitStatus>;
  /** True while the process has not exited. */
  alive(): boolean;
  /** SIGTERM, then SIGKILL after 5 s; resolves once the process is gone. */
  stop(): Promise<void>;
  /** Everything the process wrote so far, stdout then stderr. */
  logs(): string;
  stdout(): string;
  stderr(): string;
}

export async function twoFreePorts(): Promise<[number, number]> {
  for (;;) {
    const a = await freePort();
    const b = await freePort();
    if (a !== b) return [a, b];
  }
}

/**
 * The environment a server (or a client) runs with: the parent's, less everything that could point
 * it at a real Redis or change its flags behind the test's back (SHARED_SQS_*, REDIS_*).
 */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('SHARED_SQS_') || k.startsWith('REDIS_') || k.startsWith('AWS_')) continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

/**
 * The servers' TMPDIR: one directory per test process, removed when it exits, so that what a server
 * killed with -9 leaves there (a follower's warm-up sockets, src/wiring/warmup.ts) goes with it.
 */
let serverTmp: string | undefined;
function serverTmpDir(): string {
  if (serverTmp === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'ssq-servers-'));
    serverTmp = dir;
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  return serverTmp;
}

/**
 * Spawns `node ...nodeFlags dist/main.js ...args` and collects its output; does not wait for
 * anything.
 */
export function spawnMain(
  args: readonly string[],
  env: Record<string, string> = {},
  nodeFlags: readonly string[] = [],
): Spawned {
  if (!existsSync(MAIN_JS)) {
    throw new Error(`${MAIN_JS} does not exist: run \`npm run build\` first (npm test does)`);
  }
  return spawnProcess(process.execPath, [...nodeFlags, MAIN_JS, ...args], {
    cwd: PROJECT_ROOT,
    env: cleanEnv({ TMPDIR: serverTmpDir(), ...env }),
  });
}

/**
 * Starts `node dist/main.js` and resolves once it answers /health, and (unless `ready` is false, or
 * with --leader-election, where a follower is never ready) once /ready is 200: with Redis the
 * server listens while it loads the state and answers 503 until then.
 */
export async function startServer(
  opts: { args?: string[]; env?: Record<string, string>; ready?: boolean } = {},
): Promise<RunningServer> {
  const [port, controlPort] = await twoFreePorts();
  const args = [
    '--port',
    String(port),
    '--control-port',
    String(controlPort),
    '--host',
    '127.0.0.1',
    '--log-level',
    'warn',
    ...(opts.args ?? []),
  ];
  const child = spawnMain(args, opts.env ?? {});
  const server: RunningServer = {
    url: `http://127.0.0.1:${port}`,
    controlUrl: `http://127.0.0.1:${controlPort}`,
    port,
    controlPort,
    proc: child.proc,
    exited: child.exited,
    alive: child.alive,
    stop: () => child.stop(),
    logs: () => child.stdout() + child.stderr(),
    stdout: child.stdout,
    stderr: child.stderr,
  };
  const output = (): string =>
    `args: ${args.join(' ')}\nstderr:\n${child.stderr()}\nstdout:\n${child.stdout().slice(-4000)}`;
  try {
    await waitForReady(child.proc, controlPort, HEALTH_DEADLINE_MS, output, '/health');
    if (opts.ready !== false && !args.includes('--leader-election')) {
      await waitForReady(child.proc, controlPort, READY_DEADLINE_MS, output);
    }
  } catch (e) {
    await child.stop();
    throw e;
  }
  return server;
}

/**
 * Waits (bounded) until GET /ready answers 200: the state is loaded and the instance serves.
 * Throws at once if the process exits meanwhile, with its output.
 */
export async function waitReady(s: RunningServer, timeoutMs: number): Promise<void> {
  await waitForReady(
    s.proc,
    s.controlPort,
    timeoutMs,
    () => `stderr:\n${s.stderr()}\nstdout:\n${s.stdout().slice(-4000)}`,
  );
}

/** A server started by {@link serversOnRedis}, with its JSON client. */
export interface ServedOnRedis {
  readonly server: RunningServer;
  readonly sqs: SQSClient;
}

/**
 * One redis-server (AOF on) for a test file, and the servers its tests start on it (`serve`, each
 * with a JSON client): all stopped after the file.
 */
export function serversOnRedis(hooks: {
  before(fn: () => Promise<void>): void;
  after(fn: () => Promise<void>): void;
}): {
  readonly redis: () => TestRedis;
  serve(args: string[], opts?: { ready?: boolean }): Promise<ServedOnRedis>;
} {
  let redis: TestRedis | undefined;
  const started: ServedOnRedis[] = [];
  hooks.before(async () => {
    redis = await startRedis({ aof: true });
  });
  hooks.after(async () => {
    for (const s of started) s.sqs.destroy();
    for (const s of started) await s.server.stop();
    await redis?.stop();
  });
  return {
    redis: () => {
      if (redis === undefined) throw new Error('redis-server is started by the before hook');
      return redis;
    },
    async serve(args, opts = {}) {
      const server = await startServer({ args, ...opts });
      const served = { server, sqs: sqsClient(server.url) };
      started.push(served);
      return served;
    },
  };
}

/** JSON protocol: @aws-sdk/client-sqs against `url`, dummy credentials, no retries (errors surface as they are). */
export function sqsClient(url: string): SQSClient {
  return new SQSClient({
    region: 'us-east-1',
    endpoint: url,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts: 1,
  });
}

// ---------------------------------------------------------------------------------------------
// Debian's aws-cli (Query protocol)
// ---------------------------------------------------------------------------------------------

export const DEBIAN_AWS = '/usr/bin/aws';
export const DEBIAN_PYTHON = '/usr/bin/python3';

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** stdout parsed, when it is JSON. */
  readonly json?: unknown;
  /** From "An error occurred (<code>) when calling the X operation", when the call failed. */
  readonly errorCode?: string;
  /** The service's message the CLI printed after that line's colon, when the call failed. */
  readonly errorMessage?: string;
  /** The HTTP status of the last response, when called with `{ debug: true }`. */
  readonly status?: number;
}

/** Environment for the Debian Python tools: dummy credentials, no config files, no pager. */
export function awsToolEnv(): NodeJS.ProcessEnv {
  const env = cleanEnv({
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_CONFIG_FILE: '/dev/null',
    AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
    AWS_PAGER: '',
    // One attempt: a 5xx must surface, not be retried away.
    AWS_MAX_ATTEMPTS: '1',
    AWS_RETRY_MODE: 'standard',
    PYTHONNOUSERSITE: '1',
  });
  // pyenv's variables would point /usr/bin/python3 at another interpreter's packages.
  delete env['PYTHONPATH'];
  delete env['PYTHONHOME'];
  return env;
}

/**
 * `/usr/bin/aws --endpoint-url URL --region us-east-1 --output json sqs ...args`.
 * With `debug`, `--debug` is added and the HTTP status of the last response is read from its log.
 */
export async function awsCli(
  url: string,
  args: string[],
  opts: { debug?: boolean } = {},
): Promise<CliResult> {
  const argv = [
    '--endpoint-url',
    url,
    '--region',
    'us-east-1',
    '--output',
    'json',
    ...(opts.debug === true ? ['--debug'] : []),
    'sqs',
    ...args,
  ];
  const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>(
    (resolve) => {
      execFile(
        DEBIAN_AWS,
        argv,
        { env: awsToolEnv(), timeout: 30_000, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
        (error, out, err) => {
          const exitCode = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
          resolve({ code: exitCode, stdout: out, stderr: err });
        },
      );
    },
  );
  let json: unknown;
  if (stdout.trim() !== '') {
    try {
      json = JSON.parse(stdout) as unknown;
    } catch {
      json = undefined;
    }
  }
  const error = /An error occurred \(([^)]+)\) when calling the \w+ operation(?:(?: \([^)]*\))?: (.*))?/.exec(
    stderr,
  );
  const errorCode = error?.[1];
  const errorMessage = error?.[2];
  let status: number | undefined;
  if (opts.debug === true) {
    // urllib3 logs every response: ... "POST / HTTP/1.1" 400 290
    for (const m of stderr.matchAll(/"(?:POST|GET) \S* HTTP\/1\.1" (\d{3})/g)) status = Number(m[1]);
  }
  return {
    code,
    stdout,
    stderr,
    ...(json === undefined ? {} : { json }),
    ...(errorCode === undefined ? {} : { errorCode }),
    ...(errorMessage === undefined ? {} : { errorMessage }),
    ...(status === undefined ? {} : { status }),
  };
}

/** The result of a CLI call that must succeed, with a readable failure otherwise. */
export async function awsCliOk(url: string, args: string[]): Promise<Record<string, unknown>> {
  const res = await awsCli(url, args);
  if (res.code !== 0) {
    throw new Error(`aws sqs ${args.join(' ')} failed (exit ${res.code}):\n${res.stderr}`);
  }
  if (res.json === undefined) return {};
  if (typeof res.json !== 'object' || res.json === null) throw new Error(`not a JSON object: ${res.stdout}`);
  return res.json as Record<string, unknown>;
}

// ---------------------------------------------------------------------------------------------
// Events the tests wait for instead of sleeping
// ---------------------------------------------------------------------------------------------

/**
 * How many ReceiveMessage calls are parked in a long poll right now, read from the control plane's
 * Prometheus page. Returns undefined when no such gauge is published.
 */
export async function longPollWaiters(server: { controlUrl: string }): Promise<number | undefined> {
  const res = await fetch(`${server.controlUrl}/metrics`, { signal: AbortSignal.timeout(2000) });
  const text = await res.text();
  if (res.status !== 200) return undefined;
  let total: number | undefined;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^(\S*long_?poll\S*waiter\S*|\S*waiter\S*long_?poll\S*)\s+([0-9.eE+-]+)$/i.exec(line.trim());
    if (m?.[2] !== undefined) total = (total ?? 0) + Number(m[2]);
  }
  return total;
}

/**
 * Resolves once at least `n` long polls are parked on the server (polls /metrics; bounded).
 * This is how a test knows its ReceiveMessage is waiting before it sends or signals.
 */
export async function waitForLongPollWaiters(
  server: { controlUrl: string },
  n: number,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: number | undefined;
  for (;;) {
    last = await longPollWaiters(server);
    if (last === undefined) {
      throw new Error('the control plane /metrics publishes no long-poll waiters gauge');
    }
    if (last >= n) return;
    if (Date.now() > deadline) {
      throw new Error(`fewer than ${n} long polls parked after ${timeoutMs} ms (last seen: ${last})`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A queue name unique to this process and call, within SQS's 80 [A-Za-z0-9_-]. */
let nameCounter = 0;
export function uniqueName(prefix: string): string {
  nameCounter++;
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${nameCounter}`.slice(0, 80);
}

/** A tenant with one key, as a test's `--config` file names it. */
export interface TestTenant {
  readonly name: string;
  readonly accountId: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** Queues created for it at start. */
  readonly queues?: readonly string[];
}

/**
 * A `--config` file (docs/config.schema.json) of `tenants`, each with its one key, in a directory
 * of its own; `remove()` deletes it (call it in `after`).
 */
export function tenantsConfigFile(tenants: readonly TestTenant[]): { path: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'ssq-tenants-'));
  const path = join(dir, 'config.json');
  writeFileSync(
    path,
    JSON.stringify({
      tenants: tenants.map((t) => ({
        name: t.name,
        accountId: t.accountId,
        keys: [{ accessKeyId: t.accessKeyId, secretAccessKey: t.secretAccessKey }],
        ...(t.queues === undefined ? {} : { queues: t.queues.map((name) => ({ name })) }),
      })),
    }),
  );
  return { path, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
