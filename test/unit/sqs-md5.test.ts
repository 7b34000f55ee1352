import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';

import { md5OfBody, md5OfMessageAttributes } from '../../src/sqs/md5.js';
import type { MessageAttributeValue } from '../../src/sqs/model.generated.js';

/**
 * A deliberately naive second implementation, written straight from the developer guide's byte
 * layout (and the Java SDK's list transport types 3 and 4), to check the streaming one against.
 */
function referenceDigest(attributes: Record<string, MessageAttributeValue>): string {
  const lengthAnd = (bytes: Buffer): Buffer => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    return Buffer.concat([length, bytes]);
  };
  const parts: Buffer[] = [];
  for (const name of Object.keys(attributes).sort()) {
    const value = attributes[name];
    assert.ok(value);
    parts.push(lengthAnd(Buffer.from(name, 'utf8')), lengthAnd(Buffer.from(value.DataType, 'utf8')));
    if (value.StringValue !== undefined) {
      parts.push(Buffer.from([1]), lengthAnd(Buffer.from(value.StringValue, 'utf8')));
    } else if (value.BinaryValue !== undefined) {
      parts.push(Buffer.from([2]), lengthAnd(Buffer.from(value.BinaryValue, 'base64')));
    } else if (value.StringListValues !== undefined) {
      parts.push(Buffer.from([3]), ...value.StringListValues.map((s) => lengthAnd(Buffer.from(s, 'utf8'))));
    } else if (value.BinaryListValues !== undefined) {
      parts.push(Buffer.from([4]), ...value.BinaryListValues.map((b) => lengthAnd(Buffer.from(b, 'base64'))));
    }
  }
  return createHash('md5').update(Buffer.concat(parts)).digest('hex');
}

describe('md5OfBody', () => {
  test('Given the API reference message body, when hashing, then the MD5OfMessageBody AWS shows', () => {
    // API_SendMessage.html sample: "This is a test message" -> fafb00f5732ab283681e124bf8747ed1.
    assert.equal(md5OfBody('This is a test message'), 'fafb00f5732ab283681e124bf8747ed1');
  });

  test('Given an empty body, when hashing, then the MD5 of no bytes', () => {
    assert.equal(md5OfBody(''), 'd41d8cd98f00b204e9800998ecf8427e');
  });

  test('Given non-ASCII text, when hashing, then the digest is of its UTF-8 bytes', () => {
    const body = 'é 😀 \u{10FFFF}';
    assert.equal(md5OfBody(body), createHash('md5').update(Buffer.from(body, 'utf8')).digest('hex'));
    assert.notEqual(md5OfBody(body), createHash('md5').update(Buffer.from(body, 'latin1')).digest('hex'));
  });
});

const STRING_1: MessageAttributeValue = { DataType: 'String', StringValue: 'attribValue 1' };
const CUSTOM_NUMBER: MessageAttributeValue = {
  DataType: 'Number.float',
  StringValue: '4563442423554324324264524243.32543234',
};
const BINARY: MessageAttributeValue = {
  DataType: 'Binary',
  BinaryValue: Buffer.from('Hello binary world!').toString('base64'),
};

const RECORDED = {
  attributes: {
    Count: { DataType: 'Number', StringValue: '1' },
    Foo: { DataType: 'String', StringValue: 'Bar' },
  },
  digest: '324758f82d026ac6ec5b31a3b192d1e3',
};

const PUBLISHED: readonly {
  name: string;
  attributes: Record<string, MessageAttributeValue>;
  digest: string;
}[] = [
  {
    // API_SendMessage.html sample response.
    name: 'Given the API reference SendMessage attributes, when hashing, then the MD5OfMessageAttributes AWS shows',
    attributes: {
      my_attribute_name_1: { DataType: 'String', StringValue: 'my_attribute_value_1' },
      my_attribute_name_2: { DataType: 'String', StringValue: 'my_attribute_value_2' },
    },
    digest: 'c48838208d2b4e14e3ca0093a8443f09',
  },
  {
    // boto's SQSMessageAttributesParsing test fixture, a ReceiveMessage response from AWS.
    name: 'Given a String and a Number attribute from a recorded AWS ReceiveMessage, when hashing, then the recorded digest',
    ...RECORDED,
  },
  // The next vectors are from the README of the npm package aws-md5-of-message-attributes.
  {
    name: 'Given a single String attribute, when hashing, then the published digest',
    attributes: { attribName1: STRING_1 },
    digest: '19e27d4e946b072f3f58da80d94fd778',
  },
  {
    name: 'Given a custom Number type, when hashing, then the suffix is part of the digest',
    attributes: { customNumberTypeAttrib: CUSTOM_NUMBER },
    digest: '9fe1b90bbd9965bdf77bac517c7d2495',
  },
  {
    name: 'Given a Binary attribute, when hashing, then its decoded bytes are hashed with transport type 2',
    attributes: { binaryAttribute: BINARY },
    digest: '31a92b15d92f8db860eda32aceb656c3',
  },
  {
    name: 'Given String, custom Number and Binary attributes together, when hashing, then the published digest',
    attributes: { attribName1: STRING_1, customNumberTypeAttrib: CUSTOM_NUMBER, binaryAttribute: BINARY },
    digest: 'c932db14a896c663f83c260297d594ff',
  },
];

