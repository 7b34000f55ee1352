/**
 * A node:test reporter that writes one line per test for test/run.ts to sum up at the end of
 * `npm test`: `pass`, `fail`, or `skip` and the reason after a tab (the spec reporter prints each
 * one where it happens). Suites are not counted, only tests. Plain JavaScript: node 20 loads
 * reporters before tsx's loader is in place.
 *
 * @param {AsyncIterable<import('node:test/reporters').TestEvent>} source
 */
export default async function* outcomes(source) {
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { skip, details } = event.data;
    if (details?.type === 'suite') continue;
    if (skip !== undefined && skip !== false) {
      yield `skip\t${skip === true ? 'no reason given' : skip}\n`;
    } else {
      yield event.type === 'test:pass' ? 'pass\n' : 'fail\n';
    }
  }
}
