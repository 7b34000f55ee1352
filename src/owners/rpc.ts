/**
 * The forwarding channel: requests from one server process to another, over one persistent
 * connection per peer (TCP or a Unix socket), many in flight at once, matched by id. Frames and
 * payloads are codec.ts's; why our own protocol on node:net and what it costs:
 * docs/decisions/014-forwarding-channel.md.
 *
 * What a failed call says. The caller's retry policy depends on whether the peer may have acted:
 *
 * | rejection        | when                                                                | the peer |
 * |------------------|---------------------------------------------------------------------|----------|
 * | `RpcUnsentError` | no connection (refused, failed, timed out), the call's turn to be   | did not  |
 * |                  | written never came (closed, timed out, aborted before it), or the   | act:     |
 * |                  | peer was closing and refused it unhandled (`REFUSED`)               | retry    |
 * | `RpcLostError`   | written, then the connection closed or the timeout passed first     | unknown  |
 * | `RpcRemoteError` | the handler threw: its error's name and message                     | answered |
 * | the signal's     | aborted by the caller; when written, a `CANCEL` aborts the handler's| unknown  |
 * | reason           | signal (a long poll stops waiting)                                  |          |
 *
 * "Written" means handed to the socket: from then on the peer may have it, whatever happens to
 * the connection after. A call is written only once the peer has answered the opening magic
 * (codec.ts), so a connection that reached some other service fails its calls as unsent.
 *
 * Writes are batched: the frames queued in one turn of the event loop go out on `setImmediate`,
 * corked, so a turn's calls (or a turn's replies) are one write; the same reason as
 * docs/decisions/002-reply-batching.md: each write wakes the peer. There is no backpressure: a
 * peer that does not read grows our socket's buffer until the calls time out.
 *
 * Closing a server (`RpcServer.close`): it stops accepting, sends `GOAWAY` on each connection
 * (a client then opens a new connection for its next calls), refuses requests that arrive after
 * it, lets the handlers in flight finish and their replies out, then ends each connection.
 */
import { createServer, createConnection, type Server, type Socket } from 'node:net';
import {
  decodeError,
  decodePayload,
  encodeFrame,
  FrameReader,
  FrameType,
  MAGIC,
  RpcProtocolError,
  type Frame,
} from './codec.js';

export { RpcProtocolError } from './codec.js';

/** Where a peer listens: TCP, or a Unix socket's path. */
export type RpcAddress = { readonly host: string; readonly port: number } | { readonly path: string };

/**
 * What a call or a handler is told when its other end gives up: the part of AbortSignal used
 * here, so that an AbortSignal may be passed, and {@link RpcCancel} a cheaper one: an
 * AbortController per request (an EventTarget, and its listeners) was, with a timer per call, a
 * good part of what the channel cost per forwarded request (docs/performance.md, "Active/active:
 * the cost of routing").
 */
export interface RpcSignal {
  readonly aborted: boolean;
  /** Set once aborted: an Error, as everywhere here, though an AbortSignal may carry anything. */
  readonly reason: Error | undefined;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/**
 * An AbortController and its signal in one plain object. Every listener runs once, at the
 * abort, as with `{ once: true }`; one added after it never runs, as on an AbortSignal. A
 * listener that throws does not keep the others from running; its error is thrown on the next
 * microtask, where an AbortSignal's EventTarget reports it too.
 */
export class RpcCancel implements RpcSignal {
  aborted = false;
  reason: Error | undefined = undefined;
  private listeners: (() => void)[] | undefined;

