/**
 * CORS in a real browser (`--cors-origin`), JSON 1.0 protocol: a page served from another origin
 * (a static server on its own port) runs @aws-sdk/client-sqs, bundled for the browser by esbuild
 * from test/fixtures/cors-page.ts, in Debian's chromium driven by playwright-core. With the flag
 * it creates a queue, sends, receives and deletes, and reads each request id; without it Chromium
 * refuses the same page at the preflight, and nothing reaches the queue; with --auth on the page
 * signs with a tenant's key, and a wrong secret is an error the page can read.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import { build } from 'esbuild';
import type { Outcome, Scenario } from '../fixtures/cors-page.js';
import { openBrowser, type Browser } from '../support/browser.js';
import {
  PROJECT_ROOT,
  sqsClient,
  startServer,
  tenantsConfigFile,
  uniqueName,
  type RunningServer,
} from '../support/server.js';
import { testsRequiring } from '../support/requires.js';

const { after, before, test } = testsRequiring('chromium');

const WAIT_MS = 15_000;
const TENANT = {
  name: 'browser-team',
  accountId: '333333333333',
  accessKeyId: 'AKIABROWSER000000001',
  secretAccessKey: 'browser-secret/1+B',
};
const ANONYMOUS = { accessKeyId: 'test', secretAccessKey: 'test' };

let pages: Server;
let pageOrigin: string;
let allowing: RunningServer;
let plain: RunningServer;
let signed: RunningServer;
let browser: Browser;
let config: ReturnType<typeof tenantsConfigFile> | undefined;

/** Serves the page and its bundle, from an origin of its own (another port than the servers'). */
async function servePage(): Promise<Server> {
  const bundle = await build({
    entryPoints: [join(PROJECT_ROOT, 'test/fixtures/cors-page.ts')],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    write: false,
    logLevel: 'silent',
  });
  const script = bundle.outputFiles[0]?.contents;
  assert.ok(script !== undefined);
  const html = '<!doctype html><title>cors</title><script type="module" src="/page.js"></script>';
  const server = createServer((req, res) => {
    if (req.url === '/') res.writeHead(200, { 'content-type': 'text/html' }).end(html);
    else if (req.url === '/page.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

before(async () => {
  pages = await servePage();
  pageOrigin = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
  config = tenantsConfigFile([TENANT]);
  // One after the other: each is stopped in after() even when a later one fails to start.
  allowing = await startServer({ args: ['--cors-origin', pageOrigin] });
  plain = await startServer();
  signed = await startServer({
    args: ['--auth', 'on', '--config', config.path],
    env: { SHARED_SQS_CORS_ORIGIN: '*' },
  });
  browser = await openBrowser(WAIT_MS);
});

after(async () => {
  await browser?.close();
  await Promise.all([allowing?.stop(), plain?.stop(), signed?.stop()]);
  await new Promise((resolve) => pages?.close(resolve));
  config?.remove();
});

/** Opens the page and runs the scenario in it; `console` collects what the page logged. */
async function inPage(scenario: Scenario, console: string[] = []): Promise<Outcome> {
  const page = await browser.context.newPage();
  page.on('console', (message) => console.push(message.text()));
  try {
    await page.goto(`${pageOrigin}/`);
    await page.waitForFunction(() => 'runScenario' in globalThis);
    return await page.evaluate(
      (s) => (globalThis as unknown as { runScenario: (s: Scenario) => Promise<Outcome> }).runScenario(s),
      scenario,
    );
  } finally {
    await page.close();
  }
}

test('Given --cors-origin naming the page, when the page creates a queue, sends, receives and deletes, then each call succeeds and the page reads its request id', async () => {
  const outcome = await inPage({ endpoint: allowing.url, queueName: uniqueName('cors'), ...ANONYMOUS });
  assert.ok(outcome.ok, JSON.stringify(outcome));
  assert.equal(outcome.received, 'from a browser');
  assert.equal(outcome.left, 0);
  assert.equal(outcome.requestIds.length, 5);
  for (const id of outcome.requestIds) assert.match(String(id), /^[0-9a-f-]{36}$/);
});

test('Given no --cors-origin, when the same page runs, then the browser refuses it at the preflight and no queue is created', async () => {
  const queueName = uniqueName('no-cors');
  const console: string[] = [];
  const outcome = await inPage({ endpoint: plain.url, queueName, ...ANONYMOUS }, console);
  assert.equal(outcome.ok, false);
  // fetch's network failure: the SDK never saw an HTTP answer.
  assert.deepEqual(
    [outcome.name, outcome.message, outcome.status],
    ['TypeError', 'Failed to fetch', undefined],
  );
  assert.ok(
    console.some((line) => /from origin '.*' has been blocked by CORS policy/.test(line)),
    console.join('\n'),
  );
  const err = await sqsClient(plain.url)
    .send(new GetQueueUrlCommand({ QueueName: queueName }))
    .catch((e: unknown) => e);
  assert.equal((err as Error).name, 'QueueDoesNotExist');
});

test("Given --auth on and SHARED_SQS_CORS_ORIGIN=*, when the page signs with a tenant's key, then it works in the tenant's account", async () => {
  const queueName = uniqueName('cors-auth');
  const outcome = await inPage({ endpoint: signed.url, queueName, ...TENANT });
  assert.ok(outcome.ok, JSON.stringify(outcome));
  assert.equal(outcome.received, 'from a browser');
  const tenant = new SQSClient({
    endpoint: signed.url,
    region: 'us-east-1',
    credentials: TENANT,
    maxAttempts: 1,
  });
  const { QueueUrl } = await tenant.send(new GetQueueUrlCommand({ QueueName: queueName }));
  tenant.destroy();
  assert.equal(QueueUrl, `${signed.url}/${TENANT.accountId}/${queueName}`);
});

test('Given --auth on and CORS, when the page signs with a wrong secret, then it reads the 403 SignatureDoesNotMatch and its request id', async () => {
  const outcome = await inPage({
    endpoint: signed.url,
    queueName: uniqueName('cors-auth'),
    accessKeyId: TENANT.accessKeyId,
    secretAccessKey: 'not-the-secret',
  });
  assert.equal(outcome.ok, false);
  assert.deepEqual([outcome.name, outcome.status], ['SignatureDoesNotMatch', 403]);
  assert.match(String(outcome.requestId), /^[0-9a-f-]{36}$/);
});
