/**
 * For the seeded model-based tests (core-model, core-fifo-model, persistence-model): a small
 * deterministic PRNG (mulberry32, 32 bits of state, good enough to pick operations, and the same
 * on every run, so a seed named in a failure replays it), and the random SQS values they share.
 */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** In [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** One of the choices, with the weights as given: `[value, weight]` pairs, or a record of weights. */
  weighted<T extends string>(choices: ReadonlyArray<readonly [T, number]> | Readonly<Record<T, number>>): T {
    const list = (Array.isArray(choices) ? choices : Object.entries(choices)) as ReadonlyArray<
      readonly [T, number]
    >;
    let r = this.next() * list.reduce((sum, [, w]) => sum + w, 0);
    for (const [value, w] of list) {
      r -= w;
      if (r < 0) return value;
    }
    return (list[list.length - 1] as readonly [T, number])[0];
  }
}

/** Receipt handles no queue gave: malformed ones (a test adds one from another queue). */
const MALFORMED_HANDLES = ['not-a-receipt-handle', '', Buffer.from('a:b:c').toString('base64')];

/** 0 (weight `zero`), 1 to `short` (weight `shortWeight`), or up to `max` (weight 1). */
function zeroShortLong(rng: Rng, zero: number, shortWeight: number, short: number, max: number): number {
  const how = rng.weighted({ zero, short: shortWeight, long: 1 });
  return how === 'zero' ? 0 : how === 'short' ? rng.int(1, short) : rng.int(short + 1, max);
}

/** A DelaySeconds value: 0, short, or up to the 15 min maximum. */
export function randomDelaySeconds(rng: Rng): number {
  return zeroShortLong(rng, 4, 3, 60, 900);
}

/** A visibility timeout in whole seconds, as the API takes it: 0, short, or up to the 12 h limit. */
export function randomVisibilitySeconds(rng: Rng): number {
  return zeroShortLong(rng, 2, 6, 120, 43_200);
}

/** A MessageRetentionPeriod in seconds: the 4-day default, or minutes to hours so messages expire. */
export function randomRetentionSeconds(rng: Rng): number {
  return rng.chance(0.3) ? 345_600 : rng.chance(0.4) ? rng.int(60, 600) : rng.int(601, 4 * 3600);
}

/**
 * Picks a receipt handle from a model's messages (every one sent, gone ones too): mostly a real
 * one, the latest or (with chance `older`) an older one of a message received more than once, of a
 * live message or of one that is gone; with chance `bogus`, one the queue never gave.
 */
export function pickHandle(
  rng: Rng,
  messages: ReadonlyArray<{ readonly handles: readonly string[]; readonly gone: unknown }>,
  foreign: string,
  older: number,
  bogus: number,
): string {
  const never = (): string => rng.pick([...MALFORMED_HANDLES, foreign]);
  if (rng.chance(bogus)) return never();
  const wantOlder = rng.chance(older);
  const candidates = messages.filter((m) => m.handles.length > (wantOlder ? 1 : 0));
  if (candidates.length === 0) return never();
  const live = candidates.filter((m) => m.gone === null);
  const gone = candidates.filter((m) => m.gone !== null);
  const m = live.length > 0 && (gone.length === 0 || rng.chance(0.8)) ? rng.pick(live) : rng.pick(gone);
  return wantOlder ? rng.pick(m.handles.slice(0, -1)) : (m.handles[m.handles.length - 1] as string);
}
