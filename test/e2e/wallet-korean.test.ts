import { randomBytes } from 'node:crypto';
import pino from 'pino';
import AxeBuilder from '@axe-core/playwright';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { newWebhookSecret, startPaymentStandins, type PaymentStandins } from '../../src/payment/standins.js';
import { paymentHubEnv } from '../support/payment.js';
import { browserAvailable, launchChromium } from '../support/browser.js';

const hasBrowser = browserAvailable();

/** "2026-11-25 13:05 KST" of an instant, computed here without a browser. */
const kst = (ms: number) => `${new Date(ms + 9 * 3_600_000).toISOString().slice(0, 16).replace('T', ' ')} KST`;
/** A token amount as the page writes it: grouped, 2 to 6 decimals, no trailing zero past the second. */
const AMOUNT = /^-?\d{1,3}(,\d{3})*\.\d{2}$/;
/** A peg rate (tokens per USD): grouped, 2 to 6 decimals, no trailing zero past the second. */
const RATE = /^\d{1,3}(,\d{3})*\.(\d{2}|\d{3,6}(?<!0))$/;
/** The exact amount on hover: grouped, 2 to 6 decimals, no trailing zero past the second. */
const EXACT = /^-?\d{1,3}(,\d{3})*\.(\d{2}|\d{3,6}(?<!0)) 토큰$/;

/**
 * The wallet in Korean first (English beside the headings, as the other pages), its times in KST by
 * the shared rule whatever the browser's zone, its amounts in a human format, and no failed request
 * while it redraws.
 */
