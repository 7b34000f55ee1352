import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { availableParallelism } from 'node:os';
import { getHeapStatistics } from 'node:v8';
import { promisify } from 'node:util';

import { FLAG_TABLE, optionsArgv, parseConfig, type Config } from '../../src/config.js';
import { defaultMaxMemory, parseDurationMs, parseSize } from '../../src/flag-values.js';
import { ConfigError, HelpRequested } from '../../src/flags.js';
import type { ServerOptions } from '../../src/index.js';

const DEFAULT_CONFIG: Config = {
  port: 4100,
  controlPort: 4101,
  host: '0.0.0.0',
  region: 'us-east-1',
  accountId: '000000000000',
  baseUrl: undefined,
  logLevel: 'info',
  redisAddr: undefined,
  redisUrl: undefined,
  redisPassword: undefined,
  redisSentinels: undefined,
  redisMasterName: undefined,
  redisCluster: undefined,
  redisPrefix: '{ssq}:',
  redisWaitReplicas: 0,
  redisWaitTimeout: 250,
  redisWaitAof: false,
  leaderElection: false,
  activeActive: false,
  internalPort: 4102,
  advertiseHost: undefined,
  workers: 1,
  leaderTtl: 10_000,
  leaderInterval: 3_000,
  adminToken: undefined,
  queueDeletedRecently: true,
  purgeCooldown: true,
  dev: false,
  auth: 'off',
  config: undefined,
  checkConfig: false,
  warmupRequests: 3000,
  maxMemory: defaultMaxMemory(getHeapStatistics().heap_size_limit),
  corsOrigin: [],
};

/** Asserts that parsing fails with a ConfigError whose one-line message matches `pattern`. */
function assertConfigError(argv: string[], env: NodeJS.ProcessEnv, pattern: RegExp): ConfigError {
  let caught: unknown;
  try {
    parseConfig(argv, env);
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof ConfigError, `expected a ConfigError, got ${String(caught)}`);
  assert.match(caught.message, pattern);
  assert.doesNotMatch(caught.message, /\n/);
  return caught;
}

