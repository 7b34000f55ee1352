/**
 * Raw requests in either wire protocol, for what no client will send: exact headers and status,
 * malformed bodies, unknown actions. Everything goes to 127.0.0.1 only.
 */
import { request as httpRequest, type OutgoingHttpHeaders } from 'node:http';

export const QUERY_NS = 'http://queue.amazonaws.com/doc/2012-11-05/';

export interface RawResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

/** A Query-protocol form POST: `Action=...&Version=2012-11-05&...`. */
export async function queryPost(
  url: string,
  params: Record<string, string>,
  opts: { path?: string } = {},
): Promise<RawResponse> {
  const body = new URLSearchParams({ Version: '2012-11-05', ...params }).toString();
  const res = await fetch(`${url}${opts.path ?? '/'}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
    body,
    signal: AbortSignal.timeout(30_000),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** A Query-protocol GET: `<path>?Action=...&Version=2012-11-05&...`. */
export async function queryGet(
  url: string,
  path: string,
  params: Record<string, string>,
): Promise<RawResponse> {
  const query = new URLSearchParams({ Version: '2012-11-05', ...params }).toString();
  const res = await fetch(`${url}${path}?${query}`, { signal: AbortSignal.timeout(30_000) });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** A JSON 1.0 request: `X-Amz-Target: AmazonSQS.<action>`, the body as given (a string is sent as is). */
export async function jsonPost(
  url: string,
  target: string | undefined,
  body: unknown,
  extraHeaders: Record<string, string> = {},
): Promise<RawResponse> {
  const headers: Record<string, string> = {
    'content-type': 'application/x-amz-json-1.0',
    ...(target === undefined ? {} : { 'x-amz-target': target }),
    ...extraHeaders,
  };
  const res = await fetch(`${url}/`, {
    method: 'POST',
    headers,
    body: typeof body === 'string' || body instanceof Uint8Array ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** Any request through node:http, for headers and bodies fetch would refuse or rewrite. */
export function rawHttp(
  url: string,
  opts: { method: string; path?: string; headers?: OutgoingHttpHeaders; body?: Uint8Array | string },
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        method: opts.method,
        path: opts.path ?? '/',
        headers: opts.headers ?? {},
        timeout: 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}

/** The `<Code>` of a Query `<ErrorResponse>`, or undefined when the body is not one. */
export function queryErrorCode(xml: string): string | undefined {
  if (!/<ErrorResponse[\s>]/.test(xml)) return undefined;
  return /<Error>[\s\S]*?<Code>([^<]+)<\/Code>[\s\S]*?<\/Error>/.exec(xml)?.[1];
}

/** The text of the first `<tag>` in an XML document, entities decoded. */
export function xmlText(xml: string, tag: string): string | undefined {
  const m = new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(xml);
  return m?.[1] === undefined ? undefined : decodeXmlEntities(m[1]);
}

export function xmlTexts(xml: string, tag: string): string[] {
  return [...xml.matchAll(new RegExp(`<${tag}>([^<]*)</${tag}>`, 'g'))].map((m) =>
    decodeXmlEntities(m[1] ?? ''),
  );
}

function decodeXmlEntities(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#\d+|lt|gt|amp|quot|apos);/g, (_, e: string) => {
    switch (e) {
      case 'lt':
        return '<';
      case 'gt':
        return '>';
      case 'amp':
        return '&';
      case 'quot':
        return '"';
      case 'apos':
        return "'";
      default:
        return String.fromCodePoint(e.startsWith('#x') ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10));
    }
  });
}

/** The `__type` of a JSON error body, or undefined when the body is not one. */
export function jsonErrorType(text: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    if (
      typeof parsed === 'object' &&
      parsed !== null &&
      '__type' in parsed &&
      typeof parsed.__type === 'string'
    ) {
      return parsed.__type;
    }
  } catch {
    return undefined;
  }
  return undefined;
}

/** A Query action that must succeed (200): its XML reply. */
export async function queryOk(url: string, params: Record<string, string>): Promise<string> {
  const res = await queryPost(url, params);
  if (res.status !== 200) {
    throw new Error(`Query ${params['Action']} answered ${res.status}: ${res.text.slice(0, 500)}`);
  }
  return res.text;
}

/** `<Attribute><Name>n</Name><Value>v</Value></Attribute>` pairs of a Query reply. */
export function xmlAttributes(xml: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of xml.matchAll(
    /<Attribute>\s*<Name>([^<]*)<\/Name>\s*<Value>([^<]*)<\/Value>\s*<\/Attribute>/g,
  )) {
    out[decodeXmlEntities(m[1] ?? '')] = decodeXmlEntities(m[2] ?? '');
  }
  return out;
}
