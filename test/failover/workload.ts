/**
 * A steady load through nginx, with every acknowledgement, receive and delete logged, and the
 * checker of docs/faults.md: after the fault heals and the queue is drained, count
 * - lost: a send acknowledged (200) whose body was never received;
 * - unexpected: a body received that was never sent;
 * - duplicated: a body received more than once (allowed: delivery is at-least-once);
 * - recovered: a body whose send got no 200 (outcome unknown) but that was received;
 * - resurrected: a message (by MessageId) received by a ReceiveMessage that started after a 200
 *   DeleteMessage of it. By id, not by body: a send retried after its first try was stored but not
 *   answered (the leader died in between) makes a second message with the same body, and
 *   deleting one of the two must not make the other look resurrected.
 *
 * Senders: @aws-sdk/client-sqs (JSON protocol, its standard retries) in a loop, and Debian's
 * aws-cli (Query protocol, /usr/bin/aws) in a slower loop, each body unique. One consumer receives
 * and deletes through nginx with the SDK. A probe sends raw Query requests every 20 ms, without
 * retries, to time exactly when sends succeed again.
 */
import { execFile } from 'node:child_process';
import type { TestContext } from 'node:test';
import {
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { awsToolEnv, DEBIAN_AWS, freePort, uniqueName } from '../support/server.js';
import { queryPost } from '../support/wire.js';
import { createQueue, Instance, loadClient, pause, until } from './harness.js';

export interface Report {
  readonly attempted: number;
  readonly acked: number;
  readonly ackedBySdk: number;
  readonly ackedByCli: number;
  readonly ackedByProbe: number;
  readonly received: number;
  readonly lost: string[];
  readonly unexpected: string[];
  readonly duplicated: number;
  readonly recovered: number;
  readonly resurrected: string[];
  readonly sendErrors: Record<string, number>;
}

function errName(e: unknown): string {
  const x = e as { name?: string; $metadata?: { httpStatusCode?: number } };
  return `${x.name ?? 'Error'}${x.$metadata?.httpStatusCode === undefined ? '' : `/${x.$metadata.httpStatusCode}`}`;
}

export class Workload {
  /** The SDK client of the sender and the consumer (a test may add middleware to it). */
  readonly sdk: SQSClient;
  private running = false;
  private loops: Promise<void>[] = [];
  private seq = 0;
  readonly attempted = new Set<string>();
  readonly acked = new Map<string, 'sdk' | 'cli' | 'probe'>();
  /** body → when its send was answered 200. */
  readonly ackedAt = new Map<string, number>();
  /** body → start times of the receives that returned it. */
  readonly receivedAt = new Map<string, number[]>();
  /** MessageId → its body and the start times of the receives that returned it. */
  readonly receivedById = new Map<string, { body: string; at: number[] }>();
  /** MessageId → when a DeleteMessage of it was answered 200. */
  readonly deletedAt = new Map<string, number>();
  readonly sendErrors: Record<string, number> = {};
  /** Times (ms) of probe sends answered 200, and of the others. */
  readonly probeOk: number[] = [];
  readonly probeFail: { at: number; status: number }[] = [];

  constructor(
    readonly url: string,
    readonly queueUrl: string,
    readonly tag: string,
    private readonly opts: {
      cli?: boolean;
      consume?: boolean;
      probe?: boolean;
      sendEveryMs?: number;
      probeEveryMs?: number;
      /**
       * Send with SendMessageBatch of this many entries and delete with DeleteMessageBatch, for
       * more messages a second from the same client; default 1 (SendMessage, DeleteMessage).
       */
      batch?: number;
    } = {},
  ) {
    this.sdk = loadClient(url);
  }

  start(): void {
    this.running = true;
    this.loops.push(this.sdkSender());
    if (this.opts.cli ?? true) this.loops.push(this.cliSender());
    if (this.opts.consume ?? true) this.loops.push(this.consumer());
    if (this.opts.probe ?? true) this.loops.push(this.probe());
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    this.loops = [];
  }

  /** Resolves when `n` more sends have been acknowledged (bounded). */
  async acks(n: number, timeoutMs = 30_000): Promise<void> {
    const target = this.acked.size + n;
    const deadline = Date.now() + timeoutMs;
    while (this.acked.size < target) {
      if (Date.now() > deadline) throw new Error(`fewer than ${n} sends acknowledged in ${timeoutMs} ms`);
      await pause(20);
    }
  }

  /** First probe success at or after `t` (ms since the epoch), waiting up to `timeoutMs`. */
  async firstOkAfter(t: number, timeoutMs: number): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const ok = this.probeOk.find((x) => x >= t);
      if (ok !== undefined) return ok;
      if (Date.now() > deadline) throw new Error(`no send succeeded through nginx within ${timeoutMs} ms`);
      await pause(10);
    }
  }

  private body(kind: string): string {
    this.seq++;
    return `${this.tag}-${kind}-${this.seq}-${Math.random().toString(36).slice(2, 8)}`;
  }

  private async sdkSender(): Promise<void> {
    const batch = this.opts.batch ?? 1;
    while (this.running) {
      const bodies = Array.from({ length: batch }, () => this.body('sdk'));
      for (const body of bodies) this.attempted.add(body);
      try {
        const acked =
          batch === 1
            ? await this.sdk
                .send(new SendMessageCommand({ QueueUrl: this.queueUrl, MessageBody: bodies[0] }), {
                  abortSignal: AbortSignal.timeout(20_000),
                })
                .then(() => bodies)
            : await this.sdk
                .send(
                  new SendMessageBatchCommand({
                    QueueUrl: this.queueUrl,
                    Entries: bodies.map((MessageBody, i) => ({ Id: String(i), MessageBody })),
                  }),
                  { abortSignal: AbortSignal.timeout(20_000) },
                )
                .then((out) => {
                  // A failed entry was not stored: an error of the send, as a failed SendMessage.
                  for (const f of out.Failed ?? []) {
                    const k = `batch-${f.Code ?? 'failed'}`;
                    this.sendErrors[k] = (this.sendErrors[k] ?? 0) + 1;
                  }
                  return (out.Successful ?? []).map((e) => bodies[Number(e.Id)] as string);
                });
        const at = Date.now();
        for (const body of acked) {
          this.acked.set(body, 'sdk');
          this.ackedAt.set(body, at);
        }
      } catch (e) {
        const k = errName(e);
        this.sendErrors[k] = (this.sendErrors[k] ?? 0) + 1;
      }
      await pause(this.opts.sendEveryMs ?? 15);
    }
  }

  private async cliSender(): Promise<void> {
    while (this.running) {
      const body = this.body('cli');
      this.attempted.add(body);
      const code = await new Promise<number>((resolve) => {
        execFile(
          DEBIAN_AWS,
          [
            '--endpoint-url',
            this.url,
            '--region',
            'us-east-1',
            '--output',
            'json',
            'sqs',
            'send-message',
            '--queue-url',
            this.queueUrl,
            '--message-body',
            body,
          ],
          { env: { ...awsToolEnv(), AWS_MAX_ATTEMPTS: '5' }, timeout: 30_000 },
          (error) => resolve(error === null ? 0 : typeof error.code === 'number' ? error.code : -1),
        );
      });
      if (code === 0) {
        this.acked.set(body, 'cli');
        this.ackedAt.set(body, Date.now());
      } else this.sendErrors[`cli-exit-${code}`] = (this.sendErrors[`cli-exit-${code}`] ?? 0) + 1;
      await pause(200);
    }
  }

  private async consumer(): Promise<void> {
    while (this.running) await this.receiveOnce(3, 1);
  }

  /** Logs what a ReceiveMessage that started at `startedAt` returned. */
  recordReceived(
    startedAt: number,
    messages: readonly { MessageId?: string | undefined; Body?: string | undefined }[],
  ): void {
    for (const m of messages) {
      const body = m.Body ?? '';
      const id = m.MessageId ?? '';
      const list = this.receivedAt.get(body) ?? [];
      list.push(startedAt);
      this.receivedAt.set(body, list);
      const byId = this.receivedById.get(id);
      if (byId === undefined) this.receivedById.set(id, { body, at: [startedAt] });
      else byId.at.push(startedAt);
    }
  }

  /** Logs a DeleteMessage of `messageId` answered 200 at `at`; the first one counts. */
  recordDeleted(messageId: string, at: number): void {
    if (!this.deletedAt.has(messageId)) this.deletedAt.set(messageId, at);
  }

  /** One ReceiveMessage (and a DeleteMessage per message); returns how many it got. */
  private async receiveOnce(visibility: number, wait: number): Promise<number> {
    const startedAt = Date.now();
    let messages;
    try {
      const out = await this.sdk.send(
        new ReceiveMessageCommand({
          QueueUrl: this.queueUrl,
          MaxNumberOfMessages: 10,
          VisibilityTimeout: visibility,
          WaitTimeSeconds: wait,
        }),
        { abortSignal: AbortSignal.timeout(25_000) },
      );
      messages = out.Messages ?? [];
    } catch {
      await pause(50);
      return 0;
    }
    this.recordReceived(startedAt, messages);
    if ((this.opts.batch ?? 1) > 1 && messages.length > 0) {
      try {
        const out = await this.sdk.send(
          new DeleteMessageBatchCommand({
            QueueUrl: this.queueUrl,
            Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
          }),
          { abortSignal: AbortSignal.timeout(20_000) },
        );
        const at = Date.now();
        // A failed entry was not deleted: it comes back after its visibility timeout.
        for (const e of out.Successful ?? []) this.recordDeleted(messages[Number(e.Id)]?.MessageId ?? '', at);
      } catch {
        // Not deleted: they come back after their visibility timeout and are received again.
      }
      return messages.length;
    }
    await Promise.all(
      messages.map(async (m) => {
        try {
          await this.sdk.send(
            new DeleteMessageCommand({ QueueUrl: this.queueUrl, ReceiptHandle: m.ReceiptHandle }),
            {
              abortSignal: AbortSignal.timeout(20_000),
            },
          );
          this.recordDeleted(m.MessageId ?? '', Date.now());
        } catch {
          // Not deleted: it comes back after its visibility timeout and is received again.
        }
      }),
    );
    return messages.length;
  }

  private async probe(): Promise<void> {
    while (this.running) {
      const body = this.body('probe');
      this.attempted.add(body);
      const at = Date.now();
      try {
        const res = await queryPost(this.url, {
          Action: 'SendMessage',
          QueueUrl: this.queueUrl,
          MessageBody: body,
        });
        if (res.status === 200) {
          this.probeOk.push(Date.now());
          this.acked.set(body, 'probe');
          this.ackedAt.set(body, Date.now());
        } else this.probeFail.push({ at, status: res.status });
      } catch {
        this.probeFail.push({ at, status: 0 });
      }
      await pause(this.opts.probeEveryMs ?? 20);
    }
  }

  /**
   * Receives and deletes until the queue is empty: visible, in flight and delayed all 0 (messages
   * left in flight by a failed delete come back after their 3 s visibility). Bounded.
   */
  async drain(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const got = await this.receiveOnce(30, 1);
      if (got > 0) continue;
      const attrs = await this.sdk.send(
        new GetQueueAttributesCommand({
          QueueUrl: this.queueUrl,
          AttributeNames: [
            'ApproximateNumberOfMessages',
            'ApproximateNumberOfMessagesNotVisible',
            'ApproximateNumberOfMessagesDelayed',
          ],
        }),
      );
      const a = attrs.Attributes ?? {};
      const left =
        Number(a.ApproximateNumberOfMessages) +
        Number(a.ApproximateNumberOfMessagesNotVisible) +
        Number(a.ApproximateNumberOfMessagesDelayed);
      if (left === 0) return;
      if (Date.now() > deadline)
        throw new Error(`the queue still holds ${left} messages after ${timeoutMs} ms`);
    }
  }

  report(): Report {
    const lost: string[] = [];
    for (const body of this.acked.keys()) if (!this.receivedAt.has(body)) lost.push(body);
    const unexpected: string[] = [];
    let duplicated = 0;
    let recovered = 0;
    const resurrected: string[] = [];
    for (const [body, times] of this.receivedAt) {
      if (!this.attempted.has(body)) unexpected.push(body);
      if (times.length > 1) duplicated++;
      if (!this.acked.has(body) && this.attempted.has(body)) recovered++;
    }
    for (const [id, { body, at }] of this.receivedById) {
      const del = this.deletedAt.get(id);
      if (del !== undefined && at.some((t) => t > del)) resurrected.push(body);
    }
    let ackedByCli = 0;
    let ackedByProbe = 0;
    for (const v of this.acked.values()) {
      if (v === 'cli') ackedByCli++;
      if (v === 'probe') ackedByProbe++;
    }
    return {
      attempted: this.attempted.size,
      acked: this.acked.size,
      ackedBySdk: this.acked.size - ackedByCli - ackedByProbe,
      ackedByCli,
      ackedByProbe,
      received: this.receivedAt.size,
      lost,
      unexpected,
      duplicated,
      recovered,
      resurrected,
      sendErrors: { ...this.sendErrors },
    };
  }

  close(): void {
    this.sdk.destroy();
  }
}

