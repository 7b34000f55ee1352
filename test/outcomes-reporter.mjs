/**
 * A node:test reporter that writes one line per test for test/run.ts to sum up at the end of
 * `npm test`: `pass`, `fail`, or `skip` and the reason after a tab (a todo test is a skip whose
 * reason starts `todo:`; the spec reporter prints each
 * one where it happens). Suites are not counted, only tests. Plain JavaScript: node 20 loads
 * reporters before tsx's loader is in place.
 *
 * @param {AsyncIterable<import('node:test/reporters').TestEvent>} source
 */
export default async function* outcomes(source) {
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { skip, todo, details } = event.data;
    if (details?.type === 'suite') continue;
    if (todo !== undefined && todo !== false) {
      // A known gap, written down as a test that will pass once it is closed: counted as skipped.
      yield `skip\ttodo: ${todo === true ? 'no reason given' : todo}\n`;
    } else if (skip !== undefined && skip !== false) {
      yield `skip\t${skip === true ? 'no reason given' : skip}\n`;
    } else {
      yield event.type === 'test:pass' ? 'pass\n' : 'fail\n';
    }
  }
}
