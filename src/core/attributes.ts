import { CoreError } from './errors.js';
import {
  DEFAULT_KMS_DATA_KEY_REUSE_SECONDS,
  DEFAULT_RETENTION_SECONDS,
  DEFAULT_VISIBILITY_TIMEOUT_SECONDS,
  MAX_DELAY_SECONDS,
  MAX_KMS_DATA_KEY_REUSE_SECONDS,
  MAX_KMS_KEY_ID_LENGTH,
  MAX_MESSAGE_SIZE,
  MAX_RETENTION_SECONDS,
  MAX_VISIBILITY_TIMEOUT_SECONDS,
  MAX_WAIT_TIME_SECONDS,
  MIN_KMS_DATA_KEY_REUSE_SECONDS,
  MIN_MAXIMUM_MESSAGE_SIZE,
  MIN_RETENTION_SECONDS,
  POLICY_MAX_BYTES,
} from './limits.js';
import {
  formatRedriveAllowPolicy,
  formatRedrivePolicy,
  parseRedriveAllowPolicy,
  parseRedrivePolicy,
} from './redrive.js';

/**
 * Queue attributes a client may set, their defaults and their rules, as the SQS API reference
 * (CreateQueue, SetQueueAttributes) gives them. Values are kept as the strings AWS returns.
 */
interface AttributeRule {
  /** The value a new queue gets when the attribute is not given; absent: not shown until set. */
  readonly defaultValue?: string;
  readonly fifoOnly?: boolean;
  /** Only at CreateQueue: the queue type cannot be changed later. */
  readonly createOnly?: boolean;
  /** Returns a normalised value, or throws InvalidAttributeValue. */
  readonly check: (value: string, name: string) => string;
}

const integerIn =
  (min: number, max: number) =>
  (value: string, name: string): string => {
    if (!/^-?\d+$/.test(value.trim())) throw invalidValue(name, value);
    const n = Number(value);
    if (n < min || n > max) throw invalidValue(name, value);
    return String(n);
  };

const booleanValue = (value: string, name: string): string => {
  const v = value.toLowerCase();
  if (v !== 'true' && v !== 'false') throw invalidValue(name, value);
  return v;
};

const oneOf =
  (...allowed: string[]) =>
  (value: string, name: string): string => {
    if (!allowed.includes(value)) throw invalidValue(name, value);
    return value;
  };

const jsonObject = (value: string, name: string): string => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw invalidValue(name, value);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw invalidValue(name, value);
  return value;
};

/** Policy: a JSON object; '' removes it (SetQueueAttributes with an empty Policy, as on AWS). */
const policyDocument = (value: string, name: string): string => {
  if (value === '') return '';
  if (Buffer.byteLength(value) > POLICY_MAX_BYTES) throw invalidValue(name, value);
  return jsonObject(value, name);
};

/** RedrivePolicy: checked and given back in AWS's form; '' removes it. The target is checked by the store. */
const redrivePolicy = (value: string): string =>
  value === '' ? '' : formatRedrivePolicy(parseRedrivePolicy(value));

const redriveAllowPolicy = (value: string): string =>
  value === '' ? '' : formatRedriveAllowPolicy(parseRedriveAllowPolicy(value));

/** A KMS key id, alias or ARN, at most 2048 characters (KMS's KeyId limit); '' turns SSE-KMS off. */
const kmsKeyId = (value: string, name: string): string => {
  if (value.length > MAX_KMS_KEY_ID_LENGTH) throw invalidValue(name, value);
  return value;
};

export function invalidValue(name: string, _value: string): CoreError {
  return new CoreError('InvalidAttributeValue', `Invalid value for the parameter ${name}.`);
}