/** One line for t.diagnostic(). */
export function summary(r: Report): string {
  return (
    `attempted ${r.attempted}, acked ${r.acked} (sdk ${r.ackedBySdk}, cli ${r.ackedByCli}, probe ${r.ackedByProbe}), received ${r.received}, ` +
    `lost ${r.lost.length}, unexpected ${r.unexpected.length}, duplicated ${r.duplicated}, ` +
    `recovered ${r.recovered}, resurrected ${r.resurrected.length}, send errors ${JSON.stringify(r.sendErrors)}`
  );
}

/** A new queue under a running Workload through `url`, closed after the test. */
export async function loadOn(
  t: { after(fn: () => void): void },
  url: string,
  queueName: string,
  tag: string,
  opts: ConstructorParameters<typeof Workload>[3] = {},
): Promise<{ queueUrl: string; w: Workload }> {
  const queueUrl = await createQueue(url, queueName);
  const w = new Workload(url, queueUrl, tag, opts);
  t.after(() => w.close());
  w.start();
  return { queueUrl, w };
}

/**
 * One instance (no leader election, no warm-up) on the Redis that `redisArgs` name, under `prefix`,
 * each write waiting for `waitReplicas` replicas; and a queue of its under a send-only load, JSON
 * sends and Query probes (aws-cli's process per send is left out, to keep the machine's CPU for
 * Redis), once 200 are acknowledged. Nothing is received until the drain: a message received at
 * once would count as delivered even if the failover then lost it.
 */
export async function sendingInstance(
  t: TestContext,
  redisArgs: readonly string[],
  opts: { readonly prefix: string; readonly waitReplicas: number; readonly label: string },
): Promise<{ instance: Instance; w: Workload }> {
  const instance = new Instance('ssq', await freePort(), await freePort(), [
    ...redisArgs,
    '--redis-prefix',
    opts.prefix,
    '--redis-wait-replicas',
    String(opts.waitReplicas),
    '--no-queue-deleted-recently',
    '--warmup-requests',
    '0',
  ]);
  t.after(() => instance.kill9());
  await instance.start();
  await until('ready', () => instance.ready(), 15_000);
  const queueUrl = await createQueue(instance.url, uniqueName(opts.label));
  const w = new Workload(instance.url, queueUrl, opts.label, { cli: false, consume: false });
  t.after(() => w.close());
  w.start();
  await w.acks(200);
  return { instance, w };
}
