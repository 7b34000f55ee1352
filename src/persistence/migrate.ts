/**
 * Layout 1 → layout 2: every queue's keys from the one `{ssq}` tag to its shard's tag, the move
 * tasks to their source queue's shard, the tenants to the meta keys (layout.ts). Run at start when
 * loadMeta (loader.ts) answers 'needs-migration', before anything is served; then loadMeta again.
 *
 * Safe to stop at any point (kill -9 included) and to run again, which finishes the job:
 *
 * 1. Fence layout 1 (scripts/v1-fence-4.lua, one script on its tag): its `layout` becomes '2', its
 *    leader lock and `commit` a marker with no TTL. An older release still running is refused from
 *    then on: with leader election its fenced writes fail and its elector can never take the lock
 *    again; without, its next chained write is out of chain and its reload refuses layout 2. So the
 *    layout 1 data is frozen, and copying it again gives the same keys.
 * 2. Copy each queue (record, `seq`, messages, FIFO `d:`/`a:` hashes) into its shard's keys, the
 *    messages in chunks (HSCAN, byte for byte), through the apply script with the shard's keys and
 *    `opts.token`: a migrator whose shard leases were taken over is fenced like any shard writer.
 *    A queue done is recorded in the meta `migration` hash (`q:<uid>` → its message count) and
 *    skipped by a later run; one stopped halfway is copied again (HSET of the same values).
 *    Then the move tasks, to the shard of their source queue, and the tenants.
 * 3. Stamp the meta `layout` {version 2, shards 256}: from here layout 2 is what there is.
 * 4. Delete layout 1's data keys (UNLINK). The fence markers stay for good, so an older release
 *    started later still refuses. A run that finds the stamp goes straight to this step.
 *
 * {@link MigrationProgress} is readable while it runs (for /metrics); the log gets a line at the
 * start, every few seconds and at the end.
 */
import type { LogSink } from '../log.js';
import { quietLog } from '../log.js';
import { shardOf } from '../shard/hash.js';
import { CodecError, deserializeMoveTask } from './codec.js';
import type { Keys } from './keys.js';
import type { Layout, ShardKeys } from './layout.js';
import { taskShard } from './load-records.js';
import { fenceV1, LayoutError, metaLayout } from './loader.js';
import type { RedisClient } from './redis.js';
import { FencedError, ScriptCode, scripts, type ScriptArg } from './scripts.js';

export type MigrationPhase = 'fencing' | 'copying' | 'stamping' | 'deleting' | 'done';

/** How far a migration got; read by the log and /metrics while it runs. */
export class MigrationProgress {
  phase: MigrationPhase = 'fencing';
  /** Queues copied, those an earlier, stopped run had copied included. */
  queues = 0;
  queuesTotal = 0;
  /** Of {@link queues}, those an earlier run had copied. */
  resumed = 0;
  /** Messages copied (those of queues an earlier run copied included). */
  messages = 0;
  messagesTotal = 0;
  /** Bytes of message records copied by this run. */
  bytes = 0;
  tasks = 0;
  tenants = 0;
  readonly startedAt = performance.now();

  get seconds(): number {
    return (performance.now() - this.startedAt) / 1000;
  }
}

/** A point the migration passed; see {@link MigrateOptions.onStep}. */
export type MigrationStep =
  | { readonly kind: 'fenced' }
  /** A chunk of a queue's hash was written to its shard (the queue is not done yet). */
  | { readonly kind: 'chunk'; readonly uid: string }
  /** A queue was copied and recorded as done. */
  | { readonly kind: 'queue'; readonly uid: string }
  /** Everything was copied, move tasks and tenants included; not stamped yet. */
  | { readonly kind: 'copied' }
  | { readonly kind: 'stamped' }
  | { readonly kind: 'deleted' };

export interface MigrateOptions {
  /** The token the shards' leases hold; '' or absent: no leader election (writes unfenced). */
  readonly token?: string | undefined;
  /** The token the meta leader lock holds (the tenants, the progress, the stamp); '' or absent: unfenced. */
  readonly metaToken?: string | undefined;
  readonly log?: LogSink | undefined;
  /** Updated as the migration goes on. */
  readonly progress?: MigrationProgress | undefined;
  /** Messages per write at most; default 1000. */
  readonly chunk?: number | undefined;
  /** Bytes of records per write, about; default 4 MiB. */
  readonly chunkBytes?: number | undefined;
  /** How often the log gets a progress line; default 5 s. */
  readonly logEveryMs?: number | undefined;
  /**
   * Called at each step and awaited: the migration goes on once it resolves (and stops with its
   * rejection). The kill -9 tests hold a migration at an exact point this way.
   */
  readonly onStep?: ((step: MigrationStep, progress: MigrationProgress) => void | Promise<void>) | undefined;
}

