import type { HeapItem } from './heap.js';
import { ownString } from './strings.js';

/** A message attribute as the API carries it; binary values stay base64 as on both wires. */
export interface MessageAttributeValue {
  DataType: string;
  StringValue?: string;
  BinaryValue?: string;
  StringListValues?: string[];
  BinaryListValues?: string[];
}

export type MessageAttributes = Record<string, MessageAttributeValue>;

/**
 * Where a message is. Each state has one structure in its Queue: `visible` messages sit in the
 * visible list in delivery order, `delayed` and `inflight` ones in a heap keyed by the moment
 * they become visible. `deleted` marks a message that has left the queue.
 */
export type MessageState = 'delayed' | 'visible' | 'inflight' | 'deleted';

export interface NewMessage {
  readonly id: string;
  readonly body: string;
  readonly md5OfBody: string;
  readonly attributes?: MessageAttributes | undefined;
  readonly md5OfAttributes?: string | undefined;
  readonly systemAttributes?: MessageAttributes | undefined;
  readonly md5OfSystemAttributes?: string | undefined;
  /** Overrides the queue's DelaySeconds when given. */
  readonly delaySeconds?: number | undefined;
  readonly senderId: string;
  readonly groupId?: string | undefined;
  readonly deduplicationId?: string | undefined;
}

