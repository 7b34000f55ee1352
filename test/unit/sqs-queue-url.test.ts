import assert from 'node:assert/strict';
import { test } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { Queue } from '../../src/core/queue.js';
import { parseQueueUrl, queueUrlOf, resolveQueue, type RequestContext } from '../../src/sqs/service.js';
import { memoryServices, requestContext } from '../support/services.js';

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

test('parseQueueUrl: a region name before the account names the region', () => {
  const cases: Array<[string, string | undefined, string, string | undefined]> = [
    ['http://h/eu-west-1/123456789012/q', '123456789012', 'q', 'eu-west-1'],
    ['http://h/us-gov-west-1/123456789012/q.fifo', '123456789012', 'q.fifo', 'us-gov-west-1'],
    ['http://h/queue/ap-south-2//123456789012/q/', '123456789012', 'q', 'ap-south-2'],
    ['/eu-west-1/123456789012/q', '123456789012', 'q', 'eu-west-1'],
    ['http://h/moon/123456789012/q', '123456789012', 'q', undefined],
    ['http://h/eu-west-1/q', undefined, 'q', undefined],
  ];
  for (const [url, accountId, name, region] of cases) {
    assert.deepEqual(
      parseQueueUrl(url),
      region === undefined ? { accountId, name } : { accountId, name, region },
      url,
    );
  }
});

test('queueUrlOf: the server region has no region in the path; any other has, and its URL resolves only for a caller in that region', () => {
  const svc = memoryServices();
  const us = svc.store.create({ accountId: '111111111111', region: 'us-east-1', name: 'jobs' }, {}, {}).queue;
  const eu = svc.store.create({ accountId: '111111111111', region: 'eu-west-1', name: 'jobs' }, {}, {}).queue;
  const usUrl = queueUrlOf('http://h', us, 'us-east-1');
  const euUrl = queueUrlOf('http://h', eu, 'us-east-1');
  assert.equal(usUrl, 'http://h/111111111111/jobs');
  assert.equal(euUrl, 'http://h/eu-west-1/111111111111/jobs');
  assert.equal(resolveQueue(svc, ctxOf('111111111111'), usUrl), us);
  assert.equal(resolveQueue(svc, ctxOf('111111111111', 'eu-west-1'), euUrl), eu);
  // A URL of one region, sent by a caller signed for the other: no such queue for it.
  assert.throws(() => resolveQueue(svc, ctxOf('111111111111', 'eu-west-1'), usUrl), {
    errorName: 'QueueDoesNotExist',
  });
  assert.throws(() => resolveQueue(svc, ctxOf('111111111111'), euUrl), { errorName: 'QueueDoesNotExist' });
  // The server's own region written out is the same queue.
  assert.equal(resolveQueue(svc, ctxOf('111111111111'), 'http://h/us-east-1/111111111111/jobs'), us);
});

test('parseQueueUrl: a URL without a path segment names no queue', () => {
  for (const url of ['http://h', 'http://h/', 'http://h//', '', '/', 'http://h/?x=1']) {
    assert.throws(() => parseQueueUrl(url), { name: 'SqsError' }, url);
  }
});

function ctxOf(accountId: string, region = 'us-east-1'): RequestContext {
  return requestContext({ accountId, region, baseUrl: 'http://h' });
}

test('resolveQueue: a URL resolved before names a new queue made under the same name, and no other caller its queue', () => {
  // No 60 s wait between deleting a queue and making it again.
  const svc = memoryServices({ deletedRecentlyMs: 0 });
  const a = ctxOf('111111111111');
  const url = 'http://h/111111111111/jobs';
  const first = svc.store.create({ accountId: a.accountId, region: a.region, name: 'jobs' }, {}, {}).queue;
  assert.equal(resolveQueue(svc, a, url), first);
  assert.equal(resolveQueue(svc, a, url), first);

  // Another account, or the same account in another region, does not get the remembered queue.
  assert.throws(() => resolveQueue(svc, ctxOf('222222222222'), url), { errorName: 'QueueDoesNotExist' });
  assert.throws(() => resolveQueue(svc, ctxOf('111111111111', 'eu-west-1'), url), {
    errorName: 'QueueDoesNotExist',
  });

  svc.store.delete(first);
  assert.throws(() => resolveQueue(svc, a, url), { errorName: 'QueueDoesNotExist' });
  const second = svc.store.create({ accountId: a.accountId, region: a.region, name: 'jobs' }, {}, {}).queue;
  assert.notEqual(second, first);
  assert.equal(resolveQueue(svc, a, url), second);
});

test('resolveQueue: a URL without the account names the caller own queue of that name', () => {
  const svc = memoryServices();
  const url = 'http://h/jobs';
  const qa = svc.store.create({ accountId: '111111111111', region: 'us-east-1', name: 'jobs' }, {}, {}).queue;
  const qb = svc.store.create({ accountId: '222222222222', region: 'us-east-1', name: 'jobs' }, {}, {}).queue;
  assert.equal(resolveQueue(svc, ctxOf('111111111111'), url), qa);
  assert.equal(resolveQueue(svc, ctxOf('222222222222'), url), qb);
  assert.equal(resolveQueue(svc, ctxOf('111111111111'), url), qa);
});

test('resolveQueue: a deleted queue is not kept alive by the URL it was resolved from', async () => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const svc = memoryServices();
  const a = ctxOf('111111111111');
  const url = 'http://h/111111111111/big';
  // Made, resolved and deleted in a function of its own, so that no variable here still holds it.
  const ref = ((): WeakRef<Queue> => {
    const q = svc.store.create({ accountId: a.accountId, region: a.region, name: 'big' }, {}, {}).queue;
    assert.equal(resolveQueue(svc, a, url), q);
    svc.store.delete(q);
    return new WeakRef(q);
  })();
  // A WeakRef's target lives at least to the end of the job that made or read it.
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  assert.equal(ref.deref(), undefined);
});
