/**
 * A Redis Cluster for tests: `startRedisCluster()` starts 3 masters and 3 replicas (Debian's
 * redis-server with `--cluster-enabled yes`, joined by `redis-cli --cluster create
 * --cluster-replicas 1`) on free loopback ports, each with its own directory and an AOF fsynced on
 * every write, and resolves once every node says `cluster_state:ok` and every replica is in sync.
 * `killMaster()` SIGKILLs a master and waits until its replica has taken over; `restart()` starts a
 * killed node again from its directory, as a service manager would, and waits until it follows the
 * master that took its place; `stop()` kills every node and removes the directories. Never the
 * machine's Redis on 6379.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort, runToEnd, sleep, track } from './process.js';

/** A node's failure is declared after this long without an answer; a failover follows within ~1 s. */
const NODE_TIMEOUT_MS = 2000;
const SETTLE_MS = 60_000;

export interface ClusterMaster {
  readonly id: string;
  readonly port: number;
  /** Its slot ranges, inclusive, as CLUSTER NODES lists them. */
  readonly slots: readonly (readonly [first: number, last: number])[];
  /** The ports of the replicas that follow it. */
  readonly replicas: readonly number[];
}

export interface TestRedisCluster {
  /** Every node started, masters and replicas alike, as ioredis' `Cluster` takes its startup nodes. */
  readonly startupNodes: readonly { readonly host: string; readonly port: number }[];
  /** The masters now (failed ones left out), as a live node's CLUSTER NODES says, by port. */
  masters(): Promise<ClusterMaster[]>;
  /** A plain client of one node (offline queue on), for checks such as DBSIZE; closed by stop(). */
  node(port: number): Redis;
  /**
   * SIGKILL of the master on `port`; resolves with its replica's port once that replica is a
   * master and every surviving node says `cluster_state:ok`.
   */
  killMaster(port: number): Promise<number>;
  /** SIGSTOP / SIGCONT of the node on `port`: it stops answering without closing its connections. */
  pause(port: number): void;
  resume(port: number): void;
  /** Starts the killed node on `port` again; resolves once it is a replica in sync and the cluster is ok. */
  restart(port: number): Promise<void>;
  stop(): Promise<void>;
}

interface NodeProcess {
  readonly port: number;
  readonly busPort: number;
  readonly proc: ChildProcess;
  readonly exited: Promise<void>;
  readonly client: Redis;
}

interface NodeLine {
  readonly id: string;
  readonly port: number;
  readonly flags: readonly string[];
  readonly masterId: string;
  readonly slots: readonly (readonly [number, number])[];
}

/** CLUSTER NODES: `<id> <ip:port@cport> <flags> <master> <ping> <pong> <epoch> <link> <slot>...`. */
function parseNodes(text: string): NodeLine[] {
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [id = '', addr = '', flags = '', masterId = '', , , , , ...slotFields] = line.trim().split(' ');
      const slots = slotFields
        // `[slot->-node]` entries are slots being migrated, not owned.
        .filter((f) => !f.startsWith('['))
        .map((f): [number, number] => {
          const [first = '', last = first] = f.split('-');
          return [Number(first), Number(last)];
        });
      return { id, port: Number(/:(\d+)@/.exec(addr)?.[1]), flags: flags.split(','), masterId, slots };
    });
}

async function info(client: Redis, section: string): Promise<string> {
  return (await client.call('INFO', section)) as string;
}

async function clusterInfo(client: Redis): Promise<string> {
  return (await client.call('CLUSTER', 'INFO')) as string;
}

/** Polls `check` until it is true; throws with `what`, the last error and `state()` after SETTLE_MS. */
async function until(
  what: string,
  check: () => Promise<boolean>,
  state: () => Promise<string>,
): Promise<void> {
  const deadline = Date.now() + SETTLE_MS;
  let last = '';
  for (;;) {
    try {
      if (await check()) return;
    } catch (e) {
      last = ` (last error: ${(e as Error).message})`;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `Redis Cluster: ${what} not within ${SETTLE_MS} ms${last}\n${await state().catch(String)}`,
      );
    }
    await sleep(50);
  }
}

function launch(dir: string, port: number, busPort: number): Promise<NodeProcess> {
  const nodeDir = join(dir, String(port));
  // A restart finds its nodes.conf and AOF there, and rejoins as the cluster has it now.
  mkdirSync(nodeDir, { recursive: true });
  const args = [
    ['--port', String(port)],
    ['--bind', '127.0.0.1'],
    ['--dir', nodeDir],
    ['--cluster-enabled', 'yes'],
    ['--cluster-config-file', join(nodeDir, `nodes-${port}.conf`)],
    // Set, not port + 10000: that could fall in the ephemeral range or on another test's port.
    ['--cluster-port', String(busPort)],
    ['--cluster-node-timeout', String(NODE_TIMEOUT_MS)],
    // A replica may always take over, however long since it last heard its master.
    ['--cluster-replica-validity-factor', '0'],
    ['--appendonly', 'yes'],
    ['--appendfsync', 'always'],
    ['--save', ''],
  ].flat();
  const proc = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  track(proc);
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  return new Promise<NodeProcess>((resolve, reject) => {
    let out = '';
    const onData = (chunk: string): void => {
      out += chunk;
      if (!out.includes('Ready to accept connections')) return;
      proc.stdout?.off('data', onData);
      proc.stdout?.resume();
      const client = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
      client.on('error', () => undefined);
      resolve({ port, busPort, proc, exited, client });
    };
    proc.stdout?.setEncoding('utf8').on('data', onData);
    proc.stderr?.resume();
    proc.once('exit', (code, signal) =>
      reject(
        new Error(
          `redis-server ${port} exited (code ${code}, signal ${signal}) before it was ready:\n${out}`,
        ),
      ),
    );
    proc.once('error', reject);
  });
}

