/**
 * Dead-letter queues through Debian's aws-cli 2.9 at /usr/bin/aws (Query protocol): a RedrivePolicy
 * to a missing queue, the move at maxReceiveCount + 1 receives with DeadLetterQueueSourceArn,
 * RedriveAllowPolicy denyAll, and list-dead-letter-source-queues. Set-up goes through raw Query
 * requests (the same protocol), since every CLI call costs about a second of CPU.
 */
import assert from 'node:assert/strict';
import { awsCliOk, uniqueName } from '../support/server.js';
import { queryOk, xmlText } from '../support/wire.js';
import { testsRequiring } from '../support/requires.js';
import { queryCreateQueueWithArn, redrivePolicy, sharedServer } from '../support/sqs.js';
import { expectCliError } from '../support/assertions.js';

const { after, before, test } = testsRequiring('aws');

const sqs = sharedServer({ hooks: { before, after } });

const aws = (args: string[]): Promise<Record<string, unknown>> => awsCliOk(sqs.server.url, args);

const awsError = (args: string[], code: string, status: number, message?: string): Promise<void> =>
  expectCliError(sqs.server.url, args, code, status, message);

const queue = (name: string, attributes?: Record<string, string>): Promise<{ url: string; arn: string }> =>
  queryCreateQueueWithArn(sqs.server.url, name, attributes);

const policy = redrivePolicy;

test('Given a RedrivePolicy naming a missing queue, When aws sqs set-queue-attributes sets it, Then InvalidParameterValue (400)', async () => {
  const src = await queue(uniqueName('src'));
  const missing = src.arn.replace(/[^:]+$/, uniqueName('missing'));
  await awsError(
    [
      'set-queue-attributes',
      '--queue-url',
      src.url,
      '--attributes',
      JSON.stringify({ RedrivePolicy: policy(missing, 3) }),
    ],
    'InvalidParameterValue',
    400,
  );
});

test('Given maxReceiveCount 1, When aws sqs receive-message receives a message twice, Then the second time it has moved to the DLQ, which names its source', async () => {
  const dlq = await queue(uniqueName('dlq'));
  const src = await queue(uniqueName('src'), { RedrivePolicy: policy(dlq.arn, 1) });
  const sent = xmlText(
    await queryOk(sqs.server.url, { Action: 'SendMessage', QueueUrl: src.url, MessageBody: 'poison' }),
    'MessageId',
  );
  const args = ['receive-message', '--queue-url', src.url, '--visibility-timeout', '0'];
  assert.equal((await aws(args)).Messages !== undefined, true, 'first receive delivers');
  assert.equal((await aws(args)).Messages, undefined, 'second receive moves it');
  const out = await aws(['receive-message', '--queue-url', dlq.url, '--attribute-names', 'All']);
  const [m] = out.Messages as Array<{ MessageId: string; Body: string; Attributes: Record<string, string> }>;
  assert.ok(m);
  assert.equal(m.MessageId, sent);
  assert.equal(m.Body, 'poison');
  assert.equal(m.Attributes.DeadLetterQueueSourceArn, src.arn);
});

test('Given a DLQ with RedriveAllowPolicy denyAll, When a source names it with set-queue-attributes, Then InvalidParameterValue (400)', async () => {
  const dlq = await queue(uniqueName('dlq'), { RedriveAllowPolicy: '{"redrivePermission":"denyAll"}' });
  const src = await queue(uniqueName('src'));
  await awsError(
    [
      'set-queue-attributes',
      '--queue-url',
      src.url,
      '--attributes',
      JSON.stringify({ RedrivePolicy: policy(dlq.arn, 3) }),
    ],
    'InvalidParameterValue',
    400,
  );
});

test('Given two sources of a DLQ, When aws sqs list-dead-letter-source-queues pages one at a time, Then both come in name order', async () => {
  const dlq = await queue(uniqueName('dlq'));
  const base = uniqueName('srcs');
  await queue(`${base}-b`, { RedrivePolicy: policy(dlq.arn, 3) });
  await queue(`${base}-a`, { RedrivePolicy: policy(dlq.arn, 3) });
  const first = await aws([
    'list-dead-letter-source-queues',
    '--queue-url',
    dlq.url,
    '--max-results',
    '1',
    '--no-paginate',
  ]);
  const page1 = first.queueUrls as string[];
  assert.equal(page1.length, 1);
  assert.ok(page1[0]?.endsWith(`${base}-a`));
  assert.equal(typeof first.NextToken, 'string');
  const second = await aws([
    'list-dead-letter-source-queues',
    '--queue-url',
    dlq.url,
    '--max-results',
    '1',
    '--no-paginate',
    '--next-token',
    first.NextToken as string,
  ]);
  assert.ok((second.queueUrls as string[])[0]?.endsWith(`${base}-b`));
  assert.equal(second.NextToken, undefined);
});