describe.skipIf(!hasBrowser)('wallet page: Korean, KST and human amounts, in Chromium', () => {
  let peers: PaymentStandins;
  let maru: Maru;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;
  const secret = newWebhookSecret();
  const user = `hana${randomBytes(3).toString('hex')}`;
  const failed: string[] = [];

  beforeAll(async () => {
    peers = await startPaymentStandins({ webhookSecret: secret });
    maru = await startMaru(loadConfig(paymentHubEnv(peers, secret, 'wallet-korean', { chainKey: true })), { logger: pino({ level: 'silent' }) });
    browser = await launchChromium();
    ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'America/New_York', locale: 'en-US' });
    page = await ctx.newPage();
    page.on('response', (r) => {
      if (r.status() >= 400) failed.push(`${r.status()} ${r.request().method()} ${new URL(r.url()).pathname}`);
    });
    page.on('requestfailed', (r) => failed.push(`failed ${r.method()} ${new URL(r.url()).pathname} ${r.failure()?.errorText}`));
    // signed in and topped up through the bank stand-in, then a challenge bought
    await page.goto(`${maru.url}/wallet`);
    await page.waitForSelector('body[data-ready]');
    await page.getByRole('button', { name: '은행 계정으로 로그인' }).click();
    await page.waitForURL(new RegExp(`^${peers.banking.url}/sso/login`));
    await page.getByLabel('사용자 ID').fill(user);
    await page.getByRole('button', { name: '로그인' }).click();
    await page.waitForURL(/\/wallet$/);
    await page.waitForSelector('body[data-ready]');
    await page.fill('#krw', '1234567');
    await page.click('#onramp button');
    await page.getByRole('dialog').getByRole('button', { name: '은행 결제로 이동' }).click();
    await page.waitForURL(/\/pay\?/);
    await page.click('#confirm');
    await page.waitForURL(/\/wallet$/);
    await page.waitForFunction(() => !['-', '0.00'].includes(document.getElementById('balance')!.textContent!));
    await page.getByRole('button', { name: 'Starter 10K 구매' }).click();
    await page.getByRole('dialog').getByRole('button', { name: '구매' }).click();
    await page.waitForSelector('text=브로커 계좌 BA-');
    await page.waitForFunction(() => document.querySelectorAll('#history tr').length >= 2);
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await maru?.stop();
    await peers?.close();
  });

  it('writes every time in KST with the year and the zone, though the browser is in New York', async () => {
    expect(await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone)).toBe('America/New_York');
    const token = await page.evaluate(() => sessionStorage.getItem('sso'));
    const w = await (await fetch(`${maru.url}/api/token/wallet?limit=50`, { headers: { authorization: `Bearer ${token}` } })).json();
    const cells = await page.$$eval('#history tr td:first-child', (td) => td.map((x) => x.textContent!));
    expect(cells.length).toBe(w.history.length);
    expect(cells).toEqual(w.history.map((t: { ts: number }) => kst(t.ts)));
    await page.getByRole('button', { name: '이번 달' }).click();
    await page.waitForSelector('#st-result:not([hidden])');
    for (const c of await page.$$eval('#st-rows tr td:first-child', (td) => td.map((x) => x.textContent!))) expect(c).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2} KST$/);
  });

  it('writes amounts for people: tokens grouped and rounded to two decimals, won without decimals, the peg trimmed', async () => {
    for (const id of ['balance', 'credit', 'collateral']) expect(await page.textContent(`#${id}`)).toMatch(AMOUNT);
    for (const c of await page.$$eval('#history tr td:nth-child(3), #st-rows td.num', (td) => td.map((x) => x.textContent!).filter(Boolean))) expect(c).toMatch(AMOUNT);
    // 1,234,567 won bought tokens worth over a thousand: grouped
    expect(await page.textContent('#balance')).toMatch(/^\d{1,3}(,\d{3})+\./);
    const peg = (await page.textContent('tr[data-challenge="starter_10k"] .peg'))!;
    expect(peg).toMatch(RATE);
    expect(await page.textContent('tr[data-challenge="starter_10k"] td:nth-child(2)')).toMatch(/^\d{1,3}(,\d{3})+$/);
    // the top-up confirmation: won grouped without decimals, the peg trimmed
    await page.fill('#krw', '250000');
    await page.click('#onramp button');
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    const text = (await dialog.textContent())!;
    expect(text).toContain('250,000원');
    const rate = /1 USD = ([\d,.]+) 토큰/.exec(text)![1]!;
    expect(rate).toMatch(RATE);
    await dialog.getByRole('button', { name: '취소' }).click();
  });

  it('rounds amounts for people (two decimals) and gives the exact amount on hover, equal to the hub\'s', async () => {
    const shown = await page.$$eval('#balance, #credit, #collateral, #history td:nth-child(3), #challenges td:nth-child(3)', (n) =>
      n.map((x) => ({ text: x.textContent!, title: (x as HTMLElement).title, units: (x as HTMLElement).dataset.units! })),
    );
    expect(shown.length).toBeGreaterThanOrEqual(8);
    for (const a of shown) {
      expect(a.text).toMatch(AMOUNT);
      expect(a.title).toMatch(EXACT);
      // the title is the exact amount; the text is it rounded half up to hundredths
      const exact = BigInt(a.units);
      const [whole, frac] = a.title.replace(' 토큰', '').replace(/,/g, '').split('.');
      expect(BigInt(whole!) * 1_000_000n + BigInt(frac!.padEnd(6, '0'))).toBe(exact);
      expect(BigInt(a.text.replace(/[,.]/g, ''))).toBe((exact + 5_000n) / 10_000n);
    }
  });

  it('shows a peg on every challenge: the held one\'s own, the others fixed at purchase, said so', async () => {
    const pegs = await page.$$eval('#challenges tr', (rows) => rows.map((r) => ({ kind: (r as HTMLElement).dataset.challenge!, text: r.querySelector('.peg')!.textContent!, title: (r.querySelector('.peg') as HTMLElement).title })));
    expect(pegs.length).toBeGreaterThan(1);
    for (const p of pegs) {
      expect(p.text).not.toBe('-');
      expect(p.title).toMatch(/페그/);
      if (p.kind === 'starter_10k') expect(p.text).toMatch(/^[\d,]+\.\d{2,6}$/);
      else expect(p.text).toBe('구매 시 확정');
    }
  });

  it('the bank stand-in\'s payment page speaks Korean (amount in won, the method named), with no serious axe violation', async () => {
    for (const width of [1280, 360]) {
      const bankCtx = await browser.newContext({ viewport: { width, height: 800 } });
      const bank = await bankCtx.newPage();
      await bank.goto(`${peers.banking.url}/pay?ref=or_x&amount_krw=1234567&method=transfer&user=${user}&notify=&return=`);
      expect(await bank.getAttribute('html', 'lang')).toBe('ko');
      expect(await bank.title()).toBe('은행 결제');
      expect(await bank.textContent('main')).toContain('1,234,567원을 계좌이체(으)로 결제합니다.');
      expect(await bank.textContent('#confirm')).toBe('결제하기');
      expect(await bank.textContent('body')).not.toMatch(/Pay|Confirm|KRW/);
      const axe = await new AxeBuilder({ page: bank as any }).analyze();
      expect(axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id)).toEqual([]);
      await bankCtx.close();
    }
  });

  it('speaks Korean first, with English beside the headings as on the other pages', async () => {
    expect(await page.getAttribute('html', 'lang')).toBe('ko');
    const headings = await page.$$eval('h1, main h2', (h) => h.filter((x) => (x as HTMLElement).offsetParent !== null || x.tagName === 'H1').map((x) => x.textContent!));
    expect(headings.length).toBeGreaterThan(5);
    for (const h of headings) expect(h).toMatch(/^[가-힣][^·]* · [A-Za-z]/);
    const body = (await page.textContent('main'))!;
    expect(body).not.toMatch(/\b(Balance|Loading|Submit|undefined|NaN)\b/);
  });

  it('asks for nothing that fails while it redraws (no 404 on a peg per challenge)', async () => {
    failed.length = 0;
    for (let i = 0; i < 3; i++) {
      await page.reload();
      await page.waitForSelector('body[data-ready]');
      await page.waitForFunction(() => document.querySelectorAll('#history tr').length >= 2);
    }
    await page.getByRole('button', { name: '이번 달' }).click();
    await page.waitForSelector('#st-result:not([hidden])');
    await page.waitForLoadState('networkidle');
    expect(failed).toEqual([]);
  });
});
