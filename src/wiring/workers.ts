/**
 * `--workers N` (docs/operations.md, "Workers on one machine"): one command runs N --active-active
 * instances on one machine, so that N cores and N heaps serve. Node 20 has no SO_REUSEPORT, so
 * this is node:cluster: the process started becomes the primary, which
 *
 * - accepts the data plane's connections and hands them to the workers in turn (SCHED_RR);
 * - forks the workers, each the server as one process runs it (src/server.ts), with its own
 *   --internal-port (the flag's + the worker's index, or a free one for 0: members advertise the
 *   port they got) and its own control plane on 127.0.0.1, on a free port;
 * - restarts a worker that dies, at once after a long life and with a growing pause after a
 *   short one, so that a crash loop does not spin;
 * - serves --control-port itself: /health, /ready (some worker is ready), /metrics (every
 *   worker's series summed into one text) and /admin (passed to a live worker's control plane:
 *   any instance answers any admin call, since active/active routes every queue to its owner);
 * - on SIGTERM or SIGINT sends SIGTERM to every worker, each of which hands its shards over and
 *   exits 0, then exits; a second signal, or {@link STOP_TIMEOUT_MS}, kills them.
 *
 * The workers are the command line again (cluster forks this same script with the same flags);
 * {@link startWorker} tells one from the primary by `cluster.isWorker` and its index by
 * {@link INDEX_VARIABLE}.
 */
import cluster, { type Worker } from 'node:cluster';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';
import type { Config } from '../config.js';
import { createLogger, flushLogger, type Logger } from '../log.js';
import { start, type Server } from '../server.js';

/** The environment variable that gives a worker its index, 0 to N − 1 (stable across restarts). */
export const INDEX_VARIABLE = 'SHARED_SQS_WORKER_INDEX';

/**
 * How long the workers have to hand their shards over after SIGTERM: under systemd's
 * TimeoutStopSec (30 s, systemd/shared-sqs.service), so that they are killed here, and logged.
 */
const STOP_TIMEOUT_MS = 25_000;
/** A worker that lived less than this died young: its restart waits, longer each time. */
const YOUNG_MS = 10_000;
const MAX_PAUSE_MS = 30_000;
/** How long a scrape or a /ready waits for a worker before leaving it out. */
const ASK_TIMEOUT_MS = 2_000;

const LISTENING = 'shared-sqs:listening';
const METRICS_REQUEST = 'shared-sqs:metrics?';
const METRICS_REPLY = 'shared-sqs:metrics';

interface Message {
  readonly type?: unknown;
  readonly id?: unknown;
  readonly controlUrl?: unknown;
  readonly families?: unknown;
}

// ---------------------------------------------------------------------------------------------
// A worker
// ---------------------------------------------------------------------------------------------

/** The server, as worker `INDEX_VARIABLE` of a --workers primary runs it. */
export async function startWorker(config: Config): Promise<Server> {
  const index = Number(process.env[INDEX_VARIABLE] ?? 0);
  const server = await start(
    {
      ...config,
      workers: 1,
      controlPort: 0,
      internalPort: config.internalPort === 0 ? 0 : config.internalPort + index,
    },
    { controlHost: '127.0.0.1' },
  );
  process.on('message', (m: Message) => {
    if (m.type !== METRICS_REQUEST) return;
    void server.metrics.families().then((families) => {
      if (process.connected) process.send?.({ type: METRICS_REPLY, id: m.id, families });
    });
  });
  process.send?.({ type: LISTENING, controlUrl: server.controlUrl });
  return server;
}

// ---------------------------------------------------------------------------------------------
// The primary
// ---------------------------------------------------------------------------------------------

interface Slot {
  readonly index: number;
  worker: Worker | undefined;
  /** Its private control plane, once it listens. */
  controlUrl: string | undefined;
  startedAt: number;
  /** Deaths in a row, each after a short life. */
  youngDeaths: number;
}

