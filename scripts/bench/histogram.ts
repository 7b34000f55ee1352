/**
 * A log-linear bucket histogram of durations in microseconds, in the spirit of HdrHistogram: values
 * below 128 µs get one bucket each; above, each power-of-two range is split into 64 linear buckets, so
 * any recorded value is known to within 1/64 (about 1.6 %). Covers 0 µs to about 35 minutes in 1,728
 * counters; recording is a couple of integer operations.
 */
const SUB_BITS = 6; // 64 linear sub-buckets per power of two
const SUB = 1 << SUB_BITS;
const LINEAR = SUB * 2; // values below 128 are exact
const MAX_VALUE = 2 ** 31 - 1;
const BUCKETS = LINEAR + (31 - SUB_BITS - 1) * SUB;

function bucketOf(v: number): number {
  if (v < LINEAR) return v;
  const msb = 31 - Math.clz32(v); // >= 7
  const shift = msb - SUB_BITS; // >= 1
  return LINEAR + (shift - 1) * SUB + ((v >>> shift) - SUB);
}

/** [lowest, highest] value that falls in bucket i. */
function rangeOf(i: number): [number, number] {
  if (i < LINEAR) return [i, i];
  const shift = Math.floor((i - LINEAR) / SUB) + 1;
  const sub = ((i - LINEAR) % SUB) + SUB;
  const lo = sub * 2 ** shift;
  return [lo, lo + 2 ** shift - 1];
}

export class Histogram {
  private readonly counts = new Float64Array(BUCKETS);
  count = 0;
  private sum = 0;
  private minValue = Number.POSITIVE_INFINITY;
  private maxValue = 0;

  /** Record a duration in microseconds (fractions are truncated). */
  record(us: number): void {
    const v = us <= 0 ? 0 : us >= MAX_VALUE ? MAX_VALUE : Math.trunc(us);
    this.counts[bucketOf(v)]! += 1;
    this.count += 1;
    this.sum += v;
    if (v < this.minValue) this.minValue = v;
    if (v > this.maxValue) this.maxValue = v;
  }

  /** Record the time since `startNs` (a process.hrtime.bigint() reading). */
  recordSince(startNs: bigint): void {
    this.record(Number(process.hrtime.bigint() - startNs) / 1000);
  }

  merge(other: Histogram): void {
    for (let i = 0; i < BUCKETS; i++) this.counts[i]! += other.counts[i]!;
    this.count += other.count;
    this.sum += other.sum;
    this.minValue = Math.min(this.minValue, other.minValue);
    this.maxValue = Math.max(this.maxValue, other.maxValue);
  }

  /** The value at percentile p (0..100), in microseconds: the middle of the bucket it falls in. */
  percentile(p: number): number {
    if (this.count === 0) return Number.NaN;
    const rank = Math.max(1, Math.ceil((p / 100) * this.count));
    let seen = 0;
    for (let i = 0; i < BUCKETS; i++) {
      seen += this.counts[i]!;
      if (seen >= rank) {
        const [lo, hi] = rangeOf(i);
        return Math.min(Math.max((lo + hi) / 2, this.minValue), this.maxValue);
      }
    }
    return this.maxValue;
  }

  /** Summary in milliseconds. */
  summaryMs(): LatencySummary {
    if (this.count === 0) return { count: 0, p50: null, p90: null, p99: null, max: null, mean: null };
    const ms = (us: number): number => Math.round(us) / 1000;
    return {
      count: this.count,
      p50: ms(this.percentile(50)),
      p90: ms(this.percentile(90)),
      p99: ms(this.percentile(99)),
      max: ms(this.maxValue),
      mean: ms(this.sum / this.count),
    };
  }
}

export interface LatencySummary {
  count: number;
  p50: number | null;
  p90: number | null;
  p99: number | null;
  max: number | null;
  mean: number | null;
}

/** The median of a non-empty list (the mean of the middle two for an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}
