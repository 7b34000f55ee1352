/**
 * The AWS SDK for Go v2 as Debian ships it (golang-github-aws-aws-sdk-go-v2-dev 1.17, whose SQS
 * client speaks the Query protocol), built offline in GOPATH mode against /usr/share/gocode: the
 * program test/e2e/frameworks/go-sdk-v2.go creates a queue, sends a message with String, Number and
 * Binary attributes and receives it. The SDK fails SendMessage and ReceiveMessage itself when
 * MD5OfMessageBody differs from its own; this test checks MD5OfMessageAttributes, which it does not.
 *
 * The first build of the SDK takes ~30 s on two cores; Go's build cache makes later runs ~2 s.
 */
import assert from 'node:assert/strict';
import { md5OfAttributes } from '../support/md5.js';
import { testsRequiring } from '../support/requires.js';
import { uniqueName } from '../support/server.js';
import { sharedServer } from '../support/sqs.js';
import { lastJsonLine, run } from './frameworks/child.js';

const { test, before, after } = testsRequiring('aws-sdk-go-v2');

/** Offline: the Debian sources only, never the module proxy. */
const GO_ENV = {
  GO111MODULE: 'off',
  GOPATH: '/usr/share/gocode',
  GOPROXY: 'off',
  GOFLAGS: '',
};

const sqs = sharedServer({ hooks: { before, after } });

interface GoAttribute {
  DataType: string;
  StringValue: string | null;
  BinaryValue: string | null;
}
interface GoOutput {
  queueUrl: string;
  sent: { MessageId: string; MD5OfMessageBody: string; MD5OfMessageAttributes: string };
  received: {
    MessageId: string;
    Body: string;
    MD5OfBody: string;
    MD5OfMessageAttributes: string;
    MessageAttributes: Record<string, GoAttribute>;
  }[];
}

test('Go SDK v2: send with attributes and receive; the SDK validates the body MD5s, the attributes MD5 is as documented', async () => {
  const queue = uniqueName('go-v2');
  const result = await run(
    'go',
    ['run', 'go-sdk-v2.go', queue],
    { ...GO_ENV, SHARED_SQS_URL: sqs.server.url },
    120_000,
  );
  const out = lastJsonLine('go run go-sdk-v2.go', result) as GoOutput;

  assert.equal(out.queueUrl, `${sqs.server.url}/000000000000/${queue}`);
  assert.equal(out.received.length, 1, 'the message came back');
  const [m] = out.received;
  assert.ok(m !== undefined);
  assert.equal(m.MessageId, out.sent.MessageId);
  assert.equal(m.Body, 'hello from Go: é ü ✓');
  assert.deepEqual(
    Object.fromEntries(
      Object.entries(m.MessageAttributes).map(([k, v]) => [k, [v.DataType, v.StringValue ?? v.BinaryValue]]),
    ),
    { color: ['String', 'blue'], count: ['Number', '42'], blob: ['Binary', 'AAEC/v8='] },
  );
  const expected = md5OfAttributes({
    color: { DataType: 'String', StringValue: 'blue' },
    count: { DataType: 'Number', StringValue: '42' },
    blob: { DataType: 'Binary', BinaryValue: Uint8Array.from([0, 1, 2, 254, 255]) },
  });
  assert.equal(out.sent.MD5OfMessageAttributes, expected, 'SendMessage: MD5OfMessageAttributes');
  assert.equal(m.MD5OfMessageAttributes, expected, 'ReceiveMessage: MD5OfMessageAttributes');
  assert.equal(m.MD5OfBody, out.sent.MD5OfMessageBody);
});
