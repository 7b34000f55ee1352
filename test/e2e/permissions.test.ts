/**
 * AddPermission / RemovePermission and the Policy attribute, and the encryption attributes
 * (KmsMasterKeyId, KmsDataKeyReusePeriodSeconds, SqsManagedSseEnabled), through
 * @aws-sdk/client-sqs (JSON 1.0) and Debian's aws-cli 2.9 at /usr/bin/aws (Query).
 */
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import {
  AddPermissionCommand,
  GetQueueAttributesCommand,
  RemovePermissionCommand,
  SetQueueAttributesCommand,
} from '@aws-sdk/client-sqs';
import {
  expectSdkError,
  policyDocument,
  type PolicyStatement,
  type SdkErrorExpectation,
} from '../support/assertions.js';
import { awsCli, awsCliOk, uniqueName } from '../support/server.js';
import { testsRequiring } from '../support/requires.js';
import { sharedServer } from '../support/sqs.js';

const { after, before, test } = testsRequiring('aws');

const sqs = sharedServer({ hooks: { before, after } });

const createQueue = (attributes: Record<string, string> = {}): Promise<string> =>
  sqs.createQueue(uniqueName('perm'), attributes);

async function attributes(url: string): Promise<Record<string, string>> {
  const out = await sqs.client.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }),
  );
  return out.Attributes ?? {};
}

async function statements(url: string): Promise<PolicyStatement[]> {
  const policy = (await attributes(url)).Policy;
  assert.ok(policy, 'the queue has a Policy');
  return policyDocument(policy).Statement;
}

/** AddPermission for the one account these tests grant to. */
const grant = (url: string, label: string, actions: string[]): Promise<unknown> =>
  sqs.client.send(
    new AddPermissionCommand({
      QueueUrl: url,
      Label: label,
      AWSAccountIds: ['111122223333'],
      Actions: actions,
    }),
  );

const setAttributes = (url: string, attributes: Record<string, string>): Promise<unknown> =>
  sqs.client.send(new SetQueueAttributesCommand({ QueueUrl: url, Attributes: attributes }));

/** These errors are all modelled by their Query code: the SDK's name is the code. */
const serviceError = (code: string, status: number): SdkErrorExpectation => ({ name: code, code, status });

describe('AddPermission and RemovePermission (JSON)', () => {
  test('Given a queue, When a permission is added, Then GetQueueAttributes returns it as a Policy statement', async () => {
    const url = await createQueue();
    await grant(url, 'senders', ['SendMessage']);
    const [s] = await statements(url);
    assert.equal(s?.Sid, 'senders');
    assert.equal(s?.Effect, 'Allow');
    assert.deepEqual(s?.Principal, { AWS: 'arn:aws:iam::111122223333:root' });
    assert.equal(s?.Action, 'SQS:SendMessage');
    assert.match(s?.Resource ?? '', /^arn:aws:sqs:/);
  });

  test('Given two permissions, When one is removed, Then the other stays; when the last goes, Then there is no Policy', async () => {
    const url = await createQueue();
    for (const label of ['one', 'two']) {
      await grant(url, label, ['ReceiveMessage']);
    }
    await sqs.client.send(new RemovePermissionCommand({ QueueUrl: url, Label: 'one' }));
    assert.deepEqual(
      (await statements(url)).map((s) => s.Sid),
      ['two'],
    );
    await sqs.client.send(new RemovePermissionCommand({ QueueUrl: url, Label: 'two' }));
    assert.equal((await attributes(url)).Policy, undefined);
  });

  test('Given a label in use, When added again, Then InvalidParameterValue (400)', async () => {
    const url = await createQueue();
    const add = (): Promise<unknown> => grant(url, 'dup', ['*']);
    await add();
    await expectSdkError(add(), serviceError('InvalidParameterValue', 400));
  });

  test('Given an action only the owner may call, When granted, Then InvalidParameterValue (400)', async () => {
    const url = await createQueue();
    await expectSdkError(grant(url, 'x', ['DeleteQueue']), serviceError('InvalidParameterValue', 400));
  });

  test('Given eight actions, When granted, Then OverLimit (403)', async () => {
    const url = await createQueue();
    const actions = [
      'SendMessage',
      'ReceiveMessage',
      'DeleteMessage',
      'ChangeMessageVisibility',
      'GetQueueAttributes',
      'GetQueueUrl',
      'PurgeQueue',
      'ListDeadLetterSourceQueues',
    ];
    await expectSdkError(grant(url, 'x', actions), serviceError('OverLimit', 403));
  });

  test('Given a label not in the Policy, When removed, Then InvalidParameterValue (400)', async () => {
    const url = await createQueue();
    await expectSdkError(
      sqs.client.send(new RemovePermissionCommand({ QueueUrl: url, Label: 'nope' })),
      serviceError('InvalidParameterValue', 400),
    );
  });

  test('Given a Policy set with SetQueueAttributes, When a permission is added, Then both statements are there', async () => {
    const url = await createQueue();
    const own = {
      Version: '2012-10-17',
      Statement: [{ Sid: 'own', Effect: 'Allow', Principal: '*', Action: 'sqs:*' }],
    };
    await setAttributes(url, { Policy: JSON.stringify(own) });
    await grant(url, 'added', ['SendMessage']);
    assert.deepEqual(
      (await statements(url)).map((s) => s.Sid),
      ['own', 'added'],
    );
  });
});

