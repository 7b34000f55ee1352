import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultAttributes, resolveAttributes, validateAttributes } from '../../src/core/attributes.js';
import { throwsCode } from '../support/assertions.js';

const standard = { fifo: false, creating: true };
const fifo = { fifo: true, creating: true };

const ranges: ReadonlyArray<readonly [name: string, min: number, max: number]> = [
  ['DelaySeconds', 0, 900],
  ['MaximumMessageSize', 1024, 1_048_576],
  ['MessageRetentionPeriod', 60, 1_209_600],
  ['ReceiveMessageWaitTimeSeconds', 0, 20],
  ['VisibilityTimeout', 0, 43_200],
];

for (const [name, min, max] of ranges) {
  void test(`Given ${name} at its minimum ${min} and maximum ${max}, when validated, then both are accepted as given`, () => {
    for (const v of [min, max]) {
      assert.deepEqual(validateAttributes({ [name]: String(v) }, standard), { [name]: String(v) });
    }
  });

  void test(`Given ${name} one below its minimum (${min - 1}), when validated, then InvalidAttributeValue`, () => {
    throwsCode(
      () => validateAttributes({ [name]: String(min - 1) }, standard),
      'InvalidAttributeValue',
      name,
    );
  });

  void test(`Given ${name} one above its maximum (${max + 1}), when validated, then InvalidAttributeValue`, () => {
    throwsCode(
      () => validateAttributes({ [name]: String(max + 1) }, standard),
      'InvalidAttributeValue',
      name,
    );
  });
}

void test('Given a numeric attribute that is not an integer, when validated, then InvalidAttributeValue', () => {
  for (const v of ['', 'abc', '1.5', '1e2', '0x10', '30s']) {
    throwsCode(
      () => validateAttributes({ VisibilityTimeout: v }, standard),
      'InvalidAttributeValue',
      `"${v}"`,
    );
  }
});

void test('Given a numeric attribute with a leading zero, when validated, then it is normalised to its plain decimal form', () => {
  assert.deepEqual(validateAttributes({ VisibilityTimeout: '030' }, standard), { VisibilityTimeout: '30' });
});

void test('Given an attribute name SQS does not know, when validated, then InvalidAttributeName', () => {
  throwsCode(() => validateAttributes({ NoSuchAttribute: '1' }, standard), 'InvalidAttributeName', 'unknown');
});

void test('Given a computed attribute such as ApproximateNumberOfMessages, when given to set, then InvalidAttributeName', () => {
  throwsCode(
    () => validateAttributes({ ApproximateNumberOfMessages: '1' }, standard),
    'InvalidAttributeName',
    'computed',
  );
});

void test('Given FIFO-only attributes on a standard queue, when validated, then each is InvalidAttributeName', () => {
  const fifoOnly: Record<string, string> = {
    ContentBasedDeduplication: 'true',
    DeduplicationScope: 'queue',
    FifoThroughputLimit: 'perQueue',
  };
  for (const [name, value] of Object.entries(fifoOnly)) {
    throwsCode(() => validateAttributes({ [name]: value }, standard), 'InvalidAttributeName', name);
  }
});

void test('Given FIFO-only attributes on a FIFO queue, when validated, then they are accepted', () => {
  const given = {
    FifoQueue: 'true',
    ContentBasedDeduplication: 'true',
    DeduplicationScope: 'messageGroup',
    FifoThroughputLimit: 'perMessageGroupId',
  };
  assert.deepEqual(validateAttributes(given, fifo), given);
});

void test('Given a FIFO attribute with a value outside its set, when validated, then InvalidAttributeValue', () => {
  throwsCode(
    () => validateAttributes({ DeduplicationScope: 'everything' }, fifo),
    'InvalidAttributeValue',
    'DeduplicationScope',
  );
  throwsCode(
    () => validateAttributes({ FifoThroughputLimit: 'perGroup' }, fifo),
    'InvalidAttributeValue',
    'FifoThroughputLimit',
  );
});

