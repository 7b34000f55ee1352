/**
 * What one queue or one message looks like in Redis: one function pair per kind of object, so a
 * new field (FIFO group state, dedup records, DLQ counters...) is added here and nowhere else.
 * test/unit/persistence-codec.test.ts fails when a field of Message or Queue is not round-tripped.
 *
 * Messages are the hot path (one record written per SendMessage), so their record is one flat
 * string, not JSON and not a Redis hash of fields: one string per message is the smallest form in
 * Redis (one hash entry instead of ~16), and here the body is appended as is, never escaped. For a
 * 256-byte body the record is 359 bytes against 495 for the same fields as JSON; building and
 * parsing it cost about what JSON.stringify/JSON.parse do (measured on the shared, loaded
 * development machine: both 6-20 µs per message, too noisy to rank them).
 *
 *   <n> US <field 1> US ... US <field n> US <body>          (US = U+001F, the unit separator)
 *
 * `n` is how many header fields follow, so fields can be appended later: an older reader skips
 * the ones it does not know, a newer reader gives missing ones their default. The body comes last
 * and runs to the end, so it may hold any character. Text fields are written raw unless they are
 * empty, contain U+001F or start with `"`: then they are written as a JSON string (undefined is
 * the empty field). Attributes are JSON. Numbers are decimal (String/Number round-trip exactly).
 *
 * Queues change rarely, so their record is JSON.
 */
import type { AttemptRecord, DedupRecord, DeduplicationScope } from '../core/fifo.js';
import { Message, type MessageAttributes, type MessageState } from '../core/message.js';
import { MoveTask, type MoveTaskStatus } from '../core/movetasks.js';
import type { Queue } from '../core/queue.js';
import type { QueueStore } from '../core/store.js';
import { isMemoryShare } from '../core/budget.js';
import { Tenant, type AccessKey } from '../core/tenants.js';

export class CodecError extends Error {
  override readonly name = 'CodecError';
}

const US = '\x1f';

/** The header fields of a message record, in order; see serializeMessage. */
const MESSAGE_FIELDS = 21;
const HEADER = `${MESSAGE_FIELDS}${US}`;

const STATE_CODE: Record<MessageState, string> = {
  visible: 'v',
  delayed: 'd',
  inflight: 'i',
  deleted: 'x',
};
const CODE_STATE: Readonly<Record<string, MessageState>> = { v: 'visible', d: 'delayed', i: 'inflight' };

export function serializeMessage(m: Message): string {
  // Keep in step with deserializeMessage and MESSAGE_FIELDS; append new fields at the end.
  return (
    HEADER +
    m.seq +
    US +
    m.sentAt +
    US +
    STATE_CODE[m.state] +
    US +
    m.heapKey +
    US +
    m.receiveCount +
    US +
    m.firstReceiveAt +
    US +
    m.lastReceiveAt +
    US +
    text(m.receiptNonce) +
    US +
    text(m.md5OfBody) +
    US +
    text(m.md5OfAttributes) +
    US +
    text(m.md5OfSystemAttributes) +
    US +
    text(m.senderId) +
    US +
    text(m.groupId) +
    US +
    text(m.deduplicationId) +
    US +
    json(m.attributes) +
    US +
    json(m.systemAttributes) +
    US +
    text(m.sequenceNumber) +
    US +
    text(m.deadLetterSourceArn) +
    US +
    (m.visibilityChanged ? '1' : '') +
    US +
    (m.relayed ? '1' : '') +
    US +
    (m.holdUntil > 0 ? m.holdUntil : '') +
    US +
    m.body
  );
}

/**
 * Builds the Message a record describes; `id` is the record's field name in its queue's hash.
 * The loader passes the record as the Buffer Redis sent: each field is decoded from its own bytes
 * (a fresh flat string each, nothing kept of the record), and numbers are read without a string.
 */
