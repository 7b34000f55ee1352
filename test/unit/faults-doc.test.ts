/**
 * docs/faults.md is the fault catalogue that code and tests cite as "docs/faults.md row N": its
 * rows are numbered 1, 2, ... in order; what a row names as its proof (a file, and a test or
 * scenario name in quotes after it) exists; every row cited anywhere exists; and every test file
 * that cites a row is listed in that row.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { readRepoFile, repoFiles, ROOT, tableRows } from '../support/markdown.js';

const doc = readRepoFile('docs/faults.md');

interface Row {
  readonly n: number;
  readonly fault: string;
  readonly promise: string;
  /** Each file the row names as its proof, with the test names quoted after it. */
  readonly shownBy: ReadonlyMap<string, readonly string[]>;
}

function rows(): Row[] {
  return tableRows(doc, 'The faults').map((cells) => {
    const [n = '', fault = '', promise = '', proof = ''] = cells;
    const shownBy = new Map<string, string[]>();
    for (const m of proof.matchAll(/`([^`]+)`((?:\s+"[^"]+")*)/g)) {
      const [, path = '', quoted = ''] = m;
      shownBy.set(
        path,
        [...quoted.matchAll(/"([^"]+)"/g)].map((q) => q[1] ?? ''),
      );
    }
    return { n: Number(n), fault, promise, shownBy };
  });
}

/** Every row a text cites after "docs/faults.md": "row 3", "rows 3 and 4", "rows 5 to 8", "rows 13-14". */
function citedRows(text: string): number[] {
  const out: number[] = [];
  for (const m of text.matchAll(/faults\.md rows? (\d+)((?:(?:, | and | to |-|–)\d+)*)/g)) {
    const [, first = '', rest = ''] = m;
    let last = Number(first);
    out.push(last);
    for (const [, sep = '', k = ''] of rest.matchAll(/(, | and | to |-|–)(\d+)/g)) {
      const next = Number(k);
      if (sep === ', ' || sep === ' and ') out.push(next);
      else for (let i = last + 1; i <= next; i++) out.push(i);
      last = next;
    }
  }
  return out;
}

const CITING = repoFiles(
  ['src', 'test', 'docs', 'scripts', 'bin'],
  ['.ts', '.js', '.mjs', '.md', '.lua', '.html'],
);

test('Given docs/faults.md, when its table is read, then the rows are numbered 1, 2, ... and each has a fault, a promise and a test', () => {
  const all = rows();
  assert.ok(all.length >= 21, `${all.length} rows`);
  all.forEach((row, i) => {
    assert.equal(row.n, i + 1, `row ${i + 1} is numbered ${row.n}`);
    assert.ok(row.fault !== '' && row.promise !== '', `row ${row.n} says what the fault and the promise are`);
    assert.ok(row.shownBy.size > 0, `row ${row.n} names the test that shows it`);
  });
});

test('Given each row, when the files and test names it cites are looked up, then they exist', () => {
  for (const row of rows()) {
    for (const [path, names] of row.shownBy) {
      assert.ok(existsSync(join(ROOT, path)), `row ${row.n} cites ${path}, which does not exist`);
      const source = readRepoFile(path);
      for (const name of names) {
        assert.ok(source.includes(name), `row ${row.n}: ${path} has no test named "...${name}..."`);
      }
    }
  }
});

test('Given every "docs/faults.md row N" in src/, test/, docs/, scripts/ and bin/, when looked up, then row N exists', () => {
  const numbers = new Set(rows().map((r) => r.n));
  let citations = 0;
  for (const path of [...CITING, 'README.md']) {
    for (const n of citedRows(readRepoFile(path))) {
      citations++;
      assert.ok(numbers.has(n), `${path} cites docs/faults.md row ${n}, which does not exist`);
    }
  }
  assert.ok(citations > 20, `only ${citations} citations found: is the pattern still right?`);
});

test('Given a test file that cites a row, when the row is read, then it lists that file', () => {
  const byRow = new Map(rows().map((r) => [r.n, r.shownBy]));
  for (const path of CITING.filter((p) => p.startsWith('test/') && /\.test\.ts$/.test(p))) {
    for (const n of new Set(citedRows(readRepoFile(path)))) {
      assert.ok(byRow.get(n)?.has(path), `${path} cites docs/faults.md row ${n}, which does not list it`);
    }
  }
});
