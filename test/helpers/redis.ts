/**
 * A real redis-server for one test file: its own process on a free loopback port, its own data
 * directory, never the machine's Redis on 6379. With `aof` (the default) it runs with
 * `appendonly yes` + `appendfsync always`, so `kill9()` + `restart()` keeps every write Redis
 * acknowledged. `stop()` kills it and removes the directory; call it in `after()`.
 *
 * Each test takes its own key prefix (`uniquePrefix()`), so tests sharing a server never meet.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { track } from './children.js';
import { freePort } from './server.js';

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

export async function startRedis(opts: { aof?: boolean } = {}): Promise<TestRedis> {
  const aof = opts.aof ?? true;
  const dir = mkdtempSync(join(tmpdir(), 'ssq-redis-'));
  let port = 0;
  let proc: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const launch = async (): Promise<void> => {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir];
    args.push(...(aof ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']));
    const p = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    track(p);
    proc = p;
    let out = '';
    exited = new Promise((resolve) => p.once('exit', () => resolve()));
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: string): void => {
        out += chunk;
        if (out.includes('Ready to accept connections')) {
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

let prefixCounter = 0;
/** A key prefix with a hash tag, unique to this process and call: `{t<pid>-<n>}:`. */
export function uniquePrefix(): string {
  prefixCounter++;
  return `{t${process.pid}-${Date.now().toString(36)}-${prefixCounter}}:`;
}

/** Every key under a prefix (SCAN: for checking that nothing leaked, never in the server). */
export async function keysUnder(client: Redis, prefix: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  // A hash tag holds `{` and `}`, which MATCH reads literally; `*`, `?`, `[` and `\` need escaping.
  const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    out.push(...keys);
    cursor = next;
  } while (cursor !== '0');
  return out.sort();
}
