/** Reading a process's memory and CPU use from /proc, CPU pinning, machine facts, the machine lock. */
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';

import { sleep } from '../../test/support/process.js';

/** The unit of utime/stime in /proc/<pid>/stat: USER_HZ, 100 on every Linux ABI Node runs on. */
const TICKS_PER_S = 100;

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
    return (Number(rest[11]) + Number(rest[12])) / TICKS_PER_S;
  } catch {
    return Number.NaN;
  }
}

const markCpu = (pid: number) => ({ cpuS: readCpuSeconds(pid), wallNs: process.hrtime.bigint() });

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
    return { busyS: busy / TICKS_PER_S, stealS: (f[7] ?? 0) / TICKS_PER_S };
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
  private readonly server: ReturnType<typeof markCpu>;
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

/** Pins every thread of this process (and those it starts later) to `cpus`; false without taskset. */
export function pinSelf(cpus: string): boolean {
  try {
    execFileSync('taskset', ['-a', '-c', '-p', cpus, String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export type MachineInfo = ReturnType<typeof machineInfo>;

export function machineInfo() {
  return {
    nproc: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? 'unknown',
    memGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${os.platform()} ${os.arch()}`,
    kernel: os.release(),
  };
}

/** Where bench runs on this machine take turns (see MachineLock). */
export const LOCK_FILE = '/tmp/shared-sqs-bench.lock';

/**
 * A lock file that makes bench runs on one machine take turns, one scenario at a time: two load
 * generators driving two servers on the same two cores would make both sets of figures meaningless.
 * A lock left by a process that no longer exists is taken over.
 */
export class MachineLock {
  private held = false;

  /** Wait (at most maxWaitS) for the lock; returns false if it was not had in time. */
  async acquire(maxWaitS: number, onWait: (holder: string) => void): Promise<boolean> {
    const deadline = Date.now() + maxWaitS * 1000;
    for (let told = false; ;) {
      try {
        writeFileSync(LOCK_FILE, `${process.pid}\n`, { flag: 'wx' });
        return (this.held = true);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const holder = this.holder();
      if (holder === undefined || !alive(Number(holder))) {
        rmSync(LOCK_FILE, { force: true });
        continue;
      }
      if (Date.now() > deadline) return false;
      if (!told) onWait(holder);
      told = true;
      await sleep(250 + Math.random() * 250);
    }
  }

  release(): void {
    if (this.held && this.holder() === String(process.pid)) rmSync(LOCK_FILE, { force: true });
    this.held = false;
  }

  private holder(): string | undefined {
    try {
      return readFileSync(LOCK_FILE, 'utf8').trim();
    } catch {
      return undefined; // released meanwhile
    }
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return pid > 0;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
