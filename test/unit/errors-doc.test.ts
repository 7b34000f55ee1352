import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { errorCatalogue } from '../../src/sqs/errors.js';

const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');

function documentedRows(): Map<string, string[]> {
  const rows = new Map<string, string[]>();
  for (const line of doc.split('\n')) {
    if (!line.startsWith('| ') || line.startsWith('| name ')) continue;
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim().replace(/^`|`$/g, ''));
    const [name] = cells;
    // The header's separator row (`| --- | --- |`, however Prettier pads it) is not an error.
    if (name !== undefined && !/^:?-+:?$/.test(name)) rows.set(name, cells);
  }
  return rows;
}

test('Given the error catalogue, when docs/errors.md is read, then every error has a row with the same status, codes and fault', () => {
  const rows = documentedRows();
  for (const [name, d] of Object.entries(errorCatalogue)) {
    const row = rows.get(name);
    assert.ok(row, `docs/errors.md has no row for ${name}`);
    assert.deepEqual(row.slice(1, 5), [String(d.status), d.queryCode, d.jsonType, d.fault], `row of ${name}`);
  }
});

test('Given docs/errors.md, when compared with the catalogue, then it documents no error the code lacks', () => {
  for (const name of documentedRows().keys()) {
    assert.ok(
      name in errorCatalogue,
      `docs/errors.md documents ${name}, which src/sqs/errors.ts does not have`,
    );
  }
});