void describe('parseConfig: defaults and sources', () => {
  void test('Given no flags and no environment, when parsing, then every field has its default', () => {
    assert.deepEqual(parseConfig([], {}), DEFAULT_CONFIG);
  });

  void test('Given SHARED_SQS_PORT, when parsing without --port, then the environment sets the port', () => {
    assert.equal(parseConfig([], { SHARED_SQS_PORT: '5000' }).port, 5000);
  });

  void test('Given both SHARED_SQS_PORT and --port, when parsing, then the flag wins', () => {
    assert.equal(parseConfig(['--port', '6000'], { SHARED_SQS_PORT: '5000' }).port, 6000);
  });

  void test('Given an empty SHARED_SQS_PORT, when parsing, then it counts as unset', () => {
    assert.equal(parseConfig([], { SHARED_SQS_PORT: '' }).port, 4100);
  });

  void test('Given --port=0 and --control-port=0, when parsing, then both ask for a free port', () => {
    const config = parseConfig(['--port=0', '--control-port=0'], {});
    assert.deepEqual([config.port, config.controlPort], [0, 0]);
  });

  void test('Given the plain REDIS_ADDR and REDIS_PASSWORD of the Go predecessor, when parsing, then they are used', () => {
    const config = parseConfig([], { REDIS_ADDR: '10.0.0.5:6379', REDIS_PASSWORD: 'pw' });
    assert.deepEqual([config.redisAddr, config.redisPassword], ['10.0.0.5:6379', 'pw']);
  });

  void test('Given SHARED_SQS_REDIS_ADDR and REDIS_ADDR, when parsing, then the prefixed variable wins', () => {
    const config = parseConfig([], { SHARED_SQS_REDIS_ADDR: 'a:1', REDIS_ADDR: 'b:2' });
    assert.equal(config.redisAddr, 'a:1');
  });

  void test('Given REDIS_ADDR and --redis-addr, when parsing, then the flag wins', () => {
    assert.equal(parseConfig(['--redis-addr', 'a:1'], { REDIS_ADDR: 'b:2' }).redisAddr, 'a:1');
  });

  void test('Given REDIS_ADDR and an empty --redis-addr=, when parsing, then Redis is unset (memory only)', () => {
    assert.equal(parseConfig(['--redis-addr='], { REDIS_ADDR: 'b:2' }).redisAddr, undefined);
  });

  void test('Given SHARED_SQS_LEADER_ELECTION=true and REDIS_ADDR, when parsing, then leader election is on', () => {
    const config = parseConfig([], { SHARED_SQS_LEADER_ELECTION: 'true', REDIS_ADDR: 'r:6379' });
    assert.equal(config.leaderElection, true);
  });

  void test('Given SHARED_SQS_LEADER_ELECTION=true and --no-leader-election, when parsing, then the flag wins', () => {
    const config = parseConfig(['--no-leader-election'], { SHARED_SQS_LEADER_ELECTION: 'true' });
    assert.equal(config.leaderElection, false);
  });

  void test('Given --leader-election=1 (which yargs alone reads as false), when parsing, then it is on', () => {
    assert.equal(parseConfig(['--leader-election=1', '--redis-addr=r:1'], {}).leaderElection, true);
  });

  void test('Given --no-queue-deleted-recently, when parsing, then the recently-deleted rule is off', () => {
    assert.equal(parseConfig(['--no-queue-deleted-recently'], {}).queueDeletedRecently, false);
  });

  void test('Given SHARED_SQS_QUEUE_DELETED_RECENTLY=false, when parsing, then the recently-deleted rule is off', () => {
    const config = parseConfig([], { SHARED_SQS_QUEUE_DELETED_RECENTLY: 'false' });
    assert.equal(config.queueDeletedRecently, false);
  });

  void test('Given --no-purge-cooldown or its variable, when parsing, then the purge cooldown is off', () => {
    assert.equal(parseConfig(['--no-purge-cooldown'], {}).purgeCooldown, false);
    assert.equal(parseConfig([], { SHARED_SQS_PURGE_COOLDOWN: 'false' }).purgeCooldown, false);
    assert.equal(parseConfig([], {}).purgeCooldown, true);
  });

  void test('Given --dev, when parsing, then both test switches are off and the log level is warn', () => {
    const config = parseConfig(['--dev'], {});
    assert.deepEqual(
      [config.dev, config.queueDeletedRecently, config.purgeCooldown, config.logLevel],
      [true, false, false, 'warn'],
    );
  });

  void test('Given --dev with a switch or level set explicitly, when parsing, then the explicit value wins', () => {
    const config = parseConfig(['--dev', '--purge-cooldown', '--log-level', 'debug'], {
      SHARED_SQS_QUEUE_DELETED_RECENTLY: 'true',
    });
    assert.deepEqual(
      [config.queueDeletedRecently, config.purgeCooldown, config.logLevel],
      [true, true, 'debug'],
    );
  });

  void test('Given --check-config without --config, when parsing, then it asks for the file', () => {
    assertConfigError(['--check-config'], {}, /^--check-config needs --config FILE$/);
    assert.equal(parseConfig(['--check-config', '--config', 'x.yaml'], {}).checkConfig, true);
  });

  void test('Given SHARED_SQS_ADMIN_TOKEN, when parsing, then the admin token is set', () => {
    assert.equal(parseConfig([], { SHARED_SQS_ADMIN_TOKEN: 's3cret' }).adminToken, 's3cret');
  });

  void test('Given Go-style single-dash flags, when parsing, then they are read as long flags', () => {
    const config = parseConfig(['-port=5000', '-control-port', '5001'], {});
    assert.deepEqual([config.port, config.controlPort], [5000, 5001]);
  });

  void test('Given a base URL with a trailing slash and upper-case host, when parsing, then it is kept as its origin', () => {
    assert.equal(
      parseConfig(['--base-url', 'https://SQS.Example.com/'], {}).baseUrl,
      'https://sqs.example.com',
    );
  });

  void test('Given a redis:// URL, when parsing, then it is kept as given', () => {
    assert.equal(parseConfig(['--redis-addr', 'redis://:pw@r:6379/0'], {}).redisAddr, 'redis://:pw@r:6379/0');
  });

  void test('Given an upper-case --log-level, when parsing, then it is accepted in lower case', () => {
    assert.equal(parseConfig(['--log-level', 'DEBUG'], {}).logLevel, 'debug');
  });

  void test('Given a bracketed IPv6 --host, when parsing, then the brackets are dropped for listen()', () => {
    assert.equal(parseConfig(['--host', '[::1]'], {}).host, '::1');
  });
});

