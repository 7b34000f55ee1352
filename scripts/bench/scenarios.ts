/**
 * The benchmark scenarios. Each one runs against a freshly started server and returns one or more
 * Results; see scripts/bench.ts --help for what each measures.
 */
import { sleep } from '../../test/support/process.js';
import { REDIS_WORK_INFO, redisWorkPerMessage } from '../../test/support/redis.js';
import { Histogram, median, type LatencySummary } from './histogram.js';
import { Meter, readRss, type MeterReading } from './meter.js';
import { RawPool, type Reply } from './rawhttp.js';
import { SqsCodec, type FifoEntry, type Protocol, type ReceivedMessage } from './sqs.js';
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
  /** send, send-batch: the queues the clients send to, client i to queue i mod sendQueues. */
  sendQueues: number;
  messages: number;
  coldRuns: number;
  bodySize: number;
  launch: LaunchOptions;
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
  /** CPU used by everything else on the machine meanwhile (see meter.Meter): high = noisy figures. */
  otherCpuPct: number | null;
  /** Of otherCpuPct, the hypervisor's steal (see MeterReading). */
  stealCpuPct: number | null;
  /** Scenario-specific figures (bytes per queue, wake-up latency, ...). */
  extra: Record<string, number | string | boolean | null>;
}

function newResult(target: Target, protocol: Protocol, scenario: ScenarioName, variant = ''): Result {
  return {
    ...{ target: target.name, protocol, scenario, variant, errors: 0, errorSamples: [] },
    ...{ durationS: null, requests: null, messages: null, reqPerSec: null, msgsPerSec: null },
    ...{ latencyOf: null, latency: null, serverRssBefore: null, serverRssAfter: null },
    ...{ serverCpuPct: null, loadCpuPct: null, otherCpuPct: null, stealCpuPct: null, extra: {} },
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
const after = (seconds: number): bigint => nowNs() + BigInt(Math.round(seconds * 1e9));

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

interface Harness {
  server: Server;
  pool: RawPool;
  codec: SqsCodec;
  errors: Errors;
}

/** A request; a transport error or a non-2xx reply is recorded and gives undefined. */
async function post(h: Harness, req: Buffer, action: string, wantBody = true): Promise<Reply | undefined> {
  try {
    const r = await h.pool.post(req, wantBody);
    if (r.status >= 200 && r.status < 300) return r;
    h.errors.add(`${action}: HTTP ${r.status} ${r.body}`);
  } catch (err) {
    h.errors.add(`${action}: ${(err as Error).message}`);
  }
  return undefined;
}

/** A SendMessageBatch or DeleteMessageBatch of `n` entries: how many succeeded (failures recorded). */
async function batch(h: Harness, req: Buffer, action: string, n: number): Promise<number> {
  const r = await post(h, req, action);
  if (!r) return 0;
  const failed = h.codec.countBatchFailures(r.body);
  if (failed > 0) h.errors.add(`${action}: ${failed} failed entries`);
  return n - failed;
}

const deleteAll = (h: Harness, url: string, msgs: readonly ReceivedMessage[]): Promise<number> =>
  batch(
    h,
    h.codec.deleteMessageBatch(
      url,
      msgs.map((m) => m.receiptHandle),
    ),
    'DeleteMessageBatch',
    msgs.length,
  );

async function createQueue(h: Harness, name: string, fifo = false): Promise<string> {
  const r = await h.pool.post(fifo ? h.codec.createFifoQueue(name) : h.codec.createQueue(name), true);
  const url = r.status === 200 ? h.codec.parseQueueUrl(r.body) : undefined;
  if (!url) throw new Error(`CreateQueue ${name}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
  return url;
}

/** Fill a queue with `count` messages by SendMessageBatch from every client (bounded in time). */
async function fill(
  h: Harness,
  url: string,
  count: number,
  cfg: BenchConfig,
  timeoutS = 300,
): Promise<number> {
  const req = h.codec.sendMessageBatch(
    url,
    Array.from({ length: 10 }, () => payload(cfg.bodySize)),
  );
  let next = 0;
  let sent = 0;
  const deadline = Date.now() + timeoutS * 1000;
  await loops(cfg.clients, async () => {
    if (next >= Math.ceil(count / 10) || Date.now() > deadline) return false;
    next++;
    const n = await batch(h, req, 'SendMessageBatch', 10);
    sent += n;
    return true;
  });
  if (sent < count) h.errors.add(`fill: ${sent} of ${count} messages sent in ${timeoutS} s`);
  return sent;
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
  const errors = new Errors();
  try {
    server = await launch(target, launchOptions);
    await server.waitReady();
    pool = new RawPool(server.host, server.port, cfg.clients);
    await fn({ server, pool, codec: new SqsCodec(res.protocol, server.hostHeader), errors });
    if (server.exited) throw new Error(`server exited during the run:\n${server.outputTail()}`);
  } catch (err) {
    errors.add(`run failed: ${(err as Error).message}`);
  } finally {
    // Before the pool goes: requests it aborts then (a roundtrip's last deletes) are no errors.
    errors.into(res);
    pool?.destroy();
    await server?.stop();
  }
  return res;
}

/** Measures from now: server RSS and CPU, and Redis's work; `done` writes them and the rates into `res`. */
function measure(res: Result, server: Server) {
  res.serverRssBefore = readRss(server.pid);
  const meter = new Meter(server.pid);
  const redisInfo = async () => server.redis[0]?.client.info(...REDIS_WORK_INFO).catch(() => undefined);
  const [t0, redisBefore] = [nowNs(), redisInfo()];
  return async (requests: number, messages: number, until = nowNs()): Promise<void> => {
    applyMeter(res, meter.read());
    res.serverRssAfter = readRss(server.pid);
    const [a, b] = [await redisBefore, await redisInfo()];
    if (a !== undefined && b !== undefined) Object.assign(res.extra, redisWorkPerMessage(a, b, messages));
    const s = Number(until - t0) / 1e9;
    Object.assign(res, {
      durationS: s,
      requests,
      messages,
      reqPerSec: requests / s,
      msgsPerSec: messages / s,
    });
  };
}

// ---------------------------------------------------------------- send, send-batch

async function throughput(
  cfg: BenchConfig,
  target: Target,
  protocol: Protocol,
  scenario: 'send' | 'send-batch',
) {
  const res = newResult(target, protocol, scenario, cfg.sendQueues > 1 ? `${cfg.sendQueues} queues` : '');
  const isBatch = scenario === 'send-batch';
  return withServer(cfg, target, res, async (h) => {
    const bodies = Array.from({ length: isBatch ? 10 : 1 }, () => payload(cfg.bodySize));
    const reqs: Buffer[] = [];
    for (let i = 0; i < cfg.sendQueues; i++) {
      const url = await createQueue(h, `bench-${scenario}${i || ''}`);
      reqs.push(isBatch ? h.codec.sendMessageBatch(url, bodies) : h.codec.sendMessage(url, bodies[0]!));
    }
    const hist = new Histogram();
    let requests = 0;
    let messages = 0;
    const run = async (seconds: number, record: boolean): Promise<void> => {
      const end = after(seconds);
      await loops(cfg.clients, async (client) => {
        const [t0, req] = [nowNs(), reqs[client % reqs.length]!];
        if (t0 >= end) return false;
        // Batch replies are read (to count failed entries); single sends only need the status.
        const sent = isBatch
          ? await batch(h, req, 'SendMessageBatch', 10)
          : (await post(h, req, 'SendMessage', false))
            ? 1
            : 0;
        if (record) {
          hist.recordSince(t0);
          requests += sent > 0 ? 1 : 0;
          messages += sent;
        }
        return true;
      });
    };
    // Errors during the warm-up count too: any error flags the run.
    await run(cfg.warmupS, false);
    const done = measure(res, h.server);
    await run(cfg.durationS, true);
    await done(requests, messages);
    res.latencyOf = 'request';
    res.latency = hist.summaryMs();
  });
}

// ---------------------------------------------------------------- receive-delete, fifo

/**
 * `clients` consumers loop ReceiveMessage + DeleteMessageBatch until `want` messages are deleted,
 * a receive comes back empty (with `stopWhenEmpty`) or `end` is reached; `seen` sees every message
 * received. Returns the counts and when the last delete came back.
 */
async function drain(
  h: Harness,
  cfg: BenchConfig,
  url: string,
  o: { want: number; end: bigint; waitS: number; stopWhenEmpty: boolean; hist?: Histogram },
  seen: (m: ReceivedMessage) => void = () => undefined,
): Promise<{ requests: number; deleted: number; empty: number; lastDeleteNs: bigint }> {
  const req = h.codec.receiveMessage(url, 10, o.waitS);
  const out = { requests: 0, deleted: 0, empty: 0, lastDeleteNs: nowNs() };
  await loops(cfg.clients, async () => {
    const t0 = nowNs();
    if (out.deleted >= o.want || t0 >= o.end) return false;
    const r = await post(h, req, 'ReceiveMessage');
    o.hist?.recordSince(t0);
    out.requests++;
    if (!r) return true;
    const msgs = h.codec.parseMessages(r.body);
    if (msgs.length === 0) {
      out.empty++;
      // Drained: the messages other clients hold are invisible.
      return !o.stopWhenEmpty;
    }
    msgs.forEach(seen);
    const t1 = nowNs();
    const deleted = await deleteAll(h, url, msgs);
    out.deleted += deleted;
    o.hist?.recordSince(t1);
    out.requests++;
    out.lastDeleteNs = nowNs();
    return true;
  });
  return out;
}

async function receiveDelete(cfg: BenchConfig, target: Target, protocol: Protocol, depth: number) {
  const res = newResult(target, protocol, 'receive-delete', `${depth} deep`);
  return withServer(cfg, target, res, async (h) => {
    const url = await createQueue(h, 'bench-receive-delete');
    // Warm the receive/delete path on extra messages first, then measure from exactly `depth` deep;
    // the same warm-up at every depth, so the deep/shallow ratio compares depths, not JIT progress.
    const warm = Math.min(5_000, depth);
    const fillStart = nowNs();
    const filled = await fill(h, url, depth + warm, cfg);
    res.extra['fillMsgsPerSec'] = Math.round(filled / secondsSince(fillStart));
    await drain(h, cfg, url, { want: warm, end: after(60), waitS: 0, stopWhenEmpty: true });
    const hist = new Histogram();
    const done = measure(res, h.server);
    const end = after(cfg.durationS);
    const d = await drain(h, cfg, url, { want: Infinity, end, waitS: 0, stopWhenEmpty: true, hist });
    // Up to the last delete, so the empty receives that find the queue drained do not count.
    const drained = nowNs() < end;
    await done(d.requests, d.deleted, drained ? d.lastDeleteNs : undefined);
    res.latencyOf = 'request (receive and delete)';
    res.latency = hist.summaryMs();
    res.extra['drained'] = drained;
  });
}

/** The FIFO variants: messages spread over many groups, or most of them in one hot group. */
const FIFO_VARIANTS = {
  'many groups': { groups: 1000, hotShare: 0 },
  'one hot group': { groups: 100, hotShare: 0.9 },
} as const;

/**
 * A FIFO queue `depth` deep, filled by SendMessageBatch (each group by one client, so a group's
 * order is its send order), then drained (long poll 1 s: an empty receive is normal while the
 * groups left are locked). A message received out of its group's order, or twice, is an error.
 */
async function fifo(
  cfg: BenchConfig,
  target: Target,
  protocol: Protocol,
  variant: keyof typeof FIFO_VARIANTS,
) {
  const { groups, hotShare } = FIFO_VARIANTS[variant];
  const res = newResult(target, protocol, 'fifo', variant);
  Object.assign(res.extra, { groups, hotShare });
  return withServer(cfg, target, res, async (h) => {
    const url = await createQueue(h, 'bench-fifo.fifo', true);
    const perClient = Array.from({ length: cfg.clients }, () => [] as FifoEntry[]);
    const nextIndex = new Map<string, number>();
    for (let i = 0; i < cfg.depth; i++) {
      const group = i % 10 < hotShare * 10 ? 'hot' : `g${i % groups}`;
      const index = nextIndex.get(group) ?? 0;
      nextIndex.set(group, index + 1);
      let hash = 0;
      for (let c = 0; c < group.length; c++) hash = (hash * 31 + group.charCodeAt(c)) >>> 0;
      perClient[hash % cfg.clients]?.push({
        body: payload(cfg.bodySize, `${group}:${index}:`),
        group,
        dedup: `d${i}`,
      });
    }
    const fillStart = nowNs();
    let filled = 0;
    await Promise.all(
      perClient.map(async (msgs) => {
        for (let i = 0; i < msgs.length; i += 10) {
          const entries = msgs.slice(i, i + 10);
          const n = await batch(
            h,
            h.codec.sendMessageBatch(url, entries),
            'SendMessageBatch',
            entries.length,
          );
          filled += n;
        }
      }),
    );
    res.extra['fillMsgsPerSec'] = Math.round(filled / secondsSince(fillStart));
    const last = new Map<string, number>();
    let outOfOrder = 0;
    let twice = 0;
    const seen = (m: ReceivedMessage): void => {
      const [group = '', index = ''] = m.body.split(':');
      const want = (last.get(group) ?? -1) + 1;
      if (Number(index) < want) twice++;
      else if (Number(index) > want) outOfOrder++;
      last.set(group, Math.max(Number(index), want - 1));
    };
    const hist = new Histogram();
    const done = measure(res, h.server);
    const opts = { want: filled, end: after(cfg.durationS), waitS: 1, stopWhenEmpty: false, hist };
    const d = await drain(h, cfg, url, opts, seen);
    const drained = d.deleted >= filled;
    // Up to the last delete: the consumers still parked in their 1 s long polls would count idle time.
    await done(d.requests, d.deleted, drained ? d.lastDeleteNs : undefined);
    if (outOfOrder > 0) h.errors.add(`${outOfOrder} messages received out of their group's order`);
    if (twice > 0) h.errors.add(`${twice} messages received twice`);
    res.latencyOf = 'request (receive and delete)';
    res.latency = hist.summaryMs();
    Object.assign(res.extra, { drained, emptyReceives: d.empty });
  });
}

// ---------------------------------------------------------------- roundtrip

async function roundtrip(cfg: BenchConfig, target: Target, protocol: Protocol): Promise<Result> {
  const res = newResult(target, protocol, 'roundtrip', `${cfg.rate}/s`);
  Object.assign(res.extra, { rate: cfg.rate, consumers: cfg.consumers });
  return withServer(cfg, target, res, async (h) => {
    const url = await createQueue(h, 'bench-roundtrip');
    const consumerPool = new RawPool(h.server.host, h.server.port, cfg.consumers);
    const e2e = new Histogram();
    const sendHist = new Histogram();
    const pollReq = h.codec.receiveMessage(url, 10, 20);
    let stopping = false;
    let sent = 0;
    let received = 0;
    let receivedMeasured = 0;
    let measureFrom = after(3600);
    const seen = new Set<string>();

    const consumers = loops(cfg.consumers, async () => {
      let r: Reply;
      try {
        r = await consumerPool.post(pollReq, true);
      } catch (err) {
        if (!stopping) h.errors.add(`ReceiveMessage: ${(err as Error).message}`);
        return !stopping;
      }
      const t = nowNs();
      if (r.status !== 200) h.errors.add(`ReceiveMessage: HTTP ${r.status} ${r.body}`);
      const msgs = r.status === 200 ? h.codec.parseMessages(r.body) : [];
      for (const m of msgs) {
        const stamp = m.body.slice(0, m.body.indexOf(':'));
        if (seen.has(stamp)) continue;
        seen.add(stamp);
        received++;
        if (BigInt(stamp) >= measureFrom) {
          receivedMeasured++;
          e2e.record(Number(t - BigInt(stamp)) / 1000);
        }
      }
      // Delete in the background: the next long poll goes out at once.
      if (msgs.length > 0) void deleteAll(h, url, msgs);
      return !stopping;
    });

    // Let the long polls reach the server before the first send.
    await sleep(200);
    const start = nowNs();
    measureFrom = after(cfg.warmupS);
    const produceEnd = measureFrom + BigInt(Math.round(cfg.durationS * 1e9));
    const inflight = new Set<Promise<void>>();
    let done: ReturnType<typeof measure> | undefined;
    while (nowNs() < produceEnd) {
      if (done === undefined && nowNs() >= measureFrom) done = measure(res, h.server);
      const due = Math.floor(secondsSince(start) * cfg.rate) - sent;
      for (let i = 0; i < due; i++) {
        const t0 = nowNs();
        sent++;
        const p = post(h, h.codec.sendMessage(url, payload(cfg.bodySize, `${t0}:`)), 'SendMessage', false)
          .then(() => (t0 >= measureFrom ? sendHist.recordSince(t0) : undefined))
          .finally(() => inflight.delete(p));
        inflight.add(p);
      }
      await sleep(1);
    }
    await Promise.all(inflight);
    // Wait (bounded) for the last messages to come back.
    const graceEnd = Date.now() + 5_000;
    while (received < sent && Date.now() < graceEnd) await sleep(5);
    await done?.(0, receivedMeasured, produceEnd);
    res.requests = res.reqPerSec = null;
    stopping = true;
    consumerPool.destroy();
    await consumers;
    if (received < sent)
      h.errors.add(`${sent - received} of ${sent} messages sent were not received within 5 s`);
    res.latencyOf = 'end to end (send → receive)';
    res.latency = e2e.summaryMs();
    res.extra['sendP50Ms'] = sendHist.summaryMs().p50;
  });
}

// ---------------------------------------------------------------- idle-long-polls

async function idleLongPolls(cfg: BenchConfig, target: Target, protocol: Protocol): Promise<Result> {
  const res = newResult(target, protocol, 'idle-long-polls', `${cfg.polls} polls`);
  return withServer(cfg, target, res, async (h) => {
    const url = await createQueue(h, 'bench-idle');
    // Warm the send/receive/delete paths once.
    for (let i = 0; i < 20; i++) {
      await post(h, h.codec.sendMessage(url, payload(cfg.bodySize, 'warm:')), 'SendMessage', false);
      const r = await post(h, h.codec.receiveMessage(url, 10, 0), 'ReceiveMessage');
      const msgs = r ? h.codec.parseMessages(r.body) : [];
      if (msgs.length > 0) await deleteAll(h, url, msgs);
    }
    await sleep(500);
    const rssBefore = readRss(h.server.pid);
    const pollPool = new RawPool(h.server.host, h.server.port, cfg.polls);
    const pollReq = h.codec.receiveMessage(url, 1, 20);
    let stopping = false;
    let returnedWhileIdle = 0;
    let idle = false;
    let woken: ((t: bigint) => void) | undefined;
    const polls = loops(cfg.polls, async () => {
      let r: Reply;
      try {
        r = await pollPool.post(pollReq, true);
      } catch (err) {
        if (!stopping) h.errors.add(`ReceiveMessage (long poll): ${(err as Error).message}`);
        if (!stopping) await sleep(100);
        return !stopping;
      }
      const t = nowNs();
      if (idle) returnedWhileIdle++;
      if (r.status !== 200) h.errors.add(`ReceiveMessage: HTTP ${r.status} ${r.body}`);
      const msgs = r.status === 200 ? h.codec.parseMessages(r.body) : [];
      if (msgs.length > 0) {
        woken?.(t);
        await deleteAll(h, url, msgs);
      }
      return !stopping;
    });

    // Wait for every poll's connection, then until the server has stopped working on them (its
    // CPU under 5 % for 500 ms; at most 10 s).
    const openDeadline = Date.now() + 15_000;
    while (pollPool.connections < cfg.polls && Date.now() < openDeadline) await sleep(20);
    await sleep(1_000);
    const settleDeadline = Date.now() + 10_000;
    for (;;) {
      const m = new Meter(h.server.pid);
      await sleep(500);
      if (m.read().serverCpuPct < 5 || Date.now() > settleDeadline) break;
    }
    res.extra['connections'] = pollPool.connections;
    idle = true;
    const done = measure(res, h.server);
    await sleep(cfg.durationS * 1000);
    await done(0, 0);
    idle = false;
    res.serverRssBefore = rssBefore;
    res.extra['rssIncreaseMiB'] = Math.round((((res.serverRssAfter ?? 0) - rssBefore) / 2 ** 20) * 100) / 100;
    res.extra['returnedWhileIdle'] = returnedWhileIdle;
    res.requests = res.messages = res.reqPerSec = res.msgsPerSec = null;

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
      await post(h, h.codec.sendMessage(url, payload(cfg.bodySize, `wake${i}:`)), 'SendMessage', false);
      const t = await got;
      woken = undefined;
      if (t === undefined) missed++;
      else wake.record(Number(t - t0) / 1000);
      await sleep(20);
    }
    if (missed > 0)
      h.errors.add(`${missed} of ${cfg.wakeups} wake-ups: no poll returned the message within 5 s`);
    stopping = true;
    pollPool.destroy();
    await polls;
    res.latencyOf = 'wake-up (send issued → poll returns it)';
    res.latency = wake.summaryMs();
  });
}

