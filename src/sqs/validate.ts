import type { MessageAttributes, MessageAttributeValue } from '../core/message.js';
import {
  MAX_ATTRIBUTE_NAME_LENGTH,
  MAX_BATCH_ENTRIES,
  MAX_DATA_TYPE_LENGTH,
  MAX_DELAY_SECONDS,
  MAX_MESSAGE_ATTRIBUTES,
  MAX_VISIBILITY_TIMEOUT_SECONDS,
} from '../core/limits.js';
import { invalidMessageContents, invalidParameter, missingParameter, SqsError } from './errors.js';

/** Characters SQS allows in a body and in string attribute values (XML 1.0's Char production). */
// eslint-disable-next-line no-control-regex
const INVALID_CHARS = /[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;
/**
 * "Alphanumeric characters, underscore, hyphen and period", up to 256 characters: AWS takes
 * letters and digits of any script (recorded: `attr.1øßä` is accepted).
 */
const ATTRIBUTE_NAME = new RegExp(`^[\\p{L}\\p{Nd}_.-]{1,${MAX_ATTRIBUTE_NAME_LENGTH}}$`, 'u');
const DATA_TYPE = /^(String|Number|Binary)(\..+)?$/;
const BATCH_ENTRY_ID = /^[A-Za-z0-9_-]{1,80}$/;
/** MessageGroupId, MessageDeduplicationId, ReceiveRequestAttemptId: 1-128 alphanumerics and punctuation. */
const FIFO_TOKEN = /^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]{1,128}$/;

export function checkBody(body: string): void {
  // AWS treats an empty body as a missing one.
  if (body.length === 0) throw missingParameter('MessageBody');
  if (INVALID_CHARS.test(body)) throw invalidMessageContents();
}

/**
 * Validates message attributes and returns the bytes they count toward the message size
 * (name + data type + value, as AWS counts them).
 */
export function checkMessageAttributes(attrs: MessageAttributes | undefined): number {
  if (attrs === undefined) return 0;
  const names = Object.keys(attrs);
  if (names.length > MAX_MESSAGE_ATTRIBUTES) {
    throw invalidParameter(
      'MessageAttributes',
      names.length,
      `Number of message attributes [${names.length}] exceeds the allowed maximum [${MAX_MESSAGE_ATTRIBUTES}].`,
    );
  }
  let size = 0;
  for (const name of names) {
    const value = attrs[name] as MessageAttributeValue;
    checkAttributeName(name);
    size += Buffer.byteLength(name) + checkAttributeValue(name, value);
  }
  return size;
}

function checkAttributeName(name: string): void {
  const lower = name.toLowerCase();
  if (
    !ATTRIBUTE_NAME.test(name) ||
    name.startsWith('.') ||
    name.endsWith('.') ||
    name.includes('..') ||
    lower.startsWith('aws.') ||
    lower.startsWith('amazon.')
  ) {
    throw new SqsError('InvalidParameterValue', `Message attribute name '${name}' is invalid.`);
  }
}

function checkAttributeValue(name: string, value: MessageAttributeValue): number {
  const type = value.DataType;
  if (type === undefined || type === '') {
    throw new SqsError(
      'InvalidParameterValue',
      `The message attribute '${name}' must contain a non-empty attribute type.`,
    );
  }
  const m = DATA_TYPE.exec(type);
  if (m === null || type.length > MAX_DATA_TYPE_LENGTH) {
    throw new SqsError(
      'InvalidParameterValue',
      `The type of message (user) attribute '${name}' is invalid. You must use only the following supported type prefixes: Binary, Number, String.`,
    );
  }
  if (value.StringListValues !== undefined || value.BinaryListValues !== undefined) {
    throw new SqsError(
      'InvalidParameterValue',
      `Message attribute list values in '${name}' are not supported.`,
    );
  }
  let size = Buffer.byteLength(type);
  if (m[1] === 'Binary') {
    if (value.BinaryValue === undefined || value.BinaryValue === '') {
      throw new SqsError(
        'InvalidParameterValue',
        `The message attribute '${name}' with type 'Binary' must use field 'Binary'.`,
      );
    }
    if (value.StringValue !== undefined) {
      throw new SqsError(
        'InvalidParameterValue',
        `The message attribute '${name}' with type 'Binary' must use field 'Binary'.`,
      );
    }
    size += Buffer.byteLength(value.BinaryValue, 'base64');
  } else {
    const s = value.StringValue;
    if (s === '' && value.BinaryValue === undefined) {
      throw new SqsError(
        'InvalidParameterValue',
        `Message (user) attribute '${name}' must contain a non-empty value of type '${m[1]}'.`,
      );
    }
    if (s === undefined || value.BinaryValue !== undefined) {
      throw new SqsError(
        'InvalidParameterValue',
        `The message attribute '${name}' with type '${m[1]}' must use field 'String'.`,
      );
    }
    if (m[1] === 'Number' && !isSqsNumber(s)) {
      throw new SqsError(
        'InvalidParameterValue',
        `Can't cast the value of message (user) attribute '${name}' to a number.`,
      );
    }
    if (INVALID_CHARS.test(s)) {
      throw new SqsError(
        'InvalidParameterValue',
        `Message (user) attribute '${name}' value contains invalid characters.`,
      );
    }
    size += Buffer.byteLength(s);
  }
  return size;
}

