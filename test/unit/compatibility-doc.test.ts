import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { MessageSystemAttributeName, QueueAttributeName } from '@aws-sdk/client-sqs';
import { readableAttributeNames } from '../../src/core/attributes.js';
import { actions } from '../../src/sqs/actions/index.js';
import { actionNames } from '../../src/sqs/model.generated.js';

/**
 * Keeps docs/compatibility.md true: its tables list every action of the API model and every queue
 * and message system attribute the AWS SDK knows, and say `yes` exactly for what the server does.
 */

const doc = readFileSync(new URL('../../docs/compatibility.md', import.meta.url), 'utf8');

/** The rows of the table under `## <heading>`: first cell → second cell. */
function table(heading: string): Map<string, string> {
  const start = doc.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `docs/compatibility.md has a "## ${heading}" section`);
  const end = doc.indexOf('\n## ', start + 1);
  const rows = new Map<string, string>();
  for (const line of doc.slice(start, end < 0 ? undefined : end).split('\n')) {
    if (!line.startsWith('| ')) continue;
    const cells = line
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim());
    const [name, supported] = cells;
    if (name === undefined || supported === undefined || /^-+$/.test(name) || supported === 'supported')
      continue;
    rows.set(name, supported);
  }
  return rows;
}

test('Given the API model, when docs/compatibility.md is read, then every action has a row and no other action does', () => {
  const rows = table('Actions');
  assert.deepEqual([...rows.keys()].sort(), [...actionNames].sort());
});

test('Given the action table, when docs/compatibility.md is read, then an action is marked yes exactly when the server has it', () => {
  for (const [name, supported] of table('Actions')) {
    const has = name in actions;
    assert.equal(supported, has ? 'yes' : 'no', `${name}: the action table ${has ? 'has' : 'lacks'} it`);
  }
});

test('Given the queue attributes the AWS SDK knows, when docs/compatibility.md is read, then each has a row, yes exactly when the server accepts it', () => {
  const rows = table('Queue attributes');
  const known = Object.values(QueueAttributeName).filter((n) => n !== 'All');
  assert.deepEqual([...rows.keys()].sort(), [...known].sort());
  for (const [name, supported] of rows) {
    const has = readableAttributeNames.has(name);
    assert.equal(
      supported,
      has ? 'yes' : 'no',
      `${name}: GetQueueAttributes ${has ? 'knows' : 'does not know'} it`,
    );
  }
});

test('Given the message system attributes the AWS SDK knows, when docs/compatibility.md is read, then each has a row', () => {
  const rows = table('Message system attributes');
  const known = Object.values(MessageSystemAttributeName).filter((n) => n !== 'All');
  assert.deepEqual([...rows.keys()].sort(), [...known].sort());
});