export function deserializeMessage(id: string, record: string | Buffer): Message {
  const r = new Cursor(id, typeof record === 'string' ? Buffer.from(record, 'utf8') : record);
  const n = r.count();
  const seq = r.num('seq');
  const sentAt = r.num('sentAt');
  const state = CODE_STATE[r.text()];
  if (state === undefined) throw new CodecError(`message ${id}: unknown state`);
  const heapKey = r.num('heapKey');
  const receiveCount = r.num('receiveCount');
  const firstReceiveAt = r.num('firstReceiveAt');
  const lastReceiveAt = r.num('lastReceiveAt');
  const receiptNonce = untext(r.text()) ?? '';
  const md5OfBody = untext(r.text()) ?? '';
  const md5OfAttributes = untext(r.text());
  const md5OfSystemAttributes = untext(r.text());
  const senderId = untext(r.text()) ?? '';
  const groupId = untext(r.text());
  const deduplicationId = untext(r.text());
  const attributes = unjson(r.text(), id) as MessageAttributes | undefined;
  const systemAttributes = unjson(r.text(), id) as MessageAttributes | undefined;
  const sequenceNumber = untext(r.text());
  const deadLetterSourceArn = untext(r.text());
  // Empty in records written before they were added.
  const visibilityChanged = r.text() === '1';
  const relayed = r.text() === '1';
  // A record from before holds were stored: a relayed message in flight may be held, so it is
  // taken as held until its deadline if that is within a hold's length (Queue.holds).
  const holdUntil = n > 20 ? r.numOrZero('holdUntil') : relayed && state === 'inflight' ? heapKey : 0;
  // Fields a later version appended: skipped.
  for (let i = MESSAGE_FIELDS; i < n; i++) r.skip();
  const m = new Message(
    {
      id,
      body: r.rest(),
      md5OfBody,
      md5OfAttributes,
      md5OfSystemAttributes,
      senderId,
      groupId,
      deduplicationId,
      attributes,
      systemAttributes,
    },
    seq,
    sentAt,
  );
  m.state = state;
  m.heapKey = heapKey;
  m.receiveCount = receiveCount;
  m.firstReceiveAt = firstReceiveAt;
  m.lastReceiveAt = lastReceiveAt;
  m.visibilityChanged = visibilityChanged;
  m.relayed = relayed;
  m.holdUntil = holdUntil;
  m.receiptNonce = receiptNonce;
  m.sequenceNumber = sequenceNumber;
  m.deadLetterSourceArn = deadLetterSourceArn;
  return m;
}

/** US as a byte: UTF-8 never uses it inside another character, so a byte search finds fields. */
const US_BYTE = 0x1f;

/**
 * Reads a message record's header fields in order, from its UTF-8 bytes. Each field becomes a
 * string of its own (Buffer#toString copies), so no field keeps the record alive, and no array of
 * fields is built: a million messages loaded leave as little garbage as possible behind them.
 */
class Cursor {
  private at = 0;
  private fields = 0;
  private total = 0;

  constructor(
    private readonly id: string,
    private readonly record: Buffer,
  ) {}

  /** The header's field count; fields past it read as empty (an older, shorter record). */
  count(): number {
    const end = this.record.indexOf(US_BYTE);
    const n = end > 0 ? Number(this.record.toString('latin1', 0, end)) : NaN;
    if (!Number.isInteger(n) || n < 0) throw new CodecError(`message ${this.id}: not a message record`);
    this.at = end + 1;
    this.total = n;
    return n;
  }

  /** The end of the next field, which is then counted as read. */
  private next(): number {
    this.fields++;
    const end = this.record.indexOf(US_BYTE, this.at);
    if (end < 0) throw new CodecError(`message ${this.id}: record has fewer than ${this.total} fields`);
    return end;
  }

  text(): string {
    if (this.fields >= this.total) return '';
    const start = this.at;
    const end = this.next();
    this.at = end + 1;
    if (end === start) return '';
    // One byte: the state code or a flag, or the digit of a small field; no copy for those.
    if (end === start + 1 && (this.record[start] as number) < 0x80)
      return ONE_BYTE[this.record[start] as number] as string;
    return this.record.toString('utf8', start, end);
  }

