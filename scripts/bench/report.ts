/** The console table of a run and its comparison of every target with the first one named. */
import { median } from './histogram.js';
import type { MachineInfo } from './meter.js';
import type { Result } from './scenarios.js';

export interface Report {
  version: 2;
  startedAt: string;
  finishedAt: string;
  gitCommit: string | null;
  machine: MachineInfo;
  options: Record<string, unknown>;
  notes: string[];
  results: Result[];
}

const MiB = 2 ** 20;

function fmtNum(v: number | null | undefined, digits = 0): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  return v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

function fmtMs(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  return v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0);
}

function fmtMiB(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return '–';
  return (bytes / MiB).toFixed(1);
}

function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/** Short scenario-specific figures for the notes column. */
export function notes(r: Result): string {
  const e = r.extra;
  const parts: string[] = [];
  switch (r.scenario) {
    case 'receive-delete':
      if (e['drained'] === true) parts.push('drained');
      if (num(e['fillMsgsPerSec']) !== null)
        parts.push(`filled at ${fmtNum(num(e['fillMsgsPerSec']))} msgs/s`);
      break;
    case 'fifo':
      parts.push(
        `${fmtNum(num(e['groups']))} groups${num(e['hotShare']) ? `, ${fmtNum((num(e['hotShare']) ?? 0) * 100)} % in one` : ''}`,
      );
      if (e['drained'] === true) parts.push('drained');
      if (num(e['fillMsgsPerSec']) !== null)
        parts.push(`filled at ${fmtNum(num(e['fillMsgsPerSec']))} msgs/s`);
      break;
    case 'roundtrip':
      parts.push(`rate ${fmtNum(num(e['rate']))}/s, ${fmtNum(num(e['consumers']))} consumers`);
      if (num(e['sendP50Ms']) !== null) parts.push(`send p50 ${fmtMs(num(e['sendP50Ms']))} ms`);
      break;
    case 'idle-long-polls':
      parts.push(
        `${fmtNum(num(e['connections']))} polls open, RSS +${fmtNum(num(e['rssIncreaseMiB']), 1)} MiB`,
      );
      if (num(e['returnedWhileIdle'])) parts.push(`${fmtNum(num(e['returnedWhileIdle']))} returned early`);
      break;
    case 'memory':
      parts.push(
        `per queue: heap ${fmtNum(num(e['heapPerQueue']))} B, RSS ${fmtNum(num(e['rssPerQueue']))} B`,
        `per msg: heap ${fmtNum(num(e['heapPerMessage']))} B, RSS ${fmtNum(num(e['rssPerMessage']))} B`,
      );
      break;
    case 'back-pressure':
      parts.push(
        `${fmtNum(num(e['acceptedPctOfBudget']))} % of the budget accepted, then ${String(e['refusalStatus'])} ${String(e['refusalCode'])}; usage then ${fmtMiB(num(e['usedBytesAtRefusal']))} MiB`,
      );
      break;
    case 'cold-start':
      parts.push(
        `median ${fmtMs(num(e['medianMs']))} ms (min ${fmtMs(num(e['minMs']))}, max ${fmtMs(num(e['maxMs']))})`,
      );
      break;
    case 'send':
    case 'send-batch':
      break;
  }
  if (num(e['redisCpuUsPerMsg']) !== null)
    parts.push(
      `Redis per msg: ${fmtNum(num(e['redisCpuUsPerMsg']), 1)} µs CPU, ${fmtNum(num(e['redisCallsPerMsg']), 2)} calls, ${fmtNum(num(e['redisCommandsPerMsg']), 2)} commands`,
    );
  const steal = r.stealCpuPct ?? 0;
  if (steal >= STEAL_NOTE_PCT) parts.push(`hypervisor steal ${fmtNum(steal)} % of a core`);
  return parts.join('; ');
}

/** Steal (% of one core) from which a run's figures are marked as slowed by the hypervisor. */
export const STEAL_NOTE_PCT = 5;

export function resultLine(r: Result): string {
  const head = `${r.target} ${r.protocol} ${r.scenario}${r.variant ? ` (${r.variant})` : ''}`;
  const parts: string[] = [];
  if (r.msgsPerSec !== null) parts.push(`${fmtNum(r.msgsPerSec)} msgs/s`);
  if (r.reqPerSec !== null) parts.push(`${fmtNum(r.reqPerSec)} req/s`);
  if (r.latency?.p50 !== null && r.latency?.p50 !== undefined) {
    parts.push(`p50 ${fmtMs(r.latency.p50)} ms, p99 ${fmtMs(r.latency.p99)} ms`);
  }
  if (r.serverCpuPct !== null) parts.push(`server CPU ${fmtNum(r.serverCpuPct)} %`);
  const n = notes(r);
  if (n) parts.push(n);
  if (r.errors > 0) parts.push(`ERRORS ${r.errors}: ${r.errorSamples.join(' | ')}`);
  return `${head}: ${parts.join(', ')}`;
}

const COLUMNS = [
  ...['target', 'proto', 'scenario', 'msgs/s', 'per srv core', 'req/s', 'p50 ms', 'p99 ms'],
  ...['RSS MiB (before→after)', 'srv CPU %', 'load CPU %', 'other CPU %', 'errors', 'notes'],
];

