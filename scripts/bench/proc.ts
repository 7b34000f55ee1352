/** Reading a process's memory and CPU use from /proc, CPU pinning, free ports, machine facts. */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

let clkTck: number | undefined;

/** Clock ticks per second, the unit of utime/stime in /proc/<pid>/stat. */
export function clockTicks(): number {
  if (clkTck === undefined) {
    try {
      clkTck = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clkTck = 100;
    }
  }
  return clkTck;
}

/** Resident set size of a process in bytes (VmRSS), or NaN if it cannot be read. */
export function readRss(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return m ? Number(m[1]) * 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** utime + stime of a process (all its threads), in seconds, or NaN. */
export function readCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces: fields are counted from after its ')'.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // rest[0] is field 3 (state); utime and stime are fields 14 and 15.
    return (Number(rest[11]) + Number(rest[12])) / clockTicks();
  } catch {
    return Number.NaN;
  }
}

interface CpuMark {
  cpuS: number;
  wallNs: bigint;
}

function markCpu(pid: number): CpuMark {
  return { cpuS: readCpuSeconds(pid), wallNs: process.hrtime.bigint() };
}

/**
 * Busy time of all CPUs of the machine (user+nice+system+irq+softirq+steal), and of that the
 * time the hypervisor kept the virtual CPUs from running (steal), in seconds.
 */
export function readMachineSeconds(): { busyS: number; stealS: number } {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal guest guest_nice (guest is included in user)
    const busy = (f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0);
    return { busyS: busy / clockTicks(), stealS: (f[7] ?? 0) / clockTicks() };
  } catch {
    return { busyS: Number.NaN, stealS: Number.NaN };
  }
}

export interface MeterReading {
  /** Server CPU, % of one core. */
  serverCpuPct: number;
  /** Load generator (this process) CPU, % of one core. */
  loadCpuPct: number;
  /**
   * CPU used on the machine by anything else (other processes, and kernel network work not charged to
   * either process), % of one core. High values mean the figures were taken on a busy machine.
   */
  otherCpuPct: number;
  /**
   * Of otherCpuPct, the time the hypervisor ran something else on our virtual CPUs (steal), % of
   * one core. On some VMs every wake-up of an idle vCPU is charged here, so a ping-pong load over
   * loopback shows a large steal on an otherwise idle host, and all its figures are slowed.
   */
  stealCpuPct: number;
  wallS: number;
}

/** Measures server, load generator and everything else's CPU use over an interval. */
export class Meter {
  private readonly server: CpuMark;
  private readonly self: NodeJS.CpuUsage;
  private readonly machine: { busyS: number; stealS: number };

  constructor(private readonly pid: number) {
    this.machine = readMachineSeconds();
    this.self = process.cpuUsage();
    this.server = markCpu(pid);
  }

  read(): MeterReading {
    const server = markCpu(this.pid);
    const selfUsage = process.cpuUsage(this.self);
    const machine = readMachineSeconds();
    const wallS = Number(server.wallNs - this.server.wallNs) / 1e9;
    const serverS = this.pid > 0 ? server.cpuS - this.server.cpuS : 0;
    const selfS = (selfUsage.user + selfUsage.system) / 1e6;
    const otherS = Math.max(0, machine.busyS - this.machine.busyS - serverS - selfS);
    return {
      serverCpuPct: (serverS / wallS) * 100,
      loadCpuPct: (selfS / wallS) * 100,
      otherCpuPct: (otherS / wallS) * 100,
      stealCpuPct: ((machine.stealS - this.machine.stealS) / wallS) * 100,
      wallS,
    };
  }
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
 * and to the starters' retries. The tests take their ports here too.
 */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 1000; i++) {
    const port = PORT_LOW + Math.floor(Math.random() * (PORT_HIGH - PORT_LOW));
    if (await bindable(port)) return port;
  }
  throw new Error(`no free port in ${PORT_LOW}-${PORT_HIGH - 1} after 1000 tries`);
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

/** A node-flags option: unset, the flags shared-sqs ships with; set (even to ''), these instead. */
export function nodeFlagsOption(value: string | undefined): string[] {
  return value === undefined ? productNodeFlags() : value.split(' ').filter(Boolean);
}

let tasksetOk: boolean | undefined;

export function hasTaskset(): boolean {
  if (tasksetOk === undefined) {
    try {
      execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
      tasksetOk = true;
    } catch {
      tasksetOk = false;
    }
  }
  return tasksetOk;
}

/** Pin every thread of this process (and threads it starts later) to the given CPU list. */
export function pinSelf(cpus: string): void {
  execFileSync('taskset', ['-a', '-c', '-p', cpus, String(process.pid)], { stdio: 'ignore' });
}

