/**
 * The child processes tests and the bench start, one way each: free ports, spawning a program
 * with its output kept (`spawnProcess`: shared-sqs, bare fastify, fauxqs, nginx), waiting for an
 * HTTP endpoint to answer 200, starting a redis-server (`startRedis`), and the registry that kills
 * every child when the parent exits (`track`). scripts/bench.ts imports this module; nothing here
 * imports scripts/.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

/** What a finished command printed, and its exit code (-1 when it did not exit with one: killed, not found). */
export interface RunResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `file` to the end (killed after `timeout` ms) and resolves with its output; never rejects. */
export function runToEnd(
  file: string,
  args: readonly string[],
  opts: { env: NodeJS.ProcessEnv; timeout: number },
): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(file, args, { ...opts, encoding: 'utf8' }, (error, stdout, stderr) => {
      resolve({
        code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1,
        stdout,
        stderr,
      });
    });
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * The lowest port of the kernel's ephemeral range (ip_local_port_range): outgoing connections take
 * their local port from that range, so a port picked there with listen(0) can be taken by some
 * client's connection before the server binds it (seen in CI: EADDRINUSE on a port listen(0) gave).
 */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 12_000) return low;
  } catch {
    // not Linux: fall through
  }
  return 32_768;
}
const PORT_LOW = 10_000;
const PORT_HIGH = ephemeralLow();

/** Resolves true when 127.0.0.1:`port` could be bound (and released it again). */
async function bindable(port: number): Promise<boolean> {
  const server = net.createServer();
  const ok = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => resolve(true));
  });
  if (ok) await new Promise<void>((resolve) => server.close(() => resolve()));
  return ok;
}

