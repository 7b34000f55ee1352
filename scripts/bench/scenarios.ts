/**
 * The benchmark scenarios. Each one runs against a freshly started server and returns one or more
 * Results; see scripts/bench.ts --help for what each measures.
 */
import { sleep } from '../../test/support/process.js';
import { Histogram, type LatencySummary } from './histogram.js';
import { Meter, readRss, type MeterReading } from './meter.js';
import { RawPool, type Reply } from './rawhttp.js';
import { SqsCodec, type Protocol } from './sqs.js';
import { launch, type LaunchOptions, type ScenarioName, type Server, type Target } from './targets.js';

export interface BenchConfig {
  clients: number;
  durationS: number;
  warmupS: number;
  depth: number;
  deepDepth: number;
  rate: number;
  consumers: number;
  polls: number;
  wakeups: number;
  queues: number;
  messages: number;
  coldRuns: number;
  bodySize: number;
  launch: LaunchOptions;
  log: (line: string) => void;
}

export interface Result {
  /** The target's name (Target.name). */
  target: string;
  protocol: Protocol;
  scenario: ScenarioName;
  /** Distinguishes runs of one scenario (e.g. the queue depth of receive-delete). */
  variant: string;
  /** With --rounds N > 1: which pass over the targets (1..N) this run belongs to. */
  round?: number;
  errors: number;
  errorSamples: string[];
  durationS: number | null;
  requests: number | null;
  messages: number | null;
  reqPerSec: number | null;
  msgsPerSec: number | null;
  /** What `latency` measures: a request's round trip, send→receive, or send→woken poll. */
  latencyOf: string | null;
  latency: LatencySummary | null;
  serverRssBefore: number | null;
  serverRssAfter: number | null;
  serverCpuPct: number | null;
  loadCpuPct: number | null;
  /** CPU used by everything else on the machine meanwhile (see proc.Meter): high = noisy figures. */
  otherCpuPct: number | null;
  /** Of otherCpuPct, the hypervisor's steal (see MeterReading). */
  stealCpuPct: number | null;
  /** Scenario-specific figures (bytes per queue, wake-up latency, ...). */
  extra: Record<string, number | string | boolean | null>;
}

function newResult(target: Target, protocol: Protocol, scenario: ScenarioName, variant = ''): Result {
  return {
    target: target.name,
    protocol,
    scenario,
    variant,
    errors: 0,
    errorSamples: [],
    durationS: null,
    requests: null,
    messages: null,
    reqPerSec: null,
    msgsPerSec: null,
    latencyOf: null,
    latency: null,
    serverRssBefore: null,
    serverRssAfter: null,
    serverCpuPct: null,
    loadCpuPct: null,
    otherCpuPct: null,
    stealCpuPct: null,
    extra: {},
  };
}

/** Error counting with a few distinct samples kept for the report. */
class Errors {
  count = 0;
  readonly samples: string[] = [];

  add(what: string): void {
    this.count++;
    const s = what.replace(/\s+/g, ' ').slice(0, 300);
    if (this.samples.length < 5 && !this.samples.includes(s)) this.samples.push(s);
  }

  /** Returns true for a 2xx reply, otherwise records it. */
  check(action: string, r: Reply): boolean {
    if (r.status >= 200 && r.status < 300) return true;
    this.add(`${action}: HTTP ${r.status} ${r.body}`);
    return false;
  }

  into(res: Result): void {
    res.errors += this.count;
    for (const s of this.samples) if (res.errorSamples.length < 5) res.errorSamples.push(s);
  }
}

function applyMeter(res: Result, m: MeterReading): void {
  res.serverCpuPct = m.serverCpuPct;
  res.loadCpuPct = m.loadCpuPct;
  res.otherCpuPct = m.otherCpuPct;
  res.stealCpuPct = m.stealCpuPct;
}

const nowNs = (): bigint => process.hrtime.bigint();
const secondsSince = (t: bigint): number => Number(nowNs() - t) / 1e9;

function payload(size: number, prefix = ''): string {
  return prefix + 'x'.repeat(Math.max(0, size - prefix.length));
}

/** Run `n` concurrent loops; each calls `step` until it returns false. */
async function loops(n: number, step: (client: number) => Promise<boolean>): Promise<void> {
  await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      while (await step(i)) {
        /* next */
      }
    }),
  );
}

async function post(
  pool: RawPool,
  req: Buffer,
  wantBody: boolean,
  errors: Errors,
  action: string,
): Promise<Reply | undefined> {
  try {
    const r = await pool.post(req, wantBody);
    return errors.check(action, r) ? r : undefined;
  } catch (err) {
    errors.add(`${action}: ${(err as Error).message}`);
    return undefined;
  }
}

