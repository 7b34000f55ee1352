/**
 * `npx tsx scripts/bench/first-touch.ts [--mib 1024]`: what this machine charges for memory a
 * process touches for the first time (a page fault per 4 KiB page, the kernel zeroing it, and on
 * a VM the host backing it), against touching it again. A queue that grows pays the first for
 * every message it keeps; docs/performance.md ("The floor", in its git history) used it to explain why keeping
 * messages costs more on some VMs than others.
 */
import { scriptArgs } from './proc.js';

const { values: opt } = scriptArgs(import.meta.url, {
  options: { mib: { type: 'string', default: '1024' } },
});
const bytes = Number(opt.mib) * 1024 * 1024;
const PAGE = 4096;
const pages = bytes / PAGE;

function touchAll(b: Buffer, value: number): number {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < b.length; i += PAGE) b[i] = value;
  return Number(process.hrtime.bigint() - t0);
}

// allocUnsafeSlow: memory of its own, straight from the allocator, not yet touched.
const buffer = Buffer.allocUnsafeSlow(bytes);
const first = touchAll(buffer, 1);
const again = touchAll(buffer, 2);
console.log(
  `${opt.mib} MiB: first touch ${(first / pages).toFixed(0)} ns per 4 KiB page (${(first / bytes).toFixed(2)} ns per byte); ` +
    `touched again ${(again / pages).toFixed(0)} ns per page`,
);