  addEventListener(_type: 'abort', listener: () => void): void {
    if (!this.aborted) (this.listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const i = this.listeners?.indexOf(listener) ?? -1;
    if (i >= 0) this.listeners!.splice(i, 1);
  }

  abort(reason: Error): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.listeners;
    this.listeners = undefined;
    for (const listener of listeners ?? []) {
      try {
        listener();
      } catch (e) {
        queueMicrotask(() => {
          throw e;
        });
      }
    }
  }
}

export interface RpcHandler {
  /**
   * Answers one request. A rejection with an Error reaches the caller as an RpcRemoteError of its
   * name and message (its own typed answers the handler encodes in what it resolves with).
   * `signal` aborts when the caller gave up (abort or timeout) or its connection closed; the
   * reply is then dropped.
   */
  handle(payload: unknown, signal: RpcSignal): Promise<unknown>;
}

/** The request certainly did not reach a handler: safe to send again (here or elsewhere). */
export class RpcUnsentError extends Error {
  override readonly name = 'RpcUnsentError';
}

/** The request was written and no reply came: it may or may not have been acted on. */
export class RpcLostError extends Error {
  override readonly name = 'RpcLostError';
}

/** The peer's handler threw: its error's name and message. */
export class RpcRemoteError extends Error {
  override readonly name = 'RpcRemoteError';
  constructor(
    readonly remoteName: string,
    readonly remoteMessage: string,
  ) {
    super(`${remoteName}: ${remoteMessage}`);
  }
}

export interface CallOptions {
  /** From the call, connecting included; then unsent or lost as the table above says. */
  readonly timeoutMs: number;
  readonly signal?: RpcSignal | undefined;
}

export interface RpcClientOptions {
  /** A connection not open (and its peer's magic read) by then is given up: its calls unsent. */
  readonly connectTimeoutMs?: number | undefined;
}

/** The reason a handler's signal aborts when its caller's connection closes. */
export class RpcConnectionClosed extends Error {
  override readonly name = 'RpcConnectionClosed';
}

function connectTo(address: RpcAddress): Socket {
  return 'path' in address
    ? createConnection({ path: address.path })
    : createConnection({ host: address.host, port: address.port });
}

/** Up to this many bytes, a turn's frames are copied into one buffer; above, written corked. */
const CONCAT_BYTES = 64 * 1024;

/** Writes a turn's frames as one write. */
function writeAll(socket: Socket, frames: Buffer[]): void {
  if (frames.length === 1) {
    socket.write(frames[0]!);
    return;
  }
  let size = 0;
  for (const frame of frames) size += frame.length;
  if (size <= CONCAT_BYTES) {
    socket.write(Buffer.concat(frames, size));
    return;
  }
  socket.cork();
  for (const frame of frames) socket.write(frame);
  socket.uncork();
}

/**
 * Small frames must not wait for Nagle; a dead peer is noticed on an idle link. (Both do nothing
 * on a Unix socket.)
 */
function tune(socket: Socket): void {
  socket.setNoDelay(true);
  socket.setKeepAlive(true, 10_000);
}

// ---------------------------------------------------------------------------------------------
// Server

export class RpcServer {
  private readonly server: Server;
  private readonly peers = new Set<Peer>();
  private closing: Promise<void> | undefined;

  constructor(private readonly handler: RpcHandler) {
    this.server = createServer((socket) => this.accept(socket));
    // An accept that fails (EMFILE) is reported here; the server goes on listening.
    this.server.on('error', () => undefined);
  }

  listen(address: RpcAddress): Promise<RpcAddress> {
    return new Promise((resolve, reject) => {
      const onError = (e: Error): void => reject(e);
      this.server.once('error', onError);
      const done = (): void => {
        this.server.off('error', onError);
        const a = this.server.address();
        if (a === null) reject(new Error('rpc server has no address'));
        else resolve(typeof a === 'string' ? { path: a } : { host: a.address, port: a.port });
      };
      if ('path' in address) this.server.listen({ path: address.path }, done);
      // Exclusive: in a cluster worker (--workers) this port is the worker's own, not handed round
      // by the primary (which would give every worker the same one); elsewhere it changes nothing.
      else this.server.listen({ host: address.host, port: address.port, exclusive: true }, done);
    });
  }

  /** Resolves once every connection has ended (see the header). */
  close(): Promise<void> {
    if (this.closing === undefined) {
      this.closing = new Promise((resolve) => this.server.close(() => resolve()));
      for (const peer of this.peers) peer.goAway();
    }
    return this.closing;
  }

  /** Connections open now. */
  get connections(): number {
    return this.peers.size;
  }

  private accept(socket: Socket): void {
    tune(socket);
    const peer = new Peer(socket, this.handler, () => this.peers.delete(peer));
    this.peers.add(peer);
    if (this.closing !== undefined) peer.goAway();
  }
}

/** One client's connection, on the server. */
class Peer {
  /** Requests whose handler runs, by id. */
  private readonly inflight = new Map<number, RpcCancel>();
  private outbox: Buffer[] = [];
  private flushing = false;
  private closing = false;
  private readonly reader = new FrameReader((frame) => this.onFrame(frame));