describe('md5OfMessageAttributes: published vectors', () => {
  for (const { name, attributes, digest } of PUBLISHED) {
    test(name, () => {
      assert.equal(md5OfMessageAttributes(attributes), digest);
    });
  }
});

describe('md5OfMessageAttributes: encoding rules', () => {
  test('Given the same attributes inserted in another order, when hashing, then the same digest', () => {
    const forward = md5OfMessageAttributes({
      a: { DataType: 'String', StringValue: '1' },
      B: { DataType: 'String', StringValue: '2' },
      c: { DataType: 'String', StringValue: '3' },
    });
    const backward = md5OfMessageAttributes({
      c: { DataType: 'String', StringValue: '3' },
      B: { DataType: 'String', StringValue: '2' },
      a: { DataType: 'String', StringValue: '1' },
    });
    assert.equal(forward, backward);
  });

  test('Given names differing in case and punctuation, when hashing, then they are sorted by code unit', () => {
    const attributes: Record<string, MessageAttributeValue> = {
      b: { DataType: 'String', StringValue: '1' },
      'a.b': { DataType: 'Number', StringValue: '2' },
      A_z: { DataType: 'String.custom', StringValue: 'ü' },
      'a-b': { DataType: 'Binary.png', BinaryValue: 'iVBORw0KGgo=' },
    };
    assert.equal(md5OfMessageAttributes(attributes), referenceDigest(attributes));
  });

  test('Given a string-list attribute, when hashing, then transport type 3 and each element length-prefixed', () => {
    const attributes: Record<string, MessageAttributeValue> = {
      l: { DataType: 'String', StringListValues: ['x', 'yy', ''] },
    };
    assert.equal(md5OfMessageAttributes(attributes), referenceDigest(attributes));
  });

  test('Given a binary-list attribute, when hashing, then transport type 4 and each decoded element length-prefixed', () => {
    const attributes: Record<string, MessageAttributeValue> = {
      l: { DataType: 'Binary', BinaryListValues: ['AAH/', 'AA=='] },
    };
    assert.equal(md5OfMessageAttributes(attributes), referenceDigest(attributes));
  });

  test('Given a large binary attribute, when hashing, then the digest matches the byte layout', () => {
    const attributes: Record<string, MessageAttributeValue> = {
      big: { DataType: 'Binary', BinaryValue: Buffer.alloc(300_000, 7).toString('base64') },
    };
    assert.equal(md5OfMessageAttributes(attributes), referenceDigest(attributes));
  });

  test('Given a string attribute longer than any buffer the encoder keeps, when hashing, then the digest matches the byte layout', () => {
    const attributes: Record<string, MessageAttributeValue> = {
      a: { DataType: 'String', StringValue: 'é'.repeat(200_000) },
      z: { DataType: 'String', StringValue: 'after' },
    };
    assert.equal(md5OfMessageAttributes(attributes), referenceDigest(attributes));
  });

  test('Given many medium attributes adding up past the encoder buffer, when hashing, then the digest matches the byte layout', () => {
    const attributes: Record<string, MessageAttributeValue> = {};
    for (let i = 0; i < 10; i++) {
      attributes[`s${i}`] = { DataType: 'String', StringValue: String(i).repeat(30_000) };
      attributes[`b${i}`] = { DataType: 'Binary', BinaryValue: Buffer.alloc(20_000, i).toString('base64') };
    }
    assert.equal(md5OfMessageAttributes(attributes), referenceDigest(attributes));
  });

  test('Given a large digest just computed, when hashing small attributes next, then nothing of the first leaks in', () => {
    md5OfMessageAttributes({
      big: { DataType: 'Binary', BinaryValue: Buffer.alloc(200_000, 1).toString('base64') },
    });
    assert.equal(md5OfMessageAttributes(RECORDED.attributes), RECORDED.digest);
  });

  test('Given a binary value as bytes instead of base64 text, when hashing, then the same digest', () => {
    const bytes = Uint8Array.from([0, 1, 255, 128]);
    assert.equal(
      md5OfMessageAttributes({ b: { DataType: 'Binary', BinaryValue: bytes } }),
      md5OfMessageAttributes({
        b: { DataType: 'Binary', BinaryValue: Buffer.from(bytes).toString('base64') },
      }),
    );
  });

  test('Given no attributes, when hashing, then undefined (SQS leaves the MD5 out)', () => {
    assert.equal(md5OfMessageAttributes({}), undefined);
    assert.equal(md5OfMessageAttributes(undefined), undefined);
  });
});

describe('md5OfMessageAttributes over system attributes (MD5OfMessageSystemAttributes)', () => {
  test('Given an AWSTraceHeader system attribute, when hashing, then the message attribute byte layout', () => {
    const attributes = {
      AWSTraceHeader: {
        DataType: 'String',
        StringValue: 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1',
      },
    };
    assert.equal(md5OfMessageAttributes(attributes), referenceDigest(attributes));
  });

  test('Given no system attributes, when hashing, then undefined', () => {
    assert.equal(md5OfMessageAttributes({}), undefined);
  });
});
