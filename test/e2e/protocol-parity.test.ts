/**
 * Protocol parity: the same seeded random requests, over JSON 1.0 and over Query, must get the same
 * answer (HTTP status, error code, normalised result), and never a 5xx.
 *
 * One memory-only server. For each seed a sequence of requests is generated in the JSON shape of
 * the AWS API reference, with `{NS}` where a queue name starts. Each request is sent twice: over
 * JSON with `{NS}` = `p<seed>j-`, then over Query (flattened by hand here, as botocore's
 * service-2.json serializes SQS: Attribute.N.Name/Value, Tag.N.Key/Value, AttributeName.N,
 * MessageAttribute.N.Name/Value.DataType, SendMessageBatchRequestEntry.N.*) with `p<seed>q-`. The
 * two namespaces have names of equal length and their histories evolve in lockstep, so every
 * answer must match once the namespace and the host are normalised away.
 *
 * Nothing here depends on time: no sleeps, WaitTimeSeconds is always 0, and delays are either 0,
 * at least 60 s, or invalid, so no message becomes visible between the two sends of a step.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { Rng } from '../support/rng.js';
import { PROJECT_ROOT, startServer, type RunningServer } from '../support/server.js';
import {
  jsonErrorType,
  jsonPost,
  queryErrorCode,
  queryPost,
  xmlAttributes,
  xmlText,
  xmlTexts,
  type RawResponse,
} from '../support/wire.js';

const SEEDS = [1, 2, 3, 5, 8, 13, 21, 34, 55, 89];
const STEPS = 60;
const ACCOUNT = '000000000000';

type Json = string | number | boolean | null | Json[] | { [k: string]: Json };
type Params = Record<string, Json>;

interface Req {
  readonly action: string;
  readonly params: Params;
}

let server: RunningServer;

before(async () => {
  server = await startServer();
});

after(async () => {
  await server?.stop();
});

/** Query code -> JSON `__type`, from the catalogue in docs/errors.md (not from src/). */
function jsonTypesFromDocs(): Map<string, string> {
  const doc = readFileSync(`${PROJECT_ROOT}docs/errors.md`, 'utf8');
  const out = new Map<string, string>();
  for (const line of doc.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    const code = /^`([^`]+)`$/.exec(cells[3] ?? '')?.[1];
    const type = /^`([^`]+)`$/.exec(cells[4] ?? '')?.[1];
    if (code !== undefined && type !== undefined) out.set(code, type);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Generation (JSON shapes, `{NS}` for the namespace)
// ---------------------------------------------------------------------------------------------

const POOL = ['{NS}a', '{NS}b', '{NS}c', '{NS}f.fifo', '{NS}g.fifo'];
/** CreateQueue also makes `{NS}d`, the queue DeleteQueue mostly deletes. */
const CREATABLE = [...POOL, '{NS}d'];

function queueUrl(rng: Rng): string {
  const name = rng.chance(0.1) ? '{NS}missing' : rng.pick(POOL);
  return `${server.url}/${ACCOUNT}/${name}`;
}

function queueName(rng: Rng): string {
  switch (
    rng.weighted([
      ['pool', 12],
      ['long', 1],
      ['bad', 1],
      ['fifoNoAttr', 1],
      ['maxLen', 1],
    ] as const)
  ) {
    case 'pool':
      return rng.pick(CREATABLE);
    case 'long':
      return `{NS}${'x'.repeat(80)}`;
    case 'bad':
      return rng.pick(['{NS}bad name', '{NS}bad!', '{NS}ünï', '{NS}a.b', '{NS}.fifo.x']);
    case 'fifoNoAttr':
      return '{NS}h.fifo';
    case 'maxLen':
      // With the namespace (`p<seed>j-`, 4 or 5 characters here) 79 or 80: the longest valid names.
      return `{NS}${'m'.repeat(75)}`;
  }
}

function queueAttributes(rng: Rng, forCreate: boolean, fifo: boolean): Params {
  const out: Params = {};
  const n = rng.int(0, 2);
  for (let i = 0; i < n; i++) {
    switch (rng.int(0, 8)) {
      case 0:
        out['VisibilityTimeout'] = String(rng.pick([-1, 0, 30, 43200, 43201]));
        break;
      case 1:
        out['MessageRetentionPeriod'] = String(rng.pick([59, 60, 345600, 1209600, 1209601]));
        break;
      case 2:
        out['DelaySeconds'] = String(rng.pick([0, 900, 901, -1]));
        break;
      case 3:
        out['MaximumMessageSize'] = String(rng.pick([1023, 1024, 262144, 1048576, 1048577]));
        break;
      case 4:
        out['ReceiveMessageWaitTimeSeconds'] = String(rng.pick([0, 21]));
        break;
      case 5:
        out[rng.pick(['Bogus', 'visibilitytimeout', 'ApproximateNumberOfMessages'])] = '1';
        break;
      case 6:
        out['VisibilityTimeout'] = rng.pick(['abc', '', '1.5']);
        break;
      case 7:
        out['ContentBasedDeduplication'] = rng.pick(['true', 'false']);
        break;
      case 8:
        out['FifoQueue'] = rng.pick(['true', 'false']);
        break;
    }
  }
  if (forCreate && fifo && rng.chance(0.85)) out['FifoQueue'] = 'true';
  return out;
}

function messageAttributes(rng: Rng): Params | undefined {
  if (rng.chance(0.6)) return undefined;
  const n = rng.chance(0.05) ? 11 : rng.int(0, 3);
  const out: Params = {};
  for (let i = 0; i < n; i++) {
    const name = rng.chance(0.9) ? `attr${i}` : rng.pick(['AWS.x', 'Amazon.y', 'bad name', '.lead', 'a..b']);
    out[name] = rng.pick<Params>([
      { DataType: 'String', StringValue: 'v' },
      { DataType: 'String', StringValue: 'v' },
      { DataType: 'Number', StringValue: '42' },
      { DataType: 'Number', StringValue: '-1.5e3' },
      { DataType: 'Binary', BinaryValue: 'AQID' },
      { DataType: 'String.custom', StringValue: 'w' },
      { DataType: 'String', StringValue: 'v' },
      { DataType: 'Number', StringValue: '42' },
      { DataType: 'Number', StringValue: 'abc' },
      { DataType: 'Binary', BinaryValue: 'AQID' },
      { DataType: 'String.custom', StringValue: 'w' },
      { StringValue: 'no type' },
      { DataType: 'Bogus', StringValue: 'v' },
      { DataType: 'String' },
    ]);
  }
  return out;
}

function body(rng: Rng): string {
  return rng.pick([
    'hello',
    'hello',
    'second',
    'third',
    'fourth',
    'fifth',
    '',
    'a\u0000b',
    'x\uFFFE',
    'tab\tnl\ncr\r',
    'emoji 😀 ü',
    '<xml a="1">&amp;</xml>',
    'x'.repeat(2000),
  ]);
}

function delay(rng: Rng): number | undefined {
  return rng.chance(0.7) ? undefined : rng.pick([0, 60, 900, 901, -1]);
}

function fifoFields(rng: Rng, into: Params, fifo: boolean): void {
  if (rng.chance(fifo ? 0.9 : 0.1)) into['MessageGroupId'] = rng.pick(['g1', 'g2', 'g1', 'bad group!']);
  if (rng.chance(fifo ? 0.4 : 0.05)) into['MessageDeduplicationId'] = rng.pick(['d1', 'd2', 'd3']);
}

function batchEntry(rng: Rng, i: number, fifo: boolean): Params {
  const e: Params = {
    Id: rng.chance(0.9) ? `e${i}` : rng.pick(['bad id!', '', 'x'.repeat(81)]),
    MessageBody: body(rng),
  };
  const d = delay(rng);
  if (d !== undefined) e['DelaySeconds'] = d;
  const attrs = messageAttributes(rng);
  if (attrs !== undefined) e['MessageAttributes'] = attrs;
  fifoFields(rng, e, fifo);
  return e;
}

function generate(rng: Rng): Req {
  const action = rng.weighted([
    ['CreateQueue', 6],
    ['GetQueueAttributes', 4],
    ['SetQueueAttributes', 3],
    ['SendMessage', 10],
    ['SendMessageBatch', 5],
    ['ReceiveMessage', 5],
    ['DeleteMessage', 1],
    ['ChangeMessageVisibility', 1],
    ['PurgeQueue', 1],
    ['DeleteQueue', 1],
    ['GetQueueUrl', 2],
    ['ListQueues', 2],
  ] as const);
  switch (action) {
    case 'CreateQueue': {
      const name = queueName(rng);
      const params: Params = { QueueName: name };
      const attrs = queueAttributes(rng, true, name.endsWith('.fifo') && name !== '{NS}h.fifo');
      if (Object.keys(attrs).length > 0) params['Attributes'] = attrs;
      if (rng.chance(0.15)) params['tags'] = { team: 'x', env: rng.pick(['dev', 'prod']) };
      return { action, params };
    }
    case 'GetQueueAttributes': {
      const names = rng.pick([
        ['All'],
        ['VisibilityTimeout', 'ApproximateNumberOfMessages'],
        ['QueueArn', 'DelaySeconds', 'MaximumMessageSize'],
        ['Bogus'],
        ['All', 'FifoQueue'],
        [],
      ]);
      const params: Params = { QueueUrl: queueUrl(rng) };
      if (names.length > 0) params['AttributeNames'] = names;
      return { action, params };
    }
    case 'SetQueueAttributes':
      return { action, params: { QueueUrl: queueUrl(rng), Attributes: queueAttributes(rng, false, false) } };
    case 'SendMessage': {
      const url = queueUrl(rng);
      const params: Params = { QueueUrl: url, MessageBody: body(rng) };
      const d = delay(rng);
      if (d !== undefined) params['DelaySeconds'] = d;
      const attrs = messageAttributes(rng);
      if (attrs !== undefined) params['MessageAttributes'] = attrs;
      fifoFields(rng, params, url.endsWith('.fifo'));
      return { action, params };
    }
    case 'SendMessageBatch': {
      const n = rng.weighted([
        ['zero', 1],
        ['some', 6],
        ['eleven', 1],
      ] as const);
      const count = n === 'zero' ? 0 : n === 'eleven' ? 11 : rng.int(1, 4);
      const url = queueUrl(rng);
      const entries = Array.from({ length: count }, (_, i) => batchEntry(rng, i, url.endsWith('.fifo')));
      if (count >= 2 && rng.chance(0.15)) {
        (entries[1] as Params)['Id'] = (entries[0] as Params)['Id'] as Json;
      }
      return { action, params: { QueueUrl: url, Entries: entries } };
    }
    case 'ReceiveMessage': {
      const params: Params = {
        QueueUrl: queueUrl(rng),
        MaxNumberOfMessages: rng.pick([0, 1, 1, 10, 10, 10, 10, 10, 11]),
        WaitTimeSeconds: 0,
      };
      if (rng.chance(0.3)) params['VisibilityTimeout'] = rng.pick([-1, 0, 0, 30, 43200, 43201]);
      if (rng.chance(0.3)) params['AttributeNames'] = ['All'];
      if (rng.chance(0.3)) params['MessageAttributeNames'] = ['All'];
      return { action, params };
    }
    case 'DeleteMessage':
      return { action, params: { QueueUrl: queueUrl(rng), ReceiptHandle: 'bogus-receipt-handle' } };
    case 'ChangeMessageVisibility':
      return {
        action,
        params: { QueueUrl: queueUrl(rng), ReceiptHandle: 'bogus-receipt-handle', VisibilityTimeout: 10 },
      };
    case 'PurgeQueue':
      return { action, params: { QueueUrl: queueUrl(rng) } };
    case 'DeleteQueue':
      // Mostly the queue kept for deleting: a deleted name cannot come back for 60 s.
      return {
        action,
        params: { QueueUrl: rng.chance(0.8) ? `${server.url}/${ACCOUNT}/{NS}d` : queueUrl(rng) },
      };
    case 'GetQueueUrl':
      return { action, params: { QueueName: rng.chance(0.5) ? '{NS}missing' : rng.pick(POOL) } };
    case 'ListQueues': {
      const params: Params = { QueueNamePrefix: rng.pick(['{NS}', '{NS}a', '{NS}zzz']) };
      const max = rng.pick([undefined, 0, 1, 5, 1001]);
      if (max !== undefined) params['MaxResults'] = max;
      return { action, params };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Serialization
// ---------------------------------------------------------------------------------------------

function substitute(v: Json, ns: string): Json {
  if (typeof v === 'string') return v.split('{NS}').join(ns);
  if (Array.isArray(v)) return v.map((x) => substitute(x, ns));
  if (v !== null && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, substitute(x, ns)]));
  }
  return v;
}

/** A scalar as Query sends it; a list or map here is a bug in toQuery. */
function scalar(v: Json): string {
  if (typeof v === 'object' && v !== null) throw new Error(`not a scalar: ${JSON.stringify(v)}`);
  return typeof v === 'string' ? v : String(v);
}

/** A JSON-shaped SQS request flattened into Query parameters, by botocore's serialization names. */
function toQuery(action: string, params: Params): Record<string, string> {
  const out: Record<string, string> = { Action: action };
  const messageAttributes = (prefix: string, attrs: Params): void => {
    Object.entries(attrs).forEach(([name, value], i) => {
      const p = `${prefix}MessageAttribute.${i + 1}`;
      out[`${p}.Name`] = name;
      for (const [k, x] of Object.entries(value as Params)) out[`${p}.Value.${k}`] = scalar(x);
    });
  };
  for (const [key, value] of Object.entries(params)) {
    switch (key) {
      case 'Attributes':
        Object.entries(value as Params).forEach(([n, v], i) => {
          out[`Attribute.${i + 1}.Name`] = n;
          out[`Attribute.${i + 1}.Value`] = scalar(v);
        });
        break;
      case 'tags':
        Object.entries(value as Params).forEach(([n, v], i) => {
          out[`Tag.${i + 1}.Key`] = n;
          out[`Tag.${i + 1}.Value`] = scalar(v);
        });
        break;
      case 'AttributeNames':
        (value as Json[]).forEach((n, i) => (out[`AttributeName.${i + 1}`] = scalar(n)));
        break;
      case 'MessageAttributeNames':
        (value as Json[]).forEach((n, i) => (out[`MessageAttributeName.${i + 1}`] = scalar(n)));
        break;
      case 'MessageAttributes':
        messageAttributes('', value as Params);
        break;
      case 'Entries':
        (value as Params[]).forEach((entry, i) => {
          const p = `SendMessageBatchRequestEntry.${i + 1}.`;
          for (const [k, x] of Object.entries(entry)) {
            if (k === 'MessageAttributes') messageAttributes(p, x as Params);
            else out[`${p}${k}`] = scalar(x);
          }
        });
        break;
      default:
        out[key] = scalar(value);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Outcomes, normalised
// ---------------------------------------------------------------------------------------------

interface Outcome {
  readonly status: number;
  readonly error?: { code: string | undefined; fault: string | undefined };
  readonly result?: unknown;
}

function normalise(s: string, ns: string): string {
  return s
    .split(ns)
    .join('{NS}')
    .replace(/^https?:\/\/[^/]+\//, '<origin>/');
}

function normaliseAttributes(attrs: Record<string, string>, ns: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(attrs)) {
    out[k] = k === 'CreatedTimestamp' || k === 'LastModifiedTimestamp' ? '<ts>' : normalise(v, ns);
  }
  return out;
}

const sortBy = <T>(items: T[], key: (t: T) => string): T[] =>
  [...items].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));

function asRecord(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {};
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/** The comparable result of a JSON success. */
function jsonResult(action: string, text: string, ns: string): unknown {
  const r = asRecord(text === '' ? {} : JSON.parse(text));
  switch (action) {
    case 'CreateQueue':
    case 'GetQueueUrl':
      return { QueueUrl: normalise(String(r['QueueUrl']), ns) };
    case 'GetQueueAttributes':
      return normaliseAttributes(asRecord(r['Attributes']) as Record<string, string>, ns);
    case 'SendMessage':
      return {
        MD5OfMessageBody: str(r['MD5OfMessageBody']),
        MD5OfMessageAttributes: str(r['MD5OfMessageAttributes']),
        MessageId: typeof r['MessageId'] === 'string' && r['MessageId'] !== '',
        SequenceNumber: typeof r['SequenceNumber'] === 'string',
      };
    case 'SendMessageBatch': {
      const ok = (Array.isArray(r['Successful']) ? r['Successful'] : []).map(asRecord);
      const failed = (Array.isArray(r['Failed']) ? r['Failed'] : []).map(asRecord);
      return {
        Successful: sortBy(
          ok.map((e) => ({
            Id: str(e['Id']),
            MD5OfMessageBody: str(e['MD5OfMessageBody']),
            MD5OfMessageAttributes: str(e['MD5OfMessageAttributes']),
            MessageId: typeof e['MessageId'] === 'string' && e['MessageId'] !== '',
          })),
          (e) => e.Id ?? '',
        ),
        Failed: sortBy(
          failed.map((e) => ({
            Id: str(e['Id']),
            Code: str(e['Code']),
            SenderFault: e['SenderFault'] === true,
          })),
          (e) => e.Id ?? '',
        ),
      };
    }
    case 'ReceiveMessage': {
      const msgs = (Array.isArray(r['Messages']) ? r['Messages'] : []).map(asRecord);
      return {
        count: msgs.length,
        bodies: msgs.map((m) => `${str(m['MD5OfBody'])} ${str(m['Body'])}`).sort(),
      };
    }
    case 'ListQueues':
      return {
        QueueUrls: (Array.isArray(r['QueueUrls']) ? r['QueueUrls'] : [])
          .map((u) => normalise(String(u), ns))
          .sort(),
        NextToken: typeof r['NextToken'] === 'string',
      };
    default:
      return {};
  }
}

function xmlBlocks(xml: string, tag: string): string[] {
  return [...xml.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g'))].map((m) => m[1] ?? '');
}

/** The comparable result of a Query success, the same shape as jsonResult's. */
function queryResult(action: string, xml: string, ns: string): unknown {
  switch (action) {
    case 'CreateQueue':
    case 'GetQueueUrl':
      return { QueueUrl: normalise(String(xmlText(xml, 'QueueUrl')), ns) };
    case 'GetQueueAttributes':
      return normaliseAttributes(xmlAttributes(xml), ns);
    case 'SendMessage':
      return {
        MD5OfMessageBody: xmlText(xml, 'MD5OfMessageBody'),
        MD5OfMessageAttributes: xmlText(xml, 'MD5OfMessageAttributes'),
        MessageId: (xmlText(xml, 'MessageId') ?? '') !== '',
        SequenceNumber: xmlText(xml, 'SequenceNumber') !== undefined,
      };
    case 'SendMessageBatch':
      return {
        Successful: sortBy(
          xmlBlocks(xml, 'SendMessageBatchResultEntry').map((e) => ({
            Id: xmlText(e, 'Id'),
            MD5OfMessageBody: xmlText(e, 'MD5OfMessageBody'),
            MD5OfMessageAttributes: xmlText(e, 'MD5OfMessageAttributes'),
            MessageId: (xmlText(e, 'MessageId') ?? '') !== '',
          })),
          (e) => e.Id ?? '',
        ),
        Failed: sortBy(
          xmlBlocks(xml, 'BatchResultErrorEntry').map((e) => ({
            Id: xmlText(e, 'Id'),
            Code: xmlText(e, 'Code'),
            SenderFault: xmlText(e, 'SenderFault') === 'true',
          })),
          (e) => e.Id ?? '',
        ),
      };
    case 'ReceiveMessage': {
      const msgs = xmlBlocks(xml, 'Message');
      return {
        count: msgs.length,
        bodies: msgs.map((m) => `${xmlText(m, 'MD5OfBody')} ${xmlText(m, 'Body')}`).sort(),
      };
    }
    case 'ListQueues':
      return {
        QueueUrls: xmlTexts(xml, 'QueueUrl')
          .map((u) => normalise(u, ns))
          .sort(),
        NextToken: xmlText(xml, 'NextToken') !== undefined,
      };
    default:
      return {};
  }
}

function describeReq(seed: number, step: number, req: Req): string {
  return `seed ${seed} step ${step}: ${req.action} ${JSON.stringify(req.params)}`;
}

function jsonOutcome(
  action: string,
  res: RawResponse,
  ns: string,
  where: string,
  types: Map<string, string>,
): Outcome {
  if (res.status === 200) return { status: 200, result: jsonResult(action, res.text, ns) };
  const header = res.headers.get('x-amzn-query-error') ?? '';
  const [code, fault] = header.split(';');
  const type = jsonErrorType(res.text);
  assert.ok(type !== undefined && type !== '', `${where}: JSON error without __type: ${res.text}`);
  if (code !== undefined && types.has(code)) {
    assert.equal(type, types.get(code), `${where}: JSON __type does not match ${code} in docs/errors.md`);
  }
  return { status: res.status, error: { code, fault } };
}

function queryOutcome(action: string, res: RawResponse, ns: string): Outcome {
  if (res.status === 200) return { status: 200, result: queryResult(action, res.text, ns) };
  return { status: res.status, error: { code: queryErrorCode(res.text), fault: xmlText(res.text, 'Type') } };
}

// ---------------------------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------------------------

test('seeded random requests get the same answer over JSON 1.0 and Query', async () => {
  const types = jsonTypesFromDocs();
  assert.ok(types.size > 20, 'docs/errors.md: could not read the error catalogue');
  const seen = {
    requests: 0,
    errors: new Set<string>(),
    actionsOk: new Set<string>(),
    received: 0,
    entryCodes: new Set<string>(),
  };
  for (const seed of SEEDS) {
    const rng = new Rng(seed);
    const nsJson = `p${seed}j-`;
    const nsQuery = `p${seed}q-`;
    const setup: Req[] = [
      { action: 'CreateQueue', params: { QueueName: '{NS}a' } },
      { action: 'CreateQueue', params: { QueueName: '{NS}c', Attributes: { MaximumMessageSize: '1024' } } },
      { action: 'CreateQueue', params: { QueueName: '{NS}d' } },
      { action: 'CreateQueue', params: { QueueName: '{NS}b', Attributes: { VisibilityTimeout: '0' } } },
      { action: 'CreateQueue', params: { QueueName: '{NS}f.fifo', Attributes: { FifoQueue: 'true' } } },
      {
        action: 'CreateQueue',
        params: {
          QueueName: '{NS}g.fifo',
          Attributes: { FifoQueue: 'true', ContentBasedDeduplication: 'true' },
        },
      },
    ];
    for (let step = 0; step < setup.length + STEPS; step++) {
      const req = setup[step] ?? generate(rng);
      const where = describeReq(seed, step, req);
      const jsonParams = substitute(req.params, nsJson);
      const queryParams = toQuery(req.action, substitute(req.params, nsQuery) as Params);

      const jRes = await jsonPost(server.url, `AmazonSQS.${req.action}`, jsonParams);
      const qRes = await queryPost(server.url, queryParams);
      seen.requests += 2;
      assert.ok(jRes.status < 500, `${where}: JSON answered ${jRes.status}: ${jRes.text}`);
      assert.ok(qRes.status < 500, `${where}: Query answered ${qRes.status}: ${qRes.text}`);

      const j = jsonOutcome(req.action, jRes, nsJson, where, types);
      const q = queryOutcome(req.action, qRes, nsQuery);
      const both = `\n  JSON  ${jRes.status} ${jRes.text.slice(0, 400)}\n  Query ${qRes.status} ${qRes.text.slice(0, 400)}`;
      assert.equal(j.status, q.status, `${where}: HTTP status differs${both}`);
      assert.deepEqual(j.error, q.error, `${where}: error code differs${both}`);
      assert.deepEqual(j.result, q.result, `${where}: result differs${both}`);
      if (j.error?.code !== undefined) seen.errors.add(j.error.code);
      else seen.actionsOk.add(req.action);
      const result = asRecord(j.result);
      if (req.action === 'ReceiveMessage') seen.received += Number(result['count'] ?? 0);
      if (Array.isArray(result['Failed'])) {
        for (const f of result['Failed'] as { Code?: string }[]) seen.entryCodes.add(f.Code ?? '');
      }
    }
  }
  // The generator is meant to reach both outcomes broadly; guard against it degenerating.
  assert.ok(seen.actionsOk.size >= 8, `few actions ever succeeded: ${[...seen.actionsOk].join(', ')}`);
  assert.ok(seen.errors.size >= 6, `few error codes were ever seen: ${[...seen.errors].join(', ')}`);
  assert.ok(seen.received > 0, 'no ReceiveMessage ever returned a message');
  assert.ok(seen.entryCodes.size >= 2, `few batch entry failures: ${[...seen.entryCodes].join(', ')}`);
  console.log(
    `parity: ${seen.requests} requests, ${seen.received} messages received (each protocol); ` +
      `batch entry failures: ${[...seen.entryCodes].sort().join(', ')}; succeeded: ${[...seen.actionsOk].sort().join(', ')}; errors: ${[...seen.errors].sort().join(', ')}`,
  );
});
