/**
 * What the seeded model-based tests share (core-model, core-fifo-model, longpoll-model): the
 * coverage of the rules they exercised, and the core's outcome of an operation as a value.
 */
import assert from 'node:assert/strict';
import { CoreError, type CoreErrorCode } from '../../src/core/errors.js';

/** How often each rule decided an outcome, over all seeds: the last test checks none was never hit. */
export class Coverage {
  private readonly counts = new Map<string, number>();

  hit(rule: string): void {
    this.counts.set(rule, (this.counts.get(rule) ?? 0) + 1);
  }

  /** Fails, naming them, if any of `rules` was never hit. */
  assertAllHit(rules: readonly string[]): void {
    const missing = rules.filter((r) => (this.counts.get(r) ?? 0) === 0);
    assert.deepEqual(
      missing,
      [],
      `never exercised; seen: ${JSON.stringify(Object.fromEntries(this.counts))}`,
    );
  }
}

export type Outcome = { readonly ok: true } | { readonly error: CoreErrorCode };
export const OK: Outcome = { ok: true };

/** OK, or the code of the core's own error; anything else is thrown on. */
export function coreOutcome(fn: () => void): Outcome {
  try {
    fn();
    return OK;
  } catch (e) {
    if (e instanceof CoreError) return { error: e.code };
    throw e;
  }
}

export function show(o: Outcome): string {
  return 'ok' in o ? 'ok' : o.error;
}

interface HandledMessage {
  readonly id: string;
  readonly handles: readonly string[];
  readonly gone: string | null;
}

/** A receipt handle as the operation log shows it: whose, which of its handles, and its state. */
export function describeHandle<M extends HandledMessage>(
  model: { readonly messages: readonly M[]; tick(now: number): void; state(m: M, now: number): string },
  handle: string,
  foreign: string,
  now: number,
): string {
  if (handle === foreign) return 'handle of another queue';
  const m = model.messages.find((x) => x.handles.includes(handle));
  if (m === undefined) return `malformed handle ${JSON.stringify(handle)}`;
  model.tick(now);
  const i = m.handles.indexOf(handle) + 1;
  return `${m.id} handle ${i}/${m.handles.length} (${m.gone ?? model.state(m, now)})`;
}
