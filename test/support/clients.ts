/**
 * The SQS clients an e2e scenario runs over, behind one interface, so that a scenario is written
 * once (test/support/scenarios-*.ts) and registered by each client's test file:
 * - `sdkClient`: @aws-sdk/client-sqs, the JSON 1.0 protocol;
 * - `cliClient`: Debian's aws-cli 2.9 at /usr/bin/aws, the Query protocol (one process a call,
 *   input through `--cli-input-json`, the HTTP status read from `--debug`).
 *
 * A scenario calls `client.call('SendMessage', input)` with the SDK's input shape and gets the SDK's
 * output shape back from either client, binary members as Buffer. A service error rejects with
 * `ServiceError`: what every client shows (the Query code, the HTTP status, the message) and the
 * SDK's error name where the client has one. Set-up and checks that are not the action under test
 * go through the scenario's fixture (test/support/sqs.ts), which is cheaper than an aws-cli process.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as sqs from '@aws-sdk/client-sqs';
import { rejection } from './assertions.js';
import type { FileTests } from './requires.js';
import { awsCli, sqsClient } from './server.js';
import { sharedServer, type SharedServer } from './sqs.js';

export type Protocol = 'json' | 'query';

export interface SqsTestClient {
  /** Names the tests, e.g. "SDK v3 (JSON)". */
  readonly name: string;
  readonly protocol: Protocol;
  /** Runs one SQS action (e.g. 'SendMessage') with the SDK's input; resolves with the SDK's output. */
  call(action: string, input: Record<string, unknown>): Promise<Output>;
  close(): void;
}

/** An action's output as the SDK shapes it (without `$metadata`); binary members are Buffers. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- scenarios read the members they asked for, as the SDK's untyped JSON
export type Output = Record<string, any>;

export class ServiceError extends Error {
  constructor(
    /** The Query error code (`x-amzn-query-error` over JSON, `<Code>` over Query). */
    readonly code: string,
    readonly status: number,
    message: string,
    /** The SDK's error name (the JSON `__type` of a modelled error); undefined for the CLI. */
    readonly sdkName?: string,
  ) {
    super(message);
  }
}

/** What a scenario expects of a failed call; `name` is checked where the client surfaces one. */
export interface ErrorExpectation {
  readonly code: string;
  readonly status: number;
  readonly name?: string;
  readonly message?: string | RegExp;
}

const sameName = (code: string, status = 400): ErrorExpectation => ({ name: code, code, status });
const prefixed = (name: string, status = 400, code = name): ErrorExpectation => ({
  name,
  code: `AWS.SimpleQueueService.${code}`,
  status,
});

/** The errors the scenarios expect, as AWS answers them: the SDK's name, the Query code, the status. */
export const SQS_ERRORS = {
  noQueue: prefixed('QueueDoesNotExist', 400, 'NonExistentQueue'),
  queueExists: { name: 'QueueNameExists', code: 'QueueAlreadyExists', status: 400 },
  badAttrValue: sameName('InvalidAttributeValue'),
  badAttrName: sameName('InvalidAttributeName'),
  badParam: sameName('InvalidParameterValue'),
  missingParam: sameName('MissingParameter'),
  badHandle: sameName('ReceiptHandleIsInvalid', 404),
  tooMany: prefixed('TooManyEntriesInBatchRequest'),
  idsNotDistinct: prefixed('BatchEntryIdsNotDistinct'),
  tooLong: prefixed('BatchRequestTooLong'),
  empty: prefixed('EmptyBatchRequest'),
  purging: prefixed('PurgeQueueInProgress', 403),
} satisfies Record<string, ErrorExpectation>;

export async function expectServiceError(
  call: Promise<unknown>,
  want: ErrorExpectation,
): Promise<ServiceError> {
  const caught = await rejection(call);
  assert.ok(
    caught instanceof ServiceError,
    `expected ${want.code}, got ${caught instanceof Error ? caught.stack : caught === undefined ? 'success' : 'a non-Error'}`,
  );
  const seen = `code=${caught.code} status=${caught.status} name=${String(caught.sdkName)} message=${caught.message}`;
  assert.equal(caught.code, want.code, `error code (${seen})`);
  assert.equal(caught.status, want.status, `HTTP status (${seen})`);
  if (want.name !== undefined && caught.sdkName !== undefined) assert.equal(caught.sdkName, want.name, seen);
  if (typeof want.message === 'string') assert.equal(caught.message, want.message, seen);
  else if (want.message !== undefined) assert.match(caught.message, want.message, seen);
  return caught;
}

type Command = new (input: unknown) => Parameters<sqs.SQSClient['send']>[0];

/** Uint8Array members as Buffers, so output compares the same from every client. */
function buffers(value: unknown): unknown {
  if (value instanceof Uint8Array) return Buffer.from(value);
  if (Array.isArray(value)) return value.map(buffers);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, buffers(v)]));
  }
  return value;
}

