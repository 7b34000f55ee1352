/**
 * Control-plane HTTP through undici (health checks, metrics, the inspector's /json/list). The load
 * itself goes through rawhttp.ts, which costs the load generator less CPU per request.
 */
import { Pool } from 'undici';

export interface Reply {
  status: number;
  /** Response body, decoded as UTF-8; '' unless `wantBody` was set (or the status is not 2xx). */
  body: string;
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
