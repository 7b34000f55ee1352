/**
 * The warm-up's client (src/wiring/warmup.ts): rounds of the common actions, over both protocols,
 * sent to the private data plane on its Unix socket through node's HTTP client, as SDKs send them.
 */
import { Agent, request } from 'node:http';

/** The warm-up was stopped (shutdown, or the instance began to serve) before a request. */
export class Ended extends Error {}

const BODY = 'warm-up message body '.repeat(12);
/** What one round of a client sends: five JSON requests and four Query ones (`client` below). */
const REQUESTS_PER_ROUND = 9;
/** Parallel connections: enough to give the plane the same turns with several requests in them. */
const CONNECTIONS = 4;

export class WarmUpClient {
  /** Requests sent so far. */
  sent = 0;
  private readonly agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });

  constructor(
    private readonly socketPath: string,
    /** Checked before every request, so a takeover waits for at most the requests in flight. */
    private readonly over: () => boolean,
  ) {}

  /** Sends about `requests` requests; rejects with {@link Ended} once `over`, or with the first failure. */
  async run(requests: number): Promise<void> {
    const rounds = Math.max(1, Math.ceil(requests / REQUESTS_PER_ROUND / CONNECTIONS));
    await Promise.all(Array.from({ length: CONNECTIONS }, (_, n) => this.client(n, rounds)));
  }

  destroy(): void {
    this.agent.destroy();
  }

  private post(headers: Record<string, string>, body: string): Promise<string> {
    return new Promise((resolve, reject) => {
      if (this.over()) {
        reject(new Ended());
        return;
      }
      const req = request(
        {
          socketPath: this.socketPath,
          agent: this.agent,
          method: 'POST',
          path: '/',
          headers: { ...headers, 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () =>
            res.statusCode === 200 ? resolve(text) : reject(new Error(`HTTP ${res.statusCode}: ${text}`)),
          );
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
      this.sent++;
    });
  }

  private json(action: string, input: object): Promise<string> {
    return this.post(
      { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': `AmazonSQS.${action}` },
      JSON.stringify(input),
    );
  }

  private query(action: string, params: Record<string, string>): Promise<string> {
    return this.post(
      { 'content-type': 'application/x-www-form-urlencoded' },
      new URLSearchParams({ Action: action, Version: '2012-11-05', ...params }).toString(),
    );
  }

  /** One client's share: sends, batches, receives and deletes on its own queue, in both protocols. */
  private async client(n: number, rounds: number): Promise<void> {
    const jsonUrl = (
      JSON.parse(await this.json('CreateQueue', { QueueName: `warm-json-${n}` })) as { QueueUrl: string }
    ).QueueUrl;
    const queryUrl = /<QueueUrl>([^<]+)<\/QueueUrl>/.exec(
      await this.query('CreateQueue', { QueueName: `warm-query-${n}` }),
    )?.[1];
    if (queryUrl === undefined) throw new Error('CreateQueue over Query: no QueueUrl');
    const attributes = { kind: { DataType: 'String', StringValue: 'warm-up' } };
    for (let r = 0; r < rounds; r++) {
      await this.json('SendMessage', { QueueUrl: jsonUrl, MessageBody: BODY });
      await this.json('SendMessage', { QueueUrl: jsonUrl, MessageBody: BODY, MessageAttributes: attributes });
      await this.json('SendMessageBatch', {
        QueueUrl: jsonUrl,
        Entries: Array.from({ length: 10 }, (_, i) => ({ Id: `m${i}`, MessageBody: BODY })),
      });
      const received = JSON.parse(
        await this.json('ReceiveMessage', {
          QueueUrl: jsonUrl,
          MaxNumberOfMessages: 10,
          MessageAttributeNames: ['All'],
          MessageSystemAttributeNames: ['All'],
        }),
      ) as { Messages?: { ReceiptHandle: string }[] };
      const handles = (received.Messages ?? []).map((m) => m.ReceiptHandle);
      if (handles.length > 0) {
        await this.json('DeleteMessageBatch', {
          QueueUrl: jsonUrl,
          Entries: handles.map((h, i) => ({ Id: `d${i}`, ReceiptHandle: h })),
        });
      }
      await this.query('SendMessage', { QueueUrl: queryUrl, MessageBody: BODY });
      const batch: Record<string, string> = { QueueUrl: queryUrl };
      for (let i = 1; i <= 10; i++) {
        batch[`SendMessageBatchRequestEntry.${i}.Id`] = `m${i}`;
        batch[`SendMessageBatchRequestEntry.${i}.MessageBody`] = BODY;
      }
      await this.query('SendMessageBatch', batch);
      const xml = await this.query('ReceiveMessage', {
        QueueUrl: queryUrl,
        MaxNumberOfMessages: '10',
        'AttributeName.1': 'All',
        'MessageAttributeName.1': 'All',
      });
      const deletes: Record<string, string> = { QueueUrl: queryUrl };
      let i = 0;
      for (const m of xml.matchAll(/<ReceiptHandle>([^<]+)<\/ReceiptHandle>/g)) {
        i++;
        deletes[`DeleteMessageBatchRequestEntry.${i}.Id`] = `d${i}`;
        deletes[`DeleteMessageBatchRequestEntry.${i}.ReceiptHandle`] = m[1] as string;
      }
      if (i > 0) await this.query('DeleteMessageBatch', deletes);
    }
  }
}
