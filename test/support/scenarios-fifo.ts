/**
 * The FIFO scenarios (and fair queues), written once and registered by each client's test file:
 * test/e2e/fifo-sdk.test.ts (@aws-sdk/client-sqs, JSON 1.0) and test/e2e/fifo-cli.test.ts
 * (aws-cli 2.9, Query). Creation rules, what a send needs, deduplication, SequenceNumber, group
 * order, ReceiveRequestAttemptId, the FIFO system attributes, SendMessageBatch on FIFO, and the
 * sequences AWS answered when recorded (docs/compatibility.md, "FIFO queues").
 *
 * Only the action a scenario is about goes through `ctx.client`; the rest goes through the
 * fixture, as an aws-cli call costs a process. Sequences in which time passes run on a server in
 * the test's process whose clock the test moves (test/support/sqs.ts: clockedServer): nothing
 * sleeps, and an aws-cli call taking a second or two changes no outcome.
 */
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type Message,
} from '@aws-sdk/client-sqs';
import {
  expectServiceError,
  SQS_ERRORS,
  type Output,
  type ScenarioContext,
  type SqsTestClient,
} from './clients.js';
import { pastMillisecond } from './clock.js';
import type { FileTests } from './requires.js';
import { uniqueName } from './server.js';
import { clockedServer } from './sqs.js';

/** A FIFO SequenceNumber as AWS prints it: 20 digits. */
const SEQUENCE_NUMBER = /^\d{20}$/;

interface Sent {
  readonly id: string;
  readonly seq: string;
}

const bodies = (ms: readonly Message[]): string[] => ms.map((m) => m.Body ?? '');