  constructor(
    private readonly socket: Socket,
    private readonly handler: RpcHandler,
    onClose: () => void,
  ) {
    socket.write(MAGIC);
    socket.on('data', (chunk: Buffer) => {
      try {
        this.reader.push(chunk);
      } catch (e) {
        socket.destroy(e as Error);
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      onClose();
      const reason = new RpcConnectionClosed('the caller’s connection closed');
      for (const ac of this.inflight.values()) ac.abort(reason);
      this.inflight.clear();
    });
  }

  goAway(): void {
    this.closing = true;
    this.send(encodeFrame(FrameType.GOAWAY, 0));
  }

  private onFrame(frame: Frame): void {
    const { id } = frame;
    switch (frame.type) {
      case FrameType.REQUEST:
        if (this.inflight.has(id)) throw new RpcProtocolError(`request ${id} is in flight already`);
        if (this.closing) this.send(encodeFrame(FrameType.REFUSED, id));
        else this.run(id, decodePayload(frame));
        return;
      case FrameType.CANCEL: {
        const ac = this.inflight.get(id);
        // Its reply is not wanted; the handler may still run a while, without holding close().
        this.inflight.delete(id);
        ac?.abort(new RpcConnectionClosed(`request ${id} cancelled by the caller`));
        if (ac !== undefined && this.closing) this.schedule();
        return;
      }
      case FrameType.REPLY:
      case FrameType.ERROR:
      case FrameType.REFUSED:
      case FrameType.GOAWAY:
        throw new RpcProtocolError(`a client sent frame type ${frame.type}`);
    }
  }

  private run(id: number, payload: unknown): void {
    const ac = new RpcCancel();
    this.inflight.set(id, ac);
    let result: Promise<unknown>;
    try {
      result = this.handler.handle(payload, ac);
    } catch (e) {
      this.reply(id, ac, undefined, e ?? new Error(String(e)));
      return;
    }
    result.then(
      (value) => this.reply(id, ac, value, undefined),
      (e: unknown) => this.reply(id, ac, undefined, e ?? new Error(String(e))),
    );
  }

  private reply(id: number, ac: RpcCancel, value: unknown, error: unknown): void {
    // Cancelled, or the connection closed: nobody waits for it.
    if (this.inflight.get(id) !== ac) return;
    this.inflight.delete(id);
    let frame: Buffer;
    if (error === undefined) {
      try {
        frame = encodeFrame(FrameType.REPLY, id, value);
      } catch (e) {
        frame = errorFrame(id, e);
      }
    } else {
      frame = errorFrame(id, error);
    }
    this.send(frame);
  }

  private send(frame: Buffer): void {
    this.outbox.push(frame);
    this.schedule();
  }

  private schedule(): void {
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.flushing = false;
    const frames = this.outbox;
    this.outbox = [];
    if (!this.socket.writable) return;
    if (frames.length > 0) writeAll(this.socket, frames);
    if (this.closing && this.inflight.size === 0) this.socket.end();
  }
}

function errorFrame(id: number, e: unknown): Buffer {
  const error =
    e instanceof Error ? { name: e.name, message: e.message } : { name: 'Error', message: String(e) };
  return encodeFrame(FrameType.ERROR, id, error);
}

// ---------------------------------------------------------------------------------------------
// Client

interface Call {
  readonly id: number;
  readonly link: Link;
  /** Until written. */
  frame: Buffer | undefined;
  written: boolean;
  settled: boolean;
  readonly timeoutMs: number;
  /** performance.now() by which it is given up (RpcClient's `sweep`). */
  readonly deadline: number;
  readonly signal: RpcSignal | undefined;
  onAbort: (() => void) | undefined;
  resolve(value: unknown): void;
  reject(e: unknown): void;
}

/** One connection to the peer, with the calls on it. */
class Link {
  readonly socket: Socket;
  /** The peer's magic was read: calls may be written. */
  private open = false;
  /** The peer sent GOAWAY: no new calls here. */
  draining = false;
  /** Calls not settled, written or queued. */
  readonly calls = new Map<number, Call>();
  private outbox: (Call | Buffer)[] = [];
  private flushing = false;
  private cause: Error | undefined;
  private readonly reader = new FrameReader((frame) => this.onFrame(frame));
  readonly closed: Promise<void>;

