/**
 * The admin page in a real browser: Debian's chromium driven by playwright-core (no browser is
 * downloaded; CI installs the `chromium` package), against the built server (dist/main.js). What the
 * page does is checked through the SQS API with @aws-sdk/client-sqs (JSON 1.0): log in with the
 * token, watch a queue's depth change after a send, peek, purge after the confirmation, send and
 * delete one message, create a queue with a dead-letter queue, follow the dead-letter links, see
 * the charts fill, and a screenshot that must show a rendered page.
 *
 * The page refreshes every 2 s and the server samples the charts every 5 s; every wait below is
 * for something to appear on the page, bounded by playwright's timeouts, never a sleep.
 */
import assert from 'node:assert/strict';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { BrowserContext, Page } from 'playwright-core';
import { openBrowser, type Browser } from '../support/browser.js';
import { sqsClient, startServer, uniqueName, type RunningServer } from '../support/server.js';
import { testsRequiring } from '../support/requires.js';

const { after, before, test } = testsRequiring('chromium');

const TOKEN = 'page-test-token';
const WAIT_MS = 10_000;
/** Waits that span server samples (every 5 s): two of them, and the page's refresh. */
const SAMPLE_WAIT_MS = 20_000;
const ACCOUNT = '000000000000';
const REGION = 'us-east-1';

let server: RunningServer;
let context: BrowserContext;
let browser: Browser;
let sqs: SQSClient;

before(async () => {
  server = await startServer({ env: { SHARED_SQS_ADMIN_TOKEN: TOKEN } });
  sqs = sqsClient(server.url);
  browser = await openBrowser(WAIT_MS, { viewport: { width: 1400, height: 1000 } });
  context = browser.context;
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

async function logIn(page: Page, token: string): Promise<void> {
  await page.goto(`${server.controlUrl}/admin`);
  await page.fill('#token', token);
  await page.click('#login');
}

async function createQueue(name: string, attributes: Record<string, string> = {}): Promise<string> {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  return QueueUrl ?? assert.fail('no QueueUrl');
}

const rowOf = (page: Page, name: string) =>
  page.locator(`#queues tr[data-queue="${ACCOUNT}/${REGION}/${name}"]`);

/** Opens the queue's detail panel from its row, and waits for its messages to be listed. */
async function open(page: Page, name: string): Promise<void> {
  await rowOf(page, name).locator('a.queue-link').click();
  await page.locator(`#detail[data-queue="${ACCOUNT}/${REGION}/${name}"]`).waitFor();
  await page.locator('#peek-total', { hasText: 'message(s) in the queue' }).waitFor();
}

/** A new queue, opened in a new page. */
async function openNew(name: string, attributes: Record<string, string> = {}) {
  const QueueUrl = await createQueue(name, attributes);
  const page = await context.newPage();
  await logIn(page, TOKEN);
  await open(page, name);
  return { QueueUrl, page };
}

async function confirm(page: Page, text: RegExp): Promise<void> {
  await page.locator('#confirm').waitFor({ state: 'visible' });
  assert.match((await page.locator('#confirm-text').textContent()) ?? '', text);
  await page.click('#confirm-ok');
}

async function approximateCount(url: string): Promise<number> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
  return Number(Attributes?.ApproximateNumberOfMessages);
}

test('Given a wrong token, when logging in, then the page says it was refused and shows no data', async () => {
  const page = await context.newPage();
  await logIn(page, 'not-the-token');
  await page.locator('#login-error', { hasText: 'refused' }).waitFor();
  assert.equal(await page.locator('#app').isHidden(), true);
  await page.close();
});

test('Given the token, when a message is sent, then its queue shows it, peek shows it, and purge empties the queue', async () => {
  const name = uniqueName('page');
  const QueueUrl = await createQueue(name);
  const page = await context.newPage();
  await logIn(page, TOKEN);

  const row = rowOf(page, name);
  await row.locator('td.visible', { hasText: /^0$/ }).waitFor();
  await page.locator('#leader', { hasText: 'single instance' }).waitFor();

  await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'seen in the browser' }));
  // The next refresh (every 2 s) shows the new depth.
  await row.locator('td.visible', { hasText: /^1$/ }).waitFor();
  await row.locator('td.oldest', { hasText: / s$/ }).waitFor();

  await open(page, name);
  await page.locator('#peek-messages td.body', { hasText: 'seen in the browser' }).waitFor();
  assert.match((await page.locator('#peek-total').textContent()) ?? '', /^1 message\(s\) in the queue/);

  // Peeking changed nothing: the message is still visible, not in flight.
  await page.evaluate('window.sharedSqsAdmin.refresh()');
  assert.equal(await row.locator('td.visible').textContent(), '1');
  assert.equal(await row.locator('td.inflight').textContent(), '0');
  assert.match((await row.locator('td.memory').textContent()) ?? '', /^\d+\.\d MiB$/);
  assert.match(
    (await page.locator('#memory').textContent()) ?? '',
    /^Memory budget: [\d.]+ MiB of [\d.]+ MiB used$/,
  );

  await row.locator('button.purge').click();
  await confirm(page, new RegExp(`Purge ${name}`));
  await page.locator('#status', { hasText: `Purged 1 message(s) from ${name}.` }).waitFor();
  await row.locator('td.visible', { hasText: /^0$/ }).waitFor();
  await page.close();
});

