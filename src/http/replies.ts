/**
 * How the data plane writes its answers: successful replies in batches, one per event-loop turn
 * (ReplyBatch), errors at once in the request's protocol (sendError).
 */
import type { FastifyReply } from 'fastify';
import type { Protocol } from '../protocol/detect.js';
import { encodeJsonError, type EncodedError } from '../protocol/json.js';
import { encodeQueryError } from '../protocol/query.js';
import type { SqsError } from '../sqs/errors.js';

/**
 * Successful replies are written together once this turn of the event loop has handled every
 * request that arrived in it, rather than each as soon as it is ready. Writing a reply to a socket
 * wakes the peer that reads it; when that peer is idle (a client on another vCPU of the same VM,
 * or nginx in front of us on this host), the wake-up costs more than the request's own work. Back
 * to back, the first write wakes the peer and the rest find it awake: on the bench's two vCPUs
 * this is a quarter to a third more SendMessage req/s under load (docs/decisions/002-reply-batching.md). A reply
 * waits at most for the other requests of its turn; alone in its turn (light load) it costs
 * ~40 µs of end-to-end p50 there. Error replies are rare and go out at once.
 */
export class ReplyBatch {
  private pending: { reply: FastifyReply; type: string; body: string }[] = [];
  private closing = false;

  send(reply: FastifyReply, type: string, body: string): void {
    if (this.closing) {
      ReplyBatch.write(reply, type, body, true);
      return;
    }
    if (this.pending.length === 0) setImmediate(this.flush);
    this.pending.push({ reply, type, body });
  }

  /**
   * From now on every reply is written at once and closes its connection. The server closes only
   * idle connections when it stops; one whose reply (an answered long poll) was still waiting here
   * would otherwise stay open, idle, until its keep-alive timeout.
   */
  close(): void {
    this.closing = true;
    this.flush();
  }

  private readonly flush = (): void => {
    const batch = this.pending;
    this.pending = [];
    for (const { reply, type, body } of batch) ReplyBatch.write(reply, type, body, this.closing);
  };

  private static write(reply: FastifyReply, type: string, body: string, last: boolean): void {
    if (last) void reply.header('connection', 'close');
    void reply.type(type).send(asIs(body));
  }
}

/** An error in the AWS shape of `protocol`. */
export function encodeError(protocol: Protocol, err: SqsError, requestId: string): EncodedError {
  return protocol === 'json' ? encodeJsonError(err) : encodeQueryError(err, requestId);
}

export function sendError(reply: FastifyReply, protocol: Protocol, err: SqsError, requestId: string): void {
  const encoded = encodeError(protocol, err, requestId);
  void reply
    .code(encoded.status)
    .headers(encoded.headers)
    .header('x-amzn-RequestId', requestId)
    .send(asIs(encoded.body));
}

/**
 * The body as bytes: fastify appends `; charset=utf-8` to a JSON-typed string body, while AWS's
 * Content-Type is exactly `application/x-amz-json-1.0`.
 */
function asIs(body: string): Buffer {
  return Buffer.from(body, 'utf8');
}
