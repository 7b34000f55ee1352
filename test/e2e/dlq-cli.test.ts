/**
 * Dead-letter queues through Debian's aws-cli 2.9 at /usr/bin/aws (Query protocol): a RedrivePolicy
 * to a missing queue, the move at maxReceiveCount + 1 receives with DeadLetterQueueSourceArn,
 * RedriveAllowPolicy denyAll, and list-dead-letter-source-queues. Set-up goes through raw Query
 * requests (the same protocol), since every CLI call costs about a second of CPU.
 */
import assert from 'node:assert/strict';
import { awsCli, awsCliOk, startServer, uniqueName, type RunningServer } from '../support/server.js';
import { queryOk, xmlAttributes, xmlText } from '../support/wire.js';
import { testsRequiring } from '../support/requires.js';

const { after, before, test } = testsRequiring('aws');

let server: RunningServer;

before(async () => {
  server = await startServer();
});

after(async () => {
  await server?.stop();
});

const aws = (args: string[]): Promise<Record<string, unknown>> => awsCliOk(server.url, args);

async function awsError(args: string[], code: string, status: number): Promise<void> {
  const res = await awsCli(server.url, args, { debug: true });
  assert.notEqual(res.code, 0, `aws sqs ${args[0]} should fail`);
  assert.equal(res.errorCode, code, `error code printed by the CLI (stderr tail: ${res.stderr.slice(-600)})`);
  assert.equal(res.status, status, 'HTTP status');
}

async function queue(
  name: string,
  attributes: Record<string, string> = {},
): Promise<{ url: string; arn: string }> {
  const params: Record<string, string> = { Action: 'CreateQueue', QueueName: name };
  Object.entries(attributes).forEach(([k, v], i) => {
    params[`Attribute.${i + 1}.Name`] = k;
    params[`Attribute.${i + 1}.Value`] = v;
  });
  const url = xmlText(await queryOk(server.url, params), 'QueueUrl');
  assert.ok(url);
  const attrs = xmlAttributes(
    await queryOk(server.url, { Action: 'GetQueueAttributes', QueueUrl: url, 'AttributeName.1': 'QueueArn' }),
  );
  const arn = attrs.QueueArn;
  assert.ok(arn);
  return { url, arn };
}

const policy = (arn: string, maxReceiveCount: number): string =>
  JSON.stringify({ deadLetterTargetArn: arn, maxReceiveCount });

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
    await queryOk(server.url, { Action: 'SendMessage', QueueUrl: src.url, MessageBody: 'poison' }),
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
