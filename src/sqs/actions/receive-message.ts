import { MAX_RECEIVE_MESSAGES, MAX_WAIT_TIME_SECONDS } from '../../core/limits.js';
import type { Message, MessageAttributes } from '../../core/message.js';
import type { Queue } from '../../core/queue.js';
import { md5OfMessageAttributes } from '../md5.js';
import { invalidParameter, SqsError } from '../errors.js';
import type { Message as MessageOutput } from '../model.generated.js';
import { resolveQueue, toSqsError, type Action } from '../service.js';
import { checkFifoToken, checkVisibilityTimeout } from '../validate.js';

const MESSAGE_ATTRIBUTE_NAMES = new Set([
  'All',
  'SenderId',
  'SentTimestamp',
  'ApproximateReceiveCount',
  'ApproximateFirstReceiveTimestamp',
  'AWSTraceHeader',
  'SqsManagedSseEnabled',
  'MessageDeduplicationId',
  'MessageGroupId',
  'SequenceNumber',
  'DeadLetterQueueSourceArn',
]);

export const receiveMessage: Action<'ReceiveMessage'> = async (svc, ctx, input) => {
  const q = resolveQueue(svc, ctx, input.QueueUrl);
  const max = input.MaxNumberOfMessages ?? 1;
  if (max < 1 || max > MAX_RECEIVE_MESSAGES) {
    throw invalidParameter(
      'MaxNumberOfMessages',
      max,
      `Must be between 1 and ${MAX_RECEIVE_MESSAGES}, if provided.`,
    );
  }
  if (input.VisibilityTimeout !== undefined) checkVisibilityTimeout(input.VisibilityTimeout);
  const wait = input.WaitTimeSeconds ?? q.receiveWaitSeconds;
  if (wait < 0 || wait > MAX_WAIT_TIME_SECONDS) {
    throw invalidParameter(
      'WaitTimeSeconds',
      wait,
      `Must be >= 0 and <= ${MAX_WAIT_TIME_SECONDS}, if provided.`,
    );
  }
  const systemNames = new Set([
    ...(input.AttributeNames ?? []),
    ...(input.MessageSystemAttributeNames ?? []),
  ]);
  for (const n of systemNames) {
    if (!MESSAGE_ATTRIBUTE_NAMES.has(n))
      throw new SqsError('InvalidAttributeName', `Unknown Attribute ${n}.`);
  }
  // ReceiveRequestAttemptId applies to FIFO queues only; standard queues ignore it (as AWS).
  const attemptId = q.fifo ? input.ReceiveRequestAttemptId : undefined;
  if (attemptId !== undefined) checkFifoToken('ReceiveRequestAttemptId', attemptId);
  const vt = input.VisibilityTimeout === undefined ? undefined : input.VisibilityTimeout * 1000;
  let got: Message[];
  try {
    got = q.receive(max, vt, svc.clock.now(), attemptId);
    if (got.length === 0 && wait > 0) {
      got = await svc.poller.wait(q, max, vt, wait * 1000, (abort) => ctx.onAbort(abort), attemptId);
    }
  } catch (e) {
    throw toSqsError(e);
  }
  if (got.length === 0) return {};
  const attrFilter = messageAttributeFilter(input.MessageAttributeNames);
  return { Messages: got.map((m) => toOutput(q, m, systemNames, attrFilter)) };
};

type AttributeFilter = ((name: string) => boolean) | 'all' | 'none';

/**
 * `All`, `*` and `.*` mean every attribute; a name ending in `.*` every name that starts with the
 * text before the `.*` (AWS, recorded: `Hel.*` returns `Hello` and `Help.Me`); any other name
 * exactly that one, if the message has it.
 */
export function messageAttributeFilter(names: readonly string[] | undefined): AttributeFilter {
  if (names === undefined || names.length === 0) return 'none';
  if (names.includes('All') || names.includes('*') || names.includes('.*')) return 'all';
  const exact = new Set<string>();
  const prefixes: string[] = [];
  for (const n of names) {
    if (n.endsWith('.*')) prefixes.push(n.slice(0, -2));
    else exact.add(n);
  }
  return (name) => exact.has(name) || prefixes.some((p) => name.startsWith(p));
}

function toOutput(
  q: Queue,
  m: Message,
  systemNames: ReadonlySet<string>,
  filter: AttributeFilter,
): MessageOutput {
  const out: MessageOutput = {
    MessageId: m.id,
    ReceiptHandle: q.receiptHandle(m),
    MD5OfBody: m.md5OfBody,
    Body: m.body,
  };
  if (systemNames.size > 0) out.Attributes = systemAttributes(m, systemNames);
  if (m.attributes !== undefined && filter !== 'none') {
    if (filter === 'all') {
      out.MessageAttributes = m.attributes;
      if (m.md5OfAttributes !== undefined) out.MD5OfMessageAttributes = m.md5OfAttributes;
    } else {
      const picked: MessageAttributes = {};
      for (const [k, v] of Object.entries(m.attributes)) if (filter(k)) picked[k] = v;
      const md5 = md5OfMessageAttributes(picked);
      if (md5 !== undefined) {
        out.MessageAttributes = picked;
        out.MD5OfMessageAttributes = md5;
      }
    }
  }
  return out;
}

function systemAttributes(m: Message, names: ReadonlySet<string>): Record<string, string> {
  const all = names.has('All');
  const want = (n: string): boolean => all || names.has(n);
  const out: Record<string, string> = {};
  if (want('SenderId')) out.SenderId = m.senderId;
  if (want('SentTimestamp')) out.SentTimestamp = String(m.sentAt);
  if (want('ApproximateReceiveCount')) out.ApproximateReceiveCount = String(m.receiveCount);
  if (want('ApproximateFirstReceiveTimestamp'))
    out.ApproximateFirstReceiveTimestamp = String(m.firstReceiveAt);
  const trace = m.systemAttributes?.AWSTraceHeader?.StringValue;
  if (trace !== undefined && want('AWSTraceHeader')) out.AWSTraceHeader = trace;
  if (m.groupId !== undefined && want('MessageGroupId')) out.MessageGroupId = m.groupId;
  if (m.deduplicationId !== undefined && want('MessageDeduplicationId'))
    out.MessageDeduplicationId = m.deduplicationId;
  if (m.sequenceNumber !== undefined && want('SequenceNumber')) out.SequenceNumber = m.sequenceNumber;
  if (m.deadLetterSourceArn !== undefined && want('DeadLetterQueueSourceArn'))
    out.DeadLetterQueueSourceArn = m.deadLetterSourceArn;
  return out;
}