export interface MigrationResult {
  /** Queues in layout 1 (copied by this run or an earlier one). */
  readonly queues: number;
  /** Of those, copied by an earlier run. */
  readonly resumed: number;
  readonly messages: number;
  readonly tasks: number;
  readonly tenants: number;
  /** Layout 1 keys deleted by this run. */
  readonly deleted: number;
  readonly ms: number;
}

/** Field of the meta `migration` hash recording a queue copied: its message count. */
const DONE = 'q:';

/** Keys of layout 1 deleted per UNLINK. */
const UNLINK_BATCH = 300;

export async function migrateV1(
  redis: RedisClient,
  layout: Layout,
  opts: MigrateOptions = {},
): Promise<MigrationResult> {
  return new Migration(redis, layout, opts).run();
}

class Migration {
  private readonly progress: MigrationProgress;
  private readonly log: LogSink;
  private readonly token: string;
  private readonly metaToken: string;
  private readonly maxChunk: number;
  private readonly chunkBytes: number;
  private calls = 0;
  /** Mean bytes of the records read so far, to size the next HSCAN; a guess before the first. */
  private recordBytes = 0;
  private records = 0;

  constructor(
    private readonly redis: RedisClient,
    private readonly layout: Layout,
    private readonly opts: MigrateOptions,
  ) {
    this.progress = opts.progress ?? new MigrationProgress();
    this.log = opts.log ?? quietLog;
    this.token = opts.token ?? '';
    this.metaToken = opts.metaToken ?? '';
    this.maxChunk = opts.chunk ?? 1000;
    this.chunkBytes = opts.chunkBytes ?? 4 * 1024 * 1024;
  }

  async run(): Promise<MigrationResult> {
    const { layout, progress, log } = this;
    const started = performance.now();
    progress.phase = 'fencing';
    const v1 = await fenceV1(this.redis, layout.v1, 'fence');
    await this.step({ kind: 'fenced' });
    const stamped = (await metaLayout(this.redis, layout, this.metaToken, false)) === 'stamped';
    if (stamped && v1 === 'migrating') {
      throw new LayoutError(
        `Redis holds layout 1 data under ${layout.v1.prefix} beside a layout 2 stamp at ` +
          `${layout.meta.layout}: an older shared-sqs wrote it after the migration; it is fenced ` +
          'now, but neither copy can be trusted to hold everything: remove one of the two',
      );
    }
    const timer = setInterval(() => {
      log.info(
        {
          phase: progress.phase,
          queues: `${progress.queues}/${progress.queuesTotal}`,
          messages: `${progress.messages}/${progress.messagesTotal}`,
          mib: Math.round(progress.bytes / 2 ** 20),
          seconds: Math.round(progress.seconds),
        },
        'migration of Redis layout 1 to layout 2 under way',
      );
    }, this.opts.logEveryMs ?? 5000);
    timer.unref();
    let deleted: number;
    try {
      if (stamped) {
        await this.copiedBefore();
        log.info({}, 'Redis layout 2 is stamped already: deleting what is left of layout 1');
      } else {
        await this.copy();
        progress.phase = 'stamping';
        await metaLayout(this.redis, layout, this.metaToken, true);
        await this.step({ kind: 'stamped' });
      }
      progress.phase = 'deleting';
      deleted = await this.deleteV1();
      progress.phase = 'done';
      await this.step({ kind: 'deleted' });
    } finally {
      clearInterval(timer);
    }
    const result: MigrationResult = {
      queues: progress.queuesTotal,
      resumed: progress.resumed,
      messages: progress.messages,
      tasks: progress.tasks,
      tenants: progress.tenants,
      deleted,
      ms: performance.now() - started,
    };
    log.info(
      { ...result, ms: Math.round(result.ms) },
      stamped
        ? 'Redis layout 1 keys left by a stopped migration deleted'
        : 'Redis layout 1 migrated to layout 2',
    );
    return result;
  }

