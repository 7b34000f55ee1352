/**
 * The frames of the forwarding channel (rpc.ts) and the payload inside them.
 *
 * A frame is `[u32 length][u32 id][u8 type][body]`, big-endian, `length` counting what follows
 * it. The id matches a reply to its request on one connection; the type says what the body is:
 *
 * | type       | sent by | body                                                                |
 * |------------|---------|---------------------------------------------------------------------|
 * | `REQUEST`  | client  | a payload                                                           |
 * | `CANCEL`   | client  | none: the caller gave up on request `id`, abort its handler         |
 * | `REPLY`    | server  | a payload: what the handler resolved with                           |
 * | `ERROR`    | server  | JSON `{ name, message }`: what the handler threw                    |
 * | `REFUSED`  | server  | none: request `id` came after `GOAWAY` and was not handled          |
 * | `GOAWAY`   | server  | none (id 0): closing, send nothing more on this connection          |
 *
 * A payload is JSON, with its binary values (any Uint8Array, Buffers included) taken out and sent
 * as raw bytes beside it, so they come back as the same type with the same bytes and cost no
 * base64: `[u32 n]`, then when n > 0 `[u32 m][m bytes of JSON: [[byteLength, kind, ...path], …]]`
 * and the n values' bytes back to back, then the JSON of the rest (empty for `undefined`), each
 * binary value replaced by `null`. Only the containers on a binary value's path are copied; a
 * payload without one (the usual case: src/core/message.ts keeps BinaryValue as base64 text, as
 * both SQS wires carry it) is one `JSON.stringify`. As in JSON, `undefined` fields are dropped.
 *
 * Both ends open a connection with `MAGIC` (the server answers with it): a client that reached
 * some other service never counts a call as delivered (rpc.ts, RpcUnsentError).
 */

export const FrameType = {
  REQUEST: 1,
  CANCEL: 2,
  REPLY: 3,
  ERROR: 4,
  REFUSED: 5,
  GOAWAY: 6,
} as const;
export type FrameType = (typeof FrameType)[keyof typeof FrameType];

/** The protocol's name and version, the first bytes each way. */
export const MAGIC = Buffer.from('SSQ\x01', 'latin1');

/** id and type. */
const FRAME_HEAD = 5;
/**
 * Larger is a protocol error. A 1 MiB SendMessageBatch is at most ~4 MiB of JSON (a body full of
 * characters that JSON escapes as `\uXXXX`), and a ReceiveMessage reply of 10 such messages about
 * as much; 64 MiB leaves room and still refuses a stray length (e.g. `GET ` read as a length).
 */
export const MAX_FRAME = 64 * 1024 * 1024;

export class RpcProtocolError extends Error {
  override readonly name = 'RpcProtocolError';
}

type Path = (string | number)[];

/** Binary values found in a payload, in the order their bytes follow the table. */
interface Found {
  readonly paths: Path[];
  readonly values: Uint8Array[];
}

/**
 * `value` with its binary values replaced by null, their paths and bytes put in `found`;
 * `value` itself when it holds none. Only arrays and plain objects are walked: anything else
 * with a `toJSON` (a Date) is left to JSON.
 */
function strip(value: unknown, path: Path, found: Found): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (value instanceof Uint8Array) {
    found.paths.push(path.slice());
    found.values.push(value);
    return null;
  }
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      if (typeof v !== 'object' || v === null) continue;
      path.push(i);
      const s = strip(v, path, found);
      path.pop();
      if (s !== v) (copy ??= value.slice())[i] = s;
    }
    return copy ?? value;
  }
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return value;
  let copy: Record<string, unknown> | undefined;
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    const v = record[key];
    if (typeof v !== 'object' || v === null) continue;
    path.push(key);
    const s = strip(v, path, found);
    path.pop();
    if (s !== v) {
      // defineProperty: a `__proto__` key (a valid SQS attribute name) stays an own field.
      copy ??= { ...record };
      Object.defineProperty(copy, key, { value: s, enumerable: true, writable: true, configurable: true });
    }
  }
  return copy ?? value;
}

const BUFFER = 1;
const UINT8ARRAY = 0;

/**
 * One frame, as one Buffer. Throws what JSON.stringify throws (a cycle, a BigInt): the
 * caller's payload cannot be sent.
 */
