/**
 * The data plane's auth step: which account and region a request acts in.
 *
 * - `off` (the default for a single local instance): nothing is verified. A request acts in the
 *   default account, unless the access key id it names (Authorization header or presigned URL) is
 *   12 digits, which is then its account (as LocalStack does, so multi-account suites written for
 *   emulators run unchanged), or a tenant's key, whose account it then is. Costs a few string
 *   searches per request.
 * - `on`: the request must carry a valid SigV4 signature (sigv4.ts) made with a tenant's key; it
 *   acts in that tenant's account.
 *
 * Either way the region is the one of the credential scope, as on AWS (a queue lives in the region
 * its creator signed for); a request that names none, or (auth off) no valid one, gets the default.
 */
import {
  AuthError,
  claimedCredential,
  isRegionName,
  verify,
  type SignedRequest,
  type Verified,
} from './sigv4.js';

export type AuthMode = 'off' | 'on';

export const AUTH_MODES: readonly AuthMode[] = ['off', 'on'];

/** An access key's owner, as the tenant table knows it. */
export interface KeyOwner {
  readonly accountId: string;
  readonly secretAccessKey: string;
  /** The tenant's name, for logs and metrics. */
  readonly tenant: string;
}

export interface AuthOptions {
  readonly mode: AuthMode;
  readonly defaultAccountId: string;
  readonly defaultRegion: string;
  /** The owner of an access key id, if a tenant has it. */
  readonly keyOwner: (accessKeyId: string) => KeyOwner | undefined;
  /** Milliseconds since the epoch. */
  readonly now: () => number;
}

export interface Principal {
  readonly accountId: string;
  readonly region: string;
  /** The tenant whose key signed (or, auth off, was named); undefined otherwise. */
  readonly tenant: string | undefined;
}

const TWELVE_DIGITS = /^\d{12}$/;

/**
 * `protocol` is how the data plane will read the request (JSON: the action from X-Amz-Target and
 * the input from the body; Query: both from the query string and the body).
 */
export function authenticate(opts: AuthOptions, req: SignedRequest, protocol: 'json' | 'query'): Principal {
  if (opts.mode === 'on') {
    const verified = verify(req, (id) => opts.keyOwner(id)?.secretAccessKey, opts.now());
    checkCovered(verified, req, protocol);
    const { accessKeyId, region } = verified;
    const owner = opts.keyOwner(accessKeyId);
    // verify() found the key a moment ago, in the same synchronous turn.
    return { accountId: owner?.accountId ?? opts.defaultAccountId, region, tenant: owner?.tenant };
  }
  const claimed = claimedCredential(req.headers, req.url);
  if (claimed === undefined) {
    return { accountId: opts.defaultAccountId, region: opts.defaultRegion, tenant: undefined };
  }
  const region = isRegionName(claimed.region) ? claimed.region : opts.defaultRegion;
  if (TWELVE_DIGITS.test(claimed.accessKeyId)) {
    return { accountId: claimed.accessKeyId, region, tenant: undefined };
  }
  const owner = opts.keyOwner(claimed.accessKeyId);
  return { accountId: owner?.accountId ?? opts.defaultAccountId, region, tenant: owner?.tenant };
}

/**
 * The request is run only as far as its signature covers it (docs/faults.md row 20): a JSON request's
 * action must be a signed header, or a captured request could be replayed as another action
 * with the same body (GetQueueAttributes as DeleteQueue); and a body the signature does not
 * cover (UNSIGNED-PAYLOAD) must be empty, or a presigned URL's holder could add parameters or,
 * with JSON, choose them all. AWS documents unsigned payloads for S3 only; here they are refused
 * as soon as they carry anything.
 */
function checkCovered(v: Verified, req: SignedRequest, protocol: 'json' | 'query'): void {
  if (protocol === 'json' && !v.signedHeaders.includes('x-amz-target')) {
    throw new AuthError(
      'SignatureDoesNotMatch',
      'There were headers present in the request which were not signed: x-amz-target. Sign the X-Amz-Target header.',
    );
  }
  // Such a request is read as Query only because its Content-Type is a form's
  // (src/protocol/detect.ts); were that header unsigned, a captured JSON request could be re-sent
  // as a form whose parameters come from its JSON body (a message body holding
  // `&Action=DeleteQueue&`).
  if (
    protocol === 'query' &&
    req.headers['x-amz-target'] !== undefined &&
    !v.signedHeaders.includes('content-type')
  ) {
    throw new AuthError(
      'SignatureDoesNotMatch',
      'There were headers present in the request which were not signed: content-type. Sign the Content-Type header.',
    );
  }
  if (!v.payloadSigned && req.body.length > 0) {
    throw new AuthError(
      'SignatureDoesNotMatch',
      'The request body is not covered by the signature (UNSIGNED-PAYLOAD); sign the payload, or send no body.',
    );
  }
}
