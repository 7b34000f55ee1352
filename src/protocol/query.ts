/**
 * The Query codec: flattened form parameters (`Attribute.1.Name`, `MessageAttribute.2.Value.DataType`,
 * `SendMessageBatchRequestEntry.3.Id`, ...) in, mapped onto the same JSON-shaped input the JSON codec
 * produces; the output rendered as XML in SQS's 2012-11-05 namespace.
 *
 * Every SQS list and map is flattened on the Query wire: a list member repeats its Query name with a
 * 1-based index, a map entry is `<name>.<n>.<keyName>` + `<name>.<n>.<valueName>[.<field>]`.
 */
import { invalidParameter, SqsError } from '../sqs/errors.js';
import type { ActionName } from '../sqs/model.generated.js';
import { invalidAction, requireMembers, setOwn } from './common.js';
import {
  compiledOperations,
  XMLNS,
  type MapNode,
  type MemberNode,
  type Node,
  type StructNode,
} from './compiled.js';
import type { EncodedError } from './json.js';

export const QUERY_CONTENT_TYPE = 'text/xml';

// ---------------------------------------------------------------------------------------------
// Decoding
//
// Parameter names are matched in place (startsWith at an offset, digit scans) rather than split
// or sliced: a sliced segment is a new string that must be hashed for every lookup, which cost
// more than the rest of the decoder together.

/**
 * A list while its elements arrive, keyed by their index. Integer keys of a plain object
 * enumerate in ascending numeric order (ECMA-262 OrdinaryOwnPropertyKeys), which sorts indices
 * that came with gaps or out of order for free.
 */
class ListAcc {
  readonly items: Record<number, unknown> = {};
}

/** A map while its entries arrive, keyed by entry index. */
class MapAcc {
  readonly entries: Record<number, MapEntry> = {};
}

class MapEntry {
  key: string | undefined = undefined;
  value: unknown = undefined;
}

type Holder = Record<string | number, unknown>;

const DOT = 46;
const MAX_INDEX_DIGITS = 9;

/** Where the segment just matched by findMember or parseIndex ends (a second return value). */
let scanEnd = 0;

/**
 * The member of `node` whose Query name is the segment of `key` at `start`, or undefined;
 * sets scanEnd to the segment's end.
 */
function findMember(node: StructNode, key: string, start: number): MemberNode | undefined {
  const bucket = node.queryBuckets[key.charCodeAt(start) & 63];
  if (bucket === undefined) return undefined;
  for (const member of bucket) {
    const end = start + member.queryName.length;
    // The cheap test first: most candidates fail on where their segment would end.
    if ((end === key.length || key.charCodeAt(end) === DOT) && key.startsWith(member.queryName, start)) {
      scanEnd = end;
      return member;
    }
  }
  return undefined;
}

/** Whether the segment of `key` at `start` is exactly `word`. */
function segmentIs(key: string, start: number, word: string): boolean {
  const end = start + word.length;
  return (end === key.length || key.charCodeAt(end) === DOT) && key.startsWith(word, start);
}

/** The decimal index at key[start...], up to the next dot, or -1; sets scanEnd to its end. */
function parseIndex(key: string, start: number): number {
  let n = 0;
  let i = start;
  for (; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c === DOT) break;
    if (c < 48 || c > 57 || i - start >= MAX_INDEX_DIGITS) return -1;
    n = n * 10 + (c - 48);
  }
  if (i === start) return -1;
  scanEnd = i;
  return n;
}

function toInteger(value: string, param: string): number {
  const length = value.length;
  let i = 0;
  let negative = false;
  const sign = value.charCodeAt(0);
  if (sign === 45 || sign === 43) {
    negative = sign === 45;
    i = 1;
  }
  if (i === length || length - i > 15) throw invalidParameter(param, value, 'Not a valid integer.');
  let n = 0;
  for (; i < length; i++) {
    const c = value.charCodeAt(i);
    if (c < 48 || c > 57) throw invalidParameter(param, value, 'Not a valid integer.');
    n = n * 10 + (c - 48);
  }
  return negative && n !== 0 ? -n : n;
}

function toBoolean(value: string, param: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  const lower = value.toLowerCase();
  if (lower === 'true') return true;
  if (lower === 'false') return false;
  throw invalidParameter(param, value, 'Not a valid boolean.');
}

function listAcc(holder: Holder, slot: string | number): ListAcc {
  const existing = holder[slot];
  if (existing instanceof ListAcc) return existing;
  const acc = new ListAcc();
  holder[slot] = acc;
  return acc;
}

