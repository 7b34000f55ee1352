/**
 * /metrics after real traffic: the request, message, dead-letter and depth series move by exactly
 * what the test did (deltas between two scrapes, so other tests' traffic cannot blur them).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { sqsClient, startServer, uniqueName, type RunningServer } from '../support/server.js';
import { metricValue } from '../support/prometheus.js';

let server: RunningServer;

before(async () => {
  server = await startServer();
});
after(() => server.stop());

async function scrape(): Promise<string> {
  const res = await fetch(`${server.controlUrl}/metrics`);
  assert.equal(res.status, 200);
  return res.text();
}

test('Given sends, receives, deletes and a dead-lettered message, when /metrics is scraped, then each counter moved by that much', async () => {
  const sqs = sqsClient(server.url);
  const name = uniqueName('metrics');
  const dlqName = `${name}-dlq`;
  const { QueueUrl: dlqUrl } = await sqs.send(new CreateQueueCommand({ QueueName: dlqName }));
  const dlqArn = (
    await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn'] }))
  ).Attributes?.['QueueArn'];
  const { QueueUrl } = await sqs.send(
    new CreateQueueCommand({
      QueueName: name,
      Attributes: { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 1 }) },
    }),
  );
  const before = await scrape();

  await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'one' }));
  await sqs.send(
    new SendMessageBatchCommand({
      QueueUrl,
      Entries: [
        { Id: 'a', MessageBody: 'two' },
        { Id: 'b', MessageBody: 'three' },
      ],
    }),
  );
  const got = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 2, VisibilityTimeout: 60 }),
  );
  assert.equal(got.Messages?.length, 2);
  const [m1, m2] = got.Messages ?? [];
  await sqs.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: m1?.ReceiptHandle }));
  await sqs.send(
    new DeleteMessageBatchCommand({ QueueUrl, Entries: [{ Id: 'x', ReceiptHandle: m2?.ReceiptHandle }] }),
  );
  // The third message: received once (visible again at once), then moved to the DLQ on the next receive.
  const third = await sqs.send(new ReceiveMessageCommand({ QueueUrl, VisibilityTimeout: 0 }));
  assert.equal(third.Messages?.length, 1);
  const none = await sqs.send(new ReceiveMessageCommand({ QueueUrl }));
  assert.equal(none.Messages, undefined);

  const afterText = await scrape();
  const q = { tenant: '000000000000', region: 'us-east-1', queue: name };
  const delta = (metric: string, labels: Record<string, string>): number =>
    metricValue(afterText, metric, labels) - metricValue(before, metric, labels);

  assert.equal(delta('sqs_messages_sent_total', q), 3);
  assert.equal(delta('sqs_messages_received_total', q), 3);
  assert.equal(delta('sqs_messages_deleted_total', q), 2);
  assert.equal(delta('sqs_messages_moved_to_dlq_total', q), 1);
  assert.equal(delta('sqs_requests_total', { action: 'SendMessage', protocol: 'json', status: '200' }), 1);
  assert.equal(delta('sqs_requests_total', { action: 'ReceiveMessage', protocol: 'json', status: '200' }), 3);
  assert.equal(
    delta('sqs_request_duration_seconds_count', { action: 'DeleteMessageBatch', protocol: 'json' }),
    1,
  );
  assert.equal(metricValue(afterText, 'sqs_queue_messages', { ...q, state: 'visible' }), 0);
  assert.equal(metricValue(afterText, 'sqs_queue_messages', { ...q, queue: dlqName, state: 'visible' }), 1);
  assert.ok(metricValue(afterText, 'process_cpu_user_seconds_total', {}) > 0);
  assert.match(afterText, /^sqs_long_poll_waiters \d+$/m);
});

test('Given a request that fails, when /metrics is scraped, then it is counted under its status', async () => {
  const before = await scrape();
  const res = await fetch(`${server.url}/`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.GetQueueUrl' },
    body: JSON.stringify({ QueueName: uniqueName('absent') }),
  });
  assert.equal(res.status, 400);
  const after = await scrape();
  const labels = { action: 'GetQueueUrl', protocol: 'json', status: '400' };
  assert.equal(
    metricValue(after, 'sqs_requests_total', labels) - metricValue(before, 'sqs_requests_total', labels),
    1,
  );
});
