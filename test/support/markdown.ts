/**
 * Reading the repository's Markdown the way GitHub renders it, for the tests that keep docs/ in
 * step with the code: headings and their anchors, a section's table, and the files to scan.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export function readRepoFile(path: string): string {
  return readFileSync(join(ROOT, path), 'utf8');
}

/** Repository-relative paths of the files under `dirs` (recursively) whose names end in one of `exts`. */
export function repoFiles(dirs: readonly string[], exts: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (exts.some((e) => entry.name.endsWith(e))) out.push(relative(ROOT, path));
    }
  };
  for (const dir of dirs) walk(join(ROOT, dir));
  return out.sort();
}

/** The lines of `md` outside fenced code blocks (a `#` in a shell example is not a heading). */
export function proseLines(md: string): string[] {
  let fenced = false;
  return md.split('\n').filter((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return false;
    }
    return !fenced;
  });
}

/** The text of every heading, in order, without its `#`s. */
export function headings(md: string): string[] {
  return proseLines(md).flatMap((line) => {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    return m?.[1] === undefined ? [] : [m[1]];
  });
}

/** GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`. */
export function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor of a document, a repeated heading's with GitHub's `-1`, `-2` suffixes. */
export function anchors(md: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const h of headings(md)) {
    const base = slug(h);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/**
 * The body rows of the first table under the heading `heading`, each as its trimmed cells (the
 * header and its `---` separator, however Prettier pads them, left out).
 */
export function tableRows(md: string, heading: string): string[][] {
  const lines = proseLines(md);
  const start = lines.findIndex((l) => /^#{1,6}\s/.test(l) && l.replace(/^#+\s+/, '') === heading);
  if (start < 0) throw new Error(`no heading "${heading}"`);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 1)) {
    if (/^#{1,6}\s/.test(line)) break;
    if (!line.startsWith('|')) {
      if (rows.length > 0) break;
      continue;
    }
    rows.push(
      line
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim()),
    );
  }
  return rows.slice(1).filter((cells) => !cells.every((c) => /^:?-+:?$/.test(c)));
}
