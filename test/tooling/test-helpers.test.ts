/**
 * The test harness's own guarantees, which the rest of the suite leans on: ports picked where no
 * outgoing connection takes them, and no spawned process outliving a test file that fails or
 * overruns its time.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePort } from '../support/server.js';

const CHILDREN = fileURLToPath(new URL('../support/process.ts', import.meta.url));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    // A zombie still answers kill(0): only a running process counts.
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

test('freePort picks bindable ports below the ephemeral range', async () => {
  const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  for (let i = 0; i < 20; i++) {
    const port = await freePort();
    assert.ok(port >= 10_000 && port < low, `port ${port} not in 10000-${low - 1}`);
  }
});

for (const [how, script] of [
  ['exits with a child still running', 'process.exit(1);'],
  [
    'is ended with SIGTERM (as --test-timeout does)',
    'process.kill(process.pid, "SIGTERM"); setInterval(() => {}, 1000);',
  ],
] as const) {
  test(`a tracked child does not outlive a test process that ${how}`, async () => {
    const code = [
      `import { spawn } from 'node:child_process';`,
      `import { track } from ${JSON.stringify(CHILDREN)};`,
      `const p = spawn('sleep', ['300'], { stdio: ['ignore', 'pipe', 'pipe'] });`,
      `track(p);`,
      `console.log(p.pid);`,
      script,
    ].join('\n');
    const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    parent.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    await new Promise((resolve) => parent.once('close', resolve));
    const pid = Number(out.trim());
    assert.ok(pid > 0, `no child pid printed: ${JSON.stringify(out)}`);
    // SIGKILL is delivered before kill() returns; the reaping is up to whoever adopts it.
    for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 20));
    const left = alive(pid);
    if (left) process.kill(pid, 'SIGKILL');
    assert.equal(left, false, 'the tracked child was still running after its parent had gone');
  });
}
