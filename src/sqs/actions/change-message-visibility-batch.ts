import { missingParameter } from '../errors.js';
import type { BatchResultErrorEntry, ChangeMessageVisibilityBatchResultEntry } from '../model.generated.js';
import { resolveQueue, type Action } from '../service.js';
import { checkBatchEntries, checkVisibilityTimeout } from '../validate.js';
import { batchResult, failedEntry } from './batch.js';

export const changeMessageVisibilityBatch: Action<'ChangeMessageVisibilityBatch'> = (svc, ctx, input) => {
  const q = resolveQueue(svc, ctx, input.QueueUrl);
  checkBatchEntries(input.Entries);
  const now = svc.clock.now();
  const Successful: ChangeMessageVisibilityBatchResultEntry[] = [];
  const Failed: BatchResultErrorEntry[] = [];
  for (const e of input.Entries) {
    try {
      if (e.VisibilityTimeout === undefined) throw missingParameter('VisibilityTimeout');
      checkVisibilityTimeout(e.VisibilityTimeout);
      q.changeVisibility(e.ReceiptHandle, e.VisibilityTimeout * 1000, now);
      Successful.push({ Id: e.Id });
    } catch (err) {
      Failed.push(failedEntry(e.Id, err));
    }
  }
  return batchResult(Successful, Failed);
};
