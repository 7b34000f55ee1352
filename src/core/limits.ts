/**
 * The quotas and ranges of Amazon SQS this server enforces, in one place: sizes, counts and times
 * ("Amazon SQS quotas" in the developer guide, and each action's parameter ranges in the API
 * reference). The files that check them import them from here; error messages quote them.
 *
 * Not here: limits of this server rather than of SQS (the request body it reads, in
 * src/http/data.ts; the memory budget, src/core/budget.ts) and SigV4's clock skew (src/auth is a
 * layer of its own, src/auth/sigv4.ts: `MAX_SKEW_MS`).
 */

// ---- messages --------------------------------------------------------------------------------

/** A message's body plus attributes, and the largest MaximumMessageSize: 1 MiB. */
export const MAX_MESSAGE_SIZE = 1_048_576;
/** The smallest MaximumMessageSize a queue may have. */
export const MIN_MAXIMUM_MESSAGE_SIZE = 1024;
export const MAX_MESSAGE_ATTRIBUTES = 10;
/** A message attribute's name and its DataType: at most 256 characters each. */
export const MAX_ATTRIBUTE_NAME_LENGTH = 256;
export const MAX_DATA_TYPE_LENGTH = 256;
/** MessageGroupId, MessageDeduplicationId, ReceiveRequestAttemptId: 1 to 128 characters. */
export const MAX_FIFO_TOKEN_LENGTH = 128;

// ---- times (seconds unless named _MS) ----------------------------------------------------------

export const MAX_DELAY_SECONDS = 900;
export const DEFAULT_VISIBILITY_TIMEOUT_SECONDS = 30;
/** Also the furthest a message's visibility can be extended after it was received: 12 hours. */
export const MAX_VISIBILITY_TIMEOUT_SECONDS = 43_200;
export const MIN_RETENTION_SECONDS = 60;
export const DEFAULT_RETENTION_SECONDS = 345_600;
export const MAX_RETENTION_SECONDS = 1_209_600;
export const MAX_WAIT_TIME_SECONDS = 20;
export const MIN_KMS_DATA_KEY_REUSE_SECONDS = 60;
export const DEFAULT_KMS_DATA_KEY_REUSE_SECONDS = 300;
export const MAX_KMS_DATA_KEY_REUSE_SECONDS = 86_400;
/** How long a deduplication id is remembered, after the send it came with (5 minutes). */
export const DEDUP_WINDOW_MS = 300_000;
/**
 * How long after a change of DeduplicationScope deduplication keeps the scope before it (AWS:
 * attribute changes take up to 60 seconds to propagate; docs/compatibility.md, "FIFO queues").
 */
export const SCOPE_CHANGE_DELAY_MS = 60_000;
/** How long a ReceiveRequestAttemptId can be retried (5 minutes). */
export const RECEIVE_ATTEMPT_WINDOW_MS = 300_000;
/** One PurgeQueue per queue every 60 seconds. */
export const PURGE_INTERVAL_MS = 60_000;
/** A deleted queue's name cannot be used again for 60 seconds. */
export const DELETED_RECENTLY_MS = 60_000;

// ---- counts ------------------------------------------------------------------------------------

/** Entries of a batch request; also ReceiveMessage's MaxNumberOfMessages. */
export const MAX_BATCH_ENTRIES = 10;
export const MAX_RECEIVE_MESSAGES = 10;
/** AWS caps a queue's in-flight messages at 120,000 (FIFO: 120,000 too since 2024). */
export const MAX_INFLIGHT = 120_000;
/** ListQueues' and ListDeadLetterSourceQueues' MaxResults. */
export const MAX_RESULTS = 1000;
/** A RedrivePolicy's maxReceiveCount: 1 to 1000. */
export const MAX_RECEIVE_COUNT = 1000;
/** "You can specify up to 10 source queue ARNs." */
export const MAX_SOURCE_QUEUE_ARNS = 10;
/** "The maximum value for messages per second is 500." */
export const MAX_MOVE_RATE = 500;
/** ListMessageMoveTasks returns up to the 10 most recent tasks of a source. */
export const MOVE_TASK_HISTORY = 10;
export const MAX_TAGS = 50;
export const MAX_TAG_KEY_LENGTH = 128;
export const MAX_TAG_VALUE_LENGTH = 256;

// ---- names and documents -----------------------------------------------------------------------

/** Queue names (FIFO: 75 characters and `.fifo`), batch entry ids and permission labels: 1 to 80. */
export const MAX_NAME_LENGTH = 80;
/** "Amazon SQS policy quotas". */
export const POLICY_MAX_BYTES = 8192;
export const POLICY_MAX_STATEMENTS = 20;
export const POLICY_MAX_PRINCIPALS = 50;
export const POLICY_MAX_ACTIONS = 7;
/** A KMS key id, alias or ARN (KMS's KeyId limit). */
export const MAX_KMS_KEY_ID_LENGTH = 2048;
