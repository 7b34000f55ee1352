/**
 * Every error shared-sqs answers with, in one table: the HTTP status, the Query-protocol code
 * (`<Code>` in XML, and the first half of the JSON `x-amzn-query-error` header) and the JSON
 * `__type`. docs/errors.md is kept in step with this table by test/unit/errors-doc.test.ts.
 *
 * Sources: the awsQueryError traits of the SQS Smithy model (as shipped in the AWS SDKs), the
 * SQS API reference's per-action and common errors, and answers recorded from AWS over both
 * protocols (docs/compatibility.md).
 */

import { CoreError } from '../core/errors.js';

const SQS = 'com.amazonaws.sqs#';
const CORAL = 'com.amazon.coral.service#';

export interface ErrorDef {
  readonly status: number;
  /** Query `<Code>`, and the code botocore reads from `x-amzn-query-error`. */
  readonly queryCode: string;
  /** JSON `__type`. */
  readonly jsonType: string;
  /** Sender: the client's fault; Receiver: ours (the SDKs retry those). */
  readonly fault: 'Sender' | 'Receiver';
  readonly description: string;
  /** AWS's own Query wording for this error, whatever the message; JSON keeps the message. */
  readonly queryMessage?: string;
}

function def(
  status: number,
  queryCode: string,
  jsonType: string,
  description: string,
  fault: 'Sender' | 'Receiver' = 'Sender',
): ErrorDef {
  return { status, queryCode, jsonType, fault, description };
}

