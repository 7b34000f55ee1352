/**
 * The forwardable forms (src/owners/forward.ts): a request context and an error survive JSON and
 * come back as what they were; an error crosses mapped as the data plane maps it (a core error
 * too), and a batch's failed entries cross as output. A plane whose executor forwards every
 * request through these forms to another store answers exactly as a plane running it itself.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { CoreError } from '../../src/core/errors.js';
import { buildDataPlane } from '../../src/http/data.js';
import { createLogger } from '../../src/log.js';
import type { Executor } from '../../src/owners/executor.js';
import {
  errorFromWire,
  errorToWire,
  fromForwarded,
  isForwardedContext,
  toForwarded,
  type ForwardedContext,
  type WireError,
} from '../../src/owners/forward.js';
import { encodeJson, encodeJsonError } from '../../src/protocol/json.js';
import { encodeQueryError, encodeQueryResult } from '../../src/protocol/query.js';
import { actions } from '../../src/sqs/actions/index.js';
import { errorCatalogue, SqsError, type ErrorName } from '../../src/sqs/errors.js';
import type { ActionName } from '../../src/sqs/model.generated.js';
import type { Action, RequestContext, SqsServices } from '../../src/sqs/service.js';
import { memoryServices } from '../support/services.js';

/** Through the wire and back, as a peer would read it. */
function overJson<T>(v: T): unknown {
  return JSON.parse(JSON.stringify(v));
}

const noAbort = (): void => undefined;

/** A context's fields that cross, every optional one set. */
const CROSSING: ForwardedContext = {
  requestId: 'req-1',
  accountId: '111111111111',
  region: 'eu-west-1',
  defaultRegion: 'us-east-1',
  baseUrl: 'https://sqs.example:4100',
  anyAccount: true,
  senderId: 'AIDAEXAMPLE',
  traceHeader: 'Root=1-5759e988-bd862e3fe1be46a994272793',
};
const FULL: RequestContext = { ...CROSSING, onAbort: noAbort, shard: 42 };

/** Whether ctx.onAbort is the one given: that one calls what it is given at once. */
function abortsAtOnce(ctx: RequestContext): boolean {
  let called = false;
  ctx.onAbort(() => (called = true));
  return called;
}
const atOnce = (fn: () => void): void => fn();

void test('Given a context with every field, when it crosses as JSON, then the owner gets every field but onAbort and shard, and its own onAbort', () => {
  const f = overJson(toForwarded(FULL));
  assert.ok(isForwardedContext(f));
  assert.deepEqual(f, CROSSING);
  const ctx = fromForwarded(f, atOnce);
  assert.equal(abortsAtOnce(ctx), true);
  assert.equal(ctx.shard, undefined);
  assert.deepEqual(overJson(ctx), CROSSING);
});

void test('Given a context without its optional fields, then the forwarded form has no such members, and comes back without them', () => {
  const minimal: RequestContext = {
    requestId: 'req-2',
    accountId: '111111111111',
    region: 'us-east-1',
    defaultRegion: 'us-east-1',
    baseUrl: 'http://localhost:4100',
    senderId: '111111111111',
    onAbort: noAbort,
  };
  const f = toForwarded(minimal);
  assert.deepEqual(Object.keys(f).sort(), [
    'accountId',
    'baseUrl',
    'defaultRegion',
    'region',
    'requestId',
    'senderId',
  ]);
  const ctx = fromForwarded(overJson(f) as ForwardedContext, noAbort);
  assert.deepEqual(Object.keys(ctx).sort(), [...Object.keys(f), 'onAbort'].sort());
  assert.deepEqual(overJson(ctx), overJson(minimal));
});

void test('Given JSON from a peer that carries a shard, then the owner’s context has none: its own action sets it', () => {
  const f = { ...toForwarded(FULL), shard: 7, onAbort: 'x' } as unknown as ForwardedContext;
  const ctx = fromForwarded(f, atOnce);
  assert.equal(ctx.shard, undefined);
  assert.equal(abortsAtOnce(ctx), true);
});

void test('Given values that are not a forwarded context, then isForwardedContext refuses each', () => {
  const good = toForwarded(FULL);
  const bad: unknown[] = [
    null,
    'ctx',
    [],
    {},
    { ...good, accountId: undefined },
    { ...good, accountId: 111111111111 },
    { ...good, region: null },
    { ...good, anyAccount: 'true' },
    { ...good, traceHeader: 1 },
  ];
  for (const v of bad) assert.equal(isForwardedContext(v), false, JSON.stringify(v));
  assert.equal(isForwardedContext(good), true);
});