/** SQS numbers: up to 38 significant digits, magnitude 10^-128 to 10^+126. */
function isSqsNumber(s: string): boolean {
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(s.trim())) return false;
  const digits = s
    .replace(/[eE].*$/, '')
    .replace(/[^0-9]/g, '')
    .replace(/^0+/, '');
  if (digits.length > 38) return false;
  const n = Number(s);
  return Number.isFinite(n) && (n === 0 || (Math.abs(n) >= 1e-128 && Math.abs(n) < 1e126));
}

/** System attributes: only AWSTraceHeader exists, a String. */
export function checkSystemAttributes(attrs: MessageAttributes | undefined): number {
  if (attrs === undefined) return 0;
  let size = 0;
  for (const [name, value] of Object.entries(attrs)) {
    if (name !== 'AWSTraceHeader') {
      throw new SqsError('InvalidParameterValue', `Message system attribute name '${name}' is invalid.`);
    }
    if (value.DataType !== 'String' || value.StringValue === undefined || value.StringValue === '') {
      throw new SqsError(
        'InvalidParameterValue',
        `Message system attribute '${name}' must be of type String with a non-empty value.`,
      );
    }
    size +=
      Buffer.byteLength(name) + Buffer.byteLength(value.DataType) + Buffer.byteLength(value.StringValue);
  }
  return size;
}

export function checkDelaySeconds(value: number | undefined): void {
  if (value !== undefined && (value < 0 || value > MAX_DELAY_SECONDS)) {
    throw invalidParameter('DelaySeconds', value, `DelaySeconds must be >= 0 and <= ${MAX_DELAY_SECONDS}.`);
  }
}

export function checkVisibilityTimeout(value: number, param = 'VisibilityTimeout'): void {
  if (value < 0 || value > MAX_VISIBILITY_TIMEOUT_SECONDS) {
    throw invalidParameter(
      param,
      value,
      `VisibilityTimeout must be an integer between 0 and ${MAX_VISIBILITY_TIMEOUT_SECONDS}`,
    );
  }
}

/** Batch-level rules shared by the three batch actions; returns nothing, throws the batch errors. */
export function checkBatchEntries(entries: ReadonlyArray<{ Id: string }>): void {
  if (entries.length === 0) {
    throw new SqsError('EmptyBatchRequest', 'There should be at least one entry in the request.');
  }
  if (entries.length > MAX_BATCH_ENTRIES) {
    throw new SqsError(
      'TooManyEntriesInBatchRequest',
      `Maximum number of entries per request are ${MAX_BATCH_ENTRIES}. You have sent ${entries.length}.`,
    );
  }
  const seen = new Set<string>();
  for (const e of entries) {
    if (!BATCH_ENTRY_ID.test(e.Id)) {
      throw new SqsError(
        'InvalidBatchEntryId',
        'A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.',
      );
    }
    if (seen.has(e.Id)) {
      throw new SqsError('BatchEntryIdsNotDistinct', `Id ${e.Id} repeated.`);
    }
    seen.add(e.Id);
  }
}

/** The format AWS gives MessageGroupId, MessageDeduplicationId and ReceiveRequestAttemptId. */
export function checkFifoToken(param: string, value: string): void {
  if (!FIFO_TOKEN.test(value)) {
    throw invalidParameter(
      param,
      value,
      `${param} can only include alphanumeric and punctuation characters. 1 to 128 in length.`,
    );
  }
}
