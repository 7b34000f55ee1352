/**
 * Summarise a V8 .cpuprofile (as written by `npm run bench -- --cpu-prof DIR`): where the server's CPU
 * time went, by function (self time) and by area (this repository's source folders, each dependency,
 * Node internals, GC).
 *
 * Usage: npx tsx scripts/bench/cpuprofile-summary.ts FILE.cpuprofile [--top N]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface Summary {
  totalMs: number;
  busyMs: number;
  byFunction: [string, number][];
  byArea: [string, number][];
  /** Inclusive time of this repository's functions (self + callees), by function. */
  inclusive: [string, number][];
}

/** Which part of the code a frame belongs to. */
export function areaOf(url: string, functionName: string): string {
  if (!url) {
    if (functionName === '(garbage collector)') return 'GC';
    if (functionName === '(idle)') return 'idle';
    if (functionName === '(program)') return 'V8/native (program)';
    return 'native';
  }
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    const pkg = rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1] ?? ''}` : (rest[0] ?? '?');
    return `dep: ${pkg}`;
  }
  if (url.startsWith('node:')) return 'node internals';
  // This repository's code: dist/ (or a copy of it such as .bench/dist-snap/) or src/.
  const m = /\/(dist[^/]*|src)\/(.+)$/.exec(url);
  if (m?.[2]) {
    const parts = m[2].split('/');
    return `app: ${parts.length > 1 ? parts[0] : parts[0]?.replace(/\.[jt]s$/, '')}`;
  }
  return `other: ${url.replace(/^file:\/\//, '')}`;
}

function label(n: ProfileNode): string {
  const cf = n.callFrame;
  const file = cf.url
    ? cf.url.replace(/^file:\/\//, '').replace(/^.*\/(node_modules|dist[^/]*|src)\//, '$1/')
    : '';
  return `${cf.functionName || '(anonymous)'}${file ? ` ${file}:${cf.lineNumber + 1}` : ''}`;
}

export function summarise(p: Profile, top = 25): Summary {
  const selfUs = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) {
    const id = p.samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + (p.timeDeltas[i] ?? 0));
  }
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  let total = 0;
  let idle = 0;
  const fn = new Map<string, number>();
  const area = new Map<string, number>();
  const incl = new Map<string, number>();
  for (const n of p.nodes) {
    const t = selfUs.get(n.id) ?? 0;
    if (!t) continue;
    total += t;
    const a = areaOf(n.callFrame.url, n.callFrame.functionName);
    if (a === 'idle') {
      idle += t;
      continue;
    }
    fn.set(label(n), (fn.get(label(n)) ?? 0) + t);
    area.set(a, (area.get(a) ?? 0) + t);
    // Charge this sample to every distinct app function on its stack.
    const seen = new Set<string>();
    for (let cur: number | undefined = n.id; cur !== undefined; cur = parent.get(cur)) {
      const node = byId.get(cur);
      if (!node) break;
      if (areaOf(node.callFrame.url, node.callFrame.functionName).startsWith('app: ')) {
        const l = label(node);
        if (!seen.has(l)) {
          seen.add(l);
          incl.set(l, (incl.get(l) ?? 0) + t);
        }
      }
    }
  }
  const sort = (m: Map<string, number>): [string, number][] =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, v]) => [k, v / 1000]);
  return {
    totalMs: total / 1000,
    busyMs: (total - idle) / 1000,
    byFunction: sort(fn),
    byArea: sort(area),
    inclusive: sort(incl),
  };
}

export function formatSummary(s: Summary): string {
  const pct = (v: number): string => `${((v / s.busyMs) * 100).toFixed(1).padStart(5)} %`;
  const lines = [
    `profile: ${s.totalMs.toFixed(0)} ms sampled, ${s.busyMs.toFixed(0)} ms busy (percentages are of busy time)`,
    '',
    'by area (self time):',
    ...s.byArea.map(([k, v]) => `  ${pct(v)}  ${k}`),
    '',
    'by function (self time):',
    ...s.byFunction.map(([k, v]) => `  ${pct(v)}  ${k}`),
    '',
    'app functions, inclusive (self + callees):',
    ...s.inclusive.map(([k, v]) => `  ${pct(v)}  ${k}`),
  ];
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1] ?? ''}`) {
  const { values, positionals } = parseArgs({
    options: { top: { type: 'string', default: '25' } },
    allowPositionals: true,
  });
  if (positionals.length === 0) {
    process.stderr.write('usage: npx tsx scripts/bench/cpuprofile-summary.ts FILE.cpuprofile [--top N]\n');
    process.exit(64);
  }
  for (const file of positionals) {
    const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
    console.log(`== ${file}`);
    console.log(formatSummary(summarise(profile, Number(values.top))));
    console.log('');
  }
}