export const errorCatalogue = {
  // Errors of SQS's own model.
  QueueDoesNotExist: {
    ...def(
      400,
      'AWS.SimpleQueueService.NonExistentQueue',
      `${SQS}QueueDoesNotExist`,
      'The queue named in the request does not exist.',
    ),
    queryMessage: 'The specified queue does not exist for this wsdl version.',
  },
  QueueNameExists: def(
    400,
    'QueueAlreadyExists',
    `${SQS}QueueNameExists`,
    'A queue of this name exists with other attributes.',
  ),
  QueueDeletedRecently: def(
    400,
    'AWS.SimpleQueueService.QueueDeletedRecently',
    `${SQS}QueueDeletedRecently`,
    'A queue of this name was deleted less than 60 seconds ago.',
  ),
  ReceiptHandleIsInvalid: def(
    404,
    'ReceiptHandleIsInvalid',
    `${SQS}ReceiptHandleIsInvalid`,
    'The receipt handle is not one this server issued for the queue.',
  ),
  MessageNotInflight: def(
    400,
    'AWS.SimpleQueueService.MessageNotInflight',
    `${SQS}MessageNotInflight`,
    'The message is not in flight, so its visibility cannot be changed.',
  ),
  TooManyEntriesInBatchRequest: def(
    400,
    'AWS.SimpleQueueService.TooManyEntriesInBatchRequest',
    `${SQS}TooManyEntriesInBatchRequest`,
    'A batch has more than 10 entries.',
  ),
  EmptyBatchRequest: def(
    400,
    'AWS.SimpleQueueService.EmptyBatchRequest',
    `${SQS}EmptyBatchRequest`,
    'A batch has no entries.',
  ),
  BatchEntryIdsNotDistinct: def(
    400,
    'AWS.SimpleQueueService.BatchEntryIdsNotDistinct',
    `${SQS}BatchEntryIdsNotDistinct`,
    'Two entries of a batch share an Id.',
  ),
  InvalidBatchEntryId: def(
    400,
    'AWS.SimpleQueueService.InvalidBatchEntryId',
    `${SQS}InvalidBatchEntryId`,
    'A batch entry Id is not 1-80 of [A-Za-z0-9_-].',
  ),
  BatchRequestTooLong: def(
    400,
    'AWS.SimpleQueueService.BatchRequestTooLong',
    `${SQS}BatchRequestTooLong`,
    'The messages of a batch add up to more than the queue allows.',
  ),
  InvalidAttributeName: def(
    400,
    'InvalidAttributeName',
    `${SQS}InvalidAttributeName`,
    'An attribute name is not one SQS knows.',
  ),
  InvalidAttributeValue: def(
    400,
    'InvalidAttributeValue',
    `${SQS}InvalidAttributeValue`,
    'An attribute value is out of range or malformed.',
  ),
  InvalidMessageContents: def(
    400,
    'InvalidMessageContents',
    `${SQS}InvalidMessageContents`,
    'The message body has characters outside the allowed set.',
  ),
  PurgeQueueInProgress: def(
    403,
    'AWS.SimpleQueueService.PurgeQueueInProgress',
    `${SQS}PurgeQueueInProgress`,
    'The queue was purged less than 60 seconds ago.',
  ),
  OverLimit: def(
    403,
    'OverLimit',
    `${SQS}OverLimit`,
    'A limit was reached (in-flight messages, tags, permissions).',
  ),
  UnsupportedOperation: def(
    400,
    'AWS.SimpleQueueService.UnsupportedOperation',
    `${SQS}UnsupportedOperation`,
    'The operation is not supported on this queue.',
  ),
  ResourceNotFoundException: def(
    404,
    'ResourceNotFoundException',
    `${SQS}ResourceNotFoundException`,
    'The resource (a move task, a source queue) does not exist.',
  ),
  InvalidAddress: def(404, 'InvalidAddress', `${SQS}InvalidAddress`, 'The queue URL is not a valid address.'),
  InvalidSecurity: def(
    403,
    'InvalidSecurity',
    `${SQS}InvalidSecurity`,
    'The request was not made over HTTPS or SigV4.',
  ),
  RequestThrottled: def(
    403,
    'RequestThrottled',
    `${SQS}RequestThrottled`,
    'A send over the memory budget or a tenant share of it (--max-memory); the SDKs retry it.',
  ),

  // Errors common to AWS services (Coral).
  InvalidParameterValue: def(
    400,
    'InvalidParameterValue',
    `${CORAL}InvalidParameterValueException`,
    'A parameter value is out of range or malformed (also: message too long, expired receipt handle).',
  ),
  MissingParameter: def(
    400,
    'MissingParameter',
    `${CORAL}MissingRequiredParameterException`,
    'A required parameter is missing.',
  ),
  InvalidAction: def(
    400,
    'InvalidAction',
    `${CORAL}UnknownOperationException`,
    "The action is not one of the SQS API, or (Query) names no queue but was sent to a queue's URL.",
  ),
  MalformedRequest: def(
    400,
    'MalformedQueryString',
    `${CORAL}SerializationException`,
    'The request body could not be parsed (bad JSON, bad form encoding, a value of the wrong type).',
  ),
  RequestEntityTooLarge: def(
    413,
    'RequestEntityTooLarge',
    `${CORAL}RequestEntityTooLargeException`,
    'The HTTP body is larger than any valid request.',
  ),
  RequestHeaderFieldsTooLarge: def(
    431,
    'RequestHeaderFieldsTooLarge',
    `${CORAL}RequestHeaderFieldsTooLargeException`,
    "The request's headers are larger than Node's parser reads (16 KiB).",
  ),
  RequestTimeout: def(
    408,
    'RequestTimeout',
    `${CORAL}RequestTimeoutException`,
    "The request was not received in full within the server's request timeout (120 s).",
  ),
  // What Node's HTTP server refuses before there is a request. Named after the HTTP status, as
  // the three above, so that a JSON answer's `__type` and its x-amzn-query-error name one error.
  BadRequest: def(
    400,
    'BadRequest',
    `${CORAL}BadRequestException`,
    "Node's HTTP parser refuses the request (a NUL in a header, a bad Content-Length), or HTTP/1.1 without Host.",
  ),
  ExpectationFailed: def(
    417,
    'ExpectationFailed',
    `${CORAL}ExpectationFailedException`,
    'The request carries an Expect header other than 100-continue.',
  ),
  AccessDenied: def(403, 'AccessDenied', `${CORAL}AccessDeniedException`, 'The caller may not do this.'),
  // Authentication (SigV4, src/auth/sigv4.ts). The Query codes are what SQS answers; the JSON
  // types are the Coral exceptions the JSON services name. SQS answers a stale or future-dated
  // signature SignatureDoesNotMatch ("Signature expired: ..."), not RequestExpired.
  MissingAuthenticationToken: def(
    403,
    'MissingAuthenticationToken',
    `${CORAL}MissingAuthenticationTokenException`,
    'The request carries no signature (auth on): no Authorization header and no presigned URL.',
  ),
  IncompleteSignature: def(
    400,
    'IncompleteSignature',
    `${CORAL}IncompleteSignatureException`,
    'The signature is malformed: a part is missing, the credential is not key/date/region/sqs/aws4_request, the date is unreadable.',
  ),
  InvalidClientTokenId: def(
    403,
    'InvalidClientTokenId',
    `${CORAL}UnrecognizedClientException`,
    'The access key id is not one of any tenant.',
  ),
  SignatureDoesNotMatch: def(
    403,
    'SignatureDoesNotMatch',
    `${CORAL}InvalidSignatureException`,
    'The signature is wrong (secret, body, headers), its scope is (date, region, service), or its date is more than 15 minutes off.',
  ),
  RequestExpired: def(
    400,
    'RequestExpired',
    `${CORAL}RequestExpired`,
    'A presigned URL is used after its X-Amz-Expires.',
  ),
  ServiceUnavailable: def(
    503,
    'ServiceUnavailable',
    `${CORAL}ServiceUnavailableException`,
    'This instance cannot serve now (not the leader, or the store is unreachable); retry.',
    'Receiver',
  ),
  InternalFailure: def(
    500,
    'InternalFailure',
    `${CORAL}InternalFailure`,
    'An unexpected failure on our side; it is logged with the request id.',
    'Receiver',
  ),
} as const satisfies Record<string, ErrorDef>;