export async function startRedisCluster(): Promise<TestRedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'ssq-cluster-'));
  const nodes = new Map<number, NodeProcess>();
  const taken = new Set<number>();
  const stop = async (): Promise<void> => {
    for (const n of nodes.values()) n.client.disconnect();
    await Promise.all(
      [...nodes.values()].map(async (n) => {
        if (n.proc.exitCode === null && n.proc.signalCode === null) {
          n.proc.kill('SIGCONT');
          n.proc.kill('SIGKILL');
        }
        await n.exited;
      }),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  const livePorts = (): number[] =>
    [...nodes.values()]
      .filter((n) => n.proc.exitCode === null && n.proc.signalCode === null)
      .map((n) => n.port);
  const client = (port: number): Redis => {
    const n = nodes.get(port);
    if (n === undefined) throw new Error(`no node on port ${port}`);
    return n.client;
  };
  const clusterNodes = async (port: number): Promise<NodeLine[]> =>
    parseNodes((await client(port).call('CLUSTER', 'NODES')) as string);
  const state = async (): Promise<string> => {
    const out: string[] = [];
    for (const port of livePorts()) {
      const cluster = await clusterInfo(client(port)).catch(String);
      const state = /cluster_state:\w+/.exec(cluster)?.[0];
      out.push(`${port}: ${state}\n${(await client(port).call('CLUSTER', 'NODES').catch(String)) as string}`);
    }
    return out.join('\n');
  };
  const allOk = async (): Promise<boolean> => {
    for (const port of livePorts()) {
      if (!(await clusterInfo(client(port))).includes('cluster_state:ok')) return false;
      const lines = await clusterNodes(port);
      const me = lines.find((l) => l.flags.includes('myself'));
      // A replica counts once its first sync is done: before, it acknowledges no WAIT and a
      // failover would promote it empty.
      if (me?.flags.includes('slave') === true) {
        if (!(await info(client(port), 'replication')).includes('master_link_status:up')) return false;
      }
    }
    return true;
  };

  try {
    for (let i = 0; i < 6; i++) {
      // Another process may take a free port before redis-server binds it: new ports, a few times.
      for (let attempt = 0; ; attempt++) {
        const port = await freePort();
        const busPort = await freePort();
        if (port === busPort || taken.has(port) || taken.has(busPort)) continue;
        try {
          nodes.set(port, await launch(dir, port, busPort));
          taken.add(port).add(busPort);
          break;
        } catch (e) {
          rmSync(join(dir, String(port)), { recursive: true, force: true });
          if (attempt >= 4) throw e;
        }
      }
    }
    const created = await runToEnd(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...livePorts().map((p) => `127.0.0.1:${p}`),
        '--cluster-replicas',
        '1',
        '--cluster-yes',
      ],
      { env: process.env, timeout: SETTLE_MS },
    );
    if (created.code !== 0 || !created.stdout.includes('[OK] All 16384 slots covered')) {
      throw new Error(
        `redis-cli --cluster create failed (${created.code}):\n${created.stdout}\n${created.stderr}`,
      );
    }
    await until(
      'every node cluster_state:ok, 6 nodes known, replicas in sync',
      async () => {
        for (const port of livePorts()) {
          if (!(await clusterInfo(client(port))).includes('cluster_known_nodes:6')) return false;
        }
        return allOk();
      },
      state,
    );
  } catch (e) {
    await stop();
    throw e;
  }

  const masters = async (): Promise<ClusterMaster[]> => {
    const [port] = livePorts();
    if (port === undefined) throw new Error('no live node');
    const lines = await clusterNodes(port);
    return lines
      .filter((l) => l.flags.includes('master') && !l.flags.includes('fail') && l.slots.length > 0)
      .map((m) => ({
        id: m.id,
        port: m.port,
        slots: m.slots,
        replicas: lines.filter((l) => l.masterId === m.id && !l.flags.includes('fail')).map((l) => l.port),
      }))
      .sort((a, b) => (a.slots[0]?.[0] ?? 0) - (b.slots[0]?.[0] ?? 0));
  };

  return {
    startupNodes: [...nodes.keys()].map((port) => ({ host: '127.0.0.1', port })),
    masters,
    node: client,
    killMaster: async (port) => {
      const master = (await masters()).find((m) => m.port === port);
      const [replica] = master?.replicas ?? [];
      if (master === undefined || replica === undefined)
        throw new Error(`${port} is not a master with a replica`);
      const victim = nodes.get(port);
      victim?.client.disconnect();
      victim?.proc.kill('SIGKILL');
      await victim?.exited;
      await until(
        `replica ${replica} of ${port} promoted`,
        async () => {
          const role = await info(client(replica), 'replication');
          return role.includes('role:master') && (await allOk());
        },
        state,
      );
      return replica;
    },
    pause: (port) => nodes.get(port)?.proc.kill('SIGSTOP'),
    resume: (port) => nodes.get(port)?.proc.kill('SIGCONT'),
    restart: async (port) => {
      const old = nodes.get(port);
      if (old === undefined || (old.proc.exitCode === null && old.proc.signalCode === null))
        throw new Error(`${port} is not a killed node`);
      nodes.set(port, await launch(dir, port, old.busPort));
      await until(
        `node ${port} back as a replica`,
        async () => (await info(client(port), 'replication')).includes('role:slave') && (await allOk()),
        state,
      );
    },
    stop,
  };
}