/** The target's name, and its round when there are several. */
function who(r: Result): string {
  return r.round === undefined ? r.target : `${r.target} #${r.round}`;
}

function row(r: Result): string[] {
  return [
    who(r),
    r.protocol,
    r.scenario + (r.variant ? ` (${r.variant})` : ''),
    fmtNum(r.msgsPerSec),
    fmtNum(r.scenario === 'roundtrip' ? null : perCore(r)),
    fmtNum(r.reqPerSec),
    fmtMs(r.latency?.p50),
    fmtMs(r.latency?.p99),
    r.serverRssBefore === null
      ? fmtMiB(r.serverRssAfter)
      : `${fmtMiB(r.serverRssBefore)}→${fmtMiB(r.serverRssAfter)}`,
    fmtNum(r.serverCpuPct, r.scenario === 'idle-long-polls' ? 1 : 0),
    fmtNum(r.loadCpuPct),
    fmtNum(r.otherCpuPct),
    r.errors > 0 ? `${r.errors} !` : '0',
    notes(r),
  ];
}

export function formatTable(results: readonly Result[]): string {
  const rows = [COLUMNS, ...results.map(row)];
  const widths = COLUMNS.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  const numeric = new Set([3, 4, 5, 6, 7, 9, 10, 11]);
  const line = (r: string[]): string =>
    r
      .map((c, i) => (numeric.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  const sep = widths.map((w) => '-'.repeat(w)).join('  ');
  return [line(rows[0]!), sep, ...rows.slice(1).map(line)].join('\n');
}

/**
 * Throughput per server core: the measured rate divided by the share of its one core the server used.
 * On a quiet machine with the server saturated this is the measured rate; when other work or a starved
 * load generator left the server idle part of the time, it is the better (and still conservative:
 * per-request overhead is higher at low load) estimate of what one core sustains.
 */
export function perCore(r: Result, field: 'msgsPerSec' | 'reqPerSec' = 'msgsPerSec'): number | null {
  const v = r[field];
  const c = r.serverCpuPct;
  if (v === null || c === null || !Number.isFinite(c) || c < 1) return null;
  return v / (Math.min(c, 100) / 100);
}

interface Headline {
  what: string;
  value: number | null;
}

/** The one figure of a run that two targets are compared on. */
function headline(r: Result): Headline {
  const e = r.extra;
  switch (r.scenario) {
    case 'roundtrip':
      return { what: 'p99 ms', value: r.latency?.p99 ?? null };
    case 'idle-long-polls':
      return { what: 'wake-up p50 ms', value: r.latency?.p50 ?? null };
    case 'memory':
      return { what: 'heap B per message', value: num(e['heapPerMessage']) };
    case 'back-pressure':
      return { what: '% of budget accepted', value: num(e['acceptedPctOfBudget']) };
    case 'cold-start':
      return { what: 'median ms', value: num(e['medianMs']) };
    case 'send':
    case 'send-batch':
    case 'receive-delete':
    case 'fifo':
      return { what: 'msgs/s', value: r.msgsPerSec };
  }
}

/**
 * Every target against the first one named, per protocol, scenario and variant: the figure of
 * median value over the rounds, and the ratio of each round's pair (the targets of one round run
 * back to back, so a VM whose speed drifts over the bench moves both sides of a ratio alike).
 */
export function formatComparison(results: readonly Result[], targets: readonly string[]): string {
  const base = targets[0];
  if (base === undefined || targets.length < 2) return '';
  const lines: string[] = [];
  const runs = [...new Set(results.map((r) => `${r.protocol}|${r.scenario}|${r.variant}`))];
  for (const run of runs) {
    const of = (t: string): Result[] =>
      results.filter((r) => `${r.protocol}|${r.scenario}|${r.variant}` === run && r.target === t);
    const baseRuns = of(base);
    if (baseRuns.length === 0) continue;
    const [protocol, scenario, variant] = run.split('|');
    const h = headline(baseRuns[0]!);
    const cells: string[] = [];
    for (const t of targets) {
      const values = of(t)
        .map((r) => headline(r).value)
        .filter((v): v is number => v !== null && Number.isFinite(v));
      if (values.length === 0) continue;
      let cell = `${t} ${fmtNum(median(values), median(values) < 100 ? 2 : 0)}`;
      if (t !== base) {
        const ratios = of(t).flatMap((r) => {
          const b = baseRuns.find((x) => x.round === r.round);
          const [v, w] = [headline(r).value, b ? headline(b).value : null];
          return v !== null && w !== null && w !== 0 ? [v / w] : [];
        });
        if (ratios.length > 0) {
          cell += ` (${median(ratios).toFixed(2)}×`;
          cell += ratios.length > 1 ? `; rounds ${ratios.map((x) => x.toFixed(2)).join(' ')})` : ')';
        }
      }
      cells.push(cell);
    }
    const name = `${protocol ?? ''} ${scenario ?? ''}${variant ? ` (${variant})` : ''}, ${h.what}`;
    lines.push(`${name}: ${cells.join(', ')}`);
  }
  if (lines.length === 0) return '';
  return [
    `Against ${base} (median over rounds; ratio = target / ${base}):`,
    ...lines.map((l) => `  ${l}`),
  ].join('\n');
}
