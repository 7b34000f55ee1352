/**
 * AWS Signature Version 4, the verifying side, for the SQS data plane: the Authorization header
 * form and the presigned (query string) form, over the raw request as it arrived.
 *
 * The signer's steps, redone here (AWS General Reference, "Signature Version 4 signing process"):
 *
 *   CanonicalRequest = Method \n CanonicalURI \n CanonicalQuery \n CanonicalHeaders \n
 *                      SignedHeaders \n HashedPayload
 *   StringToSign     = "AWS4-HMAC-SHA256" \n X-Amz-Date \n <date>/<region>/sqs/aws4_request \n
 *                      hex(SHA256(CanonicalRequest))
 *   SigningKey       = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), "sqs"), "aws4_request")
 *   Signature        = hex(HMAC(SigningKey, StringToSign))
 *
 * - CanonicalURI: the path as sent, dot segments and empty segments removed, each segment
 *   URI-encoded once more (every service but S3 double-encodes).
 * - CanonicalQuery: every parameter of the URL (the form body is not part of it), decoded, then
 *   encoded RFC 3986 style, sorted by name then value; X-Amz-Signature left out.
 * - CanonicalHeaders: the headers SignedHeaders names, lower-case, values trimmed and inner
 *   whitespace collapsed; `host` must be one of them.
 * - HashedPayload: SHA-256 of the body exactly as received. A header-signed request may carry
 *   `x-amz-content-sha256`; it must then equal that hash (else a tampered body would pass with
 *   the old hash). `UNSIGNED-PAYLOAD` is accepted only where AWS accepts it outside S3: in a
 *   presigned URL (botocore presigns that way; the JS SDK presigns with the body's hash).
 *
 * Time: the request's date may be at most 15 minutes from the server's clock either way; AWS SQS
 * answers a stale one 403 SignatureDoesNotMatch "Signature expired: ..." (as recorded in SDK issue
 * reports), so this does too. A presigned URL is held to the same 15 minutes (SQS ignores a longer
 * X-Amz-Expires) and, when its X-Amz-Expires is shorter, to that: past it, 400 RequestExpired.
 *
 * The comparison is constant-time (crypto.timingSafeEqual); derived signing keys are cached per
 * access key, day and region, as the SDKs cache them.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export type AuthErrorCode =
  | 'IncompleteSignature'
  | 'SignatureDoesNotMatch'
  | 'InvalidClientTokenId'
  | 'MissingAuthenticationToken'
  | 'RequestExpired';

/** A request that fails authentication; `code` names its entry in the SQS error catalogue. */
export class AuthError extends Error {
  constructor(
    readonly code: AuthErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'AuthError';
  }
}

/** What the verifier needs of an HTTP request. */
export interface SignedRequest {
  readonly method: string;
  /** Path and query string exactly as received (Node's `req.url`). */
  readonly url: string;
  /** Node's parsed headers: lower-case names. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The body as received; empty for none. */
  readonly body: Buffer;
}

/** The parts of `<key>/<yyyymmdd>/<region>/<service>/aws4_request`. */
export interface CredentialScope {
  readonly accessKeyId: string;
  readonly date: string;
  readonly region: string;
  readonly service: string;
  readonly terminator: string;
}

export interface Verified {
  readonly accessKeyId: string;
  readonly region: string;
  /** The headers the signature covers (lower case). */
  readonly signedHeaders: readonly string[];
  /** False when the signature covers no body: `UNSIGNED-PAYLOAD`, given or implied by a presigned URL. */
  readonly payloadSigned: boolean;
}

export const ALGORITHM = 'AWS4-HMAC-SHA256';
export const SERVICE = 'sqs';
export const MAX_SKEW_MS = 15 * 60 * 1000;
const MAX_PRESIGN_SECONDS = 7 * 24 * 3600;
const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const MISMATCH =
  'The request signature we calculated does not match the signature you provided. ' +
  'Check your AWS Secret Access Key and signing method. Consult the service documentation for details.';

/** AWS region names: `us-east-1`, `eu-central-2`, `us-gov-west-1`, `cn-north-1`, `us-iso-east-1`... */
const REGION = /^[a-z]{2}(?:-[a-z]+)*-[a-z]+-\d{1,2}$/;

/** Region names seen, so the data plane's hot path tests each one against REGION once. */
const regionNames = new Map<string, boolean>();

