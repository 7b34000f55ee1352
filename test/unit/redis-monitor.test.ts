/** The MONITOR line parser the failover tests read Redis's own record with. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseMonitorLine } from '../support/redis-monitor.js';

test('Given MONITOR lines as Redis 7 writes them, when parsed, then the client and each unescaped argument come out', () => {
  assert.deepEqual(parseMonitorLine('1796549924.562441 [0 127.0.0.1:42470] "info"'), {
    args: ['info'],
    source: '127.0.0.1:42470',
  });
  assert.deepEqual(parseMonitorLine('1796549924.562441 [0 lua] "HSET" "k" "a \\"b\\"\\n\\\\" "\\xff\\x00"'), {
    args: ['HSET', 'k', 'a "b"\n\\', '\xff\x00'],
    source: 'lua',
  });
  assert.deepEqual(parseMonitorLine('1.0 [0 127.0.0.1:1] "SET" "" "x y"'), {
    args: ['SET', '', 'x y'],
    source: '127.0.0.1:1',
  });
  assert.equal(parseMonitorLine('OK'), undefined);
});