void describe('parseConfig: durations', () => {
  const cases: Array<[string, number]> = [
    ['10s', 10_000],
    ['500ms', 500],
    ['1m30s', 90_000],
    ['1.5s', 1_500],
    ['2h', 7_200_000],
    ['1500us', 2],
  ];
  for (const [text, ms] of cases) {
    void test(`Given the duration ${text}, when parsing it, then it is ${ms} ms`, () => {
      assert.equal(parseDurationMs(text), ms);
    });
  }

  for (const text of ['10', 's', '', '-1s', '1d', '1 s']) {
    void test(`Given ${JSON.stringify(text)}, when parsing it as a duration, then it is rejected`, () => {
      assert.equal(parseDurationMs(text), undefined);
    });
  }

  void test('Given --leader-ttl 20s and --leader-interval 5s, when parsing, then both are in milliseconds', () => {
    const config = parseConfig(['--leader-ttl', '20s', '--leader-interval', '5s'], {});
    assert.deepEqual([config.leaderTtl, config.leaderInterval], [20_000, 5_000]);
  });

  void test('Given SHARED_SQS_LEADER_INTERVAL=500ms, when parsing, then the interval is 500 ms', () => {
    assert.equal(parseConfig([], { SHARED_SQS_LEADER_INTERVAL: '500ms' }).leaderInterval, 500);
  });
});

