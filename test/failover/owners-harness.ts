/**
 * The active/active harness (docs/operations.md, "Active/active"): one private redis-server (AOF
 * always), N shared-sqs processes with `--active-active` on fixed free loopback ports (data,
 * control and internal: a restarted process comes back where nginx and its peers expect it), and
 * nginx in front of all N (nginx/shared-sqs.conf, or the `nginxConf` asked for, its upstream given
 * one server line per process).
 *
 * Who owns a queue is read from Redis itself: the shard of the queue (src/shard/hash.ts) and the
 * holder of that shard's lease (`{ssq:sNNN:x}lease`, a token `<epoch>:<hostname>-<pid>`), checked
 * against the shard map the coordinator wrote. Everything listens on 127.0.0.1; `stop()` ends
 * everything it started.
 */
import { hostname } from 'node:os';
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { parseToken } from '../../src/ha/lock.js';
import { layoutFor } from '../../src/persistence/layout.js';
import { SHARD_COUNT, shardOf } from '../../src/shard/hash.js';
import { productNodeFlags } from '../support/process.js';
import { startRedis, uniquePrefix, type TestRedis } from '../support/redis.js';
import { freePort } from '../support/server.js';
import {
  ADMIN_TOKEN,
  FAST,
  haArgs,
  Instance,
  loadClient,
  pause,
  startNginx,
  until,
  type HaTiming,
  type Nginx,
} from './harness.js';

export const ACCOUNT = '000000000000';
export const REGION = 'us-east-1';

export interface Node extends Instance {
  readonly internalPort: number;
}

