/**
 * Every pointer a reader follows resolves: in README.md and docs/, each relative link, each
 * `<name>.md#anchor`, and each src/ or test/ file named; in the code (src/, test/, bin/, scripts/),
 * each Markdown file named, with its `#anchor` or its `, "Heading"`. An anchor is checked against
 * GitHub's slug of the target's headings, so a renamed heading breaks the links to it here, not
 * on GitHub. Nothing points outside the repository (an issue number, the team's shared files), and
 * docs/decisions/README.md lists every decision record.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { test } from 'node:test';
import {
  anchors,
  headings,
  proseLines,
  readRepoFile,
  repoFiles,
  ROOT,
  tableRows,
} from '../support/markdown.js';

const DOCS = ['README.md', ...repoFiles(['docs'], ['.md'])];
const CODE = repoFiles(['src', 'test', 'bin', 'scripts'], ['.ts', '.js', '.mjs', '.lua', '.html', '.css']);

/** A target as written in `from`: relative to `from`'s folder, else (in code) to the repository. */
function resolve(from: string, target: string): string | undefined {
  for (const base of [dirname(from), '.']) {
    const path = normalize(join(base, target));
    if (existsSync(join(ROOT, path))) return path;
  }
  return undefined;
}

/** Why `target` (a path with an optional `#anchor`) does not resolve from `from`, or undefined. */
function broken(from: string, target: string): string | undefined {
  const [path = '', anchor] = target.split('#');
  const file = path === '' ? from : resolve(from, path);
  if (file === undefined) return `${from}: ${target}: no such file`;
  if (anchor === undefined) return undefined;
  if (!file.endsWith('.md')) return `${from}: ${target}: an anchor into a file that is not Markdown`;
  if (!anchors(readRepoFile(file)).has(anchor))
    return `${from}: ${target}: ${file} has no heading #${anchor}`;
  return undefined;
}

/** `from`'s `<name>.md, "Heading"` pointers whose heading the file does not have. */
function brokenSections(from: string, text: string): string[] {
  const out: string[] = [];
  for (const [, path = '', quoted = ''] of text.matchAll(/([\w./-]+\.md), "([^"]+)"/g)) {
    const heading = quoted.replace(/\s*\n\s*(?:\*\s*|\/\/\s*)?/g, ' ');
    const file = resolve(from, path);
    if (file === undefined) out.push(`${from}: ${path}: no such file`);
    else if (!headings(readRepoFile(file)).some((h) => h.toLowerCase() === heading.toLowerCase()))
      out.push(`${from}: ${path} has no heading "${heading}"`);
  }
  return out;
}

test('Given README.md and docs/, when every relative link and <name>.md#anchor is followed, then its file and heading exist', () => {
  const problems: string[] = [];
  let checked = 0;
  for (const from of DOCS) {
    const prose = proseLines(readRepoFile(from)).join('\n');
    const targets = new Set<string>();
    for (const [, target = ''] of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (!/^[a-z][a-z+.-]*:/i.test(target)) targets.add(target);
    }
    for (const [target] of prose.matchAll(/[\w./-]*\.md#[\w-]+/g)) targets.add(target);
    for (const target of targets) {
      checked++;
      const why = broken(from, target);
      if (why !== undefined) problems.push(why);
    }
    problems.push(...brokenSections(from, prose));
  }
  assert.deepEqual(problems, []);
  assert.ok(checked > 50, `only ${checked} links found: is the pattern still right?`);
});

test('Given README.md and docs/, when every src/ or test/ file they name is looked up, then it exists', () => {
  const problems: string[] = [];
  for (const from of DOCS) {
    const text = readRepoFile(from);
    for (const [, path = ''] of text.matchAll(
      /(?<![\w./-])((?:src|test)\/[\w./-]*\w\.(?:ts|js|mjs|lua|html|py))\b/g,
    )) {
      if (!existsSync(join(ROOT, path))) problems.push(`${from}: ${path}: no such file`);
    }
  }
  assert.deepEqual(problems, []);
});

test('Given the code, when every Markdown file it names (with its #anchor or "Heading") is looked up, then it exists', () => {
  const problems: string[] = [];
  let checked = 0;
  for (const from of CODE) {
    const text = readRepoFile(from);
    for (const [target] of text.matchAll(/(?<![\w./-])[\w./-]*\w\.md(?!\w)(?:#[\w-]+)?/g)) {
      checked++;
      const why = broken(from, target);
      if (why !== undefined) problems.push(why);
    }
    problems.push(...brokenSections(from, text));
  }
  assert.deepEqual(problems, []);
  assert.ok(checked > 20, `only ${checked} Markdown files named in the code: is the pattern still right?`);
});

/**
 * What a reader of this repository cannot open: the team's tracker and its shared folder. Each
 * pattern is written so that this file's own text does not match it.
 */
const OUTSIDE: readonly (readonly [string, RegExp])[] = [
  ['an issue number', /\bissues?\s+#?\d+/gi],
  ['the shared folder', /(?:\.\.|\/work)\/shared\b|\bshared\/docs\b/g],
  ['a team-only file', /\b(?:FAULTS|STYLE|SQS-WIRE|ARCHITECTURE)\.md\b/g],
  ['a team-only fault row', /\bFAULTS\s+rows?\s+\d+/g],
];

test('Given src/, test/, docs/, scripts/, bin/ and README.md, when read, then none cites an issue number, the shared folder or a team-only file', () => {
  const files = ['README.md', ...repoFiles(['src', 'test', 'docs', 'scripts', 'bin'], [''])];
  const problems: string[] = [];
  for (const from of files) {
    readRepoFile(from)
      .split('\n')
      .forEach((line, i) => {
        for (const [what, pattern] of OUTSIDE) {
          for (const [found] of line.matchAll(pattern)) problems.push(`${from}:${i + 1}: ${what}: ${found}`);
        }
      });
  }
  assert.deepEqual(problems, []);
  assert.ok(files.length > 200, `only ${files.length} files read: are the folders still right?`);
});

test('Given docs/decisions/, when its README is read, then its table lists every record, in order', () => {
  const records = repoFiles(['docs/decisions'], ['.md'])
    .map((path) => path.replace(/^docs\/decisions\//, ''))
    .filter((name) => name !== 'README.md');
  const listed = tableRows(readRepoFile('docs/decisions/README.md'), 'Decisions').map(
    ([record = '']) => /\]\(([^)]+)\)/.exec(record)?.[1],
  );
  assert.deepEqual(listed, records);
  assert.ok(records.length > 10, `only ${records.length} records found: is the folder still right?`);
});