void describe('parseConfig: validation', () => {
  void test('Given an unknown flag, when parsing, then it is an error naming the flag', () => {
    assertConfigError(['--frobnicate'], {}, /^Unknown argument: frobnicate$/);
  });

  void test('Given --no- before a flag that is not a switch, when parsing, then it is unknown', () => {
    assertConfigError(['--no-port'], {}, /^Unknown argument: --no-port$/);
  });

  void test('Given a camelCase spelling of a flag, when parsing, then it is unknown', () => {
    assertConfigError(['--leaderElection'], {}, /^Unknown argument: leaderElection$/);
  });

  void test('Given a positional argument, when parsing, then it is an error', () => {
    assertConfigError(['serve'], {}, /^Unknown argument: serve$/);
  });

  void test('Given a positional argument after --, when parsing, then it is an error', () => {
    assertConfigError(['--', 'serve'], {}, /unexpected argument "serve"/);
  });

  void test('Given --port without a value, when parsing, then it says a value is needed', () => {
    assertConfigError(['--port'], {}, /^Not enough arguments following: port$/);
  });

  void test('Given a non-numeric --port, when parsing, then it is an error quoting the value', () => {
    assertConfigError(
      ['--port', 'http'],
      {},
      /^--port must be a port number from 0 to 65535 \(got "http"\)$/,
    );
  });

  void test('Given --port 65536, when parsing, then it is out of range', () => {
    assertConfigError(['--port', '65536'], {}, /--port must be a port number from 0 to 65535/);
  });

  void test('Given a fractional --control-port, when parsing, then it is an error', () => {
    assertConfigError(['--control-port', '41.5'], {}, /--control-port must be a port number/);
  });

  void test('Given an invalid SHARED_SQS_PORT, when parsing, then the error names the variable', () => {
    assertConfigError([], { SHARED_SQS_PORT: '-1' }, /^SHARED_SQS_PORT must be a port number/);
  });

  void test('Given the same non-zero port for both planes, when parsing, then it is an error', () => {
    assertConfigError(['--port', '5000', '--control-port', '5000'], {}, /must differ \(both 5000\)/);
  });

  void test('Given --warmup-requests or its variable, when parsing, then it is the count; 0 turns it off', () => {
    assert.equal(parseConfig(['--warmup-requests', '0'], {}).warmupRequests, 0);
    assert.equal(parseConfig([], { SHARED_SQS_WARMUP_REQUESTS: '500' }).warmupRequests, 500);
    assert.equal(parseConfig(['--warmup-requests', '1000000'], {}).warmupRequests, 1_000_000);
  });

  void test('Given a negative, fractional or too large --warmup-requests, when parsing, then it is an error', () => {
    for (const bad of ['-1', '1.5', 'many', '1000001', '']) {
      assertConfigError(
        ['--warmup-requests', bad],
        {},
        /^(--warmup-requests must be a whole number from 0 to 1000000|Not enough arguments following: warmup-requests)/,
      );
    }
  });

  void test('Given an 11-digit --account-id, when parsing, then it is an error', () => {
    assertConfigError(['--account-id', '12345678901'], {}, /^--account-id must be exactly 12 digits/);
  });

  void test('Given an --account-id with letters, when parsing, then it is an error', () => {
    assertConfigError(['--account-id', '12345678901a'], {}, /--account-id must be exactly 12 digits/);
  });

  void test('Given a --region with upper case and spaces, when parsing, then it is an error', () => {
    assertConfigError(['--region', 'US East'], {}, /^--region must look like a region name/);
  });

  void test('Given an unknown --log-level, when parsing, then it lists the valid levels', () => {
    assertConfigError(
      ['--log-level', 'verbose'],
      {},
      /must be one of fatal, error, warn, info, debug, trace, silent/,
    );
  });

  void test('Given a --base-url with a path, when parsing, then it is an error', () => {
    assertConfigError(
      ['--base-url', 'https://sqs.example.com/queues'],
      {},
      /^--base-url must be scheme:\/\/host/,
    );
  });

  void test('Given a --base-url with a query, when parsing, then it is an error', () => {
    assertConfigError(['--base-url', 'https://sqs.example.com/?a=1'], {}, /no path, query or fragment/);
  });

  void test('Given a --base-url with an ftp scheme, when parsing, then it is an error', () => {
    assertConfigError(['--base-url', 'ftp://sqs.example.com'], {}, /must start with http:\/\/ or https:\/\//);
  });

  void test('Given a --base-url that is not a URL, when parsing, then it is an error', () => {
    assertConfigError(['--base-url', 'sqs.example.com'], {}, /must be an absolute URL/);
  });

  void test('Given a --redis-addr without a port, when parsing, then it is an error', () => {
    assertConfigError(['--redis-addr', 'localhost'], {}, /^--redis-addr must be host:port/);
  });

  void test('Given an http:// --redis-addr holding a password, when parsing, then the error does not echo it', () => {
    const err = assertConfigError(
      ['--redis-addr', 'http://:hunter2@r:1'],
      {},
      /^--redis-addr must be host:port/,
    );
    assert.doesNotMatch(err.message, /hunter2/);
  });

  void test('Given leader election without Redis, when parsing, then it says leader election needs Redis', () => {
    assertConfigError(
      ['--leader-election'],
      {},
      /^leader election needs Redis: set REDIS_ADDR or --redis-addr$/,
    );
  });

  void test('Given --redis-wait-replicas, --redis-wait-timeout and --redis-wait-aof (flags or environment), when parsing, then they are read and checked', () => {
    const env = { SHARED_SQS_REDIS_WAIT_REPLICAS: '1', SHARED_SQS_REDIS_WAIT_TIMEOUT: '100ms' };
    const c = parseConfig(['--redis-addr', 'r:1'], env);
    assert.equal(c.redisWaitReplicas, 1);
    assert.equal(c.redisWaitTimeout, 100);
    assert.equal(c.redisWaitAof, false);
    const aof = parseConfig(['--redis-addr', 'r:1', '--redis-wait-replicas', '2', '--redis-wait-aof'], {});
    assert.deepEqual([aof.redisWaitReplicas, aof.redisWaitTimeout, aof.redisWaitAof], [2, 250, true]);
    assertConfigError(
      ['--redis-addr', 'r:1', '--redis-wait-replicas', 'one'],
      {},
      /^--redis-wait-replicas must be a whole number of replicas from 0 to 100 \(got "one"\)$/,
    );
    assertConfigError(
      ['--redis-addr', 'r:1', '--redis-wait-replicas', '1', '--redis-wait-timeout', '1s'],
      {},
      /^--redis-wait-timeout must be between 1ms and 500ms/,
    );
    assertConfigError(
      ['--redis-addr', 'r:1', '--redis-wait-replicas', '1', '--redis-wait-timeout', '0ms'],
      {},
      /^--redis-wait-timeout must be between 1ms/,
    );
    assertConfigError(
      ['--redis-addr', 'r:1', '--redis-wait-aof'],
      {},
      /^--redis-wait-aof needs --redis-wait-replicas/,
    );
    assertConfigError(['--redis-wait-replicas', '1'], {}, /^--redis-wait-replicas needs Redis/);
  });

  void test('Given SHARED_SQS_LEADER_ELECTION=yes-please, when parsing, then it is an error', () => {
    assertConfigError(
      [],
      { SHARED_SQS_LEADER_ELECTION: 'yes-please' },
      /^SHARED_SQS_LEADER_ELECTION must be true or false/,
    );
  });

  void test('Given --leader-election=maybe, when parsing, then it is an error', () => {
    assertConfigError(['--leader-election=maybe'], {}, /^--leader-election must be true or false/);
  });

  void test('Given a bare number as --leader-ttl, when parsing, then it asks for a unit', () => {
    assertConfigError(['--leader-ttl', '10'], {}, /^--leader-ttl must be a duration like 10s/);
  });

  void test('Given --leader-interval 0s, when parsing, then it is too short', () => {
    assertConfigError(['--leader-interval', '0s'], {}, /^--leader-interval must be between 1ms and/);
  });

  void test('Given --leader-ttl of exactly 3 x --leader-interval, when parsing, then it is an error', () => {
    assertConfigError(
      ['--leader-ttl', '9s', '--leader-interval', '3s'],
      {},
      /^--leader-ttl \(9s\) must be more than 3 x --leader-interval \(3s\)/,
    );
  });

  void test('Given only a longer SHARED_SQS_LEADER_INTERVAL, when parsing, then the default TTL is too short', () => {
    assertConfigError(
      [],
      { SHARED_SQS_LEADER_INTERVAL: '4s' },
      /--leader-ttl \(10s\) must be more than 3 x SHARED_SQS_LEADER_INTERVAL \(4s\)/,
    );
  });

  void test('Given an admin token with a trailing newline, when parsing, then it is rejected without being echoed', () => {
    const err = assertConfigError(
      [],
      { SHARED_SQS_ADMIN_TOKEN: 'tok3n-value\n' },
      /^SHARED_SQS_ADMIN_TOKEN must not contain/,
    );
    assert.doesNotMatch(err.message, /tok3n/);
  });
});

void describe('parseConfig: --help and --version', () => {
  function helpOf(argv: string[]): HelpRequested {
    try {
      parseConfig(argv, {});
    } catch (err) {
      if (err instanceof HelpRequested) return err;
      throw err;
    }
    assert.fail('expected HelpRequested');
  }

  void test('Given --help, when parsing, then the help lists every flag with its environment variable', () => {
    const help = helpOf(['--help']);
    assert.equal(help.kind, 'help');
    for (const text of [
      '--port',
      '--control-port',
      '--queue-deleted-recently',
      'SHARED_SQS_ADMIN_TOKEN',
      'REDIS_ADDR',
      '--cors-origin',
      'SHARED_SQS_CORS_ORIGIN',
    ]) {
      assert.ok(help.text.includes(text), `help lacks ${text}`);
    }
  });

  void test('Given --help, when parsing, then the help documents the 0.0.0.0 host default', () => {
    assert.match(helpOf(['-h']).text, /--host .*\[default: 0\.0\.0\.0\]/s);
  });

  void test('Given an unknown flag and --help, when parsing, then help wins', () => {
    assert.equal(helpOf(['--frobnicate', '--help']).kind, 'help');
  });

  void test('Given --version, when parsing, then the text is the package version', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    const version = helpOf(['--version']);
    assert.deepEqual([version.kind, version.text], ['version', pkg.version]);
  });
});

