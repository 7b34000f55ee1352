/**
 * Query requests that also carry `X-Amz-Target: AmazonSQSv20121105.<Action>`, as some older Query
 * clients send it: the form body makes them Query whatever the header says (docs/compatibility.md,
 * src/protocol/detect.ts). Debian's boto3 1.26 (the Query protocol) adds the header before it signs
 * (SigV4 over it and the form body), against a server with auth off and one with auth on. With auth
 * on, the header cannot be used to run anything but what the signature covers (docs/faults.md row
 * 20): left unsigned beside a signed form it changes nothing, and a signed JSON request whose
 * Content-Type was not signed cannot be re-sent as a form.
 */
import assert from 'node:assert/strict';
import { boto3Calls, type Boto3Call, type Boto3Result } from '../support/boto3.js';
import { testsRequiring } from '../support/requires.js';
import { startServer, tenantsConfigFile, uniqueName, type RunningServer } from '../support/server.js';
import { signRequest } from '../support/sigv4.js';
import { queryErrorCode } from '../support/wire.js';

const { test, before, after } = testsRequiring('boto3');

// test/fixtures/boto3_calls.py signs with the key `test`, secret `test`: here it is the tenant's.
const TENANT = { name: 'team-q', accountId: '333333333333', accessKeyId: 'test', secretAccessKey: 'test' };
const FORM = 'application/x-www-form-urlencoded; charset=utf-8';

let open: RunningServer;
let authOn: RunningServer;
const config = tenantsConfigFile([TENANT]);

before(async () => {
  [open, authOn] = await Promise.all([
    startServer(),
    startServer({ args: ['--auth', 'on', '--config', config.path] }),
  ]);
});
after(async () => {
  await Promise.all([open?.stop(), authOn?.stop()]);
  config.remove();
});

const withTarget = (action: string, op: string, params: Record<string, unknown>): Boto3Call => ({
  op,
  params,
  headers: { 'X-Amz-Target': `AmazonSQSv20121105.${action}` },
});

function response(result: Boto3Result | undefined, label: string): Record<string, unknown> {
  assert.ok(result, `${label}: no result`);
  assert.ok(result.ok, `${label}: ${result.ok ? '' : `${result.status} ${result.code}: ${result.message}`}`);
  assert.equal(result.status, 200, label);
  assert.match(result.contentType ?? '', /^text\/xml/, `${label}: answered in Query's XML`);
  return result.response;
}

