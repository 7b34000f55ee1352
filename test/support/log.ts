/**
 * A LogSink for tests that wait on what a component logs: the log line is the event (a term
 * leads, an acquisition starts waiting), so a test awaits it instead of polling or sleeping.
 */
import type { LogSink } from '../../src/log.js';

export interface WatchedLog extends LogSink {
  /** Every message logged so far, in order. */
  readonly lines: readonly string[];
  /** Resolves with the fields of the next line logged with this message (from now on). */
  seen(msg: string): Promise<object>;
}

export function watchedLog(): WatchedLog {
  const waiting: { msg: string; resolve: (o: object) => void }[] = [];
  const lines: string[] = [];
  const line = (obj: object, msg: string): void => {
    lines.push(msg);
    for (const w of waiting.filter((x) => x.msg === msg)) {
      waiting.splice(waiting.indexOf(w), 1);
      w.resolve(obj);
    }
  };
  return {
    info: line,
    warn: line,
    error: line,
    lines,
    seen: (msg) => new Promise((resolve) => waiting.push({ msg, resolve })),
  };
}