void describe('loadConfigOrExit (as a process)', { concurrency: true }, () => {
  const run = promisify(execFile);
  const fixture = fileURLToPath(new URL('../fixtures/load-config.ts', import.meta.url));

  async function loadConfig(
    argv: string[],
    env: NodeJS.ProcessEnv = {},
  ): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', fixture, ...argv], {
        env: { PATH: process.env['PATH'] ?? '', ...env },
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const failed = err as { code?: unknown; stdout?: string; stderr?: string };
      if (typeof failed.code !== 'number') throw err;
      return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
    }
  }

  void test('Given valid flags, when loading, then the process goes on with the config', async () => {
    const { code, stdout } = await loadConfig(['--port', '4200']);
    assert.equal(code, 0);
    assert.equal((JSON.parse(stdout) as Config).port, 4200);
  });

  void test('Given an invalid flag, when loading, then the process exits 2 with one line on stderr and no stack', async () => {
    const { code, stdout, stderr } = await loadConfig(['--port', 'abc']);
    assert.equal(code, 2);
    assert.equal(stdout, '');
    assert.equal(
      stderr,
      'shared-sqs: --port must be a port number from 0 to 65535 (got "abc") (see shared-sqs --help)\n',
    );
  });

  void test('Given leader election without Redis, when loading, then the process exits 2 naming the fix', async () => {
    const { code, stderr } = await loadConfig([], { SHARED_SQS_LEADER_ELECTION: 'true' });
    assert.equal(code, 2);
    assert.match(stderr, /^shared-sqs: leader election needs Redis: set REDIS_ADDR or --redis-addr/);
  });

  void test('Given --workers 2 without --active-active, when loading, then the process exits 2 naming the fix', async () => {
    const { code, stdout, stderr } = await loadConfig(['--workers', '2', '--redis-addr', '127.0.0.1:1']);
    assert.deepEqual([code, stdout], [2, '']);
    assert.equal(
      stderr,
      'shared-sqs: --workers needs --active-active: each worker is an instance of its own (see shared-sqs --help)\n',
    );
  });

  void test('Given --help, when loading, then the process prints usage to stdout and exits 0', async () => {
    const { code, stdout, stderr } = await loadConfig(['--help']);
    assert.deepEqual([code, stderr], [0, '']);
    assert.match(stdout, /^Usage: shared-sqs \[options\]/);
  });
});

