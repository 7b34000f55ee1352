/**
 * The admin token check of every protected /admin route (admin.ts, admin-ha.ts), as an `onRequest`
 * hook: it runs before a body is read, so a caller without the token gets 401 whatever it sends
 * (a malformed body would otherwise get a parser's 400 first), and no body of an unauthenticated
 * caller is ever parsed.
 *
 * A missing, wrong, empty or overlong token is 401, never 500 (docs/faults.md row 16): compared in
 * constant time, as both sides are hashed to 32 bytes first, so neither the content nor the length
 * of the configured token leaks through timing. With no token configured the admin API is closed
 * and every call is 403. The token is never logged (the control plane logs no requests, and
 * log.ts redacts `authorization`). test/unit/admin-api.test.ts and admin-ha.test.ts show it.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** An `onRequest` hook that answers 401/403 unless the request carries the admin token. */
export function adminAuth(
  adminToken: string | undefined,
): (req: FastifyRequest, reply: FastifyReply) => Promise<unknown> {
  const expected = adminToken === undefined ? undefined : digest(adminToken);
  // Async hooks that answer must return the reply (fastify then skips the handler).
  return async (req, reply) => {
    if (expected === undefined) {
      return reply.code(403).send({
        error: 'AdminDisabled',
        message: 'the admin API is closed: set SHARED_SQS_ADMIN_TOKEN (or --admin-token) to open it',
      });
    }
    const header = req.headers.authorization;
    const given = typeof header === 'string' && /^Bearer /i.test(header) ? header.slice(7).trim() : '';
    // Hash first: timingSafeEqual needs equal lengths, and comparing digests leaks no length.
    if (!timingSafeEqual(digest(given), expected)) {
      return reply
        .code(401)
        .header('www-authenticate', 'Bearer realm="shared-sqs admin"')
        .send({ error: 'Unauthorized', message: 'a valid admin bearer token is required' });
    }
    return undefined;
  };
}
