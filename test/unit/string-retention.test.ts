/**
 * A queued message must keep only its own strings: a body kept as a view into its request keeps
 * the whole request alive (a Query batch kept every entry's body with each message). The copies are
 * made where views are made (core/strings.ts); this checks the result on both protocols by the
 * heap a queued message holds when its request carried 100 times its body in another parameter.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';

const fixture = path.resolve(import.meta.dirname, '../fixtures/retention.ts');

test('Given requests with a 200 kB unknown parameter beside a 2 kB body, When their messages are queued, Then each keeps about its body on the heap, not the request (Query and JSON; plain bodies, with spaces, with percent-encoded characters)', async () => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', fixture],
    { timeout: 60_000 },
  );
  const r = JSON.parse(stdout) as { bytesPerMessage: Record<string, number>; queued: number };
  assert.equal(Object.keys(r.bytesPerMessage).length, 6, 'both protocols, three kinds of body');
  // 5 warm-up and 100 measured messages of each kind, all still queued.
  assert.equal(r.queued, 6 * 105);
  for (const [protocol, kept] of Object.entries(r.bytesPerMessage)) {
    // A 2 kB body and the message's own objects: ~2-3 kB; a kept request: over 200 kB.
    assert.ok(kept < 10_000, `${protocol}: ${Math.round(kept)} bytes of heap per queued message`);
  }
});