export const attributeRules: Readonly<Record<string, AttributeRule>> = {
  DelaySeconds: { defaultValue: '0', check: integerIn(0, MAX_DELAY_SECONDS) },
  MaximumMessageSize: {
    defaultValue: String(MAX_MESSAGE_SIZE),
    check: integerIn(MIN_MAXIMUM_MESSAGE_SIZE, MAX_MESSAGE_SIZE),
  },
  MessageRetentionPeriod: {
    defaultValue: String(DEFAULT_RETENTION_SECONDS),
    check: integerIn(MIN_RETENTION_SECONDS, MAX_RETENTION_SECONDS),
  },
  ReceiveMessageWaitTimeSeconds: { defaultValue: '0', check: integerIn(0, MAX_WAIT_TIME_SECONDS) },
  VisibilityTimeout: {
    defaultValue: String(DEFAULT_VISIBILITY_TIMEOUT_SECONDS),
    check: integerIn(0, MAX_VISIBILITY_TIMEOUT_SECONDS),
  },
  Policy: { check: policyDocument },
  RedrivePolicy: { check: redrivePolicy },
  RedriveAllowPolicy: { check: redriveAllowPolicy },
  KmsMasterKeyId: { check: kmsKeyId },
  KmsDataKeyReusePeriodSeconds: {
    check: integerIn(MIN_KMS_DATA_KEY_REUSE_SECONDS, MAX_KMS_DATA_KEY_REUSE_SECONDS),
  },
  SqsManagedSseEnabled: { defaultValue: 'true', check: booleanValue },
  FifoQueue: { fifoOnly: true, createOnly: true, check: booleanValue },
  ContentBasedDeduplication: { fifoOnly: true, defaultValue: 'false', check: booleanValue },
  DeduplicationScope: { fifoOnly: true, defaultValue: 'queue', check: oneOf('messageGroup', 'queue') },
  FifoThroughputLimit: {
    fifoOnly: true,
    defaultValue: 'perQueue',
    check: oneOf('perQueue', 'perMessageGroupId'),
  },
};

/** Attributes GetQueueAttributes computes rather than stores. */
export const computedAttributeNames = [
  'ApproximateNumberOfMessages',
  'ApproximateNumberOfMessagesNotVisible',
  'ApproximateNumberOfMessagesDelayed',
  'CreatedTimestamp',
  'LastModifiedTimestamp',
  'QueueArn',
] as const;

/** Every name GetQueueAttributes accepts, besides `All`. */
export const readableAttributeNames: ReadonlySet<string> = new Set([
  ...Object.keys(attributeRules),
  ...computedAttributeNames,
]);

/**
 * Validates attributes given to CreateQueue or SetQueueAttributes and returns them normalised.
 * KMS attributes are kept so clients can read back what they set; no encryption is done (the
 * store is the server's memory and Redis), which docs/compatibility.md says.
 */
export function validateAttributes(
  given: Readonly<Record<string, string>>,
  opts: { fifo: boolean; creating: boolean },
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(given)) {
    const rule = attributeRules[name];
    if (rule === undefined) throw unknownAttribute(name);
    if (rule.fifoOnly === true && !opts.fifo) {
      // AWS's recorded answers: a standard queue knows no FifoQueue or ContentBasedDeduplication
      // (even `false`), and the high-throughput pair says what it needs.
      if (name === 'FifoQueue' || name === 'ContentBasedDeduplication') throw unknownAttribute(name);
      throw new CoreError(
        'InvalidAttributeName',
        `You can specify the ${name} only when FifoQueue is set to true.`,
      );
    }
    if (rule.createOnly === true && !opts.creating) {
      // AWS (recorded): FifoQueue=true on a FIFO queue (the only kind that gets here) is
      // accepted and changes nothing; only a change of type is refused.
      if (value.toLowerCase() === 'true') continue;
      throw new CoreError(
        'InvalidAttributeValue',
        `Invalid value for the parameter ${name}. Reason: Modifying queue type is not supported.`,
      );
    }
    out[name] = rule.check(value, name);
  }
  return out;
}

function unknownAttribute(name: string): CoreError {
  return new CoreError('InvalidAttributeName', `Unknown Attribute ${name}.`);
}

