// What the three batch actions share: a failed entry, and the result they answer with.
import { CoreError } from '../../core/errors.js';
import { SqsError } from '../errors.js';
import type { BatchResultErrorEntry } from '../model.generated.js';

export function failedEntry(id: string, e: unknown): BatchResultErrorEntry {
  const err = e instanceof CoreError ? new SqsError(e.code, e.message) : e;
  if (!(err instanceof SqsError)) throw e;
  return { Id: id, SenderFault: err.def.fault === 'Sender', Code: err.def.queryCode, Message: err.message };
}

interface BatchResult<S> {
  Successful: S[];
  Failed: BatchResultErrorEntry[];
}

/**
 * A batch action's result. When no entry failed there is no `Failed` at all, as AWS answers over
 * JSON (recorded: `{"Successful": [...]}`), although the API model marks the member required; the
 * Query reply then has no `<BatchResultErrorEntry>`, as before.
 */
export function batchResult<S>(Successful: S[], Failed: BatchResultErrorEntry[]): BatchResult<S> {
  return Failed.length > 0 ? { Successful, Failed } : ({ Successful } as BatchResult<S>);
}
