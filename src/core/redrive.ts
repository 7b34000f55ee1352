/**
 * Dead-letter queue policies: a source queue's RedrivePolicy (where its messages go after
 * maxReceiveCount receives) and a dead-letter queue's RedriveAllowPolicy (which sources may name
 * it). Parsing and the checks AWS makes when a RedrivePolicy is set; the store supplies the
 * lookups (the target must exist in the same account).
 *
 * AWS's wording: `Value <policy> for parameter RedrivePolicy is invalid. Reason: <reason>.`,
 * InvalidParameterValue (400).
 */
import { CoreError } from './errors.js';
import { MAX_RECEIVE_COUNT, MAX_SOURCE_QUEUE_ARNS } from './limits.js';

export interface RedrivePolicy {
  readonly deadLetterTargetArn: string;
  readonly maxReceiveCount: number;
}

export type RedrivePermission = 'allowAll' | 'denyAll' | 'byQueue';

export interface RedriveAllowPolicy {
  readonly redrivePermission: RedrivePermission;
  readonly sourceQueueArns: readonly string[];
}

const SQS_ARN = /^arn:aws[a-z-]*:sqs:([a-z0-9-]+):(\d{12}):([A-Za-z0-9_-]{1,80}(?:\.fifo)?)$/;

export interface ParsedArn {
  readonly region: string;
  readonly accountId: string;
  readonly name: string;
}

/** An SQS queue ARN's parts; undefined when it is not one. */
export function parseQueueArn(arn: string): ParsedArn | undefined {
  const m = SQS_ARN.exec(arn);
  if (m === null) return undefined;
  return { region: m[1] as string, accountId: m[2] as string, name: m[3] as string };
}

function invalidRedrive(raw: string, reason: string): CoreError {
  return new CoreError(
    'InvalidParameterValue',
    `Value ${raw} for parameter RedrivePolicy is invalid. Reason: ${reason}`,
  );
}

function invalidAllow(raw: string, reason: string): CoreError {
  return new CoreError(
    'InvalidParameterValue',
    `Value ${raw} for parameter RedriveAllowPolicy is invalid. Reason: ${reason}`,
  );
}

function parseObject(raw: string, fail: (reason: string) => CoreError): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    throw fail('Invalid JSON.');
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw fail('Invalid JSON.');
  return v as Record<string, unknown>;
}

/**
 * Parses a RedrivePolicy as given to CreateQueue or SetQueueAttributes (maxReceiveCount may be a
 * number or a numeric string, as the SDKs' examples show both). Checks only its own shape.
 */
export function parseRedrivePolicy(raw: string): RedrivePolicy {
  const o = parseObject(raw, (r) => invalidRedrive(raw, r));
  const arn = o.deadLetterTargetArn;
  const count = o.maxReceiveCount;
  if (arn === undefined) {
    throw invalidRedrive(raw, 'Redrive policy does not contain mandatory attribute: deadLetterTargetArn.');
  }
  if (count === undefined) {
    throw invalidRedrive(raw, 'Redrive policy does not contain mandatory attribute: maxReceiveCount.');
  }
  for (const k of Object.keys(o)) {
    if (k !== 'deadLetterTargetArn' && k !== 'maxReceiveCount') {
      throw invalidRedrive(
        raw,
        `Only following attributes are supported: [deadLetterTargetArn, maxReceiveCount].`,
      );
    }
  }
  if (typeof arn !== 'string' || parseQueueArn(arn) === undefined) {
    throw invalidRedrive(raw, 'Invalid value for deadLetterTargetArn.');
  }
  const n =
    typeof count === 'number'
      ? count
      : typeof count === 'string' && /^\d+$/.test(count)
        ? Number(count)
        : NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_RECEIVE_COUNT) {
    throw invalidRedrive(
      raw,
      `Invalid value for maxReceiveCount: ${typeof count === 'string' ? count : JSON.stringify(count)}, valid values are from 1 to ${MAX_RECEIVE_COUNT} both inclusive.`,
    );
  }
  return { deadLetterTargetArn: arn, maxReceiveCount: n };
}

/** How AWS gives the policy back: the two keys in this order, maxReceiveCount a number. */
export function formatRedrivePolicy(p: RedrivePolicy): string {
  return JSON.stringify({ deadLetterTargetArn: p.deadLetterTargetArn, maxReceiveCount: p.maxReceiveCount });
}

