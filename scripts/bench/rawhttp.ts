/**
 * A minimal keep-alive HTTP/1.1 client over raw TCP sockets, for the hot loops of the load generator.
 *
 * On the 2-core machines this runs on, the load generator gets one core and the server the other; an
 * undici Pool (about 23k req/s per core here) cannot saturate a bare fastify server, so the hot path
 * writes a request that was serialised once, up front (request line, headers and body in one Buffer),
 * and parses only what it needs of the reply: the status code, the Content-Length (or a chunked body)
 * and, when asked for, the body. One request in flight per connection (no pipelining).
 */
import net from 'node:net';

export interface Reply {
  status: number;
  /** Response body, decoded as UTF-8; '' unless `wantBody` was set (or the status is not 2xx). */
  body: string;
}

/** Serialise a POST / request once; the Buffer can be written any number of times. */
export function buildRequest(host: string, headers: Record<string, string>, body: string | Buffer): Buffer {
  const bodyBuf = typeof body === 'string' ? Buffer.from(body) : body;
  let head = `POST / HTTP/1.1\r\nhost: ${host}\r\n`;
  for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
  head += `content-length: ${bodyBuf.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), bodyBuf]);
}

interface Pending {
  request: Buffer;
  wantBody: boolean;
  resolve: (r: Reply) => void;
  reject: (e: Error) => void;
}

const CRLFCRLF = Buffer.from('\r\n\r\n');

class Connection {
  private readonly socket: net.Socket;
  private buf: Buffer | undefined;
  private current: Pending | undefined;
  private closed = false;

  constructor(
    host: string,
    port: number,
    private readonly onIdle: (c: Connection) => void,
    private readonly onGone: (c: Connection) => void,
  ) {
    this.socket = net.connect({ host, port, noDelay: true });
    this.socket.on('data', (chunk: Buffer) => this.onData(chunk));
    this.socket.on('error', (err) => this.fail(err));
    this.socket.on('close', () => this.fail(new Error('connection closed by server')));
  }

  send(p: Pending): void {
    this.current = p;
    this.socket.write(p.request);
  }

  destroy(): void {
    this.fail(new Error('client destroyed'));
  }

  private fail(err: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.destroy();
    const p = this.current;
    this.current = undefined;
    this.onGone(this);
    if (p) p.reject(err);
  }

  private onData(chunk: Buffer): void {
    const data = this.buf ? Buffer.concat([this.buf, chunk]) : chunk;
    const headEnd = data.indexOf(CRLFCRLF);
    if (headEnd < 0) {
      this.buf = data;
      return;
    }
    // "HTTP/1.1 200 OK"
    const status = (data[9]! - 48) * 100 + (data[10]! - 48) * 10 + (data[11]! - 48);
    const head = data.toString('latin1', 0, headEnd).toLowerCase();
    const bodyStart = headEnd + 4;
    let body: Buffer;
    let end: number;
    const cl = head.indexOf('\r\ncontent-length:');
    if (cl >= 0) {
      const lineEnd = head.indexOf('\r\n', cl + 2);
      const len = Number(head.slice(cl + 17, lineEnd < 0 ? undefined : lineEnd).trim());
      end = bodyStart + len;
      if (data.length < end) {
        this.buf = data;
        return;
      }
      body = data.subarray(bodyStart, end);
    } else if (head.includes('\r\ntransfer-encoding: chunked')) {
      const decoded = decodeChunked(data, bodyStart);
      if (!decoded) {
        this.buf = data;
        return;
      }
      body = decoded.body;
      end = decoded.end;
    } else {
      // No length: the body runs to the end of the connection; SQS servers never do this.
      this.fail(new Error('response without content-length or chunked encoding'));
      return;
    }
    this.buf = end < data.length ? data.subarray(end) : undefined;
    const p = this.current;
    this.current = undefined;
    const keepAlive = !head.includes('\r\nconnection: close');
    if (p) {
      const wantBody = p.wantBody || status < 200 || status >= 300;
      p.resolve({ status, body: wantBody ? body.toString() : '' });
    }
    if (!keepAlive) {
      this.closed = true;
      this.socket.destroy();
      this.onGone(this);
    } else {
      this.onIdle(this);
    }
  }
}

function decodeChunked(data: Buffer, start: number): { body: Buffer; end: number } | undefined {
  const parts: Buffer[] = [];
  let pos = start;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', pos, 'latin1');
    if (lineEnd < 0) return undefined;
    const size = parseInt(data.toString('latin1', pos, lineEnd), 16);
    if (Number.isNaN(size)) throw new Error('bad chunk size');
    const chunkStart = lineEnd + 2;
    if (size === 0) {
      // Skip (empty) trailers: the body ends at the next CRLFCRLF from the size line.
      const trailerEnd = data.indexOf(CRLFCRLF, lineEnd);
      if (trailerEnd < 0) return undefined;
      return { body: Buffer.concat(parts), end: trailerEnd + 4 };
    }
    if (data.length < chunkStart + size + 2) return undefined;
    parts.push(data.subarray(chunkStart, chunkStart + size));
    pos = chunkStart + size + 2;
  }
}

/** Up to `maxConnections` keep-alive connections; requests wait in a FIFO queue for a free one. */
export class RawPool {
  private readonly idle: Connection[] = [];
  private readonly all = new Set<Connection>();
  // A FIFO with a head index: Array#shift copies the whole array once it is large (a fixed-rate
  // run's backlog reached 100,000 waiting requests), which made the generator the bottleneck.
  private queue: (Pending | undefined)[] = [];
  private head = 0;
  private destroyed = false;

  constructor(
    readonly host: string,
    readonly port: number,
    readonly maxConnections: number,
  ) {}

  get connections(): number {
    return this.all.size;
  }

  /** Send a request built by buildRequest(); resolves with status (and body if wanted or not 2xx). */
  post(request: Buffer, wantBody: boolean): Promise<Reply> {
    return new Promise<Reply>((resolve, reject) => {
      if (this.destroyed) {
        reject(new Error('pool destroyed'));
        return;
      }
      const p: Pending = { request, wantBody, resolve, reject };
      const conn = this.idle.pop();
      if (conn) {
        conn.send(p);
      } else if (this.all.size < this.maxConnections) {
        this.open().send(p);
      } else {
        this.queue.push(p);
      }
    });
  }

  /** Abort everything in flight and close all connections. */
  destroy(): void {
    this.destroyed = true;
    const err = new Error('pool destroyed');
    for (const p of this.queue.splice(this.head)) p?.reject(err);
    this.queue = [];
    this.head = 0;
    for (const c of [...this.all]) c.destroy();
    this.idle.length = 0;
  }

  private get waiting(): number {
    return this.queue.length - this.head;
  }

  private take(): Pending | undefined {
    if (this.head >= this.queue.length) return undefined;
    const next = this.queue[this.head];
    this.queue[this.head++] = undefined;
    // Drop the taken part now and then, so the array does not grow for ever.
    if (this.head >= 1024 && this.head * 2 >= this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    return next;
  }

  private open(): Connection {
    const c = new Connection(
      this.host,
      this.port,
      (conn) => {
        const next = this.take();
        if (next) conn.send(next);
        else this.idle.push(conn);
      },
      (conn) => {
        this.all.delete(conn);
        const i = this.idle.indexOf(conn);
        if (i >= 0) this.idle.splice(i, 1);
        // Replace a connection the server closed if requests are waiting for one.
        if (!this.destroyed && this.waiting > 0 && this.all.size < this.maxConnections) {
          const next = this.take()!;
          this.open().send(next);
        }
      },
    );
    this.all.add(c);
    return c;
  }
}
