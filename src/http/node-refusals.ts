/**
 * What Node's HTTP server answers, or drops, by itself before fastify sees a request: a request
 * its parser refuses (a NUL in a header, headers over 16 KiB), a request not received in time
 * (headers or body), an `Expect` other than 100-continue, a CONNECT. Each gets the AWS shape of
 * the protocol its headers point to, with a request id (docs/errors.md; test/e2e/malformed.test.ts,
 * "errors below SQS").
 */
import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { uuid } from '../core/ids.js';
import { detectProtocol, protocolOf, type HeaderBag, type Protocol } from '../protocol/detect.js';
import { SqsError } from '../sqs/errors.js';
import { encodeError } from './replies.js';

/** Told of every answer written here, for metrics. */
export type Observed = (protocol: Protocol, status: number) => void;

/** Answers Expect and CONNECT on `server`; clientError is fastify's option (answerClientError). */
export function answerNodeRefusals(server: Server, observed: Observed): void {
  // Without a listener Node answers a bare 417.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const protocol = detectProtocol(req.headers);
    const err = new SqsError(
      'ExpectationFailed',
      `Expect: ${String(req.headers.expect)} cannot be met; the only expectation served is 100-continue.`,
    );
    const requestId = uuid();
    const encoded = encodeError(protocol, err, requestId);
    // The body was never asked for: closing spares reading it.
    res.writeHead(encoded.status, {
      ...encoded.headers,
      'x-amzn-RequestId': requestId,
      'content-length': Buffer.byteLength(encoded.body),
      connection: 'close',
    });
    res.end(encoded.body);
    observed(protocol, encoded.status);
  });
  // Without a listener Node closes the connection without a word.
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    const err = new SqsError('InvalidAction', 'The HTTP method CONNECT is not valid for this endpoint.');
    writeRaw(socket, detectProtocol(req.headers), err, observed);
  });
}

/**
 * Answers an error of Node's HTTP parser or its request timer on the raw socket, as Node would
 * (only while no answer has begun), but in the AWS shape of the request's protocol: told by the
 * headers of a request that was read (a body not sent in time), else by the headers the parser
 * holds (headers not sent in time) or the bytes it failed on (headers too large, a bad header);
 * Query, the protocol of anything else, when none tells.
 */
export function answerClientError(
  error: Error & { code?: string | undefined; rawPacket?: unknown },
  socket: Duplex,
  observed: Observed,
): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse })._httpMessage;
  if (inFlight?.headersSent === true) {
    socket.destroy();
    return;
  }
  const timedOut = error.code === 'ERR_HTTP_REQUEST_TIMEOUT';
  const protocol =
    inFlight?.req !== undefined
      ? detectProtocol(inFlight.req.headers)
      : timedOut
        ? protocolOfHeadersSoFar(socket)
        : sniffProtocol(error.rawPacket);
  const err = timedOut
    ? new SqsError('RequestTimeout', 'The request was not received in full within the time allowed.')
    : error.code === 'HPE_HEADER_OVERFLOW'
      ? new SqsError('RequestHeaderFieldsTooLarge', 'The request headers are larger than the server reads.')
      : new SqsError('BadRequest', `The HTTP request could not be parsed (${error.code ?? 'unknown'}).`);
  writeRaw(socket, protocol, err, observed);
}

function writeRaw(socket: Duplex, protocol: Protocol, err: SqsError, observed: Observed): void {
  const requestId = uuid();
  const encoded = encodeError(protocol, err, requestId);
  let head = `HTTP/1.1 ${encoded.status} ${STATUS_CODES[encoded.status] ?? ''}\r\n`;
  for (const [name, value] of Object.entries(encoded.headers)) head += `${name}: ${value}\r\n`;
  head += `x-amzn-RequestId: ${requestId}\r\ncontent-length: ${Buffer.byteLength(encoded.body)}\r\nconnection: close\r\n\r\n`;
  observed(protocol, encoded.status);
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.end(head + encoded.body, () => socket.destroy());
}

/** The protocol the start of a request names, the way detectProtocol tells it from headers. */
function sniffProtocol(raw: unknown): Protocol {
  // Node gives the bytes it failed on as a Buffer (fastify's types say otherwise).
  if (!Buffer.isBuffer(raw)) return 'query';
  const text = raw.toString('latin1').toLowerCase();
  const contentType = /\ncontent-type:[ \t]*([^\r\n]*)/.exec(text)?.[1];
  return protocolOf(contentType, text.includes('\nx-amz-target:'));
}

interface Parser {
  [callback: number]: unknown;
  _headers?: string[];
  execute(data: Buffer): unknown;
  constructor: { kOnHeadersComplete?: number; kOnBody?: number; kOnMessageComplete?: number };
}

/**
 * The protocol of a request whose headers never finished, from the headers Node's parser holds so
 * far (in its native half, not handed to JS until the head ends). The parser is handed the end of a
 * head (`x:` completes a name or value cut short) with callbacks that only keep the headers, so
 * no request runs; the socket is answered and closed next, so nothing reads the parser again.
 */
function protocolOfHeadersSoFar(socket: Duplex): Protocol {
  const parser = (socket as Duplex & { parser?: Parser | null }).parser;
  const { kOnHeadersComplete, kOnBody, kOnMessageComplete } = parser?.constructor ?? {};
  if (
    parser == null ||
    kOnHeadersComplete === undefined ||
    kOnBody === undefined ||
    kOnMessageComplete === undefined
  ) {
    return 'query';
  }
  let raw: readonly string[] | undefined;
  parser[kOnHeadersComplete] = (_major: number, _minor: number, headers: string[] | undefined) => {
    raw = headers ?? parser._headers;
    return 1; // skip the body
  };
  parser[kOnBody] = () => undefined;
  parser[kOnMessageComplete] = () => undefined;
  try {
    parser.execute(Buffer.from('x:\r\n\r\n', 'latin1'));
  } catch {
    return 'query';
  }
  if (raw === undefined) return 'query';
  const headers: Record<string, string> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    headers[name] ??= raw[i + 1] as string;
  }
  return detectProtocol(headers satisfies HeaderBag);
}
