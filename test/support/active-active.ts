/**
 * Two --active-active servers embedded in the test's process on one redis-server, and the admin
 * calls the integration tests read them with (test/integration/active-active*.test.ts).
 */
import assert from 'node:assert/strict';
import { SQSClient } from '@aws-sdk/client-sqs';
import { startServer, type RunningServer, type ServerOptions } from '../../src/index.js';
import { until } from './layout-v1.js';
import { startRedis, uniquePrefix, type TestRedis } from './redis.js';

export const ADMIN_TOKEN = 'active-active-admin-token';

export interface ShardsView {
  activeActive: boolean;
  instanceId: string;
  mapVersion: number;
  members: { id: string }[];
  shards: {
    shard: number;
    owner: string | null;
    pinnedTo: string | null;
    here: { state: string } | null;
    queues: number;
  }[];
}

/**
 * Two instances on `redis`, returned once both are members, each serves some shards and both
 * answer /ready 200 (`settle: false`: as soon as both listen).
 */
export async function startPair(
  redis: TestRedis,
  extra: ServerOptions = {},
  { settle = true }: { settle?: boolean } = {},
): Promise<RunningServer[]> {
  const options: ServerOptions = {
    redisUrl: redis.url,
    redisPrefix: uniquePrefix(),
    activeActive: true,
    leaderTtl: '2s',
    leaderInterval: '500ms',
    adminToken: ADMIN_TOKEN,
    queueDeletedRecently: false,
    ...extra,
  };
  const servers = [await startServer(options), await startServer(options)];
  if (!settle) return servers;
  // Until then /admin/shards may answer 503 (not serving yet): read as not ready.
  await until(
    'both instances serve shards',
    () =>
      Promise.all(
        servers.map(async (s) => {
          const r = await admin(s, '/admin/shards');
          const ready = (await fetch(`${s.controlUrl}/ready`)).status === 200;
          return r.status === 200 && ready ? ((await r.json()) as ShardsView) : undefined;
        }),
      ),
    (vs) =>
      vs.every(
        (v) =>
          v !== undefined &&
          v.members.length === 2 &&
          v.shards.filter((s) => s.here?.state === 'serving').length > 0,
      ),
    20_000,
  );
  return servers;
}

export async function admin(s: RunningServer, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${s.controlUrl}${path}`, {
    ...init,
    headers: {
      authorization: `Bearer ${ADMIN_TOKEN}`,
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
  });
}

export async function shardsView(s: RunningServer): Promise<ShardsView> {
  const r = await admin(s, '/admin/shards');
  assert.equal(r.status, 200);
  return (await r.json()) as ShardsView;
}

/** An SDK v3 client (JSON 1.0) of the instance `s`. */
export function sqsAt(s: RunningServer): SQSClient {
  return new SQSClient({
    endpoint: s.url,
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
}

type Hook = (fn: () => Promise<void>) => unknown;

/**
 * A pair on a redis-server of its own for one test file: started in its `before` hook, closed
 * with its Redis in its `after` hook. The array is filled in `before`.
 */
export function pairFor(hooks: { before: Hook; after: Hook }, extra: ServerOptions = {}): RunningServer[] {
  const servers: RunningServer[] = [];
  let redis: TestRedis | undefined;
  hooks.before(async () => {
    redis = await startRedis({ aof: false });
    servers.push(...(await startPair(redis, extra)));
  });
  hooks.after(async () => {
    for (const s of servers) await s.close();
    await redis?.stop();
  });
  return servers;
}
