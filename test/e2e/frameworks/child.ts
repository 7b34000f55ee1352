/**
 * Runs the framework client programs beside this file (Go, PHP, Python) as children of the test,
 * with the environment the AWS tools get (test/support/server.ts awsToolEnv: dummy credentials,
 * no config files, nothing of the parent's AWS_* or pyenv's variables), and Python writing no
 * __pycache__ into the source tree.
 */
import { execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { awsToolEnv } from '../../support/server.js';
import { track } from '../../support/process.js';

function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  return { ...awsToolEnv(), PYTHONDONTWRITEBYTECODE: '1', ...env };
}

/** This directory, where the programs are; they run with it as their working directory. */
const FRAMEWORKS_DIR = fileURLToPath(new URL('.', import.meta.url));

export interface Finished {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `command args` to its end (killed after `timeoutMs`). */
export function run(
  command: string,
  args: readonly string[],
  env: Record<string, string>,
  timeoutMs: number,
): Promise<Finished> {
  return new Promise((resolve) => {
    const child = execFile(
      command,
      args,
      { cwd: FRAMEWORKS_DIR, env: childEnv(env), timeout: timeoutMs, encoding: 'utf8' },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
        resolve({ code, stdout, stderr });
      },
    );
    track(child);
  });
}

/** The one JSON line a program printed last, or a failure that shows everything it wrote. */
export function lastJsonLine(what: string, result: Finished): unknown {
  const line = result.stdout.trim().split('\n').at(-1) ?? '';
  if (result.code !== 0 || !line.startsWith('{')) {
    throw new Error(`${what} exited with ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
  }
  return JSON.parse(line) as unknown;
}

export interface Background {
  /** Everything it wrote so far, stdout and stderr interleaved. */
  output(): string;
  /** Resolves once `pattern` appears in its output; rejects if it exits first or after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray>;
  /** `signal`, then SIGKILL after 10 s; resolves once it has exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** Starts `command args` in the background, e.g. a worker that runs until stopped. */
export function start(command: string, args: readonly string[], env: Record<string, string>): Background {
  const proc = spawn(command, args, {
    cwd: FRAMEWORKS_DIR,
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  track(proc);
  let out = '';
  let exited = false;
  const listeners = new Set<() => void>();
  const changed = (): void => listeners.forEach((l) => l());
  proc.stdout.setEncoding('utf8').on('data', (s: string) => ((out += s), changed()));
  proc.stderr.setEncoding('utf8').on('data', (s: string) => ((out += s), changed()));
  const gone = new Promise<void>((resolve) =>
    proc.once('close', () => ((exited = true), changed(), resolve())),
  );
  return {
    output: () => out,
    waitFor(pattern, timeoutMs) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => done(new Error(`no ${String(pattern)} within ${timeoutMs} ms`)),
          timeoutMs,
        );
        const check = (): void => {
          const m = pattern.exec(out);
          if (m !== null) done(undefined, m);
          else if (exited) done(new Error(`exited (${proc.exitCode}) before ${String(pattern)}`));
        };
        function done(err: Error | undefined, m?: RegExpMatchArray): void {
          clearTimeout(timer);
          listeners.delete(check);
          if (m !== undefined) resolve(m);
          else reject(new Error(`${err?.message}\noutput:\n${out}`));
        }
        listeners.add(check);
        check();
      });
    },
    async stop(signal = 'SIGTERM') {
      if (exited) return;
      proc.kill(signal);
      const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await gone;
      clearTimeout(timer);
    },
  };
}
