/**
 * Calls through a real boto3 by way of test/fixtures/boto3_calls.py (see that script for the request
 * and answer format), run by one of two interpreters:
 * - `DEBIAN_PYTHON` (`/usr/bin/python3`): Debian's python3-boto3 1.26, botocore 1.29, Query protocol;
 * - `findCurrentBoto3()`: a python whose botocore is >= 1.31, so its SQS model speaks JSON 1.0 (e.g.
 *   pyenv's), when this machine has one.
 */
import { execFile, execFileSync } from 'node:child_process';
import { accessSync, constants, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { awsToolEnv, DEBIAN_PYTHON } from './server.js';

const SCRIPT = fileURLToPath(new URL('../fixtures/boto3_calls.py', import.meta.url));

export interface Boto3Call {
  readonly op: string;
  readonly params?: Record<string, unknown>;
  /** Added to the call's HTTP request (e.g. X-Amzn-Trace-Id). */
  readonly headers?: Record<string, string>;
  /**
   * Sent only once the clock has moved past the millisecond of the previous call's reply: for
   * checks of the order of events the server tells apart by their millisecond.
   */
  readonly nextMillisecond?: boolean;
}

export type Boto3Result =
  | {
      readonly ok: true;
      readonly status: number;
      /** HTTP requests botocore made for the call (its RetryAttempts + 1). */
      readonly attempts: number;
      readonly response: Record<string, unknown>;
      /** The reply's Content-Type header, as sent. */
      readonly contentType: string | null;
    }
  | {
      readonly ok: false;
      readonly contentType: string | null;
      readonly status: number;
      readonly attempts: number;
      readonly code: string;
      readonly message: string;
      readonly type: string | null;
      /** botocore's Error.QueryErrorCode: the JSON `__type` (after `#`) when Code came from x-amzn-query-error. */
      readonly queryErrorCode: string | null;
    };

export interface Boto3Run {
  readonly protocol: string;
  readonly boto3: string;
  readonly botocore: string;
  readonly results: Boto3Result[];
  /** The results of {@link Boto3Options.onThrottled}'s calls, when given. */
  readonly onThrottledResults?: Boto3Result[];
}

export interface Boto3Options {
  /** botocore's default retries in this mode; unset: one attempt, errors as they come. */
  readonly retryMode?: 'standard' | 'legacy';
  /**
   * Run once, by a second client without retries, when the first RequestThrottled reaches
   * botocore's retry handler and before it retries: e.g. a consumer draining the queue.
   */
  readonly onThrottled?: readonly Boto3Call[];
  /** Added to the tools' environment (a tenant's AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY). */
  readonly env?: Readonly<Record<string, string>>;
}

/** Bytes for the script: `{ __b64: ... }`. */
export function b64(bytes: Uint8Array): { __b64: string } {
  return { __b64: Buffer.from(bytes).toString('base64') };
}

/** Runs `calls` in order through the boto3 of `python` (Debian's unless told). */
export async function boto3Calls(
  endpoint: string,
  calls: readonly Boto3Call[],
  python: string = DEBIAN_PYTHON,
  options: Boto3Options = {},
): Promise<Boto3Run> {
  const { env: extraEnv, ...scriptOptions } = options;
  const input = JSON.stringify({ endpoint, calls, ...scriptOptions });
  const env = { ...awsToolEnv(), ...extraEnv };
  if (options.retryMode !== undefined) {
    // botocore's own defaults for the mode: these would override them.
    delete env['AWS_MAX_ATTEMPTS'];
    delete env['AWS_RETRY_MODE'];
  }
  const { stdout, stderr, code } = await new Promise<{ stdout: string; stderr: string; code: number }>(
    (resolve) => {
      const child = execFile(
        python,
        [SCRIPT],
        { env, timeout: 60_000, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
        (error, out, err) => {
          resolve({
            stdout: out,
            stderr: err,
            code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1,
          });
        },
      );
      child.stdin?.end(input);
    },
  );
  if (code !== 0) throw new Error(`boto3_calls.py under ${python} failed (exit ${code}):\n${stderr}`);
  return JSON.parse(stdout) as Boto3Run;
}

/** The response of a result that must have succeeded. */
export function ok(result: Boto3Result | undefined): Record<string, unknown> {
  if (result === undefined) throw new Error('no such result');
  if (!result.ok) throw new Error(`expected success, got ${result.status} ${result.code}: ${result.message}`);
  return result.response;
}

// ---------------------------------------------------------------------------------------------
// A current boto3 (JSON protocol)
// ---------------------------------------------------------------------------------------------

export interface CurrentBoto3 {
  /** The candidate path that answered, e.g. `/root/.pyenv/shims/python3`. */
  readonly python: string;
  /** What that python reports as `sys.executable`. */
  readonly executable: string;
  readonly boto3: string;
  readonly botocore: string;
}

/** What a candidate reports about itself and its boto3; exits non-zero when boto3 does not import. */
const PROBE = `
import json, sys
import boto3, botocore, botocore.session
print(json.dumps({
    "executable": sys.executable,
    "venv": sys.prefix != sys.base_prefix,
    "boto3": boto3.__version__,
    "botocore": botocore.__version__,
    "protocol": botocore.session.get_session().get_service_model("sqs").protocol,
}))
`;

/** The first `python3` on PATH, as a path (undefined when there is none). */
function python3OnPath(): string | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, 'python3');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

function sameFile(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return false;
  }
}

/** botocore >= 1.31: the first release whose SQS model speaks JSON 1.0. */
function atLeast131(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 1 || (major === 1 && minor >= 31);
}

function probe(python: string): CurrentBoto3 | undefined {
  // Never Debian's interpreter, whatever its packages: the Query tests own that one.
  if (python === DEBIAN_PYTHON) return undefined;
  let out: string;
  try {
    out = execFileSync(python, ['-c', PROBE], {
      env: awsToolEnv(),
      timeout: 30_000,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch {
    return undefined; // not runnable, or no boto3
  }
  const r = JSON.parse(out) as {
    executable: string;
    venv: boolean;
    boto3: string;
    botocore: string;
    protocol: string;
  };
  // /bin/python3 (merged /usr) is Debian's too; a venv built on it has its own packages.
  if (!r.venv && sameFile(r.executable, DEBIAN_PYTHON)) return undefined;
  if (r.protocol !== 'json' || !atLeast131(r.botocore)) return undefined;
  return { python, executable: r.executable, boto3: r.boto3, botocore: r.botocore };
}

let found: { value: CurrentBoto3 | undefined } | undefined;

/**
 * A python with a current boto3 (its botocore's SQS model says `json`), asked once per process:
 * `python3` on PATH, then `${PYENV_ROOT:-$HOME/.pyenv}/shims/python3`, then
 * `/root/.pyenv/shims/python3`; the first that imports boto3 and speaks JSON wins. Undefined when
 * none does (PyPI cannot be reached here, so it is used where present, never installed).
 */
export function findCurrentBoto3(): CurrentBoto3 | undefined {
  if (found !== undefined) return found.value;
  const pyenvRoot = process.env['PYENV_ROOT'] || join(homedir(), '.pyenv');
  const candidates = [python3OnPath(), join(pyenvRoot, 'shims', 'python3'), '/root/.pyenv/shims/python3'];
  const tried = new Set<string>();
  let value: CurrentBoto3 | undefined;
  for (const candidate of candidates) {
    if (candidate === undefined || tried.has(candidate)) continue;
    tried.add(candidate);
    value = probe(candidate);
    if (value !== undefined) break;
  }
  found = { value };
  return value;
}