export interface OwnersCluster {
  readonly redis: TestRedis;
  readonly prefix: string;
  readonly nodes: readonly Instance[];
  readonly nginx: Nginx;
  readonly timing: HaTiming;
  /** The instance id (`<hostname>-<pid>`) of a node's current process. */
  idOf(i: Instance): string;
  /** The node whose current process has this id. */
  byId(id: string | undefined): Instance | undefined;
  /** shard → owner id, as the coordinator wrote the map. */
  map(): Promise<(string | undefined)[]>;
  /** shard → the instance id holding its lease (undefined: free). */
  leases(): Promise<(string | undefined)[]>;
  /** The coordinator's instance id. */
  coordinator(): Promise<string | undefined>;
  /**
   * Every running node /ready; every shard mapped to a running node, whose lease that node holds;
   * every running node owning some. Bounded.
   */
  settled(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** The shard of a queue named `name` in the default account and region. */
export function shardOfName(name: string): number {
  return shardOf(ACCOUNT, REGION, name);
}

/** The shard of a queue by its URL (…/<account>/<name>). */
export function shardOfUrl(queueUrl: string): number {
  const [account, name] = new URL(queueUrl).pathname.split('/').slice(-2) as [string, string];
  return shardOf(account, REGION, name);
}

export async function startOwners(
  opts: {
    n?: number;
    timing?: HaTiming;
    extraArgs?: readonly string[];
    /** The nginx configuration in front; default nginx/shared-sqs.conf. */
    nginxConf?: string;
  } = {},
): Promise<OwnersCluster> {
  const n = opts.n ?? 3;
  const timing = opts.timing ?? FAST;
  const redis = await startRedis({ aof: true });
  const prefix = uniquePrefix();
  const layout = layoutFor(prefix);
  const ports: number[] = [];
  while (ports.length < 3 * n) {
    const p = await freePort();
    if (!ports.includes(p)) ports.push(p);
  }
  const nodes: Instance[] = [];
  for (let k = 0; k < n; k++) {
    const [port, control, internal] = ports.slice(3 * k, 3 * k + 3) as [number, number, number];
    nodes.push(
      new Instance(
        `n${k + 1}`,
        port,
        control,
        [
          '--active-active',
          '--internal-port',
          String(internal),
          '--advertise-host',
          '127.0.0.1',
          ...haArgs(redis.port, prefix, timing),
          ...(opts.extraArgs ?? []),
        ],
        // As the launchers start it (docs/decisions/006-initial-old-space-size.md): the backlog
        // a survivor takes over at row 32 is read in without a major collection on the way.
        productNodeFlags(),
      ),
    );
  }
  const nginx = await startNginx(
    nodes.map((x) => x.port),
    opts.nginxConf,
  ).catch(async (e: unknown) => {
    await redis.stop();
    throw e;
  });
  const stop = async (): Promise<void> => {
    await Promise.allSettled(nodes.map((x) => x.kill9()));
    await nginx.stop();
    await redis.stop();
  };
  const host = hostname();
  const idOf = (i: Instance): string => `${host}-${i.pid}`;
  const byId = (id: string | undefined): Instance | undefined =>
    nodes.find((x) => x.running && id !== undefined && idOf(x) === id);
  const map = async (): Promise<(string | undefined)[]> => {
    const hash = await redis.client.hgetall(layout.meta.owners);
    return Array.from({ length: SHARD_COUNT }, (_, s) => hash[String(s)] || undefined);
  };
  const leases = async (): Promise<(string | undefined)[]> => {
    const values = await redis.client.mget(...layout.shards.map((k) => k.lease));
    return values.map((v) => (v === null ? undefined : parseToken(v)?.instanceId));
  };
  const coordinator = async (): Promise<string | undefined> => {
    const v = await redis.client.get(`${layout.meta.coordinator}`);
    return v === null ? undefined : parseToken(v)?.instanceId;
  };
  const cluster: OwnersCluster = {
    redis,
    prefix,
    nodes,
    nginx,
    timing,
    idOf,
    byId,
    map,
    leases,
    coordinator,
    settled: async (timeoutMs = 30_000) => {
      let last = '';
      await until(
        'the shards settled over the running nodes',
        async () => {
          const running = nodes.filter((x) => x.running);
          const ready = await Promise.all(running.map((x) => x.ready()));
          const [m, l] = await Promise.all([map(), leases()]);
          const ids = new Set(running.map(idOf));
          const counts = new Map<string, number>();
          let off = 0;
          for (let s = 0; s < SHARD_COUNT; s++) {
            const o = m[s];
            if (o === undefined || !ids.has(o) || l[s] !== o) off++;
            else counts.set(o, (counts.get(o) ?? 0) + 1);
          }
          last = `ready ${JSON.stringify(ready)}, shards not settled ${off}, owned ${JSON.stringify([...counts])}`;
          return ready.every(Boolean) && off === 0 && counts.size === ids.size;
        },
        timeoutMs,
      ).catch((e: unknown) => {
        throw new Error(`${(e as Error).message}: ${last}`);
      });
    },
    stop,
  };
  try {
    for (const x of nodes) await x.start();
    await cluster.settled();
  } catch (e) {
    await stop();
    throw e;
  }
  return cluster;
}

/** An OwnersCluster for one test, stopped after it. */
export async function ownersFor(
  t: { after(fn: () => Promise<void>): void },
  opts: Parameters<typeof startOwners>[0] = {},
): Promise<OwnersCluster> {
  const c = await startOwners(opts);
  t.after(() => c.stop());
  return c;
}

/**
 * Names `<base>-<k>` (with `.fifo` when asked) whose shard the map gives to `owner`: `count` of
 * them, found by trying k = 0, 1, ...
 */
export function namesOwnedBy(
  map: readonly (string | undefined)[],
  owner: string,
  base: string,
  count: number,
  fifo = false,
): string[] {
  const out: string[] = [];
  for (let k = 0; out.length < count; k++) {
    if (k > 100_000) throw new Error(`no name of ${base} falls on ${owner}'s shards`);
    const name = `${base}-${k}${fifo ? '.fifo' : ''}`;
    if (map[shardOfName(name)] === owner) out.push(name);
  }
  return out;
}

/**
 * A dead-letter queue and a source queue whose RedrivePolicy names it, both made through `sdk`
 * (JSON): FIFO queues when the names end in `.fifo`; `srcAttributes` are the source's others.
 */
export async function dlqPair(
  sdk: SQSClient,
  dlqName: string,
  srcName: string,
  opts: { maxReceiveCount: number; srcAttributes?: Record<string, string> },
): Promise<{ dlqUrl: string; dlqArn: string; srcUrl: string; srcArn: string }> {
  const fifo = dlqName.endsWith('.fifo') ? { FifoQueue: 'true' } : undefined;
  const arnOf = async (url: string): Promise<string> =>
    (await sdk.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] })))
      .Attributes?.['QueueArn'] ?? '';
  const dlqUrl =
    (await sdk.send(new CreateQueueCommand({ QueueName: dlqName, Attributes: fifo }))).QueueUrl ?? '';
  const dlqArn = await arnOf(dlqUrl);
  const srcUrl =
    (
      await sdk.send(
        new CreateQueueCommand({
          QueueName: srcName,
          Attributes: {
            ...fifo,
            RedrivePolicy: JSON.stringify({
              deadLetterTargetArn: dlqArn,
              maxReceiveCount: opts.maxReceiveCount,
            }),
            ...opts.srcAttributes,
          },
        }),
      )
    ).QueueUrl ?? '';
  return { dlqUrl, dlqArn, srcUrl, srcArn: await arnOf(srcUrl) };
}

