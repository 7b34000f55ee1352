import type { HeapItem } from './heap.js';

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

export class Message implements HeapItem {
  // Heap membership: for `delayed` and `inflight`, heapKey is when the message becomes visible.
  heapKey = 0;
  heapIndex = -1;
  state: MessageState = 'visible';
  receiveCount = 0;
  firstReceiveAt = 0;
  lastReceiveAt = 0;
  /** Changes on every receive, so only the newest receipt handle may change visibility. */
  receiptNonce = '';
  // Intrusive links: send order (for retention), and delivery order among visible messages.
  prev: Message | null = null;
  next: Message | null = null;
  vprev: Message | null = null;
  vnext: Message | null = null;
  // FIFO queues: the message's place in its group, in send order (see fifo.ts).
  gprev: Message | null = null;
  gnext: Message | null = null;
  /** FIFO queues: the 128-bit, increasing number the queue gave it, as a decimal string. */
  sequenceNumber: string | undefined = undefined;
  /** Set when the message was moved to this queue as its dead-letter queue: the source's ARN. */
  deadLetterSourceArn: string | undefined = undefined;

  readonly id: string;
  readonly body: string;
  readonly md5OfBody: string;
  readonly attributes: MessageAttributes | undefined;
  readonly md5OfAttributes: string | undefined;
  readonly systemAttributes: MessageAttributes | undefined;
  readonly md5OfSystemAttributes: string | undefined;
  readonly senderId: string;
  readonly groupId: string | undefined;
  readonly deduplicationId: string | undefined;

  constructor(
    m: NewMessage,
    readonly seq: number,
    readonly sentAt: number,
  ) {
    this.id = m.id;
    this.body = m.body;
    this.md5OfBody = m.md5OfBody;
    this.attributes = m.attributes;
    this.md5OfAttributes = m.md5OfAttributes;
    this.systemAttributes = m.systemAttributes;
    this.md5OfSystemAttributes = m.md5OfSystemAttributes;
    this.senderId = m.senderId;
    this.groupId = m.groupId;
    this.deduplicationId = m.deduplicationId;
  }
}
