/**
 * A new process runs its JavaScript cold: interpreted until V8 has seen each function often enough
 * to compile it. Measured (docs/decisions/005-follower-warm-up.md): a server started and at once sent
 * SendMessage at half its peak rate fell behind for its first second and built a backlog whose p99
 * was 250-450 ms, against 5-25 ms once a few thousand requests had gone through it. A passive
 * instance answers nothing but 503s until it takes over, so a failover hands the full load to
 * code in that state.
 *
 * So a follower sends itself a few thousand requests of the common actions while it waits to lead,
 * over both protocols and through the real HTTP stack (src/wiring/warmup-client.ts), to a data
 * plane of its own: a private store
 * whose changes a Writer of its own writes through ioredis to a stand-in that answers like Redis
 * (src/wiring/warmup-redis.ts),
 * no metrics, no log, both sockets in a directory only this user can enter. Nothing of it is
 * visible outside the process, and the code it runs is the code a leader runs. A serving instance
 * does not warm up: measured, a warm-up beside the traffic of a server just started made that
 * traffic's backlog seconds long instead of a fraction of one.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { systemClock } from '../core/clock.js';
import { QueueStore } from '../core/store.js';
import { buildDataPlane } from '../http/data.js';
import { layoutFor } from '../persistence/layout.js';
import { redisOptions } from '../persistence/redis.js';
import { Writer } from '../persistence/writer.js';
import { servicesFor } from '../sqs/service.js';
import { Ended, WarmUpClient } from './warmup-client.js';
import { listenStandInRedis } from './warmup-redis.js';

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
  const standIn = listenStandInRedis(redisPath);
  const redis = new Redis({
    ...redisOptions({ url: 'redis://localhost', connectionName: 'shared-sqs:warm-up' }),
    path: redisPath,
    replyMapping: 'legacy',
  });
  redis.on('error', () => undefined);
  // Plain pipelines, not MULTI/EXEC: the stand-in answers each command as if run at once (no QUEUED).
  const writer = new Writer({
    layout: layoutFor('{warm-up}:'),
    connectionFor: () => redis,
    multi: false,
    unavailable: (cause) => cause,
  });
  writer.attach(store);
  const plane = buildDataPlane({
    services,
    logger: pino({ level: 'silent' }),
    accountId: opts.accountId,
    region: opts.region,
    baseUrl: 'http://localhost',
    durability: { kind: 'redis', serving: true, commit: () => writer.commit() },
  });
  const client = new WarmUpClient(socketPath, over);
  const t0 = performance.now();

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      client.destroy();
      await plane.close();
      services.poller.closeAll();
      services.mover.close();
      await writer.close();
      redis.disconnect();
      await new Promise((resolve) => standIn.close(resolve));
      rmSync(dir, { recursive: true, force: true });
    })());

  const done = (async () => {
    let error: string | undefined;
    try {
      await redis.connect();
      await plane.listen({ path: socketPath });
      await client.run(opts.requests);
    } catch (e) {
      // A warm-up that fails costs only its speed-up; the caller logs the reason.
      if (!(e instanceof Ended) && !stopped) error = e instanceof Error ? e.message : String(e);
    }
    await close();
    const result = {
      requests: client.sent,
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
