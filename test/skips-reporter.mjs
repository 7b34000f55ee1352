/**
 * A node:test reporter that writes one line per skipped test, its reason, for test/run.ts to sum
 * up at the end of `npm test` (the spec reporter prints each one where it happens). Plain
 * JavaScript: node 20 loads reporters before tsx's loader is in place.
 *
 * @param {AsyncIterable<import('node:test/reporters').TestEvent>} source
 */
export default async function* skips(source) {
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { skip } = event.data;
    if (skip === undefined || skip === false) continue;
    yield `${skip === true ? 'no reason given' : skip}\n`;
  }
}
