import type { Message, MessageAttributes } from './message.js';

/**
 * What one stored message costs beyond its strings' bytes: the Message object with its links,
 * its id and MD5 strings, the Delivery record and the received-index entry it gains on its first
 * receive. Measured against the heap (docs/operations.md, "Sizing and back-pressure").
 */
export const MESSAGE_OVERHEAD = 704;
/** The Extras object a message with attributes, a group or a deduplication id carries. */
const EXTRAS_OVERHEAD = 160;
/** One message attribute's objects (the value record and its entry in the attribute map). */
const ATTRIBUTE_OVERHEAD = 96;
/** A queue with no messages: its object, attributes, tags, heaps and (FIFO) records. */
export const QUEUE_OVERHEAD = 4096;

/**
 * The bytes of a string in V8's heap, from above: UTF-8 takes at least as many bytes per
 * character as V8's one-byte (Latin-1) or two-byte representation, plus the string's header.
 */
function stringBytes(s: string | undefined): number {
  return s === undefined ? 0 : 16 + Buffer.byteLength(s);
}

function attributesBytes(attributes: MessageAttributes | undefined): number {
  if (attributes === undefined) return 0;
  let n = 0;
  for (const [name, v] of Object.entries(attributes)) {
    n += ATTRIBUTE_OVERHEAD + stringBytes(name) + stringBytes(v.DataType);
    n += stringBytes(v.StringValue) + stringBytes(v.BinaryValue);
    for (const s of v.StringListValues ?? []) n += stringBytes(s);
    for (const s of v.BinaryListValues ?? []) n += stringBytes(s);
  }
  return n;
}

/** What a stored message counts against the budget; see {@link MESSAGE_OVERHEAD}. */
export function messageCost(m: Message): number {
  let n = MESSAGE_OVERHEAD + stringBytes(m.body);
  if (m.attributes !== undefined || m.systemAttributes !== undefined || m.groupId !== undefined) {
    n += EXTRAS_OVERHEAD + attributesBytes(m.attributes) + attributesBytes(m.systemAttributes);
    n += stringBytes(m.groupId) + stringBytes(m.deduplicationId) + 2 * stringBytes(m.md5OfAttributes);
  } else if (m.deduplicationId !== undefined) {
    n += EXTRAS_OVERHEAD + stringBytes(m.deduplicationId);
  }
  return n;
}

/**
 * The estimate a send is checked with before its message exists: `size` is what the send path
 * counts against MaximumMessageSize (body and attributes in UTF-8).
 */
export function sendCost(size: number): number {
  return MESSAGE_OVERHEAD + EXTRAS_OVERHEAD + size;
}

/** Below this share of a limit, refused sends are taken again (hysteresis: no flapping at the edge). */
export const LOW_WATER = 0.9;

class Account {
  used = 0;
  refusing = false;
}

/** Whether `share` is a valid share of the budget: a fraction in (0, 1]. */
export function isMemoryShare(share: unknown): share is number {
  return typeof share === 'number' && share > 0 && share <= 1;
}

export type RefusalScope = 'server' | 'tenant';

/**
 * The memory budget: the bytes the store holds, in total and per account (a tenant's queues are
 * its account's), against `limit` and each account's optional share of it. The store counts into
 * it as messages come and go; sends ask {@link wouldExceed} first.
 *
 * Once a send is refused, sends (of that account, or all for the whole budget) stay refused until
 * usage falls under {@link LOW_WATER} of the limit, so a consumer deleting one message does not
 * let one producer's send in and the next out. Nothing here refuses by itself: what adds data
 * asks first; moves and restores only count.
 */
export class Budget {
  used = 0;
  private refusingAll = false;
  private readonly accounts = new Map<string, Account>();

  /**
   * `shareOf`: an account's share of the budget (a fraction in (0, 1], its tenant's memoryShare),
   * or undefined for no share of its own (it may use the whole budget).
   */
  constructor(
    readonly limit: number = Number.POSITIVE_INFINITY,
    private readonly shareOf: (accountId: string) => number | undefined = () => undefined,
    /** Told of every refusal {@link wouldExceed} answers (for the refused-sends counter). */
    private readonly onRefused: (accountId: string, scope: RefusalScope) => void = () => undefined,
  ) {}

  /** Adds (or, negative, removes) bytes held for an account's queues. */
  add(accountId: string, bytes: number): void {
    this.used += bytes;
    const a = this.account(accountId);
    a.used += bytes;
    if (bytes < 0) {
      if (this.refusingAll && this.used <= this.limit * LOW_WATER) this.refusingAll = false;
      if (a.refusing && a.used <= this.limitOf(accountId) * LOW_WATER) a.refusing = false;
    }
  }

  /**
   * Whether `bytes` more for `accountId` must be refused, and by which limit; undefined: it fits.
   * A refusal holds until usage is back under the low-water mark.
   */
  wouldExceed(bytes: number, accountId: string): RefusalScope | undefined {
    const scope = this.check(bytes, accountId);
    if (scope !== undefined) this.onRefused(accountId, scope);
    return scope;
  }

  private check(bytes: number, accountId: string): RefusalScope | undefined {
    if (this.refusingAll) return 'server';
    if (this.used + bytes > this.limit) {
      this.refusingAll = true;
      return 'server';
    }
    const share = this.shareOf(accountId);
    if (share === undefined) return undefined;
    const a = this.account(accountId);
    const limit = Math.floor(this.limit * share);
    // A share changed since the refusal began (the admin API) is applied here.
    if (a.refusing && a.used > limit * LOW_WATER) return 'tenant';
    a.refusing = a.used + bytes > limit;
    return a.refusing ? 'tenant' : undefined;
  }

  /** Whether sends are refused now (of the whole server, or of one account). */
  refusing(accountId?: string): boolean {
    if (this.refusingAll) return true;
    return accountId !== undefined && (this.accounts.get(accountId)?.refusing ?? false);
  }

  /** Bytes held for an account's queues. */
  usedBy(accountId: string): number {
    return this.accounts.get(accountId)?.used ?? 0;
  }

  /** The bytes an account may hold: its share of the limit, or the whole limit. */
  limitOf(accountId: string): number {
    const share = this.shareOf(accountId);
    return share === undefined ? this.limit : Math.floor(this.limit * share);
  }

  /** Every account that holds or held bytes, with its usage and limit. */
  *usage(): IterableIterator<[accountId: string, used: number, limit: number]> {
    for (const [id, a] of this.accounts) yield [id, a.used, this.limitOf(id)];
  }

  private account(accountId: string): Account {
    let a = this.accounts.get(accountId);
    if (a === undefined) {
      a = new Account();
      this.accounts.set(accountId, a);
    }
    return a;
  }
}
