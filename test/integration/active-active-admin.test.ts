/**
 * The admin API's queue routes under --active-active, two servers embedded in this process on a
 * real redis-server: either instance lists every queue, and a call about one queue (read, peek,
 * send, purge, delete, create) is answered by the owner of its shard, whichever instance it
 * reached. The queues are made and read back with the SDK v3 (JSON 1.0).
 */
import assert from 'node:assert/strict';
import { CreateQueueCommand, GetQueueAttributesCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { RunningServer } from '../../src/index.js';
import { shardOf } from '../../src/shard/hash.js';
import { admin, shardsView, sqsAt, pairFor } from '../support/active-active.js';
import { testsRequiring } from '../support/requires.js';

const { after, before, test } = testsRequiring('redis-server');
const servers = pairFor({ before, after });

const ACCOUNT = '000000000000';
const REGION = 'us-east-1';

/** Names `prefix-0`, `prefix-1`, … until one lies in a shard each instance owns. */
async function namesOnBothOwners(prefix: string): Promise<{ here: string; there: string }> {
  const [a] = servers as [RunningServer];
  const v = await shardsView(a);
  const ownerOf = (name: string): string | null | undefined =>
    v.shards[shardOf(ACCOUNT, REGION, name)]?.owner;
  let here: string | undefined;
  let there: string | undefined;
  for (let i = 0; here === undefined || there === undefined; i++) {
    const name = `${prefix}-${i}`;
    if (ownerOf(name) === v.instanceId) here ??= name;
    else there ??= name;
  }
  return { here, there };
}

void test('Given queues on both owners, when either instance is asked for the listing, then it lists them all', async () => {
  const [a, b] = servers as [RunningServer, RunningServer];
  const { here, there } = await namesOnBothOwners('listed');
  for (const QueueName of [here, there]) await sqsAt(a).send(new CreateQueueCommand({ QueueName }));
  for (const s of [a, b]) {
    const r = await admin(s, '/admin/queues?prefix=listed-');
    assert.equal(r.status, 200);
    const { queues } = (await r.json()) as { queues: { name: string }[] };
    assert.deepEqual(queues.map((q) => q.name).sort(), [here, there].sort());
  }
});

void test('Given a queue the other instance owns, when its admin calls reach this one, then the owner answers each: read, send, peek, purge, delete', async () => {
  const [a] = servers as [RunningServer, RunningServer];
  const { there } = await namesOnBothOwners('remote');
  const { QueueUrl } = await sqsAt(a).send(new CreateQueueCommand({ QueueName: there }));
  await sqsAt(a).send(new SendMessageCommand({ QueueUrl, MessageBody: 'from-sqs' }));
  const path = `/admin/queues/${ACCOUNT}/${REGION}/${there}`;

  const read = await admin(a, path);
  assert.equal(read.status, 200);
  assert.equal(((await read.json()) as { visible: number }).visible, 1);

  const sent = await admin(a, `${path}/messages`, {
    method: 'POST',
    body: JSON.stringify({ body: 'from-admin' }),
  });
  assert.equal(sent.status, 201);
  const peek = await admin(a, `${path}/messages?max=10`);
  assert.equal(peek.status, 200);
  const { messages } = (await peek.json()) as { messages: { body: string }[] };
  assert.deepEqual(messages.map((m) => m.body).sort(), ['from-admin', 'from-sqs']);

  const purged = await admin(a, `${path}/purge`, { method: 'POST' });
  assert.equal(purged.status, 200);
  assert.equal(((await purged.json()) as { purged: number }).purged, 2);
  const attrs = await sqsAt(a).send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
  assert.equal(attrs.Attributes?.ApproximateNumberOfMessages, '0');

  assert.equal((await admin(a, path, { method: 'DELETE' })).status, 200);
  assert.equal((await admin(a, path)).status, 404);
});

void test('Given a queue name whose shard the other instance owns, when the admin API creates it here, then the owner holds it', async () => {
  const [a, b] = servers as [RunningServer, RunningServer];
  const { there } = await namesOnBothOwners('made');
  const made = await admin(a, '/admin/queues', { method: 'POST', body: JSON.stringify({ name: there }) });
  assert.equal(made.status, 201);
  // b owns the shard: its SQS API finds the queue without asking a.
  const owner = (await shardsView(b)).shards[shardOf(ACCOUNT, REGION, there)]?.here?.state;
  assert.equal(owner, 'serving');
  const read = await admin(b, `/admin/queues/${ACCOUNT}/${REGION}/${there}`);
  assert.equal(read.status, 200);
});

void test('Given the admin token is wrong, when a call about the other owner’s queue arrives, then it is refused here with 401, never passed on', async () => {
  const [a] = servers as [RunningServer, RunningServer];
  const { there } = await namesOnBothOwners('guarded');
  const r = await fetch(`${a.controlUrl}/admin/queues/${ACCOUNT}/${REGION}/${there}`, {
    headers: { authorization: 'Bearer wrong' },
  });
  assert.equal(r.status, 401);
});
