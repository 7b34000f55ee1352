import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { authenticate, type AuthOptions } from '../../src/auth/authenticate.js';
import { AuthError, canonicalQuery, canonicalUri, verify, type SignedRequest } from '../../src/auth/sigv4.js';
import { presignRequest, signRequest, type SigningOptions, type TestRequest } from '../support/sigv4.js';

const NOW = Date.UTC(2026, 5, 1, 12, 0, 0);
const KEY: SigningOptions = { accessKeyId: 'AKIATESTKEY000000001', secretAccessKey: 'the-secret' };
const SECRETS: Record<string, string> = { [KEY.accessKeyId]: KEY.secretAccessKey };
const lookup = (id: string): string | undefined => SECRETS[id];
const MINUTE = 60_000;

const jsonRequest = (body = '{"QueueName":"orders"}'): TestRequest => ({
  method: 'POST',
  url: 'http://127.0.0.1:4100/',
  headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.CreateQueue' },
  body,
});

/** What the server sees of a request the test signed: lower-case headers, raw path and query. */
function received(r: TestRequest, bodyOverride?: string): SignedRequest {
  const url = new URL(r.url);
  const headers: Record<string, string> = { host: url.host };
  for (const [k, v] of Object.entries(r.headers)) headers[k.toLowerCase()] = v;
  return {
    method: r.method,
    url: url.pathname + url.search,
    headers,
    body: Buffer.from(bodyOverride ?? r.body ?? '', 'utf8'),
  };
}