describe('AddPermission and RemovePermission (Query, aws-cli)', () => {
  test('Given a queue, When aws sqs add-permission and remove-permission are called, Then the Policy has the statement and then has none', async () => {
    const url = await createQueue();
    await awsCliOk(sqs.server.url, [
      'add-permission',
      '--queue-url',
      url,
      '--label',
      'cli',
      '--aws-account-ids',
      '111122223333',
      '444455556666',
      '--actions',
      'SendMessage',
      'ReceiveMessage',
    ]);
    const out = await awsCliOk(sqs.server.url, [
      'get-queue-attributes',
      '--queue-url',
      url,
      '--attribute-names',
      'Policy',
    ]);
    const policy = policyDocument((out.Attributes as { Policy: string }).Policy);
    assert.deepEqual(policy.Statement[0]?.Action, ['SQS:SendMessage', 'SQS:ReceiveMessage']);
    assert.deepEqual(policy.Statement[0]?.Principal.AWS, [
      'arn:aws:iam::111122223333:root',
      'arn:aws:iam::444455556666:root',
    ]);
    await awsCliOk(sqs.server.url, ['remove-permission', '--queue-url', url, '--label', 'cli']);
    assert.equal((await attributes(url)).Policy, undefined);
  });

  test('Given a label not in the Policy, When aws sqs remove-permission is called, Then InvalidParameterValue (400)', async () => {
    const url = await createQueue();
    const res = await awsCli(sqs.server.url, ['remove-permission', '--queue-url', url, '--label', 'nope'], {
      debug: true,
    });
    assert.notEqual(res.code, 0);
    assert.equal(res.errorCode, 'InvalidParameterValue');
    assert.equal(res.status, 400);
  });
});

describe('encryption attributes', () => {
  test('Given KmsMasterKeyId at creation, When read, Then SSE-SQS is off and the data key period is 300', async () => {
    const url = await createQueue({ KmsMasterKeyId: 'alias/aws/sqs' });
    const a = await attributes(url);
    assert.equal(a.KmsMasterKeyId, 'alias/aws/sqs');
    assert.equal(a.SqsManagedSseEnabled, 'false');
    assert.equal(a.KmsDataKeyReusePeriodSeconds, '300');
  });

  test('Given KmsMasterKeyId and SqsManagedSseEnabled true together, When set, Then InvalidAttributeName (400)', async () => {
    const url = await createQueue();
    await expectSdkError(
      setAttributes(url, { KmsMasterKeyId: 'k', SqsManagedSseEnabled: 'true' }),
      serviceError('InvalidAttributeName', 400),
    );
  });

  test('Given KmsDataKeyReusePeriodSeconds 59, When aws sqs set-queue-attributes sets it, Then InvalidAttributeValue (400)', async () => {
    const url = await createQueue();
    const res = await awsCli(
      sqs.server.url,
      [
        'set-queue-attributes',
        '--queue-url',
        url,
        '--attributes',
        JSON.stringify({ KmsDataKeyReusePeriodSeconds: '59' }),
      ],
      { debug: true },
    );
    assert.equal(res.errorCode, 'InvalidAttributeValue');
    assert.equal(res.status, 400);
  });
});
