/**
 * Malformed requests in both wire protocols (docs/faults.md rows 13-14), sent with node:http so that
 * nothing is cleaned up on the way: bad form encoding, bad JSON, JSON of the wrong types, bodies
 * and values over the limits, unknown and missing actions, missing parameters, other HTTP methods,
 * and a few hundred seeded random bodies and headers.
 *
 * For every one: a 4xx (never a 5xx), a body shaped as AWS shapes errors in the protocol the request
 * was detected as (Query: XML `<ErrorResponse>` with `<Code>`; JSON: an object with `__type`), and
 * afterwards the server still serves (ListQueues in both protocols) and is alive.
 *
 * Protocol detection as the server documents it (docs/compatibility.md, src/protocol/detect.ts): a
 * form body is Query and an `application/x-amz-json*` body JSON; any other body is JSON when it
 * carries an `X-Amz-Target` header, else Query.
 */
import assert from 'node:assert/strict';
import type { OutgoingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { describe, test } from 'node:test';
import { uniqueName } from '../support/server.js';
import { sharedServer } from '../support/sqs.js';
import { md5Hex } from '../support/md5.js';
import { Rng } from '../support/rng.js';
import { jsonErrorType, queryErrorCode, rawHttp, xmlText } from '../support/wire.js';

const FORM = 'application/x-www-form-urlencoded; charset=utf-8';
const JSON_10 = 'application/x-amz-json-1.0';

const sqs = sharedServer();

interface Req {
  readonly label: string;
  readonly method?: string;
  readonly path?: string;
  readonly headers?: OutgoingHttpHeaders;
  readonly body?: string | Uint8Array;
}

interface Seen {
  readonly status: number;
  readonly text: string;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly code?: string | undefined;
}

function headerValue(headers: OutgoingHttpHeaders | undefined, name: string): string | undefined {
  if (headers === undefined) return undefined;
  for (const [k, v] of Object.entries(headers)) {
    if (k.toLowerCase() === name)
      return Array.isArray(v) ? String(v[0]) : v === undefined ? undefined : String(v);
  }
  return undefined;
}

/** Which error shape the request must get back, or 'either' where only one of the JSON signs is present. */
function expectedShape(req: Req): 'json' | 'query' | 'either' {
  const target = headerValue(req.headers, 'x-amz-target') !== undefined;
  const contentType = (headerValue(req.headers, 'content-type') ?? '').toLowerCase();
  if (contentType.startsWith('application/x-www-form-urlencoded')) return 'query';
  const jsonBody = contentType.startsWith('application/x-amz-json');
  if (target && jsonBody) return 'json';
  if (!target && !jsonBody) return 'query';
  return 'either';
}

async function send(req: Req): Promise<Seen> {
  const body = req.body;
  const headers: OutgoingHttpHeaders = { ...(req.headers ?? {}) };
  if (body !== undefined) headers['content-length'] = Buffer.byteLength(body);
  try {
    return await rawHttp(sqs.server.url, {
      method: req.method ?? 'POST',
      path: req.path ?? '/',
      headers,
      ...(body === undefined ? {} : { body }),
    });
  } catch (e) {
    // EPIPE / ECONNRESET: the server closed the connection before the client could read an answer.
    throw new Error(
      `${req.label}: no HTTP answer could be read (${(e as Error).message}): the server closed the ` +
        'connection while the request was still being sent, so a client never sees the error',
      { cause: e },
    );
  }
}

/**
 * Sends `req` and checks the answer is an AWS-shaped 4xx; returns it with its error code (the Query
 * `<Code>`, or the JSON `__type`).
 */
async function expectAwsClientError(req: Req, status?: number): Promise<Seen> {
  const res = await send(req);
  const where = `${req.label}: ${res.status} ${res.text.slice(0, 300)}`;
  const wrong = problemWith(req, res);
  assert.equal(wrong, undefined, `${wrong ?? ''} (${where})`);
  if (status !== undefined) assert.equal(res.status, status, where);
  return { ...res, code: queryErrorCode(res.text) ?? jsonErrorType(res.text) };
}

/** What is wrong with the answer to `req`, or undefined when it is an AWS-shaped 4xx. */
function problemWith(req: Req, res: Seen): string | undefined {
  if (res.status < 400 || res.status >= 500) return '4xx expected';
  const xmlCode = queryErrorCode(res.text);
  const jsonType = jsonErrorType(res.text);
  switch (expectedShape(req)) {
    case 'query':
      // AWS's answer to a GET of a queue's URL without a query (test/unit/data-plane.test.ts) is this, not an <ErrorResponse>.
      if (res.status === 404 && res.text === '<UnknownOperationException/>') return undefined;
      return xmlCode === undefined ? 'Query <ErrorResponse> with <Code> expected' : undefined;
    case 'json':
      return jsonType === undefined ? 'JSON object with __type expected' : undefined;
    case 'either':
      return xmlCode === undefined && jsonType === undefined ? 'an AWS-shaped error expected' : undefined;
  }
}

/** The server still answers a valid ListQueues in both protocols, and the process is alive. */
async function expectStillServing(): Promise<void> {
  assert.ok(sqs.server.alive(), `the server process died:\n${sqs.server.logs().slice(-3000)}`);
  const q = await send({
    label: 'ListQueues (Query)',
    headers: { 'content-type': FORM },
    body: 'Action=ListQueues&Version=2012-11-05',
  });
  assert.equal(q.status, 200, `Query ListQueues after the abuse: ${q.text.slice(0, 300)}`);
  assert.match(q.text, /<ListQueuesResponse/);
  const j = await send({
    label: 'ListQueues (JSON)',
    headers: { 'content-type': JSON_10, 'x-amz-target': 'AmazonSQS.ListQueues' },
    body: '{}',
  });
  assert.equal(j.status, 200, `JSON ListQueues after the abuse: ${j.text.slice(0, 300)}`);
  assert.equal(typeof JSON.parse(j.text), 'object');
}

const query = (label: string, body: string | Uint8Array, extra: OutgoingHttpHeaders = {}): Req => ({
  label: `Query: ${label}`,
  headers: { 'content-type': FORM, ...extra },
  body,
});
const json = (label: string, target: string, body: string | Uint8Array): Req => ({
  label: `JSON: ${label}`,
  headers: { 'content-type': JSON_10, 'x-amz-target': target },
  body,
});

const NO_SUCH_QUEUE = 'http://127.0.0.1:1/000000000000/no-such-queue-malformed';

describe('Query protocol: malformed form bodies', () => {
  test('Given bad percent-encoding, lone separators or binary garbage, Then AWS-shaped 4xx', async () => {
    const cases: Req[] = [
      query('%zz as the whole body', '%zz'),
      query('%zz in the action name', 'Action=Send%zzMessage&Version=2012-11-05'),
      query('a lone %', 'Action=GetQueueUrl&QueueName=%&Version=2012-11-05'),
      query('invalid UTF-8 after decoding', 'Action=GetQueueUrl&QueueName=%ff%fe%fd&Version=2012-11-05'),
      query('lone &&&', '&&&'),
      query('only =', '==='),
      query('empty body', ''),
      query('binary garbage', Buffer.from([0, 255, 1, 254, 0x25, 0x7a, 0x7a, 0x26, 0x3d, 0x80, 0xc3, 0x28])),
      query('NUL in the action', 'Action=Get%00QueueUrl&QueueName=x&Version=2012-11-05'),
      query('JSON sent as a form', '{"Action":"GetQueueUrl","QueueName":"x"}'),
    ];
    for (const c of cases) await expectAwsClientError(c);
    await expectStillServing();
  });

  test('Given Action=Nope, Then 400 InvalidAction naming the action, in AWS wording', async () => {
    const res = await expectAwsClientError(query('unknown action', 'Action=Nope&Version=2012-11-05'), 400);
    assert.equal(res.code, 'InvalidAction');
    assert.equal(xmlText(res.text, 'Message'), 'The action Nope is not valid for this endpoint.');
  });

  test('Given no Action at all, Then an AWS-shaped 400', async () => {
    await expectAwsClientError(query('missing Action', 'QueueName=x&Version=2012-11-05'), 400);
    await expectAwsClientError(query('empty Action', 'Action=&Version=2012-11-05'), 400);
  });

  test('Given SendMessage without MessageBody or without QueueUrl, Then 400 MissingParameter', async () => {
    const queueUrl = await createQueueQuery();
    const noBody = await expectAwsClientError(
      query(
        'SendMessage without MessageBody',
        `Action=SendMessage&Version=2012-11-05&QueueUrl=${encodeURIComponent(queueUrl)}`,
      ),
      400,
    );
    assert.equal(noBody.code, 'MissingParameter');
    const noUrl = await expectAwsClientError(
      query('SendMessage without QueueUrl', 'Action=SendMessage&Version=2012-11-05&MessageBody=hello'),
      400,
    );
    assert.equal(noUrl.code, 'MissingParameter');
  });

  test('Given a 900 KB queue name, When CreateQueue, Then an AWS-shaped 400 and no queue', async () => {
    const res = await expectAwsClientError(
      query('900 KB QueueName', `Action=CreateQueue&Version=2012-11-05&QueueName=${'q'.repeat(900_000)}`),
      400,
    );
    assert.equal(res.code, 'InvalidParameterValue');
    await expectStillServing();
  });

  test('Given a 5 MiB body, Then 413 with an AWS-shaped error that the client can read, every time', async () => {
    const big = `Action=SendMessage&Version=2012-11-05&QueueUrl=${encodeURIComponent(NO_SUCH_QUEUE)}&MessageBody=${'x'.repeat(5 * 1024 * 1024)}`;
    // Three times: whether the client sees the answer must not depend on a race with the upload.
    for (let i = 0; i < 3; i++) await expectAwsClientError(query(`5 MiB body, try ${i + 1}`, big), 413);
    await expectStillServing();
  });

  test('Given GET with a query string, Then a valid one is served and invalid ones are AWS-shaped 4xx', async () => {
    const ok = await send({
      label: 'GET ListQueues',
      method: 'GET',
      path: '/?Action=ListQueues&Version=2012-11-05',
    });
    assert.equal(ok.status, 200, ok.text.slice(0, 300));
    assert.match(ok.text, /<ListQueuesResponse/);
    const nope = await expectAwsClientError(
      { label: 'GET Action=Nope', method: 'GET', path: '/?Action=Nope' },
      400,
    );
    assert.equal(nope.code, 'InvalidAction');
    assert.equal(xmlText(nope.text, 'Message'), 'The action Nope is not valid for this endpoint.');
    await expectAwsClientError({ label: 'GET %zz', method: 'GET', path: '/?%zz&&&=' });
    await expectAwsClientError({ label: 'GET without Action', method: 'GET', path: '/?QueueName=x' });
    await expectAwsClientError({ label: 'GET bare', method: 'GET', path: '/' });
  });

  test('Given a path that is not a valid URL component (%zz, a lone %), Then an AWS-shaped 4xx', async () => {
    for (const path of ['/%zz', '/%', '/000000000000/%zz', '/?Action=ListQueues%']) {
      await expectAwsClientError({
        label: `POST ${path} (Query)`,
        path,
        headers: { 'content-type': FORM },
        body: 'Action=GetQueueUrl&Version=2012-11-05&QueueName=x',
      });
      await expectAwsClientError({
        label: `POST ${path} (JSON)`,
        path,
        headers: { 'content-type': JSON_10, 'x-amz-target': 'AmazonSQS.GetQueueUrl' },
        body: '{"QueueName":"x"}',
      });
    }
    await expectStillServing();
  });

  test('Given PUT, DELETE, PATCH or OPTIONS, Then an AWS-shaped 4xx', async () => {
    for (const method of ['PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
      await expectAwsClientError({
        label: `${method} (Query)`,
        method,
        headers: { 'content-type': FORM },
        body: 'Action=ListQueues&Version=2012-11-05',
      });
      await expectAwsClientError({
        label: `${method} (JSON)`,
        method,
        headers: { 'content-type': JSON_10, 'x-amz-target': 'AmazonSQS.ListQueues' },
        body: '{}',
      });
    }
    await expectStillServing();
  });
});

describe('JSON protocol: malformed bodies', () => {
  test('Given bad JSON, Then AWS-shaped 400s', async () => {
    const cases = [
      '{',
      '{"QueueName":',
      '{"QueueName":"x",}',
      "{'QueueName':'x'}",
      'not json',
      '\u0000\u0001\u0002',
      '{"QueueName":"x"}{"QueueName":"y"}',
      '[',
      '"',
      '{"a":' + '['.repeat(5000) + ']'.repeat(5000) + '}',
    ];
    for (const body of cases) {
      await expectAwsClientError(
        json(`bad JSON ${JSON.stringify(body.slice(0, 30))}`, 'AmazonSQS.GetQueueUrl', body),
        400,
      );
    }
    await expectAwsClientError(
      json('binary garbage', 'AmazonSQS.GetQueueUrl', Buffer.from([0xff, 0xfe, 0x7b, 0x00])),
      400,
    );
    await expectStillServing();
  });

  test('Given JSON that is not an object, Then AWS-shaped 400s', async () => {
    for (const body of ['[]', '"QueueName"', '42', 'null', 'true']) {
      await expectAwsClientError(json(`non-object ${body}`, 'AmazonSQS.GetQueueUrl', body), 400);
    }
  });

  test('Given members of the wrong JSON type, Then AWS-shaped 400s and nothing is done', async () => {
    const queueUrl = await createQueueQuery();
    const cases: Array<[string, string, unknown]> = [
      [
        'string for MaxNumberOfMessages',
        'AmazonSQS.ReceiveMessage',
        { QueueUrl: queueUrl, MaxNumberOfMessages: '5' },
      ],
      [
        'float for MaxNumberOfMessages',
        'AmazonSQS.ReceiveMessage',
        { QueueUrl: queueUrl, MaxNumberOfMessages: 1.5 },
      ],
      ['object for QueueName', 'AmazonSQS.CreateQueue', { QueueName: { name: 'x' } }],
      ['number for QueueName', 'AmazonSQS.GetQueueUrl', { QueueName: 12 }],
      [
        'array for Attributes',
        'AmazonSQS.CreateQueue',
        { QueueName: uniqueName('mal-arr'), Attributes: ['VisibilityTimeout', '5'] },
      ],
      [
        'number attribute value',
        'AmazonSQS.SetQueueAttributes',
        { QueueUrl: queueUrl, Attributes: { VisibilityTimeout: 5 } },
      ],
      ['string for Entries', 'AmazonSQS.SendMessageBatch', { QueueUrl: queueUrl, Entries: 'e' }],
      ['null entry', 'AmazonSQS.SendMessageBatch', { QueueUrl: queueUrl, Entries: [null] }],
      ['object for MessageBody', 'AmazonSQS.SendMessage', { QueueUrl: queueUrl, MessageBody: { a: 1 } }],
      [
        'number for BinaryValue',
        'AmazonSQS.SendMessage',
        {
          QueueUrl: queueUrl,
          MessageBody: 'x',
          MessageAttributes: { b: { DataType: 'Binary', BinaryValue: 7 } },
        },
      ],
      [
        'string for DelaySeconds',
        'AmazonSQS.SendMessage',
        { QueueUrl: queueUrl, MessageBody: 'x', DelaySeconds: '1' },
      ],
      [
        'huge integer',
        'AmazonSQS.SendMessage',
        { QueueUrl: queueUrl, MessageBody: 'x', DelaySeconds: 1e300 },
      ],
      ['array for TagKeys member', 'AmazonSQS.UntagQueue', { QueueUrl: queueUrl, TagKeys: [['a']] }],
    ];
    for (const [label, target, body] of cases) {
      await expectAwsClientError(json(label, target, JSON.stringify(body)), 400);
    }
    const attrs = await send({
      label: 'GetQueueAttributes',
      headers: { 'content-type': JSON_10, 'x-amz-target': 'AmazonSQS.GetQueueAttributes' },
      body: JSON.stringify({
        QueueUrl: queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'VisibilityTimeout'],
      }),
    });
    assert.equal(attrs.status, 200);
    assert.deepEqual((JSON.parse(attrs.text) as { Attributes?: unknown }).Attributes, {
      ApproximateNumberOfMessages: '0',
      VisibilityTimeout: '30',
    });
    await expectStillServing();
  });

  test('Given X-Amz-Target AmazonSQS.Nope, Then 400 with a __type', async () => {
    await expectAwsClientError(json('unknown operation', 'AmazonSQS.Nope', '{}'), 400);
    await expectAwsClientError(json('other service', 'DynamoDB_20120810.ListTables', '{}'), 400);
    await expectAwsClientError(json('empty target', '', '{}'), 400);
    await expectAwsClientError(json('prefix only', 'AmazonSQS.', '{}'), 400);
  });

  test('Given the JSON content type but no X-Amz-Target, Then an AWS-shaped 400', async () => {
    await expectAwsClientError(
      { label: 'JSON without target', headers: { 'content-type': JSON_10 }, body: '{}' },
      400,
    );
  });

  test('Given SendMessage without MessageBody or without QueueUrl, Then 400 MissingParameter', async () => {
    const queueUrl = await createQueueQuery();
    for (const [label, body] of [
      ['without MessageBody', { QueueUrl: queueUrl }],
      ['without QueueUrl', { MessageBody: 'hello' }],
    ] as const) {
      const res = await send(json(label, 'AmazonSQS.SendMessage', JSON.stringify(body)));
      assert.equal(res.status, 400, res.text);
      assert.ok(jsonErrorType(res.text), res.text);
      assert.equal(res.headers['x-amzn-query-error'], 'MissingParameter;Sender', res.text);
    }
  });

  test('Given a 900 KB queue name, Then an AWS-shaped 400', async () => {
    await expectAwsClientError(
      json('900 KB QueueName', 'AmazonSQS.CreateQueue', JSON.stringify({ QueueName: 'q'.repeat(900_000) })),
      400,
    );
  });

  test('Given a 5 MiB body, Then 413 with a __type that the client can read, every time', async () => {
    const body = JSON.stringify({ QueueUrl: NO_SUCH_QUEUE, MessageBody: 'x'.repeat(5 * 1024 * 1024) });
    for (let i = 0; i < 3; i++) {
      await expectAwsClientError(json(`5 MiB body, try ${i + 1}`, 'AmazonSQS.SendMessage', body), 413);
    }
    await expectStillServing();
  });
});

// ---------------------------------------------------------------------------------------------
// Seeded random garbage
// ---------------------------------------------------------------------------------------------

const SEED = 0x5e1f_5eed;
const RANDOM_REQUESTS = 300;

/**
 * Builds garbage that can never be a valid request: no ListQueues anywhere (it needs no
 * parameters), CreateQueue names always invalid, every queue URL or name one that does not exist.
 */
function garbageFactory(random: () => number): () => Req {
  const int = (n: number): number => Math.floor(random() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)] as T;
  const printable = (n: number): string =>
    Array.from({ length: n }, () => String.fromCharCode(32 + int(95))).join('');
  const bytes = (n: number): Buffer => Buffer.from(Array.from({ length: n }, () => int(256)));
  const unicode = (n: number): string =>
    Array.from({ length: n }, () =>
      pick(['a', 'é', '✓', '\u{1F600}', '\u0000', '\uFFFE', '\uD800', '&', '=', '%', '+', '<', '"', '\\']),
    ).join('');

  const actions = [
    'Nope',
    '',
    'SendMessage',
    'SendMessageBatch',
    'ReceiveMessage',
    'DeleteMessage',
    'DeleteMessageBatch',
    'ChangeMessageVisibility',
    'GetQueueUrl',
    'GetQueueAttributes',
    'SetQueueAttributes',
    'PurgeQueue',
    'DeleteQueue',
    'TagQueue',
    'CreateQueue',
    'sendmessage',
    'SendMessage ',
    'Send%zzMessage',
  ];
  const targets = [
    'AmazonSQS.Nope',
    'AmazonSQS.',
    'AmazonSQS',
    '',
    'amazonsqs.sendmessage',
    'AmazonSQS.SendMessage',
    'AmazonSQS.SendMessageBatch',
    'AmazonSQS.ReceiveMessage',
    'AmazonSQS.GetQueueUrl',
    'AmazonSQS.DeleteMessage',
    'AmazonSQS.CreateQueue',
    'AmazonSQS.SetQueueAttributes',
    'AmazonSQS.SendMessage.Extra',
    'DynamoDB_20120810.GetItem',
  ];
  const contentTypes = [
    FORM,
    'application/x-www-form-urlencoded',
    JSON_10,
    'application/x-amz-json-1.1',
    'application/json',
    'text/plain',
    'multipart/form-data; boundary=x',
    'application/x-www-form-urlencoded; charset=latin1',
    'garbage',
    undefined,
  ];
  const badQueueUrls = [
    NO_SUCH_QUEUE,
    '',
    'not a url',
    'http://',
    '/000000000000/',
    `http://127.0.0.1:1/${'x'.repeat(300)}`,
    'http://127.0.0.1:1/000000000000/../../etc',
  ];
  const badNames = ['', 'bad name!', 'x'.repeat(81), 'a/b', '..', 'é', '%00'];
  const paramKeys = [
    'MessageBody',
    'DelaySeconds',
    'MaxNumberOfMessages',
    'WaitTimeSeconds',
    'VisibilityTimeout',
    'ReceiptHandle',
    'Attribute.1.Name',
    'Attribute.1.Value',
    'Attribute.0.Name',
    'MessageAttribute.1.Name',
    'MessageAttribute.1.Value.DataType',
    'MessageAttribute.1.Value.StringValue',
    'MessageAttribute.1.Value.BinaryValue',
    'SendMessageBatchRequestEntry.1.Id',
    'SendMessageBatchRequestEntry.99999999999.Id',
    'Tag.1.Key',
    'AttributeName.1',
    'Version',
    '',
    '%zz',
    'x'.repeat(200),
  ];
  const randomValue = (): string =>
    pick([
      () => printable(int(40)),
      () => unicode(int(20)),
      () => String(int(100_000) - 50_000),
      () => '1e309',
      () => '-0',
      () => 'x'.repeat(int(5000)),
      () => '',
    ])();
  const encodePart = (s: string): string =>
    pick([
      () => encodeLoosely(s),
      () => s, // raw: stray &, =, % and all
      () => `${encodeLoosely(s)}%${pick(['', 'z', 'zz', 'f', 'C3', 'ff'])}`,
    ])();

  const formBody = (): string => {
    const pairs: string[] = [];
    const action = int(8) === 0 ? undefined : pick(actions);
    if (action !== undefined) pairs.push(`Action=${encodePart(action)}`);
    if (action === 'CreateQueue' || action === 'GetQueueUrl' || random() < 0.3) {
      pairs.push(
        `QueueName=${encodePart(action === 'GetQueueUrl' && random() < 0.5 ? uniqueName('nosuch') : pick(badNames))}`,
      );
    } else {
      pairs.push(`QueueUrl=${encodePart(pick(badQueueUrls))}`);
    }
    for (let i = int(8); i > 0; i--)
      pairs.push(`${encodePart(pick(paramKeys))}=${encodePart(randomValue())}`);
    if (random() < 0.2) pairs.push(pick(['&&&', '=', '==', '%', '&=&', '%zz']));
    // Shuffle.
    for (let i = pairs.length - 1; i > 0; i--) {
      const j = int(i + 1);
      [pairs[i], pairs[j]] = [pairs[j] as string, pairs[i] as string];
    }
    return pairs.join('&');
  };

  const jsonValue = (depth: number): unknown =>
    pick<() => unknown>([
      () => randomValue(),
      () => int(1000) - 500,
      () => random() * 1e20,
      () => random() < 0.5,
      () => null,
      () => (depth > 3 ? [] : Array.from({ length: int(4) }, () => jsonValue(depth + 1))),
      () =>
        depth > 3
          ? {}
          : Object.fromEntries(Array.from({ length: int(4) }, () => [pick(jsonKeys), jsonValue(depth + 1)])),
    ])();
  const jsonKeys = [
    'MessageBody',
    'DelaySeconds',
    'MaxNumberOfMessages',
    'WaitTimeSeconds',
    'Attributes',
    'MessageAttributes',
    'Entries',
    'Id',
    'ReceiptHandle',
    'Tags',
    'AttributeNames',
    '__proto__',
    'constructor',
    '',
    'x'.repeat(100),
  ];
  const jsonBody = (): string | Buffer =>
    pick<() => string | Buffer>([
      () => bytes(int(300)),
      () => printable(int(300)),
      () => JSON.stringify(jsonValue(0)),
      () => {
        // An object naming a queue that cannot exist (or an invalid name), plus random members.
        const o: Record<string, unknown> = {};
        if (random() < 0.5) o['QueueUrl'] = random() < 0.7 ? pick(badQueueUrls) : jsonValue(2);
        else o['QueueName'] = random() < 0.7 ? pick(badNames) : jsonValue(2);
        for (let i = int(6); i > 0; i--) o[pick(jsonKeys)] = jsonValue(1);
        return JSON.stringify(o);
      },
      () => JSON.stringify(jsonValue(0)).slice(0, -1 - int(3)),
    ])();

  const headerValueGarbage = (): string => printable(1 + int(200)).trim() || 'x';

  return () => {
    const kind = pick(['form', 'json', 'bytes', 'mixed'] as const);
    const headers: OutgoingHttpHeaders = {};
    let body: string | Buffer;
    if (kind === 'form') {
      const ct = pick(contentTypes.filter((c) => c === undefined || !c.startsWith('application/x-amz-json')));
      if (ct !== undefined) headers['content-type'] = ct;
      body = formBody();
    } else if (kind === 'json') {
      headers['content-type'] = pick([JSON_10, 'application/x-amz-json-1.1', JSON_10.toUpperCase()]);
      headers['x-amz-target'] = random() < 0.9 ? pick(targets) : headerValueGarbage();
      body = jsonBody();
    } else if (kind === 'bytes') {
      const ct = pick(contentTypes);
      if (ct !== undefined) headers['content-type'] = ct;
      if (random() < 0.5) headers['x-amz-target'] = pick(targets);
      body = bytes(int(2000));
    } else {
      const ct = pick(contentTypes);
      if (ct !== undefined) headers['content-type'] = ct;
      if (random() < 0.5) headers['x-amz-target'] = random() < 0.5 ? pick(targets) : headerValueGarbage();
      body = random() < 0.5 ? formBody() : jsonBody();
    }
    // Random extra headers that change nothing about framing.
    for (let i = int(4); i > 0; i--) {
      const name = pick([
        'x-amzn-query-mode',
        'x-amz-date',
        'authorization',
        'x-amz-security-token',
        'x-forwarded-host',
        'x-forwarded-proto',
        'accept',
        'accept-encoding',
        'user-agent',
        'x-amz-user-agent',
        `x-garbage-${int(1000)}`,
      ]);
      headers[name] = headerValueGarbage();
    }
    const method = random() < 0.85 ? 'POST' : pick(['GET', 'PUT', 'DELETE', 'PATCH']);
    const path = pick([
      '/',
      '/',
      '/',
      '/000000000000/no-such-queue',
      '/%zz',
      '/a/b/c/d',
      `/?Action=${encodeLoosely(pick(actions))}`,
      '//',
    ]);
    return { label: `random ${kind} ${method} ${path}`, method, path, headers, body };
  };
}

