/**
 * `npx tsx scripts/bench/micro.ts`: shared-sqs's own work per message outside HTTP, in process:
 * decode a request body, run the action, encode the reply, on a queue that keeps growing (as in
 * the send and send-batch scenarios). Prints ns per message and per request, best of --runs.
 * Issue 2 budgets SendMessageBatch at ≤ 2 µs of our own work per message outside HTTP; the part
 * the bare fastify reference does too (parsing the body: JSON.parse, querystring) is timed on the
 * same request and given beside it.
 */
import { parse as parseQuery } from 'node:querystring';
import { systemClock } from '../../src/core/clock.js';
import { scriptArgs } from './proc.js';
import { QueueStore } from '../../src/core/store.js';
import { decodeJson, encodeJson } from '../../src/protocol/json.js';
import { parseForm } from '../../src/protocol/form.js';
import { decodeQuery, encodeQueryResult } from '../../src/protocol/query.js';
import { actions } from '../../src/sqs/actions/index.js';
import { servicesFor, type Action, type RequestContext, type SqsServices } from '../../src/sqs/service.js';
import type { ActionName } from '../../src/sqs/model.generated.js';

const { values: opt } = scriptArgs(import.meta.url, {
  options: {
    messages: { type: 'string', default: '400000' },
    runs: { type: 'string', default: '3' },
    'body-size': { type: 'string', default: '256' },
    // One case by its printed name, e.g. --only 'json SendMessageBatch' (to profile it alone).
    only: { type: 'string' },
  },
});
const total = Number(opt.messages);
const runs = Number(opt.runs);
const body = 'x'.repeat(Number(opt['body-size']));
const BASE = 'http://127.0.0.1:4100';
const URL_ = `${BASE}/000000000000/bench`;

function services(): SqsServices {
  const store = new QueueStore(systemClock);
  const svc = servicesFor(store, systemClock);
  store.create({ accountId: '000000000000', region: 'us-east-1', name: 'bench' }, {}, {});
  return svc;
}

const ctx: RequestContext = {
  requestId: '27daac76-34dd-47df-bd01-1f6e873584a0',
  accountId: '000000000000',
  region: 'us-east-1',
  defaultRegion: 'us-east-1',
  baseUrl: BASE,
  senderId: '000000000000',
  onAbort: () => undefined,
};

const jsonSend = Buffer.from(JSON.stringify({ QueueUrl: URL_, MessageBody: body }));
const jsonBatch = Buffer.from(
  JSON.stringify({
    QueueUrl: URL_,
    Entries: Array.from({ length: 10 }, (_, i) => ({ Id: `m${i}`, MessageBody: body })),
  }),
);
const form = (params: [string, string][]): URLSearchParams => new URLSearchParams(params);
const querySend: [string, string][] = [
  ['Action', 'SendMessage'],
  ['Version', '2012-11-05'],
  ['QueueUrl', URL_],
  ['MessageBody', body],
];
const queryBatch: [string, string][] = [
  ['Action', 'SendMessageBatch'],
  ['Version', '2012-11-05'],
  ['QueueUrl', URL_],
];
for (let i = 0; i < 10; i++) {
  queryBatch.push([`SendMessageBatchRequestEntry.${i + 1}.Id`, `m${i}`]);
  queryBatch.push([`SendMessageBatchRequestEntry.${i + 1}.MessageBody`, body]);
}
const queryBatchText = form(queryBatch).toString();
const querySendText = form(querySend).toString();

type Case = {
  name: string;
  perRequest: number;
  run: (svc: SqsServices) => unknown;
  /** What scripts/bare-fastify.ts does with the same body: its content-type parser. */
  reference: () => unknown;
};
const cases: Case[] = [
  {
    name: 'json SendMessage',
    perRequest: 1,
    reference: () => JSON.parse(jsonSend.toString('utf8')) as unknown,
    run: async (svc) => {
      const d = decodeJson('AmazonSQS.SendMessage', jsonSend);
      return encodeJson(await (actions[d.action] as Action<ActionName>)(svc, ctx, d.input as never));
    },
  },
  {
    name: 'json SendMessageBatch',
    perRequest: 10,
    reference: () => JSON.parse(jsonBatch.toString('utf8')) as unknown,
    run: async (svc) => {
      const d = decodeJson('AmazonSQS.SendMessageBatch', jsonBatch);
      return encodeJson(await (actions[d.action] as Action<ActionName>)(svc, ctx, d.input as never));
    },
  },
  {
    name: 'query SendMessage',
    perRequest: 1,
    reference: () => parseQuery(querySendText),
    run: async (svc) => {
      const d = decodeQuery(parseForm(querySendText));
      return encodeQueryResult(
        d.action,
        await (actions[d.action] as Action<ActionName>)(svc, ctx, d.input as never),
        ctx.requestId,
      );
    },
  },
  {
    name: 'query SendMessageBatch',
    perRequest: 10,
    reference: () => parseQuery(queryBatchText),
    run: async (svc) => {
      const d = decodeQuery(parseForm(queryBatchText));
      return encodeQueryResult(
        d.action,
        await (actions[d.action] as Action<ActionName>)(svc, ctx, d.input as never),
        ctx.requestId,
      );
    },
  },
];

const selected = cases.filter((c) => opt.only === undefined || c.name === opt.only);
if (selected.length === 0) {
  console.error(`--only: no case named '${opt.only}'; the cases: ${cases.map((c) => c.name).join(', ')}`);
  process.exit(2);
}
for (const c of selected) {
  let best = Infinity;
  let bestReference = Infinity;
  const requests = Math.ceil(total / c.perRequest);
  const messages = requests * c.perRequest;
  for (let r = 0; r < runs; r++) {
    const svc = services();
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < requests; i++) await c.run(svc);
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / messages);
    const t1 = process.hrtime.bigint();
    for (let i = 0; i < requests; i++) c.reference();
    bestReference = Math.min(bestReference, Number(process.hrtime.bigint() - t1) / messages);
  }
  console.log(
    `${c.name.padEnd(24)} ${best.toFixed(0).padStart(6)} ns/message  (${((best * c.perRequest) / 1000).toFixed(2)} µs/request; ${total} messages queued per run, best of ${runs}); ` +
      `bare fastify's body parsing of the same request ${bestReference.toFixed(0)} ns/message, so ${(best - bestReference).toFixed(0)} ns/message beyond it`,
  );
}