void describe('parseConfig: Redis URL, Sentinel and key prefix', () => {
  void test('Given --redis-url rediss://, when parsing, then it is kept as given', () => {
    const config = parseConfig(['--redis-url', 'rediss://u:pw@r.example:6380/2'], {});
    assert.equal(config.redisUrl, 'rediss://u:pw@r.example:6380/2');
    assert.equal(config.redisAddr, undefined);
  });

  void test('Given an http:// --redis-url holding a password, when parsing, then the error does not echo it', () => {
    const err = assertConfigError(
      ['--redis-url', 'http://:hunter2@r:1'],
      {},
      /^--redis-url must be a redis:\/\//,
    );
    assert.doesNotMatch(err.message, /hunter2/);
  });

  void test('Given both --redis-addr and --redis-url, when parsing, then it asks for one of them', () => {
    assertConfigError(['--redis-addr', 'a:1', '--redis-url', 'redis://b:2'], {}, /give one of them$/);
  });

  void test('Given Sentinels and a master name, when parsing, then both are kept, IPv6 without brackets', () => {
    const config = parseConfig(
      ['--redis-sentinels', 's1:26379, [::1]:26380', '--redis-master-name', 'mymaster'],
      {},
    );
    assert.deepEqual(config.redisSentinels, [
      { host: 's1', port: 26379 },
      { host: '::1', port: 26380 },
    ]);
    assert.equal(config.redisMasterName, 'mymaster');
  });

  void test('Given Sentinels without a master name, when parsing, then it is an error', () => {
    assertConfigError(['--redis-sentinels', 's1:26379'], {}, /^--redis-sentinels needs --redis-master-name$/);
  });

  void test('Given a Sentinel without a port, when parsing, then it is an error', () => {
    assertConfigError(
      ['--redis-sentinels', 's1', '--redis-master-name', 'm'],
      {},
      /^--redis-sentinels must be a comma-separated list of host:port/,
    );
  });

  void test('Given Cluster seed nodes on the command line or in SHARED_SQS_REDIS_CLUSTER, when parsing, then they are kept as host and port', () => {
    const fromFlag = parseConfig(['--redis-cluster', 'n1:7000, [::1]:7001'], {});
    assert.deepEqual(fromFlag.redisCluster, [
      { host: 'n1', port: 7000 },
      { host: '::1', port: 7001 },
    ]);
    const fromEnv = parseConfig(['--leader-election', '--redis-wait-replicas', '1'], {
      SHARED_SQS_REDIS_CLUSTER: 'n2:7002',
    });
    assert.deepEqual(fromEnv.redisCluster, [{ host: 'n2', port: 7002 }]);
    assert.equal(fromEnv.leaderElection, true);
  });

  void test('Given --redis-cluster with another way to name Redis, or a node without a port, when parsing, then it is an error', () => {
    for (const other of [
      ['--redis-addr', 'a:1'],
      ['--redis-url', 'redis://a:1'],
      ['--redis-sentinels', 's1:26379', '--redis-master-name', 'm'],
    ]) {
      assertConfigError(['--redis-cluster', 'n1:7000', ...other], {}, /both name Redis: give one of them$/);
    }
    assertConfigError(
      ['--redis-cluster', 'n1:7000,n2'],
      {},
      /^--redis-cluster must be a comma-separated list of host:port/,
    );
  });

  void test('Given leader election with only Sentinels, when parsing, then Redis counts as configured', () => {
    const config = parseConfig(
      ['--leader-election', '--redis-sentinels', 's1:26379', '--redis-master-name', 'm'],
      {},
    );
    assert.equal(config.leaderElection, true);
  });

  void test('Given SHARED_SQS_REDIS_PREFIX with a hash tag, when parsing, then it is the prefix', () => {
    assert.equal(parseConfig([], { SHARED_SQS_REDIS_PREFIX: '{prod}:sqs:' }).redisPrefix, '{prod}:sqs:');
  });

  void test('Given a prefix without a hash tag, when parsing, then it is an error', () => {
    assertConfigError(['--redis-prefix', 'ssq:'], {}, /^--redis-prefix must hold a hash tag/);
    assertConfigError(['--redis-prefix', '{}:'], {}, /^--redis-prefix must hold a hash tag/);
  });
});

