/**
 * Debian's chromium (CI installs the `chromium` package) driven by playwright-core, which downloads
 * no browser of its own: headless, in a fresh profile that `close()` removes. Files using it call
 * `testsRequiring('chromium')` first (test/support/requires.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';

export interface Browser {
  readonly context: BrowserContext;
  close(): Promise<void>;
}

/**
 * `timeoutMs` bounds every wait of playwright's (for an element, a navigation, a function); a
 * `viewport` large enough keeps a wide page's screenshot from cutting it off.
 */
export async function openBrowser(
  timeoutMs: number,
  opts: { viewport?: { width: number; height: number } } = {},
): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'ssq-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    ...(opts.viewport ? { viewport: opts.viewport } : {}),
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
  context.setDefaultTimeout(timeoutMs);
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
