// The bench's `floor` target claims to do, per message, what no SQS server can skip. These tests
// hold it to that: real MD5s of the bodies and a fresh id per message, on both protocols, where the
// plain ceiling (`fastify`) answers a fixed reply.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';

import { launch, type Server, type TargetName } from '../../scripts/bench/targets.js';
import { track } from '../support/children.js';

const md5 = (s: string): string => createHash('md5').update(s).digest('hex');
const bodies = ['first body', 'x'.repeat(300), 'ünïcödé ✓'];

async function start(target: TargetName): Promise<Server> {
  const s = await launch(target, {
    cpu: undefined,
    inspect: false,
    cpuProfDir: undefined,
    sharedSqsEntry: 'dist/main.js',
    sharedSqsArgs: [],
    label: target,
    nice: undefined,
  });
  track(s.child);
  await s.waitHealthy();
  return s;
}

async function sendBatchJson(
  s: Server,
): Promise<{ Id: string; MessageId: string; MD5OfMessageBody: string }[]> {
  const r = await fetch(`http://${s.hostHeader}/`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-amz-json-1.0',
      'x-amz-target': 'AmazonSQS.SendMessageBatch',
    },
    body: JSON.stringify({
      QueueUrl: 'http://q/000000000000/bench',
      Entries: bodies.map((MessageBody, i) => ({ Id: `e${i}`, MessageBody })),
    }),
  });
  assert.equal(r.status, 200);
  const out = (await r.json()) as {
    Successful: { Id: string; MessageId: string; MD5OfMessageBody: string }[];
  };
  return out.Successful;
}

describe('bench floor target', () => {
  let floor: Server;
  let ceiling: Server;
  before(async () => {
    [floor, ceiling] = await Promise.all([start('floor'), start('fastify')]);
  });
  after(async () => {
    await Promise.all([floor.stop(), ceiling.stop()]);
  });

  test('JSON SendMessageBatch: each entry gets its body MD5 and an id of its own', async () => {
    const entries = await sendBatchJson(floor);
    assert.deepEqual(
      entries.map((e) => [e.Id, e.MD5OfMessageBody]),
      bodies.map((b, i) => [`e${i}`, md5(b)]),
    );
    const again = await sendBatchJson(floor);
    const ids = [...entries, ...again].map((e) => e.MessageId);
    assert.equal(new Set(ids).size, ids.length);
    for (const id of ids)
      assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  test('Query SendMessage and SendMessageBatch: the same per message', async () => {
    const post = async (params: [string, string][]): Promise<string> => {
      const r = await fetch(`http://${floor.hostHeader}/`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(params).toString(),
      });
      assert.equal(r.status, 200);
      return r.text();
    };
    const single = await post([
      ['Action', 'SendMessage'],
      ['MessageBody', 'x'.repeat(300)],
    ]);
    assert.match(single, new RegExp(`<MD5OfMessageBody>${md5('x'.repeat(300))}</MD5OfMessageBody>`));
    const batch = await post([
      ['Action', 'SendMessageBatch'],
      ...bodies.flatMap((b, i): [string, string][] => [
        [`SendMessageBatchRequestEntry.${i + 1}.Id`, `e${i}`],
        [`SendMessageBatchRequestEntry.${i + 1}.MessageBody`, b],
      ]),
    ]);
    const md5s = [...batch.matchAll(/<MD5OfMessageBody>([0-9a-f]{32})<\/MD5OfMessageBody>/g)].map(
      (m) => m[1],
    );
    assert.deepEqual(md5s, bodies.map(md5));
    const ids = [...batch.matchAll(/<MessageId>([^<]+)<\/MessageId>/g)].map((m) => m[1]);
    assert.equal(new Set(ids).size, bodies.length);
  });

  test('the plain ceiling does none of it: one fixed reply', async () => {
    const entries = await sendBatchJson(ceiling);
    assert.equal(new Set(entries.map((e) => e.MD5OfMessageBody)).size, 1);
    assert.notEqual(entries[0]?.MD5OfMessageBody, md5(bodies[0] ?? ''));
  });
});
