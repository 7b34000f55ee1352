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
import { claimedCredential, isRegionName, verify, type SignedRequest } from './sigv4.js';

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

export function authenticate(opts: AuthOptions, req: SignedRequest): Principal {
  if (opts.mode === 'on') {
    const { accessKeyId, region } = verify(req, (id) => opts.keyOwner(id)?.secretAccessKey, opts.now());
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