void test('Given a forwarded context, when the owner runs an action with it, then the caller’s account, region and anyAccount decide as they would have here', async () => {
  const svc = memoryServices();
  try {
    svc.store.create({ accountId: '222222222222', region: 'eu-west-1', name: 'q' }, {}, {});
    const input = { QueueName: 'q', QueueOwnerAWSAccountId: '222222222222' };
    const ctx = fromForwarded(overJson(toForwarded(FULL)) as ForwardedContext, noAbort);
    const out = await actions.GetQueueUrl(svc, ctx, input);
    assert.deepEqual(out, { QueueUrl: 'https://sqs.example:4100/eu-west-1/222222222222/q' });
    const notAny = fromForwarded(
      overJson(toForwarded({ ...FULL, anyAccount: false })) as ForwardedContext,
      noAbort,
    );
    assert.throws(() => actions.GetQueueUrl(svc, notAny, input), { errorName: 'QueueDoesNotExist' });
  } finally {
    svc.poller.closeAll();
    svc.mover.close();
  }
});

void test('Given every error of the catalogue, when it crosses as JSON, then it comes back with its name and message, and encodes to the same bytes in both protocols', () => {
  for (const name of Object.keys(errorCatalogue) as ErrorName[]) {
    const err = new SqsError(name, `why ${name} <&>`);
    const back = errorFromWire(overJson(errorToWire(err)) as WireError);
    assert.ok(back instanceof SqsError);
    assert.equal(back.errorName, name);
    assert.equal(back.message, err.message);
    assert.deepEqual(encodeJsonError(back), encodeJsonError(err));
    assert.deepEqual(encodeQueryError(back, 'r'), encodeQueryError(err, 'r'));
  }
});

void test('Given a core error, then it crosses as its own code and message, as the plane answers it', () => {
  const e = new CoreError(
    'PurgeQueueInProgress',
    'Only one PurgeQueue operation on q is allowed every 60 seconds.',
  );
  assert.deepEqual(errorToWire(e), { code: 'PurgeQueueInProgress', message: e.message });
  const back = errorFromWire(errorToWire(e));
  assert.deepEqual(encodeJsonError(back), encodeJsonError(new SqsError(e.code, e.message)));
});

void test('Given anything but an SqsError or a core error, then it crosses as InternalFailure, without its text', () => {
  for (const e of [new Error('secret'), new TypeError('secret'), 'secret', undefined]) {
    const w = errorToWire(e);
    assert.equal(w.code, 'InternalFailure');
    assert.doesNotMatch(w.message, /secret/);
  }
});

void test('Given a code this version does not know, then errorFromWire gives InternalFailure', () => {
  const back = errorFromWire({ code: 'NoSuchError', message: 'm' } as unknown as WireError);
  assert.equal(back.errorName, 'InternalFailure');
  // Nor does a name inherited by every object pass for a catalogue entry.
  assert.equal(
    errorFromWire({ code: 'toString', message: 'm' } as unknown as WireError).errorName,
    'InternalFailure',
  );
});

void test('Given a batch with one bad entry, then the action resolves (a partial failure is output), and the output crosses as JSON unchanged in both encodings', async () => {
  const svc = memoryServices();
  try {
    const ctx: RequestContext = { ...FULL, anyAccount: false, region: 'us-east-1' };
    delete ctx.shard;
    const { QueueUrl } = await actions.CreateQueue(svc, ctx, { QueueName: 'q' });
    const input = {
      QueueUrl: QueueUrl ?? '',
      Entries: [
        { Id: 'good', MessageBody: 'm' },
        { Id: 'bad', MessageBody: 'm', DelaySeconds: 901 },
      ],
    };
    const out = await actions.SendMessageBatch(svc, ctx, input);
    assert.equal(out.Successful.length, 1);
    assert.equal(out.Failed[0]?.Id, 'bad');
    assert.equal(out.Failed[0]?.Code, 'InvalidParameterValue');
    const back = overJson(out);
    assert.equal(encodeJson(back), encodeJson(out));
    assert.equal(
      encodeQueryResult('SendMessageBatch', back, 'r'),
      encodeQueryResult('SendMessageBatch', out, 'r'),
    );
  } finally {
    svc.poller.closeAll();
    svc.mover.close();
  }
});

// ---- a plane that forwards everything, against one that runs it ----------------------------------

