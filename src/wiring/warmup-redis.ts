/**
 * A stand-in for Redis, for the follower's warm-up (src/wiring/warmup.ts): its private Writer
 * writes through ioredis to this, so that the writer's code runs as a leader's does, and nothing
 * reaches the real Redis. It reads RESP commands and answers each one as the writer and ioredis's
 * connection set-up need (INFO for the ready check, OK codes for the writer's scripts), and keeps
 * nothing.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { ScriptCode } from '../persistence/scripts.js';

/** Listens on the Unix socket `path`. */
export function listenStandInRedis(path: string): Server {
  const server = createServer(answerEveryCommand);
  server.listen(path);
  return server;
}

function answerEveryCommand(socket: Socket): void {
  let pending: Buffer = Buffer.alloc(0);
  socket.on('error', () => undefined);
  socket.on('data', (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    let replies = '';
    let at = 0;
    for (;;) {
      const command = nextCommand(pending, at);
      if (command === undefined) break;
      at = command.end;
      replies += reply(command.name);
    }
    pending = pending.subarray(at);
    if (replies !== '') socket.write(replies);
  });
}

const INFO = '# Server\r\nredis_version:7.0.15\r\nloading:0\r\n';

function reply(name: string): string {
  switch (name) {
    case 'info':
      return `$${Buffer.byteLength(INFO)}\r\n${INFO}\r\n`;
    case 'evalsha':
    case 'eval':
      return `:${ScriptCode.OK}\r\n`;
    default:
      return '+OK\r\n';
  }
}

/** The next whole command (a RESP array of bulk strings) from `at`: its name and where it ends. */
function nextCommand(b: Buffer, at: number): { name: string; end: number } | undefined {
  let p = at;
  const header = (): number | undefined => {
    const eol = b.indexOf('\r\n', p);
    if (eol < 0) return undefined;
    const n = Number(b.toString('latin1', p + 1, eol));
    p = eol + 2;
    return n;
  };
  if (p >= b.length) return undefined;
  const parts = header();
  if (parts === undefined) return undefined;
  let name = '';
  for (let i = 0; i < parts; i++) {
    const len = header();
    if (len === undefined || b.length < p + len + 2) return undefined;
    if (i === 0) name = b.toString('latin1', p, p + len).toLowerCase();
    p += len + 2;
  }
  return { name, end: p };
}
