/**
 * The checksums SQS returns and clients verify: MD5OfMessageBody / MD5OfBody, MD5OfMessageAttributes
 * and MD5OfMessageSystemAttributes.
 *
 * The attribute digest follows the SQS developer guide ("Calculating the MD5 message digest for
 * message attributes") and the reference client implementation, the Java SDK's
 * MessageMD5ChecksumInterceptor: names sorted; for each, 4-byte big-endian length + UTF-8 name,
 * length + UTF-8 DataType (custom suffix included), one transport byte, then the value. The
 * transport byte follows the value field that is set, as the SDK does: StringValue 1 (String,
 * Number and their `.custom` types), BinaryValue 2 (the decoded bytes), and the reserved list
 * fields 3 and 4, each element length-prefixed.
 */
import * as crypto from 'node:crypto';

/**
 * MessageAttributeValue and MessageSystemAttributeValue of the model, loosened so that the AWS
 * SDK's own types (optional DataType, Uint8Array blobs) fit too, e.g. in tests.
 */
export interface AttributeValue {
  readonly DataType?: string | undefined;
  readonly StringValue?: string | undefined;
  /** base64 text, as the model carries it, or the bytes themselves. */
  readonly BinaryValue?: string | Uint8Array | undefined;
  readonly StringListValues?: readonly string[] | undefined;
  readonly BinaryListValues?: readonly (string | Uint8Array)[] | undefined;
}

type OneShot = (algorithm: string, data: crypto.BinaryLike, outputEncoding: 'hex') => string;

// crypto.hash (Node >= 20.12) skips the Hash object, several times faster for small inputs.
const oneShot: OneShot =
  typeof crypto.hash === 'function'
    ? crypto.hash
    : (algorithm, data, outputEncoding) => crypto.createHash(algorithm).update(data).digest(outputEncoding);

export function md5OfBody(body: string): string {
  return oneShot('md5', body, 'hex');
}

// The attribute encoding is assembled in one reused scratch buffer and hashed in one call; only
// when it outgrows the buffer (large binary values) does it spill into an incremental Hash, so no
// request allocates a buffer the size of its attributes. Synchronous code, so one scratch is safe.
const SCRATCH_SIZE = 64 * 1024;
const scratch = Buffer.allocUnsafe(SCRATCH_SIZE);
let pos = 0;
let spill: crypto.Hash | undefined;

function flush(): crypto.Hash {
  spill ??= crypto.createHash('md5');
  if (pos > 0) spill.update(scratch.subarray(0, pos));
  pos = 0;
  return spill;
}

/** Makes room for `n` bytes; false when they can never fit and must go to the Hash directly. */
function room(n: number): boolean {
  if (pos + n <= SCRATCH_SIZE) return true;
  flush();
  return n <= SCRATCH_SIZE;
}

function putByte(byte: number): void {
  room(1);
  scratch[pos++] = byte;
}

function putLength(length: number): void {
  room(4);
  scratch.writeUInt32BE(length, pos);
  pos += 4;
}

/** 4-byte length, then the UTF-8 bytes. */
function putString(text: string): void {
  if (room(4 + text.length * 3)) {
    const written = scratch.write(text, pos + 4, 'utf8');
    scratch.writeUInt32BE(written, pos);
    pos += 4 + written;
  } else {
    putLength(Buffer.byteLength(text, 'utf8'));
    flush().update(text, 'utf8');
  }
}

/** 4-byte length, then the bytes (base64 text decoded). */
function putBinary(value: string | Uint8Array): void {
  if (typeof value === 'string') {
    if (room(4 + Math.ceil((value.length * 3) / 4))) {
      const written = scratch.write(value, pos + 4, 'base64');
      scratch.writeUInt32BE(written, pos);
      pos += 4 + written;
      return;
    }
    value = Buffer.from(value, 'base64');
  }
  if (room(4 + value.length)) {
    scratch.writeUInt32BE(value.length, pos);
    scratch.set(value, pos + 4);
    pos += 4 + value.length;
  } else {
    putLength(value.length);
    flush().update(value);
  }
}

function digest(): string {
  if (spill === undefined) return oneShot('md5', scratch.subarray(0, pos), 'hex');
  return flush().digest('hex');
}

/**
 * The digest of a message's attributes, or undefined when it has none (SQS then leaves the MD5
 * out of the response). Serves message attributes and system attributes (`AWSTraceHeader`) alike.
 */
export function md5OfMessageAttributes(
  attributes: Readonly<Record<string, AttributeValue>> | undefined,
): string | undefined {
  if (attributes === undefined) return undefined;
  const names = Object.keys(attributes);
  if (names.length === 0) return undefined;
  // Default sort compares UTF-16 code units, as Java's String.compareTo in the SDK does; for the
  // names SQS accepts ([A-Za-z0-9_.-]) that is also byte order.
  if (names.length > 1) names.sort();
  pos = 0;
  spill = undefined;
  for (const name of names) {
    const value = attributes[name];
    if (value === undefined) continue;
    putString(name);
    putString(value.DataType ?? '');
    if (value.StringValue !== undefined) {
      putByte(1);
      putString(value.StringValue);
    } else if (value.BinaryValue !== undefined) {
      putByte(2);
      putBinary(value.BinaryValue);
    } else if (value.StringListValues !== undefined && value.StringListValues.length > 0) {
      putByte(3);
      for (const element of value.StringListValues) putString(element);
    } else if (value.BinaryListValues !== undefined && value.BinaryListValues.length > 0) {
      putByte(4);
      for (const element of value.BinaryListValues) putBinary(element);
    }
  }
  const hex = digest();
  spill = undefined;
  return hex;
}