test('Given the purge confirmation, when cancelled, then nothing is purged', async () => {
  const name = uniqueName('keep');
  const QueueUrl = await createQueue(name);
  await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'keep me' }));
  const page = await context.newPage();
  await logIn(page, TOKEN);
  const row = rowOf(page, name);
  await row.locator('td.visible', { hasText: /^1$/ }).waitFor();
  await row.locator('button.purge').click();
  await page.locator('#confirm').waitFor({ state: 'visible' });
  await page.click('#confirm-cancel');
  await page.locator('#confirm').waitFor({ state: 'hidden' });
  await page.evaluate('window.sharedSqsAdmin.refresh()');
  assert.equal(await row.locator('td.visible').textContent(), '1');
  await page.close();
});

test('Given a standard queue, when a message with attributes is sent from the page, then an SQS client receives it as sent', async () => {
  const name = uniqueName('send');
  const { QueueUrl, page } = await openNew(name);
  assert.equal(await page.locator('#send-group').isVisible(), false, 'no group id on a standard queue');

  await page.fill('#send-body', 'from the admin page');
  for (const [attr, type, value] of [
    ['kind', 'String', 'order'],
    ['count', 'Number', '3'],
  ] as const) {
    await page.click('#send-add-attribute');
    const row = page.locator('#send-attributes .attribute').last();
    await row.locator('.attr-name').fill(attr);
    await row.locator('.attr-type').selectOption(type);
    await row.locator('.attr-value').fill(value);
  }
  await page.click('#send');
  await page.locator('#status', { hasText: `to ${name}.` }).waitFor();
  await page.locator('#peek-messages td.body', { hasText: 'from the admin page' }).waitFor();
  await rowOf(page, name).locator('td.visible', { hasText: /^1$/ }).waitFor();

  // The SDK checks the body's and the attributes' MD5 against what it receives.
  const { Messages } = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl, MessageAttributeNames: ['All'], WaitTimeSeconds: 1 }),
  );
  assert.equal(Messages?.length, 1);
  assert.equal(Messages?.[0]?.Body, 'from the admin page');
  assert.deepEqual(Messages?.[0]?.MessageAttributes, {
    kind: { DataType: 'String', StringValue: 'order' },
    count: { DataType: 'Number', StringValue: '3' },
  });
  await page.close();
});

test('Given a FIFO queue, when sent from the page with a group and deduplication id, then received with them; the same again is a duplicate', async () => {
  const name = `${uniqueName('fifo')}.fifo`;
  const { QueueUrl, page } = await openNew(name, { FifoQueue: 'true' });
  for (let i = 0; i < 2; i++) {
    await page.fill('#send-body', 'ordered');
    await page.fill('#send-group', 'group-1');
    await page.fill('#send-dedup', 'dedup-1');
    await page.click('#send');
    await page.locator('#status', { hasText: i === 0 ? `to ${name}.` : 'Not stored: a duplicate' }).waitFor();
  }
  const { Messages } = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl, MessageSystemAttributeNames: ['All'], MaxNumberOfMessages: 10 }),
  );
  assert.equal(Messages?.length, 1);
  assert.equal(Messages?.[0]?.Attributes?.MessageGroupId, 'group-1');
  assert.equal(Messages?.[0]?.Attributes?.MessageDeduplicationId, 'dedup-1');
  await page.close();
});

