/**
 * The failover harness: one private redis-server (AOF always), two shared-sqs processes with
 * leader election on fixed free loopback ports (so that a restarted instance comes back where
 * nginx expects it), and Debian's nginx in front of them, configured from nginx/shared-sqs.conf
 * with only the addresses changed, run in the foreground from a temporary prefix (never as the
 * system's service). Everything listens on 127.0.0.1; `stop()` ends everything it started.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { Redis } from 'ioredis';
import { lockKeys } from '../../src/ha/lock.js';
import { layoutFor } from '../../src/persistence/layout.js';
import { startRedis, uniquePrefix, type TestRedis } from '../support/redis.js';
import { track } from '../support/process.js';
import { freePort, spawnMain, type ExitStatus } from '../support/server.js';

/** Found on PATH, where test/support/requires.ts looks for it. */
export const NGINX = 'nginx';
export const NGINX_CONF = fileURLToPath(new URL('../../nginx/shared-sqs.conf', import.meta.url));
/** The active/active layout's (docs/operations.md, "Active/active"). */
export const NGINX_ACTIVE_ACTIVE_CONF = fileURLToPath(
  new URL('../../nginx/shared-sqs-active-active.conf', import.meta.url),
);

export interface HaTiming {
  readonly ttlMs: number;
  readonly intervalMs: number;
}

/** Short enough for the suite to finish in minutes; ttl > 3 x interval as the server requires. */
export const FAST: HaTiming = { ttlMs: 2000, intervalMs: 500 };

/** The flags every instance of a failover cluster shares: its Redis, its lease timing, info logs. */
export function haArgs(redisPort: number, prefix: string, timing: HaTiming): string[] {
  return [
    '--redis-addr',
    `127.0.0.1:${redisPort}`,
    '--redis-prefix',
    prefix,
    '--leader-ttl',
    `${timing.ttlMs}ms`,
    '--leader-interval',
    `${timing.intervalMs}ms`,
    '--no-queue-deleted-recently',
    '--log-level',
    'info',
  ];
}

export interface LeaderView {
  readonly instanceId: string;
  readonly state: string;
  readonly leading: boolean;
  readonly serving: boolean;
  readonly epoch: number | null;
  readonly takeovers: number;
  readonly fencedWrites: number;
  readonly lastEnd: { reason: string; at: string } | null;
  readonly lock: { holder: string | null };
}

export const ADMIN_TOKEN = 'failover-suite-admin-token';

export class Instance {
  proc: ChildProcess | undefined;
  exited: Promise<ExitStatus> = Promise.resolve({ code: 0, signal: null });
  private out = '';
  private alive = false;
  /** Every process this instance ran, oldest first: its logs, for failure messages and parsing. */
  readonly history: string[] = [];

  constructor(
    readonly name: string,
    readonly port: number,
    readonly controlPort: number,
    private readonly args: readonly string[],
    /** Node's own flags, before dist/main.js. */
    private readonly nodeFlags: readonly string[] = [],
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  get controlUrl(): string {
    return `http://127.0.0.1:${this.controlPort}`;
  }
  get pid(): number | undefined {
    return this.proc?.pid;
  }
  get running(): boolean {
    return this.alive;
  }

  /** The current process's output so far (JSON log lines). */
  logs(): string {
    return this.out;
  }

  /** Spawns the process; resolves once /health answers (bounded). */
  async start(): Promise<void> {
    if (this.alive) throw new Error(`${this.name} is running`);
    const child = spawnMain(
      [
        '--port',
        String(this.port),
        '--control-port',
        String(this.controlPort),
        '--host',
        '127.0.0.1',
        ...this.args,
      ],
      { SHARED_SQS_ADMIN_TOKEN: ADMIN_TOKEN },
      this.nodeFlags,
    );
    this.proc = child.proc;
    this.alive = true;
    this.out = '';
    const slot = this.history.push('') - 1;
    const collect = (): void => {
      this.out = child.stdout() + child.stderr();
      this.history[slot] = this.out;
    };
    child.proc.stdout?.on('data', collect);
    child.proc.stderr?.on('data', collect);
    this.exited = child.exited.then((s) => {
      this.alive = false;
      collect();
      return s;
    });
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (!this.alive) {
        throw new Error(`${this.name} exited before /health answered:\n${this.out}`);
      }
      try {
        const res = await fetch(`${this.controlUrl}/health`, { signal: AbortSignal.timeout(1000) });
        await res.arrayBuffer();
        if (res.status === 200) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`${this.name}: no /health within 15 s:\n${this.out}`);
      await pause(25);
    }
  }

