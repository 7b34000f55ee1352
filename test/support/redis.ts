/**
 * A real redis-server for one test file: its own process on a free loopback port, its own data
 * directory, never the machine's Redis on 6379. With `aof` (the default) it runs with
 * `appendonly yes` + `appendfsync always`, so `kill9()` + `restart()` keeps every write Redis
 * acknowledged. `stop()` kills it and removes the directory; call it in `after()`.
 *
 * Each test takes its own key prefix (`uniquePrefix()`), so tests sharing a server never meet.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

/**
 * `replicaOf`: the port of a master on 127.0.0.1 to replicate; resolves once the first sync
 * finished (a restart() of it waits for that again).
 */
export async function startRedis(opts: { aof?: boolean; replicaOf?: number } = {}): Promise<TestRedis> {
  const aof = opts.aof ?? true;
  const ready =
    opts.replicaOf === undefined
      ? 'Ready to accept connections'
      : 'MASTER <-> REPLICA sync: Finished with success';
  const dir = mkdtempSync(join(tmpdir(), 'ssq-redis-'));
  let port = 0;
  let proc: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const launch = async (): Promise<void> => {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir];
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

export interface TestSentinels {
  readonly ports: readonly number[];
  /** The master's port as the first Sentinel names it now. */
  masterPort(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * `count` Sentinels (`redis-server --sentinel`, no redis-sentinel package needed) watching the
 * master `name` on 127.0.0.1:`masterPort` with the given quorum; down after 1 s. Resolves once
 * each has found the replicas and the other Sentinels, so that a failover can be voted at once.
 */
export async function startSentinels(
  name: string,
  masterPort: number,
  opts: { count: number; quorum: number; replicas: number },
): Promise<TestSentinels> {
  const dir = mkdtempSync(join(tmpdir(), 'ssq-sentinels-'));
  const procs: ChildProcess[] = [];
  const ports: number[] = [];
  const clients: Redis[] = [];
  const stop = async (): Promise<void> => {
    for (const c of clients) c.disconnect();
    await Promise.all(
      procs.map(async (p) => {
        if (p.exitCode !== null || p.signalCode !== null) return;
        const gone = new Promise((r) => p.once('exit', r));
        p.kill('SIGKILL');
        await gone;
      }),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const started: Promise<void>[] = [];
    for (let i = 0; i < opts.count; i++) {
      const port = await freePort();
      ports.push(port);
      const conf = join(dir, `sentinel-${i}.conf`);
      writeFileSync(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${name} 127.0.0.1 ${masterPort} ${opts.quorum}`,
          `sentinel down-after-milliseconds ${name} 1000`,
          `sentinel failover-timeout ${name} 5000`,
          '',
        ].join('\n'),
      );
      const p = spawn('redis-server', [conf, '--sentinel'], { stdio: ['ignore', 'pipe', 'pipe'] });
      track(p);
      procs.push(p);
      let out = '';
      started.push(
        new Promise<void>((resolve, reject) => {
          const found = (what: RegExp): number => out.match(what)?.length ?? 0;
          p.stdout?.setEncoding('utf8').on('data', (c: string) => {
            out += c;
            if (found(/\+slave slave/g) >= opts.replicas && found(/\+sentinel sentinel/g) >= opts.count - 1) {
              resolve();
            }
          });
          p.stderr?.resume();
          p.once('exit', (code) => reject(new Error(`sentinel ${i} exited (${code}):\n${out}`)));
        }),
      );
    }
    await Promise.all(started);
  } catch (e) {
    await stop();
    throw e;
  }
  const first = new Redis({ host: '127.0.0.1', port: ports[0] ?? 0, maxRetriesPerRequest: 1 });
  first.on('error', () => undefined);
  clients.push(first);
  return {
    ports,
    masterPort: async () => {
      const addr = (await first.call('SENTINEL', 'get-master-addr-by-name', name)) as string[];
      return Number(addr[1]);
    },
    stop,
  };
}
