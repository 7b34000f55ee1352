/**
 * A new process runs its JavaScript cold: interpreted until V8 has seen each function often enough
 * to compile it. Measured (docs/decisions/005-follower-warm-up.md): a server started and at once sent
 * SendMessage at half its peak rate fell behind for its first second and built a backlog whose p99
 * was 250-450 ms, against 5-25 ms once a few thousand requests had gone through it. A passive
 * instance answers nothing but 503s until it takes over, so a failover hands the full load to
 * code in that state.
 *
 * So a follower sends itself a few thousand requests of the common actions while it waits to lead,
 * over both protocols and through the real HTTP stack, to a data plane of its own: a private store
 * whose changes a Writer of its own writes through ioredis to a stand-in that answers like Redis,
 * no metrics, no log, both sockets in a directory only this user can enter. Nothing of it is
 * visible outside the process, and the code it runs is the code a leader runs. A serving instance
 * does not warm up: measured, a warm-up beside the traffic of a server just started made that
 * traffic's backlog seconds long instead of a fraction of one.
 */
import { Agent, request } from 'node:http';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { systemClock } from '../core/clock.js';
import { QueueStore } from '../core/store.js';
import { buildDataPlane } from '../http/data.js';
import { keysFor } from '../persistence/keys.js';
import { redisOptions } from '../persistence/redis.js';
import { ScriptCode } from '../persistence/scripts.js';
import { Writer } from '../persistence/writer.js';
import { servicesFor } from '../sqs/service.js';

export interface WarmUpOptions {
  /** About how many requests to send in all. */
  readonly requests: number;
  readonly accountId: string;
  readonly region: string;
  /** Stops the warm-up once true (checked before each request): the instance began to serve. */
  readonly until?: () => boolean;
}

export interface WarmUp {
  /** Resolves with what was sent when the warm-up is over (or was stopped); never rejects. */
  readonly done: Promise<{ requests: number; ms: number; writerBatches: number; error?: string }>;
  /** Ends the warm-up early (shutdown); resolves once its plane is closed. */
  stop(): Promise<void>;
}

class Ended extends Error {}

const DIR_PREFIX = 'shared-sqs-warmup-';

/**
 * A process killed (kill -9) while it warmed up left its directory behind: the next warm-up removes
 * those whose process is gone. The pid in the name is the owner's; one reused by another process
 * only keeps its directory for longer.
 */