  constructor(address: RpcAddress, connectTimeoutMs: number, onClose: (link: Link) => void) {
    this.socket = connectTo(address);
    const socket = this.socket;
    socket.setTimeout(connectTimeoutMs);
    socket.on('timeout', () =>
      socket.destroy(new RpcUnsentError(`no connection within ${connectTimeoutMs} ms`)),
    );
    socket.on('connect', () => {
      tune(socket);
      socket.write(MAGIC);
    });
    socket.on('data', (chunk: Buffer) => {
      try {
        this.reader.push(chunk);
      } catch (e) {
        socket.destroy(e as Error);
        return;
      }
      if (!this.open && this.reader.open) {
        this.open = true;
        socket.setTimeout(0);
        if (this.outbox.length > 0) this.schedule();
      }
    });
    socket.on('error', (e) => {
      this.cause ??= e;
    });
    this.closed = new Promise((resolve) => {
      socket.on('close', () => {
        onClose(this);
        const why = this.cause === undefined ? '' : `: ${this.cause.message}`;
        for (const call of this.calls.values()) {
          const e = call.written
            ? new RpcLostError(`the connection closed before the reply${why}`, { cause: this.cause })
            : new RpcUnsentError(`the connection closed before the call was written${why}`, {
                cause: this.cause,
              });
          settle(call, e);
        }
        this.calls.clear();
        this.outbox = [];
        resolve();
      });
    });
  }

  add(call: Call): void {
    this.calls.set(call.id, call);
    this.outbox.push(call);
    if (this.open) this.schedule();
  }

  /** Called once `call` is settled: a written one is cancelled on the peer. */
  forget(call: Call): void {
    this.calls.delete(call.id);
    if (!call.written || this.socket.destroyed) return;
    this.outbox.push(encodeFrame(FrameType.CANCEL, call.id));
    if (this.open) this.schedule();
  }

  /** Ends the connection; what is pending is rejected as the close handler says. */
  end(): void {
    if (this.open) this.socket.end();
    else this.socket.destroy();
  }

  private schedule(): void {
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.flushing = false;
    const entries = this.outbox;
    this.outbox = [];
    // Not writable: closing; the close handler fails what is still unwritten as unsent.
    if (!this.socket.writable) return;
    const frames: Buffer[] = [];
    for (const entry of entries) {
      if (Buffer.isBuffer(entry)) {
        frames.push(entry);
      } else if (!entry.settled && entry.frame !== undefined) {
        frames.push(entry.frame);
        entry.frame = undefined;
        entry.written = true;
      }
    }
    if (frames.length > 0) writeAll(this.socket, frames);
  }

  private onFrame(frame: Frame): void {
    switch (frame.type) {
      case FrameType.REPLY:
      case FrameType.ERROR:
      case FrameType.REFUSED: {
        const call = this.calls.get(frame.id);
        // A reply to a call that timed out or was aborted.
        if (call === undefined) return;
        // Decoded while the call is still on the link: a reply that does not decode closes the
        // connection (thrown to the reader), which fails the call as lost with the rest.
        let value: unknown;
        let error: Error | undefined;
        if (frame.type === FrameType.REPLY) value = decodePayload(frame);
        else if (frame.type === FrameType.ERROR) {
          const { name, message } = decodeError(frame);
          error = new RpcRemoteError(name, message);
        } else error = new RpcUnsentError('the peer was closing and did not handle the call');
        this.calls.delete(frame.id);
        settle(call, error, value);
        return;
      }
      case FrameType.GOAWAY:
        this.draining = true;
        // Calls queued for the next write would only be refused.
        for (const call of this.calls.values()) {
          if (call.written) continue;
          this.calls.delete(call.id);
          settle(call, new RpcUnsentError('the peer is closing'));
        }
        return;
      case FrameType.REQUEST:
      case FrameType.CANCEL:
        throw new RpcProtocolError(`a server sent frame type ${frame.type}`);
    }
  }
}

/** Resolves or rejects `call` once; unhooks its signal. */
function settle(call: Call, error: unknown, value?: unknown): void {
  if (call.settled) return;
  call.settled = true;
  call.frame = undefined;
  if (call.onAbort !== undefined) call.signal?.removeEventListener('abort', call.onAbort);
  if (error === undefined) call.resolve(value);
  else call.reject(error);
}

function onTimeout(call: Call): void {
  if (call.settled) return;
  const { written, timeoutMs } = call;
  settle(
    call,
    written
      ? new RpcLostError(`no reply within ${timeoutMs} ms`)
      : new RpcUnsentError(`not written within ${timeoutMs} ms`),
  );
  call.link.forget(call);
}

/** Calls to one peer. */
export class RpcClient {
  private link: Link | undefined;
  /** Every link not closed yet: the current one, and draining ones with replies to come. */
  private readonly links = new Set<Link>();
  private lastId = 0;
  private closed = false;
  private readonly connectTimeoutMs: number;
  /**
   * One timer for every call's deadline, due at the earliest, instead of one per call (see
   * RpcSignal). Unref'd: a call pending is on a socket, which holds the process.
   */
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;

