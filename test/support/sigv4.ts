/**
 * Signing requests in tests the way the AWS SDK for JavaScript does: @smithy/signature-v4 (the
 * SDK's own signer) with Node's crypto as its SHA-256, for requests that no SDK client would
 * send (a shifted date, another service's scope, a presigned URL, a body changed after signing).
 */
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';

type Data = string | ArrayBuffer | ArrayBufferView;

function bytes(d: Data): string | Uint8Array {
  if (typeof d === 'string') return d;
  if (d instanceof ArrayBuffer) return new Uint8Array(d);
  return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
}

class Sha256 {
  private readonly h: Hash | Hmac;
  constructor(secret?: Data) {
    this.h = secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret));
  }
  update(data: Data): void {
    this.h.update(bytes(data));
  }
  digest(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.h.digest()));
  }
}

export interface TestRequest {
  method: string;
  /** e.g. http://127.0.0.1:4100/ */
  url: string;
  headers: Record<string, string>;
  body?: string;
}

export interface SigningOptions {
  accessKeyId: string;
  secretAccessKey: string;
  region?: string;
  service?: string;
  signingDate?: Date;
}

function signer(o: SigningOptions): SignatureV4 {
  return new SignatureV4({
    credentials: { accessKeyId: o.accessKeyId, secretAccessKey: o.secretAccessKey },
    region: o.region ?? 'us-east-1',
    service: o.service ?? 'sqs',
    sha256: Sha256,
  });
}

function httpRequest(r: TestRequest) {
  const url = new URL(r.url);
  const query: Record<string, string> = {};
  for (const [k, v] of url.searchParams) query[k] = v;
  return {
    method: r.method,
    protocol: url.protocol,
    hostname: url.hostname,
    port: Number(url.port),
    path: url.pathname,
    query,
    headers: { host: url.host, ...r.headers },
    ...(r.body === undefined ? {} : { body: r.body }),
  };
}

function toUrl(
  base: string,
  path: string,
  query: Record<string, string | string[] | null> | undefined,
): string {
  const url = new URL(path, base);
  for (const [k, v] of Object.entries(query ?? {})) {
    if (typeof v === 'string') url.searchParams.set(k, v);
  }
  return url.toString();
}

/** The request with Authorization, X-Amz-Date and X-Amz-Content-Sha256 headers, as the SDK sends it. */
export async function signRequest(r: TestRequest, o: SigningOptions): Promise<TestRequest> {
  const signed = await signer(o).sign(
    httpRequest(r),
    o.signingDate === undefined ? {} : { signingDate: o.signingDate },
  );
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(signed.headers)) if (k !== 'host') headers[k] = v;
  return { ...r, headers };
}

/** A presigned URL (the signature in the query string) for the request. */
export async function presignRequest(
  r: TestRequest,
  o: SigningOptions & { expiresIn?: number },
): Promise<TestRequest> {
  const signed = await signer(o).presign(httpRequest(r), {
    expiresIn: o.expiresIn ?? 900,
    ...(o.signingDate === undefined ? {} : { signingDate: o.signingDate }),
  });
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(signed.headers)) if (k !== 'host') headers[k] = v;
  return { ...r, url: toUrl(r.url, signed.path, signed.query), headers };
}
