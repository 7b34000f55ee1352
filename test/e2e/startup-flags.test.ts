/**
 * The server as a user starts it with a bad flag: exit code 2, one line on stderr that names the
 * flag, no stack trace, and nothing listening. A bad --config file: exit code 2 and every problem.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { freePort, spawnMain } from '../support/server.js';

async function expectRefused(args: string[], mentions: RegExp): Promise<void> {
  // Free ports and loopback, so that a server that wrongly accepts the flags disturbs nobody.
  const port = await freePort();
  const controlPort = await freePort();
  const base = ['--host', '127.0.0.1', '--control-port', String(controlPort)];
  const child = spawnMain(
    args.includes('--port') ? [...base, ...args] : [...base, '--port', String(port), ...args],
  );
  const timer = setTimeout(() => child.proc.kill('SIGKILL'), 10_000);
  const exit = await child.exited;
  clearTimeout(timer);
  const stderr = child.stderr();
  assert.deepEqual(exit, { code: 2, signal: null }, `exit status for ${args.join(' ')}; stderr: ${stderr}`);
  const lines = stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `one line on stderr, got:\n${stderr}`);
  assert.match(stderr, mentions);
  assert.doesNotMatch(stderr, /^\s+at |Error:|\.js:\d+/m, 'no stack trace');
  assert.equal(child.stdout(), '', 'nothing on stdout');
}

test('Given --port nope, Then exit 2 with one line naming --port', async () => {
  await expectRefused(['--port', 'nope'], /--port/);
});

test('Given --account-id 123, Then exit 2 with one line naming --account-id', async () => {
  await expectRefused(['--account-id', '123'], /--account-id/);
});

test('Given --port 70000, Then exit 2 with one line naming --port', async () => {
  await expectRefused(['--port', '70000'], /--port/);
});

test('Given an unknown flag, Then exit 2 with one line naming it', async () => {
  await expectRefused(['--no-such-flag', 'x'], /--no-such-flag/);
});

/** `node dist/main.js ...args` with a config file of `text`, run to its exit (at most 10 s). */
async function runWithConfig(
  name: string,
  text: string,
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'ssq-startup-'));
  try {
    writeFileSync(join(dir, name), text);
    const port = await freePort();
    const controlPort = await freePort();
    const child = spawnMain([
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--control-port',
      String(controlPort),
      '--config',
      join(dir, name),
      ...args,
    ]);
    const timer = setTimeout(() => child.proc.kill('SIGKILL'), 10_000);
    const exit = await child.exited;
    clearTimeout(timer);
    return { code: exit.code, stdout: child.stdout(), stderr: child.stderr() };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('Given a YAML --config with --check-config, Then it says the file is valid and exits 0 without serving', async () => {
  const yaml =
    'queues:\n  - name: orders\n    attributes: { RedrivePolicy: { deadLetterTargetArn: dlq, maxReceiveCount: 3 } }\n  - name: dlq\n';
  const { code, stdout, stderr } = await runWithConfig('q.yaml', yaml, ['--check-config']);
  assert.deepEqual([code, stderr], [0, '']);
  assert.match(stdout, /q\.yaml: valid \(0 tenant\(s\), 2 queue\(s\)\)\n$/);
});

test('Given a --config with several problems, Then exit 2 with every problem as `path: reason`, no stack', async () => {
  const yaml =
    'queues:\n  - name: orders\n    colour: red\n  - name: src\n    attributes: { RedrivePolicy: { deadLetterTargetArn: nowhere, maxReceiveCount: 3 } }\n';
  for (const args of [['--check-config'], []]) {
    const { code, stderr } = await runWithConfig('bad.yaml', yaml, args);
    assert.equal(code, 2, stderr);
    const lines = stderr.trimEnd().split('\n');
    assert.match(lines[0] ?? '', /^shared-sqs: --config .*bad\.yaml: 2 problem\(s\)$/);
    assert.deepEqual(lines.slice(1).sort(), [
      '  queues[0]: unknown field "colour"',
      '  queues[1].attributes.RedrivePolicy: queue src names the dead-letter queue nowhere, which the file does not define (in account 000000000000, region us-east-1)',
    ]);
    assert.doesNotMatch(stderr, /^\s+at |\.js:\d+/m, 'no stack trace');
  }
});