  constructor(
    readonly address: RpcAddress,
    options: RpcClientOptions = {},
  ) {
    this.connectTimeoutMs = options.connectTimeoutMs ?? 5000;
  }

  /** The handler's answer; rejects as the table in the header says. */
  call(payload: unknown, options: CallOptions): Promise<unknown> {
    if (this.closed) return Promise.reject(new RpcUnsentError('the rpc client is closed'));
    const { signal, timeoutMs } = options;
    if (signal?.aborted === true) return Promise.reject(signal.reason ?? new Error('aborted'));
    // 0 marks GOAWAY.
    this.lastId = this.lastId === 0xffffffff ? 1 : this.lastId + 1;
    const id = this.lastId;
    let frame: Buffer;
    try {
      frame = encodeFrame(FrameType.REQUEST, id, payload);
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
    const link = this.current();
    const deadline = performance.now() + timeoutMs;
    if (deadline < this.timerAt) this.arm(deadline, timeoutMs);
    return new Promise((resolve, reject) => {
      const call: Call = {
        id,
        link,
        frame,
        written: false,
        settled: false,
        timeoutMs,
        deadline,
        signal,
        onAbort: undefined,
        resolve,
        reject,
      };
      if (signal !== undefined) {
        call.onAbort = () => {
          settle(call, signal.reason ?? new Error('aborted'));
          link.forget(call);
        };
        signal.addEventListener('abort', call.onAbort, { once: true });
      }
      link.add(call);
    });
  }

  /** Rejects every pending call (lost when written, else unsent) and ends the connections. */
  close(): Promise<void> {
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    const links = [...this.links];
    for (const link of links) {
      for (const call of link.calls.values()) {
        settle(
          call,
          call.written
            ? new RpcLostError('the rpc client closed before the reply')
            : new RpcUnsentError('the rpc client closed before the call was written'),
        );
      }
      link.calls.clear();
      link.end();
    }
    return Promise.all(links.map((l) => l.closed)).then(() => undefined);
  }

  private arm(deadline: number, delayMs: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timerAt = deadline;
    this.timer = setTimeout(() => this.sweep(), delayMs);
    this.timer.unref();
  }

  /**
   * Gives up the calls due by the time the timer was set for, and sets it again for the earliest
   * left. The timer's time, not the clock's reading, says what is due: a timer may fire a little
   * before performance.now() reaches its time (the event loop's clock is read once a turn, in
   * milliseconds), and a mocked one long before.
   */
  private sweep(): void {
    const due = this.timerAt;
    this.timer = undefined;
    this.timerAt = Infinity;
    let next = Infinity;
    for (const link of this.links) {
      for (const call of link.calls.values()) {
        if (call.deadline <= due) onTimeout(call);
        else if (call.deadline < next) next = call.deadline;
      }
    }
    // Rounded up: a fraction of a millisecond short would fire before `next`, for nothing.
    if (next !== Infinity && !this.closed)
      this.arm(next, Math.max(0, Math.ceil(next - Math.max(due, performance.now()))));
  }

  private current(): Link {
    if (this.link === undefined || this.link.draining) {
      const link = new Link(this.address, this.connectTimeoutMs, (l) => {
        this.links.delete(l);
        if (this.link === l) this.link = undefined;
      });
      this.link = link;
      this.links.add(link);
    }
    return this.link;
  }
}