void describe('parseConfig: --max-memory', () => {
  const GIB = 1024 ** 3;

  void test('Given sizes with units, when parsing, then they are bytes in powers of 1024', () => {
    assert.equal(parseSize('512mb'), 512 * 1024 ** 2);
    assert.equal(parseSize('4GB'), 4 * GIB);
    assert.equal(parseSize('1.5g'), 1.5 * GIB);
    assert.equal(parseSize('65536'), 65536);
    assert.equal(parseSize('64 MiB'), 64 * 1024 ** 2);
    assert.equal(parseSize('lots'), undefined);
    assert.equal(parseSize('5tb'), undefined);
  });

  void test('Given no flag, when parsing, then the budget is half the heap limit the process has', () => {
    assert.equal(parseConfig([], {}, 4 * GIB).maxMemory, 2 * GIB);
  });

  void test('Given the flag or the environment, when parsing, then the flag wins', () => {
    assert.equal(parseConfig(['--max-memory', '64mb'], {}, 4 * GIB).maxMemory, 64 * 1024 ** 2);
    assert.equal(parseConfig([], { SHARED_SQS_MAX_MEMORY: '1gb' }, 4 * GIB).maxMemory, GIB);
    assert.equal(
      parseConfig(['--max-memory=256mb'], { SHARED_SQS_MAX_MEMORY: '1gb' }, 4 * GIB).maxMemory,
      256 * 1024 ** 2,
    );
  });

  void test('Given a budget the heap cannot hold, when parsing, then the error names both sizes', () => {
    let caught: unknown;
    try {
      parseConfig(['--max-memory', '4gb'], {}, 2 * GIB);
    } catch (err) {
      caught = err;
    }
    assert.ok(caught instanceof ConfigError);
    assert.match(
      caught.message,
      /--max-memory \(4\.00 GiB\) is more than 80 % of .* heap limit \(2\.00 GiB\)/,
    );
  });

  void test('Given a bad size, when parsing, then it is a ConfigError', () => {
    assertConfigError(['--max-memory', 'lots'], {}, /--max-memory must be a size like 512mb/);
    assertConfigError(['--max-memory', '1mb'], {}, /at least 2mb/);
  });

  void test('Given --help, when parsing, then it documents --max-memory and its default', () => {
    let help = '';
    try {
      parseConfig(['--help'], {});
    } catch (err) {
      if (err instanceof HelpRequested) help = err.text;
    }
    assert.match(help, /--max-memory .*SHARED_SQS_MAX_MEMORY.*50 % of the V8 heap limit/s);
  });
});

void describe('parseConfig: --cors-origin', () => {
  void test('Given no flag, when parsing, then there are no CORS origins', () => {
    assert.deepEqual(parseConfig([], {}).corsOrigin, []);
  });

  void test('Given the flag repeated, one with commas, when parsing, then every origin counts, normalized as browsers send them', () => {
    const config = parseConfig(
      [
        '--cors-origin',
        'http://localhost:3000/',
        '--cors-origin=HTTPS://App.Example.com:443,capacitor://localhost',
      ],
      {},
    );
    assert.deepEqual(config.corsOrigin, [
      'http://localhost:3000',
      'https://app.example.com',
      'capacitor://localhost',
    ]);
    // Other flags still keep their last value.
    assert.equal(parseConfig(['--port', '1', '--cors-origin', '*', '--port', '2'], {}).port, 2);
  });

  void test('Given SHARED_SQS_CORS_ORIGIN with commas, when parsing, then each origin counts; the flag wins over it', () => {
    const env = { SHARED_SQS_CORS_ORIGIN: 'http://a.test, http://b.test:8080' };
    assert.deepEqual(parseConfig([], env).corsOrigin, ['http://a.test', 'http://b.test:8080']);
    assert.deepEqual(parseConfig(['--cors-origin', '*'], env).corsOrigin, ['*']);
    assert.deepEqual(parseConfig(['--cors-origin='], env).corsOrigin, []);
  });

  void test('Given an origin with a path, no scheme, or * among others, when parsing, then it is an error naming the source', () => {
    assertConfigError(
      ['--cors-origin', 'http://a.test/app'],
      {},
      /^--cors-origin must be \* or origins like/,
    );
    assertConfigError([], { SHARED_SQS_CORS_ORIGIN: 'localhost:3000' }, /^SHARED_SQS_CORS_ORIGIN must be \*/);
    assertConfigError(['--cors-origin', '*', '--cors-origin', 'http://a.test'], {}, /give it alone/);
  });
});

