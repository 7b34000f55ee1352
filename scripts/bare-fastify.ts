/**
 * A bare fastify 5 server, the throughput ceiling `npm run bench` compares shared-sqs with. It
 * parses every request body the way an SQS server has to (JSON for `application/x-amz-json-1.0`,
 * `querystring` for form bodies), looks at the action, and answers a fixed, pre-serialised reply
 * of the right shape. It keeps no state: only send, send-batch and cold-start mean anything.
 *
 * `--floor` adds the least an SQS server can do for SendMessage(Batch) beyond that: per message,
 * the MD5 of the body (which the reply must carry), a random message id, and the body and id kept
 * in one growing array (a queue holds them until they are received). No validation, attributes
 * or receipt bookkeeping: its rate against the plain ceiling shows how much of the ceiling any SQS
 * server that keeps its messages in memory can reach.
 *
 * Usage: node --import tsx scripts/bare-fastify.ts --port 9324 [--floor]
 */
import { createHash, randomUUID } from 'node:crypto';
import { parse as parseQuery } from 'node:querystring';
import { parseArgs } from 'node:util';
import Fastify from 'fastify';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '9324' },
    host: { type: 'string', default: '127.0.0.1' },
    floor: { type: 'boolean', default: false },
  },
});
const port = Number(values.port);
const host = values.host;

const JSON_TYPE = 'application/x-amz-json-1.0';
const XML_TYPE = 'text/xml';
const QUEUE_URL = `http://${host}:${port}/000000000000/bench`;
const MD5 = 'd41d8cd98f00b204e9800998ecf8427e';
const MESSAGE_ID = '5fea7756-0ea4-451a-a703-a558b933e274';
const REQUEST_ID = '27daac76-34dd-47df-bd01-1f6e873584a0';
const BATCH_IDS = Array.from({ length: 10 }, (_, i) => `m${i}`);

const jsonReplies: Record<string, string> = {
  SendMessage: JSON.stringify({ MD5OfMessageBody: MD5, MessageId: MESSAGE_ID }),
  SendMessageBatch: JSON.stringify({
    Successful: BATCH_IDS.map((Id) => ({ Id, MD5OfMessageBody: MD5, MessageId: MESSAGE_ID })),
    Failed: [],
  }),
  CreateQueue: JSON.stringify({ QueueUrl: QUEUE_URL }),
  GetQueueUrl: JSON.stringify({ QueueUrl: QUEUE_URL }),
  ListQueues: JSON.stringify({ QueueUrls: [QUEUE_URL] }),
  ReceiveMessage: JSON.stringify({ Messages: [] }),
};

function xmlReply(action: string, result: string): string {
  return (
    `<?xml version="1.0"?><${action}Response xmlns="http://queue.amazonaws.com/doc/2012-11-05/">` +
    `<${action}Result>${result}</${action}Result>` +
    `<ResponseMetadata><RequestId>${REQUEST_ID}</RequestId></ResponseMetadata></${action}Response>`
  );
}

const queryReplies: Record<string, string> = {
  SendMessage: xmlReply(
    'SendMessage',
    `<MD5OfMessageBody>${MD5}</MD5OfMessageBody><MessageId>${MESSAGE_ID}</MessageId>`,
  ),
  SendMessageBatch: xmlReply(
    'SendMessageBatch',
    BATCH_IDS.map(
      (id) =>
        `<SendMessageBatchResultEntry><Id>${id}</Id><MessageId>${MESSAGE_ID}</MessageId>` +
        `<MD5OfMessageBody>${MD5}</MD5OfMessageBody></SendMessageBatchResultEntry>`,
    ).join(''),
  ),
  CreateQueue: xmlReply('CreateQueue', `<QueueUrl>${QUEUE_URL}</QueueUrl>`),
  GetQueueUrl: xmlReply('GetQueueUrl', `<QueueUrl>${QUEUE_URL}</QueueUrl>`),
  ListQueues: xmlReply('ListQueues', `<QueueUrl>${QUEUE_URL}</QueueUrl>`),
  ReceiveMessage: xmlReply('ReceiveMessage', ''),
};