  /** A run that finds the stamp reports what the run that copied recorded. */
  private async copiedBefore(): Promise<void> {
    const m = await this.redis.hgetall(this.layout.meta.migration);
    const p = this.progress;
    p.queues = p.queuesTotal = p.resumed = Number(m['queues'] ?? 0);
    p.messages = p.messagesTotal = Number(m['messages'] ?? 0);
    p.tasks = Number(m['tasks'] ?? 0);
    p.tenants = Number(m['tenants'] ?? 0);
  }

  private async step(s: MigrationStep): Promise<void> {
    await this.opts.onStep?.(s, this.progress);
  }

  private async copy(): Promise<void> {
    const { redis, progress } = this;
    const v1 = this.layout.v1;
    const meta = this.layout.meta;
    progress.phase = 'copying';
    const [records, seqs, done] = await Promise.all([
      redis.hgetall(v1.queues),
      redis.hgetall(v1.seq),
      redis.hgetall(meta.migration),
    ]);
    // Sorted: a run stopped and started again goes through the queues in the same order.
    const uids = Object.keys(records).sort();
    const counts = await hashLengths(
      redis,
      uids.map((uid) => v1.messages(uid)),
    );
    progress.queuesTotal = uids.length;
    progress.messagesTotal = counts.reduce((a, b) => a + b, 0);
    for (const uid of uids) {
      const copied = done[DONE + uid];
      if (copied === undefined) continue;
      progress.queues++;
      progress.resumed++;
      progress.messages += Number(copied);
    }
    this.log.info(
      { queues: uids.length, messages: progress.messagesTotal, resumed: progress.resumed },
      progress.resumed > 0
        ? 'resuming the migration of Redis layout 1 to layout 2'
        : 'migrating Redis layout 1 to layout 2',
    );

    for (const [i, uid] of uids.entries()) {
      if (done[DONE + uid] !== undefined) continue;
      const record = records[uid] as string;
      const id = queueIdentity(record, `queue ${uid} in ${v1.queues}`);
      const shard = this.layout.shards[shardOf(id.accountId, id.region, id.name)] as ShardKeys;
      const before = progress.messages;
      await this.copyHash(v1.messages(uid), `m:${uid}`, shard, uid, true);
      await this.copyHash(v1.dedup(uid), `d:${uid}`, shard, uid, false);
      await this.copyHash(v1.attempts(uid), `a:${uid}`, shard, uid, false);
      // The record last: a queue stopped halfway has no record in its shard yet. Its `seq` only if
      // layout 1 had one (M with no messages writes just that).
      const ops: ScriptArg[] = ['Q', uid, record];
      const seq = seqs[uid];
      if (seq !== undefined) ops.push('M', uid, seq, '0');
      await this.apply(shard, ops);
      // HSCAN may return an entry twice: the queue's count is its HLEN.
      const count = counts[i] ?? 0;
      progress.messages = before + count;
      await this.applyMeta(['S', 'migration', '1', DONE + uid, String(count)]);
      progress.queues++;
      await this.step({ kind: 'queue', uid });
    }

    const byShard = new Map<number, string[]>();
    for (const [taskId, record] of Object.entries(await redis.hgetall(v1.tasks))) {
      const where = `move task ${taskId} in ${v1.tasks}`;
      let sourceArn;
      try {
        sourceArn = deserializeMoveTask(record).sourceArn;
      } catch (e) {
        throw e instanceof CodecError ? new CodecError(`${where}: ${e.message}`) : e;
      }
      const shard = taskShard(sourceArn);
      if (shard === undefined) throw new CodecError(`${where}: its source ${sourceArn} is not a queue ARN`);
      const fields = byShard.get(shard) ?? [];
      fields.push(taskId, record);
      byShard.set(shard, fields);
      progress.tasks++;
    }
    for (const [shard, fields] of byShard) {
      await this.apply(this.layout.shards[shard] as ShardKeys, [
        'S',
        'tasks',
        String(fields.length / 2),
        ...fields,
      ]);
    }

    const tenants = Object.entries(await redis.hgetall(v1.tenants)).flat();
    progress.tenants = tenants.length / 2;
    if (tenants.length > 0) await this.applyMeta(['S', 'tenants', String(tenants.length / 2), ...tenants]);
    await this.applyMeta([
      'S',
      'migration',
      '4',
      'queues',
      String(progress.queuesTotal),
      'messages',
      String(progress.messages),
      'tasks',
      String(progress.tasks),
      'tenants',
      String(progress.tenants),
    ]);
    await this.step({ kind: 'copied' });
  }

