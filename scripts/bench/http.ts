/**
 * A thin keep-alive HTTP client over an undici Pool, using `dispatch` with a raw handler so the load
 * generator does as little work per request as possible (no streams, no header objects, body bytes are
 * only decoded when the caller asks for them). Request bodies are passed in pre-built.
 */
import { Pool } from 'undici';
import type { Dispatcher } from 'undici';

export interface Reply {
  status: number;
  /** Response body, decoded as UTF-8; '' unless `wantBody` was set (or the status is not 2xx). */
  body: string;
}

export interface PreparedRequest {
  headers: string[];
  body: Buffer;
}

export class HttpClient {
  readonly pool: Pool;
  readonly origin: string;

  constructor(origin: string, connections: number, timeoutMs = 60_000) {
    this.origin = origin;
    this.pool = new Pool(origin, {
      connections,
      pipelining: 1,
      keepAliveTimeout: 120_000,
      keepAliveMaxTimeout: 120_000,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      connectTimeout: 10_000,
    });
  }

  /** POST / with a pre-built body. Resolves with status and (optionally) body; rejects on transport errors. */
  post(req: PreparedRequest, wantBody: boolean): Promise<Reply> {
    return new Promise<Reply>((resolve, reject) => {
      let status = 0;
      let chunks: Buffer[] | undefined;
      // The legacy (onConnect/onHeaders/...) handler shape is passed through by undici as is; the newer
      // onResponse* shape gets wrapped and has its headers parsed into an object on every response.
      const handler: Dispatcher.DispatchHandler = {
        onConnect() {},
        onHeaders(statusCode) {
          status = statusCode;
          if (wantBody || statusCode < 200 || statusCode >= 300) chunks = [];
          return true;
        },
        onData(chunk) {
          if (chunks) chunks.push(chunk);
          return true;
        },
        onComplete() {
          resolve({
            status,
            body: chunks
              ? chunks.length === 1
                ? chunks[0]!.toString()
                : Buffer.concat(chunks).toString()
              : '',
          });
        },
        onError(err) {
          reject(err);
        },
      };
      this.pool.dispatch({ path: '/', method: 'POST', headers: req.headers, body: req.body }, handler);
    });
  }

  /** A GET on this origin (health checks, metrics). */
  async get(path: string): Promise<Reply> {
    const res = await this.pool.request({ path, method: 'GET' });
    const body = await res.body.text();
    return { status: res.statusCode, body };
  }

  async close(): Promise<void> {
    await this.pool.close();
  }

  /** Abort everything in flight (e.g. pending long polls) and close the connections. */
  async destroy(): Promise<void> {
    await this.pool.destroy();
  }
}

/** A one-off GET with its own short-lived connection; rejects on transport errors or timeout. */
export async function getOnce(url: string, timeoutMs = 2_000): Promise<Reply> {
  const u = new URL(url);
  const pool = new Pool(u.origin, { connections: 1, pipelining: 1, connectTimeout: timeoutMs });
  try {
    const res = await pool.request({
      path: u.pathname + u.search,
      method: 'GET',
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    const body = await res.body.text();
    return { status: res.statusCode, body };
  } finally {
    await pool.destroy();
  }
}
