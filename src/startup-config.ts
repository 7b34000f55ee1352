/**
 * `--config FILE`: tenants and queues to create at start, for setups that ElasticMQ's and goaws'
 * users write down once. JSON (no YAML library is installed, and one is not worth adding for this):
 *
 * ```json
 * {
 *   "tenants": [
 *     {
 *       "name": "team-a",
 *       "accountId": "111111111111",
 *       "keys": [{ "accessKeyId": "AKIATEAMA0000000001", "secretAccessKey": "..." }],
 *       "memoryShare": 0.25,
 *       "queues": [{ "name": "orders", "attributes": { "VisibilityTimeout": "60" } }]
 *     }
 *   ],
 *   "queues": [{ "name": "jobs", "region": "eu-west-1", "tags": { "env": "dev" } }]
 * }
 * ```
 *
 * Top-level `queues` belong to the default account (`--account-id`) unless they name an
 * `accountId`; a queue's `region` defaults to `--region`. Applying is idempotent and additive: a
 * tenant that exists keeps its keys and gets the file's missing ones; a queue that exists is left
 * as it is (a warning when the file's attributes differ). A tenant's `memoryShare` (its share of
 * --max-memory, in (0, 1]) is set when the file gives one, over what the admin API set. It runs whenever a store is (re)loaded,
 * so after a restart or a failover what the file names exists again, and what an operator
 * added through the admin API stays.
 */
import { readFileSync } from 'node:fs';
import { isMemoryShare } from './core/budget.js';
import { CoreError } from './core/errors.js';
import type { QueueStore } from './core/store.js';
import { TenantError } from './core/tenants.js';
import type { LogSink } from './log.js';

export interface StartupQueue {
  readonly name: string;
  readonly accountId?: string;
  readonly region?: string;
  readonly attributes: Readonly<Record<string, string>>;
  readonly tags: Readonly<Record<string, string>>;
}

export interface StartupTenant {
  readonly name: string;
  readonly accountId: string;
  readonly keys: readonly { readonly accessKeyId: string; readonly secretAccessKey: string }[];
  readonly queues: readonly StartupQueue[];
  /** Its share of the memory budget, when the file gives one. */
  readonly memoryShare?: number;
}

export interface StartupConfig {
  readonly tenants: readonly StartupTenant[];
  readonly queues: readonly StartupQueue[];
}

/** The file is unreadable or not of the shape above; the message names the place. */
export class StartupConfigError extends Error {
  override readonly name = 'StartupConfigError';
}

