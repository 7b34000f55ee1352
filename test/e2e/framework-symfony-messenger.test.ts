/**
 * Symfony Messenger 5.4's Amazon SQS transport (Debian's php-symfony-amazon-sqs-messenger on
 * php-async-aws-sqs 1.7, the Query protocol) against shared-sqs, through Debian's autoloaders:
 * test/e2e/frameworks/symfony-messenger.php dispatches a message on a bus routed to the transport
 * (DSN sqs://test:test@127.0.0.1:PORT/QUEUE?sslmode=disable), then a Worker receives it, runs the
 * handler and acknowledges (deletes) it.
 */
import assert from 'node:assert/strict';
import { CreateQueueCommand, GetQueueAttributesCommand, GetQueueUrlCommand } from '@aws-sdk/client-sqs';
import { testsRequiring } from '../support/requires.js';
import { uniqueName } from '../support/server.js';
import { sharedServer } from '../support/sqs.js';
import { lastJsonLine, run } from './frameworks/child.js';

const { test, before, after } = testsRequiring('symfony-messenger-sqs');

const sqs = sharedServer({ hooks: { before, after } });

test('Symfony Messenger: a message dispatched to the SQS transport is consumed by a Worker and deleted', async () => {
  const queue = uniqueName('symfony');
  const text = 'hello from Symfony: é ✓';
  const result = await run(
    'php',
    ['symfony-messenger.php', queue, text],
    { SHARED_SQS_HOST_PORT: `127.0.0.1:${sqs.server.port}` },
    30_000,
  );
  const out = lastJsonLine('php symfony-messenger.php', result) as { handled: string[]; left: number };
  assert.deepEqual(out.handled, [text], 'the handler ran once, on the message dispatched');
  assert.equal(out.left, 0, "the transport's own count");
  assert.equal(result.stderr, '', 'no PHP warnings or deprecations');

  // auto_setup created the queue; the Worker's ack deleted the message.
  const { QueueUrl } = await sqs.client.send(new GetQueueUrlCommand({ QueueName: queue }));
  const { Attributes } = await sqs.client.send(
    new GetQueueAttributesCommand({
      QueueUrl,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  assert.deepEqual(Attributes, {
    ApproximateNumberOfMessages: '0',
    ApproximateNumberOfMessagesNotVisible: '0',
  });
});

test('Symfony Messenger: with the account in the DSN path, the transport finds an existing queue by GetQueueUrl with QueueOwnerAWSAccountId', async () => {
  const queue = uniqueName('symfony-account');
  const { QueueUrl } = await sqs.client.send(new CreateQueueCommand({ QueueName: queue }));
  assert.ok(QueueUrl);
  const account = new URL(QueueUrl).pathname.split('/')[1];
  assert.equal(account, '000000000000');
  // The script's DSN is sqs://test:test@HOST:PORT/QUEUE: this makes its path /ACCOUNT/QUEUE.
  const result = await run(
    'php',
    ['symfony-messenger.php', `${account}/${queue}`, 'to an account'],
    { SHARED_SQS_HOST_PORT: `127.0.0.1:${sqs.server.port}` },
    30_000,
  );
  const out = lastJsonLine('php symfony-messenger.php', result) as { handled: string[]; left: number };
  assert.deepEqual(out.handled, ['to an account']);
  assert.equal(out.left, 0);
});
