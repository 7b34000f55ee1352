import type { BatchResultErrorEntry, DeleteMessageBatchResultEntry } from '../model.generated.js';
import { resolveQueue, type Action } from '../service.js';
import { checkBatchEntries } from '../validate.js';
import { batchResult, failedEntry } from './batch.js';

export const deleteMessageBatch: Action<'DeleteMessageBatch'> = (svc, ctx, input) => {
  const q = resolveQueue(svc, ctx, input.QueueUrl);
  checkBatchEntries(input.Entries);
  const now = svc.clock.now();
  const Successful: DeleteMessageBatchResultEntry[] = [];
  const Failed: BatchResultErrorEntry[] = [];
  for (const e of input.Entries) {
    try {
      q.deleteMessage(e.ReceiptHandle, now);
      Successful.push({ Id: e.Id });
    } catch (err) {
      Failed.push(failedEntry(e.Id, err));
    }
  }
  return batchResult(Successful, Failed);
};