void describe('parseConfig: --workers', () => {
  const activeActive = ['--active-active', '--redis-addr', '127.0.0.1:6390'];

  void test('Given --workers auto, when parsing, then it is one per core', () => {
    assert.equal(parseConfig([...activeActive, '--workers', 'auto'], {}).workers, availableParallelism());
    assert.equal(parseConfig(activeActive, { SHARED_SQS_WORKERS: 'AUTO' }).workers, availableParallelism());
  });

  void test('Given --workers 3 with --active-active, when parsing, then it is 3', () => {
    assert.equal(parseConfig([...activeActive, '--workers', '3'], {}).workers, 3);
  });

  void test('Given --workers 0, -1 or two, when parsing, then each is refused naming the flag', () => {
    for (const bad of ['0', '-1', 'two', '1.5', '1025']) {
      assertConfigError(
        [...activeActive, `--workers=${bad}`],
        {},
        /^--workers must be auto or a whole number from 1 to 1024/,
      );
    }
  });

  void test('Given --workers 2 without --active-active, when parsing, then it is refused, naming the variable it came from', () => {
    assertConfigError(
      ['--redis-addr', '127.0.0.1:6390'],
      { SHARED_SQS_WORKERS: '2' },
      /^SHARED_SQS_WORKERS needs --active-active/,
    );
    assertConfigError(['--workers', '2'], {}, /^--workers needs --active-active/);
    // One worker is today's single process, with or without --active-active.
    assert.equal(parseConfig(['--workers', '1'], {}).workers, 1);
  });

  void test('Given workers 2 or auto, when startServer is called, then it rejects: an embedded server is one process', async () => {
    const { startServer } = await import('../../src/index.js');
    for (const workers of [2, 'auto'] as const) {
      await assert.rejects(startServer({ workers, activeActive: true }), (e: unknown) => {
        assert.ok(e instanceof ConfigError);
        assert.match(e.message, /^workers (2|auto): startServer runs one server inside this process/);
        return true;
      });
    }
  });
});

void describe('the flag table, startServer and README', () => {
  type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
  const camel = (flag: string): string => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

  // Every option set, so that tsc refuses a ServerOptions key that is missing here or unknown.
  const everyOption: Required<ServerOptions> = {
    port: 5000,
    controlPort: 5001,
    host: '127.0.0.1',
    region: 'eu-west-1',
    accountId: '123456789012',
    baseUrl: 'https://sqs.example.com',
    logLevel: 'debug',
    redisAddr: undefined as never,
    redisUrl: undefined as never,
    redisPassword: 'pw',
    redisSentinels: ['s1:26379', 's2:26379'],
    redisMasterName: 'mymaster',
    redisCluster: undefined as never,
    redisPrefix: '{t}:',
    redisWaitReplicas: 1,
    redisWaitTimeout: 100,
    redisWaitAof: true,
    leaderElection: true,
    activeActive: false,
    internalPort: 5002,
    advertiseHost: '10.0.0.7',
    workers: 1,
    leaderTtl: '20s',
    leaderInterval: 5000,
    adminToken: 'tok',
    queueDeletedRecently: false,
    purgeCooldown: false,
    corsOrigin: ['http://a.test', 'http://b.test'],
    dev: true,
    auth: 'on',
    config: 'seed.yaml',
    warmupRequests: 10,
    maxMemory: '64mb',
  };

  void test('Given ServerOptions (src/index.ts), then its names are the flags in camelCase, all but --check-config', () => {
    const sameNames: Same<keyof ServerOptions, Exclude<keyof Config, 'checkConfig'>> = true;
    assert.ok(sameNames);
    const flags = FLAG_TABLE.map((f) => camel(f.flag)).filter((name) => name !== 'checkConfig');
    assert.deepEqual(Object.keys(everyOption).sort(), flags.sort());
  });

  void test('Given every option, when startServer would parse them, then each reaches its field (numbers of durations in ms)', () => {
    const config = parseConfig(optionsArgv(everyOption), {});
    assert.deepEqual(
      {
        ...config,
        maxMemory: config.maxMemory / 1024 ** 2,
        redisSentinels: config.redisSentinels?.map((s) => `${s.host}:${s.port}`),
      },
      {
        // What the command line changes: durations to ms, a size to bytes, addresses parsed.
        ...everyOption,
        redisAddr: undefined,
        redisUrl: undefined,
        leaderTtl: 20_000,
        checkConfig: false,
        maxMemory: 64,
      } satisfies Record<keyof Config, unknown>,
    );
  });

  void test("Given README's Options table, then it lists every flag once, with the table's defaults", () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('\n## Options\n'), readme.indexOf('\n## Operating it\n'));
    const rows = section
      .split('\n')
      .filter((line) => line.startsWith('| `--'))
      .map((line) => line.split('|').map((cell) => cell.trim()));
    const listed: string[] = [];
    for (const [, flagsCell = '', defaultCell = ''] of rows) {
      const flags = [...flagsCell.matchAll(/`--([a-z-]+)`/g)].map((m) => m[1] ?? '');
      listed.push(...flags);
      const defaults = defaultCell.split(', ');
      flags.forEach((flag, i) => {
        const expected = FLAG_TABLE.find((f) => f.flag === flag)?.default;
        // A flag without a default text (unset, or worked out at start) may say so in words.
        if (expected !== undefined)
          assert.equal(defaults[i]?.replace(/`/g, ''), expected, `default of --${flag}`);
      });
    }
    assert.deepEqual(listed.sort(), FLAG_TABLE.map((f) => f.flag).sort());
  });
});