test('Given two messages, when one is deleted from the page after the confirmation, then only the other remains', async () => {
  const name = uniqueName('delete');
  const QueueUrl = await createQueue(name);
  const kept = await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'keep' }));
  const gone = await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'delete me' }));
  const page = await context.newPage();
  await logIn(page, TOKEN);
  await open(page, name);
  await page.locator(`#peek-messages tr[data-message-id="${gone.MessageId}"] button.delete-message`).click();
  await confirm(page, new RegExp(`Delete message ${gone.MessageId}`));
  await page.locator('#status', { hasText: `Deleted message ${gone.MessageId}` }).waitFor();
  await page.locator(`#peek-messages tr[data-message-id="${gone.MessageId}"]`).waitFor({ state: 'detached' });
  assert.equal(await page.locator(`#peek-messages tr[data-message-id="${kept.MessageId}"]`).count(), 1);
  assert.equal(await approximateCount(QueueUrl), 1);
  const { Messages } = await sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }));
  assert.deepEqual(
    Messages?.map((m) => m.MessageId),
    [kept.MessageId],
  );
  await page.close();
});

test('Given the create dialog, when a FIFO queue is created with a dead-letter queue, then both exist and are linked, and only the dead-letter queue can be redriven', async () => {
  const dlq = `${uniqueName('dlq')}.fifo`;
  await createQueue(dlq, { FifoQueue: 'true' });
  const name = uniqueName('made');
  const page = await context.newPage();
  await logIn(page, TOKEN);
  await rowOf(page, dlq).waitFor();

  await page.click('#create-open');
  await page.fill('#create-name', name);
  await page.check('#create-fifo');
  await page.check('#create-content-dedup');
  await page.fill('#create-visibility', '45');
  await page.selectOption('#create-dlq', { label: `${dlq} ((default), ${REGION})` });
  await page.fill('#create-max-receives', '3');
  await page.click('#create');
  await page.locator('#status', { hasText: `Created ${name}.fifo` }).waitFor();
  assert.equal(await page.locator('#create-dialog').isVisible(), false);

  const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: `${name}.fifo` }));
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['All'] }));
  assert.equal(Attributes?.FifoQueue, 'true');
  assert.equal(Attributes?.ContentBasedDeduplication, 'true');
  assert.equal(Attributes?.VisibilityTimeout, '45');
  assert.deepEqual(JSON.parse(Attributes?.RedrivePolicy ?? '{}'), {
    deadLetterTargetArn: `arn:aws:sqs:${REGION}:${ACCOUNT}:${dlq}`,
    maxReceiveCount: 3,
  });

  // The new queue opened in the detail panel; its row links to its dead-letter queue, and back.
  await page.locator(`#detail[data-queue="${ACCOUNT}/${REGION}/${name}.fifo"]`).waitFor();
  const source = rowOf(page, `${name}.fifo`);
  const target = rowOf(page, dlq);
  await target.locator('td.dead-letter a', { hasText: `${name}.fifo` }).waitFor();
  assert.equal(await target.locator('button.redrive').count(), 1);
  assert.equal(await source.locator('button.redrive').count(), 0);
  await source.locator('td.dead-letter a', { hasText: dlq }).click();
  await page.locator(`#detail[data-queue="${ACCOUNT}/${REGION}/${dlq}"]`).waitFor();
  await page.locator('#detail-meta dd a', { hasText: `${name}.fifo` }).waitFor();

  // A bad definition is shown in the dialog, which stays open.
  await page.click('#create-open');
  await page.fill('#create-name', 'not a name');
  await page.click('#create');
  await page.locator('#create-error', { hasText: /alphanumeric/ }).waitFor();
  await page.click('#create-cancel');
  await page.close();
});

/**
 * What a screenshot holds, measured by Chromium itself (a canvas decodes the PNG): the share of
 * dark pixels (text, lines) and of colourful ones (charts, links, buttons). Browser code, so a
 * string: the tests are compiled without the DOM's types.
 */