const app = Fastify({ logger: false, bodyLimit: 2 * 1024 * 1024 });

app.addContentTypeParser(JSON_TYPE, { parseAs: 'string' }, (_req, body, done) => {
  try {
    done(null, JSON.parse(body as string) as unknown);
  } catch (err) {
    done(err as Error, undefined);
  }
});
app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
  done(null, parseQuery(body as string));
});

app.get('/health', () => ({ status: 'ok' }));

/** --floor: every body and message id received, in arrival order. */
const kept: string[] = [];

/**
 * --floor: keeps the message; its id and the MD5 of its body, for the reply. `text` must be a
 * string of its own (JSON.parse gives those; a form value is a slice of the whole request body,
 * which it would keep alive).
 */
function keep(text: string): [id: string, md5: string] {
  const id = randomUUID();
  kept.push(text, id);
  return [id, createHash('md5').update(text, 'utf8').digest('hex')];
}

/** A copy holding only its own characters: a form value is a slice of the whole body. */
const ownString = (s: string): string => [s.slice(0, s.length >> 1), s.slice(s.length >> 1)].join('');

interface JsonEntry {
  Id?: string;
  MessageBody?: unknown;
}

function floorJson(
  action: string,
  input: { MessageBody?: unknown; Entries?: JsonEntry[] },
): string | undefined {
  if (action === 'SendMessage') {
    const [MessageId, MD5OfMessageBody] = keep(String(input.MessageBody));
    return JSON.stringify({ MD5OfMessageBody, MessageId });
  }
  if (action === 'SendMessageBatch' && Array.isArray(input.Entries)) {
    const Successful = input.Entries.map((e) => {
      const [MessageId, MD5OfMessageBody] = keep(String(e.MessageBody));
      return { Id: e.Id, MD5OfMessageBody, MessageId };
    });
    return JSON.stringify({ Successful, Failed: [] });
  }
  return undefined;
}

function floorQuery(action: string, form: Record<string, string | string[] | undefined>): string | undefined {
  if (action === 'SendMessage') {
    const [id, md5] = keep(ownString(String(form['MessageBody'])));
    return xmlReply(action, `<MD5OfMessageBody>${md5}</MD5OfMessageBody><MessageId>${id}</MessageId>`);
  }
  if (action === 'SendMessageBatch') {
    let entries = '';
    for (let n = 1; form[`SendMessageBatchRequestEntry.${n}.Id`] !== undefined; n++) {
      const [id, md5] = keep(ownString(String(form[`SendMessageBatchRequestEntry.${n}.MessageBody`])));
      entries +=
        `<SendMessageBatchResultEntry><Id>${String(form[`SendMessageBatchRequestEntry.${n}.Id`])}</Id>` +
        `<MessageId>${id}</MessageId><MD5OfMessageBody>${md5}</MD5OfMessageBody></SendMessageBatchResultEntry>`;
    }
    return xmlReply(action, entries);
  }
  return undefined;
}

app.post('/*', (request, reply) => {
  const target = request.headers['x-amz-target'];
  if (typeof target === 'string') {
    const action = target.slice(target.indexOf('.') + 1);
    const floor = values.floor
      ? floorJson(action, request.body as Parameters<typeof floorJson>[1])
      : undefined;
    return reply.type(JSON_TYPE).send(floor ?? jsonReplies[action] ?? '{}');
  }
  const form = (request.body ?? {}) as Record<string, string | string[] | undefined>;
  const action = typeof form['Action'] === 'string' ? form['Action'] : '';
  const floor = values.floor ? floorQuery(action, form) : undefined;
  return reply.type(XML_TYPE).send(floor ?? queryReplies[action] ?? xmlReply(action || 'Unknown', ''));
});

await app.listen({ port, host });

function shutdown(): void {
  app.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
}
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