export function defaultAttributes(fifo: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, rule] of Object.entries(attributeRules)) {
    if (rule.defaultValue === undefined) continue;
    if (rule.fifoOnly === true && !fifo) continue;
    out[name] = rule.defaultValue;
  }
  if (fifo) out.FifoQueue = 'true';
  return out;
}

const DEFAULTS = {
  standard: Object.freeze(defaultAttributes(false)),
  fifo: Object.freeze(defaultAttributes(true)),
};

/**
 * `attributes` itself, or, when it holds exactly the defaults, one frozen object shared by every
 * such queue: most queues never change an attribute, and their own copy cost each of them ~100 B.
 */
export function sharedDefaults(
  fifo: boolean,
  attributes: Readonly<Record<string, string>>,
): Readonly<Record<string, string>> {
  const defaults = fifo ? DEFAULTS.fifo : DEFAULTS.standard;
  const names = Object.keys(attributes);
  if (names.length !== Object.keys(defaults).length) return attributes;
  for (const name of names) if (defaults[name] !== attributes[name]) return attributes;
  return defaults;
}

/** The defaults with `attributes` over them (sharedDefaults when that changes nothing). */
export function withDefaults(
  fifo: boolean,
  attributes: Readonly<Record<string, string>>,
): Readonly<Record<string, string>> {
  return sharedDefaults(fifo, { ...(fifo ? DEFAULTS.fifo : DEFAULTS.standard), ...attributes });
}

/** Attributes that an empty value removes instead of setting. */
const REMOVABLE = new Set(['Policy', 'RedrivePolicy', 'RedriveAllowPolicy']);

/**
 * A queue's attributes after `given` (validated by validateAttributes) is applied to `current`,
 * with the rules that tie attributes together:
 * - an empty Policy, RedrivePolicy or RedriveAllowPolicy removes it; an empty KmsMasterKeyId
 *   turns SSE-KMS off (removing it and KmsDataKeyReusePeriodSeconds);
 * - server-side encryption is one kind at a time: KmsMasterKeyId (SSE-KMS) turns
 *   SqsManagedSseEnabled off and brings KmsDataKeyReusePeriodSeconds (default 300);
 *   SqsManagedSseEnabled=true turns SSE-KMS off; both at once is InvalidAttributeName, as on AWS;
 * - FifoThroughputLimit perMessageGroupId needs DeduplicationScope messageGroup (high throughput).
 * Returns a new object; `current` is not changed.
 */
export function resolveAttributes(
  current: Readonly<Record<string, string>>,
  given: Readonly<Record<string, string>>,
): Record<string, string> {
  const next: Record<string, string> = { ...current, ...given };
  for (const name of REMOVABLE) if (next[name] === '') delete next[name];
  if (given.KmsMasterKeyId === '') {
    // SSE-KMS off: the queue shows neither its key nor its data key period, as before it had one.
    delete next.KmsMasterKeyId;
    delete next.KmsDataKeyReusePeriodSeconds;
  }
  const kmsGiven = given.KmsMasterKeyId !== undefined && given.KmsMasterKeyId !== '';
  const sqsSseOn = given.SqsManagedSseEnabled === 'true';
  if (kmsGiven && sqsSseOn) {
    throw new CoreError(
      'InvalidAttributeName',
      'You can use one type of server-side encryption (SSE) at one time. You can either enable KMS SSE or SQS SSE.',
    );
  }
  if (kmsGiven) {
    next.SqsManagedSseEnabled = 'false';
    next.KmsDataKeyReusePeriodSeconds ??= String(DEFAULT_KMS_DATA_KEY_REUSE_SECONDS);
  } else if (sqsSseOn) {
    delete next.KmsMasterKeyId;
    delete next.KmsDataKeyReusePeriodSeconds;
  }
  if (next.FifoThroughputLimit === 'perMessageGroupId' && next.DeduplicationScope !== 'messageGroup') {
    throw new CoreError(
      'InvalidAttributeValue',
      'Invalid value for the parameter FifoThroughputLimit. Reason: To set FifoThroughputLimit to perMessageGroupId, the DeduplicationScope must be messageGroup.',
    );
  }
  return next;
}