void test('SetQueueAttributes FifoQueue on a FIFO queue: given FifoQueue=true, when set, then accepted and nothing to change (AWS, recorded)', () => {
  for (const value of ['true', 'TRUE']) {
    assert.deepEqual(validateAttributes({ FifoQueue: value }, { fifo: true, creating: false }), {});
  }
  assert.deepEqual(
    validateAttributes({ FifoQueue: 'true', VisibilityTimeout: '45' }, { fifo: true, creating: false }),
    { VisibilityTimeout: '45' },
  );
});

void test('SetQueueAttributes FifoQueue on a FIFO queue: given any other value, when set, then InvalidAttributeValue: the queue type cannot change (AWS, recorded)', () => {
  for (const value of ['false', 'yes']) {
    assert.throws(() => validateAttributes({ FifoQueue: value }, { fifo: true, creating: false }), {
      code: 'InvalidAttributeValue',
      message: 'Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not supported.',
    });
  }
});

void test('Given FifoQueue or ContentBasedDeduplication for a standard queue, when created or set, then InvalidAttributeName "Unknown Attribute" (AWS)', () => {
  for (const creating of [true, false]) {
    for (const name of ['FifoQueue', 'ContentBasedDeduplication']) {
      assert.throws(() => validateAttributes({ [name]: 'false' }, { fifo: false, creating }), {
        code: 'InvalidAttributeName',
        message: `Unknown Attribute ${name}.`,
      });
    }
  }
});

void test('Given a boolean attribute in mixed case, when validated, then it is normalised to lower case', () => {
  assert.deepEqual(validateAttributes({ SqsManagedSseEnabled: 'TRUE' }, standard), {
    SqsManagedSseEnabled: 'true',
  });
  throwsCode(
    () => validateAttributes({ SqsManagedSseEnabled: 'yes' }, standard),
    'InvalidAttributeValue',
    'yes',
  );
});

void test('Given a policy attribute, when it is not a JSON object, then InvalidAttributeValue', () => {
  for (const v of ['not json', '[]', 'null', '"text"']) {
    throwsCode(() => validateAttributes({ Policy: v }, standard), 'InvalidAttributeValue', v);
  }
  const policy = '{"Version":"2012-10-17","Statement":[]}';
  assert.deepEqual(validateAttributes({ Policy: policy }, standard), { Policy: policy });
});

void test('Given a standard queue, when its defaults are asked for, then they are the AWS defaults without FIFO attributes', () => {
  assert.deepEqual(defaultAttributes(false), {
    DelaySeconds: '0',
    MaximumMessageSize: '1048576',
    MessageRetentionPeriod: '345600',
    ReceiveMessageWaitTimeSeconds: '0',
    VisibilityTimeout: '30',
    SqsManagedSseEnabled: 'true',
  });
});

void test('Given a FIFO queue, when its defaults are asked for, then they add FifoQueue and the FIFO attributes', () => {
  const d = defaultAttributes(true);
  assert.equal(d.FifoQueue, 'true');
  assert.equal(d.ContentBasedDeduplication, 'false');
  assert.equal(d.DeduplicationScope, 'queue');
  assert.equal(d.FifoThroughputLimit, 'perQueue');
  assert.equal(d.VisibilityTimeout, '30');
});

// ---- rules that tie attributes together (resolveAttributes) --------------------------------

void test('Given FifoThroughputLimit perMessageGroupId with DeduplicationScope queue, when resolved, then InvalidAttributeValue', () => {
  throwsCode(
    () => resolveAttributes(defaultAttributes(true), { FifoThroughputLimit: 'perMessageGroupId' }),
    'InvalidAttributeValue',
    'high throughput needs messageGroup',
  );
});

void test('Given high throughput (perMessageGroupId and messageGroup) set together, when resolved, then both are taken', () => {
  const next = resolveAttributes(defaultAttributes(true), {
    FifoThroughputLimit: 'perMessageGroupId',
    DeduplicationScope: 'messageGroup',
  });
  assert.equal(next.FifoThroughputLimit, 'perMessageGroupId');
  assert.equal(next.DeduplicationScope, 'messageGroup');
});