  skip(): void {
    if (this.fields >= this.total) return;
    this.at = this.next() + 1;
  }

  /** A decimal field, parsed from its bytes when it is a plain non-negative integer. */
  num(name: string): number {
    if (this.fields >= this.total) return 0;
    const rec = this.record;
    let i = this.at;
    let v = 0;
    for (let c = rec[i]; c !== undefined && c >= 48 && c <= 57; c = rec[++i]) v = v * 10 + (c - 48);
    if (rec[i] === US_BYTE && i > this.at && i - this.at < 16) {
      this.fields++;
      this.at = i + 1;
      return v;
    }
    const f = this.text();
    const n = Number(f);
    if (f === '' || Number.isNaN(n)) {
      throw new CodecError(`message ${this.id}: ${name} is not a number (${JSON.stringify(f)})`);
    }
    return n;
  }

  /** A decimal field that is empty when it is 0. */
  numOrZero(name: string): number {
    if (this.fields < this.total && this.record[this.at] === US_BYTE) {
      this.skip();
      return 0;
    }
    return this.num(name);
  }

  /** The body: everything after the header. */
  rest(): string {
    return this.record.toString('utf8', this.at);
  }
}

/** The one-character strings of the bytes below 0x80, shared. */
const ONE_BYTE: readonly string[] = Array.from({ length: 0x80 }, (_, b) => String.fromCharCode(b));

/** What a queue record holds besides its messages. */
interface QueueRecord {
  v: 1;
  accountId: string;
  region: string;
  name: string;
  uid: string;
  createdAt: number;
  lastModifiedAt: number;
  /** null: never purged (-Infinity in memory, which JSON cannot hold). */
  lastPurgeAt: number | null;
  /** As of this record; the `seq` hash holds the newer value the message writes keep. */
  nextSeq: number;
  /** FIFO: the last SequenceNumber given, as of this record (messages and dedup records hold newer ones). */
  lastSequence?: string;
  /**
   * FIFO, while a DeduplicationScope change has not taken effect (FifoState.pendingScope): the scope in
   * effect and the changes as [when made, new scope]. Absent from older records: none pending.
   */
  dedupScope?: { inEffect: DeduplicationScope; changes: [number, DeduplicationScope][] };
  attributes: Record<string, string>;
  tags: Record<string, string>;
}

export function serializeQueue(q: Queue): string {
  const r: QueueRecord = {
    v: 1,
    accountId: q.accountId,
    region: q.region,
    name: q.name,
    uid: q.uid,
    createdAt: q.createdAt,
    lastModifiedAt: q.lastModifiedAt,
    lastPurgeAt: Number.isFinite(q.lastPurgeAt) ? q.lastPurgeAt : null,
    nextSeq: q.nextSequence,
    attributes: q.attributes,
    tags: q.tags,
  };
  const last = q.fifoState?.lastSequenceNumber;
  if (last !== undefined) r.lastSequence = last;
  const scope = q.fifoState?.pendingScope;
  if (scope !== undefined) {
    r.dedupScope = { inEffect: scope.inEffect, changes: scope.changes.map((c) => [c.at, c.scope]) };
  }
  return JSON.stringify(r);
}

/**
 * Builds the Queue a record describes, bound to `store`'s listeners but not yet in it (the
 * loader adds its messages, then `store.restore`s it). `nextSeq` raises the record's own value
 * (the `seq` hash holds the newest).
 */
