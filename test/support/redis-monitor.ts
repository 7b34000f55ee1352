/**
 * MONITOR on a plain socket. ioredis's monitor() marks its connection as monitoring only a microtask
 * after MONITOR's +OK, so a command line arriving in the same packet as that +OK is taken for a reply
 * to nothing ("Command queue state error") and the monitor never starts. Here the +OK is awaited and
 * every later line is a command Redis ran.
 */
import { connect } from 'node:net';

export interface MonitorLine {
  readonly args: string[];
  /** `ip:port` of the client that sent it ("lua" for a call made by a script). */
  readonly source: string;
}

export interface Monitor {
  readonly lines: MonitorLine[];
  stop(): void;
}

const ESCAPES: Record<string, string> = {
  n: '\n',
  r: '\r',
  t: '\t',
  a: '\x07',
  b: '\b',
  '"': '"',
  '\\': '\\',
};

/** Redis writes each argument as sdscatrepr does: quoted, with \n, \", \\ and \xHH escapes. */
export function parseMonitorLine(line: string): MonitorLine | undefined {
  const head = /^\d+\.\d+ \[\d+ ([^\]]+)\] /.exec(line);
  if (head === null) return undefined;
  const args: string[] = [];
  let i = head[0].length;
  while (i < line.length) {
    if (line[i] === ' ') {
      i++;
      continue;
    }
    if (line[i] !== '"') return undefined;
    i++;
    let arg = '';
    for (;;) {
      const ch = line[i];
      if (ch === undefined) return undefined;
      if (ch === '"') break;
      if (ch === '\\') {
        const next = line[i + 1] ?? '';
        if (next === 'x') {
          arg += String.fromCharCode(parseInt(line.slice(i + 2, i + 4), 16));
          i += 4;
        } else {
          arg += ESCAPES[next] ?? next;
          i += 2;
        }
        continue;
      }
      arg += ch;
      i++;
    }
    args.push(arg);
    i++;
  }
  return { args, source: head[1] ?? '' };
}

export async function monitor(port: number): Promise<Monitor> {
  const socket = connect({ host: '127.0.0.1', port });
  socket.setEncoding('latin1');
  const lines: MonitorLine[] = [];
  let buffered = '';
  let started: (() => void) | undefined;
  let failed: ((e: Error) => void) | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    started = resolve;
    failed = reject;
  });
  socket.on('error', (e) => failed?.(e));
  socket.on('connect', () => socket.write('MONITOR\r\n'));
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    let end: number;
    while ((end = buffered.indexOf('\r\n')) >= 0) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      if (line === '+OK') started?.();
      else if (line.startsWith('-')) failed?.(new Error(`MONITOR refused: ${line.slice(1)}`));
      else if (line.startsWith('+')) {
        const parsed = parseMonitorLine(line.slice(1));
        if (parsed !== undefined) lines.push(parsed);
      }
    }
  });
  try {
    await ready;
  } catch (e) {
    socket.destroy();
    throw e;
  }
  socket.on('error', () => undefined);
  return { lines, stop: () => socket.destroy() };
}
