/** Reading Prometheus text exposition (GET /metrics) in tests. */

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** Every sample line of `text`, in order (comments and blank lines skipped). */
export function* samples(text: string): Generator<Sample> {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null) continue;
    const labels: Record<string, string> = {};
    for (const [, k = '', v = ''] of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
    yield { name: m[1] as string, labels, value: Number(m[3]) };
  }
}

/** The first sample of `name` whose labels include all of `labels` (others may exist); 0 when absent. */
export function metricValue(text: string, name: string, labels: Record<string, string>): number {
  for (const s of samples(text)) {
    if (s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) return s.value;
  }
  return 0;
}