export function encodeFrame(type: FrameType, id: number, payload?: unknown): Buffer {
  if (type !== FrameType.REQUEST && type !== FrameType.REPLY && type !== FrameType.ERROR) {
    const frame = Buffer.allocUnsafe(4 + FRAME_HEAD);
    frame.writeUInt32BE(FRAME_HEAD, 0);
    frame.writeUInt32BE(id, 4);
    frame[8] = type;
    return frame;
  }
  if (type === FrameType.ERROR) return textFrame(type, id, 0, JSON.stringify(payload), undefined);
  const found: Found = { paths: [], values: [] };
  const rest = strip(payload, [], found);
  const json = JSON.stringify(rest) as string | undefined;
  if (found.values.length === 0) return textFrame(type, id, 4, json ?? '', undefined);
  const table = JSON.stringify(
    found.values.map((v, i) => [v.byteLength, Buffer.isBuffer(v) ? BUFFER : UINT8ARRAY, ...found.paths[i]!]),
  );
  return textFrame(type, id, 4, json ?? '', { table, values: found.values });
}

/** `[length][id][type]`, then for a payload `[n]` (`extra` = 4) and the binary part, then `json`. */
function textFrame(
  type: FrameType,
  id: number,
  extra: number,
  json: string,
  binary: { table: string; values: Uint8Array[] } | undefined,
): Buffer {
  let size = 4 + FRAME_HEAD + extra + Buffer.byteLength(json);
  if (binary !== undefined) {
    size += 4 + Buffer.byteLength(binary.table);
    for (const v of binary.values) size += v.byteLength;
  }
  if (size - 4 > MAX_FRAME) throw new RangeError(`rpc frame of ${size - 4} bytes is over ${MAX_FRAME}`);
  const frame = Buffer.allocUnsafe(size);
  frame.writeUInt32BE(size - 4, 0);
  frame.writeUInt32BE(id, 4);
  frame[8] = type;
  let at = 9;
  if (extra === 4) {
    frame.writeUInt32BE(binary?.values.length ?? 0, at);
    at += 4;
  }
  if (binary !== undefined) {
    const m = frame.write(binary.table, at + 4);
    frame.writeUInt32BE(m, at);
    at += 4 + m;
    for (const v of binary.values) {
      frame.set(v, at);
      at += v.byteLength;
    }
  }
  frame.write(json, at);
  return frame;
}

/** A frame without its length: id, type, and the body from `at` to the end of `frame`. */
export interface Frame {
  readonly id: number;
  readonly type: FrameType;
  /** Where its body starts in `bytes`. */
  readonly at: number;
  readonly bytes: Buffer;
}

/** The payload of a REQUEST or REPLY frame. Throws RpcProtocolError when it does not parse. */
export function decodePayload(frame: Frame): unknown {
  const { bytes } = frame;
  let at = frame.at;
  try {
    const n = bytes.readUInt32BE(at);
    at += 4;
    if (n === 0) return parse(bytes, at);
    const m = bytes.readUInt32BE(at);
    at += 4;
    const table = JSON.parse(bytes.toString('utf8', at, at + m)) as unknown;
    at += m;
    if (!Array.isArray(table) || table.length !== n) throw new RpcProtocolError('bad binary table');
    const values: Uint8Array[] = [];
    for (const entry of table as unknown[]) {
      if (!Array.isArray(entry)) throw new RpcProtocolError('bad binary table');
      const [length, kind] = entry as unknown[];
      if (typeof length !== 'number' || at + length > bytes.length)
        throw new RpcProtocolError('bad binary length');
      const view = bytes.subarray(at, at + length);
      // Copies: the frame may be a socket chunk shared with other frames.
      values.push(kind === BUFFER ? Buffer.from(view) : new Uint8Array(view));
      at += length;
    }
    let root = parse(bytes, at);
    (table as unknown[][]).forEach((entry, i) => {
      const path = entry.slice(2) as Path;
      if (path.length === 0) {
        root = values[i];
        return;
      }
      let holder = root as Record<string | number, unknown>;
      for (let k = 0; k < path.length - 1; k++) {
        // Own fields only: a path through `__proto__` must not reach Object.prototype.
        if (typeof holder !== 'object' || holder === null || !Object.hasOwn(holder, path[k]!))
          throw new RpcProtocolError('bad binary path');
        holder = holder[path[k]!] as Record<string | number, unknown>;
      }
      if (typeof holder !== 'object' || holder === null) throw new RpcProtocolError('bad binary path');
      Object.defineProperty(holder, path[path.length - 1]!, {
        value: values[i],
        enumerable: true,
        writable: true,
        configurable: true,
      });
    });
    return root;
  } catch (e) {
    if (e instanceof RpcProtocolError) throw e;
    throw new RpcProtocolError(`undecodable payload: ${(e as Error).message}`, { cause: e });
  }
}

