/**
 * SQS's checksums, written from the AWS developer guide ("Calculating the MD5 message digest for
 * message attributes"), independent of src/sqs/md5.ts so that the e2e tests check the server
 * against the documented algorithm rather than against itself.
 *
 * Only @aws-sdk/client-sqs checks a checksum by itself (MD5OfMessageBody); Debian's botocore and
 * aws-cli check none. So every suite compares all three checksums with these functions.
 */
import { createHash } from 'node:crypto';

export interface AttributeValue {
  readonly DataType?: string | undefined;
  readonly StringValue?: string | undefined;
  readonly BinaryValue?: Uint8Array | undefined;
}

export function md5Hex(data: string | Uint8Array): string {
  return createHash('md5').update(data).digest('hex');
}

function lengthPrefixed(bytes: Uint8Array): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(bytes.length, 0);
  return Buffer.concat([len, bytes]);
}

/**
 * For each attribute, sorted by name: length + name, length + data type, one transport byte
 * (1 for String and Number, 2 for Binary, custom types follow their base type), length + value.
 */
export function md5OfAttributes(attributes: Readonly<Record<string, AttributeValue>>): string {
  const parts: Buffer[] = [];
  for (const name of Object.keys(attributes).sort()) {
    const value = attributes[name];
    if (value === undefined) continue;
    parts.push(lengthPrefixed(Buffer.from(name, 'utf8')));
    const dataType = value.DataType ?? '';
    parts.push(lengthPrefixed(Buffer.from(dataType, 'utf8')));
    if (dataType.startsWith('Binary')) {
      parts.push(Buffer.from([2]));
      parts.push(lengthPrefixed(Buffer.from(value.BinaryValue ?? new Uint8Array())));
    } else {
      parts.push(Buffer.from([1]));
      parts.push(lengthPrefixed(Buffer.from(value.StringValue ?? '', 'utf8')));
    }
  }
  return md5Hex(Buffer.concat(parts));
}

/** A known answer, so that a mistake in this file cannot hide a mistake in the server. */
export const MD5_SELF_CHECK = {
  // One String attribute {"a": String "b"}:
  // 00000001 'a' 00000006 'String' 01 00000001 'b'
  input: { a: { DataType: 'String', StringValue: 'b' } },
  bytesHex: '00000001' + '61' + '00000006' + Buffer.from('String').toString('hex') + '01' + '00000001' + '62',
} as const;
