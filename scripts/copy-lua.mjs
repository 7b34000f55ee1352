#!/usr/bin/env node
// tsc copies only what it compiles: the built server reads its Redis scripts and the admin page's
// files from beside its modules.
import { cpSync, readdirSync } from 'node:fs';

for (const dir of ['persistence/scripts', 'ha/scripts', 'owners/scripts']) {
  const from = new URL(`../src/${dir}/`, import.meta.url);
  const to = new URL(`../dist/${dir}/`, import.meta.url);
  for (const name of readdirSync(from)) {
    if (name.endsWith('.lua')) cpSync(new URL(name, from), new URL(name, to));
  }
}
const page = 'http/admin-page/';
cpSync(new URL(`../src/${page}`, import.meta.url), new URL(`../dist/${page}`, import.meta.url), {
  recursive: true,
});