const MEASURE = `async (b64) => {
  const blob = await (await fetch('data:image/png;base64,' + b64)).blob();
  const bitmap = await createImageBitmap(blob);
  const ctx = new OffscreenCanvas(bitmap.width, bitmap.height).getContext('2d');
  ctx.drawImage(bitmap, 0, 0);
  const px = ctx.getImageData(0, 0, bitmap.width, bitmap.height).data;
  let dark = 0, colourful = 0;
  for (let i = 0; i < px.length; i += 4) {
    const r = px[i], g = px[i + 1], b = px[i + 2];
    if (r + g + b < 450) dark++;
    if (Math.max(r, g, b) - Math.min(r, g, b) > 80) colourful++;
  }
  const n = px.length / 4;
  return { dark: dark / n, colourful: colourful / n };
}`;

interface Measure {
  readonly dark: number;
  readonly colourful: number;
}

/** A screenshot of the page below its header bar (which is dark whatever the page shows), measured. */
async function measure(page: Page): Promise<Measure> {
  const header = await page.locator('header').boundingBox();
  const viewport = page.viewportSize();
  assert.ok(header !== null && viewport !== null);
  const top = header.y + header.height;
  const png = await page.screenshot({
    clip: { x: 0, y: top, width: viewport.width, height: viewport.height - top },
  });
  return page.evaluate<Measure>(`(${MEASURE})(${JSON.stringify(png.toString('base64'))})`);
}

/**
 * A page with tables of text and charts drawn, not an empty frame. Thresholds at about half of
 * what the page shows in this test at 1400 × 1000 (dark ≈ 2 %, colourful ≈ 0.6 %); the page
 * emptied below its header measures 0 and 0.
 */
function rendered(m: Measure): boolean {
  return m.dark > 0.008 && m.colourful > 0.003;
}

test('Given traffic on a queue, when the page is open, then its charts fill and a screenshot shows a rendered page, which an emptied page is not', async () => {
  const name = uniqueName('busy');
  const { QueueUrl, page } = await openNew(name);

  // Traffic until a sample shows it: a send and a receive (left in flight) every round.
  const row = rowOf(page, name);
  let traffic = true;
  const sending = (async () => {
    while (traffic) {
      await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'tick' }));
      await sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 1, VisibilityTimeout: 600 }));
    }
  })();
  try {
    // The row's "sent / received / deleted per second" of the last sample, sent above 0.
    const rates = `#queues tr[data-queue="${ACCOUNT}/${REGION}/${name}"] .rate-now`;
    await page.waitForFunction(
      `Number.parseFloat(document.querySelector(${JSON.stringify(rates)})?.textContent ?? '') > 0`,
      undefined,
      { timeout: SAMPLE_WAIT_MS },
    );
  } finally {
    traffic = false;
    await sending;
  }
  await page.evaluate('window.sharedSqsAdmin.refresh()');

  // Element boxes: the row's sparklines and the detail panel's charts are drawn, with a size.
  const sparkBox = await row.locator('td.spark.depth svg polygon.inflight').boundingBox();
  assert.ok(sparkBox !== null && sparkBox.width > 0 && sparkBox.height > 0, JSON.stringify(sparkBox));
  const ratesBox = await page.locator('#chart-rates polyline.sent').boundingBox();
  assert.ok(ratesBox !== null && ratesBox.width > 0 && ratesBox.height > 5, JSON.stringify(ratesBox));
  const depthBox = await page.locator('#chart-depth polygon.inflight').boundingBox();
  assert.ok(depthBox !== null && depthBox.height > 5, JSON.stringify(depthBox));
  for (const sel of ['#queues', '#detail']) {
    const box = await page.locator(sel).boundingBox();
    assert.ok(box !== null && box.width > 600 && box.height > 40, `${sel}: ${JSON.stringify(box)}`);
  }

  const shown = await measure(page);
  assert.ok(rendered(shown), `the page as shown: ${JSON.stringify(shown)}`);
  // The same measure on the page with its content gone: the check can fail.
  await page.evaluate(`document.querySelector('main').replaceChildren()`);
  const emptied = await measure(page);
  assert.ok(!rendered(emptied), `the emptied page: ${JSON.stringify(emptied)}`);
  await page.close();
});
