/**
 * Domain errors. Their codes are a subset of the SQS error catalogue's names (src/sqs/errors.ts),
 * which maps each to its wire form; the core itself knows nothing of HTTP.
 */
export type CoreErrorCode =
  | 'QueueDoesNotExist'
  | 'QueueNameExists'
  | 'QueueDeletedRecently'
  | 'ReceiptHandleIsInvalid'
  | 'MessageNotInflight'
  | 'PurgeQueueInProgress'
  | 'InvalidAttributeName'
  | 'InvalidAttributeValue'
  | 'InvalidParameterValue'
  | 'MissingParameter'
  | 'ResourceNotFoundException'
  | 'OverLimit'
  /** The queue's shard is being loaded from storage (or could not be): retry later. */
  | 'ServiceUnavailable';

export class CoreError extends Error {
  constructor(
    readonly code: CoreErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'CoreError';
  }
}