async function createQueue(pool: RawPool, codec: SqsCodec, name: string): Promise<string> {
  const r = await pool.post(codec.createQueue(name), true);
  if (r.status !== 200) throw new Error(`CreateQueue ${name}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
  const url = codec.parseQueueUrl(r.body);
  if (!url) throw new Error(`CreateQueue ${name}: no QueueUrl in ${r.body.slice(0, 300)}`);
  return url;
}

async function queueDepth(pool: RawPool, codec: SqsCodec, url: string): Promise<number | null> {
  try {
    const r = await pool.post(codec.getQueueAttributes(url, ['ApproximateNumberOfMessages']), true);
    if (r.status !== 200) return null;
    const v = codec.parseAttribute(r.body, 'ApproximateNumberOfMessages');
    return v === undefined ? null : Number(v);
  } catch {
    return null;
  }
}

/** Fill a queue with `count` messages by SendMessageBatch from `concurrency` clients (bounded in time). */
async function fill(
  pool: RawPool,
  codec: SqsCodec,
  url: string,
  count: number,
  bodySize: number,
  concurrency: number,
  errors: Errors,
  timeoutS: number,
): Promise<number> {
  const batch = codec.sendMessageBatch(
    url,
    Array.from({ length: 10 }, () => payload(bodySize)),
  );
  const batches = Math.ceil(count / 10);
  let next = 0;
  let sent = 0;
  const deadline = Date.now() + timeoutS * 1000;
  await loops(concurrency, async () => {
    if (next >= batches || Date.now() > deadline) return false;
    next++;
    const r = await post(pool, batch, true, errors, 'SendMessageBatch');
    if (r) {
      const failed = codec.countBatchFailures(r.body);
      if (failed > 0) errors.add(`SendMessageBatch: ${failed} failed entries`);
      sent += 10 - failed;
    }
    return true;
  });
  if (next < batches)
    errors.add(`fill: timed out after ${timeoutS} s with ${sent} of ${count} messages sent`);
  return sent;
}

interface Harness {
  server: Server;
  pool: RawPool;
  codec: SqsCodec;
}

/** Start a fresh server, run `fn`, always stop the server; a crash or start failure becomes an error. */
async function withServer(
  cfg: BenchConfig,
  target: Target,
  res: Result,
  fn: (h: Harness) => Promise<void>,
  launchOptions: LaunchOptions = cfg.launch,
): Promise<Result> {
  let server: Server | undefined;
  let pool: RawPool | undefined;
  try {
    server = await launch(target, launchOptions);
    await server.waitReady();
    pool = new RawPool(server.host, server.port, cfg.clients);
    await fn({ server, pool, codec: new SqsCodec(res.protocol, server.hostHeader) });
    if (server.exited) throw new Error(`server exited during the run:\n${server.outputTail()}`);
  } catch (err) {
    res.errors++;
    res.errorSamples.push(`run failed: ${(err as Error).message}`.slice(0, 1000));
  } finally {
    pool?.destroy();
    await server?.stop();
  }
  return res;
}

// ---------------------------------------------------------------- send, send-batch

async function throughput(
  cfg: BenchConfig,
  target: Target,
  protocol: Protocol,
  scenario: 'send' | 'send-batch',
): Promise<Result> {
  const res = newResult(target, protocol, scenario);
  const batch = scenario === 'send-batch';
  return withServer(cfg, target, res, async ({ server, pool, codec }) => {
    const url = await createQueue(pool, codec, `bench-${scenario}`);
    const req = batch
      ? codec.sendMessageBatch(
          url,
          Array.from({ length: 10 }, () => payload(cfg.bodySize)),
        )
      : codec.sendMessage(url, payload(cfg.bodySize));
    const action = batch ? 'SendMessageBatch' : 'SendMessage';
    const errors = new Errors();
    const hist = new Histogram();
    let requests = 0;
    let messages = 0;
    const run = async (seconds: number, record: boolean): Promise<void> => {
      const end = nowNs() + BigInt(Math.round(seconds * 1e9));
      await loops(cfg.clients, async () => {
        const t0 = nowNs();
        if (t0 >= end) return false;
        // Batch replies are read (to count failed entries); single sends only need the status.
        const r = await post(pool, req, batch, errors, action);
        if (!record) return true;
        hist.recordSince(t0);
        if (r) {
          requests++;
          const failed = batch ? codec.countBatchFailures(r.body) : 0;
          if (failed > 0) errors.add(`${action}: ${failed} failed entries`);
          messages += batch ? 10 - failed : 1;
        }
        return true;
      });
    };
    // Errors during the warm-up count too: any error flags the run.
    await run(cfg.warmupS, false);
    res.serverRssBefore = readRss(server.pid);
    const meter = new Meter(server.pid);
    const t0 = nowNs();
    await run(cfg.durationS, true);
    const elapsed = secondsSince(t0);
    applyMeter(res, meter.read());
    res.serverRssAfter = readRss(server.pid);
    errors.into(res);
    res.durationS = elapsed;
    res.requests = requests;
    res.messages = messages;
    res.reqPerSec = requests / elapsed;
    res.msgsPerSec = messages / elapsed;
    res.latencyOf = 'request';
    res.latency = hist.summaryMs();
  });
}

// ---------------------------------------------------------------- receive-delete

async function receiveDelete(
  cfg: BenchConfig,
  target: Target,
  protocol: Protocol,
  depth: number,
): Promise<Result> {
  const res = newResult(target, protocol, 'receive-delete', `${depth} deep`);
  res.extra['depth'] = depth;
  return withServer(cfg, target, res, async ({ server, pool, codec }) => {
    const url = await createQueue(pool, codec, 'bench-receive-delete');
    const errors = new Errors();
    // Warm the receive/delete path on extra messages first, then measure from exactly `depth` deep.
    // The same warm-up at every depth (it was a tenth of the depth): the 20k-deep run then drained
    // after 2,000 warm-up messages against the deep run's 5,000, so the deep/shallow ratio
    // compared how far the JIT had got as much as the depth.
    const warm = Math.min(5_000, depth);
    const fillStart = nowNs();
    const filled = await fill(pool, codec, url, depth + warm, cfg.bodySize, cfg.clients, errors, 300);
    res.extra['fillSeconds'] = Math.round(secondsSince(fillStart) * 100) / 100;
    res.extra['fillMsgsPerSec'] = Math.round(filled / secondsSince(fillStart));
    const receiveReq = codec.receiveMessage(url, 10, 0);
    const hist = new Histogram();
    let receives = 0;
    let deletes = 0;
    let deleted = 0;
    let emptyReceives = 0;
    let lastDeleteNs: bigint;

    const step = async (end: bigint, stopAt: number, record: boolean): Promise<boolean> => {
      if (deleted >= stopAt) return false;
      const t0 = nowNs();
      if (t0 >= end) return false;
      const r = await post(pool, receiveReq, true, errors, 'ReceiveMessage');
      if (record) hist.recordSince(t0);
      if (!r) return true;
      receives++;
      const msgs = codec.parseMessages(r.body);
      if (msgs.length === 0) {
        emptyReceives++;
        return false; // drained (the messages other clients hold are invisible)
      }
      const t1 = nowNs();
      const d = await post(
        pool,
        codec.deleteMessageBatch(
          url,
          msgs.map((m) => m.receiptHandle),
        ),
        true,
        errors,
        'DeleteMessageBatch',
      );
      if (record) hist.recordSince(t1);
      if (d) {
        deletes++;
        const failed = codec.countBatchFailures(d.body);
        if (failed > 0) errors.add(`DeleteMessageBatch: ${failed} failed entries`);
        deleted += msgs.length - failed;
        lastDeleteNs = nowNs();
      }
      return true;
    };

    // Warm-up: drain the extra messages (not measured).
    await loops(cfg.clients, () => step(nowNs() + 60_000_000_000n, warm, false));
    const warmDeleted = deleted;
    deleted = 0;
    receives = 0;
    deletes = 0;
    emptyReceives = 0;
    res.extra['depthAtStart'] = await queueDepth(pool, codec, url);
    res.extra['warmupMessages'] = warmDeleted;

    res.serverRssBefore = readRss(server.pid);
    const meter = new Meter(server.pid);
    const t0 = nowNs();
    lastDeleteNs = t0;
    const end = t0 + BigInt(Math.round(cfg.durationS * 1e9));
    await loops(cfg.clients, () => step(end, Number.POSITIVE_INFINITY, true));
    const stopNs = nowNs();
    applyMeter(res, meter.read());
    res.serverRssAfter = readRss(server.pid);
    // The rate is taken up to the last delete, so the empty receives that find the queue drained do not count.
    const drained = stopNs < end;
    const elapsed = Number((drained ? lastDeleteNs : stopNs) - t0) / 1e9;
    errors.into(res);
    res.durationS = elapsed;
    res.requests = receives + deletes;
    res.messages = deleted;
    res.reqPerSec = (receives + deletes) / elapsed;
    res.msgsPerSec = deleted / elapsed;
    res.latencyOf = 'request (receive and delete)';
    res.latency = hist.summaryMs();
    res.extra['drained'] = drained;
    res.extra['emptyReceives'] = emptyReceives;
    res.extra['depthAtEnd'] = await queueDepth(pool, codec, url);
  });
}

// ---------------------------------------------------------------- fifo

/** The FIFO variants: messages spread over many groups, or most of them in one hot group. */
const FIFO_VARIANTS = {
  'many groups': { groups: 1000, hotShare: 0 },
  'one hot group': { groups: 100, hotShare: 0.9 },
} as const;
type FifoVariant = keyof typeof FIFO_VARIANTS;

/**
 * A FIFO queue `depth` deep, filled by SendMessageBatch (each group by one client, so a group's
 * order is its send order), then drained by `clients` consumers: ReceiveMessage (10, long poll
 * 1 s: an empty receive is normal while the groups left are locked) + DeleteMessageBatch. Every
 * message received out of its group's order, or twice, is an error. msgs/s = deleted per second.
 */
async function fifo(
  cfg: BenchConfig,
  target: Target,
  protocol: Protocol,
  variant: FifoVariant,
): Promise<Result> {
  const { groups, hotShare } = FIFO_VARIANTS[variant];
  const res = newResult(target, protocol, 'fifo', variant);
  res.extra['depth'] = cfg.depth;
  res.extra['groups'] = groups;
  res.extra['hotShare'] = hotShare;
  return withServer(cfg, target, res, async ({ server, pool, codec }) => {
    const r = await pool.post(codec.createFifoQueue('bench-fifo.fifo'), true);
    if (r.status !== 200) throw new Error(`CreateQueue (FIFO): HTTP ${r.status} ${r.body.slice(0, 300)}`);
    const url = codec.parseQueueUrl(r.body);
    if (url === undefined) throw new Error(`CreateQueue (FIFO): no QueueUrl in ${r.body.slice(0, 300)}`);
    const errors = new Errors();

    // Message i: the hot group for hotShare of them (i % 10 below hotShare x 10), else one of `groups`.
    const groupOf = (i: number): string => (i % 10 < hotShare * 10 ? 'hot' : `g${i % groups}`);
    const perClient: Array<Array<{ body: string; group: string; dedup: string }>> = Array.from(
      { length: cfg.clients },
      () => [],
    );
    const nextIndex = new Map<string, number>();
    for (let i = 0; i < cfg.depth; i++) {
      const group = groupOf(i);
      const index = nextIndex.get(group) ?? 0;
      nextIndex.set(group, index + 1);
      // A group belongs to one client: hash of its name.
      let h = 0;
      for (let c = 0; c < group.length; c++) h = (h * 31 + group.charCodeAt(c)) >>> 0;
      perClient[h % cfg.clients]?.push({
        body: payload(cfg.bodySize, `${group}:${index}:`),
        group,
        dedup: `d${i}`,
      });
    }
    const fillStart = nowNs();
    let filled = 0;
    const fillDeadline = Date.now() + 300_000;
    await Promise.all(
      perClient.map(async (msgs) => {
        for (let i = 0; i < msgs.length && Date.now() < fillDeadline; i += 10) {
          const batch = msgs.slice(i, i + 10);
          const s = await post(pool, codec.sendFifoBatch(url, batch), true, errors, 'SendMessageBatch');
          if (!s) continue;
          const failed = codec.countBatchFailures(s.body);
          if (failed > 0) errors.add(`SendMessageBatch: ${failed} failed entries`);
          filled += batch.length - failed;
        }
      }),
    );
    res.extra['fillSeconds'] = Math.round(secondsSince(fillStart) * 100) / 100;
    res.extra['fillMsgsPerSec'] = Math.round(filled / secondsSince(fillStart));
    res.extra['depthAtStart'] = await queueDepth(pool, codec, url);

    const receiveReq = codec.receiveMessage(url, 10, 1);
    const hist = new Histogram();
    const last = new Map<string, number>();
    let receives = 0;
    let deletes = 0;
    let deleted = 0;
    let emptyReceives = 0;
    let outOfOrder = 0;
    let twice = 0;
    // CPU is read when the last message is deleted: the consumers still parked in their 1 s long
    // polls after that would count idle time into the window.
    let atDrain: MeterReading | undefined;
    res.serverRssBefore = readRss(server.pid);
    const meter = new Meter(server.pid);
    const t0 = nowNs();
    let lastDeleteNs = t0;
    const end = t0 + BigInt(Math.round(cfg.durationS * 1e9));
    await loops(cfg.clients, async () => {
      if (deleted >= filled) return false;
      const t1 = nowNs();
      if (t1 >= end) return false;
      const got = await post(pool, receiveReq, true, errors, 'ReceiveMessage');
      hist.recordSince(t1);
      if (!got) return true;
      receives++;
      const msgs = codec.parseMessages(got.body);
      if (msgs.length === 0) {
        if (deleted < filled) emptyReceives++;
        return true;
      }
      for (const m of msgs) {
        const [group = '', index = ''] = m.body.split(':');
        const want = (last.get(group) ?? -1) + 1;
        const n = Number(index);
        if (n < want) twice++;
        else if (n > want) outOfOrder++;
        last.set(group, Math.max(n, last.get(group) ?? -1));
      }
      const t2 = nowNs();
      const d = await post(
        pool,
        codec.deleteMessageBatch(
          url,
          msgs.map((m) => m.receiptHandle),
        ),
        true,
        errors,
        'DeleteMessageBatch',
      );
      hist.recordSince(t2);
      if (d) {
        deletes++;
        const failed = codec.countBatchFailures(d.body);
        if (failed > 0) errors.add(`DeleteMessageBatch: ${failed} failed entries`);
        deleted += msgs.length - failed;
        lastDeleteNs = nowNs();
        if (deleted >= filled) atDrain ??= meter.read();
      }
      return true;
    });
    const stopNs = nowNs();
    applyMeter(res, atDrain ?? meter.read());
    res.serverRssAfter = readRss(server.pid);
    if (outOfOrder > 0) errors.add(`${outOfOrder} messages received out of their group's order`);
    if (twice > 0) errors.add(`${twice} messages received twice`);
    errors.into(res);
    const drained = deleted >= filled;
    const elapsed = Number((drained ? lastDeleteNs : stopNs) - t0) / 1e9;
    res.durationS = elapsed;
    res.requests = receives + deletes;
    res.messages = deleted;
    res.reqPerSec = (receives + deletes) / elapsed;
    res.msgsPerSec = deleted / elapsed;
    res.latencyOf = 'request (receive and delete)';
    res.latency = hist.summaryMs();
    res.extra['drained'] = drained;
    res.extra['emptyReceives'] = emptyReceives;
    res.extra['outOfOrder'] = outOfOrder;
    res.extra['receivedTwice'] = twice;
  });
}

