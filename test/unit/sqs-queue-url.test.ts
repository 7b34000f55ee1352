import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseQueueUrl } from '../../src/sqs/service.js';

test('parseQueueUrl: the path names the queue, and the account when it is 12 digits', () => {
  const cases: Array<[string, string | undefined, string]> = [
    ['http://localhost:4100/000000000000/orders', '000000000000', 'orders'],
    ['https://sqs.us-east-1.amazonaws.com/123456789012/jobs.fifo', '123456789012', 'jobs.fifo'],
    ['http://h/123456789012/q/', '123456789012', 'q'],
    ['http://h//123456789012//q//', '123456789012', 'q'],
    ['http://h/123456789012/q?Action=SendMessage', '123456789012', 'q'],
    ['http://h/q', undefined, 'q'],
    ['/123456789012/q', '123456789012', 'q'],
    ['q', undefined, 'q'],
    ['http://h/1234567890123/q', undefined, 'q'],
    ['http://h/x23456789012/q', undefined, 'q'],
    ['http://h/a/b/q', undefined, 'q'],
  ];
  for (const [url, accountId, name] of cases) {
    assert.deepEqual(parseQueueUrl(url), { accountId, name }, url);
  }
});

test('parseQueueUrl: a URL without a path segment names no queue', () => {
  for (const url of ['http://h', 'http://h/', 'http://h//', '', '/', 'http://h/?x=1']) {
    assert.throws(() => parseQueueUrl(url), { name: 'SqsError' }, url);
  }
});
