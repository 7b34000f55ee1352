/**
 * `npm test`: check, build, then the suites, each step run whether or not the one before it
 * passed, and a non-zero exit when any failed. The one exception is a failed build: the e2e and
 * failover suites run dist/, so they are not run against a stale or missing one (said, and failed).
 * At the end, one line sums up every skipped test by its reason (test/support/requires.ts), and the
 * last line counts every test of every step: `N passed, N failed, N skipped`.
 *
 * `node --import tsx test/run.ts FILE...` runs only those test files, with no check or build.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const NODE_TEST = ['--import', 'tsx', '--test', '--test-timeout=600000'];

process.chdir(fileURLToPath(new URL('..', import.meta.url)));

const failed: string[] = [];
const notRun: string[] = [];
const reports = mkdtempSync(join(tmpdir(), 'ssq-test-run-'));

function step(name: string, command: string, args: readonly string[], detail = ''): boolean {
  console.log(`\n=== ${name}${detail}`);
  const res = spawnSync(command, args, { stdio: 'inherit' });
  const ok = res.status === 0;
  if (!ok) failed.push(name);
  return ok;
}

function tests(name: string, concurrency: number, files: readonly string[]): void {
  const outcomes = join(reports, `${readdirSync(reports).length}.txt`);
  step(
    `${name} tests`,
    process.execPath,
    [
      ...NODE_TEST,
      `--test-concurrency=${concurrency}`,
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      '--test-reporter=./test/outcomes-reporter.mjs',
      `--test-reporter-destination=${outcomes}`,
      ...files,
    ],
    ` (${files.length} files)`,
  );
}

function testFiles(...dirs: string[]): string[] {
  return dirs.flatMap((dir) =>
    readdirSync(dir)
      .filter((f) => f.endsWith('.test.ts'))
      .sort()
      .map((f) => `${dir}/${f}`),
  );
}

/** Every step's outcomes (test/outcomes-reporter.mjs): counts, and the skips by reason. */
function tally(): { passed: number; failed: number; skips: Map<string, number> } {
  const t = { passed: 0, failed: 0, skips: new Map<string, number>() };
  for (const f of readdirSync(reports)) {
    for (const line of readFileSync(join(reports, f), 'utf8').split('\n')) {
      if (line === 'pass') t.passed++;
      else if (line === 'fail') t.failed++;
      else if (line.startsWith('skip\t')) {
        const reason = line.slice('skip\t'.length);
        t.skips.set(reason, (t.skips.get(reason) ?? 0) + 1);
      }
    }
  }
  return t;
}

/** "3 skipped: 2 × needs nginx (...); 1 × ..." */
function skipSummary(skips: ReadonlyMap<string, number>, total: number): string {
  if (total === 0) return 'nothing skipped';
  const reasons = [...skips].map(([reason, n]) => `${n} × ${reason}`);
  return `${total} skipped: ${reasons.join('; ')}`;
}

const only = process.argv.slice(2);
if (only.length > 0) {
  tests('selected', 2, only);
} else {
  step('check', 'npm', ['run', 'check']);
  const built = step('build', 'npm', ['run', 'build']);
  if (built) {
    tests(
      'unit, tooling, integration and e2e',
      2,
      testFiles('test/unit', 'test/tooling', 'test/integration', 'test/e2e'),
    );
    tests('failover', 1, testFiles('test/failover'));
  } else {
    notRun.push('e2e and failover (they run dist/, which did not build)');
    tests('unit, tooling and integration', 2, testFiles('test/unit', 'test/tooling', 'test/integration'));
  }
}

const { passed, failed: failedTests, skips } = tally();
const skipped = [...skips.values()].reduce((a, b) => a + b, 0);
console.log(`\nnpm test: ${skipSummary(skips, skipped)}`);
rmSync(reports, { recursive: true, force: true });
if (notRun.length > 0) console.log(`npm test: not run: ${notRun.join('; ')}`);
if (failed.length > 0) console.log(`npm test: FAILED: ${failed.join(', ')}`);
else console.log('npm test: passed');
console.log(`${passed} passed, ${failedTests} failed, ${skipped} skipped`);
if (failed.length > 0) process.exit(1);