// ---------------------------------------------------------------- roundtrip

async function roundtrip(cfg: BenchConfig, target: Target, protocol: Protocol): Promise<Result> {
  const res = newResult(target, protocol, 'roundtrip', `${cfg.rate}/s`);
  res.extra['rate'] = cfg.rate;
  res.extra['consumers'] = cfg.consumers;
  return withServer(cfg, target, res, async ({ server, pool, codec }) => {
    const url = await createQueue(pool, codec, 'bench-roundtrip');
    const errors = new Errors();
    const consumerPool = new RawPool(server.host, server.port, cfg.consumers);
    const e2e = new Histogram();
    const sendHist = new Histogram();
    const pollReq = codec.receiveMessage(url, 10, 20);
    let stopping = false;
    let sent = 0;
    let sentMeasured = 0;
    let received = 0;
    let receivedMeasured = 0;
    let duplicates = 0;
    let measureFrom = nowNs() + BigInt(Math.round(cfg.warmupS * 1e9));
    const seen = new Set<string>();

    const consumers = loops(cfg.consumers, async () => {
      if (stopping) return false;
      let r: Reply;
      try {
        r = await consumerPool.post(pollReq, true);
      } catch (err) {
        if (!stopping) errors.add(`ReceiveMessage: ${(err as Error).message}`);
        return !stopping;
      }
      const t = nowNs();
      if (!errors.check('ReceiveMessage', r)) return !stopping;
      const msgs = codec.parseMessages(r.body);
      for (const m of msgs) {
        const colon = m.body.indexOf(':');
        const stamp = m.body.slice(0, colon);
        if (seen.has(stamp)) {
          duplicates++;
          continue;
        }
        seen.add(stamp);
        received++;
        const sentAt = BigInt(stamp);
        if (sentAt >= measureFrom) {
          receivedMeasured++;
          e2e.record(Number(t - sentAt) / 1000);
        }
      }
      if (msgs.length > 0) {
        // Delete in the background: the next long poll goes out at once.
        void post(
          pool,
          codec.deleteMessageBatch(
            url,
            msgs.map((m) => m.receiptHandle),
          ),
          true,
          errors,
          'DeleteMessageBatch',
        ).then((d) => {
          const failed = d ? codec.countBatchFailures(d.body) : 0;
          if (failed > 0) errors.add(`DeleteMessageBatch: ${failed} failed entries`);
        });
      }
      return !stopping;
    });

    // Let the long polls reach the server before the first send.
    await sleep(200);
    measureFrom = nowNs() + BigInt(Math.round(cfg.warmupS * 1e9));
    res.serverRssBefore = readRss(server.pid);
    const start = nowNs();
    const produceEnd = measureFrom + BigInt(Math.round(cfg.durationS * 1e9));
    const inflight = new Set<Promise<void>>();
    let meter = new Meter(server.pid);
    let cpuMarked = false;
    while (nowNs() < produceEnd) {
      const now = nowNs();
      if (!cpuMarked && now >= measureFrom) {
        meter = new Meter(server.pid);
        cpuMarked = true;
      }
      const due = Math.floor((Number(now - start) / 1e9) * cfg.rate) - sent;
      for (let i = 0; i < due; i++) {
        const stamp = nowNs();
        const t0 = stamp;
        const measuredMsg = stamp >= measureFrom;
        sent++;
        if (measuredMsg) sentMeasured++;
        const p = post(
          pool,
          codec.sendMessage(url, payload(cfg.bodySize, `${stamp}:`)),
          false,
          errors,
          'SendMessage',
        )
          .then(() => {
            if (measuredMsg) sendHist.recordSince(t0);
          })
          .finally(() => inflight.delete(p));
        inflight.add(p);
      }
      await sleep(1);
    }
    const measuredS = Number(nowNs() - measureFrom) / 1e9;
    await Promise.all(inflight);
    // Wait (bounded) for the last messages to come back.
    const graceEnd = Date.now() + 5_000;
    while (received < sent && Date.now() < graceEnd) await sleep(5);
    applyMeter(res, meter.read());
    res.serverRssAfter = readRss(server.pid);
    stopping = true;
    consumerPool.destroy();
    await consumers;
    if (received < sent)
      errors.add(`${sent - received} of ${sent} messages sent were not received within 5 s`);
    if (duplicates > 0) res.extra['duplicates'] = duplicates;
    errors.into(res);
    res.durationS = measuredS;
    res.messages = receivedMeasured;
    res.requests = null;
    res.msgsPerSec = receivedMeasured / measuredS;
    res.extra['sent'] = sentMeasured;
    res.latencyOf = 'end to end (send → receive)';
    res.latency = e2e.summaryMs();
    const s = sendHist.summaryMs();
    res.extra['sendP50Ms'] = s.p50;
    res.extra['sendP99Ms'] = s.p99;
  });
}

