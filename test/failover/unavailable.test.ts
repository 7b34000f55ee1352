/**
 * nginx/shared-sqs.conf answers for the servers when neither can: an AWS-shaped 503
 * ServiceUnavailable in the client's protocol instead of nginx's HTML 502 page, which the SDKs
 * cannot parse. Here no instance listens at all; during a kill -9 takeover (takeover.test.ts) the
 * same happens to requests the follower refused before the dead leader was tried.
 */
import assert from 'node:assert/strict';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { awsCli, freePort, sqsClient } from '../support/server.js';
import { jsonPost, queryPost } from '../support/wire.js';
import { startNginx } from './harness.js';
import { testsRequiring } from '../support/requires.js';

const { test } = testsRequiring('nginx', 'aws');

test('Given nginx in front of two instances that are both down, When clients of both protocols send, Then each gets a 503 ServiceUnavailable in its own protocol, never an HTML 502', async (t) => {
  const nginx = await startNginx([await freePort(), await freePort()]);
  t.after(() => nginx.stop());
  const queueUrl = `${nginx.url}/000000000000/q`;

  const json = await jsonPost(nginx.url, 'AmazonSQS.SendMessage', { QueueUrl: queueUrl, MessageBody: 'x' });
  assert.equal(json.status, 503);
  assert.equal(json.headers.get('content-type'), 'application/x-amz-json-1.0');
  assert.equal(json.headers.get('x-amzn-query-error'), 'ServiceUnavailable;Receiver');
  assert.match(json.headers.get('x-amzn-requestid') ?? '', /^[0-9a-f]{32}$/);
  assert.equal(
    (JSON.parse(json.text) as { __type: string }).__type,
    'com.amazon.coral.service#ServiceUnavailableException',
  );

  // A JSON body without X-Amz-Target is still JSON (as src/protocol/detect.ts decides).
  const untargeted = await jsonPost(nginx.url, undefined, {});
  assert.equal(untargeted.status, 503);
  assert.equal(untargeted.headers.get('content-type'), 'application/x-amz-json-1.0');

  const query = await queryPost(nginx.url, { Action: 'SendMessage', QueueUrl: queueUrl, MessageBody: 'x' });
  assert.equal(query.status, 503);
  assert.equal(query.headers.get('content-type'), 'text/xml');
  assert.match(
    query.text,
    /^<\?xml version="1\.0"\?><ErrorResponse xmlns="http:\/\/queue\.amazonaws\.com\/doc\/2012-11-05\/"><Error><Type>Receiver<\/Type><Code>ServiceUnavailable<\/Code><Message>[^<]+<\/Message><Detail\/><\/Error><RequestId>[0-9a-f]{32}<\/RequestId><\/ErrorResponse>$/,
  );

  // The real clients read it as the retryable error it is (JSON: the SDK; Query: Debian's aws-cli).
  const sdk = sqsClient(nginx.url);
  t.after(() => sdk.destroy());
  await assert.rejects(
    sdk.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: 'x' })),
    (e: unknown) => {
      const err = e as { name: string; $metadata?: { httpStatusCode?: number }; $retryable?: unknown };
      assert.equal(err.name, 'ServiceUnavailable');
      assert.equal(err.$metadata?.httpStatusCode, 503);
      return true;
    },
  );
  const cli = await awsCli(nginx.url, ['send-message', '--queue-url', queueUrl, '--message-body', 'x']);
  assert.notEqual(cli.code, 0);
  assert.equal(cli.errorCode, 'ServiceUnavailable', cli.stderr);
});