export function loadStartupConfig(path: string): StartupConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new StartupConfigError(`--config ${path}: ${(e as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new StartupConfigError(`--config ${path}: not JSON (${(e as Error).message})`);
  }
  return parseStartupConfig(raw, `--config ${path}`);
}

export function parseStartupConfig(raw: unknown, where = 'config'): StartupConfig {
  const top = object(raw, where);
  allowOnly(top, ['tenants', 'queues'], where);
  const tenants = array(top['tenants'] ?? [], `${where}: tenants`).map((t, i) =>
    tenant(t, `${where}: tenants[${i}]`),
  );
  const queues = array(top['queues'] ?? [], `${where}: queues`).map((q, i) =>
    queue(q, `${where}: queues[${i}]`, true),
  );
  return { tenants, queues };
}

function tenant(raw: unknown, where: string): StartupTenant {
  const o = object(raw, where);
  allowOnly(o, ['name', 'accountId', 'keys', 'queues', 'memoryShare'], where);
  const memoryShare = o['memoryShare'];
  if (memoryShare !== undefined && !isMemoryShare(memoryShare)) {
    throw new StartupConfigError(`${where}.memoryShare: a fraction of --max-memory, above 0 and at most 1`);
  }
  const keys = array(o['keys'], `${where}.keys`).map((k, i) => {
    const ko = object(k, `${where}.keys[${i}]`);
    allowOnly(ko, ['accessKeyId', 'secretAccessKey'], `${where}.keys[${i}]`);
    return {
      accessKeyId: string(ko['accessKeyId'], `${where}.keys[${i}].accessKeyId`),
      secretAccessKey: string(ko['secretAccessKey'], `${where}.keys[${i}].secretAccessKey`),
    };
  });
  if (keys.length === 0) throw new StartupConfigError(`${where}.keys: a tenant needs at least one key`);
  return {
    name: string(o['name'], `${where}.name`),
    accountId: string(o['accountId'], `${where}.accountId`),
    keys,
    queues: array(o['queues'] ?? [], `${where}.queues`).map((q, i) =>
      queue(q, `${where}.queues[${i}]`, false),
    ),
    ...(memoryShare === undefined ? {} : { memoryShare }),
  };
}

function queue(raw: unknown, where: string, mayNameAccount: boolean): StartupQueue {
  const o = object(raw, where);
  allowOnly(
    o,
    mayNameAccount
      ? ['name', 'accountId', 'region', 'attributes', 'tags']
      : ['name', 'region', 'attributes', 'tags'],
    where,
  );
  const accountId = o['accountId'] === undefined ? undefined : string(o['accountId'], `${where}.accountId`);
  const region = o['region'] === undefined ? undefined : string(o['region'], `${where}.region`);
  return {
    name: string(o['name'], `${where}.name`),
    ...(accountId === undefined ? {} : { accountId }),
    ...(region === undefined ? {} : { region }),
    attributes: stringMap(o['attributes'] ?? {}, `${where}.attributes`),
    tags: stringMap(o['tags'] ?? {}, `${where}.tags`),
  };
}

/**
 * Creates what the config names and the store lacks. Throws a StartupConfigError for what can
 * never work (a bad name, an account id another tenant holds, a key another tenant holds).
 */
export function applyStartupConfig(
  store: QueueStore,
  config: StartupConfig,
  defaults: { readonly accountId: string; readonly region: string },
  log: LogSink,
): void {
  const now = store.clock.now();
  for (const t of config.tenants) {
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
          throw new StartupConfigError(
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
      if (e instanceof TenantError) throw new StartupConfigError(`--config: tenant ${t.name}: ${e.message}`);
      throw e;
    }
    for (const q of t.queues) createQueue(store, { ...q, accountId: t.accountId }, defaults, log);
  }
  for (const q of config.queues) createQueue(store, q, defaults, log);
}

function createQueue(
  store: QueueStore,
  q: StartupQueue,
  defaults: { readonly accountId: string; readonly region: string },
  log: LogSink,
): void {
  const id = {
    accountId: q.accountId ?? defaults.accountId,
    region: q.region ?? defaults.region,
    name: q.name,
  };
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
    throw new StartupConfigError(`--config: queue ${q.name} (account ${id.accountId}): ${e.message}`);
  }
}

// ---- shape checks ----------------------------------------------------------------------------

function object(v: unknown, where: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new StartupConfigError(`${where}: expected an object`);
  return v as Record<string, unknown>;
}

function array(v: unknown, where: string): unknown[] {
  if (!Array.isArray(v)) throw new StartupConfigError(`${where}: expected a list`);
  return v;
}

function string(v: unknown, where: string): string {
  if (typeof v !== 'string' || v === '')
    throw new StartupConfigError(`${where}: expected a non-empty string`);
  return v;
}

function stringMap(v: unknown, where: string): Record<string, string> {
  const o = object(v, where);
  const out: Record<string, string> = {};
  for (const [k, value] of Object.entries(o)) {
    if (typeof value === 'number' || typeof value === 'boolean') out[k] = String(value);
    else if (typeof value === 'string') out[k] = value;
    else throw new StartupConfigError(`${where}.${k}: expected a string`);
  }
  return out;
}

function allowOnly(o: Record<string, unknown>, names: readonly string[], where: string): void {
  for (const k of Object.keys(o)) {
    if (!names.includes(k))
      throw new StartupConfigError(
        `${where}: unknown field ${JSON.stringify(k)} (known: ${names.join(', ')})`,
      );
  }
}