// ---------------------------------------------------------------- idle-long-polls

async function idleLongPolls(cfg: BenchConfig, target: Target, protocol: Protocol): Promise<Result> {
  const res = newResult(target, protocol, 'idle-long-polls', `${cfg.polls} polls`);
  res.extra['polls'] = cfg.polls;
  return withServer(cfg, target, res, async ({ server, pool, codec }) => {
    const url = await createQueue(pool, codec, 'bench-idle');
    const errors = new Errors();
    // Warm the send/receive/delete paths once.
    for (let i = 0; i < 20; i++) {
      await post(pool, codec.sendMessage(url, payload(cfg.bodySize, 'warm:')), false, errors, 'SendMessage');
      const r = await post(pool, codec.receiveMessage(url, 10, 0), true, errors, 'ReceiveMessage');
      const msgs = r ? codec.parseMessages(r.body) : [];
      if (msgs.length > 0) {
        await post(
          pool,
          codec.deleteMessageBatch(
            url,
            msgs.map((m) => m.receiptHandle),
          ),
          false,
          errors,
          'DeleteMessageBatch',
        );
      }
    }
    await sleep(500);
    const rssBefore = readRss(server.pid);
    res.serverRssBefore = rssBefore;

    const pollPool = new RawPool(server.host, server.port, cfg.polls);
    const pollReq = codec.receiveMessage(url, 1, 20);
    let stopping = false;
    let idlePhase = false;
    let returnedWhileIdle = 0;
    let woken: ((t: bigint) => void) | undefined;
    const polls = loops(cfg.polls, async () => {
      if (stopping) return false;
      let r: Reply;
      try {
        r = await pollPool.post(pollReq, true);
      } catch (err) {
        if (!stopping) errors.add(`ReceiveMessage (long poll): ${(err as Error).message}`);
        if (!stopping) await sleep(100);
        return !stopping;
      }
      const t = nowNs();
      if (idlePhase) returnedWhileIdle++;
      if (!errors.check('ReceiveMessage', r)) return !stopping;
      const msgs = codec.parseMessages(r.body);
      if (msgs.length > 0) {
        woken?.(t);
        await post(
          pool,
          codec.deleteMessageBatch(
            url,
            msgs.map((m) => m.receiptHandle),
          ),
          false,
          errors,
          'DeleteMessageBatch',
        );
      }
      return !stopping;
    });

    // Wait for every poll's connection, then give the server a moment to park them.
    const openDeadline = Date.now() + 15_000;
    while (pollPool.connections < cfg.polls && Date.now() < openDeadline) await sleep(20);
    // ... and until the server has stopped working on them (its CPU under 5 % for 500 ms; at most 10 s).
    await sleep(1_000);
    const settleDeadline = Date.now() + 10_000;
    for (;;) {
      const m = new Meter(server.pid);
      await sleep(500);
      if (m.read().serverCpuPct < 5 || Date.now() > settleDeadline) break;
    }
    res.extra['connections'] = pollPool.connections;
    idlePhase = true;
    const meter = new Meter(server.pid);
    await sleep(cfg.durationS * 1000);
    applyMeter(res, meter.read());
    idlePhase = false;
    const rssAfter = readRss(server.pid);
    res.serverRssAfter = rssAfter;
    res.extra['rssIncreaseMiB'] = Math.round(((rssAfter - rssBefore) / 2 ** 20) * 100) / 100;
    res.extra['returnedWhileIdle'] = returnedWhileIdle;
    res.durationS = cfg.durationS;

    // Wake-ups: one message at a time; time from issuing the SendMessage to a poll returning it.
    const wake = new Histogram();
    let missed = 0;
    for (let i = 0; i < cfg.wakeups; i++) {
      const t0 = nowNs();
      const got = new Promise<bigint | undefined>((resolve) => {
        const timer = setTimeout(() => resolve(undefined), 5_000);
        woken = (t) => {
          clearTimeout(timer);
          resolve(t);
        };
      });
      await post(
        pool,
        codec.sendMessage(url, payload(cfg.bodySize, `wake${i}:`)),
        false,
        errors,
        'SendMessage',
      );
      const t = await got;
      woken = undefined;
      if (t === undefined) missed++;
      else wake.record(Number(t - t0) / 1000);
      await sleep(20);
    }
    if (missed > 0)
      errors.add(`${missed} of ${cfg.wakeups} wake-ups: no poll returned the message within 5 s`);
    stopping = true;
    pollPool.destroy();
    await polls;
    errors.into(res);
    res.latencyOf = 'wake-up (send issued → poll returns it)';
    res.latency = wake.summaryMs();
    res.messages = wake.count;
  });
}

