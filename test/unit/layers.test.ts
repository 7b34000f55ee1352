/**
 * The layer rules of docs/architecture.md are enforced by ESLint (eslint.config.js, `layers`):
 * an import against them in each layer fails `npm run check`, and the imports the table allows pass.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';

// The import rules need no types: without the type-aware program, each lint takes milliseconds.
const eslint = new ESLint({
  cwd: new URL('../..', import.meta.url).pathname,
  overrideConfig: [
    tseslint.configs.disableTypeChecked,
    { languageOptions: { parserOptions: { projectService: false, project: null } } },
  ],
});

async function violations(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(`${code}\nexport {};\n`, { filePath });
  return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

const against: [file: string, importLine: string][] = [
  ['src/core/queue.ts', "import '../sqs/errors.js';"],
  ['src/core/queue.ts', "import 'node:fs';"],
  ['src/sqs/actions/send.ts', "import '../../protocol/json.js';"],
  ['src/sqs/service.ts', "import '../http/data.js';"],
  ['src/protocol/json.ts', "import '../persistence/keys.js';"],
  ['src/auth/sigv4.ts', "import '../core/clock.js';"],
  ['src/persistence/writer.ts', "import '../ha/lock.js';"],
  ['src/persistence/writer.ts', "import '../sqs/errors.js';"],
  ['src/ha/elector.ts', "import '../http/data.js';"],
  ['src/ha/active.ts', "import '../wiring/warmup.js';"],
  ['src/owners/router.ts', "import '../http/data.js';"],
  ['src/http/data.ts', "import '../server.js';"],
  ['src/shard/hash.ts', "import '../core/queue.js';"],
  ['src/shard/tags.ts', "import 'ioredis';"],
];

for (const [file, line] of against) {
  void test(`Given ${file}, when it has \`${line}\`, then the lint fails`, async () => {
    assert.equal((await violations(file, line)).length, 1);
  });
}

const allowed: [file: string, importLine: string][] = [
  ['src/core/queue.ts', "import './store.js';"],
  ['src/sqs/actions/send.ts', "import '../../core/queue.js';"],
  ['src/protocol/json.ts', "import '../sqs/errors.js';"],
  ['src/persistence/writer.ts', "import '../core/store.js';"],
  ['src/ha/active.ts', "import '../persistence/persistence.js';"],
  ['src/owners/router.ts', "import '../sqs/service.js';"],
  ['src/http/data.ts', "import '../protocol/json.js';"],
  ['src/shard/hash.ts', "import 'node:crypto';"],
  ['src/shard/tags.ts', "import './hash.js';"],
  ['src/wiring/warmup.ts', "import '../http/data.js';"],
];

for (const [file, line] of allowed) {
  void test(`Given ${file}, when it has \`${line}\`, then the layer rules allow it`, async () => {
    assert.deepEqual(await violations(file, line), []);
  });
}

void test("Given src/, then docs/architecture.md's Layers table places each of its folders and root files", () => {
  const root = new URL('../../', import.meta.url);
  const doc = readFileSync(new URL('docs/architecture.md', root), 'utf8');
  const table = doc.slice(doc.indexOf('## Layers'), doc.indexOf('The rules:'));
  const placed = [...table.matchAll(/^\| `(src\/[^`]+)`/gm)].map((m) => m[1]);
  const entries = readdirSync(new URL('src/', root), { withFileTypes: true })
    .filter((e) => e.isDirectory() || e.name.endsWith('.ts'))
    .map((e) => (e.isDirectory() ? `src/${e.name}/` : `src/${e.name}`));
  assert.deepEqual([...placed].sort(), entries.sort());
});
