/**
 * Request building and cheap reply parsing for the two SQS wire protocols the bench speaks:
 * - json:  POST / with `content-type: application/x-amz-json-1.0` and `x-amz-target: AmazonSQS.<Action>`,
 *          JSON body and reply;
 * - query: POST / with a form body `Action=<Action>&Version=2012-11-05&...`, XML reply (read with regular
 *          expressions, not an XML parser: the load generator must stay cheap).
 * Every builder returns a complete serialised HTTP request (see rawhttp.buildRequest).
 */
import { buildRequest } from './rawhttp.js';

export type Protocol = 'json' | 'query';
export const PROTOCOLS: readonly Protocol[] = ['json', 'query'];

export interface FifoEntry {
  body: string;
  group: string;
  dedup: string;
}

export interface ReceivedMessage {
  receiptHandle: string;
  body: string;
}

const JSON_CT = 'application/x-amz-json-1.0';
const FORM_CT = 'application/x-www-form-urlencoded';
const VERSION = '2012-11-05';

type Json = string | number | boolean | Json[] | { [k: string]: Json };

const XML_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
};

export function xmlUnescape(s: string): string {
  if (!s.includes('&')) return s;
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (m, e: string) => {
    if (e.startsWith('#x')) return String.fromCodePoint(parseInt(e.slice(2), 16));
    if (e.startsWith('#')) return String.fromCodePoint(parseInt(e.slice(1), 10));
    return XML_ENTITIES[e] ?? m;
  });
}

const FAILED_JSON = /"Failed"\s*:\s*\[\s*\{/;

export class SqsCodec {
  constructor(
    readonly protocol: Protocol,
    readonly hostHeader: string,
  ) {}

  private json(action: string, params: Record<string, Json>): Buffer {
    return buildRequest(
      this.hostHeader,
      { 'content-type': JSON_CT, 'x-amz-target': `AmazonSQS.${action}` },
      JSON.stringify(params),
    );
  }

  private query(action: string, params: [string, string | number][]): Buffer {
    let body = `Action=${action}&Version=${VERSION}`;
    for (const [k, v] of params) body += `&${k}=${encodeURIComponent(v)}`;
    return buildRequest(this.hostHeader, { 'content-type': FORM_CT }, body);
  }

  listQueues(): Buffer {
    return this.protocol === 'json' ? this.json('ListQueues', {}) : this.query('ListQueues', []);
  }

  createQueue(name: string): Buffer {
    return this.protocol === 'json'
      ? this.json('CreateQueue', { QueueName: name })
      : this.query('CreateQueue', [['QueueName', name]]);
  }

  /** A FIFO queue (name ending in .fifo); deduplication ids are given with every message. */
  createFifoQueue(name: string): Buffer {
    return this.protocol === 'json'
      ? this.json('CreateQueue', { QueueName: name, Attributes: { FifoQueue: 'true' } })
      : this.query('CreateQueue', [
          ['QueueName', name],
          ['Attribute.1.Name', 'FifoQueue'],
          ['Attribute.1.Value', 'true'],
        ]);
  }

  sendMessage(queueUrl: string, body: string): Buffer {
    return this.protocol === 'json'
      ? this.json('SendMessage', { QueueUrl: queueUrl, MessageBody: body })
      : this.query('SendMessage', [
          ['QueueUrl', queueUrl],
          ['MessageBody', body],
        ]);
  }

  /** SendMessageBatch of plain bodies, or of FIFO entries with their group and deduplication id. */
  sendMessageBatch(queueUrl: string, entries: readonly (string | FifoEntry)[]): Buffer {
    const fields = entries.map((e, i): [string, string][] => {
      const f: [string, string][] = [
        ['Id', `m${i}`],
        ['MessageBody', typeof e === 'string' ? e : e.body],
      ];
      if (typeof e !== 'string') f.push(['MessageGroupId', e.group], ['MessageDeduplicationId', e.dedup]);
      return f;
    });
    if (this.protocol === 'json') {
      const Entries = fields.map((f) => Object.fromEntries(f));
      return this.json('SendMessageBatch', { QueueUrl: queueUrl, Entries });
    }
    const params: [string, string][] = [['QueueUrl', queueUrl]];
    fields.forEach((f, i) => {
      for (const [k, v] of f) params.push([`SendMessageBatchRequestEntry.${i + 1}.${k}`, v]);
    });
    return this.query('SendMessageBatch', params);
  }

  receiveMessage(queueUrl: string, max: number, waitSeconds: number): Buffer {
    return this.protocol === 'json'
      ? this.json('ReceiveMessage', {
          QueueUrl: queueUrl,
          MaxNumberOfMessages: max,
          WaitTimeSeconds: waitSeconds,
        })
      : this.query('ReceiveMessage', [
          ['QueueUrl', queueUrl],
          ['MaxNumberOfMessages', max],
          ['WaitTimeSeconds', waitSeconds],
        ]);
  }

  deleteMessageBatch(queueUrl: string, handles: readonly string[]): Buffer {
    if (this.protocol === 'json') {
      return this.json('DeleteMessageBatch', {
        QueueUrl: queueUrl,
        Entries: handles.map((h, i) => ({ Id: `d${i}`, ReceiptHandle: h })),
      });
    }
    const params: [string, string][] = [['QueueUrl', queueUrl]];
    handles.forEach((h, i) => {
      params.push([`DeleteMessageBatchRequestEntry.${i + 1}.Id`, `d${i}`]);
      params.push([`DeleteMessageBatchRequestEntry.${i + 1}.ReceiptHandle`, h]);
    });
    return this.query('DeleteMessageBatch', params);
  }

  // ---- replies ----

  parseQueueUrl(body: string): string | undefined {
    if (this.protocol === 'json') {
      const v = (JSON.parse(body) as { QueueUrl?: unknown }).QueueUrl;
      return typeof v === 'string' ? v : undefined;
    }
    const m = /<QueueUrl>([^<]*)<\/QueueUrl>/.exec(body);
    return m?.[1] !== undefined ? xmlUnescape(m[1]) : undefined;
  }

  parseMessages(body: string): ReceivedMessage[] {
    if (this.protocol === 'json') {
      const msgs = (JSON.parse(body) as { Messages?: { ReceiptHandle?: string; Body?: string }[] }).Messages;
      if (!msgs) return [];
      return msgs.map((m) => ({ receiptHandle: m.ReceiptHandle ?? '', body: m.Body ?? '' }));
    }
    const out: ReceivedMessage[] = [];
    const re = /<Message>([\s\S]*?)<\/Message>/g;
    for (let m = re.exec(body); m; m = re.exec(body)) {
      const inner = m[1] ?? '';
      const rh = /<ReceiptHandle>([^<]*)<\/ReceiptHandle>/.exec(inner)?.[1] ?? '';
      const b = /<Body>([^<]*)<\/Body>/.exec(inner)?.[1] ?? '';
      out.push({ receiptHandle: xmlUnescape(rh), body: xmlUnescape(b) });
    }
    return out;
  }

  /** Number of failed entries in a SendMessageBatch / DeleteMessageBatch reply (cheap when 0). */
  countBatchFailures(body: string): number {
    if (this.protocol === 'json') {
      if (!FAILED_JSON.test(body)) return 0;
      return (JSON.parse(body) as { Failed?: unknown[] }).Failed?.length ?? 0;
    }
    let n = 0;
    for (let i = body.indexOf('<BatchResultErrorEntry>'); i >= 0;) {
      n++;
      i = body.indexOf('<BatchResultErrorEntry>', i + 1);
    }
    return n;
  }
}
