/**
 * Runs boto3-style calls (test/support/boto3.ts: `{ op: 'send_message', params, headers }`, `$N.Path`
 * placeholders, bytes as `{ __b64 }`) through @aws-sdk/client-sqs, the JSON 1.0 protocol, and
 * answers in boto3_calls.py's format, so test/support/boto3-scenarios.ts runs over the SDK too.
 *
 * An error's fields are what the SDK surfaces: `Code` and `Type` (from `x-amzn-query-error`),
 * `message`, the HTTP status; `queryErrorCode` is the JSON `__type` after `#`, read from the body
 * before the SDK parses it, as botocore's QueryErrorCode is.
 */
import { pastMillisecond } from './clock.js';
import { createRequire } from 'node:module';
import { Readable } from 'node:stream';
import * as sqs from '@aws-sdk/client-sqs';
import type { Boto3Call, Boto3Result, Boto3Run } from './boto3.js';
import { sqsClient } from './server.js';

const require = createRequire(import.meta.url);

interface RawResponse {
  statusCode: number;
  headers: Record<string, string | undefined>;
  body: unknown;
}

type Command = new (input: unknown) => Parameters<sqs.SQSClient['send']>[0];

/** `send_message` -> SendMessageCommand. */
function commandOf(op: string): Command {
  const name = `${op.replace(/(^|_)([a-z])/g, (_, __: string, c: string) => c.toUpperCase())}Command`;
  const command = (sqs as unknown as Record<string, Command | undefined>)[name];
  if (command === undefined) throw new Error(`@aws-sdk/client-sqs has no ${name}`);
  return command;
}

function decode(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(decode);
  if (typeof value === 'object' && value !== null) {
    const keys = Object.keys(value);
    const b64 = (value as { __b64?: unknown }).__b64;
    if (keys.length === 1 && typeof b64 === 'string') return new Uint8Array(Buffer.from(b64, 'base64'));
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, decode(v)]));
  }
  return value;
}

function encode(value: unknown): unknown {
  if (value instanceof Uint8Array) return { __b64: Buffer.from(value).toString('base64') };
  if (Array.isArray(value)) return value.map(encode);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, encode(v)]));
  }
  return value;
}

function substitute(value: unknown, results: readonly Boto3Result[]): unknown {
  if (typeof value === 'string' && /^\$\d/.test(value)) {
    const [index = '', ...path] = value.slice(1).split('.');
    const result = results[Number(index)];
    if (result === undefined || !result.ok) throw new Error(`${value}: call ${index} did not succeed`);
    let v: unknown = result.response;
    for (const part of path) v = (v as Record<string, unknown>)[part];
    return v;
  }
  if (Array.isArray(value)) return value.map((v) => substitute(v, results));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, results)]));
  }
  return value;
}

async function readAll(body: unknown): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body as AsyncIterable<Uint8Array>) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

export async function sdkCalls(endpoint: string, calls: readonly Boto3Call[]): Promise<Boto3Run> {
  const client = sqsClient(endpoint);
  let headers: Record<string, string> = {};
  /** What the middleware below saw of the current call's reply. */
  const seen: { contentType: string | null; jsonType: string | null } = { contentType: null, jsonType: null };
  client.middlewareStack.add(
    (next) => (args) => {
      const request = args.request as { headers: Record<string, string> };
      Object.assign(request.headers, headers);
      return next(args);
    },
    { step: 'build', name: 'testExtraHeaders' },
  );
  // Inside the SDK's deserializer: sees the reply before it is parsed.
  client.middlewareStack.add(
    (next) => async (args) => {
      const out = await next(args);
      const response = out.response as RawResponse;
      seen.contentType = response.headers['content-type'] ?? null;
      if (response.statusCode >= 300) {
        const body = await readAll(response.body);
        response.body = Readable.from([body]);
        const type = (JSON.parse(body.toString('utf8')) as { __type?: string }).__type;
        seen.jsonType = type === undefined ? null : type.slice(type.indexOf('#') + 1);
      }
      return out;
    },
    { step: 'deserialize', priority: 'low', name: 'testRawReply' },
  );
  const results: Boto3Result[] = [];
  let lastReplyMs = 0;
  try {
    for (const call of calls) {
      if (call.nextMillisecond === true) await pastMillisecond(lastReplyMs);
      headers = call.headers ?? {};
      seen.contentType = null;
      seen.jsonType = null;
      const Command = commandOf(call.op);
      try {
        const output: unknown = await client.send(
          new Command(decode(substitute(call.params ?? {}, results))),
        );
        const { $metadata, ...response } = output as {
          $metadata: { httpStatusCode?: number; attempts?: number };
        };
        results.push({
          ok: true,
          status: $metadata.httpStatusCode ?? 0,
          attempts: $metadata.attempts ?? 1,
          response: encode(response) as Record<string, unknown>,
          contentType: seen.contentType,
        });
      } catch (e) {
        const err = e as {
          Code?: string;
          Type?: string;
          name: string;
          message: string;
          $metadata?: { httpStatusCode?: number; attempts?: number };
        };
        if (err.$metadata === undefined) throw e; // not a service error
        results.push({
          ok: false,
          status: err.$metadata.httpStatusCode ?? 0,
          attempts: err.$metadata.attempts ?? 1,
          code: err.Code ?? err.name,
          message: err.message,
          type: err.Type ?? null,
          queryErrorCode: seen.jsonType,
          contentType: seen.contentType,
        });
      }
      lastReplyMs = Date.now();
    }
  } finally {
    client.destroy();
  }
  // In boto3_calls.py's `boto3` field: the client library that ran the calls, and its version.
  const { version } = require('@aws-sdk/client-sqs/package.json') as { version: string };
  return { protocol: 'json', boto3: `@aws-sdk/client-sqs ${version}`, botocore: '', results };
}