/** Set the scheduling priority of every thread of this process (Linux nice values are per thread). */
export function niceSelf(nice: number): void {
  let tids: string[];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    tids = [String(process.pid)];
  }
  for (const tid of tids) os.setPriority(Number(tid), nice);
}

export interface MachineInfo {
  nproc: number;
  cpuModel: string;
  memGiB: number;
  node: string;
  platform: string;
  kernel: string;
}

export function machineInfo(): MachineInfo {
  let cpuModel = os.cpus()[0]?.model ?? 'unknown';
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m?.[1]) cpuModel = m[1].trim();
  } catch {
    // keep os.cpus()'s answer
  }
  return {
    nproc: os.cpus().length,
    cpuModel,
    memGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${os.platform()} ${os.arch()}`,
    kernel: os.release(),
  };
}

/**
 * Polls shared-sqs's GET /ready (or `path`: /health for a follower) on `controlPort` until 200;
 * throws with the server's output when it exits first or `timeoutMs` passes.
 */
export async function waitForReady(
  proc: { readonly exitCode: number | null },
  controlPort: number,
  timeoutMs: number,
  output: () => string,
  path = '/ready',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${controlPort}${path}`);
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`server not ready:\n${output()}`);
    await sleep(10);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * On a shared machine: wait (at most `maxS` seconds) until the rest of the machine uses less than
 * `thresholdPct` % of one core over a one-second sample. Returns the last sample's figure.
 */
export async function waitForIdle(
  maxS: number,
  thresholdPct: number,
): Promise<{ idle: boolean; otherPct: number }> {
  const deadline = Date.now() + maxS * 1000;
  let otherPct: number;
  do {
    const meter = new Meter(-1);
    await sleep(1000);
    otherPct = meter.read().otherCpuPct;
    if (otherPct < thresholdPct) return { idle: true, otherPct };
  } while (Date.now() < deadline);
  return { idle: false, otherPct };
}

/** Where bench runs on this machine take turns (see MachineLock). */
export const LOCK_FILE = '/tmp/shared-sqs-bench.lock';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A lock file that makes bench runs on one machine take turns, one scenario at a time: two load
 * generators driving two servers on the same two cores would make both sets of figures meaningless.
 * A lock left by a process that no longer exists is taken over.
 */
export class MachineLock {
  private held = false;

  constructor(private readonly file = LOCK_FILE) {}

  /** Wait (at most maxWaitS) for the lock; returns false if it was not had in time. */
  async acquire(maxWaitS: number, onWait: (holder: string) => void): Promise<boolean> {
    const deadline = Date.now() + maxWaitS * 1000;
    let told = false;
    for (;;) {
      try {
        const fd = openSync(this.file, 'wx');
        writeSync(fd, `${process.pid}\n`);
        closeSync(fd);
        this.held = true;
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      let holder: string;
      try {
        holder = readFileSync(this.file, 'utf8').trim();
      } catch {
        continue; // released between our open and read
      }
      const pid = Number(holder);
      if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) {
        try {
          unlinkSync(this.file);
        } catch {
          // someone else took it over first
        }
        continue;
      }
      if (Date.now() > deadline) return false;
      if (!told) {
        onWait(holder);
        told = true;
      }
      await sleep(250 + Math.random() * 250);
    }
  }

  release(): void {
    if (!this.held) return;
    this.held = false;
    try {
      if (readFileSync(this.file, 'utf8').trim() === String(process.pid)) unlinkSync(this.file);
    } catch {
      // already gone
    }
  }
}

type ParseArgsConfig = NonNullable<Parameters<typeof parseArgs>[0]>;

/**
 * The leading doc comment of a script, as plain text: its usage, written once where the code
 * is read. `fileUrl` is the script's import.meta.url.
 */
export function usageOf(fileUrl: string): string {
  const text = readFileSync(fileURLToPath(fileUrl), 'utf8');
  const comment = /\/\*\*([\s\S]*?)\*\//.exec(text)?.[1] ?? '';
  return comment
    .split('\n')
    .map((line) => line.replace(/^\s*\* ?/, ''))
    .join('\n')
    .trim();
}

/**
 * parseArgs for a bench script: --help / -h prints the script's doc comment and exits 0; an
 * unknown or malformed option prints what was wrong and exits 2, not a stack trace.
 */
export function scriptArgs<T extends ParseArgsConfig>(
  fileUrl: string,
  config: T,
): ReturnType<typeof parseArgs<T>> {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    process.stdout.write(`${usageOf(fileUrl)}\n`);
    process.exit(0);
  }
  try {
    return parseArgs(config);
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n(--help for the options)\n`);
    process.exit(2);
  }
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