  signal(sig: NodeJS.Signals): void {
    if (this.alive) this.proc?.kill(sig);
  }

  async kill9(): Promise<void> {
    this.signal('SIGCONT');
    this.signal('SIGKILL');
    await this.exited;
  }

  /** SIGTERM; resolves with the exit status (SIGKILL after 15 s). */
  async terminate(): Promise<ExitStatus> {
    if (!this.alive) return this.exited;
    this.signal('SIGCONT');
    this.signal('SIGTERM');
    const timer = setTimeout(() => this.signal('SIGKILL'), 15_000);
    const status = await this.exited;
    clearTimeout(timer);
    return status;
  }

  async ready(): Promise<boolean> {
    try {
      const res = await fetch(`${this.controlUrl}/ready`, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      return res.status === 200;
    } catch {
      return false;
    }
  }

  async leader(): Promise<LeaderView> {
    const res = await fetch(`${this.controlUrl}/admin/leader`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      signal: AbortSignal.timeout(3000),
    });
    if (res.status !== 200) throw new Error(`${this.name} /admin/leader: ${res.status} ${await res.text()}`);
    return (await res.json()) as LeaderView;
  }

  async stepDown(): Promise<{ status: number; body: unknown }> {
    const res = await fetch(`${this.controlUrl}/admin/leader/step-down`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      signal: AbortSignal.timeout(20_000),
    });
    return { status: res.status, body: await res.json() };
  }

  async metric(name: string): Promise<number | undefined> {
    const res = await fetch(`${this.controlUrl}/metrics`, { signal: AbortSignal.timeout(3000) });
    const text = await res.text();
    const m = new RegExp(`^${name.replace(/[{}"=]/g, '\\$&')} ([0-9.eE+-]+)$`, 'm').exec(text);
    return m === null ? undefined : Number(m[1]);
  }

  /** The `ms` of the last "state loaded from Redis" line of the current process. */
  lastLoadMs(): number | undefined {
    let ms: number | undefined;
    for (const line of this.out.split('\n')) {
      if (!line.includes('state loaded from Redis')) continue;
      try {
        ms = (JSON.parse(line) as { ms?: number }).ms;
      } catch {
        // not JSON
      }
    }
    return ms;
  }

  /** Resident memory of the process in bytes (Linux /proc). */
  rss(): number {
    const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
    const kb = /VmRSS:\s+(\d+) kB/.exec(status)?.[1];
    return Number(kb) * 1024;
  }
}

export interface Nginx {
  readonly url: string;
  readonly port: number;
  readonly dir: string;
  /** The rendered configuration file (the http{} snippet) and the main file including it. */
  readonly snippet: string;
  readonly mainConf: string;
  errorLog(): string;
  accessLog(): string;
  stop(): Promise<void>;
}

/**
 * nginx/shared-sqs.conf (or `conf`) with the test's addresses: `listen` on a free loopback port,
 * the two `server` lines of the upstream pointed at the instances (more instances: more lines like
 * the last). Nothing else is changed.
 */
export function renderNginxSnippet(
  listenPort: number,
  upstreams: readonly number[],
  conf: string = NGINX_CONF,
): string {
  const text = readFileSync(conf, 'utf8');
  const lines = [...text.matchAll(/^(\s*)server\s+10\.0\.0\.\d+:4100(.*);$/gm)].length;
  let i = 0;
  const rendered = text
    .replace(/^(\s*)listen\s+80;/m, `$1listen 127.0.0.1:${listenPort};`)
    .replace(/^(\s*)server\s+10\.0\.0\.\d+:4100(.*);$/gm, (_m, indent: string, rest: string) => {
      const port = upstreams[i++];
      if (port === undefined) throw new Error('more server lines than upstreams');
      // The last server line is repeated, with its options, for upstreams beyond the file's
      // (active/active: docs/operations.md puts every instance in the upstream).
      const more = i === lines ? upstreams.slice(i) : [];
      i += more.length;
      return [port, ...more].map((p) => `${indent}server 127.0.0.1:${p}${rest};`).join('\n');
    });
  if (i !== upstreams.length) throw new Error(`${conf} has ${i} upstream servers`);
  if (!rendered.includes(`listen 127.0.0.1:${listenPort};`)) throw new Error('no `listen 80;` to render');
  return rendered;
}