function removeStaleDirs(): void {
  let names: string[];
  try {
    names = readdirSync(tmpdir());
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(DIR_PREFIX)) continue;
    const pid = Number(/^(\d+)-/.exec(name.slice(DIR_PREFIX.length))?.[1]);
    if (!Number.isSafeInteger(pid) || pid <= 0 || alive(pid)) continue;
    try {
      rmSync(path.join(tmpdir(), name), { recursive: true, force: true });
    } catch {
      // Another user's directory: not ours to remove.
    }
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it exists, under another user.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const BODY = 'warm-up message body '.repeat(12);
/** What one round of a client sends: five JSON requests and four Query ones (client() below). */
const REQUESTS_PER_ROUND = 9;
/** Parallel connections: enough to give the plane the same turns with several requests in them. */
const CONNECTIONS = 4;

export function startWarmUp(opts: WarmUpOptions): WarmUp {
  let stopped = false;
  const over = (): boolean => stopped || (opts.until?.() ?? false);
  removeStaleDirs();
  const dir = mkdtempSync(path.join(tmpdir(), `${DIR_PREFIX}${process.pid}-`));
  const socketPath = path.join(dir, 'data.sock');
  const store = new QueueStore(systemClock);
  const services = servicesFor(store, systemClock);
  // Its store writes through a Writer of its own, as a leader's does, to a stand-in for Redis.
  const redisPath = path.join(dir, 'redis.sock');
  const standIn = createServer(answerEveryCommand);
  standIn.listen(redisPath);
  const redis = new Redis({
    ...redisOptions({ url: 'redis://localhost', connectionName: 'shared-sqs:warm-up' }),
    path: redisPath,
    replyMapping: 'legacy',
  });
  redis.on('error', () => undefined);
  const writer = new Writer({ redis, keys: keysFor('{warm-up}:'), unavailable: (cause) => cause });
  writer.attach(store);
  const plane = buildDataPlane({
    services,
    logger: pino({ level: 'silent' }),
    accountId: opts.accountId,
    region: opts.region,
    baseUrl: 'http://localhost',
    durability: { kind: 'redis', serving: true, commit: () => writer.commit() },
  });
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const t0 = performance.now();
  let sent = 0;

  const post = (headers: Record<string, string>, body: string): Promise<string> =>
    new Promise((resolve, reject) => {
      // Checked before every request, so a takeover waits for at most the requests in flight.
      if (over()) {
        reject(new Ended());
        return;
      }
      const req = request(
        {
          socketPath,
          agent,
          method: 'POST',
          path: '/',
          headers: { ...headers, 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () =>
            res.statusCode === 200 ? resolve(text) : reject(new Error(`HTTP ${res.statusCode}: ${text}`)),
          );
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
      sent++;
    });

  const json = (action: string, input: object): Promise<string> =>
    post(
      { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': `AmazonSQS.${action}` },
      JSON.stringify(input),
    );
  const query = (action: string, params: Record<string, string>): Promise<string> =>
    post(
      { 'content-type': 'application/x-www-form-urlencoded' },
      new URLSearchParams({ Action: action, Version: '2012-11-05', ...params }).toString(),
    );

  /** One client's share: sends, batches, receives and deletes on its own queue, in both protocols. */
  async function client(n: number, rounds: number): Promise<void> {
    const jsonUrl = (
      JSON.parse(await json('CreateQueue', { QueueName: `warm-json-${n}` })) as { QueueUrl: string }
    ).QueueUrl;
    const queryUrl = /<QueueUrl>([^<]+)<\/QueueUrl>/.exec(
      await query('CreateQueue', { QueueName: `warm-query-${n}` }),
    )?.[1];
    if (queryUrl === undefined) throw new Error('CreateQueue over Query: no QueueUrl');
    const attributes = { kind: { DataType: 'String', StringValue: 'warm-up' } };
    for (let r = 0; r < rounds; r++) {
      await json('SendMessage', { QueueUrl: jsonUrl, MessageBody: BODY });
      await json('SendMessage', { QueueUrl: jsonUrl, MessageBody: BODY, MessageAttributes: attributes });
      await json('SendMessageBatch', {
        QueueUrl: jsonUrl,
        Entries: Array.from({ length: 10 }, (_, i) => ({ Id: `m${i}`, MessageBody: BODY })),
      });
      const received = JSON.parse(
        await json('ReceiveMessage', {
          QueueUrl: jsonUrl,
          MaxNumberOfMessages: 10,
          MessageAttributeNames: ['All'],
          MessageSystemAttributeNames: ['All'],
        }),
      ) as { Messages?: { ReceiptHandle: string }[] };
      const handles = (received.Messages ?? []).map((m) => m.ReceiptHandle);
      if (handles.length > 0) {
        await json('DeleteMessageBatch', {
          QueueUrl: jsonUrl,
          Entries: handles.map((h, i) => ({ Id: `d${i}`, ReceiptHandle: h })),
        });
      }
      await query('SendMessage', { QueueUrl: queryUrl, MessageBody: BODY });
      const batch: Record<string, string> = { QueueUrl: queryUrl };
      for (let i = 1; i <= 10; i++) {
        batch[`SendMessageBatchRequestEntry.${i}.Id`] = `m${i}`;
        batch[`SendMessageBatchRequestEntry.${i}.MessageBody`] = BODY;
      }
      await query('SendMessageBatch', batch);
      const xml = await query('ReceiveMessage', {
        QueueUrl: queryUrl,
        MaxNumberOfMessages: '10',
        'AttributeName.1': 'All',
        'MessageAttributeName.1': 'All',
      });
      const deletes: Record<string, string> = { QueueUrl: queryUrl };
      let i = 0;
      for (const m of xml.matchAll(/<ReceiptHandle>([^<]+)<\/ReceiptHandle>/g)) {
        i++;
        deletes[`DeleteMessageBatchRequestEntry.${i}.Id`] = `d${i}`;
        deletes[`DeleteMessageBatchRequestEntry.${i}.ReceiptHandle`] = m[1] as string;
      }
      if (i > 0) await query('DeleteMessageBatch', deletes);
    }
  }

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      agent.destroy();
      await plane.close();
      services.poller.closeAll();
      services.mover.close();
      await writer.close();
      redis.disconnect();
      await new Promise((resolve) => standIn.close(resolve));
      rmSync(dir, { recursive: true, force: true });
    })());

  const rounds = Math.max(1, Math.ceil(opts.requests / REQUESTS_PER_ROUND / CONNECTIONS));
  const done = (async () => {
    let error: string | undefined;
    try {
      await redis.connect();
      await plane.listen({ path: socketPath });
      await Promise.all(Array.from({ length: CONNECTIONS }, (_, n) => client(n, rounds)));
    } catch (e) {
      // A warm-up that fails costs only its speed-up; the caller logs the reason.
      if (!(e instanceof Ended) && !stopped) error = e instanceof Error ? e.message : String(e);
    }
    await close();
    const result = {
      requests: sent,
      ms: Math.round(performance.now() - t0),
      writerBatches: writer.stats.batches,
    };
    return error === undefined ? result : { ...result, error };
  })();
  return {
    done,
    stop: async () => {
      stopped = true;
      await close();
      await done;
    },
  };
}

/**
 * A stand-in for Redis on the warm-up's own socket: it reads RESP commands and answers each one as
 * the writer and ioredis's connection set-up need (INFO for the ready check, OK codes for the
 * writer's scripts), and keeps nothing.
 */
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