export function isRegionName(region: string): boolean {
  let ok = regionNames.get(region);
  if (ok === undefined) {
    ok = region.length <= 32 && REGION.test(region);
    // Bounded: a client sending random regions must not grow it without end.
    if (regionNames.size < 1000) regionNames.set(region, ok);
  }
  return ok;
}

// ---------------------------------------------------------------------------------------------
// Cheap identification, for auth off: who does the request say it is (nothing verified)
// ---------------------------------------------------------------------------------------------

/**
 * The access key id and region a request names, from its Authorization header or presigned URL,
 * without verifying anything (auth off). A few string searches; undefined when it names none.
 */
export function claimedCredential(
  headers: SignedRequest['headers'],
  url: string,
): { accessKeyId: string; region: string } | undefined {
  const auth = headers['authorization'];
  if (typeof auth === 'string') {
    // `Credential=<key>/<date>/<region>/...`: three indexOf calls, no split of the whole header.
    const at = auth.indexOf('Credential=');
    if (at < 0) return undefined;
    const keyEnd = auth.indexOf('/', at + 11);
    const dateEnd = keyEnd < 0 ? -1 : auth.indexOf('/', keyEnd + 1);
    const regionEnd = dateEnd < 0 ? -1 : auth.indexOf('/', dateEnd + 1);
    if (regionEnd < 0)
      return keyEnd > at + 11 ? { accessKeyId: auth.slice(at + 11, keyEnd), region: '' } : undefined;
    return { accessKeyId: auth.slice(at + 11, keyEnd), region: auth.slice(dateEnd + 1, regionEnd) };
  }
  const at = url.indexOf('X-Amz-Credential=');
  if (at < 0) return undefined;
  const end = url.indexOf('&', at);
  let credential: string;
  try {
    credential = decodeURIComponent(url.slice(at + 17, end < 0 ? undefined : end));
  } catch {
    return undefined;
  }
  const [accessKeyId, , region] = credential.split('/');
  if (accessKeyId === undefined || accessKeyId === '') return undefined;
  return { accessKeyId, region: region ?? '' };
}

// ---------------------------------------------------------------------------------------------
// Verification
// ---------------------------------------------------------------------------------------------

/** Finds the secret of an access key id; undefined: no such key. */
export type SecretLookup = (accessKeyId: string) => string | undefined;

interface Parsed {
  readonly presigned: boolean;
  readonly scope: CredentialScope;
  readonly credentialText: string;
  readonly signedHeaders: readonly string[];
  readonly signedHeadersText: string;
  readonly signature: string;
  /** `YYYYMMDDTHHMMSSZ` */
  readonly amzDate: string;
  readonly dateMs: number;
  /** Where the date came from, for messages: 'X-Amz-Date' or 'Date'. */
  readonly dateFrom: string;
  readonly expiresSeconds: number | undefined;
  /** Presigned only: X-Amz-Content-Sha256 of the URL, if given. */
  readonly presignedPayloadHash: string | undefined;
}

/**
 * Verifies a request's SigV4 signature at time `now` (ms). Returns the access key id and the
 * region of its credential scope; throws an AuthError otherwise.
 */
export function verify(req: SignedRequest, lookup: SecretLookup, now: number): Verified {
  const parsed = parse(req);
  const { scope } = parsed;
  const secret = lookup(scope.accessKeyId);
  if (secret === undefined) {
    throw new AuthError('InvalidClientTokenId', 'The security token included in the request is invalid.');
  }
  checkScope(parsed);
  checkTime(parsed, now);

  const { path, query } = splitUrl(req.url);
  const head =
    `${req.method}\n${canonicalUri(path)}\n${canonicalQuery(query, parsed.presigned)}\n` +
    `${canonicalHeaders(req.headers, parsed.signedHeaders)}\n${parsed.signedHeadersText}\n`;
  const key = signingKey(scope.accessKeyId, secret, scope.date, scope.region);
  const candidates = payloadHashes(req, parsed);
  let matched: string | undefined;
  for (const payloadHash of candidates) {
    // Every candidate is compared, so the time taken does not tell which one matched.
    if (signatureMatches(parsed, key, head + payloadHash)) matched = payloadHash;
  }
  if (matched === undefined) throw new AuthError('SignatureDoesNotMatch', MISMATCH);
  return {
    accessKeyId: scope.accessKeyId,
    region: scope.region,
    signedHeaders: parsed.signedHeaders,
    payloadSigned: matched !== UNSIGNED_PAYLOAD,
  };
}