/** A main nginx.conf around the snippet: everything that would write goes to `dir`. */
export function renderNginxMain(dir: string, snippetPath: string): string {
  return [
    'worker_processes 1;',
    `error_log ${dir}/error.log info;`,
    'events { worker_connections 1024; }',
    'http {',
    `  access_log ${dir}/access.log;`,
    `  client_body_temp_path ${dir}/tmp/body;`,
    `  proxy_temp_path ${dir}/tmp/proxy;`,
    `  fastcgi_temp_path ${dir}/tmp/fastcgi;`,
    `  uwsgi_temp_path ${dir}/tmp/uwsgi;`,
    `  scgi_temp_path ${dir}/tmp/scgi;`,
    `  include ${snippetPath};`,
    '}',
    '',
  ].join('\n');
}

export function run(
  cmd: string,
  args: readonly string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: 30_000, encoding: 'utf8' }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      resolve({ code, stdout, stderr });
    });
  });
}

/** `nginx -t` on the rendered config must pass before nginx runs. */
export async function startNginx(upstreams: readonly number[], conf: string = NGINX_CONF): Promise<Nginx> {
  const dir = mkdtempSync(join(tmpdir(), 'ssq-nginx-'));
  // nginx's workers may run as another user (nobody, www-data): they buffer bodies in tmp/.
  chmodSync(dir, 0o755);
  mkdirSync(join(dir, 'tmp'), { mode: 0o777 });
  chmodSync(join(dir, 'tmp'), 0o777);
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const snippet = join(dir, 'shared-sqs.conf');
    const mainConf = join(dir, 'nginx.conf');
    writeFileSync(snippet, renderNginxSnippet(port, upstreams, conf));
    writeFileSync(mainConf, renderNginxMain(dir, snippet));
    const global = `pid ${dir}/nginx.pid;`;
    const check = await run(NGINX, ['-t', '-q', '-p', dir, '-c', mainConf, '-g', global]);
    if (check.code !== 0) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`nginx -t failed on the rendered ${conf}:\n${check.stderr}`);
    }
    const proc = spawn(NGINX, ['-p', dir, '-c', mainConf, '-g', `daemon off; ${global}`], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    track(proc, 'SIGTERM');
    let stderr = '';
    proc.stderr?.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    let up = false;
    for (let i = 0; i < 200 && proc.exitCode === null; i++) {
      if (await accepts(port)) {
        up = true;
        break;
      }
      await pause(25);
    }
    if (!up) {
      proc.kill('SIGKILL');
      await exited;
      if (attempt < 3 && /in use/.test(stderr + readSafe(join(dir, 'error.log')))) continue;
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`nginx did not start:\n${stderr}\n${readSafe(join(dir, 'error.log'))}`);
    }
    return {
      url: `http://127.0.0.1:${port}`,
      port,
      dir,
      snippet,
      mainConf,
      errorLog: () => readSafe(join(dir, 'error.log')),
      accessLog: () => readSafe(join(dir, 'access.log')),
      stop: async () => {
        if (proc.exitCode === null) proc.kill('SIGQUIT');
        const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
}

function readSafe(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `check` every 20 ms until it is true; throws with `what` after `timeoutMs`. */
export async function until(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await pause(20);
  }
}

export interface Cluster {
  readonly redis: TestRedis;
  readonly prefix: string;
  readonly a: Instance;
  readonly b: Instance;
  readonly nginx: Nginx;
  readonly timing: HaTiming;
  /** The instance whose /ready is 200 (waits for exactly one, bounded). */
  leader(timeoutMs?: number): Promise<Instance>;
  other(i: Instance): Instance;
  stop(): Promise<void>;
}

/**
 * Redis, two instances (a first, then b, so a normally leads) and nginx.
 * `start: 'together'` starts both at once.
 */
export async function startCluster(
  opts: {
    timing?: HaTiming;
    start?: 'a-first' | 'together' | 'none';
    redis?: TestRedis;
    /** More flags for both instances (e.g. --max-memory). */
    extraArgs?: readonly string[];
    /** The key prefix (default: a fresh one), e.g. of data written before the instances start. */
    prefix?: string;
  } = {},
): Promise<Cluster> {
  const timing = opts.timing ?? FAST;
  const redis = opts.redis ?? (await startRedis({ aof: true }));
  const prefix = opts.prefix ?? uniquePrefix();
  const args = ['--leader-election', ...haArgs(redis.port, prefix, timing), ...(opts.extraArgs ?? [])];
  const ports: number[] = [];
  while (ports.length < 4) {
    const p = await freePort();
    if (!ports.includes(p)) ports.push(p);
  }
  const [pa, ca, pb, cb] = ports as [number, number, number, number];
  const a = new Instance('a', pa, ca, args);
  const b = new Instance('b', pb, cb, args);
  const ownRedis = async (): Promise<void> => {
    if (opts.redis === undefined) await redis.stop();
  };
  const nginx = await startNginx([pa, pb]).catch(async (e: unknown) => {
    await ownRedis();
    throw e;
  });
  const stop = async (): Promise<void> => {
    await Promise.allSettled([a.kill9(), b.kill9()]);
    await nginx.stop();
    await ownRedis();
  };
  const mode = opts.start ?? 'a-first';
  try {
    if (mode === 'a-first') {
      await a.start();
      await until('a leads', () => a.ready(), 15_000);
      await b.start();
    } else if (mode === 'together') {
      await Promise.all([a.start(), b.start()]);
    }
  } catch (e) {
    // The test never gets the cluster, so it cannot stop it: stop what was started here.
    await stop();
    throw e;
  }
  const cluster: Cluster = {
    redis,
    prefix,
    a,
    b,
    nginx,
    timing,
    leader: async (timeoutMs = 15_000) => {
      let found: Instance | undefined;
      await until(
        'one instance /ready 200',
        async () => {
          const [ra, rb] = await Promise.all([a.ready(), b.ready()]);
          if (ra && rb) throw new Error('both instances answer /ready 200');
          found = ra ? a : rb ? b : undefined;
          return found !== undefined;
        },
        timeoutMs,
      );
      return found as Instance;
    },
    other: (i) => (i === a ? b : a),
    stop,
  };
  return cluster;
}

/** Releases announced on the lock's pub/sub channel, with the time each was heard. */
export async function watchReleases(
  redis: TestRedis,
  prefix: string,
): Promise<{ heard: { token: string; at: number }[]; close: () => void }> {
  const sub = new Redis({ host: '127.0.0.1', port: redis.port, lazyConnect: true });
  sub.on('error', () => undefined);
  await sub.connect();
  const heard: { token: string; at: number }[] = [];
  sub.on('message', (_channel: string, token: string) => heard.push({ token, at: Date.now() }));
  await sub.subscribe(lockKeys(layoutFor(prefix).meta).channel);
  return { heard, close: () => sub.disconnect() };
}

/** Creates a queue through `url` (retrying while no instance serves yet); returns its URL. */
export async function createQueue(
  url: string,
  name: string,
  attributes: Record<string, string> = {},
): Promise<string> {
  const client = loadClient(url, 10);
  try {
    const out = await client.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
    if (out.QueueUrl === undefined) throw new Error('CreateQueue answered no QueueUrl');
    return out.QueueUrl;
  } finally {
    client.destroy();
  }
}

/** SDK client (JSON protocol) through `url`, retrying as applications do. */
export function loadClient(url: string, maxAttempts = 6): SQSClient {
  return new SQSClient({
    region: 'us-east-1',
    endpoint: url,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    maxAttempts,
  });
}

/** A cluster for one test, stopped after it, once it has a leader; and the other instance. */
export async function clusterFor(
  t: { after(fn: () => Promise<void>): void },
  opts: Parameters<typeof startCluster>[0] = {},
): Promise<{ c: Cluster; leader: Instance; follower: Instance }> {
  const c = await startCluster(opts);
  t.after(() => c.stop());
  const leader = await c.leader();
  return { c, leader, follower: c.other(leader) };
}

export { monitor, type MonitorLine } from '../support/redis-monitor.js';