describe('seeded random garbage', () => {
  test(
    `Given ${RANDOM_REQUESTS} random bodies and headers (seed ${SEED.toString(16)}), Then every answer is an AWS-shaped 4xx and the server still serves`,
    { timeout: 60_000 },
    async () => {
      const rng = new Rng(SEED);
      const next = garbageFactory(() => rng.next());
      // Every failure is collected, grouped by what came back, so one run shows every kind of defect.
      const failures = new Map<string, { count: number; example: string }>();
      for (let i = 0; i < RANDOM_REQUESTS; i++) {
        const req = next();
        const label = `#${i} ${req.label} headers=${JSON.stringify(req.headers)}`;
        let key: string | undefined;
        try {
          const res = await send(req);
          const wrong = problemWith(req, res);
          if (wrong !== undefined) key = `${wrong}: got ${res.status} ${res.text.slice(0, 100)}`;
        } catch (e) {
          key = (e as Error).message.replace(/^.*?: no HTTP answer/, 'no HTTP answer');
        }
        if (key !== undefined) {
          const group = failures.get(key) ?? { count: 0, example: label.slice(0, 600) };
          group.count++;
          failures.set(key, group);
        }
        if (i % 50 === 49) await expectStillServing();
      }
      await expectStillServing();
      const report = [...failures.entries()].map(([k, v]) => `${v.count} x ${k}\n   e.g. ${v.example}`);
      assert.equal(report.length, 0, `requests not answered with an AWS-shaped 4xx:\n${report.join('\n')}`);
    },
  );

  test('Then the server logged no internal failure', () => {
    assert.doesNotMatch(
      sqs.server.logs(),
      /InternalFailure|unexpected error/i,
      sqs.server.logs().slice(-3000),
    );
  });
});

