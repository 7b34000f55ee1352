/**
 * A node:test reporter that writes one line per skipped test, its reason, for test/run.ts to sum
 * up at the end of `npm test` (the spec reporter prints each one where it happens).
 */
import type { TestEvent } from 'node:test/reporters';

export default async function* skips(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { skip } = event.data;
    if (skip === undefined || skip === false) continue;
    yield `${skip === true ? 'no reason given' : skip}\n`;
  }
}
