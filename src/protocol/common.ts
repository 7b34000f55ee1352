import { invalidMessageContents, missingParameter, SqsError } from '../sqs/errors.js';

/** AWS's wording for a request that names no action, and for an unknown JSON target. */
export const INVALID_ACTION_MESSAGE =
  'The action or operation requested is invalid. Verify that the action is typed correctly.';

/**
 * InvalidAction. A named action that this endpoint does not serve gets AWS's Query wording
 * (recorded: "The action FooBar is not valid for this endpoint.").
 */
export function invalidAction(action?: string): SqsError {
  return new SqsError(
    'InvalidAction',
    action === undefined ? INVALID_ACTION_MESSAGE : `The action ${action} is not valid for this endpoint.`,
  );
}

/**
 * Throws MissingParameter for the first required top-level member the input lacks, in model order.
 * Both decoders call it last, so a request missing a parameter gets the same error whichever
 * protocol it used.
 */
export function requireMembers(required: readonly string[], input: unknown): void {
  if (required.length === 0) return;
  const record = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>;
  for (const name of required) {
    const value = record[name];
    if (value === undefined || value === null) throw missingParameter(name);
  }
}

/** Puts a key that came off the wire into a plain object without `__proto__` reaching the prototype. */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    target[key] = value;
  }
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * The text of request bytes that must be UTF-8; InvalidMessageContents when they are not, rather
 * than U+FFFD in their place (the stored body would differ from what was sent, and its MD5 with
 * it). Buffer#toString puts U+FFFD for every invalid sequence, so only a text holding one (rare)
 * is decoded again, strictly.
 */
export function utf8Text(bytes: Uint8Array): string {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  if (text.includes('\uFFFD')) checkUtf8(bytes);
  return text;
}

/** The text of `bytes`; InvalidMessageContents unless they are valid UTF-8. */
export function checkUtf8(bytes: Uint8Array): string {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw invalidMessageContents();
  }
}
