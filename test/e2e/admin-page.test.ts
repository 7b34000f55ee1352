/**
 * The admin page in a real browser: Debian's chromium driven by playwright-core (no browser is
 * downloaded; CI installs the `chromium` package). Log in with the token, watch a queue's depth
 * change after a send, peek, purge after the confirmation.
 *
 * The page refreshes every 2 s; every wait below is for something to appear on the page, bounded
 * by playwright's timeouts, never a sleep.
 */
import assert from 'node:assert/strict';
import { CreateQueueCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import type { Page } from 'playwright-core';
import { openBrowser, type Browser } from '../support/browser.js';
import { sqsClient, startServer, uniqueName, type RunningServer } from '../support/server.js';
import { testsRequiring } from '../support/requires.js';

const { after, before, test } = testsRequiring('chromium');

const TOKEN = 'page-test-token';
const WAIT_MS = 10_000;

let server: RunningServer;
let browser: Browser;

before(async () => {
  server = await startServer({ env: { SHARED_SQS_ADMIN_TOKEN: TOKEN } });
  browser = await openBrowser(WAIT_MS);
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

test('Given a wrong token, when logging in, then the page says it was refused and shows no data', async () => {
  const page = await browser.context.newPage();
  await logIn(page, 'not-the-token');
  await page.locator('#login-error', { hasText: 'refused' }).waitFor();
  assert.equal(await page.locator('#app').isHidden(), true);
  await page.close();
});

test('Given the token, when a message is sent, then its queue shows it, peek shows it, and purge empties the queue', async () => {
  const sqs = sqsClient(server.url);
  const name = uniqueName('page');
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name }));
  const page = await browser.context.newPage();
  await logIn(page, TOKEN);

  const row = page.locator(`#queues tr[data-queue="000000000000/us-east-1/${name}"]`);
  await row.locator('td.visible', { hasText: /^0$/ }).waitFor();
  await page.locator('#leader', { hasText: 'single instance' }).waitFor();

  await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'seen in the browser' }));
  // The next refresh (every 2 s) shows the new depth.
  await row.locator('td.visible', { hasText: /^1$/ }).waitFor();

  await row.locator('button.peek').click();
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
  const dialog = page.locator('#confirm');
  await dialog.waitFor({ state: 'visible' });
  assert.match((await page.locator('#confirm-text').textContent()) ?? '', new RegExp(`Purge ${name}`));
  await page.click('#confirm-ok');
  await page.locator('#status', { hasText: `Purged 1 message(s) from ${name}.` }).waitFor();
  await row.locator('td.visible', { hasText: /^0$/ }).waitFor();
  await page.close();
});

test('Given the purge confirmation, when cancelled, then nothing is purged', async () => {
  const sqs = sqsClient(server.url);
  const name = uniqueName('keep');
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name }));
  await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'keep me' }));
  const page = await browser.context.newPage();
  await logIn(page, TOKEN);
  const row = page.locator(`#queues tr[data-queue="000000000000/us-east-1/${name}"]`);
  await row.locator('td.visible', { hasText: /^1$/ }).waitFor();
  await row.locator('button.purge').click();
  await page.locator('#confirm').waitFor({ state: 'visible' });
  await page.click('#confirm-cancel');
  await page.locator('#confirm').waitFor({ state: 'hidden' });
  await page.evaluate('window.sharedSqsAdmin.refresh()');
  assert.equal(await row.locator('td.visible').textContent(), '1');
  await page.close();
});
