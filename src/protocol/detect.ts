export type Protocol = 'json' | 'query';

/** Node's IncomingHttpHeaders, or anything shaped like it (names already lower-case). */
export type HeaderBag = Readonly<Record<string, string | readonly string[] | undefined>>;

const JSON_CONTENT_TYPE = 'application/x-amz-json';

function first(value: string | readonly string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : value?.[0];
}

/**
 * JSON when the request names its operation in `X-Amz-Target` or declares an `x-amz-json` body;
 * everything else (form bodies, GET query strings, garbage) is Query, whose decoder answers with
 * the AWS-shaped Query errors.
 */
export function detectProtocol(headers: HeaderBag): Protocol {
  if (first(headers['x-amz-target']) !== undefined) return 'json';
  const contentType = first(headers['content-type']);
  if (
    contentType !== undefined &&
    contentType.length >= JSON_CONTENT_TYPE.length &&
    contentType.slice(0, JSON_CONTENT_TYPE.length).toLowerCase() === JSON_CONTENT_TYPE
  ) {
    return 'json';
  }
  return 'query';
}