// ---------------------------------------------------------------- memory

function metricValue(text: string | undefined, name: string): number | null {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.eE+-]+)`, 'm').exec(text ?? '');
  return m?.[1] !== undefined ? Number(m[1]) : null;
}

async function memory(cfg: BenchConfig, target: Target, protocol: Protocol): Promise<Result> {
  const res = newResult(target, protocol, 'memory', `${cfg.queues} queues, ${cfg.messages} msgs`);
  const run = async (h: Harness): Promise<void> => {
    const snapshot = async (): Promise<{ rss: number; heap: number | null }> => {
      const heap = await h.server.heapAfterGc();
      if (heap === null) h.errors.add('no heap figure from the server after SIGUSR2');
      return { rss: readRss(h.server.pid), heap };
    };
    // Warm every code path used below, so what is measured is the data, not first-use allocations.
    const warmUrl = await createQueue(h, 'mem-warm');
    for (let i = 0; i < 5; i++) await createQueue(h, `mem-warm-${i}`);
    await fill(h, warmUrl, 1_000, cfg, 60);
    const msgUrl = await createQueue(h, 'mem-messages');
    const s0 = await snapshot();
    let next = 0;
    await loops(cfg.clients, async () => {
      if (next >= cfg.queues) return false;
      await post(h, h.codec.createQueue(`mem-q-${next++}`), 'CreateQueue', false);
      return true;
    });
    const s1 = await snapshot();
    const sent = await fill(h, msgUrl, cfg.messages, cfg);
    const s2 = await snapshot();
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
  };
  return withServer(cfg, target, res, run, { ...cfg.launch, gcProbe: true });
}

// ---------------------------------------------------------------- cold-start

async function coldStart(cfg: BenchConfig, target: Target, protocol: Protocol): Promise<Result> {
  const res = newResult(target, protocol, 'cold-start', `${cfg.coldRuns} runs`);
  const errors = new Errors();
  const times = new Histogram();
  const samples: number[] = [];
  for (let run = 0; run < cfg.coldRuns; run++) {
    let server: Server | undefined;
    try {
      server = await launch(target, cfg.launch);
      const req = new SqsCodec(protocol, server.hostHeader).listQueues();
      const deadline = Date.now() + 15_000;
      for (let ok = false; !ok;) {
        if (server.exited) throw new Error(`exited:\n${server.outputTail()}`);
        if (Date.now() > deadline)
          throw new Error(`no 200 on ListQueues within 15 s:\n${server.outputTail()}`);
        const probe = new RawPool(server.host, server.port, 1);
        ok = await probe.post(req, true).then(
          (r) => r.status === 200,
          () => false,
        );
        probe.destroy();
        if (!ok) await sleep(2);
      }
      const us = Number(nowNs() - server.startedAtNs) / 1000;
      times.record(us);
      samples.push(us / 1000);
      res.serverRssAfter = readRss(server.pid);
    } catch (err) {
      errors.add(`cold start: ${(err as Error).message}`);
    } finally {
      await server?.stop();
    }
  }
  errors.into(res);
  res.latencyOf = 'spawn → first 200 on ListQueues';
  res.latency = times.summaryMs();
  if (samples.length > 0) {
    const round = (ms: number): number => Math.round(ms * 10) / 10;
    Object.assign(res.extra, {
      medianMs: round(median(samples)),
      minMs: round(Math.min(...samples)),
      maxMs: round(Math.max(...samples)),
    });
  }
  return res;
}

// ---------------------------------------------------------------- back-pressure

/** The budget back-pressure runs with: small, so that filling it takes seconds. */
const BUDGET_MIB = 64;

/**
 * SendMessageBatch of 3 x 256 KiB from one connection, no consumer, into a server with
 * `--max-memory 64mb`, until the first refusal: the bytes accepted against the budget, the
 * refusal's status and code, the server's RSS and its budget usage then.
 */
async function backPressure(cfg: BenchConfig, target: Target, protocol: Protocol): Promise<Result> {
  const res = newResult(target, protocol, 'back-pressure', `--max-memory ${BUDGET_MIB}mb`);
  const run = async (h: Harness): Promise<void> => {
    const url = await createQueue(h, 'back-pressure');
    const body = 'p'.repeat(256 * 1024);
    const budget = BUDGET_MIB * 1024 * 1024;
    res.serverRssBefore = readRss(h.server.pid);
    let accepted = 0;
    let refusal: Reply | undefined;
    while (refusal === undefined && accepted < 4 * budget) {
      const r = await h.pool.post(h.codec.sendMessageBatch(url, [body, body, body]), true);
      if (r.status === 200) accepted += 3 * body.length;
      else refusal = r;
    }
    res.messages = accepted / body.length;
    res.serverRssAfter = readRss(h.server.pid);
    Object.assign(res.extra, {
      acceptedPctOfBudget: Math.round((accepted / budget) * 1000) / 10,
      usedBytesAtRefusal: metricValue(await h.server.metrics(), 'sqs_memory_used_bytes'),
      refusalStatus: refusal?.status ?? null,
      refusalCode: /RequestThrottled/.test(refusal?.body ?? '') ? 'RequestThrottled' : null,
    });
    if (refusal === undefined) h.errors.add(`back-pressure: ${accepted} bytes accepted and never refused`);
  };
  const budgetArgs = [...cfg.launch.sharedSqsArgs, '--max-memory', `${BUDGET_MIB}mb`];
  return withServer(cfg, target, res, run, { ...cfg.launch, sharedSqsArgs: budgetArgs });
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