function assertAuthError(fn: () => unknown, code: string, message?: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof AuthError, `expected an AuthError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    if (message !== undefined) assert.match(e.message, message);
    return true;
  });
}

void describe('SigV4 verification: the Authorization header', () => {
  void test('Given a request signed by the SDK signer, when verified, then its key and scope region are returned', async () => {
    const r = await signRequest(jsonRequest(), { ...KEY, region: 'eu-west-1', signingDate: new Date(NOW) });
    assert.deepEqual(verify(received(r), lookup, NOW), {
      accessKeyId: KEY.accessKeyId,
      region: 'eu-west-1',
      signedHeaders: ['content-type', 'host', 'x-amz-content-sha256', 'x-amz-date', 'x-amz-target'],
      payloadSigned: true,
    });
  });

  void test('Given a wrong secret, when verified, then SignatureDoesNotMatch', async () => {
    const r = await signRequest(jsonRequest(), {
      ...KEY,
      secretAccessKey: 'wrong',
      signingDate: new Date(NOW),
    });
    assertAuthError(() => verify(received(r), lookup, NOW), 'SignatureDoesNotMatch', /does not match/);
  });

  void test('Given an unknown access key id, when verified, then InvalidClientTokenId', async () => {
    const r = await signRequest(jsonRequest(), {
      ...KEY,
      accessKeyId: 'AKIANOBODY',
      signingDate: new Date(NOW),
    });
    assertAuthError(() => verify(received(r), lookup, NOW), 'InvalidClientTokenId');
  });

  void test('Given a body changed after signing, when verified, then SignatureDoesNotMatch', async () => {
    const r = await signRequest(jsonRequest(), { ...KEY, signingDate: new Date(NOW) });
    assertAuthError(
      () => verify(received(r, '{"QueueName":"other"}'), lookup, NOW),
      'SignatureDoesNotMatch',
      /x-amz-content-sha256/,
    );
  });

  void test('Given a body changed after signing and no content hash header, when verified, then SignatureDoesNotMatch', async () => {
    const r = await signRequest(jsonRequest(), { ...KEY, signingDate: new Date(NOW) });
    const seen = received(r, '{"QueueName":"other"}');
    const headers = { ...seen.headers };
    delete headers['x-amz-content-sha256'];
    assertAuthError(() => verify({ ...seen, headers }, lookup, NOW), 'SignatureDoesNotMatch');
  });

  void test('Given UNSIGNED-PAYLOAD in a header-signed request, when verified, then SignatureDoesNotMatch (S3 only)', async () => {
    const r = jsonRequest();
    r.headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD';
    const signed = await signRequest(r, { ...KEY, signingDate: new Date(NOW) });
    assertAuthError(() => verify(received(signed), lookup, NOW), 'SignatureDoesNotMatch');
  });

  for (const minutes of [14, -14]) {
    void test(`Given a date ${minutes} minutes off the server's clock, when verified, then it is accepted`, async () => {
      const r = await signRequest(jsonRequest(), { ...KEY, signingDate: new Date(NOW + minutes * MINUTE) });
      assert.equal(verify(received(r), lookup, NOW).accessKeyId, KEY.accessKeyId);
    });
  }

  void test('Given a date 16 minutes in the past, when verified, then SignatureDoesNotMatch "Signature expired"', async () => {
    const r = await signRequest(jsonRequest(), { ...KEY, signingDate: new Date(NOW - 16 * MINUTE) });
    assertAuthError(
      () => verify(received(r), lookup, NOW),
      'SignatureDoesNotMatch',
      /^Signature expired: 20260601T114400Z is now earlier than 20260601T114500Z \(20260601T120000Z - 15 min\.\)$/,
    );
  });

  void test('Given a date 16 minutes in the future, when verified, then SignatureDoesNotMatch "not yet current"', async () => {
    const r = await signRequest(jsonRequest(), { ...KEY, signingDate: new Date(NOW + 16 * MINUTE) });
    assertAuthError(
      () => verify(received(r), lookup, NOW),
      'SignatureDoesNotMatch',
      /^Signature not yet current/,
    );
  });

  void test('Given a scope for another service, when verified, then SignatureDoesNotMatch naming sqs', async () => {
    const r = await signRequest(jsonRequest(), { ...KEY, service: 'sns', signingDate: new Date(NOW) });
    assertAuthError(
      () => verify(received(r), lookup, NOW),
      'SignatureDoesNotMatch',
      /correct service: 'sqs'/,
    );
  });

  void test('Given a scope whose region is no region name, when verified, then SignatureDoesNotMatch', async () => {
    const r = await signRequest(jsonRequest(), { ...KEY, region: 'moon', signingDate: new Date(NOW) });
    assertAuthError(
      () => verify(received(r), lookup, NOW),
      'SignatureDoesNotMatch',
      /valid region, not 'moon'/,
    );
  });

  void test('Given a credential scope whose region was changed after signing, when verified, then SignatureDoesNotMatch', async () => {
    const r = await signRequest(jsonRequest(), { ...KEY, region: 'us-east-1', signingDate: new Date(NOW) });
    r.headers['authorization'] = (r.headers['authorization'] ?? '').replace('/us-east-1/', '/eu-west-1/');
    assertAuthError(() => verify(received(r), lookup, NOW), 'SignatureDoesNotMatch', /does not match/);
  });

  void test('Given a scope date that is not the request date, when verified, then SignatureDoesNotMatch', async () => {
    const r = await signRequest(jsonRequest(), { ...KEY, signingDate: new Date(NOW) });
    r.headers['authorization'] = (r.headers['authorization'] ?? '').replace('/20260601/', '/20260602/');
    assertAuthError(
      () => verify(received(r), lookup, NOW),
      'SignatureDoesNotMatch',
      /Date in Credential scope/,
    );
  });

  void test('Given no Authorization header and no presigned query, when verified, then MissingAuthenticationToken', () => {
    assertAuthError(() => verify(received(jsonRequest()), lookup, NOW), 'MissingAuthenticationToken');
  });

  void test('Given an Authorization header without Signature, when verified, then IncompleteSignature', async () => {
    const r = await signRequest(jsonRequest(), { ...KEY, signingDate: new Date(NOW) });
    r.headers['authorization'] = (r.headers['authorization'] ?? '').replace(/, Signature=[0-9a-f]+/, '');
    assertAuthError(() => verify(received(r), lookup, NOW), 'IncompleteSignature', /requires 'Signature'/);
  });

  void test('Given a credential with four parts, when verified, then IncompleteSignature', async () => {
    const r = await signRequest(jsonRequest(), { ...KEY, signingDate: new Date(NOW) });
    r.headers['authorization'] = (r.headers['authorization'] ?? '').replace('/aws4_request', '');
    assertAuthError(() => verify(received(r), lookup, NOW), 'IncompleteSignature', /5 slash-delimited/);
  });

  void test('Given another algorithm, when verified, then IncompleteSignature', () => {
    const r = jsonRequest();
    r.headers['authorization'] = 'AWS AKIA:abc';
    assertAuthError(
      () => verify(received(r), lookup, NOW),
      'IncompleteSignature',
      /Unsupported AWS 'algorithm'/,
    );
  });

  void test('Given a signature of the right length but one digit off, when verified, then SignatureDoesNotMatch', async () => {
    const r = await signRequest(jsonRequest(), { ...KEY, signingDate: new Date(NOW) });
    r.headers['authorization'] = (r.headers['authorization'] ?? '').replace(
      /Signature=([0-9a-f])/,
      (_m, c: string) => (c === '0' ? 'Signature=1' : 'Signature=0'),
    );
    assertAuthError(() => verify(received(r), lookup, NOW), 'SignatureDoesNotMatch');
  });
});

