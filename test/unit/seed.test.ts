import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ManualClock } from '../../src/core/clock.js';
import { QueueStore } from '../../src/core/store.js';
import { loadSeedFile, parseSeedFile } from '../../src/seed-file.js';
import { applySeed, SeedError } from '../../src/seed.js';
import { quietLog } from '../../src/log.js';

const DEFAULTS = { accountId: '000000000000', region: 'us-east-1' };

const CONFIG = {
  tenants: [
    {
      name: 'team-a',
      accountId: '111111111111',
      keys: [{ accessKeyId: 'AKIATEAMA', secretAccessKey: 'sa' }],
      queues: [{ name: 'orders', attributes: { VisibilityTimeout: 60 } }, { name: 'events.fifo' }],
    },
  ],
  queues: [{ name: 'jobs', region: 'eu-west-1', tags: { env: 'dev' } }],
};

/** The problems a SeedError lists for `raw`. */
function problemsOf(raw: unknown): readonly string[] {
  try {
    parseSeedFile(raw, DEFAULTS);
  } catch (e) {
    assert.ok(e instanceof SeedError, String(e));
    return e.problems;
  }
  assert.fail('expected a SeedError');
}

async function withFile(name: string, text: string, fn: (path: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ssq-config-'));
  try {
    writeFileSync(join(dir, name), text);
    await fn(join(dir, name));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('Given a config of tenants and queues, when applied to an empty store, then all of it exists', () => {
  const store = new QueueStore(new ManualClock());
  applySeed(store, parseSeedFile(CONFIG, DEFAULTS), quietLog);
  assert.equal(store.tenants.byAccessKeyId('AKIATEAMA')?.tenant.accountId, '111111111111');
  assert.equal(store.get('111111111111', 'orders')?.attributes['VisibilityTimeout'], '60');
  assert.equal(store.get('111111111111', 'events.fifo')?.fifo, true);
  assert.deepEqual(store.get('000000000000', 'jobs', 'eu-west-1')?.tags, { env: 'dev' });
});

test('Given a store that has the config and more, when applied again, then nothing is lost or duplicated', () => {
  const store = new QueueStore(new ManualClock());
  const config = parseSeedFile(CONFIG, DEFAULTS);
  applySeed(store, config, quietLog);
  const a = store.tenants.get('team-a');
  assert.ok(a);
  store.tenants.addKey(a, { accessKeyId: 'AKIAADDED', secretAccessKey: 'x', createdAt: 1 }, false);
  store.get('111111111111', 'orders')?.setAttributes({ VisibilityTimeout: '5' }, 1);
  const warnings: string[] = [];
  applySeed(store, config, {
    info: () => undefined,
    warn: (_o: object, msg: string) => warnings.push(msg),
    error: () => undefined,
  });
  assert.deepEqual(
    store.tenants.get('team-a')?.keys.map((k) => k.accessKeyId),
    ['AKIATEAMA', 'AKIAADDED'],
  );
  assert.equal(store.size, 3);
  assert.equal(store.get('111111111111', 'orders')?.attributes['VisibilityTimeout'], '5');
  assert.equal(warnings.length, 1);
});

test('Given malformed configs, when parsed, then each problem is `path: reason`', () => {
  const cases: [unknown, RegExp][] = [
    [[], /^\(top level\): must be object$/],
    [{ tenant: [] }, /^\(top level\): unknown field "tenant"$/],
    [
      { tenants: [{ name: 'x', accountId: '111111111111', keys: [] }] },
      /^tenants\[0\]\.keys: must NOT have fewer than 1 items$/,
    ],
    [
      { tenants: [{ name: 'x', accountId: '111111111111', keys: [{ accessKeyId: 'k' }] }] },
      /^tenants\[0\]\.keys\[0\]: secretAccessKey is required$/,
    ],
    [
      { queues: [{ name: 'q', attributes: { A: [] } }] },
      /^queues\[0\]\.attributes\.A: must be string,number,boolean$/,
    ],
    [{ queues: [{ name: 'no spaces' }] }, /^queues\[0\]\.name: must be 1 to 80 letters/],
    [
      { tenants: [{ name: 'x', accountId: '12', keys: [{ accessKeyId: 'k', secretAccessKey: 's' }] }] },
      /^tenants\[0\]\.accountId: must be 12 digits \(got "12"\)$/,
    ],
  ];
  for (const [raw, message] of cases) {
    const problems = problemsOf(raw);
    assert.ok(
      problems.some((p) => message.test(p)),
      `${JSON.stringify(raw)}: ${problems.join(' | ')}`,
    );
  }
});

test('Given a config with several problems, when parsed, then all of them are reported at once', () => {
  const problems = problemsOf({
    tenants: [{ name: 'x', accountId: 'abc', keys: [] }],
    queues: [{ name: 'q', colour: 'red' }, { attributes: {} }],
  });
  assert.deepEqual([...problems].sort(), [
    'queues[0]: unknown field "colour"',
    'queues[1]: name is required',
    'tenants[0].accountId: must be 12 digits (got "abc")',
    'tenants[0].keys: must NOT have fewer than 1 items',
  ]);
});

test('Given numbers and booleans where AWS takes strings, when parsed, then they are strings', () => {
  const config = parseSeedFile(
    { queues: [{ name: 'q.fifo', attributes: { FifoQueue: true, DelaySeconds: 5 }, tags: { build: 42 } }] },
    DEFAULTS,
  );
  assert.deepEqual(config.queues[0]?.attributes, { FifoQueue: 'true', DelaySeconds: '5' });
  assert.deepEqual(config.queues[0]?.tags, { build: '42' });
});

test('Given a RedrivePolicy naming a queue defined later, when applied, then the DLQ is created first and the source names its ARN', () => {
  const config = parseSeedFile(
    {
      queues: [
        {
          name: 'orders',
          attributes: { RedrivePolicy: { deadLetterTargetArn: 'orders-dlq', maxReceiveCount: 3 } },
        },
        {
          name: 'payments',
          attributes: {
            RedrivePolicy: {
              deadLetterTargetArn: 'arn:aws:sqs:us-east-1:000000000000:orders-dlq',
              maxReceiveCount: '5',
            },
          },
        },
        { name: 'orders-dlq', attributes: { RedriveAllowPolicy: { redrivePermission: 'allowAll' } } },
      ],
    },
    DEFAULTS,
  );
  assert.deepEqual(
    config.queues.map((q) => q.name),
    ['orders-dlq', 'orders', 'payments'],
  );
  const store = new QueueStore(new ManualClock());
  applySeed(store, config, quietLog);
  assert.deepEqual(JSON.parse(store.get('000000000000', 'orders')?.attributes['RedrivePolicy'] ?? ''), {
    deadLetterTargetArn: 'arn:aws:sqs:us-east-1:000000000000:orders-dlq',
    maxReceiveCount: 3,
  });
  assert.ok(store.get('000000000000', 'payments')?.attributes['RedrivePolicy']);
});

test('Given a RedrivePolicy cycle or a target the file lacks, when parsed, then the error names both queues', () => {
  const cycle = problemsOf({
    queues: [
      { name: 'a', attributes: { RedrivePolicy: { deadLetterTargetArn: 'b', maxReceiveCount: 1 } } },
      { name: 'b', attributes: { RedrivePolicy: { deadLetterTargetArn: 'a', maxReceiveCount: 1 } } },
    ],
  });
  assert.deepEqual(cycle, ['queues[0]: queue a is in a RedrivePolicy cycle: a → b → a']);
  const missing = problemsOf({
    tenants: [
      {
        name: 't',
        accountId: '111111111111',
        keys: [{ accessKeyId: 'k', secretAccessKey: 's' }],
        queues: [
          { name: 'src', attributes: { RedrivePolicy: { deadLetterTargetArn: 'gone', maxReceiveCount: 1 } } },
        ],
      },
    ],
  });
  assert.equal(missing.length, 1);
  assert.match(
    missing[0] ?? '',
    /^tenants\[0\]\.queues\[0\]\.attributes\.RedrivePolicy: queue src names the dead-letter queue gone, which the file does not define/,
  );
});

test('Given a YAML file, when loaded, then it reads as the same JSON would', async () => {
  const yaml = `
tenants:
  - name: team-a
    accountId: "111111111111"
    keys: [{ accessKeyId: AKIATEAMA, secretAccessKey: sa }]
    queues:
      - name: orders
        attributes: { VisibilityTimeout: 60 }
      - name: events.fifo
queues:
  - name: jobs
    region: eu-west-1
    tags: { env: dev }
`;
  await withFile('c.yaml', yaml, async (path) => {
    assert.deepEqual(await loadSeedFile(path, DEFAULTS), parseSeedFile(CONFIG, DEFAULTS));
  });
});

test('Given a file that is not JSON, not YAML or missing, when loaded, then a SeedError with the path', async () => {
  await withFile('c.json', 'tenants: []', (path) => assert.rejects(loadSeedFile(path, DEFAULTS), /not JSON/));
  await withFile('c.yaml', 'tenants: [\n', (path) =>
    assert.rejects(loadSeedFile(path, DEFAULTS), /c\.yaml: not YAML at line/),
  );
  await assert.rejects(loadSeedFile('/nonexistent/missing.json', DEFAULTS), /missing\.json/);
});

test('Given the examples of docs/admin.md, when loaded, then they are valid', async () => {
  const doc = readFileSync(new URL('../../docs/admin.md', import.meta.url), 'utf8');
  const blocks = [...doc.matchAll(/<!-- a --config example[^>]*-->\n\n```(yaml|json)\n([^]*?)```/g)];
  assert.ok(blocks.length >= 3, 'docs/admin.md has config examples');
  for (const [, kind = '', text = ''] of blocks) {
    await withFile(`example.${kind}`, text, async (path) =>
      assert.ok((await loadSeedFile(path, DEFAULTS)).queues.length > 0),
    );
  }
});

test('Given a tenant with a memoryShare, when applied, then the tenant has it, over one set before; a share out of (0, 1] is refused', () => {
  const store = new QueueStore(new ManualClock(), { deletedRecentlyMs: 0, maxMemory: 1024 ** 3 });
  const tenant = (memoryShare: unknown) => ({
    tenants: [
      {
        name: 'shared',
        accountId: '444444444444',
        keys: [{ accessKeyId: 'AKIASHARED000000001', secretAccessKey: 's' }],
        memoryShare,
      },
    ],
  });
  applySeed(store, parseSeedFile(tenant(0.5), DEFAULTS), quietLog);
  const t = store.tenants.get('shared');
  assert.equal(t?.memoryShare, 0.5);
  assert.equal(store.budget.limitOf('444444444444'), 512 * 1024 ** 2);
  if (t !== undefined) store.tenants.setMemoryShare(t, 0.1);
  applySeed(store, parseSeedFile(tenant(0.5), DEFAULTS), quietLog);
  assert.equal(store.tenants.get('shared')?.memoryShare, 0.5);
  for (const bad of [0, 2, '0.5']) {
    assert.ok(problemsOf(tenant(bad)).some((p) => p.startsWith('tenants[0].memoryShare: ')));
  }
});
