/**
 * The deployment kit as shipped: systemd/shared-sqs.service passes `systemd-analyze verify` with no
 * warning, alone and with its active/active drop-in (whose settings are flags the server knows),
 * nginx/shared-sqs.conf and nginx/shared-sqs-active-active.conf pass `nginx -t` (rendered with
 * loopback addresses, inside a minimal main config, exactly as test/failover runs them) and keep
 * the settings their layout depends on, and every launcher (the bin, `npm start`, the unit) starts
 * Node with the same flags.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { parseConfig } from '../../src/config.js';
import {
  NGINX,
  NGINX_ACTIVE_ACTIVE_CONF,
  NGINX_CONF,
  renderNginxMain,
  renderNginxSnippet,
  run,
} from '../failover/harness.js';
import { productNodeFlags, spawnProcess, waitForReady } from '../support/process.js';
import { testsRequiring } from '../support/requires.js';
import { cleanEnv, freePort } from '../support/server.js';

const UNIT = fileURLToPath(new URL('../../systemd/shared-sqs.service', import.meta.url));
const DROP_IN = fileURLToPath(
  new URL('../../systemd/shared-sqs.service.d/active-active.conf', import.meta.url),
);
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

systemdTest(
  'Given the unit with its active/active drop-in beside it, When systemd-analyze verifies them, Then they pass with no warning, and the drop-in is read',
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'ssq-unit-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const unit = join(dir, 'shared-sqs.service');
    copyFileSync(UNIT, unit);
    mkdirSync(join(dir, 'shared-sqs.service.d'));
    const dropIn = join(dir, 'shared-sqs.service.d', 'active-active.conf');
    copyFileSync(DROP_IN, dropIn);
    const res = await run('systemd-analyze', ['verify', unit]);
    assert.equal(res.code, 0, res.stderr);
    assert.equal(res.stderr.trim(), '', 'no warnings');
    // The control: a wrong line in the drop-in is reported, so the pass above did read it.
    writeFileSync(dropIn, `${readFileSync(DROP_IN, 'utf8')}NoSuchSetting=1\n`);
    const broken = await run('systemd-analyze', ['verify', unit]);
    assert.match(broken.stderr, /active-active\.conf:\d+: Unknown key 'NoSuchSetting'/);
  },
);

test('Given the active/active drop-in, Then its settings are flags the server knows: active/active on the internal port, advertised at the host name', () => {
  const env: Record<string, string> = { REDIS_ADDR: '10.0.0.20:6379' };
  for (const [, name, value] of readFileSync(DROP_IN, 'utf8').matchAll(/^Environment=(\w+)=(.*)$/gm)) {
    // systemd's %H: the host name.
    env[name as string] = (value as string).replace(/%H/g, 'vm-a.internal');
  }
  assert.ok(Object.keys(env).every((k) => k === 'REDIS_ADDR' || k.startsWith('SHARED_SQS_')));
  const config = parseConfig([], env);
  assert.equal(config.activeActive, true);
  assert.equal(config.leaderElection, false);
  assert.equal(config.internalPort, 4102);
  assert.equal(config.advertiseHost, 'vm-a.internal');
});

for (const conf of [NGINX_CONF, NGINX_ACTIVE_ACTIVE_CONF]) {
  const name = `nginx/${conf.split('/').pop() ?? ''}`;
  nginxTest(
    `Given ${name} rendered with test addresses, When nginx -t checks it, Then it passes`,
    async (t) => {
      const dir = mkdtempSync(join(tmpdir(), 'ssq-nginx-t-'));
      t.after(() => rmSync(dir, { recursive: true, force: true }));
      mkdirSync(join(dir, 'tmp'));
      const snippet = join(dir, 'shared-sqs.conf');
      writeFileSync(snippet, renderNginxSnippet(18080, [14100, 14200], conf));
      const main = join(dir, 'nginx.conf');
      writeFileSync(main, renderNginxMain(dir, snippet));
      const res = await run(NGINX, ['-t', '-p', dir, '-c', main, '-g', `pid ${dir}/nginx.pid;`]);
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stderr, /syntax is ok/);
      assert.match(res.stderr, /test is successful/);
    },
  );
}

test('Given nginx/shared-sqs-active-active.conf, Then both instances serve, a dead one is skipped, and nothing that may have been delivered is sent again', () => {
  const text = renderNginxSnippet(18080, [14100, 14200], NGINX_ACTIVE_ACTIVE_CONF);
  const servers = [...text.matchAll(/^\s*server 127\.0\.0\.1:(\d+)([^;]*);/gm)];
  assert.deepEqual(
    servers.map((m) => m[1]),
    ['14100', '14200'],
  );
  for (const [line, , options = ''] of servers) {
    assert.doesNotMatch(options, /backup|down/, `${line}: every instance serves`);
    assert.match(options, /max_fails=[1-9]/, `${line}: passive health marks a dead instance down`);
    assert.match(options, /fail_timeout=\d+s/);
  }
  // Connection errors only: no non_idempotent (a POST sent is never sent again), no timeout, no 503.
  assert.deepEqual(
    [...text.matchAll(/^\s*proxy_next_upstream\s+([^;]*);/gm)].map((m) => m[1]),
    ['error'],
  );
  assert.match(text, /proxy_next_upstream_tries 2;/);
  const read = Number(/proxy_read_timeout (\d+)s;/.exec(text)?.[1]);
  assert.ok(read > 20, 'read timeout above the 20 s long poll');
  assert.match(text, /error_page 502 504 = @shared_sqs_unavailable_\$shared_sqs_protocol;/);
  assert.match(text, /client_max_body_size 4m;/);
  assert.match(text, /X-Forwarded-Proto \$scheme;/);
});

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
