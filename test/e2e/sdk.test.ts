/**
 * JSON 1.0 protocol (`X-Amz-Target: AmazonSQS.*`, `application/x-amz-json-1.0`) through
 * @aws-sdk/client-sqs: the standard-queue data-plane scenarios of
 * test/support/scenarios-data-plane.ts (also run over aws-cli by cli.test.ts), with the error name,
 * Query code (`x-amzn-query-error`) and HTTP status the SDK surfaces; and what only JSON carries.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { expectSdkError } from '../support/assertions.js';
import { SDK_V3 } from '../support/clients.js';
import { md5Hex, md5OfAttributes, MD5_SELF_CHECK } from '../support/md5.js';
import { dataPlaneScenarios } from '../support/scenarios-data-plane.js';
import { uniqueName } from '../support/server.js';
import { jsonPost } from '../support/wire.js';
import { testsRequiring } from '../support/requires.js';

const sqs = dataPlaneScenarios(testsRequiring(), SDK_V3);

test('the test MD5 helper matches the documented byte layout (JSON protocol suite self-check)', () => {
  assert.equal(md5OfAttributes(MD5_SELF_CHECK.input), md5Hex(Buffer.from(MD5_SELF_CHECK.bytesHex, 'hex')));
});

test('Given no such queue, When the raw JSON request is sent, Then __type and x-amzn-query-error are exact', async () => {
  const res = await jsonPost(sqs.server.url, 'AmazonSQS.GetQueueUrl', {
    QueueName: uniqueName('sdk-raw-nosuch'),
  });
  assert.equal(res.status, 400);
  // Exactly, as AWS sends it: no `; charset=utf-8`.
  assert.equal(res.headers.get('content-type'), 'application/x-amz-json-1.0');
  const body = JSON.parse(res.text) as { __type?: unknown; message?: unknown };
  assert.equal(body.__type, 'com.amazonaws.sqs#QueueDoesNotExist');
  // JSON keeps the plain wording; only Query adds "for this wsdl version" (AWS recorded).
  assert.equal(body.message, 'The specified queue does not exist.');
  assert.equal(res.headers.get('x-amzn-query-error'), 'AWS.SimpleQueueService.NonExistentQueue;Sender');
  assert.ok(res.headers.get('x-amzn-requestid'), 'x-amzn-RequestId header');
});

test('Given an empty queue, When ReceiveMessage with WaitTimeSeconds 1, Then the SDK sees HTTP 200', async () => {
  const url = await sqs.createQueue(uniqueName('sdk-empty-poll'));
  const out = await sqs.client.send(new ReceiveMessageCommand({ QueueUrl: url, WaitTimeSeconds: 1 }));
  assert.equal(out.$metadata.httpStatusCode, 200);
});

void describe('regions with auth off', () => {
  void test('Given a client configured for ap-southeast-2 and one for the default region, when both create queue "twin", then two queues with two URLs, each used from its own region', async () => {
    const ap = new SQSClient({
      region: 'ap-southeast-2',
      endpoint: sqs.server.url,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
      maxAttempts: 1,
    });
    const name = uniqueName('twin');
    const apUrl = (await ap.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl ?? '';
    const usUrl = (await sqs.client.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl ?? '';
    assert.equal(apUrl, `${sqs.server.url}/ap-southeast-2/000000000000/${name}`);
    assert.equal(usUrl, `${sqs.server.url}/000000000000/${name}`);
    await ap.send(new SendMessageCommand({ QueueUrl: apUrl, MessageBody: 'in ap' }));
    const got = await ap.send(new ReceiveMessageCommand({ QueueUrl: apUrl }));
    assert.equal(got.Messages?.[0]?.Body, 'in ap');
    const arn = await ap.send(
      new GetQueueAttributesCommand({ QueueUrl: apUrl, AttributeNames: ['QueueArn'] }),
    );
    assert.equal(arn.Attributes?.QueueArn, `arn:aws:sqs:ap-southeast-2:000000000000:${name}`);
    assert.equal((await sqs.client.send(new ReceiveMessageCommand({ QueueUrl: usUrl }))).Messages, undefined);
    await expectSdkError(sqs.client.send(new SendMessageCommand({ QueueUrl: apUrl, MessageBody: 'x' })), {
      name: 'QueueDoesNotExist',
      code: 'AWS.SimpleQueueService.NonExistentQueue',
      status: 400,
    });
  });
});
