/**
 * Timers on a clock that moves only when told, for the components that take `ElectorTimers`
 * (src/ha/elector.ts): a unit test advances time and every timer due fires in order, with promises
 * settling between, so nothing sleeps.
 */
import type { ElectorTimers } from '../../src/ha/elector.js';

export class FakeTimers implements ElectorTimers {
  t = 0;
  private seq = 0;
  private readonly pending = new Map<number, { at: number; fn: () => void }>();

  now(): number {
    return this.t;
  }
  wallNow(): number {
    return 1_800_000_000_000 + this.t;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.pending.set(id, { at: this.t + ms, fn });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.pending.delete(handle as number);
  }

  /** Moves time forward by `ms`, firing due timers in order and letting promises settle between. */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      await settle();
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.pending) {
        if (entry[1].at <= end && (next === undefined || entry[1].at < next[1].at)) next = entry;
      }
      if (next === undefined) break;
      this.pending.delete(next[0]);
      this.t = Math.max(this.t, next[1].at);
      next[1].fn();
    }
    this.t = end;
    await settle();
  }

  /** Time passes with no timer firing: the process was stopped (SIGSTOP). */
  freeze(ms: number): void {
    this.t += ms;
  }
}

export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
