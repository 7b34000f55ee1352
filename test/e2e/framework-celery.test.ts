/**
 * Celery 5.2 on kombu 5.2's SQS transport, both Debian's (python3-celery, python3-kombu, with
 * python3-boto3 and python3-pycurl), against shared-sqs: the Query protocol, through boto3 for the
 * sender and the worker's setup, and through kombu's own pycurl client for the worker's long polls
 * and deletes. The app is test/e2e/frameworks/celery_app.py; its broker URL is
 * sqs://test:test@127.0.0.1:PORT.
 *
 * One worker (`celery worker -P solo`) runs for the file; the test sends add(2, 3) with
 * `python3 celery_app.py 2 3`, waits for the worker's "succeeded" line for that task id, and checks
 * that the task message was deleted.
 */
import assert from 'node:assert/strict';
import { GetQueueAttributesCommand, GetQueueUrlCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { testsRequiring } from '../support/requires.js';
import { DEBIAN_PYTHON, sqsClient, startServer, uniqueName, type RunningServer } from '../support/server.js';
import { run, start, type Background } from './frameworks/child.js';

const { test, before, after } = testsRequiring('celery', 'kombu', 'pycurl');

const DEADLINE_MS = 30_000;

let server: RunningServer;
let client: SQSClient;
let worker: Background;
let env: Record<string, string>;

before(async () => {
  server = await startServer();
  client = sqsClient(server.url);
  env = { SHARED_SQS_HOST_PORT: `127.0.0.1:${server.port}`, CELERY_QUEUE: uniqueName('celery') };
  worker = start(
    DEBIAN_PYTHON,
    [
      '-m',
      'celery',
      '-A',
      'celery_app',
      'worker',
      '--pool=solo',
      '--concurrency=1',
      // Gossip, mingle and heartbeats are broadcasts between workers: nothing to test here.
      '--without-gossip',
      '--without-mingle',
      '--without-heartbeat',
      '--loglevel=INFO',
    ],
    env,
  );
  await worker.waitFor(/celery@\S+ ready\./, DEADLINE_MS);
});

after(async () => {
  await worker?.stop();
  client?.destroy();
  await server?.stop();
});

test('Celery: a task sent through the SQS broker URL is run by the worker and its message deleted', async () => {
  const sent = await run(DEBIAN_PYTHON, ['celery_app.py', '2', '3'], env, DEADLINE_MS);
  assert.equal(sent.code, 0, `celery_app.py failed: ${sent.stderr}`);
  const taskId = sent.stdout.trim();
  assert.match(taskId, /^[0-9a-f-]{36}$/, `a task id: ${sent.stdout}`);

  const done = await worker.waitFor(
    new RegExp(`Task celery_app\\.add\\[${taskId}\\] (succeeded|raised).*`),
    DEADLINE_MS,
  );
  assert.match(done[0], /succeeded in \S+: 5$/, 'add(2, 3) ran and returned 5');

  // The worker acks (deletes) after the task ran; wait for the delete, bounded.
  const { QueueUrl } = await client.send(new GetQueueUrlCommand({ QueueName: env['CELERY_QUEUE'] }));
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    const { Attributes } = await client.send(
      new GetQueueAttributesCommand({
        QueueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    const left = [Attributes?.ApproximateNumberOfMessages, Attributes?.ApproximateNumberOfMessagesNotVisible];
    if (left.every((n) => n === '0')) break;
    assert.ok(Date.now() < deadline, `the task message was not deleted: ${JSON.stringify(left)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.doesNotMatch(worker.output(), /Traceback|ERROR\//, 'no errors in the worker log');
});