void describe('SigV4 verification: presigned URLs', () => {
  const queryGet = (): TestRequest => ({
    method: 'GET',
    url: 'http://127.0.0.1:4100/000000000000/orders?Action=SendMessage&MessageBody=hello%20world&Version=2012-11-05',
    headers: {},
  });

  void test('Given a presigned GET, when verified, then it is accepted', async () => {
    const r = await presignRequest(queryGet(), { ...KEY, signingDate: new Date(NOW) });
    assert.match(r.url, /X-Amz-Signature=/);
    assert.equal(verify(received(r), lookup, NOW).region, 'us-east-1');
  });

  void test('Given a presigned URL with UNSIGNED-PAYLOAD (as botocore presigns), when verified, then it is accepted', async () => {
    const r = queryGet();
    r.headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD';
    const signed = await presignRequest(r, { ...KEY, signingDate: new Date(NOW) });
    assert.match(signed.url, /X-Amz-Content-Sha256=UNSIGNED-PAYLOAD/i);
    const v = verify(received(signed), lookup, NOW);
    assert.deepEqual([v.accessKeyId, v.payloadSigned], [KEY.accessKeyId, false]);
  });

  void test('Given a presigned URL whose query was changed, when verified, then SignatureDoesNotMatch', async () => {
    const r = await presignRequest(queryGet(), { ...KEY, signingDate: new Date(NOW) });
    assert.match(r.url, /hello\+world/);
    r.url = r.url.replace('hello+world', 'goodbye');
    assertAuthError(() => verify(received(r), lookup, NOW), 'SignatureDoesNotMatch');
  });

  void test('Given a presigned URL used after its X-Amz-Expires (under 15 min), when verified, then RequestExpired', async () => {
    const r = await presignRequest(queryGet(), {
      ...KEY,
      signingDate: new Date(NOW - 2 * MINUTE),
      expiresIn: 60,
    });
    assertAuthError(() => verify(received(r), lookup, NOW), 'RequestExpired');
  });

  void test('Given a presigned URL signed 16 minutes ago with an hour to live, when verified, then SignatureDoesNotMatch', async () => {
    const r = await presignRequest(queryGet(), {
      ...KEY,
      signingDate: new Date(NOW - 16 * MINUTE),
      expiresIn: 3600,
    });
    assertAuthError(() => verify(received(r), lookup, NOW), 'SignatureDoesNotMatch', /Signature expired/);
  });

  void test('Given a presigned URL without X-Amz-Signature, when verified, then IncompleteSignature', async () => {
    const r = await presignRequest(queryGet(), { ...KEY, signingDate: new Date(NOW) });
    r.url = r.url.replace(/&?X-Amz-Signature=[0-9a-f]+/, '');
    assertAuthError(() => verify(received(r), lookup, NOW), 'IncompleteSignature', /X-Amz-Signature/);
  });
});

