/**
 * Calls through Debian's boto3 1.26 (`/usr/bin/python3`, Query protocol) by way of
 * test/fixtures/boto3_query.py. See that script for the request and answer format.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { awsToolEnv, DEBIAN_PYTHON, requireDebianBoto3 } from './server.js';

const SCRIPT = fileURLToPath(new URL('../fixtures/boto3_query.py', import.meta.url));

export interface Boto3Call {
  readonly op: string;
  readonly params?: Record<string, unknown>;
}

export type Boto3Result =
  | { readonly ok: true; readonly status: number; readonly response: Record<string, unknown> }
  | {
      readonly ok: false;
      readonly status: number;
      readonly code: string;
      readonly message: string;
      readonly type: string | null;
    };

export interface Boto3Run {
  readonly protocol: string;
  readonly boto3: string;
  readonly botocore: string;
  readonly results: Boto3Result[];
}

/** Bytes for the script: `{ __b64: ... }`. */
export function b64(bytes: Uint8Array): { __b64: string } {
  return { __b64: Buffer.from(bytes).toString('base64') };
}

export async function boto3Calls(endpoint: string, calls: readonly Boto3Call[]): Promise<Boto3Run> {
  requireDebianBoto3();
  const input = JSON.stringify({ endpoint, calls });
  const { stdout, stderr, code } = await new Promise<{ stdout: string; stderr: string; code: number }>(
    (resolve) => {
      const child = execFile(
        DEBIAN_PYTHON,
        [SCRIPT],
        { env: awsToolEnv(), timeout: 60_000, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
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
  if (code !== 0) throw new Error(`boto3_query.py failed (exit ${code}):\n${stderr}`);
  return JSON.parse(stdout) as Boto3Run;
}

/** The response of a result that must have succeeded. */
export function ok(result: Boto3Result | undefined): Record<string, unknown> {
  if (result === undefined) throw new Error('no such result');
  if (!result.ok) throw new Error(`expected success, got ${result.status} ${result.code}: ${result.message}`);
  return result.response;
}
