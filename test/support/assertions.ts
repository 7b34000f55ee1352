import assert from 'node:assert/strict';

/** What @aws-sdk/client-sqs surfaces for a service error (JSON protocol, query-compatible). */
export interface SdkErrorExpectation {
  /** `error.name`: the modelled exception (QueueDoesNotExist) or, for unmodelled ones, the Query code. */
  readonly name: string;
  /** `error.Code`: the Query code, read from the `x-amzn-query-error` header. */
  readonly code: string;
  readonly status: number;
}

/** Awaits `call`, which must fail with the given service error. */
export async function expectSdkError(call: Promise<unknown>, want: SdkErrorExpectation): Promise<void> {
  let caught: unknown;
  try {
    await call;
  } catch (e) {
    caught = e;
  }
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