/** `attributes` with every string an ownString (see strings.ts); rare enough to rebuild. */
function ownAttributes(attributes: MessageAttributes | undefined): MessageAttributes | undefined {
  if (attributes === undefined) return undefined;
  const out: MessageAttributes = {};
  for (const [name, v] of Object.entries(attributes)) {
    const copy: MessageAttributeValue = { DataType: ownString(v.DataType) };
    if (v.StringValue !== undefined) copy.StringValue = ownString(v.StringValue);
    if (v.BinaryValue !== undefined) copy.BinaryValue = ownString(v.BinaryValue);
    if (v.StringListValues !== undefined) copy.StringListValues = v.StringListValues.map(ownString);
    if (v.BinaryListValues !== undefined) copy.BinaryListValues = v.BinaryListValues.map(ownString);
    // `__proto__` is a valid attribute name: it must stay an own entry, not reach the prototype.
    Object.defineProperty(out, ownString(name), {
      value: copy,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

function ownOptional(s: string | undefined): string | undefined {
  return s === undefined ? undefined : ownString(s);
}

/** What only a received message needs; a queued message that was never received has none. */
class Delivery {
  receiveCount = 0;
  firstReceiveAt = 0;
  lastReceiveAt = 0;
  /** Changes on every receive, so only the newest receipt handle may change visibility. */
  receiptNonce = '';
  /**
   * A ChangeMessageVisibility since the last receive, even one that left the deadline where it
   * was: a retried ReceiveRequestAttemptId must not hand such a message out again (AWS).
   */
  visibilityChanged = false;
}

/**
 * What most messages of a standard queue never have: FIFO group links and ids, attributes, the
 * dead-letter source. One object, made only for a message that has one of them.
 */
class Extras {
  // FIFO queues: the message's place in its group, in send order (see fifo.ts).
  gprev: Message | null = null;
  gnext: Message | null = null;
  /** FIFO queues: the 128-bit, increasing number the queue gave it, as a decimal string. */
  sequenceNumber: string | undefined = undefined;
  /** Set when the message was moved to this queue as its dead-letter queue: the source's ARN. */
  deadLetterSourceArn: string | undefined = undefined;
  /**
   * 0: never sent to another process's queue; 1: sent at least once (Message.relayed); more: sent,
   * and held for it until that moment (Message.holdUntil). One slot for both, since a hold is rare.
   */
  relay = 0;
  attributes: MessageAttributes | undefined = undefined;
  md5OfAttributes: string | undefined = undefined;
  systemAttributes: MessageAttributes | undefined = undefined;
  md5OfSystemAttributes: string | undefined = undefined;
  groupId: string | undefined = undefined;
  deduplicationId: string | undefined = undefined;
}

/**
 * One stored message. Its own fields are the ones every message uses (144 B of object); receive
 * bookkeeping (Delivery) and the rarer fields (Extras) hang off it only when set, behind accessors
 * of the same names.
 */
export class Message implements HeapItem {
  // Heap membership: for `delayed` and `inflight`, heapKey is when the message becomes visible.
  heapKey = 0;
  heapIndex = -1;
  state: MessageState = 'visible';
  // Intrusive links: send order (for retention), and delivery order among visible messages.
  prev: Message | null = null;
  next: Message | null = null;
  vprev: Message | null = null;
  vnext: Message | null = null;
  private delivery: Delivery | null = null;
  private extras: Extras | null = null;
  /** What it counts against the memory budget while stored (budget.ts); set as it is linked in. */
  cost = 0;

  readonly id: string;
  readonly body: string;
  readonly md5OfBody: string;
  readonly senderId: string;

  constructor(
    m: NewMessage,
    readonly seq: number,
    readonly sentAt: number,
  ) {
    // Not copied (strings.ts): id, body and MD5 are own strings already wherever a message is made
    // (uuid(), JSON.parse, parseForm, crypto.hash, the codec), and copying the body was a
    // tenth of a batch send's own work.
    this.id = m.id;
    this.body = m.body;
    this.md5OfBody = m.md5OfBody;
    // Usually one string shared by every message of its sender: not copied.
    this.senderId = m.senderId;
    if (
      m.attributes !== undefined ||
      m.md5OfAttributes !== undefined ||
      m.systemAttributes !== undefined ||
      m.md5OfSystemAttributes !== undefined ||
      m.groupId !== undefined ||
      m.deduplicationId !== undefined
    ) {
      const x = new Extras();
      x.attributes = ownAttributes(m.attributes);
      x.md5OfAttributes = ownOptional(m.md5OfAttributes);
      x.systemAttributes = ownAttributes(m.systemAttributes);
      x.md5OfSystemAttributes = ownOptional(m.md5OfSystemAttributes);
      x.groupId = ownOptional(m.groupId);
      x.deduplicationId = ownOptional(m.deduplicationId);
      this.extras = x;
    }
  }

  /** One more receive at `now`, with the new receipt handle's nonce. */
  received(now: number, nonce: string): void {
    const d = (this.delivery ??= new Delivery());
    d.receiveCount++;
    if (d.firstReceiveAt === 0) d.firstReceiveAt = now;
    d.lastReceiveAt = now;
    d.receiptNonce = nonce;
    d.visibilityChanged = false;
  }

  get receiveCount(): number {
    return this.delivery?.receiveCount ?? 0;
  }

  set receiveCount(n: number) {
    if (n !== 0 || this.delivery !== null) this.deliveryRecord().receiveCount = n;
  }

  get firstReceiveAt(): number {
    return this.delivery?.firstReceiveAt ?? 0;
  }

  set firstReceiveAt(t: number) {
    if (t !== 0 || this.delivery !== null) this.deliveryRecord().firstReceiveAt = t;
  }

  get lastReceiveAt(): number {
    return this.delivery?.lastReceiveAt ?? 0;
  }

  set lastReceiveAt(t: number) {
    if (t !== 0 || this.delivery !== null) this.deliveryRecord().lastReceiveAt = t;
  }

  get receiptNonce(): string {
    return this.delivery?.receiptNonce ?? '';
  }

  set receiptNonce(nonce: string) {
    if (nonce !== '' || this.delivery !== null) this.deliveryRecord().receiptNonce = nonce;
  }

  get visibilityChanged(): boolean {
    return this.delivery?.visibilityChanged ?? false;
  }

  set visibilityChanged(changed: boolean) {
    if (changed || this.delivery !== null) this.deliveryRecord().visibilityChanged = changed;
  }

  get gprev(): Message | null {
    return this.extras?.gprev ?? null;
  }

  set gprev(m: Message | null) {
    if (m !== null || this.extras !== null) this.extrasRecord().gprev = m;
  }

  get gnext(): Message | null {
    return this.extras?.gnext ?? null;
  }

  set gnext(m: Message | null) {
    if (m !== null || this.extras !== null) this.extrasRecord().gnext = m;
  }

  get sequenceNumber(): string | undefined {
    return this.extras?.sequenceNumber;
  }

  set sequenceNumber(n: string | undefined) {
    if (n !== undefined || this.extras !== null) this.extrasRecord().sequenceNumber = ownOptional(n);
  }

  get deadLetterSourceArn(): string | undefined {
    return this.extras?.deadLetterSourceArn;
  }

  set deadLetterSourceArn(arn: string | undefined) {
    // Not copied: the source queue's ARN, one string for all its dead letters.
    if (arn !== undefined || this.extras !== null) this.extrasRecord().deadLetterSourceArn = arn;
  }

  /**
   * Sent to a queue of another process at least once (a dead-letter move or a move task's step
   * across owners), so it may be there already: wherever it goes from now on, its destination's
   * mark is read first, also by a process that holds both queues (Queue.hold).
   */
  get relayed(): boolean {
    return (this.extras?.relay ?? 0) !== 0;
  }

  set relayed(r: boolean) {
    if (r) this.extrasRecord().relay ||= 1;
    else if (this.extras !== null) this.extras.relay = 0;
  }

  /**
   * When the message is held for another process (Queue.hold), the hold's deadline: it is held
   * while in flight with this as its heapKey. 0 when it is not, or no longer, held. Stored, so the
   * process that reads the queue back after a takeover keeps the hold (Queue.holds).
   */
  get holdUntil(): number {
    const r = this.extras?.relay ?? 0;
    return r > 1 ? r : 0;
  }

  set holdUntil(until: number) {
    if (until > 1) this.extrasRecord().relay = until;
    else if (this.extras !== null && this.extras.relay > 1) this.extras.relay = 1;
  }

  get attributes(): MessageAttributes | undefined {
    return this.extras?.attributes;
  }

  get md5OfAttributes(): string | undefined {
    return this.extras?.md5OfAttributes;
  }

  get systemAttributes(): MessageAttributes | undefined {
    return this.extras?.systemAttributes;
  }

  get md5OfSystemAttributes(): string | undefined {
    return this.extras?.md5OfSystemAttributes;
  }

  get groupId(): string | undefined {
    return this.extras?.groupId;
  }

  get deduplicationId(): string | undefined {
    return this.extras?.deduplicationId;
  }

  private deliveryRecord(): Delivery {
    return (this.delivery ??= new Delivery());
  }

  private extrasRecord(): Extras {
    return (this.extras ??= new Extras());
  }
}
