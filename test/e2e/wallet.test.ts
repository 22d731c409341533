import pino from 'pino';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { newWebhookSecret, startPaymentStandins, type PaymentStandins } from '../../src/peers/payment-standins.js';
import { paymentHubEnv } from '../support/payment.js';
import { browserAvailable, launchChromium } from '../support/browser.js';

const hasBrowser = browserAvailable();

describe.skipIf(!hasBrowser)('wallet page in Chromium', () => {
  let peers: PaymentStandins;
  let maru: Maru;
  let browser: Browser;
  const secret = newWebhookSecret();

  beforeAll(async () => {
    peers = await startPaymentStandins({ webhookSecret: secret });
    maru = await startMaru(
      loadConfig(paymentHubEnv(peers, secret, 'wallet-e2e', { extra: { OUTBOX_RETRY_MIN_MS: '50', OUTBOX_RETRY_MAX_MS: '200' } })),
      { logger: pino({ level: 'silent' }) },
    );
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await maru?.stop();
    await peers?.close();
  });

  it('signs in through the bank, tops up, buys a challenge, shows its peg and verifies the receipt on the chain', async () => {
    const page = await browser.newPage();
    await page.goto(`${peers.banking.url}/sso/login?user=mina&return=${encodeURIComponent(`${maru.url}/wallet`)}`);
    await page.waitForSelector('text=signed in as mina');
    await page.fill('#krw', '200000');
    await page.click('#onramp button');
    await page.waitForURL(/\/pay\?/);
    await page.click('#confirm');
    await page.waitForURL(/\/wallet$/);
    await page.waitForFunction(() => document.getElementById('balance')!.textContent !== '-' && document.getElementById('balance')!.textContent !== '0.000000');
    const before = Number(await page.textContent('#balance'));
    expect(before).toBeGreaterThan(300);
    await page.click('tr[data-challenge="starter_10k"] button');
    await page.waitForSelector('text=broker account BA-');
    await page.waitForFunction((b) => Number(document.getElementById('balance')!.textContent) < b, before);
    expect(Number(await page.textContent('#balance'))).toBeCloseTo(before - 100, 5);
    expect(await page.textContent('tr[data-challenge="starter_10k"] .peg')).toMatch(/^2\.\d{6}$/);
    expect(await page.locator('#history tr').count()).toBeGreaterThanOrEqual(2);
    // the purchase's receipt is listed first (the on-ramp's below); verify until the chain has recorded it
    const first = page.locator('#receipts li').first();
    await expect.poll(async () => {
      await first.locator('.result').evaluate((el) => (el.textContent = ''));
      await first.locator('button').click();
      await page.waitForFunction(() => document.querySelector('#receipts li .result')!.textContent !== '');
      return first.locator('.result').textContent();
    }, { timeout: 15_000 }).toMatch(/^verified on the chain/);
    expect(await page.locator('#receipts li').count()).toBe(2);
  });
});