export function fifoScenarios(ctx: ScenarioContext, tests: FileTests): void {
  const { test } = tests;
  const { sqs } = ctx;

  const fifoQueue = (attributes: Record<string, string> = {}): Promise<string> =>
    sqs.createQueue(`${uniqueName('fifo')}.fifo`, { FifoQueue: 'true', ...attributes });

  const sendInput = (
    url: string,
    body: string,
    group: string,
    dedup?: string,
  ): { QueueUrl: string; MessageBody: string; MessageGroupId: string; MessageDeduplicationId?: string } => ({
    QueueUrl: url,
    MessageBody: body,
    MessageGroupId: group,
    ...(dedup === undefined ? {} : { MessageDeduplicationId: dedup }),
  });

  function sent(out: Output): Sent {
    assert.ok(typeof out.MessageId === 'string', 'a send answers a MessageId');
    assert.ok(typeof out.SequenceNumber === 'string', 'a FIFO send answers a SequenceNumber');
    assert.match(out.SequenceNumber, SEQUENCE_NUMBER);
    return { id: out.MessageId, seq: out.SequenceNumber };
  }

  /** The send under test. */
  const send = async (url: string, body: string, group: string, dedup?: string): Promise<Sent> =>
    sent(await ctx.client.call('SendMessage', sendInput(url, body, group, dedup)));

  /** A send that sets the scene. */
  const given = async (url: string, body: string, group: string, dedup?: string): Promise<Sent> =>
    sent(await sqs.client.send(new SendMessageCommand(sendInput(url, body, group, dedup))));

  /** The receive under test, with every system attribute. */
  async function receive(url: string, max = 10, extra: Record<string, unknown> = {}): Promise<Message[]> {
    const out = await ctx.client.call('ReceiveMessage', {
      QueueUrl: url,
      MaxNumberOfMessages: max,
      MessageSystemAttributeNames: ['All'],
      ...extra,
    });
    return (out.Messages as Message[] | undefined) ?? [];
  }

  /** Through the fixture: what the queue holds for a plain receive now. */
  const fixtureReceive = async (
    url: string,
    extra: { VisibilityTimeout?: number; MaxNumberOfMessages?: number } = {},
  ): Promise<Message[]> =>
    (await sqs.client.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, ...extra })))
      .Messages ?? [];

  /** Group `a` holds a1 then a2, and a1 is in flight: the group is locked. */
  async function lockedGroup(url: string): Promise<Message> {
    await given(url, 'a1', 'a', 'a1');
    await given(url, 'a2', 'a', 'a2');
    const [a1] = await fixtureReceive(url, { MaxNumberOfMessages: 1 });
    assert.equal(a1?.Body, 'a1');
    assert.ok(a1.ReceiptHandle);
    return a1;
  }

  describe('creating FIFO queues', () => {
    test('Given a name ending in .fifo, When created without FifoQueue=true, Then InvalidParameterValue (400)', async () => {
      await expectServiceError(
        ctx.client.call('CreateQueue', { QueueName: `${uniqueName('x')}.fifo` }),
        SQS_ERRORS.badParam,
      );
    });

    test('Given FifoQueue=true, When created with a name without .fifo, Then InvalidParameterValue (400)', async () => {
      await expectServiceError(
        ctx.client.call('CreateQueue', { QueueName: uniqueName('x'), Attributes: { FifoQueue: 'true' } }),
        SQS_ERRORS.badParam,
      );
    });

    test('Given a FIFO queue, When its attributes are read, Then the FIFO attributes have their defaults', async () => {
      const url = await fifoQueue();
      const out = await ctx.client.call('GetQueueAttributes', {
        QueueUrl: url,
        AttributeNames: ['All'],
      });
      const attributes = out.Attributes as Record<string, string> | undefined;
      assert.equal(attributes?.FifoQueue, 'true');
      assert.equal(attributes?.ContentBasedDeduplication, 'false');
      assert.equal(attributes?.DeduplicationScope, 'queue');
      assert.equal(attributes?.FifoThroughputLimit, 'perQueue');
    });

    test('Given FifoThroughputLimit perMessageGroupId with the default DeduplicationScope, When created, Then InvalidAttributeValue (400)', async () => {
      await expectServiceError(
        ctx.client.call('CreateQueue', {
          QueueName: `${uniqueName('ht')}.fifo`,
          Attributes: { FifoQueue: 'true', FifoThroughputLimit: 'perMessageGroupId' },
        }),
        SQS_ERRORS.badAttrValue,
      );
    });

    test('Given a standard queue, When DeduplicationScope is set, Then InvalidAttributeName (400)', async () => {
      const url = await sqs.createQueue(uniqueName('std'));
      await expectServiceError(
        ctx.client.call('SetQueueAttributes', { QueueUrl: url, Attributes: { DeduplicationScope: 'queue' } }),
        SQS_ERRORS.badAttrName,
      );
    });
  });

  describe('sending to a FIFO queue', () => {
    test('Given a FIFO queue, When a message is sent without MessageGroupId, Then MissingParameter (400)', async () => {
      const url = await fifoQueue();
      await expectServiceError(
        ctx.client.call('SendMessage', { QueueUrl: url, MessageBody: 'x', MessageDeduplicationId: 'd' }),
        SQS_ERRORS.missingParam,
      );
    });

    test('Given no ContentBasedDeduplication, When sent without MessageDeduplicationId, Then InvalidParameterValue (400)', async () => {
      const url = await fifoQueue();
      await expectServiceError(send(url, 'x', 'g'), SQS_ERRORS.badParam);
    });

    test('Given a FIFO queue, When a message is sent with DelaySeconds, Then InvalidParameterValue (400)', async () => {
      const url = await fifoQueue({ ContentBasedDeduplication: 'true' });
      await expectServiceError(
        ctx.client.call('SendMessage', { ...sendInput(url, 'x', 'g'), DelaySeconds: 5 }),
        SQS_ERRORS.badParam,
      );
    });

    test('Given a MessageGroupId with a space, When sent, Then InvalidParameterValue (400)', async () => {
      const url = await fifoQueue({ ContentBasedDeduplication: 'true' });
      await expectServiceError(send(url, 'x', 'a b'), SQS_ERRORS.badParam);
    });

    test('Given a sent message, When the same deduplication id is sent again, Then the original MessageId and SequenceNumber come back and one message is stored', async () => {
      const url = await fifoQueue();
      const first = await send(url, 'one', 'g', 'same');
      const again = await send(url, 'two', 'g', 'same');
      assert.deepEqual(again, first);
      assert.deepEqual(bodies(await fixtureReceive(url)), ['one']);
    });

    test('Given ContentBasedDeduplication, When the same body is sent twice, Then the second is a duplicate', async () => {
      const url = await fifoQueue({ ContentBasedDeduplication: 'true' });
      const first = await send(url, 'same body', 'g');
      const again = await send(url, 'same body', 'g');
      assert.equal(again.id, first.id);
    });

    test('Given several sends, When their SequenceNumbers are compared, Then each is larger than the one before', async () => {
      const url = await fifoQueue();
      const seqs: bigint[] = [];
      for (let i = 0; i < 5; i++) seqs.push(BigInt((await send(url, `m${i}`, 'g', `d${i}`)).seq));
      for (let i = 1; i < seqs.length; i++) assert.ok((seqs[i] as bigint) > (seqs[i - 1] as bigint));
    });

    test('Given DeduplicationScope messageGroup, When one deduplication id is sent in two groups, Then both are stored', async () => {
      const url = await fifoQueue({
        DeduplicationScope: 'messageGroup',
        FifoThroughputLimit: 'perMessageGroupId',
      });
      const a = await send(url, 'a', 'ga', 'same');
      const b = await send(url, 'b', 'gb', 'same');
      assert.notEqual(a.id, b.id);
    });

    test('Given a standard queue, When a message carries MessageDeduplicationId, Then InvalidParameterValue (400)', async () => {
      const url = await sqs.createQueue(uniqueName('std'));
      await expectServiceError(
        ctx.client.call('SendMessage', { QueueUrl: url, MessageBody: 'x', MessageDeduplicationId: 'd' }),
        SQS_ERRORS.badParam,
      );
    });

    test('Given a standard queue (fair queue), When a message carries MessageGroupId, Then it is received with it as a system attribute', async () => {
      const url = await sqs.createQueue(uniqueName('fair'));
      await sqs.client.send(
        new SendMessageCommand({ QueueUrl: url, MessageBody: 'x', MessageGroupId: 'tenant-1' }),
      );
      const [m] = await receive(url);
      assert.equal(m?.Attributes?.MessageGroupId, 'tenant-1');
    });
  });

  describe('SendMessageBatch on a FIFO queue', () => {
    test('Given a batch, When sent, Then each entry gets a SequenceNumber and the order in each group is the entry order', async () => {
      const url = await fifoQueue();
      const out = await ctx.client.call('SendMessageBatch', {
        QueueUrl: url,
        Entries: ['1', '2', '3'].map((i) => ({
          Id: `e${i}`,
          MessageBody: `b${i}`,
          MessageGroupId: 'g',
          MessageDeduplicationId: `d${i}`,
        })),
      });
      const ok = (out.Successful as { SequenceNumber?: string }[] | undefined) ?? [];
      assert.equal(ok.length, 3);
      for (const e of ok) assert.match(e.SequenceNumber ?? '', SEQUENCE_NUMBER);
      assert.deepEqual(bodies(await fixtureReceive(url)), ['b1', 'b2', 'b3']);
    });

    test('Given a batch with an entry without MessageGroupId, When sent, Then the whole request fails with InvalidParameterValue (400)', async () => {
      const url = await fifoQueue();
      await expectServiceError(
        ctx.client.call('SendMessageBatch', {
          QueueUrl: url,
          Entries: [
            { Id: 'a', MessageBody: 'x', MessageGroupId: 'g', MessageDeduplicationId: 'd1' },
            { Id: 'b', MessageBody: 'y', MessageDeduplicationId: 'd2' },
          ],
        }),
        SQS_ERRORS.badParam,
      );
    });
  });

  describe('receiving from a FIFO queue', () => {
    test('Given two groups, When received, Then one group comes whole and in order before the other, with the FIFO system attributes', async () => {
      const url = await fifoQueue();
      const a1 = await given(url, 'a1', 'a', 'a1');
      await given(url, 'b1', 'b', 'b1');
      await given(url, 'a2', 'a', 'a2');
      const got = await receive(url);
      assert.deepEqual(bodies(got), ['a1', 'a2', 'b1']);
      assert.equal(got[0]?.Attributes?.MessageGroupId, 'a');
      assert.equal(got[0]?.Attributes?.MessageDeduplicationId, 'a1');
      assert.equal(got[0]?.Attributes?.SequenceNumber, a1.seq);
    });

    test('Given a group with a message in flight, When received again, Then that group is locked but another group is served', async () => {
      const url = await fifoQueue();
      await given(url, 'a1', 'a', 'a1');
      await given(url, 'a2', 'a', 'a2');
      await given(url, 'b1', 'b', 'b1');
      assert.deepEqual(bodies(await receive(url, 1)), ['a1']);
      assert.deepEqual(bodies(await receive(url)), ['b1']);
    });

    test('Given a locked group, When its in-flight message is deleted, Then the next message of the group is received', async () => {
      const url = await fifoQueue();
      const a1 = await lockedGroup(url);
      await sqs.client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: a1.ReceiptHandle }));
      assert.deepEqual(bodies(await receive(url)), ['a2']);
    });

    test('Given a locked group, When its message is made visible (timeout 0), Then it is received again first', async () => {
      const url = await fifoQueue();
      const a1 = await lockedGroup(url);
      await sqs.client.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: url,
          ReceiptHandle: a1.ReceiptHandle,
          VisibilityTimeout: 0,
        }),
      );
      const again = await receive(url);
      assert.deepEqual(bodies(again), ['a1', 'a2']);
      assert.equal(again[0]?.Attributes?.ApproximateReceiveCount, '2');
    });

    test('Given a receive with a ReceiveRequestAttemptId, When retried, Then the same messages and receipt handles come back and their groups stay locked for others', async () => {
      const url = await fifoQueue();
      await given(url, 'a1', 'a', 'a1');
      await given(url, 'b1', 'b', 'b1');
      const first = await receive(url, 10, { ReceiveRequestAttemptId: 'attempt-1' });
      const retry = await receive(url, 10, { ReceiveRequestAttemptId: 'attempt-1' });
      assert.equal(first.length, 2);
      assert.deepEqual(
        retry.map((m) => m.ReceiptHandle),
        first.map((m) => m.ReceiptHandle),
      );
      assert.deepEqual(await fixtureReceive(url), [], 'the groups are locked while in flight');
    });

    test('Given an invalid ReceiveRequestAttemptId, When received, Then InvalidParameterValue (400)', async () => {
      const url = await fifoQueue();
      await expectServiceError(
        receive(url, 10, { ReceiveRequestAttemptId: 'x'.repeat(129) }),
        SQS_ERRORS.badParam,
      );
    });

    test('Given a FIFO message whose visibility expired, When deleted with its old handle, Then InvalidParameterValue (400)', async () => {
      const url = await fifoQueue();
      await given(url, 'a1', 'a', 'a1');
      const [a1] = await fixtureReceive(url, { VisibilityTimeout: 0 });
      assert.ok(a1?.ReceiptHandle);
      await expectServiceError(
        ctx.client.call('DeleteMessage', { QueueUrl: url, ReceiptHandle: a1.ReceiptHandle }),
        SQS_ERRORS.badParam,
      );
    });
  });

  describe('FIFO sequences AWS answered when recorded', () => {
    test('Given a purged FIFO queue, When a deduplication id sent before the purge is sent again, Then it is a new message', async () => {
      const url = await fifoQueue();
      const before = await given(url, 'a', 'g', 'd');
      await ctx.client.call('PurgeQueue', { QueueUrl: url });
      const after = await send(url, 'a', 'g', 'd');
      assert.notEqual(after.id, before.id);
      assert.deepEqual(
        (await fixtureReceive(url)).map((m) => m.MessageId),
        [after.id],
      );
    });

    test('Given a group whose in-flight message is set visible again, When received, Then the group that was waiting comes first', async () => {
      const url = await fifoQueue();
      for (const [group, body] of [
        ['g1', 'g1-a'],
        ['g1', 'g1-b'],
        ['g3', 'g3-c'],
      ] as const)
        await given(url, body, group, body);
      const [first] = await receive(url, 1);
      assert.equal(first?.Body, 'g1-a');
      assert.ok(first.ReceiptHandle);
      // g1 comes back in a later millisecond than g3's send (ties go by send order).
      await pastMillisecond(Date.now());
      await sqs.client.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: url,
          ReceiptHandle: first.ReceiptHandle,
          VisibilityTimeout: 0,
        }),
      );
      assert.deepEqual(bodies(await receive(url)), ['g3-c', 'g1-a', 'g1-b']);
    });
  });

  // The sequences in which time passes: on a server whose clock the test moves.
  const timed = clockedServer(tests);
  let timedClient: SqsTestClient | undefined;
  tests.after(() => timedClient?.close());
  /** The client under test, on the clocked server. */
  const client = (): SqsTestClient => (timedClient ??= ctx.kind.connect(timed.url));

  describe('FIFO: within a group, messages are served up to the first one in flight', () => {
    const S = 1000;

    const setUp = async (
      attributes: Record<string, string>,
      messages: [string, string][],
    ): Promise<string> => {
      const url = await timed.createQueue(`${uniqueName('fifo')}.fifo`, {
        FifoQueue: 'true',
        ContentBasedDeduplication: 'true',
        ...attributes,
      });
      for (const [group, body] of messages)
        await timed.client.send(
          new SendMessageCommand({ QueueUrl: url, MessageBody: body, MessageGroupId: group }),
        );
      return url;
    };
    const take = async (url: string, max: number, visibility?: number): Promise<Message[]> =>
      (
        await timed.client.send(
          new ReceiveMessageCommand({
            QueueUrl: url,
            MaxNumberOfMessages: max,
            ...(visibility === undefined ? {} : { VisibilityTimeout: visibility }),
          }),
        )
      ).Messages ?? [];
    const setVisibility = async (url: string, m: Message | undefined, seconds: number): Promise<void> => {
      assert.ok(m?.ReceiptHandle);
      await timed.client.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: url,
          ReceiptHandle: m.ReceiptHandle,
          VisibilityTimeout: seconds,
        }),
      );
    };
    /** The receive under test. */
    const receiveNow = async (
      url: string,
      max: number,
      extra: Record<string, unknown> = {},
    ): Promise<string[]> =>
      bodies(
        ((await client().call('ReceiveMessage', { QueueUrl: url, MaxNumberOfMessages: max, ...extra }))
          .Messages as Message[] | undefined) ?? [],
      );

    /** g1-m1 and g1-m2 received (VisibilityTimeout 30), g2-m1 waiting. */
    async function twoOfG1InFlight(): Promise<{ url: string; g1m1: Message | undefined }> {
      const url = await setUp({ VisibilityTimeout: '30' }, [
        ['g1', 'g1-m1'],
        ['g1', 'g1-m2'],
        ['g2', 'g2-m1'],
      ]);
      const got = await take(url, 2);
      assert.deepEqual(bodies(got), ['g1-m1', 'g1-m2']);
      return { url, g1m1: got[0] };
    }

    test('Given g1-m1 and g1-m2 in flight, When g1-m1 is set visible (0) and received (max 3, wait 2 s), Then exactly [g2-m1, g1-m1]', async () => {
      const { url, g1m1 } = await twoOfG1InFlight();
      timed.clock.advance(1 * S);
      await setVisibility(url, g1m1, 0);
      assert.deepEqual(await receiveNow(url, 3, { WaitTimeSeconds: 2 }), ['g2-m1', 'g1-m1']);
    });

    test('Given g1-m1 and g1-m2 in flight, When g1-m1 is set to 1 s and 2 s pass, Then a receive (max 3) returns exactly [g2-m1, g1-m1]', async () => {
      const { url, g1m1 } = await twoOfG1InFlight();
      await setVisibility(url, g1m1, 1);
      timed.clock.advance(2 * S);
      assert.deepEqual(await receiveNow(url, 3), ['g2-m1', 'g1-m1']);
    });

    for (const [p, expected] of [
      [0, []],
      [1, ['foo']],
      [2, ['foo', 'bar']],
    ] as const) {
      test(`Given foo, bar, baz of one group in flight for 1 s, When the one at position ${p} is extended to 4 s and 2.5 s pass, Then a receive (max 5) returns [${expected.join(', ')}]`, async () => {
        const url = await setUp({ VisibilityTimeout: '1' }, [
          ['1', 'foo'],
          ['1', 'bar'],
          ['1', 'baz'],
        ]);
        const got = await take(url, 5);
        assert.deepEqual(bodies(got), ['foo', 'bar', 'baz']);
        await setVisibility(url, got[p], 4);
        timed.clock.advance(2500);
        assert.deepEqual(await receiveNow(url, 5), expected);
      });
    }

    test('Given g1 and g2 received one after the other and g3 waiting, When both time out, Then a receive returns [g3-m1, g1-m1, g1-m2, g2-m1, g2-m2]', async () => {
      const url = await setUp({ VisibilityTimeout: '30' }, [
        ['g1', 'g1-m1'],
        ['g1', 'g1-m2'],
        ['g2', 'g2-m1'],
        ['g2', 'g2-m2'],
        ['g3', 'g3-m1'],
      ]);
      assert.deepEqual(bodies(await take(url, 1)), ['g1-m1']);
      timed.clock.advance(1 * S);
      assert.deepEqual(bodies(await take(url, 2)), ['g2-m1', 'g2-m2']);
      timed.clock.advance(30 * S);
      assert.deepEqual(await receiveNow(url, 10), ['g3-m1', 'g1-m1', 'g1-m2', 'g2-m1', 'g2-m2']);
    });
  });

  describe('FIFO: a DeduplicationScope change takes effect for deduplication 60 s after it is made', () => {
    const sendAt = async (url: string, body: string, group: string, dedup: string): Promise<Sent> =>
      sent(await client().call('SendMessage', sendInput(url, body, group, dedup)));
    const givenAt = async (url: string, body: string, group: string, dedup: string): Promise<Sent> =>
      sent(await timed.client.send(new SendMessageCommand(sendInput(url, body, group, dedup))));
    const receiveAt = async (url: string, visibility?: number): Promise<Message[]> =>
      (
        await timed.client.send(
          new ReceiveMessageCommand({
            QueueUrl: url,
            MaxNumberOfMessages: 10,
            ...(visibility === undefined ? {} : { VisibilityTimeout: visibility }),
          }),
        )
      ).Messages ?? [];
    const deleteAll = async (url: string, ms: readonly Message[]): Promise<void> => {
      for (const m of ms)
        await timed.client.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle }));
    };

    test('Given a FIFO queue switched to high throughput after creation, When old and new deduplication ids are sent again in other groups within 60 s, Then both are duplicates, and after 60 s a new message', async () => {
      const url = await timed.createQueue(`${uniqueName('scope')}.fifo`, {
        FifoQueue: 'true',
        DeduplicationScope: 'queue',
        ContentBasedDeduplication: 'false',
      });
      /** Sends `body`, receives exactly it and deletes it: the send's result. */
      const receivedOnce = async (body: string, group: string, dedup: string): Promise<Sent> => {
        const sent = await givenAt(url, body, group, dedup);
        const got = await receiveAt(url);
        assert.deepEqual(bodies(got), [body]);
        await deleteAll(url, got);
        return sent;
      };
      /** Sends `body`: a duplicate of `of`, with nothing to receive. */
      const duplicateOf = async (of: Sent, body: string, group: string, dedup: string): Promise<void> => {
        assert.equal((await sendAt(url, body, group, dedup)).id, of.id);
        assert.deepEqual(await receiveAt(url, 0), []);
      };
      // 1. Test1 (group1, D): received and deleted. 2. Test2 (group2, D): a duplicate.
      const test1 = await receivedOnce('Test1', 'group1', 'D');
      await duplicateOf(test1, 'Test2', 'group2', 'D');
      // 3. The switch, shown at once.
      await client().call('SetQueueAttributes', {
        QueueUrl: url,
        Attributes: { DeduplicationScope: 'messageGroup', FifoThroughputLimit: 'perMessageGroupId' },
      });
      const shown = (
        await client().call('GetQueueAttributes', {
          QueueUrl: url,
          AttributeNames: ['DeduplicationScope', 'FifoThroughputLimit'],
        })
      ).Attributes as Record<string, string> | undefined;
      assert.deepEqual(shown, {
        DeduplicationScope: 'messageGroup',
        FifoThroughputLimit: 'perMessageGroupId',
      });
      // 4. Nothing to receive; Test3 (group3, D) is still a duplicate.
      assert.deepEqual(await receiveAt(url), []);
      await duplicateOf(test1, 'Test3', 'group3', 'D');
      // 5. Test4 (group4, E): new, received, deleted. 6. Test5 (group5, E): a duplicate.
      const test4 = await receivedOnce('Test4', 'group4', 'E');
      await duplicateOf(test4, 'Test5', 'group5', 'E');
      // 60 s after the change, the new scope: E in group6 is a new message.
      timed.clock.advance(60_000);
      const test6 = await sendAt(url, 'Test6', 'group6', 'E');
      assert.notEqual(test6.id, test4.id);
      assert.deepEqual(bodies(await receiveAt(url)), ['Test6']);
    });
  });
}