/**
 * A free TCP port on 127.0.0.1, chosen at random below the ephemeral range, where no outgoing
 * connection takes its port; another process picking the same one is left to chance (1 in ~20k)
 * and to the starters' retries.
 */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 1000; i++) {
    const port = PORT_LOW + Math.floor(Math.random() * (PORT_HIGH - PORT_LOW));
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port in ${PORT_LOW}-${PORT_HIGH - 1} after 1000 tries`);
}

/**
 * Every child a process registers here (servers, redis-server, nginx) is killed when that process
 * exits, however it exits, SIGTERM and SIGINT included: a test file that fails half-way or is
 * ended by the runner's --test-timeout, or a bench stopped with Ctrl-C, never leaves one running.
 * A leftover child holds its pipes open and keeps a test file alive: CI once ran into its 90-minute
 * limit that way. (Not --test-force-exit: on Node 20 it ends a file before all of its suites have
 * run, silently.)
 */
const live = new Map<ChildProcess, NodeJS.Signals>();
let hooked = false;

/**
 * Registers `proc` until it exits. `lastWord` is what it gets if this process exits first:
 * SIGKILL by default; nginx takes SIGTERM so that its master takes its workers down with it.
 */
export function track(proc: ChildProcess, lastWord: NodeJS.Signals = 'SIGKILL'): void {
  if (!hooked) {
    hooked = true;
    // The runner ends a test file that overran --test-timeout with SIGTERM, which skips 'exit'
    // handlers unless the file turns it into an exit of its own.
    process.once('SIGTERM', () => process.exit(143));
    process.once('SIGINT', () => process.exit(130));
    // 'exit' handlers run synchronously; kill() is synchronous, which is all that is needed.
    process.once('exit', () => {
      for (const [child, sig] of live) {
        try {
          child.kill('SIGCONT');
          child.kill(sig);
        } catch {
          // already gone
        }
      }
    });
  }
  live.set(proc, lastWord);
  proc.once('exit', () => live.delete(proc));
}

export interface ExitStatus {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface Spawned {
  readonly proc: ChildProcess;
  /** Resolves once the process has exited and its pipes are drained. */
  readonly exited: Promise<ExitStatus>;
  readonly alive: () => boolean;
  readonly stdout: () => string;
  readonly stderr: () => string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
  readonly stop: (graceMs?: number) => Promise<void>;
}

/** Spawns `command args`, tracked, with its output kept; waits for nothing. */
export function spawnProcess(
  command: string,
  args: readonly string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Spawned {
  const proc = spawn(command, args, {
    ...(opts.cwd === undefined ? {} : { cwd: opts.cwd }),
    ...(opts.env === undefined ? {} : { env: opts.env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  track(proc);
  let out = '';
  let err = '';
  let done = false;
  proc.stdout?.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<ExitStatus>((resolve) => {
    proc.once('exit', (code, signal) => {
      done = true;
      // 'exit' can come before the pipes are drained; 'close' comes after both.
      proc.once('close', () => resolve({ code, signal }));
    });
    proc.once('error', (e) => {
      done = true;
      err += `spawn error: ${e.message}\n`;
      resolve({ code: null, signal: null });
    });
  });
  const stop = async (graceMs = 5_000): Promise<void> => {
    if (done) return void (await exited);
    proc.kill('SIGTERM');
    const timer = setTimeout(() => {
      if (!done) proc.kill('SIGKILL');
    }, graceMs);
    await exited;
    clearTimeout(timer);
  };
  return { proc, exited, alive: () => !done, stdout: () => out, stderr: () => err, stop };
}

/**
 * Polls GET http://127.0.0.1:`port``path` until it answers 200; throws with `output()` when the
 * process exits first or `timeoutMs` passes.
 */
export async function waitForReady(
  proc: { readonly exitCode: number | null; readonly signalCode?: NodeJS.Signals | null },
  port: number,
  timeoutMs: number,
  output: () => string,
  path = '/ready',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: string;
  for (;;) {
    if (proc.exitCode !== null || (proc.signalCode ?? null) !== null) {
      throw new Error(
        `the process exited (code ${proc.exitCode}, signal ${proc.signalCode ?? null}) before ${path} answered 200:\n${output()}`,
      );
    }
    try {
      const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      if (res.status === 200) return;
      last = `answered ${res.status}`;
    } catch (e) {
      last = (e as Error).message;
    }
    if (Date.now() > deadline) {
      throw new Error(`GET ${path} not 200 within ${timeoutMs} ms (${last}):\n${output()}`);
    }
    await sleep(10);
  }
}

/**
 * The Node flags shared-sqs is started with as shipped: those on bin/shared-sqs.js's shebang line
 * (`npm start` and the systemd unit carry the same; test/unit/deploy-kit.test.ts checks).
 */
export function productNodeFlags(): string[] {
  const bin = new URL('../../bin/shared-sqs.js', import.meta.url);
  const shebang = readFileSync(bin, 'utf8').split('\n', 1)[0] ?? '';
  const m = /^#!\/usr\/bin\/env -S node((?: --\S+)*)$/.exec(shebang);
  if (m === null) throw new Error(`bin/shared-sqs.js: unexpected first line ${JSON.stringify(shebang)}`);
  return (m[1] ?? '').split(' ').filter(Boolean);
}

export interface TestRedis {
  readonly url: string;
  readonly port: number;
  readonly dir: string;
  /** A plain client (offline queue on) for the test's own checks; closed by stop(). */
  readonly client: Redis;
  /** SIGKILL, resolves once the process is gone. */
  kill9(): Promise<void>;
  /** SIGSTOP / SIGCONT: Redis stops answering but its connections stay open. */
  pause(): void;
  resume(): void;
  /** Starts it again on the same port and directory (reloading the AOF); resolves when it accepts. */
  restart(): Promise<void>;
  stop(): Promise<void>;
  alive(): boolean;
}

/**
 * A real redis-server of its own: a free loopback port, its own data directory, never the
 * machine's Redis on 6379. With `aof` (the default) it runs with `appendonly yes` +
 * `appendfsync always`, so `kill9()` + `restart()` keeps every write Redis acknowledged.
 * `replicaOf`: the port of a master on 127.0.0.1 to replicate; resolves once the first sync
 * finished (a restart() of it waits for that again). `rdb`: an RDB file copied into the directory
 * as `dump.rdb` before the start, so Redis begins with what it holds (use it with `aof: false`:
 * with AOF on, Redis would load the empty AOF instead). `stop()` kills it and removes the directory.
 */
export async function startRedis(
  opts: { aof?: boolean; replicaOf?: number; rdb?: string } = {},
): Promise<TestRedis> {
  const aof = opts.aof ?? true;
  const ready =
    opts.replicaOf === undefined
      ? 'Ready to accept connections'
      : 'MASTER <-> REPLICA sync: Finished with success';
  const dir = mkdtempSync(join(tmpdir(), 'ssq-redis-'));
  if (opts.rdb !== undefined) copyFileSync(opts.rdb, join(dir, 'dump.rdb'));
  let port = 0;
  let proc: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const launch = async (): Promise<void> => {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir];
    args.push('--dbfilename', 'dump.rdb');
    args.push(...(aof ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']));
    if (opts.replicaOf !== undefined) args.push('--replicaof', '127.0.0.1', String(opts.replicaOf));
    const p = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    track(p);
    proc = p;
    let out = '';
    exited = new Promise((resolve) => p.once('exit', () => resolve()));
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: string): void => {
        out += chunk;
        if (out.includes(ready)) {
          p.stdout?.off('data', onData);
          p.stdout?.resume();
          resolve();
        }
      };
      p.stdout?.setEncoding('utf8').on('data', onData);
      p.stderr?.resume();
      p.once('exit', (code, signal) =>
        reject(
          new Error(`redis-server exited (code ${code}, signal ${signal}) before it was ready:\n${out}`),
        ),
      );
      p.once('error', reject);
    });
  };

  // The port is free when we look, but another process may take it before redis-server binds.
  for (let attempt = 0; ; attempt++) {
    port = await freePort();
    try {
      await launch();
      break;
    } catch (e) {
      if (attempt >= 4) {
        rmSync(dir, { recursive: true, force: true });
        throw e;
      }
    }
  }

  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  await client.connect();

  const alive = (): boolean => proc !== undefined && proc.exitCode === null && proc.signalCode === null;
  const kill9 = async (): Promise<void> => {
    if (alive()) proc?.kill('SIGKILL');
    await exited;
  };
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    dir,
    client,
    kill9,
    pause: () => void proc?.kill('SIGSTOP'),
    resume: () => void proc?.kill('SIGCONT'),
    restart: async () => {
      await kill9();
      await launch();
    },
    stop: async () => {
      client.disconnect();
      if (alive()) {
        proc?.kill('SIGCONT');
        proc?.kill('SIGKILL');
      }
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
    alive,
  };
}
