/**
 * The deployment kit as shipped: systemd/shared-sqs.service passes `systemd-analyze verify` with no
 * warning, nginx/shared-sqs.conf passes `nginx -t` (rendered with loopback addresses, inside a
 * minimal main config, exactly as test/failover runs it), and every launcher (the bin, `npm start`,
 * the unit) starts Node with the same flags.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { NGINX, renderNginxMain, renderNginxSnippet, run } from '../failover/harness.js';
import { productNodeFlags, spawnProcess, waitForReady } from '../support/process.js';
import { testsRequiring } from '../support/requires.js';
import { cleanEnv, freePort } from '../support/server.js';

const UNIT = fileURLToPath(new URL('../../systemd/shared-sqs.service', import.meta.url));
const BIN = fileURLToPath(new URL('../../bin/shared-sqs.js', import.meta.url));
const PACKAGE = fileURLToPath(new URL('../../package.json', import.meta.url));
const systemdTest = testsRequiring('systemd-analyze').test;
const nginxTest = testsRequiring('nginx').test;

systemdTest(
  'Given systemd/shared-sqs.service, When systemd-analyze verifies it, Then it passes with no warning',
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'ssq-unit-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const unit = join(dir, 'shared-sqs.service');
    copyFileSync(UNIT, unit);
    const res = await run('systemd-analyze', ['verify', unit]);
    assert.equal(res.code, 0, res.stderr);
    assert.equal(res.stderr.trim(), '', 'no warnings');
  },
);

nginxTest(
  'Given nginx/shared-sqs.conf rendered with test addresses, When nginx -t checks it, Then it passes',
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'ssq-nginx-t-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    mkdirSync(join(dir, 'tmp'));
    const snippet = join(dir, 'shared-sqs.conf');
    writeFileSync(snippet, renderNginxSnippet(18080, [14100, 14200]));
    const main = join(dir, 'nginx.conf');
    writeFileSync(main, renderNginxMain(dir, snippet));
    const res = await run(NGINX, ['-t', '-p', dir, '-c', main, '-g', `pid ${dir}/nginx.pid;`]);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stderr, /syntax is ok/);
    assert.match(res.stderr, /test is successful/);
  },
);

test('Given nginx/shared-sqs.conf, Then it keeps the settings failover depends on', () => {
  const text = renderNginxSnippet(18080, [14100, 14200]);
  assert.match(text, /proxy_next_upstream error http_503 non_idempotent;/);
  assert.doesNotMatch(text, /proxy_next_upstream[^;]*timeout/, 'never retry after a timeout');
  assert.match(text, /proxy_next_upstream_tries 2;/);
  assert.match(text, /server 127\.0\.0\.1:14100 max_fails=0;/);
  assert.match(text, /server 127\.0\.0\.1:14200 max_fails=0;/);
  const read = Number(/proxy_read_timeout (\d+)s;/.exec(text)?.[1]);
  assert.ok(read > 20, 'read timeout above the 20 s long poll');
  assert.match(text, /client_max_body_size 4m;/);
  assert.match(text, /X-Forwarded-Proto \$scheme;/);
});

test('Given the launchers, Then the bin, npm start and the systemd unit pass Node the same flags', () => {
  const flags = productNodeFlags().join(' ');
  assert.match(flags, /--initial-old-space-size=\d+/);
  const pkg = JSON.parse(readFileSync(PACKAGE, 'utf8')) as { scripts: Record<string, string> };
  assert.equal(pkg.scripts['start'], `node ${flags} dist/main.js`);
  const execStart = /^ExecStart=(.*)$/m.exec(readFileSync(UNIT, 'utf8'))?.[1];
  assert.equal(execStart, `/usr/bin/node ${flags} /opt/shared-sqs/dist/main.js`);
});

test('Given bin/shared-sqs.js run as a program, Then its shebang starts Node with those flags', async () => {
  const [port, controlPort] = [await freePort(), await freePort()];
  const bin = spawnProcess(
    BIN,
    ['--port', String(port), '--control-port', String(controlPort), '--host', '127.0.0.1'],
    { env: cleanEnv() },
  );
  try {
    // Throws, with the bin's stderr, when it exits or /health does not answer 200 within 10 s.
    await waitForReady(bin.proc, controlPort, 10_000, bin.stderr, '/health');
    // The kernel runs `env -S node FLAGS BIN ARGS`, and env execs node in the same process.
    const argv = readFileSync(`/proc/${bin.proc.pid}/cmdline`, 'utf8').split('\0');
    for (const flag of productNodeFlags()) assert.ok(argv.includes(flag), `${flag} not in ${argv.join(' ')}`);
  } finally {
    await bin.stop();
  }
});
