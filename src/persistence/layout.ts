/**
 * Redis layout v2: the keys of each of the 256 shards under the shard's own hash tag, and the
 * global ones under the meta tag (src/shard/tags.ts). Every Lua script touches the keys of one
 * tag only, so each runs unchanged on a Redis Cluster node. Layout v1 (keys.ts: everything under
 * one `{ssq}` tag) is read only to migrate it (migrate.ts).
 *
 * Shard `s`, prefix `<ns>{ssq:sNNN:x}:` (`<ns>` below):
 *
 * | key                | type   | holds                                                         |
 * |--------------------|--------|---------------------------------------------------------------|
 * | `queues`, `seq`    | hash   | queue uid → record / next message sequence number (as v1)     |
 * | `m:`, `d:`, `a:<uid>` | hash | a queue's messages, FIFO dedup and receive-attempt records (as v1) |
 * | `tasks`            | hash   | move task id → record, for tasks whose source is in the shard |
 * | `commit`           | string | the shard writer's chain (writer.ts)                          |
 * | `lease`            | string | the shard's lease: the token its writes fence on (src/ha)     |
 * | `epoch`, `lease:info` | string, hash | the lease's epoch counter and status (as the v1 leader lock) |
 *
 * Meta, prefix `<ns>{ssq:meta}:`:
 *
 * | key                     | type   | holds                                                   |
 * |-------------------------|--------|---------------------------------------------------------|
 * | `layout`                | hash   | `version` (2) and `shards` (256): never changed once set |
 * | `tenants`               | hash   | tenant name → record with its keys (codec.ts)           |
 * | `cat:<account>:<region>`| hash   | queue name → directory record (catalog.ts): the catalog |
 * | `catalogs`              | hash   | `<account>:<region>` → '1' for every catalog hash written: |
 * |                         |        | how a reader finds them all, on a Cluster too (no SCAN)  |
 * | `catalog-feed`          | channel| PUBLISHed `<account>:<region>:<name>` lines, one message |
 * |                         |        | per meta write that changed catalog records (writer.ts)  |
 * | `tenants-feed`          | channel| many owners: PUBLISHed tenant names, one a line, after   |
 * |                         |        | each meta write of tenants (tenants-mirror.ts re-reads)  |
 * | `leader`, `epoch`, `leader:info` | | the leader lock of --leader-election (src/ha/lock.ts) |
 * | `commit`                | string | the meta writer's chain                                 |
 * | `migration`             | hash   | progress of a v1 → v2 migration (migrate.ts)            |
 * | `members`               | hash   | instance id → member record (src/owners/members.ts)     |
 * | `member:<id>`           | string | the same record, with a TTL its heartbeat renews: live  |
 * | `owners`                | hash   | the shard map: shard → owner id, and `version` (src/owners/shard-map.ts) |
 * | `pins`                  | hash   | shard → the owner an admin pinned it to                 |
 * | `coordinator`, `coordinator:info` | | the coordinator's lock (src/owners/coordinator.ts), epoch from `epoch` |
 *
 * Channels (no slot; prefixed like the keys so that two deployments keep apart): `members:changed`
 * (a join, leave, expiry or pin: `<kind> <id or shard>`), `owners:changed` (the map's new
 * version), `coordinator:released` (a released coordinator token).
 *
 * `<ns>` is what `--redis-prefix` adds around the tags: nothing for the default `{ssq}:`, else the
 * prefix without its braces (`{app1}:` → `app1:`), so that two deployments sharing a Redis keep
 * apart while the slot of every key is still the shard's (Redis hashes the first `{...}` only).
 */
import { SHARD_COUNT } from '../shard/hash.js';
import { META_TAG, SHARD_TAGS } from '../shard/tags.js';
import { DEFAULT_PREFIX, keysFor, type Keys } from './keys.js';

export const LAYOUT_V2 = 2;

/** One shard's keys. `Keys` so that the v1 code (apply, init, loader, lock) works on it unchanged. */
export interface ShardKeys extends Keys {
  readonly shard: number;
  /** The lease the shard's writes fence on; `lock` is the same key. */
  readonly lease: string;
}

