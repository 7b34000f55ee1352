export type Protocol = 'json' | 'query';

/** Node's IncomingHttpHeaders, or anything shaped like it (names already lower-case). */
export type HeaderBag = Readonly<Record<string, string | readonly string[] | undefined>>;

const JSON_CONTENT_TYPE = 'application/x-amz-json';
const FORM_CONTENT_TYPE = 'application/x-www-form-urlencoded';

function first(value: string | readonly string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : value?.[0];
}

/**
 * The content type decides: a form body is Query whatever X-Amz-Target says (older Query clients
 * send `X-Amz-Target: AmazonSQSv20121105.<Action>` beside `Action=<Action>`), an `x-amz-json` body
 * is JSON. Any other content type, or none, is JSON when the request names its operation in
 * X-Amz-Target, else Query (GET query strings, garbage), whose decoder answers with the AWS-shaped
 * Query errors. docs/compatibility.md states the rule; test/unit/protocol-detect.test.ts holds it.
 */
export function protocolOf(contentType: string | undefined, hasTarget: boolean): Protocol {
  if (contentType === undefined) return hasTarget ? 'json' : 'query';
  if (hasTarget) return isMediaType(contentType, FORM_CONTENT_TYPE) ? 'query' : 'json';
  return isMediaType(contentType, JSON_CONTENT_TYPE) ? 'json' : 'query';
}

export function detectProtocol(headers: HeaderBag): Protocol {
  return protocolOf(first(headers['content-type']), first(headers['x-amz-target']) !== undefined);
}

/**
 * Whether `value` starts with `lowerPrefix`, ASCII case ignored, without allocating: this runs on
 * every request. The form type must end there (`; charset=...` may follow); the JSON one is a
 * prefix of every version (`-1.0`, `-1.1`).
 */
function isMediaType(value: string, lowerPrefix: string): boolean {
  if (value.length < lowerPrefix.length) return false;
  for (let i = 0; i < lowerPrefix.length; i++) {
    const c = value.charCodeAt(i);
    if ((c >= 65 && c <= 90 ? c + 32 : c) !== lowerPrefix.charCodeAt(i)) return false;
  }
  if (lowerPrefix !== FORM_CONTENT_TYPE || value.length === lowerPrefix.length) return true;
  const next = value.charCodeAt(lowerPrefix.length);
  return next === 59 /* ; */ || next === 32 /* space */ || next === 9; /* tab */
}