function signatureMatches(parsed: Parsed, key: Buffer, canonicalRequest: string): boolean {
  const stringToSign =
    `${ALGORITHM}\n${parsed.amzDate}\n${parsed.credentialText.slice(parsed.scope.accessKeyId.length + 1)}\n` +
    sha256Hex(canonicalRequest);
  const expected = createHmac('sha256', key).update(stringToSign, 'utf8').digest();
  // The signature given is hex of 32 bytes; anything else is compared against a same-length
  // stand-in so that a malformed one takes as long as a wrong one.
  const wellFormed = /^[0-9a-f]{64}$/.test(parsed.signature);
  const given = wellFormed ? Buffer.from(parsed.signature, 'hex') : Buffer.alloc(32, 0);
  return timingSafeEqual(expected, given) && wellFormed;
}

/** The payload hashes the canonical request may carry (more than one only for a presigned URL). */
function payloadHashes(req: SignedRequest, parsed: Parsed): string[] {
  const bodyHash = req.body.length === 0 ? EMPTY_SHA256 : sha256Hex(req.body);
  if (parsed.presigned) {
    const given = parsed.presignedPayloadHash;
    if (given === undefined) return [bodyHash, UNSIGNED_PAYLOAD];
    if (given === UNSIGNED_PAYLOAD || given === bodyHash) return [given];
    throw new AuthError(
      'SignatureDoesNotMatch',
      "The provided 'x-amz-content-sha256' does not match what was computed.",
    );
  }
  const header = headerValue(req.headers, 'x-amz-content-sha256');
  if (header !== undefined && header !== bodyHash) {
    // Covers a tampered body (the header still holds the signed hash) and UNSIGNED-PAYLOAD,
    // which SigV4 allows outside presigned URLs only for S3.
    throw new AuthError(
      'SignatureDoesNotMatch',
      "The provided 'x-amz-content-sha256' header does not match what was computed.",
    );
  }
  return [bodyHash];
}

// ---- parsing ----------------------------------------------------------------------------------

function parse(req: SignedRequest): Parsed {
  const auth = headerValue(req.headers, 'authorization');
  if (auth !== undefined) return parseHeader(req, auth);
  const { query } = splitUrl(req.url);
  if (query.includes('X-Amz-')) {
    const params = new URLSearchParams(query);
    if (params.has('X-Amz-Algorithm') || params.has('X-Amz-Credential') || params.has('X-Amz-Signature')) {
      return parsePresigned(params);
    }
  }
  throw new AuthError('MissingAuthenticationToken', 'Request is missing Authentication Token');
}

function parseHeader(req: SignedRequest, auth: string): Parsed {
  const space = auth.indexOf(' ');
  const algorithm = space < 0 ? auth : auth.slice(0, space);
  if (algorithm !== ALGORITHM) {
    throw new AuthError('IncompleteSignature', `Unsupported AWS 'algorithm': '${clip(algorithm)}'`);
  }
  const fields = new Map<string, string>();
  for (const part of auth.slice(space + 1).split(',')) {
    const item = part.trim();
    if (item === '') continue;
    const eq = item.indexOf('=');
    if (eq < 0) {
      throw new AuthError(
        'IncompleteSignature',
        `'${clip(item)}' not a valid key=value pair (missing equal-sign) in Authorization header: '${clip(auth)}'.`,
      );
    }
    fields.set(item.slice(0, eq), item.slice(eq + 1));
  }
  const missing: string[] = [];
  for (const name of ['Credential', 'Signature', 'SignedHeaders']) {
    if (!fields.get(name)) missing.push(`Authorization header requires '${name}' parameter.`);
  }
  let amzDate = headerValue(req.headers, 'x-amz-date');
  let dateFrom = 'X-Amz-Date';
  if (amzDate === undefined) {
    const date = headerValue(req.headers, 'date');
    if (date !== undefined) {
      const ms = Date.parse(date);
      amzDate = Number.isNaN(ms) ? date : toAmzDate(ms);
      dateFrom = 'Date';
    }
  }
  if (amzDate === undefined) {
    missing.push("Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.");
  }
  if (missing.length > 0 || amzDate === undefined) {
    throw new AuthError('IncompleteSignature', `${missing.join(' ')} Authorization=${clip(auth)}`);
  }
  const credentialText = fields.get('Credential') ?? '';
  const signedHeadersText = fields.get('SignedHeaders') ?? '';
  const signedHeaders = signedHeadersText.split(';');
  if (!signedHeaders.includes('host')) {
    throw new AuthError('IncompleteSignature', "'Host' must be a 'SignedHeader' in the AWS Authorization.");
  }
  return {
    presigned: false,
    scope: parseScope(credentialText),
    credentialText,
    signedHeaders,
    signedHeadersText,
    signature: fields.get('Signature') ?? '',
    amzDate,
    dateMs: parseAmzDate(amzDate),
    dateFrom,
    expiresSeconds: undefined,
    presignedPayloadHash: undefined,
  };
}