void describe('SigV4 canonical forms', () => {
  void test('Given paths with dot and empty segments and escapes, when canonicalized, then they are normalized and encoded again', () => {
    assert.equal(canonicalUri('/'), '/');
    assert.equal(canonicalUri(''), '/');
    assert.equal(canonicalUri('/a//b/./c/../d/'), '/a/b/d/');
    assert.equal(canonicalUri('/000000000000/my%20queue'), '/000000000000/my%2520queue');
  });

  void test('Given a query with unsorted, repeated and reserved characters, when canonicalized, then sorted and RFC 3986 encoded', () => {
    assert.equal(canonicalQuery('b=2&a=x y&a=1&c=%2A!', false), 'a=1&a=x%20y&b=2&c=%2A%21');
    assert.equal(canonicalQuery('X-Amz-Signature=abc&Action=X', true), 'Action=X');
  });
});

void describe('The auth step: modes', () => {
  const owners = new Map([
    [KEY.accessKeyId, { accountId: '111111111111', secretAccessKey: KEY.secretAccessKey, tenant: 'team-a' }],
  ]);
  const options = (mode: 'on' | 'off'): AuthOptions => ({
    mode,
    defaultAccountId: '000000000000',
    defaultRegion: 'us-east-1',
    keyOwner: (id) => owners.get(id),
    now: () => NOW,
  });

  /** An identity of no tenant: what auth off gives, and a key of no tenant's. */
  const untenanted = (accountId: string, region: string): object => ({
    accountId,
    region,
    tenant: undefined,
  });

  void test('Given auth off and no credentials, when authenticating, then the default account and region', () => {
    assert.deepEqual(
      authenticate(options('off'), received(jsonRequest()), 'json'),
      untenanted('000000000000', 'us-east-1'),
    );
  });

  void test('Given auth off and a 12-digit access key id, when authenticating, then that account and the scope region, unverified', async () => {
    const r = await signRequest(jsonRequest(), {
      accessKeyId: '123456789012',
      secretAccessKey: 'anything',
      region: 'ap-south-1',
      signingDate: new Date(0),
    });
    assert.deepEqual(
      authenticate(options('off'), received(r), 'json'),
      untenanted('123456789012', 'ap-south-1'),
    );
  });

  void test("Given auth off and a tenant's key with a wrong secret, when authenticating, then the tenant's account (nothing is verified)", async () => {
    const r = await signRequest(jsonRequest(), {
      ...KEY,
      secretAccessKey: 'wrong',
      signingDate: new Date(NOW),
    });
    assert.equal(authenticate(options('off'), received(r), 'json').accountId, '111111111111');
  });

  void test('Given auth off and a credential without a region part, when authenticating, then its account and the default region', () => {
    const r = received(jsonRequest());
    const headers = { ...r.headers, authorization: 'AWS4-HMAC-SHA256 Credential=123456789012/20260601' };
    assert.deepEqual(
      authenticate(options('off'), { ...r, headers }, 'json'),
      untenanted('123456789012', 'us-east-1'),
    );
  });

  void test('Given auth off and a presigned URL naming a 12-digit key, when authenticating, then that account and its region', () => {
    const r = received({
      method: 'GET',
      url: 'http://h/?Action=ListQueues&X-Amz-Credential=210987654321%2F20260601%2Feu-north-1%2Fsqs%2Faws4_request',
      headers: {},
    });
    assert.deepEqual(authenticate(options('off'), r, 'query'), untenanted('210987654321', 'eu-north-1'));
  });

  void test('Given auth off and a key nobody has, when authenticating, then the default account', async () => {
    const r = await signRequest(jsonRequest(), {
      accessKeyId: 'test',
      secretAccessKey: 'test',
      signingDate: new Date(NOW),
    });
    assert.equal(authenticate(options('off'), received(r), 'json').accountId, '000000000000');
  });

  void test("Given auth on and a tenant's signature, when authenticating, then the tenant's account", async () => {
    const r = await signRequest(jsonRequest(), { ...KEY, region: 'eu-west-1', signingDate: new Date(NOW) });
    assert.deepEqual(authenticate(options('on'), received(r), 'json'), {
      accountId: '111111111111',
      region: 'eu-west-1',
      tenant: 'team-a',
    });
  });

  void test('Given auth on and a 12-digit key no tenant has, when authenticating, then InvalidClientTokenId', async () => {
    const r = await signRequest(jsonRequest(), {
      accessKeyId: '123456789012',
      secretAccessKey: 'x',
      signingDate: new Date(NOW),
    });
    assertAuthError(() => authenticate(options('on'), received(r), 'json'), 'InvalidClientTokenId');
  });
});

