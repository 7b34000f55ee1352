import assert from 'node:assert/strict';
import { CoreError, type CoreErrorCode } from '../../src/core/errors.js';
import { TenantError } from '../../src/core/tenants.js';
import { SqsError, type ErrorName } from '../../src/sqs/errors.js';
import { awsCli } from './server.js';

/** What @aws-sdk/client-sqs surfaces for a service error (JSON protocol, query-compatible). */
export interface SdkErrorExpectation {
  /** `error.name`: the modelled exception (QueueDoesNotExist) or, for unmodelled ones, the Query code. */
  readonly name: string;
  /** `error.Code`: the Query code, read from the `x-amzn-query-error` header. */
  readonly code: string;
  readonly status: number;
}

/** What `call` rejected with; undefined when it resolved. */
export async function rejection(call: Promise<unknown>): Promise<unknown> {
  try {
    await call;
  } catch (e) {
    return e ?? new Error('rejected with undefined');
  }
  return undefined;
}

/** Awaits `call`, which must fail with the given service error. */
export async function expectSdkError(call: Promise<unknown>, want: SdkErrorExpectation): Promise<void> {
  const caught = await rejection(call);
  assert.ok(caught !== undefined, `expected ${want.name}, but the call succeeded`);
  const e = caught as {
    name?: unknown;
    Code?: unknown;
    message?: unknown;
    $metadata?: { httpStatusCode?: unknown };
  };
  const seen = `name=${String(e.name)} Code=${String(e.Code)} status=${String(e.$metadata?.httpStatusCode)} message=${String(e.message)}`;
  assert.equal(e.name, want.name, `error name (${seen})`);
  assert.equal(e.Code, want.code, `error Code from x-amzn-query-error (${seen})`);
  assert.equal(e.$metadata?.httpStatusCode, want.status, `HTTP status (${seen})`);
}

/**
 * `fn` must throw the core's (or the tenant registry's) error with `code`. `detail` is a RegExp the
 * message must match, or a string naming the case in the failure.
 */
export function throwsCode(
  fn: () => unknown,
  code: CoreErrorCode | TenantError['code'],
  detail?: RegExp | string,
): void {
  const context = typeof detail === 'string' ? detail : undefined;
  assert.throws(
    fn,
    (e: unknown) => {
      assert.ok(
        e instanceof CoreError || e instanceof TenantError,
        `${context ?? ''} expected a CoreError, got ${String(e)}`,
      );
      assert.equal(e.code, code, context);
      if (detail instanceof RegExp) assert.match(e.message, detail);
      return true;
    },
    context,
  );
}

/** A predicate for `assert.rejects` and catch blocks: `e` is the SQS error `name`. */
export const isSqsError =
  (name: ErrorName) =>
  (e: unknown): boolean =>
    e instanceof SqsError && e.errorName === name;

/** `fn` must throw the SQS error `name`; `message` is its exact text, or a RegExp it must match. */
export function throwsSqsError(fn: () => unknown, name: ErrorName, message?: string | RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof SqsError, `expected an SqsError, got ${String(err)}`);
    assert.equal(err.errorName, name);
    if (typeof message === 'string') assert.equal(err.message, message);
    else if (message !== undefined) assert.match(err.message, message);
    return true;
  });
}

/**
 * The aws-cli call must fail with `code` (and `message`, when given), and the server must have
 * answered `status` (read from `--debug`).
 */
export async function expectCliError(
  serverUrl: string,
  args: string[],
  code: string,
  status: number,
  message?: string,
): Promise<void> {
  const res = await awsCli(serverUrl, args, { debug: true });
  assert.notEqual(res.code, 0, `aws sqs ${args[0]} should fail`);
  assert.equal(res.errorCode, code, `error code printed by the CLI (stderr tail: ${res.stderr.slice(-600)})`);
  assert.equal(res.status, status, 'HTTP status');
  if (message !== undefined) assert.equal(res.errorMessage, message, 'message printed by the CLI');
}

/** One statement of a queue's Policy as AddPermission writes it (src/core/policy.ts). */
export interface PolicyStatement {
  Sid: string;
  Effect: string;
  Principal: { AWS: string | string[] };
  Action: string | string[];
  Resource: string;
}

export interface PolicyDocument {
  Version: string;
  Id: string;
  Statement: PolicyStatement[];
}

/** A Policy attribute value, read as the document AddPermission writes. */
export function policyDocument(policy: string): PolicyDocument {
  return JSON.parse(policy) as PolicyDocument;
}
