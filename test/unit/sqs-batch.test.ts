/**
 * The batch actions' results (src/sqs/actions/send-message-batch.ts, batch.ts, send.ts), called
 * through the action table on an in-memory store: the per-entry MaximumMessageSize of
 * SendMessageBatch, and a result without `Failed` when no entry failed, as the JSON protocol
 * writes it (encodeJson). Both protocols through real clients: the batch scenarios of
 * test/support/boto3-scenarios.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodeJson } from '../../src/protocol/json.js';
import { actions } from '../../src/sqs/actions/index.js';
import type { ActionName, ActionTypes } from '../../src/sqs/model.generated.js';
import type { RequestContext, SqsServices } from '../../src/sqs/service.js';
import { memoryServices, requestContext } from '../support/services.js';

const ctx: RequestContext = requestContext({ baseUrl: 'http://h' });

async function call<A extends ActionName>(
  svc: SqsServices,
  action: A,
  input: ActionTypes[A]['input'],
): Promise<ActionTypes[A]['output']> {
  const run = actions[action] as (
    svc: SqsServices,
    ctx: RequestContext,
    input: ActionTypes[A]['input'],
  ) => ActionTypes[A]['output'] | Promise<ActionTypes[A]['output']>;
  return run(svc, ctx, input);
}

async function queue(svc: SqsServices, attributes: Record<string, string> = {}): Promise<string> {
  const out = await call(svc, 'CreateQueue', { QueueName: 'q', Attributes: attributes });
  return out.QueueUrl ?? assert.fail('no QueueUrl');
}

const tooLong = (limit: number): Record<string, unknown> => ({
  SenderFault: true,
  Code: 'InvalidParameterValue',
  Message: `One or more parameters cannot be validated. Reason: Message must be shorter than ${limit} bytes.`,
});

void test('SendMessageBatch applies MaximumMessageSize per entry: given a limit of 1024, when entries of 1,024 and 1,025 bytes are sent together, then the first is sent and only the second fails', async () => {
  const svc = memoryServices();
  const url = await queue(svc, { MaximumMessageSize: '1024' });
  const out = await call(svc, 'SendMessageBatch', {
    QueueUrl: url,
    Entries: [
      { Id: 'A', MessageBody: 'a'.repeat(1024) },
      { Id: 'B', MessageBody: 'a'.repeat(1025) },
    ],
  });
  assert.deepEqual(
    out.Successful.map((e) => e.Id),
    ['A'],
  );
  assert.deepEqual(out.Failed, [{ Id: 'B', ...tooLong(1024) }]);
  assert.equal(svc.store.get('000000000000', 'q')?.size, 1);
});

void test('SendMessageBatch applies MaximumMessageSize per entry: given the limit raised to 2048, when an entry is 2,040 bytes of body plus a String attribute of 8 bytes, then it fits; one byte more fails', async () => {
  const svc = memoryServices();
  const url = await queue(svc, { MaximumMessageSize: '1024' });
  await call(svc, 'SetQueueAttributes', { QueueUrl: url, Attributes: { MaximumMessageSize: '2048' } });
  const body = 'a'.repeat(2040);
  // Name 1 + data type 6 + value 1 (or 2) bytes.
  const out = await call(svc, 'SendMessageBatch', {
    QueueUrl: url,
    Entries: [
      { Id: 'fits', MessageBody: body, MessageAttributes: { k: { DataType: 'String', StringValue: 'x' } } },
      { Id: 'small', MessageBody: 'a' },
      { Id: 'over', MessageBody: body, MessageAttributes: { k: { DataType: 'String', StringValue: 'xy' } } },
    ],
  });
  assert.deepEqual(
    out.Successful.map((e) => e.Id),
    ['fits', 'small'],
  );
  assert.deepEqual(out.Failed, [{ Id: 'over', ...tooLong(2048) }]);
});

void test('SendMessageBatch applies MaximumMessageSize per entry: given a limit of 1024, when two entries over it add up to more than 1 MiB, then the whole batch is BatchRequestTooLong', async () => {
  const svc = memoryServices();
  const url = await queue(svc, { MaximumMessageSize: '1024' });
  const half = 'h'.repeat(600 * 1024);
  await assert.rejects(
    call(svc, 'SendMessageBatch', {
      QueueUrl: url,
      Entries: [
        { Id: 'a', MessageBody: half },
        { Id: 'b', MessageBody: half },
      ],
    }),
    { errorName: 'BatchRequestTooLong' },
  );
});

void test('SendMessage keeps its own wording: given a limit of 1024, when 1,025 bytes are sent alone, then "are invalid"; 1,024 fit', async () => {
  const svc = memoryServices();
  const url = await queue(svc, { MaximumMessageSize: '1024' });
  await call(svc, 'SendMessage', { QueueUrl: url, MessageBody: 'a'.repeat(1024) });
  await assert.rejects(call(svc, 'SendMessage', { QueueUrl: url, MessageBody: 'a'.repeat(1025) }), {
    errorName: 'InvalidParameterValue',
    message: 'One or more parameters are invalid. Reason: Message must be shorter than 1024 bytes.',
  });
});

void test('Batch results without failures: given the three batch actions, when every entry succeeds, then the result has no Failed member and its JSON no "Failed" key; with a failure it has both', async () => {
  const svc = memoryServices();
  const url = await queue(svc);
  const sent = await call(svc, 'SendMessageBatch', {
    QueueUrl: url,
    Entries: [
      { Id: 'a', MessageBody: 'a' },
      { Id: 'b', MessageBody: 'b' },
    ],
  });
  const received = await call(svc, 'ReceiveMessage', { QueueUrl: url, MaxNumberOfMessages: 10 });
  const handles = (received.Messages ?? []).map((m) => m.ReceiptHandle ?? '');
  assert.equal(handles.length, 2);
  const changed = await call(svc, 'ChangeMessageVisibilityBatch', {
    QueueUrl: url,
    Entries: handles.map((h, i) => ({ Id: `h${i}`, ReceiptHandle: h, VisibilityTimeout: 60 })),
  });
  const deleted = await call(svc, 'DeleteMessageBatch', {
    QueueUrl: url,
    Entries: handles.map((h, i) => ({ Id: `h${i}`, ReceiptHandle: h })),
  });
  for (const [action, out] of [
    ['SendMessageBatch', sent],
    ['ChangeMessageVisibilityBatch', changed],
    ['DeleteMessageBatch', deleted],
  ] as const) {
    assert.equal(out.Successful.length, 2, action);
    assert.ok(!('Failed' in out), `${action}: no Failed member`);
    assert.deepEqual(Object.keys(JSON.parse(encodeJson(out)) as object), ['Successful'], action);
  }
  const failing = await call(svc, 'DeleteMessageBatch', {
    QueueUrl: url,
    Entries: [{ Id: 'bad', ReceiptHandle: 'garbage' }],
  });
  assert.deepEqual(Object.keys(JSON.parse(encodeJson(failing)) as object), ['Successful', 'Failed']);
  assert.deepEqual(
    failing.Failed.map((e) => e.Code),
    ['ReceiptHandleIsInvalid'],
  );
});