/** Every HTTP answer an SDK client gets, one per attempt (retries included), by status. */
export interface StatusLog {
  readonly ok: number[];
  readonly bad: { at: number; status: number; name: string; message?: string }[];
}

/**
 * Adds to `client` a middleware inside its retry loop that logs each attempt's status: 2xx as a
 * time, anything else (0 for no answer) with its time and error name.
 */
export function logStatuses(client: SQSClient, log: StatusLog): void {
  client.middlewareStack.add(
    (next) => async (args) => {
      try {
        const out = await next(args);
        const status = (out.response as { statusCode?: number }).statusCode ?? 0;
        if (status >= 200 && status < 300) log.ok.push(Date.now());
        else log.bad.push({ at: Date.now(), status, name: 'http' });
        return out;
      } catch (e) {
        const x = e as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
        log.bad.push({
          at: Date.now(),
          status: x.$metadata?.httpStatusCode ?? 0,
          name: x.name ?? 'Error',
          message: x.message ?? '',
        });
        throw e;
      }
    },
    { step: 'finalizeRequest', priority: 'low', name: 'testStatusLog' },
  );
}

export function newStatusLog(): StatusLog {
  return { ok: [], bad: [] };
}

/**
 * A FIFO queue under load: one SDK sender (JSON) sending to `groups` message groups in turn, each
 * body `<tag>-g<group>-<seq>` with the body as its deduplication id, and one consumer receiving
 * and deleting. Checked after a drain: lost, unexpected, resurrected (by MessageId, as
 * workload.ts), and order: within a group, the first receipt of each message comes in send order.
 */
export class FifoLoad {
  readonly sdk: SQSClient;
  private running = false;
  private loops: Promise<void>[] = [];
  private readonly next: number[];
  readonly attempted = new Set<string>();
  readonly acked = new Set<string>();
  /** body → when its send was answered 200. */
  readonly ackedAt = new Map<string, number>();
  /** group → sequence numbers in the order they were first received. */
  readonly firstSeen = new Map<number, number[]>();
  readonly received = new Map<string, number>();
  readonly receivedById = new Map<string, number[]>();
  readonly deletedAt = new Map<string, number>();
  readonly sendErrors: Record<string, number> = {};

  constructor(
    readonly url: string,
    readonly queueUrl: string,
    readonly tag: string,
    readonly groups = 3,
    private readonly sendEveryMs = 50,
  ) {
    this.sdk = loadClient(url);
    this.next = new Array<number>(groups).fill(0);
  }

  start(): void {
    this.running = true;
    this.loops.push(this.sender(), this.consumer());
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    this.loops = [];
  }

  private async sender(): Promise<void> {
    for (let i = 0; this.running; i++) {
      const g = i % this.groups;
      const seq = this.next[g] ?? 0;
      this.next[g] = seq + 1;
      const body = `${this.tag}-g${g}-${seq}`;
      this.attempted.add(body);
      try {
        await this.sdk.send(
          new SendMessageCommand({
            QueueUrl: this.queueUrl,
            MessageBody: body,
            MessageGroupId: `g${g}`,
            MessageDeduplicationId: body,
          }),
          { abortSignal: AbortSignal.timeout(20_000) },
        );
        this.acked.add(body);
        this.ackedAt.set(body, Date.now());
      } catch (e) {
        const k = (e as { name?: string }).name ?? 'Error';
        this.sendErrors[k] = (this.sendErrors[k] ?? 0) + 1;
      }
      await pause(this.sendEveryMs);
    }
  }

  private async consumer(): Promise<void> {
    while (this.running) await this.receiveOnce(1);
  }