export type ErrorName = keyof typeof errorCatalogue;

export class SqsError extends Error {
  readonly def: ErrorDef;

  constructor(
    readonly errorName: ErrorName,
    message: string,
  ) {
    super(message);
    this.name = 'SqsError';
    this.def = errorCatalogue[errorName];
  }
}

/**
 * The wire error a thrown error stands for: an SqsError as it is, a core error as its catalogue
 * entry (its codes are names of the catalogue); undefined for anything else, which is a bug the
 * caller logs and answers InternalFailure. The data plane (src/http/serve.ts) and a forwarded
 * request's answer (src/owners/forward.ts) map errors here, so both give a client one answer.
 */
export function knownSqsError(e: unknown): SqsError | undefined {
  if (e instanceof SqsError) return e;
  if (e instanceof CoreError) return new SqsError(e.code, e.message);
  return undefined;
}

/** What a client is told of a failure that is no error of the catalogue: a bug, logged apart. */
export function internalFailure(): SqsError {
  return new SqsError('InternalFailure', 'We encountered an internal error. Please try again.');
}

/** AWS's wording for a parameter that fails validation. */
export function invalidParameter(name: string, value: unknown, reason?: string): SqsError {
  const shown = typeof value === 'string' ? value : JSON.stringify(value);
  return new SqsError(
    'InvalidParameterValue',
    reason === undefined
      ? `Value ${shown} for parameter ${name} is invalid.`
      : `Value ${shown} for parameter ${name} is invalid. Reason: ${reason}`,
  );
}

export function missingParameter(name: string): SqsError {
  return new SqsError('MissingParameter', `The request must contain the parameter ${name}.`);
}

export function queueDoesNotExist(): SqsError {
  return new SqsError('QueueDoesNotExist', 'The specified queue does not exist.');
}

/** Characters SQS does not allow in a message (XML 1.0's Char production), or bytes that are not UTF-8. */
export function invalidMessageContents(): SqsError {
  return new SqsError(
    'InvalidMessageContents',
    'Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF',
  );
}
