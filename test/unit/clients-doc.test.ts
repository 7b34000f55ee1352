import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

/**
 * Keeps docs/clients.md in step with the programs the e2e tests run: each
 * `<!-- snippet: FILE#NAME -->` line is followed by a fenced block equal to the lines between
 * `--- NAME ---` and `--- end NAME ---` comments in FILE, less their common indentation.
 */

const ROOT = new URL('../../', import.meta.url);
const doc = readFileSync(new URL('docs/clients.md', ROOT), 'utf8');

/** The lines of FILE between its `--- name ---` and `--- end name ---` comment lines, dedented. */
function region(source: string, name: string): string {
  const lines = source.split('\n');
  const marker = (s: string): RegExp => new RegExp(`^\\s*(//|#) --- ${s} ---$`);
  const start = lines.findIndex((l) => marker(name).test(l));
  const end = lines.findIndex((l) => marker(`end ${name}`).test(l));
  assert.ok(start >= 0 && end > start, `a "--- ${name} ---" ... "--- end ${name} ---" region`);
  const body = lines.slice(start + 1, end);
  // Go indents with tabs, the others with spaces.
  const indent = Math.min(
    ...body.filter((l) => l.trim() !== '').map((l) => /^[ \t]*/.exec(l)?.[0].length ?? 0),
  );
  return body.map((l) => l.slice(indent)).join('\n');
}

const snippets = [...doc.matchAll(/<!-- snippet: (\S+)#(\S+) -->\n\n```\w*\n([\s\S]*?)\n```/g)];

test('Given docs/clients.md, when its snippets are read, then there is one for every tested framework', () => {
  assert.equal(
    snippets.length,
    doc.split('<!-- snippet:').length - 1,
    'every snippet marker is followed by a blank line and a fenced block',
  );
  assert.deepEqual(
    snippets.map(([, file]) => file),
    [
      'test/e2e/sqs-producer.test.ts',
      'test/e2e/frameworks/nest-app.ts',
      'test/fixtures/boto3_calls.py',
      'test/e2e/frameworks/celery_app.py',
      'test/e2e/frameworks/symfony-messenger.php',
      'test/e2e/frameworks/go-sdk-v2.go',
    ],
  );
});

for (const [, file, name, block] of snippets) {
  test(`Given docs/clients.md, when the ${file}#${name} snippet is compared, then it equals the file's region`, () => {
    const source = readFileSync(new URL(String(file), ROOT), 'utf8');
    assert.equal(block, region(source, String(name)));
  });
}

test('Given a source with a marked region, when it is extracted, then the lines between the markers come back dedented', () => {
  const source = ['x', '  // --- a ---', '  one(', '    two)', '  // --- end a ---', 'y'].join('\n');
  assert.equal(region(source, 'a'), 'one(\n  two)');
  assert.equal(region('\t// --- g ---\n\tf(\n\t\tx)\n\t// --- end g ---', 'g'), 'f(\n\tx)');
  assert.throws(() => region(source, 'b'), /region/);
});
