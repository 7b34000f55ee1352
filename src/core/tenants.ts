import { isMemoryShare } from './budget.js';
import type { ChangeEvent } from './events.js';

/** One access key pair of a tenant. The secret is kept as given: SigV4 needs it to verify. */
export interface AccessKey {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly createdAt: number;
}

/**
 * A tenant: a team with its own account id (12 digits, in its queue URLs and ARNs) and one or
 * more key pairs. Its queues are the store's queues of that account id. Tenants live in the store
 * beside the queues, so that they are loaded, replaced and written through with them.
 */
export class Tenant {
  keys: AccessKey[];
  /** Its share of the memory budget, a fraction in (0, 1] (budget.ts); undefined: no limit of its own. */
  memoryShare: number | undefined = undefined;

  constructor(
    readonly name: string,
    readonly accountId: string,
    keys: readonly AccessKey[],
    readonly createdAt: number,
  ) {
    this.keys = [...keys];
  }
}

/** Why a tenant change was refused: the admin API answers 400, 409 or 404 for these. */
export class TenantError extends Error {
  constructor(
    readonly code: 'invalid' | 'exists' | 'not-found',
    message: string,
  ) {
    super(message);
    this.name = 'TenantError';
  }
}

const TENANT_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const ACCOUNT_ID = /^\d{12}$/;
/** AWS's own ids are 16-128 of [A-Z0-9]; imported keys (a config file) may be any such word. */
const ACCESS_KEY_ID = /^[A-Za-z0-9_+=,.@-]{3,128}$/;

/**
 * The tenants and their keys, indexed by name, account id and access key id. Synchronous, no I/O,
 * no clock of its own (callers pass `now`) and no randomness: keys are generated outside core.
 * Every change is reported through `emit` (tenant-put, tenant-delete) for the Redis writer.
 */
export class Tenants {
  private readonly byName = new Map<string, Tenant>();
  private readonly byAccount = new Map<string, Tenant>();
  private readonly byKey = new Map<string, { tenant: Tenant; key: AccessKey }>();

  constructor(private readonly emit: (e: ChangeEvent) => void) {}

  get size(): number {
    return this.byName.size;
  }

  /** Sorted by name. */
  list(): Tenant[] {
    return [...this.byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  get(name: string): Tenant | undefined {
    return this.byName.get(name);
  }

  byAccountId(accountId: string): Tenant | undefined {
    return this.byAccount.get(accountId);
  }

  /** The tenant and key an access key id belongs to: the hot path of every signed request. */
  byAccessKeyId(accessKeyId: string): { tenant: Tenant; key: AccessKey } | undefined {
    return this.byKey.get(accessKeyId);
  }

  create(name: string, accountId: string, keys: readonly AccessKey[], now: number): Tenant {
    if (!TENANT_NAME.test(name)) {
      throw new TenantError(
        'invalid',
        'A tenant name is 1-64 of letters, digits, "_", "." and "-", starting with a letter or digit.',
      );
    }
    if (!ACCOUNT_ID.test(accountId)) {
      throw new TenantError('invalid', 'An account id is exactly 12 digits.');
    }
    if (this.byName.has(name)) throw new TenantError('exists', `A tenant named ${name} exists.`);
    const owner = this.byAccount.get(accountId);
    if (owner !== undefined) {
      throw new TenantError('exists', `Account ${accountId} belongs to tenant ${owner.name}.`);
    }
    this.checkNewKeys(keys);
    const tenant = new Tenant(name, accountId, keys, now);
    this.index(tenant);
    this.emit({ type: 'tenant-put', tenant });
    return tenant;
  }

  /** Adds a key pair; with `replace`, the tenant's other keys are removed (a rotation). */
  addKey(tenant: Tenant, key: AccessKey, replace: boolean): void {
    this.checkNewKeys([key]);
    if (replace) {
      for (const old of tenant.keys) this.byKey.delete(old.accessKeyId);
      tenant.keys = [];
    }
    tenant.keys.push(key);
    this.byKey.set(key.accessKeyId, { tenant, key });
    this.emit({ type: 'tenant-put', tenant });
  }

  /** Removes one key; a tenant keeps at least one. */
  removeKey(tenant: Tenant, accessKeyId: string): void {
    const at = tenant.keys.findIndex((k) => k.accessKeyId === accessKeyId);
    if (at < 0) throw new TenantError('not-found', `Tenant ${tenant.name} has no key ${accessKeyId}.`);
    if (tenant.keys.length === 1) {
      throw new TenantError('invalid', 'A tenant keeps at least one key: add another first.');
    }
    tenant.keys.splice(at, 1);
    this.byKey.delete(accessKeyId);
    this.emit({ type: 'tenant-put', tenant });
  }

  /** Sets or (undefined) clears the tenant's share of the memory budget. */
  setMemoryShare(tenant: Tenant, share: number | undefined): void {
    if (share !== undefined && !isMemoryShare(share)) {
      throw new TenantError(
        'invalid',
        'A memoryShare is a fraction of the memory budget, above 0 and at most 1.',
      );
    }
    tenant.memoryShare = share;
    this.emit({ type: 'tenant-put', tenant });
  }

  delete(tenant: Tenant): void {
    if (this.byName.get(tenant.name) !== tenant) return;
    this.byName.delete(tenant.name);
    this.byAccount.delete(tenant.accountId);
    for (const k of tenant.keys) this.byKey.delete(k.accessKeyId);
    this.emit({ type: 'tenant-delete', tenant });
  }

  /** Puts back a tenant read from storage, as it was; emits nothing. */
  restore(tenant: Tenant): void {
    const old = this.byName.get(tenant.name);
    if (old !== undefined) {
      this.byAccount.delete(old.accountId);
      for (const k of old.keys) this.byKey.delete(k.accessKeyId);
    }
    this.index(tenant);
  }

  /**
   * Makes the tenants exactly `tenants`, as read from storage where another process changed them
   * (src/persistence/tenants-mirror.ts); emits nothing. Indexed afresh rather than patched, so a
   * key that moved from one tenant to another cannot be dropped with its old tenant.
   */
  replaceAll(tenants: readonly Tenant[]): void {
    this.byName.clear();
    this.byAccount.clear();
    this.byKey.clear();
    for (const t of tenants) this.index(t);
  }

  private index(tenant: Tenant): void {
    this.byName.set(tenant.name, tenant);
    this.byAccount.set(tenant.accountId, tenant);
    for (const key of tenant.keys) this.byKey.set(key.accessKeyId, { tenant, key });
  }

  private checkNewKeys(keys: readonly AccessKey[]): void {
    const seen = new Set<string>();
    for (const k of keys) {
      if (
        !ACCESS_KEY_ID.test(k.accessKeyId) ||
        k.secretAccessKey.length < 1 ||
        k.secretAccessKey.length > 256
      ) {
        throw new TenantError(
          'invalid',
          'An access key id is 3-128 of letters, digits and _+=,.@-; a secret 1-256 characters.',
        );
      }
      if (seen.has(k.accessKeyId) || this.byKey.has(k.accessKeyId)) {
        throw new TenantError('exists', `The access key id ${k.accessKeyId} is taken.`);
      }
      seen.add(k.accessKeyId);
    }
  }
}