function parsePresigned(params: URLSearchParams): Parsed {
  const missing = [
    'X-Amz-Algorithm',
    'X-Amz-Credential',
    'X-Amz-Signature',
    'X-Amz-SignedHeaders',
    'X-Amz-Date',
  ].filter((name) => !params.get(name));
  if (missing.length > 0) {
    throw new AuthError(
      'IncompleteSignature',
      `AWS query-string parameters must include ${missing.map((m) => `'${m}'`).join(', ')}. Re-examine the query-string parameters.`,
    );
  }
  const algorithm = params.get('X-Amz-Algorithm') ?? '';
  if (algorithm !== ALGORITHM) {
    throw new AuthError('IncompleteSignature', `Unsupported AWS 'algorithm': '${clip(algorithm)}'`);
  }
  let expiresSeconds: number | undefined;
  const expires = params.get('X-Amz-Expires');
  if (expires !== null) {
    expiresSeconds = /^\d{1,7}$/.test(expires) ? Number(expires) : NaN;
    if (!(expiresSeconds >= 1 && expiresSeconds <= MAX_PRESIGN_SECONDS)) {
      throw new AuthError(
        'IncompleteSignature',
        `X-Amz-Expires must be a whole number of seconds from 1 to ${MAX_PRESIGN_SECONDS}, got '${clip(expires)}'.`,
      );
    }
  }
  const credentialText = params.get('X-Amz-Credential') ?? '';
  const signedHeadersText = params.get('X-Amz-SignedHeaders') ?? '';
  const signedHeaders = signedHeadersText.split(';');
  if (!signedHeaders.includes('host')) {
    throw new AuthError('IncompleteSignature', "'Host' must be a 'SignedHeader' in the AWS Authorization.");
  }
  const amzDate = params.get('X-Amz-Date') ?? '';
  return {
    presigned: true,
    scope: parseScope(credentialText),
    credentialText,
    signedHeaders,
    signedHeadersText,
    signature: params.get('X-Amz-Signature') ?? '',
    amzDate,
    dateMs: parseAmzDate(amzDate),
    dateFrom: 'X-Amz-Date',
    expiresSeconds,
    // The SDKs hoist x-amz-* headers into the query as they were spelled (often lower case).
    presignedPayloadHash:
      params.get('X-Amz-Content-Sha256') ?? params.get('x-amz-content-sha256') ?? undefined,
  };
}

function parseScope(text: string): CredentialScope {
  const parts = text.split('/');
  const [accessKeyId = '', date = '', region = '', service = '', terminator = ''] = parts;
  if (parts.length !== 5 || accessKeyId === '') {
    throw new AuthError(
      'IncompleteSignature',
      `Credential must have exactly 5 slash-delimited elements, e.g. keyid/date/region/service/term, got '${clip(text)}'`,
    );
  }
  return { accessKeyId, date, region, service, terminator };
}

function parseAmzDate(text: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text);
  const ms = m === null ? NaN : Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!);
  if (Number.isNaN(ms)) {
    throw new AuthError(
      'IncompleteSignature',
      `Date must be in ISO-8601 'basic format'. Got '${clip(text)}'. See http://en.wikipedia.org/wiki/ISO_8601`,
    );
  }
  return ms;
}

function checkScope(p: Parsed): void {
  const { scope } = p;
  const day = p.amzDate.slice(0, 8);
  if (scope.date !== day) {
    throw new AuthError(
      'SignatureDoesNotMatch',
      `Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '${clip(scope.date)}' != '${day}', from '${p.dateFrom}'.`,
    );
  }
  if (!isRegionName(scope.region)) {
    throw new AuthError(
      'SignatureDoesNotMatch',
      `Credential should be scoped to a valid region, not '${clip(scope.region)}'. `,
    );
  }
  if (scope.service !== SERVICE) {
    throw new AuthError(
      'SignatureDoesNotMatch',
      `Credential should be scoped to correct service: '${SERVICE}'. `,
    );
  }
  if (scope.terminator !== 'aws4_request') {
    throw new AuthError(
      'SignatureDoesNotMatch',
      `Credential should be scoped with a valid terminator: 'aws4_request', not '${clip(scope.terminator)}'. `,
    );
  }
}