for (const mode of ['off', 'on'] as const) {
  test(`Given auth ${mode}, When Debian's boto3 (Query) sends each action with X-Amz-Target: AmazonSQSv20121105.<Action> signed beside its form, Then each is served as Query`, async () => {
    const server = mode === 'on' ? authOn : open;
    const name = uniqueName('qtarget');
    const queueUrl = '$0.QueueUrl';
    const run = await boto3Calls(server.url, [
      withTarget('CreateQueue', 'create_queue', { QueueName: name }),
      withTarget('SendMessage', 'send_message', {
        QueueUrl: queueUrl,
        MessageBody: 'hello é',
        MessageAttributes: { colour: { DataType: 'String', StringValue: 'blue' } },
      }),
      withTarget('ReceiveMessage', 'receive_message', {
        QueueUrl: queueUrl,
        MessageAttributeNames: ['All'],
        WaitTimeSeconds: 1,
      }),
      withTarget('DeleteMessage', 'delete_message', {
        QueueUrl: queueUrl,
        ReceiptHandle: '$2.Messages.0.ReceiptHandle',
      }),
      withTarget('GetQueueAttributes', 'get_queue_attributes', {
        QueueUrl: queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
      withTarget('ListQueues', 'list_queues', { QueueNamePrefix: name }),
      withTarget('SendMessageBatch', 'send_message_batch', {
        QueueUrl: queueUrl,
        Entries: [
          { Id: 'a', MessageBody: 'one' },
          { Id: 'b', MessageBody: 'two' },
        ],
      }),
      withTarget('DeleteQueue', 'delete_queue', { QueueUrl: queueUrl }),
      { op: 'list_queues', params: { QueueNamePrefix: name } },
    ]);
    assert.equal(run.protocol, 'query');
    const [created, sent, received, deleted, attributes, listed, batch, deletedQueue, after] = run.results;
    const url = response(created, 'CreateQueue')['QueueUrl'];
    assert.equal(url, `${server.url}/${mode === 'on' ? TENANT.accountId : '000000000000'}/${name}`);
    assert.match(String(response(sent, 'SendMessage')['MD5OfMessageAttributes']), /^[0-9a-f]{32}$/);
    const messages = response(received, 'ReceiveMessage')['Messages'] as Array<{
      Body: string;
      MessageAttributes?: Record<string, { StringValue?: string }>;
    }>;
    assert.equal(messages.length, 1);
    assert.equal(messages[0]?.Body, 'hello é');
    assert.equal(messages[0]?.MessageAttributes?.['colour']?.StringValue, 'blue');
    response(deleted, 'DeleteMessage');
    assert.deepEqual(response(attributes, 'GetQueueAttributes')['Attributes'], {
      ApproximateNumberOfMessages: '0',
      ApproximateNumberOfMessagesNotVisible: '0',
    });
    assert.deepEqual(response(listed, 'ListQueues')['QueueUrls'], [url]);
    const entries = response(batch, 'SendMessageBatch')['Successful'] as Array<{ Id: string }>;
    assert.deepEqual(entries.map((e) => e.Id).sort(), ['a', 'b']);
    response(deletedQueue, 'DeleteQueue');
    assert.equal(response(after, 'ListQueues, after DeleteQueue')['QueueUrls'], undefined);
  });
}

/** A queue of the tenant's, created over Query, signed; its URL. */
async function tenantQueue(prefix: string): Promise<string> {
  const signed = await signRequest(
    {
      method: 'POST',
      url: `${authOn.url}/`,
      headers: { 'content-type': FORM },
      body: `Action=CreateQueue&QueueName=${uniqueName(prefix)}&Version=2012-11-05`,
    },
    TENANT,
  );
  const res = await fetch(signed.url, { method: 'POST', headers: signed.headers, body: signed.body ?? '' });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  const url = /<QueueUrl>([^<]+)<\/QueueUrl>/.exec(text)?.[1];
  assert.ok(url, text);
  return url;
}

async function listed(queueUrl: string): Promise<boolean> {
  const signed = await signRequest(
    {
      method: 'POST',
      url: `${authOn.url}/`,
      headers: { 'content-type': FORM },
      body: 'Action=ListQueues&Version=2012-11-05',
    },
    TENANT,
  );
  const res = await fetch(signed.url, { method: 'POST', headers: signed.headers, body: signed.body ?? '' });
  return (await res.text()).includes(`<QueueUrl>${queueUrl}</QueueUrl>`);
}

test('Given auth on and a signed Query ListQueues, When an unsigned X-Amz-Target: AmazonSQS.DeleteQueue is added, Then it lists as signed and deletes nothing (raw SigV4, Query)', async () => {
  const queueUrl = await tenantQueue('qtarget-keep');
  const signed = await signRequest(
    {
      method: 'POST',
      url: queueUrl,
      headers: { 'content-type': FORM },
      body: 'Action=GetQueueAttributes&AttributeName.1=QueueArn&Version=2012-11-05',
    },
    TENANT,
  );
  const res = await fetch(signed.url, {
    method: 'POST',
    headers: { ...signed.headers, 'x-amz-target': 'AmazonSQS.DeleteQueue' },
    body: signed.body ?? '',
  });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  assert.match(text, /<GetQueueAttributesResult>/);
  assert.ok(await listed(queueUrl));
});

test('Given auth on and a signed JSON SendMessage whose Content-Type was not signed, When re-sent as a form, Then 403 SignatureDoesNotMatch and the queue stays; as signed, it sends (raw SigV4, JSON and Query)', async () => {
  const queueUrl = await tenantQueue('qtarget-flip');
  // Parsed as a form, this JSON body holds `Action=DeleteQueue`, and the path names the queue.
  const body = JSON.stringify({
    QueueUrl: queueUrl,
    MessageBody: 'x&Action=DeleteQueue&Version=2012-11-05&',
  });
  const signed = await signRequest(
    { method: 'POST', url: queueUrl, headers: { 'x-amz-target': 'AmazonSQS.SendMessage' }, body },
    TENANT,
  );
  const flipped = await fetch(signed.url, {
    method: 'POST',
    headers: { ...signed.headers, 'content-type': FORM },
    body,
  });
  const text = await flipped.text();
  assert.equal(flipped.status, 403, text);
  assert.equal(queryErrorCode(text), 'SignatureDoesNotMatch');
  assert.ok(await listed(queueUrl));

  const asSigned = await fetch(signed.url, {
    method: 'POST',
    headers: { ...signed.headers, 'content-type': 'application/x-amz-json-1.0' },
    body,
  });
  assert.equal(asSigned.status, 200, await asSigned.text());
  assert.ok(await listed(queueUrl));
});
