/**
 * Every process a test file spawns (servers, redis-server, nginx) is registered here, so that a
 * test file that fails half-way, or is ended by the runner's --test-timeout, never leaves one
 * running. A leftover child holds its pipes open and keeps the test file alive: CI once ran into
 * its 90-minute limit that way; now such a file is ended at its time limit and fails.
 * (Not --test-force-exit: on Node 20 it ends a file before all of its suites have run, silently.)
 */
import type { ChildProcess } from 'node:child_process';

const live = new Map<ChildProcess, NodeJS.Signals>();
let hooked = false;

/**
 * Registers `proc` until it exits. `lastWord` is what it gets if this test process exits first:
 * SIGKILL by default; nginx takes SIGTERM so that its master takes its workers down with it.
 */
export function track(proc: ChildProcess, lastWord: NodeJS.Signals = 'SIGKILL'): void {
  if (!hooked) {
    hooked = true;
    // The runner ends a test file that overran --test-timeout with SIGTERM, which skips 'exit'
    // handlers unless the file turns it into an exit of its own.
    process.once('SIGTERM', () => process.exit(143));
    // 'exit' handlers run synchronously; kill() is synchronous, which is all that is needed.
    process.once('exit', () => {
      for (const [child, sig] of live) {
        try {
          child.kill('SIGCONT');
          child.kill(sig);
        } catch {
          // already gone
        }
      }
    });
  }
  live.set(proc, lastWord);
  proc.once('exit', () => live.delete(proc));
}