  private async receiveOnce(wait: number): Promise<number> {
    const startedAt = Date.now();
    let messages;
    try {
      const out = await this.sdk.send(
        new ReceiveMessageCommand({
          QueueUrl: this.queueUrl,
          MaxNumberOfMessages: 10,
          VisibilityTimeout: 3,
          WaitTimeSeconds: wait,
        }),
        { abortSignal: AbortSignal.timeout(25_000) },
      );
      messages = out.Messages ?? [];
    } catch {
      await pause(50);
      return 0;
    }
    for (const m of messages) {
      const body = m.Body ?? '';
      this.received.set(body, (this.received.get(body) ?? 0) + 1);
      this.idBody.set(m.MessageId ?? '', body);
      const at = this.receivedById.get(m.MessageId ?? '') ?? [];
      at.push(startedAt);
      this.receivedById.set(m.MessageId ?? '', at);
      if (this.received.get(body) === 1) {
        const match = /-g(\d+)-(\d+)$/.exec(body);
        if (match !== null) {
          const list = this.firstSeen.get(Number(match[1])) ?? [];
          list.push(Number(match[2]));
          this.firstSeen.set(Number(match[1]), list);
        }
      }
    }
    // In order: a group's next message is not handed out before this one is deleted anyway.
    for (const m of messages) {
      try {
        await this.sdk.send(
          new DeleteMessageCommand({ QueueUrl: this.queueUrl, ReceiptHandle: m.ReceiptHandle }),
          {
            abortSignal: AbortSignal.timeout(20_000),
          },
        );
        if (!this.deletedAt.has(m.MessageId ?? '')) this.deletedAt.set(m.MessageId ?? '', Date.now());
      } catch {
        // comes back after its visibility timeout
      }
    }
    return messages.length;
  }

  /** Receives until every acknowledged body was received and a receive comes back empty. */
  async drain(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const got = await this.receiveOnce(1);
      if (got === 0 && [...this.acked].every((b) => this.received.has(b))) return;
      if (Date.now() > deadline) return;
    }
  }

  /** MessageId → body, for the report's timelines. */
  bodyOf(id: string): string | undefined {
    return this.idBody.get(id);
  }
  private readonly idBody = new Map<string, string>();

  report(): {
    acked: number;
    lost: string[];
    unexpected: string[];
    resurrected: string[];
    outOfOrder: string[];
    duplicated: number;
  } {
    const lost = [...this.acked].filter((b) => !this.received.has(b));
    const unexpected = [...this.received.keys()].filter((b) => !this.attempted.has(b));
    const resurrected: string[] = [];
    for (const [id, at] of this.receivedById) {
      const del = this.deletedAt.get(id);
      if (del !== undefined && at.some((t) => t > del)) resurrected.push(id);
    }
    const outOfOrder: string[] = [];
    for (const [g, seqs] of this.firstSeen) {
      for (let i = 1; i < seqs.length; i++) {
        if ((seqs[i] ?? 0) <= (seqs[i - 1] ?? 0)) outOfOrder.push(`g${g}: ${seqs[i - 1]} then ${seqs[i]}`);
      }
    }
    const duplicated = [...this.received.values()].filter((n) => n > 1).length;
    return { acked: this.acked.size, lost, unexpected, resurrected, outOfOrder, duplicated };
  }

  close(): void {
    this.sdk.destroy();
  }
}

/** One process's view of the shards (GET /admin/shards; src/http/admin-shards.ts). */
export interface ShardsView {
  readonly instanceId: string;
  readonly shards: readonly {
    readonly shard: number;
    readonly owner: string | null;
    readonly here: { readonly state: string } | null;
    readonly queues: number;
  }[];
}

export async function shardsOf(node: Instance): Promise<ShardsView> {
  const res = await fetch(`${node.controlUrl}/admin/shards`, {
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    signal: AbortSignal.timeout(5000),
  });
  if (res.status !== 200)
    throw new Error(`${node.name} GET /admin/shards: ${res.status} ${await res.text()}`);
  return (await res.json()) as ShardsView;
}

/** POST /admin/shards/{shard}/move at `via`: pins the shard to member `to`; the answer's status. */
export async function moveShard(via: Instance, shard: number, to: string): Promise<number> {
  const res = await fetch(`${via.controlUrl}/admin/shards/${shard}/move`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ to }),
    signal: AbortSignal.timeout(5000),
  });
  await res.arrayBuffer();
  return res.status;
}
