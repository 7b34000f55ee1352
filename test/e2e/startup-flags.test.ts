/**
 * The server as a user starts it with a bad flag: exit code 2, one line on stderr that names the
 * flag, no stack trace, and nothing listening.
 */
import assert from 'node:assert/strict';
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