  /**
   * Copies a layout 1 hash into the shard's `<prefix><to>`, byte for byte (Buffers: a record is
   * never decoded), in writes of at most `chunk` entries and about `chunkBytes`. `messages`: count
   * the entries in the progress.
   */
  private async copyHash(
    from: string,
    to: string,
    shard: ShardKeys,
    uid: string,
    messages: boolean,
  ): Promise<void> {
    let batch: Buffer[] = [];
    let batchBytes = 0;
    const flush = async (): Promise<void> => {
      if (batch.length === 0) return;
      const ops: ScriptArg[] = ['S', to, String(batch.length / 2)];
      for (const b of batch) ops.push(b);
      await this.apply(shard, ops);
      if (messages) {
        this.progress.messages += batch.length / 2;
        this.progress.bytes += batchBytes;
      }
      batch = [];
      batchBytes = 0;
      await this.step({ kind: 'chunk', uid });
    };
    let cursor = '0';
    do {
      const mean = this.records > 0 ? this.recordBytes / this.records : 1024;
      const count = Math.max(1, Math.min(this.maxChunk, Math.floor(this.chunkBytes / Math.max(mean, 1))));
      const [next, flat] = await this.redis.hscanBuffer(from, cursor, 'COUNT', count);
      for (let i = 0; i + 1 < flat.length; i += 2) {
        const field = flat[i] as Buffer;
        const value = flat[i + 1] as Buffer;
        batch.push(field, value);
        batchBytes += value.length;
        this.recordBytes += value.length;
        this.records++;
        if (batch.length / 2 >= this.maxChunk || batchBytes >= this.chunkBytes) await flush();
      }
      cursor = next.toString();
    } while (cursor !== '0');
    await flush();
  }

  /** One apply call on a shard's keys, fenced on its lease; any refusal stops the migration. */
  private async apply(keys: ShardKeys | Keys, ops: ScriptArg[], token = this.token): Promise<void> {
    const args: ScriptArg[] = [token, keys.prefix, '', `migrate:${process.pid}:${++this.calls}`];
    for (const op of ops) args.push(op);
    const r = await scripts.apply.run(this.redis, [keys.lock, keys.queues, keys.seq, keys.commit], args);
    if (r === ScriptCode.FENCED) throw new FencedError();
    if (r !== ScriptCode.OK)
      throw new Error(`migration: a write to ${keys.prefix} was refused (${String(r)})`);
  }

  /** One apply call on the meta keys, fenced on the meta leader lock. */
  private applyMeta(ops: ScriptArg[]): Promise<void> {
    return this.apply(this.layout.meta, ops, this.metaToken);
  }

  /** Step 4: layout 1's per-queue keys, then the hashes that list them (so a rerun finds them). */
  private async deleteV1(): Promise<number> {
    const v1 = this.layout.v1;
    const uids = await this.redis.hkeys(v1.queues);
    let deleted = 0;
    let batch: string[] = [];
    for (const uid of uids) {
      batch.push(v1.messages(uid), v1.dedup(uid), v1.attempts(uid));
      if (batch.length >= UNLINK_BATCH) {
        deleted += await this.redis.unlink(...batch);
        batch = [];
      }
    }
    if (batch.length > 0) deleted += await this.redis.unlink(...batch);
    deleted += await this.redis.unlink(v1.queues, v1.seq, v1.tasks, v1.tenants);
    return deleted;
  }
}

/** HLEN of each hash, in pipelines of a few hundred. */
async function hashLengths(redis: RedisClient, keys: string[]): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < keys.length; i += 256) {
    const p = redis.pipeline();
    for (const key of keys.slice(i, i + 256)) p.hlen(key);
    for (const [err, n] of (await p.exec()) ?? []) {
      if (err !== null) throw err;
      out.push(n as number);
    }
  }
  return out;
}

/** What a queue record says the queue is: all the migration needs of it (codec.ts has the rest). */
function queueIdentity(record: string, where: string): { accountId: string; region: string; name: string } {
  let r: unknown;
  try {
    r = JSON.parse(record);
  } catch {
    throw new CodecError(`${where}: not JSON`);
  }
  const { accountId, region, name } = (typeof r === 'object' && r !== null ? r : {}) as Record<
    string,
    unknown
  >;
  if (typeof accountId !== 'string' || typeof region !== 'string' || typeof name !== 'string') {
    throw new CodecError(`${where}: lacks accountId, region or name`);
  }
  return { accountId, region, name };
}