export function parseRedriveAllowPolicy(raw: string): RedriveAllowPolicy {
  const o = parseObject(raw, (r) => invalidAllow(raw, r));
  const permission = o.redrivePermission;
  const arns = o.sourceQueueArns;
  for (const k of Object.keys(o)) {
    if (k !== 'redrivePermission' && k !== 'sourceQueueArns') {
      throw invalidAllow(
        raw,
        'Only following attributes are supported: [redrivePermission, sourceQueueArns].',
      );
    }
  }
  if (permission === undefined) {
    throw invalidAllow(
      raw,
      'Redrive permission policy does not contain mandatory attribute: redrivePermission.',
    );
  }
  if (permission !== 'allowAll' && permission !== 'denyAll' && permission !== 'byQueue') {
    throw invalidAllow(
      raw,
      'Invalid value for redrivePermission: valid values are allowAll, denyAll and byQueue.',
    );
  }
  if (permission !== 'byQueue') {
    if (arns !== undefined) {
      throw invalidAllow(raw, 'sourceQueueArns can be specified only when redrivePermission is byQueue.');
    }
    return { redrivePermission: permission, sourceQueueArns: [] };
  }
  if (!Array.isArray(arns) || arns.length === 0) {
    throw invalidAllow(
      raw,
      'sourceQueueArns must be a list of 1 to 10 queue ARNs when redrivePermission is byQueue.',
    );
  }
  if (arns.length > MAX_SOURCE_QUEUE_ARNS) {
    throw invalidAllow(
      raw,
      `The number of sourceQueueArns can't exceed ${MAX_SOURCE_QUEUE_ARNS}. To allow more source queues, set redrivePermission to allowAll.`,
    );
  }
  for (const a of arns) {
    if (typeof a !== 'string' || parseQueueArn(a) === undefined) {
      throw invalidAllow(raw, `Invalid value for sourceQueueArns: ${String(a)}.`);
    }
  }
  return { redrivePermission: 'byQueue', sourceQueueArns: arns as string[] };
}

export function formatRedriveAllowPolicy(p: RedriveAllowPolicy): string {
  return JSON.stringify(
    p.redrivePermission === 'byQueue'
      ? { redrivePermission: p.redrivePermission, sourceQueueArns: p.sourceQueueArns }
      : { redrivePermission: p.redrivePermission },
  );
}

/**
 * A RedriveAllowPolicy's `sourceQueueArns` may name only queues of the dead-letter queue's own
 * account and region (a source must be there to use it). Whether such a queue exists is not
 * looked up, for any account, so the answer tells nothing of other accounts' queues.
 */
export function checkRedriveSources(
  raw: string,
  dlq: { readonly accountId: string; readonly region: string },
): void {
  for (const arn of parseRedriveAllowPolicy(raw).sourceQueueArns) {
    const a = parseQueueArn(arn);
    if (a === undefined || a.accountId !== dlq.accountId || a.region !== dlq.region) {
      throw invalidAllow(raw, `Invalid value for sourceQueueArns: ${arn}.`);
    }
  }
}

/** What the store knows of the queue a RedrivePolicy names, for `checkRedriveTarget`. */
export interface RedriveTarget {
  readonly arn: string;
  readonly fifo: boolean;
  /** Its RedriveAllowPolicy attribute, if set. */
  readonly redriveAllowPolicy: string | undefined;
}

/**
 * The checks that need the target: it exists (same account and region; the store finds no other), is of the source's kind (FIFO to
 * FIFO, standard to standard), and its RedriveAllowPolicy lets this source name it.
 */
export function checkRedriveTarget(
  raw: string,
  source: { readonly arn: string; readonly fifo: boolean },
  target: RedriveTarget | undefined,
): void {
  if (target === undefined) throw invalidRedrive(raw, 'Dead letter target does not exist.');
  if (target.fifo !== source.fifo) {
    throw invalidRedrive(raw, 'Dead-letter queue must be same type of queue as the source.');
  }
  if (target.redriveAllowPolicy === undefined) return;
  const allow = parseRedriveAllowPolicy(target.redriveAllowPolicy);
  const allowed =
    allow.redrivePermission === 'allowAll' ||
    (allow.redrivePermission === 'byQueue' && allow.sourceQueueArns.includes(source.arn));
  if (!allowed) {
    throw invalidRedrive(
      raw,
      `Queue ${source.arn} is not allowed to use ${target.arn} as its dead-letter queue: its RedriveAllowPolicy (${allow.redrivePermission}) does not allow it.`,
    );
  }
}
