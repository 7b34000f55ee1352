/** Latency samples (kept in full: a 10-second run records a few hundred thousand) and medians. */

export interface LatencySummary {
  count: number;
  p50: number | null;
  p90: number | null;
  p99: number | null;
  max: number | null;
  mean: number | null;
}

export class Histogram {
  private samples = new Float64Array(1024);
  count = 0;

  /** Record a duration in microseconds. */
  record(us: number): void {
    if (this.count === this.samples.length) {
      const bigger = new Float64Array(this.count * 2);
      bigger.set(this.samples);
      this.samples = bigger;
    }
    this.samples[this.count++] = us;
  }

  /** Record the time since `startNs` (a process.hrtime.bigint() reading). */
  recordSince(startNs: bigint): void {
    this.record(Number(process.hrtime.bigint() - startNs) / 1000);
  }

  /** Summary in milliseconds (nearest-rank percentiles). */
  summaryMs(): LatencySummary {
    const n = this.count;
    if (n === 0) return { count: 0, p50: null, p90: null, p99: null, max: null, mean: null };
    const sorted = this.samples.slice(0, n).sort();
    const at = (p: number): number => (sorted[Math.max(0, Math.ceil((p / 100) * n) - 1)] ?? 0) / 1000;
    const sum = sorted.reduce((a, b) => a + b, 0);
    return { count: n, p50: at(50), p90: at(90), p99: at(99), max: at(100), mean: sum / n / 1000 };
  }
}

/** The median of a non-empty list (the mean of the middle two for an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}
