/**
 * A minimal Chrome DevTools Protocol client for a server started with `--inspect=127.0.0.1:<port>`, used
 * by the memory scenarios to force a full GC in the server and read its V8 heap use, so per-queue and
 * per-message heap figures are not blurred by garbage that happens not to have been collected yet.
 */
import { WebSocket } from 'undici';

import { getOnce } from './http.js';
import { sleep } from './proc.js';

interface CdpReply {
  id?: number;
  result?: Record<string, unknown>;
  error?: { message?: string };
}

export class Inspector {
  private nextId = 1;
  private readonly waiting = new Map<number, (r: CdpReply) => void>();

  private constructor(private readonly ws: WebSocket) {
    ws.addEventListener('message', (ev) => {
      const data: unknown = ev.data;
      if (typeof data !== 'string') return;
      const msg = JSON.parse(data) as CdpReply;
      if (msg.id !== undefined) {
        const cb = this.waiting.get(msg.id);
        this.waiting.delete(msg.id);
        cb?.(msg);
      }
    });
  }

  static async connect(port: number, timeoutMs = 5_000): Promise<Inspector> {
    const deadline = Date.now() + timeoutMs;
    let wsUrl: string | undefined;
    while (!wsUrl) {
      try {
        const res = await getOnce(`http://127.0.0.1:${port}/json/list`, 1_000);
        const list = JSON.parse(res.body) as { webSocketDebuggerUrl?: string }[];
        wsUrl = list[0]?.webSocketDebuggerUrl;
      } catch {
        // not listening yet
      }
      if (!wsUrl) {
        if (Date.now() > deadline) throw new Error(`inspector on port ${port} not reachable`);
        await sleep(50);
      }
    }
    const ws = new WebSocket(wsUrl);
    await new Promise<void>((resolve, reject) => {
      ws.addEventListener('open', () => resolve());
      ws.addEventListener('error', () => reject(new Error('inspector websocket error')));
    });
    return new Inspector(ws);
  }

  call(method: string, params: Record<string, unknown> = {}, timeoutMs = 60_000): Promise<CdpReply> {
    const id = this.nextId++;
    return new Promise<CdpReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`inspector ${method} timed out`));
      }, timeoutMs);
      this.waiting.set(id, (r) => {
        clearTimeout(timer);
        if (r.error) reject(new Error(`inspector ${method}: ${r.error.message ?? 'error'}`));
        else resolve(r);
      });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  /** Run a full GC (twice, so weakly held and finalised objects go too) and return the used heap in bytes. */
  async heapUsedAfterGc(): Promise<number> {
    await this.call('HeapProfiler.collectGarbage');
    await this.call('HeapProfiler.collectGarbage');
    const r = await this.call('Runtime.getHeapUsage');
    return Number(r.result?.['usedSize']);
  }

  close(): void {
    this.ws.close();
  }
}