void describe('The auth step: only what the signature covers is run (docs/faults.md row 20)', () => {
  const options: AuthOptions = {
    mode: 'on',
    defaultAccountId: '000000000000',
    defaultRegion: 'us-east-1',
    keyOwner: (id) =>
      id === KEY.accessKeyId
        ? { accountId: '111111111111', secretAccessKey: KEY.secretAccessKey, tenant: 'team-a' }
        : undefined,
    now: () => NOW,
  };
  const presignedPost = (headers: Record<string, string>): TestRequest => ({
    method: 'POST',
    url: 'http://127.0.0.1:4100/?Action=ListQueues&Version=2012-11-05',
    headers,
  });

  void test('Given a JSON request whose X-Amz-Target is not signed, when authenticated, then SignatureDoesNotMatch though the signature is right', async () => {
    const r = jsonRequest();
    const target = r.headers['x-amz-target'] ?? '';
    delete r.headers['x-amz-target'];
    const signed = await signRequest(r, { ...KEY, signingDate: new Date(NOW) });
    signed.headers['x-amz-target'] = target;
    assert.equal(verify(received(signed), lookup, NOW).accessKeyId, KEY.accessKeyId);
    assertAuthError(
      () => authenticate(options, received(signed), 'json'),
      'SignatureDoesNotMatch',
      /x-amz-target/,
    );
  });

  void test('Given a URL presigned with UNSIGNED-PAYLOAD, when sent with a body (form or JSON), then SignatureDoesNotMatch; with none, accepted', async () => {
    const signed = await presignRequest(presignedPost({ 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' }), {
      ...KEY,
      signingDate: new Date(NOW),
    });
    assert.equal(authenticate(options, received(signed), 'query').accountId, '111111111111');
    for (const body of ['QueueUrl=x&MessageAttribute.1.Name=a', '{}']) {
      assertAuthError(
        () => authenticate(options, received(signed, body), 'query'),
        'SignatureDoesNotMatch',
        /UNSIGNED-PAYLOAD/,
      );
    }
  });

  void test('Given a URL presigned over its body (no content hash in the URL), when sent with that body, then accepted; with another, refused', async () => {
    const r = {
      ...presignedPost({ 'content-type': 'application/x-www-form-urlencoded' }),
      body: 'QueueNamePrefix=a',
    };
    const signed = await presignRequest(r, { ...KEY, signingDate: new Date(NOW) });
    assert.equal(authenticate(options, received(signed), 'query').accountId, '111111111111');
    // The other body matches only as UNSIGNED-PAYLOAD, which carries no body.
    assertAuthError(
      () => authenticate(options, received(signed, 'QueueNamePrefix=b'), 'query'),
      'SignatureDoesNotMatch',
    );
  });
});
