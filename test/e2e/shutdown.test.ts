/**
 * Graceful stop, as a user's SIGTERM does it: long polls that are waiting are answered at once
 * (200, no messages) in both protocols, and the process exits 0.
 *
 * The clients keep their connections alive afterwards, as every SDK does (fetch's pool here). Each
 * step is bounded by 10 s, well below the polls' 20 s and the server's keep-alive timeout, so a server
 * that lets the polls run out, or waits for idle client connections to time out, fails with a message
 * that says which.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { startServer, uniqueName, waitForLongPollWaiters, type RunningServer } from '../support/server.js';
import { queryCreateQueue } from '../support/sqs.js';
import { jsonPost, queryPost, rawHttp, xmlTexts } from '../support/wire.js';

const STEP_MS = 10_000;

/** `promise`, or a failure saying `what` did not happen within STEP_MS. */
async function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not happen within ${STEP_MS / 1000} s`)), STEP_MS);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

let server: RunningServer | undefined;

after(async () => {
  await server?.stop();
});

/** A server of the test's own (it is stopped by SIGTERM), with one queue, stopped after the file at the latest. */
async function serverWithQueue(prefix: string): Promise<{ s: RunningServer; queueUrl: string }> {
  const s = await startServer();
  server = s;
  return { s, queueUrl: await queryCreateQueue(s.url, uniqueName(prefix)) };
}

test(
  'Given 20 s long polls waiting (JSON and Query), When SIGTERM, Then each is answered 200 with no messages and the process exits 0',
  { timeout: 30_000 },
  async () => {
    const { s, queueUrl } = await serverWithQueue('shutdown');

    const jsonPoll = jsonPost(s.url, 'AmazonSQS.ReceiveMessage', { QueueUrl: queueUrl, WaitTimeSeconds: 20 });
    const queryPoll = queryPost(s.url, {
      Action: 'ReceiveMessage',
      QueueUrl: queueUrl,
      WaitTimeSeconds: '20',
    });
    await waitForLongPollWaiters(s, 2);

    assert.ok(s.proc.kill('SIGTERM'), 'SIGTERM delivered');
    const [j, q] = await within(Promise.all([jsonPoll, queryPoll]), 'answering the long polls after SIGTERM');

    assert.equal(j.status, 200, j.text);
    const messages = (JSON.parse(j.text) as { Messages?: unknown[] }).Messages ?? [];
    assert.deepEqual(messages, []);

    assert.equal(q.status, 200, q.text);
    assert.match(q.text, /<ReceiveMessageResponse/);
    assert.deepEqual(xmlTexts(q.text, 'Body'), []);

    const exit = await within(
      s.exited,
      'the exit after SIGTERM, with the polls answered and the clients holding idle keep-alive connections,',
    );
    assert.deepEqual(exit, { code: 0, signal: null }, s.logs());
    assert.doesNotMatch(s.stderr(), /\n\s+at /, 'no stack trace on a graceful stop');
  },
);

test(
  'Given a 20 s long poll on a connection the client closes after the answer, When SIGTERM, Then it is answered 200 with no messages and the process exits 0',
  { timeout: 30_000 },
  async () => {
    const { s, queueUrl } = await serverWithQueue('shutdown-close');
    const body = JSON.stringify({ QueueUrl: queueUrl, WaitTimeSeconds: 20 });
    const poll = rawHttp(s.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': 'AmazonSQS.ReceiveMessage',
        connection: 'close',
        'content-length': Buffer.byteLength(body),
      },
      body,
    });
    await waitForLongPollWaiters(s, 1);
    assert.ok(s.proc.kill('SIGTERM'), 'SIGTERM delivered');
    const res = await within(poll, 'answering the long poll after SIGTERM');
    assert.equal(res.status, 200, res.text);
    assert.deepEqual((JSON.parse(res.text) as { Messages?: unknown[] }).Messages ?? [], []);
    const exit = await within(s.exited, 'the exit after SIGTERM');
    assert.deepEqual(exit, { code: 0, signal: null }, s.logs());
  },
);
