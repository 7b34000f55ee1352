/**
 * The AWS JSON 1.0 codec: `X-Amz-Target: AmazonSQS.<Action>` plus the request shape as a JSON body
 * in; the result shape as JSON, or `{"__type","message"}` with `x-amzn-query-error`, out.
 */
import { SqsError } from '../sqs/errors.js';
import type { ActionName } from '../sqs/model.generated.js';
import { invalidAction, requireMembers, utf8Text } from './common.js';
import { compiledOperations, type Node, type StructNode } from './compiled.js';

export const JSON_CONTENT_TYPE = 'application/x-amz-json-1.0';

const TARGET_PREFIX = 'AmazonSQS.';

function malformed(message: string): SqsError {
  return new SqsError('MalformedRequest', message);
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'list';
  return typeof value === 'object' ? 'object' : typeof value;
}

function wrongType(expected: string, name: string, value: unknown): SqsError {
  return malformed(`Expected ${expected} for ${name} but found ${jsonType(value)}.`);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Checks `value` against `node` in place: wrong JSON types throw MalformedRequest; members the
 * model does not know, and members sent as null, are removed (AWS ignores both). `name` is the
 * member or element being checked, for the error message.
 */
function check(node: Node, value: unknown, name: string): void {
  switch (node.k) {
    case 'string':
    case 'blob':
      if (typeof value !== 'string') throw wrongType('a string', name, value);
      return;
    case 'integer':
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
        throw wrongType('an integer', name, value);
      }
      return;
    case 'boolean':
      if (typeof value !== 'boolean') throw wrongType('a boolean', name, value);
      return;
    case 'list': {
      if (!Array.isArray(value)) throw wrongType('a list', name, value);
      const member = node.member;
      for (let i = 0; i < value.length; i++) {
        const element: unknown = value[i];
        if (element === null || element === undefined) throw wrongType('a list element', name, null);
        check(member, element, name);
      }
      return;
    }
    case 'map': {
      if (!isPlainObject(value)) throw wrongType('a map', name, value);
      const valueNode = node.value;
      for (const key of Object.keys(value)) {
        const entry = value[key];
        // The entry's key names it in an error: no string is built on the good path.
        if (entry === null || entry === undefined) throw wrongType('a map value', key, null);
        check(valueNode, entry, key);
      }
      return;
    }
    case 'structure':
      if (!isPlainObject(value)) throw wrongType('a structure', name, value);
      checkStruct(node, value);
      return;
  }
}

function checkStruct(node: StructNode, value: Record<string, unknown>): void {
  for (const key of Object.keys(value)) {
    const member = node.byName.get(key);
    const memberValue = value[key];
    if (member === undefined || memberValue === null || memberValue === undefined) {
      // Rare (old or newer clients, explicit nulls); the common path never deletes.
      delete value[key];
      continue;
    }
    check(member.node, memberValue, key);
  }
}

function parseBody(body: Buffer | string): unknown {
  if (body.length === 0) return {};
  const text = typeof body === 'string' ? body : utf8Text(body);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw malformed('The request body is not valid JSON.');
  }
}

/**
 * Decodes a JSON 1.0 request. The returned input has the model's JSON shape (checked types, no
 * unknown members) and every required top-level member present.
 */
export function decodeJson(
  target: string | undefined,
  body: Buffer | string,
): { action: ActionName; input: unknown } {
  if (target === undefined || !target.startsWith(TARGET_PREFIX)) throw invalidAction();
  const op = compiledOperations.get(target.slice(TARGET_PREFIX.length));
  if (op === undefined) throw invalidAction();
  const input = parseBody(body);
  if (!isPlainObject(input)) throw malformed('The request body must be a JSON object.');
  try {
    checkStruct(op.input, input);
  } catch (err) {
    if (err instanceof SqsError) throw err;
    // A body built to break the walk (absurd nesting and the like) is still only a bad request.
    throw malformed('The request body could not be read.');
  }
  requireMembers(op.input.required, input);
  return { action: op.action, input };
}

/** The result as JSON; `undefined` members vanish, an action without output answers `{}`. */
export function encodeJson(output: unknown): string {
  return output === undefined || output === null ? '{}' : JSON.stringify(output);
}

export interface EncodedError {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export function encodeJsonError(err: SqsError): EncodedError {
  const def = err.def;
  return {
    status: def.status,
    headers: {
      'content-type': JSON_CONTENT_TYPE,
      // botocore in query-compatible mode reads the Query code from here; the `;Sender` suffix
      // is part of what it parses.
      'x-amzn-query-error': `${def.queryCode};${def.fault}`,
    },
    body: JSON.stringify({ __type: def.jsonType, message: err.message }),
  };
}