function mapAcc(holder: Holder, slot: string | number): MapAcc {
  const existing = holder[slot];
  if (existing instanceof MapAcc) return existing;
  const acc = new MapAcc();
  holder[slot] = acc;
  return acc;
}

/** Routes one parameter, whose name from `start` on addresses a member of `node`, into `obj`. */
function setMember(node: StructNode, obj: Holder, key: string, start: number, value: string): void {
  const member = findMember(node, key, start);
  if (member !== undefined) {
    place(member.node, obj, member.name, key, scanEnd === key.length ? -1 : scanEnd + 1, value);
    return;
  }
  // botocore marks an empty flattened list or map with the member's own name: `Entries=`.
  if (value === '' && key.indexOf('.', start) === -1) {
    const named = node.byName.get(start === 0 ? key : key.slice(start));
    if (named !== undefined && (named.node.k === 'list' || named.node.k === 'map')) {
      place(named.node, obj, named.name, key, -1, value);
    }
  }
  // Anything else unknown (Version, Signature*, X-Amz-*, ...) is ignored, as AWS does.
}

/**
 * Puts `value` into `holder[slot]`, a value of shape `node`, where key[rest...] is what remains of
 * the parameter's name (-1: nothing remains). Names that do not fit the shape are ignored, as AWS
 * ignores parameters it does not know.
 */
function place(
  node: Node,
  holder: Holder,
  slot: string | number,
  key: string,
  rest: number,
  value: string,
): void {
  switch (node.k) {
    case 'string':
    case 'blob': // base64 text stays text: the JSON shape carries blobs as base64 too.
      if (rest === -1) holder[slot] = value;
      return;
    case 'integer':
      if (rest === -1) holder[slot] = toInteger(value, key);
      return;
    case 'boolean':
      if (rest === -1) holder[slot] = toBoolean(value, key);
      return;
    case 'structure': {
      if (rest === -1) return;
      let child = holder[slot] as Holder | undefined;
      if (child === undefined) holder[slot] = child = {};
      setMember(node, child, key, rest, value);
      return;
    }
    case 'list': {
      if (rest === -1) {
        // `Name=` is an empty list; some clients send a single unindexed element, as in the
        // API reference's own `AttributeName=All`.
        const acc = listAcc(holder, slot);
        if (value !== '' && node.member.scalar) place(node.member, acc.items, 0, key, -1, value);
        return;
      }
      const index = parseIndex(key, rest);
      if (index === -1) return;
      const next = scanEnd === key.length ? -1 : scanEnd + 1;
      place(node.member, listAcc(holder, slot).items, index, key, next, value);
      return;
    }
    case 'map':
      placeMapEntry(node, holder, slot, key, rest, value);
      return;
  }
}

function placeMapEntry(
  node: MapNode,
  holder: Holder,
  slot: string | number,
  key: string,
  rest: number,
  value: string,
): void {
  if (rest === -1) {
    if (value === '') mapAcc(holder, slot); // an empty map, marked like an empty list
    return;
  }
  const index = parseIndex(key, rest);
  if (index === -1 || scanEnd === key.length) return;
  const fieldStart = scanEnd + 1;
  if (segmentIs(key, fieldStart, node.keyName)) {
    if (fieldStart + node.keyName.length !== key.length) return;
    entryAt(mapAcc(holder, slot), index).key = value;
  } else if (segmentIs(key, fieldStart, node.valueName)) {
    const fieldEnd = fieldStart + node.valueName.length;
    const entry = entryAt(mapAcc(holder, slot), index) as unknown as Holder;
    place(node.value, entry, 'value', key, fieldEnd === key.length ? -1 : fieldEnd + 1, value);
  }
}

function entryAt(acc: MapAcc, index: number): MapEntry {
  let entry = acc.entries[index];
  if (entry === undefined) acc.entries[index] = entry = new MapEntry();
  return entry;
}

/** What a map entry sent with a key but no value stands for; undefined drops the entry. */
function missingMapValue(node: Node): unknown {
  if (node.k === 'structure') return {}; // e.g. a message attribute without Value: the action layer says why
  if (node.k === 'string' || node.k === 'blob') return '';
  return undefined;
}

