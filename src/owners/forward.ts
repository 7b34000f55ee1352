/**
 * What crosses between the process that took a request and the owner of its queue's shard: the
 * request's context and, when the action fails, its error, both as plain JSON. The action's
 * input and output cross as they are: they are the API model's JSON shapes (src/sqs/model.generated.ts),
 * batch entries that failed included (a batch's `Failed` is output, not an error).
 */
import { errorCatalogue, internalFailure, knownSqsError, SqsError, type ErrorName } from '../sqs/errors.js';
import type { RequestContext } from '../sqs/service.js';

/**
 * A RequestContext without what belongs to one process: `onAbort` (the client's socket is the
 * forwarder's, which calls it back) and `shard` (set by the owner's action, for its commit).
 */
export type ForwardedContext = Omit<RequestContext, 'onAbort' | 'shard'>;

export function toForwarded(ctx: RequestContext): ForwardedContext {
  // Field by field rather than a spread: `shard` and `onAbort` must not go, and a member left
  // undefined is absent, as it would be after JSON anyway.
  const f: { -readonly [K in keyof ForwardedContext]: ForwardedContext[K] } = {
    requestId: ctx.requestId,
    accountId: ctx.accountId,
    region: ctx.region,
    defaultRegion: ctx.defaultRegion,
    baseUrl: ctx.baseUrl,
    senderId: ctx.senderId,
  };
  if (ctx.anyAccount !== undefined) f.anyAccount = ctx.anyAccount;
  if (ctx.traceHeader !== undefined) f.traceHeader = ctx.traceHeader;
  return f;
}

/**
 * The owner's context for a forwarded request: `shard` unset, whatever the JSON held, so that the
 * owner's action sets it and the reply waits for that shard's writes (src/sqs/service.ts).
 */
export function fromForwarded(f: ForwardedContext, onAbort: (fn: () => void) => void): RequestContext {
  return {
    requestId: f.requestId,
    accountId: f.accountId,
    region: f.region,
    defaultRegion: f.defaultRegion,
    baseUrl: f.baseUrl,
    senderId: f.senderId,
    ...(f.anyAccount === undefined ? {} : { anyAccount: f.anyAccount }),
    ...(f.traceHeader === undefined ? {} : { traceHeader: f.traceHeader }),
    onAbort,
  };
}

/**
 * True when a value read from a peer is a ForwardedContext: the account and region decide which
 * queues the request may touch, so a malformed one is refused, never run with defaults.
 */
export function isForwardedContext(v: unknown): v is ForwardedContext {
  if (v === null || typeof v !== 'object') return false;
  const o = v as Record<string, unknown>;
  return (
    typeof o.requestId === 'string' &&
    typeof o.accountId === 'string' &&
    typeof o.region === 'string' &&
    typeof o.defaultRegion === 'string' &&
    typeof o.baseUrl === 'string' &&
    typeof o.senderId === 'string' &&
    (o.anyAccount === undefined || typeof o.anyAccount === 'boolean') &&
    (o.traceHeader === undefined || typeof o.traceHeader === 'string')
  );
}

/** An error as it crosses: its catalogue name (src/sqs/errors.ts) and its message. */
export interface WireError {
  readonly code: ErrorName;
  readonly message: string;
}

/**
 * The error a failed action answers with, as the data plane would map it (src/sqs/errors.ts:
 * `knownSqsError`): an SqsError or a core error as its own code; anything else is a bug, which
 * the caller logs where it happened, and crosses as InternalFailure with nothing of its text.
 */
export function errorToWire(e: unknown): WireError {
  const err = knownSqsError(e) ?? internalFailure();
  return { code: err.errorName, message: err.message };
}

/** The SqsError a WireError stands for; a code this version does not know is InternalFailure. */
export function errorFromWire(w: WireError): SqsError {
  if (!Object.hasOwn(errorCatalogue, w.code)) return internalFailure();
  return new SqsError(w.code, w.message);
}

/** An admin HTTP call as it travels to another instance (src/http/admin-route.ts). */
export interface AdminCall {
  readonly method: string;
  readonly url: string;
  readonly authorization?: string | undefined;
  /** The JSON body, as text. */
  readonly body?: string | undefined;
}

export interface AdminAnswer {
  readonly status: number;
  readonly body: string;
}
