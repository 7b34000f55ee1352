/**
 * The seed: what `--config FILE` names, tenants and queues to create at start, for setups that
 * ElasticMQ's and goaws' users write down once. The file (JSON or YAML, schema docs/config.schema.json) is read and
 * checked by src/seed-file.ts; this applies what it gives:
 *
 * ```yaml
 * tenants:
 *   - name: team-a
 *     accountId: "111111111111"
 *     keys: [{ accessKeyId: AKIATEAMA0000000001, secretAccessKey: "..." }]
 *     memoryShare: 0.25
 *     queues:
 *       - name: orders
 *         attributes:
 *           VisibilityTimeout: 60
 *           RedrivePolicy: { deadLetterTargetArn: orders-dlq, maxReceiveCount: 5 }
 *       - name: orders-dlq
 * queues:
 *   - { name: jobs, region: eu-west-1, tags: { env: dev } }
 * ```
 *
 * Top-level `queues` belong to the default account (`--account-id`) unless they name an
 * `accountId`; a queue's `region` defaults to `--region`. Applying is idempotent and additive: a
 * tenant that exists keeps its keys and gets the file's missing ones; a queue that exists is left
 * as it is (a warning when the file's attributes differ). A tenant's `memoryShare` (its share of
 * --max-memory, in (0, 1]) is set when the file gives one, over what the admin API set. It runs
 * whenever a store is (re)loaded, so after a restart or a failover what the file names exists
 * again, and what an operator added through the admin API stays.
 */
import { CoreError } from './core/errors.js';
import type { QueueStore } from './core/store.js';
import { TenantError } from './core/tenants.js';
import type { LogSink } from './log.js';

export interface SeedQueue {
  readonly name: string;
  readonly accountId: string;
  readonly region: string;
  /** As AWS takes them: strings, a RedrivePolicy naming its target by ARN. */
  readonly attributes: Readonly<Record<string, string>>;
  readonly tags: Readonly<Record<string, string>>;
}

export interface SeedTenant {
  readonly name: string;
  readonly accountId: string;
  readonly keys: readonly { readonly accessKeyId: string; readonly secretAccessKey: string }[];
  /** Its share of the memory budget, when the file gives one. */
  readonly memoryShare?: number;
}

export interface Seed {
  readonly tenants: readonly SeedTenant[];
  /** Every queue of the file, tenants' included, each dead-letter queue before its sources. */
  readonly queues: readonly SeedQueue[];
}

/** The file is unreadable, not of the schema's shape, or conflicts with the state; names the places. */
export class SeedError extends Error {
  override readonly name = 'SeedError';
  constructor(
    /** The file, or the whole message when there is no list of problems. */
    readonly where: string,
    /** One `path: reason` per problem. */
    readonly problems: readonly string[] = [],
  ) {
    super(problems.length === 0 ? where : `${where}: ${problems.join('; ')}`);
  }
}

/**
 * Creates what the seed names and the store lacks. Throws a SeedError for what can
 * never work (a bad name, an account id another tenant holds, a key another tenant holds).
 */
export function applySeed(store: QueueStore, seed: Seed, log: LogSink): void {
  const now = store.clock.now();
  for (const t of seed.tenants) {
    try {
      let tenant = store.tenants.get(t.name);
      if (tenant === undefined) {
        tenant = store.tenants.create(
          t.name,
          t.accountId,
          t.keys.map((k) => ({ ...k, createdAt: now })),
          now,
        );
        log.info({ tenant: t.name, accountId: t.accountId }, 'tenant created from --config');
      } else {
        if (tenant.accountId !== t.accountId) {
          throw new SeedError(
            `tenant ${t.name} exists with account ${tenant.accountId}, the config says ${t.accountId}`,
          );
        }
        for (const k of t.keys) {
          if (!tenant.keys.some((have) => have.accessKeyId === k.accessKeyId)) {
            store.tenants.addKey(tenant, { ...k, createdAt: now }, false);
          }
        }
      }
      if (t.memoryShare !== undefined && tenant.memoryShare !== t.memoryShare) {
        store.tenants.setMemoryShare(tenant, t.memoryShare);
      }
    } catch (e) {
      if (e instanceof TenantError) throw new SeedError(`--config: tenant ${t.name}: ${e.message}`);
      throw e;
    }
  }
  for (const q of seed.queues) createQueue(store, q, log);
}

function createQueue(store: QueueStore, q: SeedQueue, log: LogSink): void {
  const id = { accountId: q.accountId, region: q.region, name: q.name };
  const attributes =
    q.name.endsWith('.fifo') && q.attributes.FifoQueue === undefined
      ? { ...q.attributes, FifoQueue: 'true' }
      : q.attributes;
  try {
    const { created } = store.create(id, attributes, q.tags);
    if (created)
      log.info({ queue: q.name, accountId: id.accountId, region: id.region }, 'queue created from --config');
  } catch (e) {
    if (!(e instanceof CoreError)) throw e;
    if (e.code === 'QueueNameExists') {
      log.warn(
        { queue: q.name, accountId: id.accountId },
        'queue from --config exists with other attributes; left as it is',
      );
      return;
    }
    throw new SeedError(`--config: queue ${q.name} (account ${id.accountId}): ${e.message}`);
  }
}