function parse(bytes: Buffer, at: number): unknown {
  return at === bytes.length ? undefined : JSON.parse(bytes.toString('utf8', at));
}

/** The `{ name, message }` of an ERROR frame. */
export function decodeError(frame: Frame): { name: string; message: string } {
  let body: unknown;
  try {
    body = JSON.parse(frame.bytes.toString('utf8', frame.at));
  } catch (e) {
    throw new RpcProtocolError('undecodable error reply', { cause: e });
  }
  const { name, message } = (body ?? {}) as { name?: unknown; message?: unknown };
  return { name: String(name), message: String(message) };
}

/**
 * Cuts a byte stream into frames. A frame inside one chunk is handed on as a view of it; one
 * spread over chunks is copied once into a buffer of its size, allocated when its length is read,
 * so a 4 MiB frame in 64 KiB reads costs one copy, not a growing concatenation.
 */
export class FrameReader {
  /** The bytes of a length (or of the magic) split between chunks. */
  private head = Buffer.alloc(4);
  private headFill = 0;
  /** The frame being filled across chunks. */
  private body: Buffer | undefined;
  private bodyFill = 0;
  private magicSeen = false;

  /** `onFrame` sees each frame once, synchronously; it must copy what it keeps of `bytes`. */
  constructor(private readonly onFrame: (frame: Frame) => void) {}

  /** Throws RpcProtocolError on a wrong magic, a length out of bounds or an unknown type. */
  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.body !== undefined) {
        const n = Math.min(this.body.length - this.bodyFill, chunk.length - at);
        chunk.copy(this.body, this.bodyFill, at, at + n);
        this.bodyFill += n;
        at += n;
        if (this.bodyFill === this.body.length) {
          const body = this.body;
          this.body = undefined;
          this.emit(body, 0, body.length);
        }
        continue;
      }
      let word: Buffer = chunk;
      let wordAt = at;
      if (this.headFill > 0 || chunk.length - at < 4) {
        const n = Math.min(4 - this.headFill, chunk.length - at);
        chunk.copy(this.head, this.headFill, at, at + n);
        this.headFill += n;
        at += n;
        if (this.headFill < 4) return;
        this.headFill = 0;
        word = this.head;
        wordAt = 0;
      } else {
        at += 4;
      }
      if (!this.magicSeen) {
        if (word.compare(MAGIC, 0, 4, wordAt, wordAt + 4) !== 0)
          throw new RpcProtocolError('not a shared-sqs rpc peer');
        this.magicSeen = true;
        continue;
      }
      const length = word.readUInt32BE(wordAt);
      if (length < FRAME_HEAD || length > MAX_FRAME)
        throw new RpcProtocolError(`frame length ${length} out of bounds`);
      if (chunk.length - at >= length) {
        this.emit(chunk, at, at + length);
        at += length;
      } else {
        this.body = Buffer.allocUnsafe(length);
        this.bodyFill = 0;
      }
    }
  }

  /** True once the peer's magic was read. */
  get open(): boolean {
    return this.magicSeen;
  }

  private emit(bytes: Buffer, start: number, end: number): void {
    const type = bytes[start + 4]!;
    if (type < FrameType.REQUEST || type > FrameType.GOAWAY)
      throw new RpcProtocolError(`unknown frame type ${type}`);
    const frame = bytes.subarray(start, end);
    this.onFrame({ id: frame.readUInt32BE(0), type: type as FrameType, at: FRAME_HEAD, bytes: frame });
  }
}
