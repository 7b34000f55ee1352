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

test('Given requests with a 200 kB unknown parameter beside a 2 kB body, When their messages are queued, Then each keeps about its body on the heap, not the request (Query and JSON)', async () => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', fixture],
    { timeout: 60_000 },
  );
  const r = JSON.parse(stdout) as { bytesPerMessage: Record<string, number>; body: number; junk: number };
  for (const protocol of ['query', 'json']) {
    const kept = r.bytesPerMessage[protocol];
    assert.ok(kept !== undefined, protocol);
    // A 2 kB body and the message's own objects: well under 10 kB; a kept request: over 200 kB.
    assert.ok(kept < 10_000, `${protocol}: ${Math.round(kept)} bytes of heap per queued message`);
    assert.ok(kept > r.body, `${protocol}: ${Math.round(kept)} bytes: the bodies were not kept at all`);
  }
});