/**
 * An executor that runs every request on another store (the owner's), its context and errors
 * crossing as JSON in their forwardable forms.
 */
function forwardingTo(owner: SqsServices): Executor {
  return {
    async execute(action, ctx, input) {
      const sent = JSON.stringify({ action, ctx: toForwarded(ctx), input });
      let answer: string;
      try {
        const req = JSON.parse(sent) as { action: ActionName; ctx: ForwardedContext; input: unknown };
        const ownerCtx = fromForwarded(req.ctx, noAbort);
        const output: unknown = await (actions[req.action] as Action<ActionName>)(
          owner,
          ownerCtx,
          req.input as never,
        );
        answer = JSON.stringify({ output });
      } catch (e) {
        answer = JSON.stringify({ error: errorToWire(e) });
      }
      const got = JSON.parse(answer) as { output?: unknown; error?: WireError };
      if (got.error !== undefined) throw errorFromWire(got.error);
      return got.output;
    },
  };
}

function plane(
  t: TestContext,
  executor?: Executor,
): { app: ReturnType<typeof buildDataPlane>; svc: SqsServices } {
  const svc = memoryServices();
  const app = buildDataPlane({
    services: svc,
    logger: createLogger('silent'),
    accountId: '000000000000',
    region: 'us-east-1',
    baseUrl: 'http://localhost:4100',
    executor,
  });
  t.after(async () => {
    svc.poller.closeAll();
    svc.mover.close();
    await app.close();
  });
  return { app, svc };
}

const requests: { label: string; action: string; input: object }[] = [
  { label: 'a queue created', action: 'CreateQueue', input: { QueueName: 'q' } },
  { label: 'a queue created again', action: 'CreateQueue', input: { QueueName: 'q' } },
  {
    label: 'a FIFO queue',
    action: 'CreateQueue',
    input: { QueueName: 'f.fifo', Attributes: { FifoQueue: 'true' } },
  },
  {
    label: 'a queue named again with other attributes',
    action: 'CreateQueue',
    input: { QueueName: 'q', Attributes: { VisibilityTimeout: '5' } },
  },
  {
    label: 'a missing queue',
    action: 'GetQueueAttributes',
    input: { QueueUrl: 'http://localhost:4100/000000000000/nope' },
  },
  {
    label: 'a bad attribute value',
    action: 'SetQueueAttributes',
    input: { QueueUrl: 'http://localhost:4100/000000000000/q', Attributes: { VisibilityTimeout: '-1' } },
  },
  { label: 'a purge', action: 'PurgeQueue', input: { QueueUrl: 'http://localhost:4100/000000000000/q' } },
  {
    label: 'a purge too soon',
    action: 'PurgeQueue',
    input: { QueueUrl: 'http://localhost:4100/000000000000/q' },
  },
  {
    label: 'a bad receipt handle',
    action: 'DeleteMessage',
    input: { QueueUrl: 'http://localhost:4100/000000000000/q', ReceiptHandle: 'x' },
  },
  {
    label: 'a batch with bad receipt handles',
    action: 'DeleteMessageBatch',
    input: { QueueUrl: 'http://localhost:4100/000000000000/q', Entries: [{ Id: 'a', ReceiptHandle: 'x' }] },
  },
  { label: 'a list of queues', action: 'ListQueues', input: {} },
];

void test('Given a plane that forwards every request to another store and one that runs it itself, when the same requests come, then every answer is the same', async (t) => {
  const owner = memoryServices();
  t.after(() => {
    owner.poller.closeAll();
    owner.mover.close();
  });
  const { app: forwarding } = plane(t, forwardingTo(owner));
  const { app: local } = plane(t);
  const send = (app: ReturnType<typeof buildDataPlane>, action: string, input: object) =>
    app.inject({
      method: 'POST',
      url: '/',
      headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': `AmazonSQS.${action}` },
      payload: JSON.stringify(input),
    });
  const statuses = new Set<number>();
  for (const r of requests) {
    const a = await send(forwarding, r.action, r.input);
    const b = await send(local, r.action, r.input);
    assert.equal(a.statusCode, b.statusCode, r.label);
    assert.equal(a.headers['x-amzn-query-error'], b.headers['x-amzn-query-error'], r.label);
    assert.equal(a.body, b.body, r.label);
    statuses.add(a.statusCode);
  }
  // Answers both good and bad crossed.
  assert.deepEqual([...statuses].sort(), [200, 400, 403, 404]);
  assert.equal(owner.store.size, 2);
});