/** Runs the primary until a signal has stopped every worker; then the process exits. */
export async function runPrimary(config: Config): Promise<void> {
  const logger = createLogger(config.logLevel).child({ component: 'workers' });
  // The default on Linux already, but NODE_CLUSTER_SCHED_POLICY=none would leave the spreading
  // of connections to the kernel, which gives most to one worker.
  cluster.schedulingPolicy = cluster.SCHED_RR;
  const slots: Slot[] = Array.from({ length: config.workers }, (_, index) => ({
    index,
    worker: undefined,
    controlUrl: undefined,
    startedAt: 0,
    youngDeaths: 0,
  }));
  let stopping = false;
  const exitCodes: (number | null)[] = [];

  const fork = (slot: Slot): void => {
    const worker = cluster.fork({ [INDEX_VARIABLE]: String(slot.index) });
    slot.worker = worker;
    slot.startedAt = Date.now();
    const pid = worker.process.pid;
    logger.info({ worker: slot.index, workerPid: pid }, 'worker started');
    worker.on('message', (m: Message) => {
      if (m.type !== LISTENING || typeof m.controlUrl !== 'string') return;
      slot.controlUrl = m.controlUrl;
      logger.info({ worker: slot.index, workerPid: pid, controlUrl: m.controlUrl }, 'worker listening');
    });
    worker.on('exit', (code, signal) => {
      slot.worker = undefined;
      slot.controlUrl = undefined;
      if (stopping) {
        exitCodes.push(signal === null ? code : null);
        logger.info({ worker: slot.index, workerPid: pid, code, signal }, 'worker stopped');
        if (slots.every((s) => s.worker === undefined)) void finish();
        return;
      }
      slot.youngDeaths = Date.now() - slot.startedAt < YOUNG_MS ? slot.youngDeaths + 1 : 0;
      const pause = slot.youngDeaths === 0 ? 0 : Math.min(MAX_PAUSE_MS, 500 * 2 ** (slot.youngDeaths - 1));
      logger.error(
        { worker: slot.index, workerPid: pid, code, signal, restartInMs: pause },
        'worker died: restarting it (its shards move to the other workers once their leases expire)',
      );
      setTimeout(() => {
        if (!stopping) fork(slot);
      }, pause).unref();
    });
  };

  const control = createServer((req, res) => {
    void answer(req, res).catch((err: unknown) => {
      logger.error({ err }, 'control plane request failed');
      if (!res.headersSent) send(res, 500, { error: 'InternalError', message: 'internal error' });
      else res.destroy();
    });
  });
  const live = (): Slot[] => slots.filter((s) => s.worker !== undefined && s.controlUrl !== undefined);
  let next = 0;
  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (req.method === 'GET' && path === '/health') return send(res, 200, { status: 'ok' });
    if (req.method === 'GET' && path === '/ready') {
      const answers = await Promise.all(live().map((s) => isReady(s.controlUrl ?? '')));
      const ready = answers.filter(Boolean).length;
      return send(res, ready > 0 ? 200 : 503, {
        ready: ready > 0,
        workersReady: ready,
        workers: slots.length,
      });
    }
    if (req.method === 'GET' && path === '/metrics') {
      const text = await clusterMetrics(live(), logger);
      res.writeHead(200, { 'content-type': METRICS_CONTENT_TYPE, 'cache-control': 'no-store' });
      return void res.end(text);
    }
    if (path === '/admin' || path.startsWith('/admin/')) {
      const targets = live();
      const target = targets[next++ % Math.max(1, targets.length)];
      if (target?.controlUrl === undefined)
        return send(res, 503, { error: 'NoWorker', message: 'no worker is listening yet' });
      return forward(req, res, target.controlUrl);
    }
    send(res, 404, { error: 'NotFound', message: `no route for ${req.method} ${path}` });
  }

  let finished = false;
  const finish = async (): Promise<void> => {
    if (finished) return;
    finished = true;
    control.close();
    const clean = exitCodes.every((code) => code === 0);
    logger.info({ exitCodes }, clean ? 'every worker stopped: exiting' : 'not every worker stopped cleanly');
    await flushLogger(logger);
    process.exit(clean ? 0 : 1);
  };
  const killAll = (why: string): void => {
    const left = slots.filter((s) => s.worker !== undefined);
    if (left.length > 0)
      logger.error({ workers: left.map((s) => s.index) }, `${why}: killing the workers left`);
    for (const s of left) s.worker?.process.kill('SIGKILL');
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) return killAll(`${signal} again`);
    stopping = true;
    logger.info({ signal }, 'stopping: SIGTERM to every worker, each hands its shards over');
    for (const s of slots) s.worker?.process.kill('SIGTERM');
    if (slots.every((s) => s.worker === undefined)) void finish();
    setTimeout(() => killAll(`not stopped within ${STOP_TIMEOUT_MS} ms`), STOP_TIMEOUT_MS).unref();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  // Listening first: a control port in use ends the command before any worker starts.
  await new Promise<void>((resolve, reject) => {
    control.once('error', reject);
    control.listen({ port: config.controlPort, host: config.host }, () => resolve());
  });
  for (const slot of slots) fork(slot);
  logger.info(
    { workers: config.workers, port: config.port, controlPort: config.controlPort },
    'shared-sqs primary: the workers share the data port, this process answers the control port',
  );
}