// ---------------------------------------------------------------- memory

function metricValue(text: string | undefined, name: string): number | null {
  if (!text) return null;
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)`, 'm').exec(text);
  return m?.[1] !== undefined ? Number(m[1]) : null;
}

async function memory(cfg: BenchConfig, target: Target, protocol: Protocol): Promise<Result> {
  const res = newResult(target, protocol, 'memory', `${cfg.queues} queues, ${cfg.messages} msgs`);
  res.extra['queues'] = cfg.queues;
  res.extra['messages'] = cfg.messages;
  return withServer(
    cfg,
    target,
    res,
    async ({ server, pool, codec }) => {
      const errors = new Errors();
      const meter = new Meter(server.pid);
      const snapshot = async (): Promise<{ rss: number; heap: number | null }> => {
        const heap = await server.heapAfterGc();
        if (heap === null) errors.add('no heap figure from the server after SIGUSR2');
        return { rss: readRss(server.pid), heap };
      };
      // Warm every code path used below, so what is measured is the data, not first-use allocations.
      const warmUrl = await createQueue(pool, codec, 'mem-warm');
      for (let i = 0; i < 5; i++) await createQueue(pool, codec, `mem-warm-${i}`);
      await fill(pool, codec, warmUrl, 1_000, cfg.bodySize, cfg.clients, errors, 60);
      const msgUrl = await createQueue(pool, codec, 'mem-messages');

      const s0 = await snapshot();
      let next = 0;
      await loops(cfg.clients, async () => {
        if (next >= cfg.queues) return false;
        const i = next++;
        await post(pool, codec.createQueue(`mem-q-${i}`), false, errors, 'CreateQueue');
        return true;
      });
      const s1 = await snapshot();
      const sent = await fill(pool, codec, msgUrl, cfg.messages, cfg.bodySize, cfg.clients, errors, 300);
      const s2 = await snapshot();
      applyMeter(res, meter.read());
      errors.into(res);
      res.serverRssBefore = s0.rss;
      res.serverRssAfter = s2.rss;
      res.messages = sent;
      const per = (a: number | null, b: number | null, n: number): number | null =>
        a === null || b === null || !Number.isFinite(a) || !Number.isFinite(b) || n <= 0
          ? null
          : Math.round((b - a) / n);
      res.extra['rssPerQueue'] = per(s0.rss, s1.rss, cfg.queues);
      res.extra['heapPerQueue'] = per(s0.heap, s1.heap, cfg.queues);
      res.extra['rssPerMessage'] = per(s1.rss, s2.rss, sent);
      res.extra['heapPerMessage'] = per(s1.heap, s2.heap, sent);
      res.extra['heapBefore'] = s0.heap;
      res.extra['heapAfterQueues'] = s1.heap;
      res.extra['heapAfterMessages'] = s2.heap;
      res.extra['rssAfterQueues'] = s1.rss;
    },
    { ...cfg.launch, gcProbe: true },
  );
}

// ---------------------------------------------------------------- cold-start

async function coldStart(cfg: BenchConfig, target: Target, protocol: Protocol): Promise<Result> {
  const res = newResult(target, protocol, 'cold-start', `${cfg.coldRuns} runs`);
  const errors = new Errors();
  const times = new Histogram();
  const samples: number[] = [];
  const rss: number[] = [];
  for (let run = 0; run < cfg.coldRuns; run++) {
    let server: Server | undefined;
    try {
      server = await launch(target, cfg.launch);
      const codec = new SqsCodec(protocol, server.hostHeader);
      const req = codec.listQueues();
      const deadline = Date.now() + 15_000;
      let ok = false;
      while (!ok) {
        if (server.exited) throw new Error(`exited:\n${server.outputTail()}`);
        if (Date.now() > deadline)
          throw new Error(`no 200 on ListQueues within 15 s:\n${server.outputTail()}`);
        const probe = new RawPool(server.host, server.port, 1);
        try {
          const r = await probe.post(req, true);
          if (r.status === 200) ok = true;
          else await sleep(2);
        } catch {
          await sleep(2);
        } finally {
          probe.destroy();
        }
      }
      const us = Number(nowNs() - server.startedAtNs) / 1000;
      times.record(us);
      samples.push(us / 1000);
      rss.push(readRss(server.pid));
    } catch (err) {
      errors.add(`cold start: ${(err as Error).message}`);
    } finally {
      await server?.stop();
    }
  }
  errors.into(res);
  samples.sort((a, b) => a - b);
  const median = samples.length ? samples[Math.floor((samples.length - 1) / 2)]! : null;
  res.latencyOf = 'spawn → first 200 on ListQueues';
  res.latency = times.summaryMs();
  res.extra['medianMs'] = median === null ? null : Math.round(median * 10) / 10;
  res.extra['minMs'] = samples.length ? Math.round(samples[0]! * 10) / 10 : null;
  res.extra['maxMs'] = samples.length ? Math.round(samples[samples.length - 1]! * 10) / 10 : null;
  res.extra['runs'] = samples.length;
  res.serverRssAfter = rss.length ? rss[Math.floor((rss.length - 1) / 2)]! : null;
  return res;
}

/** The budget back-pressure runs with: small, so that filling it takes seconds. */
const BACK_PRESSURE_BUDGET_MIB = 64;

/**
 * SendMessageBatch of 3 x 256 KiB from one connection, no consumer, into a server with
 * `--max-memory 64mb`, until the first refusal: the bytes accepted against the budget, the
 * refusal's status and code, the server's RSS and its budget usage then.
 */
async function backPressure(cfg: BenchConfig, target: Target, protocol: Protocol): Promise<Result> {
  const res = newResult(target, protocol, 'back-pressure', `--max-memory ${BACK_PRESSURE_BUDGET_MIB}mb`);
  const budget = ['--max-memory', `${BACK_PRESSURE_BUDGET_MIB}mb`];
  const launchOptions = { ...cfg.launch, sharedSqsArgs: [...cfg.launch.sharedSqsArgs, ...budget] };
  return withServer(
    cfg,
    target,
    res,
    async ({ server, pool, codec }) => {
      const errors = new Errors();
      const url = await createQueue(pool, codec, 'back-pressure');
      const body = 'p'.repeat(256 * 1024);
      const budget = BACK_PRESSURE_BUDGET_MIB * 1024 * 1024;
      res.serverRssBefore = readRss(server.pid);
      const started = nowNs();
      let accepted = 0;
      let requests = 0;
      let refusal: Reply | undefined;
      while (refusal === undefined && accepted < 4 * budget) {
        const r = await pool.post(codec.sendMessageBatch(url, [body, body, body]), true);
        requests++;
        if (r.status === 200) accepted += 3 * body.length;
        else refusal = r;
      }
      res.durationS = Number(nowNs() - started) / 1e9;
      res.requests = requests;
      res.messages = accepted / body.length;
      res.serverRssAfter = readRss(server.pid);
      const metrics = await server.metrics();
      res.extra['budgetBytes'] = budget;
      res.extra['acceptedBytes'] = accepted;
      res.extra['acceptedPctOfBudget'] = Math.round((accepted / budget) * 1000) / 10;
      res.extra['usedBytesAtRefusal'] = metricValue(metrics, 'sqs_memory_used_bytes');
      res.extra['refusalStatus'] = refusal?.status ?? null;
      res.extra['refusalCode'] = /RequestThrottled/.test(refusal?.body ?? '') ? 'RequestThrottled' : null;
      if (refusal === undefined) errors.add(`back-pressure: ${accepted} bytes accepted and never refused`);
      errors.into(res);
    },
    launchOptions,
  );
}

// ----------------------------------------------------------------

export async function runScenario(
  cfg: BenchConfig,
  target: Target,
  protocol: Protocol,
  scenario: ScenarioName,
): Promise<Result[]> {
  switch (scenario) {
    case 'send':
    case 'send-batch':
      return [await throughput(cfg, target, protocol, scenario)];
    case 'receive-delete': {
      const out = [await receiveDelete(cfg, target, protocol, cfg.depth)];
      if (cfg.deepDepth > 0 && cfg.deepDepth !== cfg.depth) {
        out.push(await receiveDelete(cfg, target, protocol, cfg.deepDepth));
      }
      return out;
    }
    case 'fifo':
      return [
        await fifo(cfg, target, protocol, 'many groups'),
        await fifo(cfg, target, protocol, 'one hot group'),
      ];
    case 'roundtrip':
      return [await roundtrip(cfg, target, protocol)];
    case 'idle-long-polls':
      return [await idleLongPolls(cfg, target, protocol)];
    case 'back-pressure':
      return [await backPressure(cfg, target, protocol)];
    case 'memory':
      return [await memory(cfg, target, protocol)];
    case 'cold-start':
      return [await coldStart(cfg, target, protocol)];
  }
}
