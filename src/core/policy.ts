/**
 * AddPermission / RemovePermission: edits of the queue's `Policy` document, the same attribute
 * SetQueueAttributes sets and GetQueueAttributes returns. A permission is one statement:
 *
 *   { "Sid": <label>, "Effect": "Allow",
 *     "Principal": { "AWS": "arn:aws:iam::<account>:root" | [ ... ] },
 *     "Action": "SQS:<Action>" | [ ... ], "Resource": <queue ARN> }
 *
 * in a document `{ "Version": "2008-10-17", "Id": "<queue ARN>/SQSDefaultPolicy", "Statement": [...] }`
 * (the shape AWS writes; a single principal or action is a string, several an array). The
 * policy is stored, not enforced: without IAM there is nobody to deny (docs/compatibility.md).
 *
 * Quotas (SQS developer guide, "Amazon SQS policy quotas"): 8,192 bytes, 20 statements,
 * 50 principals, 7 actions per statement.
 */
import { CoreError } from './errors.js';
import {
  POLICY_MAX_ACTIONS,
  POLICY_MAX_BYTES,
  POLICY_MAX_PRINCIPALS,
  POLICY_MAX_STATEMENTS,
} from './limits.js';

interface PolicyDocument {
  Version?: unknown;
  Id?: unknown;
  Statement?: unknown;
  [k: string]: unknown;
}

function parse(policy: string | undefined): PolicyDocument | undefined {
  if (policy === undefined || policy === '') return undefined;
  try {
    const v: unknown = JSON.parse(policy);
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as PolicyDocument;
  } catch {
    // a Policy is validated as a JSON object when set, so this is not reached
  }
  return undefined;
}

function statements(doc: PolicyDocument): Array<Record<string, unknown>> {
  const s = doc.Statement;
  if (Array.isArray(s))
    return s.filter((x): x is Record<string, unknown> => x !== null && typeof x === 'object');
  if (s !== null && typeof s === 'object') return [s as Record<string, unknown>];
  return [];
}

function labelInvalid(label: string, reason: string): CoreError {
  return new CoreError(
    'InvalidParameterValue',
    `Value ${label} for parameter Label is invalid. Reason: ${reason}`,
  );
}

/**
 * The Policy after granting `actions` (names without the `SQS:` prefix, or `*`) to the given
 * accounts under `label`. The caller has checked the names.
 */
export function addPermission(
  policy: string | undefined,
  queueArn: string,
  label: string,
  accountIds: readonly string[],
  actions: readonly string[],
): string {
  const doc = parse(policy) ?? { Version: '2008-10-17', Id: `${queueArn}/SQSDefaultPolicy`, Statement: [] };
  const list = statements(doc);
  if (list.some((s) => s.Sid === label)) throw labelInvalid(label, 'Already exists.');
  if (list.length >= POLICY_MAX_STATEMENTS) {
    throw new CoreError('OverLimit', `${POLICY_MAX_STATEMENTS} statements per policy exceeded.`);
  }
  const principals = [...new Set(accountIds)].map((a) => `arn:aws:iam::${a}:root`);
  if (principals.length > POLICY_MAX_PRINCIPALS) {
    throw new CoreError('OverLimit', `${POLICY_MAX_PRINCIPALS} principals per policy exceeded.`);
  }
  const names = [...new Set(actions)].map((a) => `SQS:${a}`);
  if (names.length > POLICY_MAX_ACTIONS) {
    throw new CoreError(
      'OverLimit',
      `${names.length} Actions were found, maximum allowed is ${POLICY_MAX_ACTIONS}.`,
    );
  }
  list.push({
    Sid: label,
    Effect: 'Allow',
    Principal: { AWS: principals.length === 1 ? principals[0] : principals },
    Action: names.length === 1 ? names[0] : names,
    Resource: queueArn,
  });
  doc.Statement = list;
  const out = JSON.stringify(doc);
  if (Buffer.byteLength(out) > POLICY_MAX_BYTES) {
    throw new CoreError('OverLimit', `Policy size ${POLICY_MAX_BYTES} bytes exceeded.`);
  }
  return out;
}

/** The Policy without the statement `label`; '' (no Policy) when it was the last one. */
export function removePermission(policy: string | undefined, label: string): string {
  const doc = parse(policy);
  const list = doc === undefined ? [] : statements(doc);
  const kept = list.filter((s) => s.Sid !== label);
  if (doc === undefined || kept.length === list.length) throw labelInvalid(label, "can't find label.");
  if (kept.length === 0) return '';
  doc.Statement = kept;
  return JSON.stringify(doc);
}