export function deserializeQueue(record: string, store: QueueStore, nextSeq = 0): Queue {
  const r = parseObject(record, 'queue record') as Partial<QueueRecord>;
  if (
    r.v !== 1 ||
    typeof r.accountId !== 'string' ||
    typeof r.region !== 'string' ||
    typeof r.name !== 'string' ||
    typeof r.uid !== 'string' ||
    typeof r.createdAt !== 'number' ||
    typeof r.lastModifiedAt !== 'number' ||
    typeof r.nextSeq !== 'number' ||
    typeof r.attributes !== 'object' ||
    r.attributes === null ||
    typeof r.tags !== 'object' ||
    r.tags === null
  ) {
    throw new CodecError(`queue record ${record.slice(0, 200)} lacks a field or has a wrong type`);
  }
  const q = store.newQueue(
    { accountId: r.accountId, region: r.region, name: r.name },
    r.attributes,
    r.tags,
    r.createdAt,
    r.uid,
  );
  q.restoreCounters({
    nextSeq: Math.max(r.nextSeq, nextSeq),
    lastModifiedAt: r.lastModifiedAt,
    lastPurgeAt: typeof r.lastPurgeAt === 'number' ? r.lastPurgeAt : Number.NEGATIVE_INFINITY,
  });
  if (typeof r.lastSequence === 'string') q.fifoState?.restoreSequence(r.lastSequence);
  if (r.dedupScope !== undefined) {
    const { inEffect, changes } = r.dedupScope;
    if (!isScope(inEffect) || !Array.isArray(changes) || !changes.every((c) => isScopeChange(c))) {
      throw new CodecError(`queue record ${r.name}: dedupScope is not {inEffect, changes: [at, scope][]}`);
    }
    q.fifoState?.restoreScope(
      inEffect,
      changes.map(([at, scope]) => ({ at, scope })),
    );
  }
  return q;
}

const isScope = (v: unknown): v is DeduplicationScope => v === 'queue' || v === 'messageGroup';

function isScopeChange(v: unknown): v is [number, DeduplicationScope] {
  return Array.isArray(v) && v.length === 2 && typeof v[0] === 'number' && isScope(v[1]);
}

// ---- FIFO records and move tasks (JSON: few, and written once each) ----------------------------

/** A deduplication record, in the `d:<uid>` hash under its key (fifo.ts dedupKey). */
export function serializeDedup(r: DedupRecord): string {
  return JSON.stringify([r.expiresAt, r.messageId, r.sequenceNumber]);
}

export function deserializeDedup(key: string, record: string): DedupRecord {
  const v = parseJson(record, `dedup record ${key}`);
  if (!Array.isArray(v) || typeof v[0] !== 'number' || typeof v[1] !== 'string' || typeof v[2] !== 'string') {
    throw new CodecError(`dedup record ${key}: not [expiresAt, messageId, sequenceNumber]`);
  }
  return { expiresAt: v[0], messageId: v[1], sequenceNumber: v[2] };
}

/** A ReceiveRequestAttemptId record, in the `a:<uid>` hash under the attempt id. */
export function serializeAttempt(r: AttemptRecord): string {
  return JSON.stringify({
    e: r.expiresAt,
    m: r.entries.map((x) => [x.id, x.receiveCount, x.nonce, x.visibleAt]),
  });
}

export function deserializeAttempt(id: string, record: string): AttemptRecord {
  const v = parseJson(record, `attempt record ${id}`) as { e?: unknown; m?: unknown };
  if (typeof v !== 'object' || v === null || typeof v.e !== 'number' || !Array.isArray(v.m)) {
    throw new CodecError(`attempt record ${id}: lacks a field`);
  }
  const entries = (v.m as unknown[]).map((x) => {
    if (
      !Array.isArray(x) ||
      typeof x[0] !== 'string' ||
      typeof x[1] !== 'number' ||
      typeof x[2] !== 'string' ||
      typeof x[3] !== 'number'
    ) {
      throw new CodecError(`attempt record ${id}: a bad entry`);
    }
    return { id: x[0], receiveCount: x[1], nonce: x[2], visibleAt: x[3] };
  });
  return { expiresAt: v.e, entries };
}

