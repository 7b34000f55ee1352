// The Failed entry of a batch result, from the error that entry met.
import { CoreError } from '../../core/errors.js';
import { SqsError } from '../errors.js';
import type { BatchResultErrorEntry } from '../model.generated.js';

export function failedEntry(id: string, e: unknown): BatchResultErrorEntry {
  const err = e instanceof CoreError ? new SqsError(e.code, e.message) : e;
  if (!(err instanceof SqsError)) throw e;
  return { Id: id, SenderFault: err.def.fault === 'Sender', Code: err.def.queryCode, Message: err.message };
}
