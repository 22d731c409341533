import AxeBuilder from '@axe-core/playwright';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';

const hasBrowser = browserAvailable();

/**
 * A plain start runs no payment peers: the wallet page says, in Korean and English, that the token
 * payment relay is not configured and which settings configure it (web/common/not-configured.ts),
 * having asked the hub one public question (GET /api/token/config) and nothing that answers 503;
 * no console error, no failed request, no serious or critical axe-core violation, at 1280 and 360 px.
 */
describe.skipIf(!hasBrowser)('a page whose service is not configured, in Chromium', () => {
  let hub: HubProcess;
  let browser: Browser;
  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('not-configured') });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  it.each([1280, 360])('at %i px: the wallet says the payment relay is not configured and how to configure it', async (width) => {
    // axe-core needs a page of a context of its own
    const ctx = await browser.newContext({ viewport: { width, height: 900 } });
    const page = await ctx.newPage();
    const problems: string[] = [];
    const asked: string[] = [];
    page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
    page.on('pageerror', (e) => problems.push(`error: ${e.message}`));
    page.on('requestfailed', (r) => problems.push(`failed ${r.url()}`));
    page.on('response', (r) => {
      if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`);
      if (new URL(r.url()).pathname.startsWith('/api/')) asked.push(new URL(r.url()).pathname);
    });
    await page.goto(`${hub.url}/wallet`);
    await page.waitForSelector('body[data-ready]');
    expect(await page.getAttribute('body', 'data-not-configured')).toBe('/wallet');
    const text = await page.textContent('#not-configured');
    expect(text).toContain('설정되어 있지 않습니다');
    expect(text).toContain('is not configured');
    for (const s of ['BANKING_URL', 'SSO_JWKS_URL', 'CHAIN_URL', 'BROKER_URL', 'PRICE_PROVIDER_URLS', 'PAYMENT_PEERS=embedded', 'npm run demo']) expect(text).toContain(s);
    // the page's own parts stay hidden: no sign-in button that leads nowhere
    expect(await page.isVisible('#signin-go')).toBe(false);
    expect(await page.isVisible('#account')).toBe(false);
    await page.waitForTimeout(500);
    expect(asked).toEqual(['/api/token/config']);
    const axe = await new AxeBuilder({ page: page as any }).analyze();
    problems.push(...axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `axe ${v.id}`));
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
    expect(problems).toEqual([]);
    await ctx.close();
  }, 60_000);
});