/** Turns the accumulators under `value` (of shape `node`) into arrays and records. */
function finalize(node: Node, value: unknown): unknown {
  switch (node.k) {
    case 'list': {
      const items = (value as ListAcc).items;
      const member = node.member;
      const out: unknown[] = [];
      for (const index in items) {
        const item = items[index as unknown as number];
        out.push(member.scalar ? item : finalize(member, item));
      }
      return out;
    }
    case 'map': {
      const entries = (value as MapAcc).entries;
      const valueNode = node.value;
      const out: Record<string, unknown> = {};
      for (const index in entries) {
        const entry = entries[index as unknown as number] as MapEntry;
        if (entry.key === undefined) continue; // a value without a name cannot be placed
        const entryValue =
          entry.value === undefined
            ? missingMapValue(valueNode)
            : valueNode.scalar
              ? entry.value
              : finalize(valueNode, entry.value);
        if (entryValue !== undefined) setOwn(out, entry.key, entryValue);
      }
      return out;
    }
    case 'structure':
      finalizeStruct(node, value as Holder);
      return value;
    case 'string':
    case 'integer':
    case 'boolean':
    case 'blob':
      return value;
  }
}

function finalizeStruct(node: StructNode, obj: Holder): void {
  if (!node.hasCollections) return;
  for (const member of node.members) {
    if (member.node.scalar) continue;
    const value = obj[member.name];
    if (value !== undefined) obj[member.name] = finalize(member.node, value);
  }
}

/**
 * Decodes a Query request (form body or GET query string, already parsed as URLSearchParams or
 * parseForm do it: `+` is a space and stray `%` sequences stay as they are); the first `Action`
 * names the action. `queueUrl` is used when the action takes a QueueUrl and
 * the parameters carry none, as when the request was sent to `/<account>/<queue>`; the caller
 * builds it from the path.
 */
export function decodeQuery(
  params: Iterable<readonly [string, string]>,
  queueUrl?: string,
): { action: ActionName; input: unknown } {
  let actionName: string | undefined;
  for (const [key, value] of params) {
    if (key === 'Action') {
      actionName = value;
      break;
    }
  }
  const op = actionName === undefined ? undefined : compiledOperations.get(actionName);
  if (op === undefined) throw invalidAction(actionName);
  const root = op.input;
  const input: Holder = {};
  for (const [key, value] of params) setMember(root, input, key, 0, value);
  finalizeStruct(root, input);
  if (queueUrl !== undefined) {
    // AWS (recorded): an action that names no queue is refused at a queue's URL, except
    // GetQueueUrl, which answers for the queue it names, this one or another.
    if (root.byName.has('QueueUrl')) input.QueueUrl ??= queueUrl;
    else if (op.action !== 'GetQueueUrl') {
      throw new SqsError('InvalidAction', `The action ${op.action} is not valid for this endpoint.`);
    }
  }
  // The Query wire cannot tell an empty list or map from an absent one; AWS answers a batch with
  // no entries EmptyBatchRequest, not MissingParameter, so a required collection is just empty.
  for (const name of root.required) {
    if (input[name] !== undefined) continue;
    const kind = root.byName.get(name)?.node.k;
    if (kind === 'list') input[name] = [];
    else if (kind === 'map') input[name] = {};
  }
  requireMembers(root.required, input);
  return { action: op.action, input };
}

// ---------------------------------------------------------------------------------------------
// Encoding