function checkTime(p: Parsed, now: number): void {
  if (p.dateMs < now - MAX_SKEW_MS) {
    throw new AuthError(
      'SignatureDoesNotMatch',
      `Signature expired: ${p.amzDate} is now earlier than ${toAmzDate(now - MAX_SKEW_MS)} (${toAmzDate(now)} - 15 min.)`,
    );
  }
  if (p.dateMs > now + MAX_SKEW_MS) {
    throw new AuthError(
      'SignatureDoesNotMatch',
      `Signature not yet current: ${p.amzDate} is still later than ${toAmzDate(now + MAX_SKEW_MS)} (${toAmzDate(now)} + 15 min.)`,
    );
  }
  if (p.expiresSeconds !== undefined && now > p.dateMs + p.expiresSeconds * 1000) {
    throw new AuthError('RequestExpired', 'Request has expired.');
  }
}

// ---- canonical forms ----------------------------------------------------------------------------

function splitUrl(url: string): { path: string; query: string } {
  const q = url.indexOf('?');
  return q < 0 ? { path: url, query: '' } : { path: url.slice(0, q), query: url.slice(q + 1) };
}

/** RFC 3986: everything but A-Z a-z 0-9 - _ . ~ percent-encoded, hex in upper case. */
export function uriEncode(text: string): string {
  return encodeURIComponent(text).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

export function canonicalUri(rawPath: string): string {
  if (rawPath === '' || rawPath === '/') return '/';
  const segments: string[] = [];
  for (const segment of rawPath.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  const trailing = segments.length > 0 && rawPath.endsWith('/') ? '/' : '';
  return `/${segments.map(uriEncodeSafe).join('/')}${trailing}`;
}

function uriEncodeSafe(text: string): string {
  try {
    return uriEncode(text);
  } catch {
    // A lone surrogate cannot be encoded: no signer produced it, so no signature will match.
    return text;
  }
}

export function canonicalQuery(rawQuery: string, presigned: boolean): string {
  if (rawQuery === '') return '';
  const pairs: string[] = [];
  for (const [name, value] of new URLSearchParams(rawQuery)) {
    if (presigned && name === 'X-Amz-Signature') continue;
    pairs.push(`${uriEncodeSafe(name)}=${uriEncodeSafe(value)}`);
  }
  // Sorting `name=value` strings sorts by name, then value ('=' sorts before every encoded char).
  return pairs.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).join('&');
}

export function canonicalHeaders(headers: SignedRequest['headers'], names: readonly string[]): string {
  let out = '';
  for (const name of names) {
    const raw = headers[name];
    const value = Array.isArray(raw) ? raw.join(',') : (raw ?? '');
    out += `${name}:${value.replace(/\s+/g, ' ').trim()}\n`;
  }
  return out;
}

function headerValue(headers: SignedRequest['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

// ---- crypto -------------------------------------------------------------------------------------

function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

const keyCache = new Map<string, { readonly secret: string; readonly key: Buffer }>();
const KEY_CACHE_MAX = 1000;

function signingKey(accessKeyId: string, secret: string, date: string, region: string): Buffer {
  const cacheKey = `${accessKeyId}\n${date}\n${region}`;
  const hit = keyCache.get(cacheKey);
  if (hit !== undefined && hit.secret === secret) return hit.key;
  let key = createHmac('sha256', `AWS4${secret}`).update(date).digest();
  for (const part of [region, SERVICE, 'aws4_request']) key = createHmac('sha256', key).update(part).digest();
  if (keyCache.size >= KEY_CACHE_MAX) keyCache.clear();
  keyCache.set(cacheKey, { secret, key });
  return key;
}

/** `YYYYMMDDTHHMMSSZ` of a time in ms. */
export function toAmzDate(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}Z$/, 'Z');
}

/** Echoed values are cut short: an error message must not become a way to reflect 4 MiB back. */
function clip(text: string): string {
  return text.length > 256 ? `${text.slice(0, 253)}...` : text;
}