/**
 * Bytes that are not UTF-8 in a message, over both protocols: a surrogate encoded (ED A0 80), FF,
 * an overlong NUL (C0 80), past U+10FFFF (F4 90 80 80), and sequences cut short. Each is refused
 * with InvalidMessageContents and nothing is stored; the valid neighbours (U+FFFD itself, a 4-byte
 * character) are stored as sent, with the MD5 of what was sent.
 */
describe('invalid UTF-8 is refused, not rewritten', () => {
  const bad: ReadonlyArray<readonly number[]> = [
    [0xed, 0xa0, 0x80],
    [0xff],
    [0xc0, 0x80],
    [0xf4, 0x90, 0x80, 0x80],
    [0xe2, 0x82],
    [0xf0, 0x9f, 0x98],
    [0x80],
  ];
  const good: ReadonlyArray<readonly number[]> = [
    [0xef, 0xbf, 0xbd],
    [0xf0, 0x9f, 0x98, 0x80],
  ];
  const pct = (bytes: readonly number[]): string =>
    bytes.map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
  const depth = async (queueUrl: string): Promise<string | undefined> => {
    const res = await send(
      query(
        'GetQueueAttributes',
        `Action=GetQueueAttributes&Version=2012-11-05&QueueUrl=${encodeURIComponent(queueUrl)}&AttributeName.1=ApproximateNumberOfMessages`,
      ),
    );
    return /<Value>(\d+)<\/Value>/.exec(res.text)?.[1];
  };

  test('Given bytes that are not UTF-8 (percent-encoded in a Query body or URL, raw in a Query or JSON body), When SendMessage, Then 400 InvalidMessageContents and nothing stored', async () => {
    const queueUrl = await createQueueQuery();
    const path = new URL(queueUrl).pathname;
    for (const seq of bad) {
      const form = `Action=SendMessage&Version=2012-11-05&QueueUrl=${encodeURIComponent(queueUrl)}&MessageBody=a${pct(seq)}b`;
      const label = pct(seq);
      const answers = [
        await expectAwsClientError(query(`body ${label}`, form), 400),
        await expectAwsClientError({ label: `GET ${label}`, method: 'GET', path: `${path}?${form}` }, 400),
        await expectAwsClientError(
          query(
            `raw bytes ${label}`,
            Buffer.concat([
              Buffer.from(
                `Action=SendMessage&Version=2012-11-05&QueueUrl=${encodeURIComponent(queueUrl)}&MessageBody=a`,
              ),
              Buffer.from(seq),
              Buffer.from('b'),
            ]),
          ),
          400,
        ),
        await expectAwsClientError(
          json(
            `raw bytes ${label}`,
            'AmazonSQS.SendMessage',
            Buffer.concat([
              Buffer.from(`{"QueueUrl":${JSON.stringify(queueUrl)},"MessageBody":"a`),
              Buffer.from(seq),
              Buffer.from('b"}'),
            ]),
          ),
          400,
        ),
      ];
      assert.deepEqual(
        answers.map((a) => a.code),
        [
          'InvalidMessageContents',
          'InvalidMessageContents',
          'InvalidMessageContents',
          'com.amazonaws.sqs#InvalidMessageContents',
        ],
        label,
      );
    }
    assert.equal(await depth(queueUrl), '0');
  });

  test('Given U+FFFD itself and a 4-byte character, When sent percent-encoded, Then stored as sent with the MD5 of what was sent', async () => {
    const queueUrl = await createQueueQuery();
    for (const seq of good) {
      const res = await send(
        query(
          pct(seq),
          `Action=SendMessage&Version=2012-11-05&QueueUrl=${encodeURIComponent(queueUrl)}&MessageBody=a${pct(seq)}b`,
        ),
      );
      assert.equal(res.status, 200, res.text);
      const sent = Buffer.concat([Buffer.from('a'), Buffer.from(seq), Buffer.from('b')]);
      assert.equal(/<MD5OfMessageBody>([0-9a-f]+)</.exec(res.text)?.[1], md5Hex(sent));
    }
    assert.equal(await depth(queueUrl), String(good.length));
  });
});