// Besides markup: \r, and the characters XML 1.0 cannot carry at all, even as references (C0
// controls other than tab and newline, U+FFFE, U+FFFF). Message bodies are validated before they
// get here; names and values echoed in error messages or tags may not be. Lone surrogates need no
// care: Node writes them as U+FFFD when it encodes the reply.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const NEEDS_ESCAPE = /[&<>"'\r\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]/;
// eslint-disable-next-line no-control-regex -- as above
const ESCAPABLE = /[&<>"'\r\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]/g;

function entity(ch: string): string {
  switch (ch) {
    case '&':
      return '&amp;';
    case '<':
      return '&lt;';
    case '>':
      return '&gt;';
    case '"':
      return '&quot;';
    case "'":
      return '&apos;';
    case '\r':
      // A literal one would come back as \n after XML line-end normalisation.
      return '&#xD;';
    default:
      return '\ufffd';
  }
}

/** XML text escaping; the one regex test is the fast path for the text that needs none. */
export function escapeXml(text: string): string {
  return NEEDS_ESCAPE.test(text) ? text.replace(ESCAPABLE, entity) : text;
}

function scalarText(value: unknown): string {
  if (typeof value === 'string') return escapeXml(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return escapeXml(String(value));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function encodeStruct(node: StructNode, obj: Record<string, unknown>): string {
  let xml = '';
  for (const member of node.members) {
    const value = obj[member.name];
    if (value === undefined || value === null) continue;
    xml += encodeMember(member, value);
  }
  return xml;
}

/** One member; lists and maps are flattened, so each element repeats the member's own tag. */
function encodeMember(member: MemberNode, value: unknown): string {
  const node = member.node;
  if (node.k === 'list') {
    if (!Array.isArray(value)) return '';
    let xml = '';
    for (const element of value as unknown[]) {
      if (element !== undefined && element !== null) {
        xml += encodeValue(node.member, element, member.open, member.close);
      }
    }
    return xml;
  }
  if (node.k === 'map') {
    if (!isRecord(value)) return '';
    let xml = '';
    for (const key of Object.keys(value)) {
      const entry = value[key];
      if (entry === undefined || entry === null) continue;
      xml +=
        member.open +
        node.keyOpen +
        escapeXml(key) +
        node.keyClose +
        encodeValue(node.value, entry, node.valueOpen, node.valueClose) +
        member.close;
    }
    return xml;
  }
  return encodeValue(node, value, member.open, member.close);
}

function encodeValue(node: Node, value: unknown, open: string, close: string): string {
  if (node.k === 'structure') return isRecord(value) ? open + encodeStruct(node, value) + close : '';
  // compiled.ts refuses a collection directly inside a collection, so node is a scalar here.
  return open + scalarText(value) + close;
}

/** AWS starts its SQS replies with one (the API reference samples and recorded replies do). */
const XML_DECLARATION = '<?xml version="1.0"?>';
const METADATA_OPEN = '<ResponseMetadata><RequestId>';
const METADATA_CLOSE = '</RequestId></ResponseMetadata>';

/**
 * `<XxxResponse xmlns="…"><XxxResult>…</XxxResult><ResponseMetadata>…</ResponseMetadata></XxxResponse>`,
 * members in model order; an action without output has no Result element at all.
 */
export function encodeQueryResult(action: ActionName, output: unknown, requestId: string): string {
  const op = compiledOperations.get(action);
  if (op === undefined) throw new Error(`Unknown action ${action}`);
  let xml = XML_DECLARATION + op.responseOpen;
  if (op.output !== undefined) {
    const inner = isRecord(output) ? encodeStruct(op.output, output) : '';
    xml += inner === '' ? op.resultEmpty : op.resultOpen + inner + op.resultClose;
  }
  return xml + METADATA_OPEN + escapeXml(requestId) + METADATA_CLOSE + op.responseClose;
}

/**
 * The Query API's JSON form, for a Query request sent with `Accept: application/json` (AWS answers
 * those in JSON; recorded, not in the API reference): `{"XxxResponse": {"XxxResult": {...},
 * "ResponseMetadata": {"RequestId": ...}}}`. As in AWS's recorded ListQueues and ReceiveMessage
 * replies, every member of the result is present (null when unset) and list members are named in
 * lower camel case (`queueUrls`, `messages`); everything else keeps the JSON protocol's names.
 */
export function encodeQueryJson(action: ActionName, output: unknown, requestId: string): string {
  const op = compiledOperations.get(action);
  if (op === undefined) throw new Error(`Unknown action ${action}`);
  const response: Record<string, unknown> = {};
  if (op.output !== undefined) {
    response[`${action}Result`] = jsonStruct(op.output, isRecord(output) ? output : {});
  }
  response.ResponseMetadata = { RequestId: requestId };
  return JSON.stringify({ [`${action}Response`]: response });
}

function jsonStruct(node: StructNode, obj: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const member of node.members) {
    const value = obj[member.name];
    const m = member.node;
    if (m.k === 'list') {
      const name = member.name.charAt(0).toLowerCase() + member.name.slice(1);
      const element = m.member;
      out[name] = Array.isArray(value)
        ? (value as unknown[]).map((v) =>
            element.k === 'structure' && isRecord(v) ? jsonStruct(element, v) : v,
          )
        : null;
    } else if (m.k === 'structure') {
      out[member.name] = isRecord(value) ? jsonStruct(m, value) : null;
    } else {
      out[member.name] = value ?? null;
    }
  }
  return out;
}

export function encodeQueryError(err: SqsError, requestId: string): EncodedError {
  const def = err.def;
  return {
    status: def.status,
    headers: { 'content-type': QUERY_CONTENT_TYPE },
    body:
      `${XML_DECLARATION}<ErrorResponse xmlns="${XMLNS}"><Error><Type>${def.fault}</Type>` +
      `<Code>${escapeXml(def.queryCode)}</Code><Message>${escapeXml(def.queryMessage ?? err.message)}</Message><Detail/></Error>` +
      `<RequestId>${escapeXml(requestId)}</RequestId></ErrorResponse>`,
  };
}
