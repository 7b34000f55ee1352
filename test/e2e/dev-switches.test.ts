/**
 * The switches test suites start the server with (--no-purge-cooldown, --dev) and GetQueueUrl's
 * QueueOwnerAWSAccountId with auth off, over both protocols: JSON 1.0 through @aws-sdk/client-sqs
 * and Query through Debian's aws-cli. The default (a second purge within 60 s refused, a deleted
 * name taken for 60 s) is shown in test/e2e/sdk.test.ts and test/unit/core-queue.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueUrlCommand,
  PurgeQueueCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { expectSdkError } from '../support/assertions.js';
import { requires } from '../support/requires.js';
import {
  awsCli,
  awsCliOk,
  sqsClient,
  startServer,
  uniqueName,
  type RunningServer,
} from '../support/server.js';

const OTHER_ACCOUNT = '111111111111';

let noCooldown: RunningServer;
let dev: RunningServer;

before(async () => {
  [noCooldown, dev] = await Promise.all([
    startServer({ args: ['--no-purge-cooldown'] }),
    startServer({ args: ['--dev'] }),
  ]);
});

after(async () => {
  await Promise.all([noCooldown?.stop(), dev?.stop()]);
});

/** Auth off, a 12-digit access key id makes the caller act in that account. */
function clientOf(url: string, accessKeyId: string): SQSClient {
  return new SQSClient({
    region: 'us-east-1',
    endpoint: url,
    credentials: { accessKeyId, secretAccessKey: 'test' },
    maxAttempts: 1,
  });
}

void describe('--no-purge-cooldown', () => {
  test('JSON (SDK v3): two PurgeQueue calls within 60 s both succeed', async () => {
    const client = sqsClient(noCooldown.url);
    const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName: uniqueName('purge2') }));
    await client.send(new PurgeQueueCommand({ QueueUrl }));
    await client.send(new SendMessageCommand({ QueueUrl, MessageBody: 'between' }));
    await client.send(new PurgeQueueCommand({ QueueUrl }));
  });

  test('Query (aws-cli): two purge-queue calls within 60 s both succeed', requires('aws'), async () => {
    const created = await awsCliOk(noCooldown.url, [
      'create-queue',
      '--queue-name',
      uniqueName('purge2-cli'),
    ]);
    const url = String(created['QueueUrl']);
    await awsCliOk(noCooldown.url, ['purge-queue', '--queue-url', url]);
    await awsCliOk(noCooldown.url, ['purge-queue', '--queue-url', url]);
  });

  test('JSON (SDK v3): the recently-deleted rule is still on without --dev', async () => {
    const client = sqsClient(noCooldown.url);
    const QueueName = uniqueName('still-deleted');
    const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName }));
    await client.send(new DeleteQueueCommand({ QueueUrl }));
    await expectSdkError(client.send(new CreateQueueCommand({ QueueName })), {
      name: 'QueueDeletedRecently',
      code: 'AWS.SimpleQueueService.QueueDeletedRecently',
      status: 400,
    });
  });
});

void describe('--dev', () => {
  test('JSON (SDK v3): purge twice and recreate a deleted queue at once', async () => {
    const client = sqsClient(dev.url);
    const QueueName = uniqueName('dev');
    const { QueueUrl } = await client.send(new CreateQueueCommand({ QueueName }));
    await client.send(new PurgeQueueCommand({ QueueUrl }));
    await client.send(new PurgeQueueCommand({ QueueUrl }));
    await client.send(new DeleteQueueCommand({ QueueUrl }));
    const again = await client.send(new CreateQueueCommand({ QueueName }));
    assert.equal(again.QueueUrl, QueueUrl);
  });

  test('Query (aws-cli): purge twice and recreate a deleted queue at once', requires('aws'), async () => {
    const name = uniqueName('dev-cli');
    const url = String((await awsCliOk(dev.url, ['create-queue', '--queue-name', name]))['QueueUrl']);
    await awsCliOk(dev.url, ['purge-queue', '--queue-url', url]);
    await awsCliOk(dev.url, ['purge-queue', '--queue-url', url]);
    await awsCliOk(dev.url, ['delete-queue', '--queue-url', url]);
    const again = await awsCliOk(dev.url, ['create-queue', '--queue-name', name]);
    assert.equal(again['QueueUrl'], url);
  });

  test('the log is at warn: the preset says it is on, and no info line is written', () => {
    assert.match(dev.stdout(), /"level":"warn".*--dev: a test-environment preset/);
    assert.doesNotMatch(dev.stdout(), /"level":"info"/);
  });
});

void describe('GetQueueUrl with QueueOwnerAWSAccountId, auth off', () => {
  test('JSON (SDK v3): the owner account is looked in, and its URL works for the caller', async () => {
    const QueueName = uniqueName('owned');
    const owner = clientOf(dev.url, OTHER_ACCOUNT);
    const created = await owner.send(new CreateQueueCommand({ QueueName }));
    const client = sqsClient(dev.url);
    const { QueueUrl } = await client.send(
      new GetQueueUrlCommand({ QueueName, QueueOwnerAWSAccountId: OTHER_ACCOUNT }),
    );
    assert.equal(QueueUrl, created.QueueUrl);
    assert.match(QueueUrl ?? '', new RegExp(`/${OTHER_ACCOUNT}/${QueueName}$`));
    await client.send(new SendMessageCommand({ QueueUrl, MessageBody: 'to the owner' }));
    // Without the owner, the caller's own account (the default one) is looked in: no such queue.
    await expectSdkError(client.send(new GetQueueUrlCommand({ QueueName })), {
      name: 'QueueDoesNotExist',
      code: 'AWS.SimpleQueueService.NonExistentQueue',
      status: 400,
    });
    // An account that has no such queue: AWS's answer for a queue that is not there.
    await expectSdkError(
      client.send(new GetQueueUrlCommand({ QueueName, QueueOwnerAWSAccountId: '222222222222' })),
      { name: 'QueueDoesNotExist', code: 'AWS.SimpleQueueService.NonExistentQueue', status: 400 },
    );
  });

  test('Query (aws-cli): --queue-owner-aws-account-id names the owner', requires('aws'), async () => {
    const QueueName = uniqueName('owned-cli');
    const created = await clientOf(dev.url, OTHER_ACCOUNT).send(new CreateQueueCommand({ QueueName }));
    const found = await awsCliOk(dev.url, [
      'get-queue-url',
      '--queue-name',
      QueueName,
      '--queue-owner-aws-account-id',
      OTHER_ACCOUNT,
    ]);
    assert.equal(found['QueueUrl'], created.QueueUrl);
    const missing = await awsCli(dev.url, ['get-queue-url', '--queue-name', QueueName]);
    assert.equal(missing.errorCode, 'AWS.SimpleQueueService.NonExistentQueue');
  });
});