/**
 * What Node's HTTP server refuses or answers itself, before there is a request for fastify: headers
 * over its 16 KiB, a NUL byte in a header (X-Amz-Target included), a Content-Length or chunk it
 * cannot read, HTTP/1.1 without Host, an Expect other than 100-continue, CONNECT, a version it does
 * not speak. Sent on a raw socket (node:http will not send these). The answer is AWS-shaped in the
 * protocol the request's headers name (docs/errors.md), with a request id, and the connection is
 * closed; over JSON the x-amzn-query-error header names the same error as the body's `__type`.
 * (Headers or a body not sent in time, 408: test/unit/data-plane.test.ts.)
 */
describe('errors below SQS: the HTTP server', () => {
  function rawExchange(request: Buffer): Promise<string> {
    const { hostname, port } = new URL(sqs.server.url);
    return new Promise((resolve, reject) => {
      const socket = connect({ host: hostname, port: Number(port) });
      const chunks: Buffer[] = [];
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.on('error', reject);
      socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
      socket.setTimeout(30_000, () => socket.destroy(new Error('no answer in 30 s')));
      // The server may close before all of a too-large request is written: that is its answer.
      socket.write(request, () => undefined);
    });
  }
  const JSON_HEAD = `content-type: ${JSON_10}\r\nx-amz-target: AmazonSQS.ListQueues\r\n`;
  const QUERY_HEAD = `content-type: ${FORM}\r\n`;

  interface Case {
    readonly label: string;
    /** The protocol's own headers, when the case is in them. */
    readonly json?: string;
    readonly query?: string;
    readonly line?: string;
    readonly host?: false;
    /** Headers after the protocol's, and the framing of a 2-byte body unless given. */
    readonly head: string;
    readonly status: string;
    readonly code: string;
    readonly type: string;
  }
  const badRequest = {
    status: '400',
    code: 'BadRequest',
    type: 'com.amazon.coral.service#BadRequestException',
  };
  const cases: readonly Case[] = [
    {
      label: 'a 100 KB header',
      head: `x-big: ${'a'.repeat(100_000)}\r\ncontent-length: 2\r\n`,
      status: '431',
      code: 'RequestHeaderFieldsTooLarge',
      type: 'com.amazon.coral.service#RequestHeaderFieldsTooLargeException',
    },
    {
      label: 'a NUL byte in a header',
      head: 'x-amz-date: 2026\u0000\r\ncontent-length: 2\r\n',
      ...badRequest,
    },
    {
      label: 'a NUL byte in X-Amz-Target',
      json: `content-type: ${JSON_10}\r\nx-amz-target: AmazonSQS.List\u0000Queues\r\n`,
      query: `content-type: ${FORM}\r\nx-amz-target: AmazonSQSv20121105.List\u0000Queues\r\n`,
      head: 'content-length: 2\r\n',
      ...badRequest,
    },
    { label: 'a Content-Length that is no number', head: 'content-length: 2x\r\n', ...badRequest },
    {
      label: 'both Content-Length and Transfer-Encoding',
      head: 'content-length: 2\r\ntransfer-encoding: chunked\r\n',
      ...badRequest,
    },
    {
      label: 'a chunk size that is no number',
      head: 'transfer-encoding: chunked\r\n\r\nzz\r\n',
      ...badRequest,
    },
    { label: 'HTTP/1.1 without Host', host: false, head: 'content-length: 2\r\n', ...badRequest },
    {
      label: 'an HTTP version it does not speak',
      line: 'POST / HTTP/3.0',
      head: 'content-length: 2\r\n',
      ...badRequest,
    },
    {
      label: 'Expect: 999-x',
      head: 'expect: 999-x\r\ncontent-length: 2\r\n',
      status: '417',
      code: 'ExpectationFailed',
      type: 'com.amazon.coral.service#ExpectationFailedException',
    },
    {
      label: 'CONNECT',
      line: 'CONNECT 127.0.0.1:443 HTTP/1.1',
      head: '',
      status: '400',
      code: 'InvalidAction',
      type: 'com.amazon.coral.service#UnknownOperationException',
    },
  ];
  const request = (c: Case, protocolHead: string): Buffer =>
    Buffer.from(
      `${c.line ?? 'POST / HTTP/1.1'}\r\n${c.host === false ? '' : 'Host: 127.0.0.1\r\n'}${protocolHead}${c.head}\r\n{}`,
      'latin1',
    );

  for (const c of cases) {
    test(`Given ${c.label}, When sent as JSON and as Query, Then ${c.status} in that protocol's AWS shape with a request id`, async () => {
      const json = await rawExchange(request(c, c.json ?? JSON_HEAD));
      const query = await rawExchange(request(c, c.query ?? QUERY_HEAD));
      for (const answer of [json, query]) {
        const [head = ''] = answer.split('\r\n\r\n');
        assert.match(head, new RegExp(`^HTTP/1\\.1 ${c.status} `), answer.slice(0, 300));
        assert.match(head, /\r\nx-amzn-RequestId: [0-9a-f-]{36}\r\n/i, answer.slice(0, 300));
        assert.match(head, /\r\nconnection: close(\r\n|$)/i, answer.slice(0, 300));
      }
      const jsonBody = json.slice(json.indexOf('\r\n\r\n') + 4);
      assert.equal(jsonErrorType(jsonBody), c.type, json.slice(0, 400));
      assert.match(json, new RegExp(`\r\nx-amzn-query-error: ${c.code};Sender\r\n`, 'i'), json.slice(0, 400));
      assert.equal(queryErrorCode(query.slice(query.indexOf('\r\n\r\n') + 4)), c.code, query.slice(0, 400));
      await expectStillServing();
    });
  }
});

/** encodeURIComponent, except that a lone surrogate (which it refuses) goes through as UTF-8 bytes of U+FFFD. */
function encodeLoosely(s: string): string {
  return Buffer.from(s, 'utf8')
    .toString('binary')
    .replace(/[^A-Za-z0-9\-_.!~*'()]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

async function createQueueQuery(): Promise<string> {
  const res = await send(
    query('CreateQueue', `Action=CreateQueue&Version=2012-11-05&QueueName=${uniqueName('mal')}`),
  );
  assert.equal(res.status, 200, res.text);
  const url = /<QueueUrl>([^<]+)<\/QueueUrl>/.exec(res.text)?.[1];
  assert.ok(url, res.text);
  return url;
}