const TASK_STATUSES: ReadonlySet<string> = new Set([
  'RUNNING',
  'COMPLETED',
  'CANCELLING',
  'CANCELLED',
  'FAILED',
]);

/** A message move task, in the `tasks` hash under its task id. */
export function serializeMoveTask(t: MoveTask): string {
  return JSON.stringify({
    taskId: t.taskId,
    sourceArn: t.sourceArn,
    destinationArn: t.destinationArn ?? null,
    rate: t.maxNumberOfMessagesPerSecond ?? null,
    startedAt: t.startedAt,
    toMove: t.toMove,
    status: t.status,
    moved: t.moved,
    failureReason: t.failureReason ?? null,
  });
}

export function deserializeMoveTask(record: string): MoveTask {
  const v = parseJson(record, 'move task') as Record<string, unknown>;
  if (
    typeof v !== 'object' ||
    v === null ||
    typeof v.taskId !== 'string' ||
    typeof v.sourceArn !== 'string' ||
    typeof v.startedAt !== 'number' ||
    typeof v.toMove !== 'number' ||
    typeof v.moved !== 'number' ||
    typeof v.status !== 'string' ||
    !TASK_STATUSES.has(v.status)
  ) {
    throw new CodecError(`move task record ${record.slice(0, 200)} lacks a field or has a wrong type`);
  }
  return new MoveTask({
    taskId: v.taskId,
    sourceArn: v.sourceArn,
    destinationArn: typeof v.destinationArn === 'string' ? v.destinationArn : undefined,
    maxNumberOfMessagesPerSecond: typeof v.rate === 'number' ? v.rate : undefined,
    startedAt: v.startedAt,
    toMove: v.toMove,
    status: v.status as MoveTaskStatus,
    moved: v.moved,
    failureReason: typeof v.failureReason === 'string' ? v.failureReason : undefined,
  });
}

function parseJson(record: string, what: string): unknown {
  try {
    return JSON.parse(record);
  } catch {
    throw new CodecError(`${what}: not JSON`);
  }
}

/** For records read field by field: `null`, a number or an array would fail there as a TypeError. */
function parseObject(record: string, what: string): Record<string, unknown> {
  const v = parseJson(record, what);
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new CodecError(`${what}: not a JSON object`);
  return v as Record<string, unknown>;
}

function text(s: string | undefined): string {
  if (s === undefined) return '';
  if (s === '' || s.charCodeAt(0) === 34 || s.includes(US)) return JSON.stringify(s);
  return s;
}

function untext(f: string | undefined): string | undefined {
  if (f === undefined || f === '') return undefined;
  return f.charCodeAt(0) === 34 ? (JSON.parse(f) as string) : f;
}

function json(o: object | undefined): string {
  return o === undefined ? '' : JSON.stringify(o);
}

function unjson(f: string | undefined, id: string): unknown {
  if (f === undefined || f === '') return undefined;
  return parseObject(f, `message ${id}: attributes`);
}

// ---- tenants (src/core/tenants.ts) -----------------------------------------------------------

/**
 * A tenant and its keys, as JSON, in the `tenants` hash under the tenant's name. The secrets are
 * stored as they are (SigV4 verification needs them): whoever can read Redis can sign as any
 * tenant, so Redis must be as closed as the admin token (docs/admin.md).
 */
export function serializeTenant(t: Tenant): string {
  return JSON.stringify({
    v: 1,
    name: t.name,
    accountId: t.accountId,
    createdAt: t.createdAt,
    memoryShare: t.memoryShare,
    keys: t.keys.map((k) => ({
      accessKeyId: k.accessKeyId,
      secretAccessKey: k.secretAccessKey,
      createdAt: k.createdAt,
    })),
  });
}

