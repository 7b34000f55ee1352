/**
 * Redis for tests: `startRedis` (from process.ts) gives each test file a redis-server of its own;
 * call its `stop()` in `after()`. Each test takes its own key prefix (`uniquePrefix()`), so tests
 * sharing a server never meet. Sentinels, key listing and Redis's work per message (for the bench)
 * live here.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort, track } from './process.js';

// Redis is started one way, for tests and bench alike: test/support/process.ts.
export { startRedis, type TestRedis } from './process.js';

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

/** The sections of INFO that `redisWorkPerMessage` reads. */
export const REDIS_WORK_INFO = ['cpu', 'commandstats'] as const;

/**
 * Redis's work per message between two `INFO cpu commandstats` replies, `messages` apart: CPU µs
 * (used_cpu_user + used_cpu_sys, every thread of the redis-server); calls, the round trips a
 * server makes (EVALSHA and EVAL, the writes, and WAIT/WAITAOF after them); and commands, every one
 * Redis ran, those the scripts ran included (but not INFO, nor the replicas' REPLCONF). Null for
 * no messages.
 */
export function redisWorkPerMessage(before: string, after: string, messages: number) {
  const per = (re: RegExp, scale = 1): number | null => {
    const sum = (info: string): number => [...info.matchAll(re)].reduce((s, m) => s + Number(m[1]), 0);
    return messages > 0 ? ((sum(after) - sum(before)) * scale) / messages : null;
  };
  return {
    redisCpuUsPerMsg: per(/^used_cpu_(?:user|sys):([\d.]+)/gm, 1e6),
    redisCallsPerMsg: per(/^cmdstat_(?:evalsha|eval|wait|waitaof):calls=(\d+)/gm),
    redisCommandsPerMsg: per(/^cmdstat_(?!info:|replconf:)[^:]+:calls=(\d+)/gm),
  };
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
