/**
 * The prerequisite check itself (test/support/requires.ts), run as `npm test` runs it: test/run.ts on
 * a test that needs nginx, with a PATH from which every directory holding an nginx is taken out.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { delimiter } from 'node:path';
import { test } from 'node:test';
import { onPath, PROGRAMS } from '../support/requires.js';
import { cleanEnv, PROJECT_ROOT } from '../support/server.js';

const PATH_WITHOUT_NGINX = (process.env['PATH'] ?? '')
  .split(delimiter)
  .filter((dir) => onPath('nginx', dir) === undefined)
  .join(delimiter);

/** test/run.ts on the fixture; outside this test runner's own context, so it runs the file. */
function runFixture(env: Record<string, string>): { status: number | null; out: string } {
  assert.equal(onPath('nginx', PATH_WITHOUT_NGINX), undefined);
  const childEnv: NodeJS.ProcessEnv = { ...cleanEnv(env), PATH: PATH_WITHOUT_NGINX };
  delete childEnv['NODE_TEST_CONTEXT'];
  const res = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'test/run.ts', 'test/fixtures/needs-nginx.test.ts'],
    { cwd: PROJECT_ROOT, env: childEnv, encoding: 'utf8', timeout: 60_000 },
  );
  return { status: res.status, out: res.stdout + res.stderr };
}

test('Given a PATH without nginx and no CI, When a test that needs it runs, Then it is skipped with one line naming nginx and its package, and the summary lists it', () => {
  const { status, out } = runFixture({ CI: '' });
  assert.equal(status, 0, out);
  const skipLines = out.split('\n').filter((l) => l.includes('a test that runs nginx') && l.includes('#'));
  assert.equal(skipLines.length, 1, out);
  assert.match(skipLines[0] ?? '', /# needs nginx \(apt-get install nginx\): not (found )?on PATH/);
  assert.match(out, /npm test: 1 skipped: 1 × needs nginx \(apt-get install nginx\)/);
  assert.match(out, /npm test: passed/);
  assert.match(out, /\n0 passed, 0 failed, 1 skipped\n$/);
});

test('Given a PATH without nginx and CI=true, When a test that needs it runs, Then the run fails naming nginx and its package', () => {
  const { status, out } = runFixture({ CI: 'true' });
  assert.equal(status, 1, out);
  assert.match(out, /CI=true and a program the tests need is missing: nginx \(apt-get install nginx\)/);
  assert.match(out, /npm test: nothing skipped/);
  assert.match(out, /npm test: FAILED: selected tests/);
  // The file that could not load is the one failed test of the closing count.
  assert.match(out, /\n0 passed, 1 failed, 0 skipped\n$/);
});

test('Given the programs the tests may need, when .ci/run is read, then it installs every Debian package they name', () => {
  const ci = readFileSync(new URL('../../.ci/run', import.meta.url), 'utf8');
  const installed = new Set(
    [...ci.matchAll(/need\+=\(([^)]+)\)/g)].flatMap((m) => String(m[1]).split(/\s+/)),
  );
  const named = Object.values(PROGRAMS).flatMap((p) => p.packages);
  assert.deepEqual(
    named.filter((pkg) => !installed.has(pkg)),
    [],
    'packages in test/support/requires.ts that .ci/run never installs',
  );
});