const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

async function isReady(controlUrl: string): Promise<boolean> {
  try {
    const res = await fetch(`${controlUrl}/ready`, { signal: AbortSignal.timeout(ASK_TIMEOUT_MS) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}

/** Passes one admin request to a worker's control plane as it came, and its answer back. */
function forward(req: IncomingMessage, res: ServerResponse, controlUrl: string): void {
  const url = new URL(req.url ?? '/', controlUrl);
  const upstream = request(
    url,
    { method: req.method, headers: { ...req.headers, host: url.host } },
    (answer: IncomingMessage) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on('error', () => {
    if (!res.headersSent) send(res, 502, { error: 'WorkerGone', message: 'the worker did not answer' });
    else res.destroy();
  });
  req.pipe(upstream);
}

// prom-client is CommonJS; loaded at the first scrape, as src/http/metrics.ts does.
const requireCommonJs = createRequire(import.meta.url);
let scrapes = 0;

/**
 * Every listening worker's families (src/http/metrics.ts `families`), summed by prom-client's
 * `AggregatorRegistry.aggregate`. Not its `clusterMetrics()`: that asks every connected worker,
 * including one still loading its modules, which drops the question unheard and fails the whole
 * scrape 5 s later; here a worker is asked once it listens, and one that does not answer in time
 * is left out of this scrape (and logged) rather than failing it.
 */
async function clusterMetrics(slots: readonly Slot[], logger: Logger): Promise<string> {
  const { AggregatorRegistry } = requireCommonJs('prom-client') as typeof PromClient;
  const id = ++scrapes;
  const answers = await Promise.all(
    slots.map(
      (slot) =>
        new Promise<unknown[] | undefined>((resolve) => {
          const worker = slot.worker;
          if (worker === undefined || !worker.isConnected()) return resolve(undefined);
          const done = (families: unknown[] | undefined): void => {
            clearTimeout(timer);
            worker.off('message', onMessage);
            resolve(families);
          };
          const onMessage = (m: Message): void => {
            if (m.type === METRICS_REPLY && m.id === id && Array.isArray(m.families)) done(m.families);
          };
          const timer = setTimeout(() => {
            logger.warn({ worker: slot.index }, 'worker did not answer a scrape in time: left out of it');
            done(undefined);
          }, ASK_TIMEOUT_MS);
          worker.on('message', onMessage);
          // A worker dying between the check and here: send fails, and the timer leaves it out.
          worker.send({ type: METRICS_REQUEST, id }, (e: Error | null) => {
            if (e !== null) done(undefined);
          });
        }),
    ),
  );
  const families = answers.filter((a) => a !== undefined) as PromClient.MetricObjectWithValues<
    PromClient.MetricValue<string>
  >[][];
  return AggregatorRegistry.aggregate(families).metrics();
}