export interface MetaKeys extends Keys {
  /** The catalog of one account's queues in one region: name → directory record. */
  catalog(accountId: string, region: string): string;
  /** Every catalog hash ever written, as `<account>:<region>` fields (see catalogScope). */
  readonly catalogIndex: string;
  /** The pub/sub channel of catalog changes: `<account>:<region>:<name>` lines (see catalogChange). */
  readonly catalogFeed: string;
  /** The pub/sub channel of tenant changes (many owners): the names written, one a line. */
  readonly tenantsFeed: string;
  readonly migration: string;
  /** Instance id → its member record; pruned of the ids whose `member(id)` key expired. */
  readonly members: string;
  /** An instance's liveness: its record, with a TTL its heartbeat renews. */
  member(id: string): string;
  /** Channel: a member joined, left, expired, or a pin changed. */
  readonly membersChannel: string;
  /** The shard map: field `version`, and field `<shard>` (decimal) → owner id. */
  readonly owners: string;
  /** Channel: the map's new version, published by the write that made it. */
  readonly ownersChannel: string;
  /** Shard (decimal) → the owner an admin pinned it to. */
  readonly pins: string;
  /** The coordinator's lock; `lockKeys({ ...meta, lock: coordinator })` names its info and channel. */
  readonly coordinator: string;
}

export interface Layout {
  /** What `--redis-prefix` adds before every tag. */
  readonly namespace: string;
  readonly meta: MetaKeys;
  /** Indexed by shard number, 0..255. */
  readonly shards: readonly ShardKeys[];
  /** Where layout v1 keeps its keys for the same prefix (migrated from at start). */
  readonly v1: Keys;
}

/** `{ssq}:` → '', `{app1}:` → `app1:`, `x{y}:` → `xy:`. */
export function namespaceOf(prefix: string): string {
  return prefix === DEFAULT_PREFIX ? '' : prefix.replace(/[{}]/g, '');
}

export function layoutFor(prefix: string = DEFAULT_PREFIX): Layout {
  const namespace = namespaceOf(prefix);
  const metaPrefix = `${namespace}{${META_TAG}}:`;
  const metaBase = keysFor(metaPrefix);
  const meta: MetaKeys = {
    ...metaBase,
    catalog: (accountId, region) => `${metaPrefix}cat:${accountId}:${region}`,
    catalogIndex: `${metaPrefix}catalogs`,
    catalogFeed: `${metaPrefix}catalog-feed`,
    tenantsFeed: `${metaPrefix}tenants-feed`,
    migration: `${metaPrefix}migration`,
    members: `${metaPrefix}members`,
    member: (id) => `${metaPrefix}member:${id}`,
    membersChannel: `${metaPrefix}members:changed`,
    owners: `${metaPrefix}owners`,
    ownersChannel: `${metaPrefix}owners:changed`,
    pins: `${metaPrefix}pins`,
    coordinator: `${metaPrefix}coordinator`,
  };
  const shards: ShardKeys[] = [];
  for (let s = 0; s < SHARD_COUNT; s++) {
    const p = `${namespace}{${SHARD_TAGS[s] as string}}:`;
    shards.push({ ...keysFor(p, `${p}lease`), shard: s, lease: `${p}lease` });
  }
  return { namespace, meta, shards, v1: keysFor(prefix) };
}

/** A field of the catalog index: the account and region of one catalog hash. */
export function catalogScope(accountId: string, region: string): string {
  return `${accountId}:${region}`;
}

/** A catalog index field back into its parts; undefined for one this version did not write. */
export function parseCatalogScope(field: string): { accountId: string; region: string } | undefined {
  // An account id is 12 digits and a region has no ':', so the first ':' splits them.
  const i = field.indexOf(':');
  if (i <= 0 || i === field.length - 1 || field.includes(':', i + 1)) return undefined;
  return { accountId: field.slice(0, i), region: field.slice(i + 1) };
}

/** One line of a catalog-feed message: the queue name whose record changed. */
export function catalogChange(accountId: string, region: string, name: string): string {
  return `${accountId}:${region}:${name}`;
}

/** A catalog-feed message back into the names it announces; lines of another form are skipped. */
export function parseCatalogChanges(message: string): { accountId: string; region: string; name: string }[] {
  const out: { accountId: string; region: string; name: string }[] = [];
  for (const line of message.split('\n')) {
    // Queue names have no ':' either (A-Za-z0-9_- and .fifo).
    const parts = line.split(':');
    if (parts.length !== 3 || parts.some((p) => p === '')) continue;
    const [accountId, region, name] = parts as [string, string, string];
    out.push({ accountId, region, name });
  }
  return out;
}