export function deserializeTenant(record: string): Tenant {
  const r = parseObject(record, 'tenant record');
  const keys = r['keys'];
  if (
    r['v'] !== 1 ||
    typeof r['name'] !== 'string' ||
    typeof r['accountId'] !== 'string' ||
    typeof r['createdAt'] !== 'number' ||
    !Array.isArray(keys)
  ) {
    throw new CodecError(`tenant record ${record.slice(0, 100)} lacks a field or has a wrong type`);
  }
  const parsed: AccessKey[] = keys.map((k: unknown) => {
    const o = k as Record<string, unknown> | null;
    if (
      o === null ||
      typeof o['accessKeyId'] !== 'string' ||
      typeof o['secretAccessKey'] !== 'string' ||
      typeof o['createdAt'] !== 'number'
    ) {
      throw new CodecError(`tenant ${String(r['name'])}: a key lacks a field or has a wrong type`);
    }
    return {
      accessKeyId: o['accessKeyId'],
      secretAccessKey: o['secretAccessKey'],
      createdAt: o['createdAt'],
    };
  });
  const tenant = new Tenant(r['name'], r['accountId'], parsed, r['createdAt']);
  // Written since tenants have a memory share; a record from before has none, and no share.
  const share = r['memoryShare'];
  if (share !== undefined) {
    if (!isMemoryShare(share))
      throw new CodecError(`tenant ${r['name']}: memoryShare ${JSON.stringify(share)} is not in (0, 1]`);
    tenant.memoryShare = share;
  }
  return tenant;
}

// ---- the catalog of layout v2 (layout.ts: meta `cat:<account>:<region>`) ---------------------

/**
 * What the catalog says of one queue name: where its data is and what a request needs to know
 * before its shard is read. Written by the writer whenever the queue is created or changed.
 */
export interface CatalogEntry {
  readonly shard: number;
  readonly uid: string;
  readonly fifo: boolean;
  /** The RedrivePolicy's target, so that a dead-letter queue's sources can be found from meta. */
  readonly deadLetterTargetArn?: string | undefined;
  /**
   * The RedriveAllowPolicy as set, so that another process can check a RedrivePolicy naming this
   * queue without its shard. Absent from records written before it: read as no policy.
   */
  readonly redriveAllowPolicy?: string | undefined;
}

/** A queue's directory record, in its catalog hash under the queue's name. */
export function serializeCatalogEntry(q: Queue): string {
  const r: {
    v: 1;
    shard: number;
    uid: string;
    fifo: boolean;
    deadLetterTargetArn?: string;
    redriveAllowPolicy?: string;
  } = {
    v: 1,
    shard: q.shard,
    uid: q.uid,
    fifo: q.fifo,
  };
  if (q.redrive !== null) r.deadLetterTargetArn = q.redrive.deadLetterTargetArn;
  const allow = q.attributes.RedriveAllowPolicy;
  if (allow !== undefined) r.redriveAllowPolicy = allow;
  return JSON.stringify(r);
}

/** `name` is the record's field (the queue name), for the error message only. */
export function deserializeCatalogEntry(name: string, record: string): CatalogEntry {
  const r = parseObject(record, `catalog entry ${name}`);
  const shard = r['shard'];
  const dlq = r['deadLetterTargetArn'];
  const allow = r['redriveAllowPolicy'];
  if (
    r['v'] !== 1 ||
    typeof shard !== 'number' ||
    !Number.isInteger(shard) ||
    shard < 0 ||
    typeof r['uid'] !== 'string' ||
    typeof r['fifo'] !== 'boolean' ||
    (dlq !== undefined && typeof dlq !== 'string') ||
    (allow !== undefined && typeof allow !== 'string')
  ) {
    throw new CodecError(`catalog entry ${name}: ${record.slice(0, 200)} lacks a field or has a wrong type`);
  }
  const entry: { -readonly [K in keyof CatalogEntry]: CatalogEntry[K] } = {
    shard,
    uid: r['uid'],
    fifo: r['fifo'],
  };
  if (dlq !== undefined) entry.deadLetterTargetArn = dlq;
  if (allow !== undefined) entry.redriveAllowPolicy = allow;
  return entry;
}