void test('Given a high-throughput queue, when DeduplicationScope alone goes back to queue, then InvalidAttributeValue', () => {
  const ht = resolveAttributes(defaultAttributes(true), {
    FifoThroughputLimit: 'perMessageGroupId',
    DeduplicationScope: 'messageGroup',
  });
  throwsCode(() => resolveAttributes(ht, { DeduplicationScope: 'queue' }), 'InvalidAttributeValue', 'scope');
});

void test('Given KmsMasterKeyId, when resolved on a queue with SSE-SQS, then SSE-SQS goes off and the data key period defaults to 300', () => {
  const next = resolveAttributes(defaultAttributes(false), { KmsMasterKeyId: 'alias/aws/sqs' });
  assert.equal(next.KmsMasterKeyId, 'alias/aws/sqs');
  assert.equal(next.SqsManagedSseEnabled, 'false');
  assert.equal(next.KmsDataKeyReusePeriodSeconds, '300');
});

void test('Given KmsMasterKeyId and SqsManagedSseEnabled true in one request, when resolved, then InvalidAttributeName (one kind of SSE at a time)', () => {
  throwsCode(
    () => resolveAttributes(defaultAttributes(false), { KmsMasterKeyId: 'k', SqsManagedSseEnabled: 'true' }),
    'InvalidAttributeName',
    'both SSE kinds',
  );
});

void test('Given an SSE-KMS queue, when SqsManagedSseEnabled is set to true, then SSE-KMS and its data key period go', () => {
  const kms = resolveAttributes(defaultAttributes(false), { KmsMasterKeyId: 'k' });
  const next = resolveAttributes(kms, { SqsManagedSseEnabled: 'true' });
  assert.equal(next.KmsMasterKeyId, undefined);
  assert.equal(next.KmsDataKeyReusePeriodSeconds, undefined);
  assert.equal(next.SqsManagedSseEnabled, 'true');
});

void test('Given an SSE-KMS queue, when KmsMasterKeyId is set to the empty string, then SSE-KMS and its data key period go', () => {
  const kms = resolveAttributes(defaultAttributes(false), { KmsMasterKeyId: 'k' });
  const valid = validateAttributes({ KmsMasterKeyId: '' }, { fifo: false, creating: false });
  const next = resolveAttributes(kms, valid);
  assert.equal(next.KmsMasterKeyId, undefined);
  assert.equal(next.KmsDataKeyReusePeriodSeconds, undefined);
  assert.equal(next.SqsManagedSseEnabled, 'false');
});

void test('Given an SSE-KMS queue, when KmsMasterKeyId "", KmsDataKeyReusePeriodSeconds 300 and SqsManagedSseEnabled true are set in one request, then the attributes are a new queue\'s again', () => {
  const kms = resolveAttributes(defaultAttributes(false), {
    KmsMasterKeyId: 'k',
    KmsDataKeyReusePeriodSeconds: '600',
  });
  const given = { KmsMasterKeyId: '', KmsDataKeyReusePeriodSeconds: '300', SqsManagedSseEnabled: 'true' };
  const valid = validateAttributes(given, { fifo: false, creating: false });
  assert.deepEqual(resolveAttributes(kms, valid), defaultAttributes(false));
});

void test('Given a Policy over 8,192 bytes, when validated, then InvalidAttributeValue', () => {
  const big = JSON.stringify({ Version: '2012-10-17', Statement: [], pad: 'x'.repeat(8200) });
  throwsCode(() => validateAttributes({ Policy: big }, standard), 'InvalidAttributeValue', 'big policy');
});

void test('Given a queue with a Policy, when Policy is set to the empty string, then the Policy is removed', () => {
  const withPolicy = resolveAttributes(defaultAttributes(false), { Policy: '{"Statement":[]}' });
  const valid = validateAttributes({ Policy: '' }, { fifo: false, creating: false });
  assert.equal(resolveAttributes(withPolicy, valid).Policy, undefined);
});

void test('Given a FIFO-only attribute on a standard queue, when validated, then the message says it needs FifoQueue', () => {
  assert.throws(
    () => validateAttributes({ DeduplicationScope: 'queue' }, standard),
    /You can specify the DeduplicationScope only when FifoQueue is set to true/,
  );
});
