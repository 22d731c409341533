/**
 * The quote of a challenge purchase: GET /api/token/challenge/quote (read-only, the purchase's own
 * charge: amount, fee, total, from the learning credit and the wallet, the peg a purchase now fixes),
 * its refusals of bad input and of a missing or wrong credential in the shared error shape, and the
 * /wallet page showing it before the purchase is confirmed, in Chromium: the total shown is what
 * the purchase then takes from the wallet.
 */
import AxeBuilder from '@axe-core/playwright';
import pino from 'pino';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { newWebhookSecret, startPaymentStandins, type PaymentStandins } from '../../src/payment/standins.js';
import { signIn } from '../support/auth.js';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { call } from '../support/http.js';
import { paymentHubEnv } from '../support/payment.js';

const hasBrowser = browserAvailable();
let n = 0;
const key = () => `q-${Date.now()}-${++n}`;

describe('the quote of a challenge purchase', () => {
  let peers: PaymentStandins;
  let maru: Maru;
  let base: string;
  let browser: Browser | undefined;
  const secret = newWebhookSecret();

  beforeAll(async () => {
    peers = await startPaymentStandins({ webhookSecret: secret });
    maru = await startMaru(loadConfig(paymentHubEnv(peers, secret, 'wallet-quote', { chainKey: true })), { logger: pino({ level: 'silent' }) });
    base = maru.url;
    if (hasBrowser) browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await maru?.stop();
    await peers?.close();
  });

  const as = async (user: string) => ({ authorization: `Bearer ${await peers.banking.issueToken(user)}` });
  const quote = async (query: string, headers: Record<string, string>) => call(base, 'GET', `/api/token/challenge/quote${query}`, undefined, headers);
  async function topUp(user: string, krw: number) {
    const r = await fetch(`${base}/api/token/onramp`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/json', 'idempotency-key': key(), ...(await as(user)) },
      body: JSON.stringify({ amount_krw: krw, method: 'card' }),
    });
    expect(r.status).toBe(303);
    const loc = new URL(r.headers.get('location')!);
    expect((await peers.banking.confirm(loc.searchParams.get('ref')!, loc.searchParams)).webhook_status).toBe(200);
  }
  const wallet = async (h: Record<string, string>) => (await call(base, 'GET', '/api/token/wallet', undefined, h)).body as { balance: string; learning_credit: string };

  it('refuses a missing, a wrong and a hub credential in the shared error shape', async () => {
    const none = await quote('?challenge_id=starter_10k', {});
    expect(none.status).toBe(401);
    expect(none.body.error).toMatchObject({ code: 'unauthorized', message: expect.any(String) });
    const good = await peers.banking.issueToken('quinn');
    const tampered = good.slice(0, -4) + (good.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    const wrong = await quote('?challenge_id=starter_10k', { authorization: `Bearer ${tampered}` });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.code).toBe('invalid_token');
    const expired = await quote('?challenge_id=starter_10k', { authorization: `Bearer ${await peers.banking.issueToken('quinn', { expiresInS: -10 })}` });
    expect(expired.status).toBe(401);
    // the hub's own sign-in is not the bank's
    const hub = await quote('?challenge_id=starter_10k', { authorization: `Bearer ${await signIn(base, ['staff'])}` });
    expect(hub.status).toBe(401);
    expect(hub.body.error.code).toBe('invalid_token');
  });

  it('refuses bad input with 400/404 in the shared error shape', async () => {
    const h = await as('quinn');
    const cases: [string, number, string][] = [
      ['', 400, 'invalid_query'],
      ['?challenge_id=', 400, 'invalid_query'],
      ['?challenge_id=bad%20id!', 400, 'invalid_query'],
      [`?challenge_id=${'x'.repeat(65)}`, 400, 'invalid_query'],
      ['?challenge_id=starter_10k&user_id=quinn', 400, 'invalid_query'],
      ['?challenge_id=nope', 404, 'unknown_challenge'],
    ];
    for (const [q, status, code] of cases) {
      const r = await quote(q, h);
      expect({ q, status: r.status, code: r.body.error?.code }).toEqual({ q, status, code });
      expect(typeof r.body.error.message).toBe('string');
    }
  });

  it('quotes what the purchase then charges, and moves nothing itself', async () => {
    const h = await as('rhea');
    // with nothing in the wallet: quoted, marked as not enough
    const poor = await quote('?challenge_id=standard_25k', h);
    expect(poor.status).toBe(200);
    expect(poor.body).toMatchObject({ challenge_id: 'standard_25k', amount: '200000000', fee: '0', total: '200000000', from_credit: '0', from_wallet: '200000000', sufficient: false });
    await topUp('rhea', 400_000);
    const before = await wallet(h);
    const receipts = (await call(base, 'GET', '/api/token/receipts', undefined, h)).body.page.total;
    const q = (await quote('?challenge_id=standard_25k', h)).body;
    expect(q).toMatchObject({ amount: '200000000', fee: '0', total: '200000000', wallet_balance: before.balance, sufficient: true });
    expect(BigInt(q.wallet_after)).toBe(BigInt(before.balance) - BigInt(q.from_wallet));
    expect(q.peg_rate).toMatch(/^\d+\.\d{6}$/);
    // a quote is read-only
    expect(await wallet(h)).toEqual(before);
    expect((await call(base, 'GET', '/api/token/receipts', undefined, h)).body.page.total).toBe(receipts);
    const buy = await call(base, 'POST', '/api/token/challenge/buy', { challenge_id: 'standard_25k', user_id: 'rhea' }, { ...h, 'idempotency-key': key() });
    expect(buy.status).toBe(200);
    const after = await wallet(h);
    expect(BigInt(before.balance) - BigInt(after.balance)).toBe(BigInt(q.from_wallet));
    expect(BigInt(before.learning_credit) - BigInt(after.learning_credit)).toBe(BigInt(q.from_credit));
    expect(after.balance).toBe(q.wallet_after);
    // the challenge now runs: quoted as the purchase would answer
    const running = await quote('?challenge_id=standard_25k', h);
    expect(running.status).toBe(409);
    expect(running.body.error.code).toBe('challenge_active');
  });

  for (const width of [1280, 360]) {
    it.skipIf(!hasBrowser)(`the wallet page at ${width} px shows the quote before the purchase; the total shown is the amount debited`, async () => {
      const user = `page${width}`;
      await topUp(user, 300_000);
      const ctx = await browser!.newContext({ viewport: { width, height: width < 500 ? 780 : 900 } });
      const page: Page = await ctx.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(`${base}/wallet#token=${await peers.banking.issueToken(user)}`);
      await page.waitForSelector('body[data-ready]');
      await page.waitForFunction(() => !['-', '0.00'].includes(document.getElementById('balance')!.textContent!));
      const before = BigInt((await page.getAttribute('#balance', 'data-units'))!);
      await page.getByRole('button', { name: 'Starter 10K 구매' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.waitFor();
      const rows = await dialog.locator('dt').allTextContents();
      expect(rows).toEqual(expect.arrayContaining(['참가비', '구매 수수료', '적용 페그', '합계', '지갑에서', '구매 후 지갑 잔액']));
      const cell = (name: string) => dialog.locator('dt', { hasText: new RegExp(`^${name}$`) }).locator('xpath=following-sibling::dd[1]');
      const total = BigInt((await cell('합계').getAttribute('data-units'))!);
      const fromWallet = BigInt((await cell('지갑에서').getAttribute('data-units'))!);
      expect(total).toBe(100_000_000n);
      expect(await cell('합계').textContent()).toBe('100.00 토큰');
      expect(await cell('구매 수수료').textContent()).toBe('0.00 토큰');
      expect(await cell('적용 페그').textContent()).toMatch(/^1 USD = [\d,]+\.\d{2,6} 토큰/);
      // the confirm button is in view at this width, and the open quote passes axe
      expect(await dialog.getByRole('button', { name: '구매' }).isVisible()).toBe(true);
      expect(await dialog.getByRole('button', { name: '구매' }).evaluate((b) => b.getBoundingClientRect().bottom <= window.innerHeight)).toBe(true);
      const axe = await new AxeBuilder({ page: page as any }).analyze();
      expect(axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id)).toEqual([]);
      await dialog.getByRole('button', { name: '구매' }).click();
      await page.waitForSelector('text=브로커 계좌 BA-');
      await expect.poll(async () => BigInt((await page.getAttribute('#balance', 'data-units'))!)).toBe(before - fromWallet);
      // and the hub agrees
      expect(BigInt((await wallet(await as(user))).balance)).toBe(before - fromWallet);
      expect(fromWallet).toBe(total);
      expect(errors).toEqual([]);
      await ctx.close();
    }, 60_000);
  }
});
