import { MAX_MESSAGE_SIZE } from '../../core/limits.js';
import { SqsError } from '../errors.js';
import type { BatchResultErrorEntry, SendMessageBatchResultEntry } from '../model.generated.js';
import { resolveQueue, type Action } from '../service.js';
import { checkBatchEntries } from '../validate.js';
import { batchResult, failedEntry } from './batch.js';
import { checkBudget, checkMessageSize, prepareSend, WholeBatchError, type PreparedSend } from './send.js';

export const sendMessageBatch: Action<'SendMessageBatch'> = (svc, ctx, input) => {
  const q = resolveQueue(svc, ctx, input.QueueUrl);
  checkBatchEntries(input.Entries);
  const prepared: Array<PreparedSend | BatchResultErrorEntry> = [];
  let total = 0;
  for (const e of input.Entries) {
    try {
      const p = prepareSend(q, ctx, e, true);
      // An entry over MaximumMessageSize fails alone, but still counts toward the batch's 1 MiB.
      total += p.size;
      checkMessageSize(q, p.size, true);
      prepared.push(p);
    } catch (err) {
      // FIFO: an entry without MessageGroupId or deduplication id fails the whole batch (AWS).
      if (err instanceof WholeBatchError) throw err;
      prepared.push(failedEntry(e.Id, err));
    }
  }
  if (total > MAX_MESSAGE_SIZE) {
    throw new SqsError(
      'BatchRequestTooLong',
      `Batch requests cannot be longer than ${MAX_MESSAGE_SIZE} bytes. You have sent ${total} bytes.`,
    );
  }
  checkBudget(
    svc,
    q,
    prepared.flatMap((p) => ('message' in p ? [p.size] : [])),
  );
  const now = svc.clock.now();
  const Successful: SendMessageBatchResultEntry[] = [];
  const Failed: BatchResultErrorEntry[] = [];
  input.Entries.forEach((e, i) => {
    const p = prepared[i] as PreparedSend | BatchResultErrorEntry;
    if (!('message' in p)) {
      Failed.push(p);
      return;
    }
    // In entry order, so a FIFO batch keeps its order within each group and a repeated
    // deduplication id within the batch answers with the first entry's message.
    let sent;
    try {
      sent = q.sendMessage(p.message, now);
    } catch (err) {
      Failed.push(failedEntry(e.Id, err));
      return;
    }
    const m = p.message;
    const r: SendMessageBatchResultEntry = {
      Id: e.Id,
      MessageId: sent.messageId,
      MD5OfMessageBody: m.md5OfBody,
    };
    if (m.md5OfAttributes !== undefined) r.MD5OfMessageAttributes = m.md5OfAttributes;
    if (m.md5OfSystemAttributes !== undefined) r.MD5OfMessageSystemAttributes = m.md5OfSystemAttributes;
    if (sent.sequenceNumber !== undefined) r.SequenceNumber = sent.sequenceNumber;
    Successful.push(r);
  });
  return batchResult(Successful, Failed);
};