export function sdkClient(url: string): SqsTestClient {
  const client = sqsClient(url);
  return {
    name: 'SDK v3 (JSON)',
    protocol: 'json',
    async call(action, input) {
      const Command = (sqs as unknown as Record<string, Command | undefined>)[`${action}Command`];
      if (Command === undefined) throw new Error(`@aws-sdk/client-sqs has no ${action}Command`);
      try {
        const output = (await client.send(new Command(input))) as { $metadata?: unknown };
        delete output.$metadata;
        return buffers(output) as Output;
      } catch (e) {
        const err = e as {
          name: string;
          message: string;
          $metadata?: { httpStatusCode?: number };
          $response?: { headers?: Record<string, string | undefined> };
        };
        if (err.$metadata === undefined) throw e; // not a service error
        // err.Code may come from the body when the header is missing; only the header is the
        // Query code the server chose, so a server that forgot it fails the test.
        const queryCode = err.$response?.headers?.['x-amzn-query-error']?.split(';')[0];
        throw new ServiceError(
          queryCode ?? err.name,
          err.$metadata.httpStatusCode ?? 0,
          err.message,
          err.name,
        );
      }
    },
    close: () => client.destroy(),
  };
}

/** The blob members of SQS output, which aws-cli prints as base64. */
const BLOB_KEYS = new Set(['BinaryValue', 'BinaryListValues']);

function decodeCliBlobs(value: unknown, key = ''): unknown {
  if (BLOB_KEYS.has(key)) {
    return Array.isArray(value)
      ? value.map((v) => Buffer.from(String(v), 'base64'))
      : Buffer.from(String(value), 'base64');
  }
  if (Array.isArray(value)) return value.map((v) => decodeCliBlobs(v));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, decodeCliBlobs(v, k)]));
  }
  return value;
}

/** The actions whose output aws-cli would otherwise page through and merge. */
const PAGINATED = new Set(['ListQueues', 'ListDeadLetterSourceQueues']);

/**
 * The SDK's input as aws-cli 2.9's model names it: that model predates
 * `MessageSystemAttributeNames`, which the service reads as the older `AttributeNames`.
 */
function cliInput(action: string, input: Record<string, unknown>): Record<string, unknown> {
  if (action !== 'ReceiveMessage' || !('MessageSystemAttributeNames' in input)) return input;
  const { MessageSystemAttributeNames, ...rest } = input;
  return { ...rest, AttributeNames: MessageSystemAttributeNames };
}

/** aws-cli v2 reads blob members of `--cli-input-json` as base64. */
function encodeCliBlobs(value: unknown): unknown {
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (Array.isArray(value)) return value.map(encodeCliBlobs);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, encodeCliBlobs(v)]));
  }
  return value;
}

let inputFiles = 0;

export function cliClient(url: string): SqsTestClient {
  return {
    name: 'aws-cli 2.9 (Query)',
    protocol: 'query',
    async call(action, input) {
      const command = action.replace(/([a-z])([A-Z])/g, '$1-$2').toLowerCase();
      // A file, not an argument: one argument may not exceed 128 KiB and a body may be 1 MiB.
      const file = join(tmpdir(), `shared-sqs-cli-input-${process.pid}-${++inputFiles}.json`);
      writeFileSync(file, JSON.stringify(encodeCliBlobs(cliInput(action, input))));
      try {
        const args = [command, '--cli-input-json', `file://${file}`];
        if (PAGINATED.has(action)) args.push('--no-paginate');
        const res = await awsCli(url, args, { debug: true });
        if (res.code === 0) return decodeCliBlobs(res.json ?? {}) as Output;
        if (res.errorCode === undefined || res.status === undefined) {
          throw new Error(
            `aws sqs ${command} failed without a service error (exit ${res.code}):\n${res.stderr.slice(-2000)}`,
          );
        }
        throw new ServiceError(res.errorCode, res.status, res.errorMessage ?? '');
      } finally {
        rmSync(file, { force: true });
      }
    },
    close: () => undefined,
  };
}

/** A client a scenario can run over, named before any server is started (tests are named by it). */
export interface ClientKind {
  readonly name: string;
  readonly protocol: Protocol;
  connect(url: string): SqsTestClient;
}

export const SDK_V3: ClientKind = { name: 'SDK v3 (JSON)', protocol: 'json', connect: sdkClient };
export const AWS_CLI: ClientKind = { name: 'aws-cli 2.9 (Query)', protocol: 'query', connect: cliClient };

/** What a scenario is given: the client under test and a fixture on the same server for set-up. */
export interface ScenarioContext {
  /** Which client the tests run over: known when the tests are declared. */
  readonly kind: ClientKind;
  /** The client whose calls are under test (made on first use, once the server is up). */
  readonly client: SqsTestClient;
  /** Set-up and checks (SDK over JSON, whatever the client): not what is under test. */
  readonly sqs: SharedServer;
}

/**
 * Starts one server for the file, connects `kind`'s client to it, and hands both to `register`,
 * which declares the scenario's tests with `tests` (node:test's, or skipped ones from
 * test/support/requires.ts when the client's program is missing).
 */
export function withClient(
  tests: FileTests,
  kind: ClientKind,
  register: (ctx: ScenarioContext, tests: FileTests) => void,
): void {
  const fixture = sharedServer({ hooks: tests });
  let client: SqsTestClient | undefined;
  // Made on first use, not in a before hook: under Node 20 such a hook may run before
  // sharedServer's, when the server has no URL yet.
  tests.after(() => client?.close());
  register(
    {
      kind,
      get client(): SqsTestClient {
        client ??= kind.connect(fixture.server.url);
        return client;
      },
      sqs: fixture,
    },
    tests,
  );
}
