import { mkdirSync } from 'node:fs';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import AxeBuilder from '@axe-core/playwright';
import pino from 'pino';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { signTreeHead } from '../../src/payment/sth.js';
import { newWebhookSecret, startPaymentStandins, type PaymentStandins } from '../../src/payment/standins.js';
import { paymentHubEnv } from '../support/payment.js';
import { browserAvailable, downloadedText, launchChromium } from '../support/browser.js';

const hasBrowser = browserAvailable();
const HEAD_KEY = 'wallet:chain:verified-head';

/** "1,234.5 토큰" (the exact amount the page gives on hover, its title) in minor units. */
const units = (text: string | null) => {
  const m = /^(-?)([\d,]+)\.(\d{1,6})(?: 토큰)?$/.exec((text ?? '').trim());
  if (!m) throw new Error(`not an amount: ${text}`);
  const v = BigInt(m[2]!.replace(/,/g, '')) * 1_000_000n + BigInt(m[3]!.padEnd(6, '0'));
  return m[1] ? -v : v;
};

/**
 * The /wallet journeys in Chromium, pages only (the test reads state from the hub and plays the
 * bank's part): sign-in at the configured bank, top-up, a confirmed purchase, the statement and its
 * CSV, the signed tree head and its consistency checked by the page (and forged heads refused), a
 * receipt's inclusion proof, off-ramps followed until the bank settles or rejects them, axe-core.
 */
describe.skipIf(!hasBrowser)('wallet page in Chromium', () => {
  let peers: PaymentStandins;
  let maru: Maru;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;
  const secret = newWebhookSecret();
  const user = `mina${randomBytes(3).toString('hex')}`;
  const errors: string[] = [];

  beforeAll(async () => {
    peers = await startPaymentStandins({ webhookSecret: secret });
    maru = await startMaru(
      loadConfig(paymentHubEnv(peers, secret, 'wallet-e2e', { chainKey: true, extra: { OUTBOX_RETRY_MIN_MS: '50', OUTBOX_RETRY_MAX_MS: '200', RECONCILE_PERIOD_MS: '300' } })),
      { logger: pino({ level: 'silent' }) },
    );
    browser = await launchChromium();
    ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    await ctx.addInitScript(() => {
      (window as any).__csp = [];
      document.addEventListener('securitypolicyviolation', (e) => (window as any).__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
    });
    page = await ctx.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
  });
  afterAll(async () => {
    await browser?.close();
    await maru?.stop();
    await peers?.close();
  });

  const balance = async () => units(await page.getAttribute('#balance', 'title'));
  const chainResult = async () => {
    await page.click('#chain-check');
    await page.waitForFunction(() => !['', '검증 중…'].includes(document.getElementById('chain-result')!.textContent!));
    return { text: (await page.textContent('#chain-result'))!, verified: await page.getAttribute('#chain-result', 'data-verified') };
  };

  it('signs in at the configured bank from a button (no address to type)', async () => {
    await page.goto(`${maru.url}/wallet`);
    await page.waitForSelector('body[data-ready]');
    expect(await page.isVisible('#account')).toBe(false);
    await page.getByRole('button', { name: '은행 계정으로 로그인' }).click();
    await page.waitForURL(new RegExp(`^${peers.banking.url}/sso/login`));
    await page.getByLabel('사용자 ID').fill(user);
    await page.getByRole('button', { name: '로그인' }).click();
    await page.waitForURL(/\/wallet$/);
    await page.waitForSelector(`text=${user} 님으로 로그인됨`);
    await page.waitForSelector('body[data-ready]');
    expect(await page.textContent('#balance')).toBe('0.00');
  });

  it('tops up at the bank, then buys a challenge only after a confirmation showing the amounts; the balance moves exactly', async () => {
    await page.fill('#krw', '200000');
    await page.click('#onramp button');
    const topUp = page.getByRole('dialog');
    await topUp.waitFor();
    expect(await topUp.textContent()).toMatch(/200,000원.*1 USD = [\d,]+\.\d{2,6} 토큰/);
    await topUp.getByRole('button', { name: '은행 결제로 이동' }).click();
    await page.waitForURL(/\/pay\?/);
    await page.click('#confirm');
    await page.waitForURL(/\/wallet$/);
    await page.waitForFunction(() => !['-', '0.00'].includes(document.getElementById('balance')!.textContent!));
    const before = await balance();
    expect(before).toBeGreaterThan(300_000_000n);

    // cancelled: nothing spent
    await page.getByRole('button', { name: 'Starter 10K 구매' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain('100.00 토큰');
    expect(await dialog.textContent()).toContain(`구매 후 지갑 잔액`);
    await dialog.getByRole('button', { name: '취소' }).click();
    await page.waitForSelector('text=구매를 취소했습니다.');
    expect(await balance()).toBe(before);

    await page.getByRole('button', { name: 'Starter 10K 구매' }).click();
    await dialog.getByRole('button', { name: '구매' }).click();
    await page.waitForSelector('text=브로커 계좌 BA-');
    await expect.poll(balance).toBe(before - 100_000_000n);
    // the bought challenge's peg is filled in by its own request after the purchase ('-' until then)
    await expect.poll(() => page.textContent('tr[data-challenge="starter_10k"] .peg')).toMatch(/^[\d,]+\.\d{2,6}$/);
    expect(await page.locator('#history tr').count()).toBeGreaterThanOrEqual(2);
  });

  it('shows the wallet statement for this month: opening, each transfer with its running balance, closing, tying out; the CSV is the same', async () => {
    await page.getByRole('button', { name: '이번 달' }).click();
    await page.waitForSelector('#st-result:not([hidden])');
    await page.waitForSelector('#st-tie.ok');
    const closing = units(await page.getAttribute('#st-closing', 'title'));
    expect(closing).toBe(await balance());
    expect(units(await page.getAttribute('#st-opening', 'title'))).toBe(0n);
    const rows = page.locator('#st-rows tr');
    expect(await rows.count()).toBe(2);
    expect(await rows.nth(0).locator('td').nth(1).textContent()).toBe('충전');
    expect(await rows.nth(1).locator('td').nth(1).textContent()).toBe('챌린지 참가비');
    expect(units(await rows.nth(1).locator('td.balance').getAttribute('title'))).toBe(closing);
    expect(units(await rows.nth(1).locator('td').nth(3).getAttribute('title'))).toBe(100_000_000n);
    expect(await rows.nth(0).locator('td').nth(0).textContent()).toMatch(/KST$/);

    // the same figures as the relay's statement (read, not acted on)
    const api = await page.evaluate(async () => {
      const t = sessionStorage.getItem('sso');
      const from = (document.getElementById('st-from') as HTMLInputElement).value;
      const to = new Date(Date.now() + 86_400_000).toISOString();
      const r = await fetch(`/api/token/statement?account=wallet&from=${from}T00:00:00%2B09:00&to=${to}`, { headers: { authorization: `Bearer ${t}` } });
      return r.json();
    });
    expect(BigInt(api.closing)).toBe(closing);

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'CSV 다운로드' }).click()]);
    const csv = (await downloadedText(download)).trim().split('\r\n');
    expect(csv[0]).toMatch(/^row,time,transfer,code/);
    expect(csv.filter((l) => l.startsWith('transfer,')).length).toBe(2);
    expect(csv.at(-1)!.split(',')[10]).toBe(closing.toString());

    // an inverted period: the server's refusal, in Korean
    await page.fill('#st-from', '2026-12-31');
    await page.fill('#st-to', '2026-01-01');
    await page.getByRole('button', { name: '조회' }).click();
    await page.waitForSelector('text=기간이 올바르지 않습니다');
  });

  it('verifies the chain\'s signed tree head in the page, then the consistency proof from the head it kept to a newer one', async () => {
    // the purchase's receipt reaches the chain through the outbox
    await expect.poll(() => peers.chain.state.leaves.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
    await page.evaluate((k) => localStorage.removeItem(k), HEAD_KEY);
    const first = await chainResult();
    expect(first.verified).toBe('yes');
    expect(first.text).toContain('처음 검증한 헤드');
    const kept = JSON.parse((await page.evaluate((k) => localStorage.getItem(k), HEAD_KEY))!);
    // the chain grows (an off-ramp and its receipt), then the page checks the new head against the kept one
    const size = peers.chain.state.leaves.length;
    expect(kept.tree_size).toBe(size);
    await page.fill('#offramp-amount', '1');
    await page.click('#offramp button');
    await page.getByRole('dialog').getByRole('button', { name: '출금' }).click();
    await page.waitForSelector('#offramps li');
    await expect.poll(() => peers.chain.state.leaves.length, { timeout: 10_000 }).toBeGreaterThan(size);
    const second = await chainResult();
    expect(second.verified).toBe('yes');
    expect(second.text).toContain(`이전에 검증한 헤드(크기 ${size})와의 일관성 증명을 확인했습니다`);
    expect(JSON.parse((await page.evaluate((k) => localStorage.getItem(k), HEAD_KEY))!).tree_size).toBeGreaterThan(size);
  });

  it('verifies a receipt\'s inclusion proof against a head it checked', async () => {
    const item = page.locator('#receipts li', { hasText: '챌린지 구매 100.00' }).first();
    await expect.poll(async () => {
      await item.getByRole('button').click();
      await page.waitForFunction((el) => el!.textContent !== '검증 중…' && el!.textContent !== '', await item.locator('.result').elementHandle());
      return item.locator('.result').textContent();
    }, { timeout: 15_000 }).toMatch(/^체인에서 검증됨/);
    expect(await item.getAttribute('data-verified')).toBe('yes');
  });

  it('shows a forged head as failed: altered in transit, a kept head rewritten in localStorage, a forked log, a chain signing with another key', async () => {
    const good = (await page.evaluate((k) => localStorage.getItem(k), HEAD_KEY))!;
    // 1. the head altered on its way to the page (a root digit changed, the signature kept)
    await page.route('**/api/token/chain/sth', async (route) => {
      const res = await route.fetch();
      const body = await res.json();
      body.sth.root = (body.sth.root[0] === 'a' ? 'b' : 'a') + body.sth.root.slice(1);
      await route.fulfill({ response: res, json: body });
    });
    let r = await chainResult();
    expect(r.verified).toBe('no');
    expect(r.text).toMatch(/^서명 검증 실패/);
    await page.unroute('**/api/token/chain/sth');
    expect(await page.evaluate((k) => localStorage.getItem(k), HEAD_KEY)).toBe(good);

    // 2. the kept head altered in localStorage
    const tampered = { ...JSON.parse(good), root: '0'.repeat(64) };
    await page.evaluate(([k, v]) => localStorage.setItem(k!, v!), [HEAD_KEY, JSON.stringify(tampered)]);
    r = await chainResult();
    expect(r.verified).toBe('no');
    expect(r.text).toContain('저장된 이전 트리 헤드의 서명이 올바르지 않습니다');

    // 3. a head the chain really signed, of a log that the current one does not extend (a fork)
    const g = JSON.parse(good);
    const fork = signTreeHead(peers.chain.state.signingKey, { tree_size: g.tree_size - 1, timestamp: g.timestamp - 1, root: randomBytes(32).toString('hex') });
    await page.evaluate(([k, v]) => localStorage.setItem(k!, v!), [HEAD_KEY, JSON.stringify(fork)]);
    r = await chainResult();
    expect(r.verified).toBe('no');
    expect(r.text).toMatch(/^일관성 검증 실패/);
    expect(JSON.parse((await page.evaluate((k) => localStorage.getItem(k), HEAD_KEY))!)).toEqual(fork);

    // 4. the chain stand-in tampered with: it signs its heads with another key (the hub refuses, the page says so)
    await page.evaluate(([k, v]) => localStorage.setItem(k!, v!), [HEAD_KEY, good]);
    const key = peers.chain.state.signingKey;
    peers.chain.state.signingKey = generateKeyPairSync('ed25519').privateKey;
    try {
      r = await chainResult();
      expect(r.verified).toBe('no');
      expect(r.text).toContain('서명이 올바르지 않습니다 (위조)');
    } finally {
      peers.chain.state.signingKey = key;
    }
    r = await chainResult();
    expect(r.verified).toBe('yes');
  });

  it('follows an off-ramp from pending at the bank to settled after reconciliation, and a rejected one back to the wallet; errors in Korean', async () => {
    const before = await balance();
    await page.fill('#offramp-amount', '50.5');
    await page.click('#offramp button');
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    const text = (await dialog.textContent())!;
    expect(text).toContain('50.50 토큰');
    expect(text).toContain('0.707 토큰'); // 1.4 % of 50.5, exactly
    expect(text).toContain('49.793 토큰');
    await dialog.getByRole('button', { name: '출금' }).click();
    await page.waitForSelector('text=출금을 요청했습니다: 50.50 토큰');
    const id = (await page.locator('#offramps li').first().getAttribute('data-offramp'))!;
    const li = page.locator(`#offramps li[data-offramp="${id}"]`);
    expect(await li.textContent()).toContain('출금 50.50 토큰');
    await expect.poll(() => li.locator('.state').textContent()).toBe('은행 처리 대기 중');
    await expect.poll(balance).toBe(before - 50_500_000n);
    await expect.poll(() => peers.banking.state.offramps.has(`offramp:${id}`), { timeout: 10_000 }).toBe(true);
    // still pending while the bank has not paid
    await new Promise((r) => setTimeout(r, 800));
    expect(await li.getAttribute('data-state')).toBe('sent');
    peers.banking.settleOfframp(`offramp:${id}`, 'paid');
    await new Promise((r) => setTimeout(r, 3000));
    await expect.poll(() => li.getAttribute('data-state'), { timeout: 10_000 }).toBe('paid');
    expect(await li.locator('.state').textContent()).toBe('지급 완료');

    // a rejected one is returned with its fee
    const mid = await balance();
    await page.fill('#offramp-amount', '10');
    await page.click('#offramp button');
    await dialog.getByRole('button', { name: '출금' }).click();
    await page.waitForSelector('text=출금을 요청했습니다: 10.00 토큰');
    const id2 = (await page.locator('#offramps li').first().getAttribute('data-offramp'))!;
    const li2 = page.locator(`#offramps li[data-offramp="${id2}"]`);
    expect(await li2.textContent()).toContain('출금 10.00 토큰');
    await expect.poll(() => peers.banking.state.offramps.has(`offramp:${id2}`), { timeout: 10_000 }).toBe(true);
    peers.banking.settleOfframp(`offramp:${id2}`, 'failed', 'account closed');
    await expect.poll(() => li2.getAttribute('data-state'), { timeout: 10_000 }).toBe('returned');
    expect(await li2.locator('.state').textContent()).toContain('반환됨');
    await expect.poll(balance, { timeout: 10_000 }).toBe(mid);

    // more than the wallet holds: the server's refusal in Korean, nothing moved
    await page.fill('#offramp-amount', '999999999');
    await page.click('#offramp button');
    await dialog.getByRole('button', { name: '출금' }).click();
    await page.waitForSelector('#offramp-message:has-text("잔액이 부족합니다.")');
    expect(await balance()).toBe(mid);
  });

  it('has no serious or critical axe-core violation and fits at 1280 and 360 px, within the CSP (screenshots kept in .tmp/screens)', async () => {
    for (const width of [1280, 360]) {
      await page.setViewportSize({ width, height: 800 });
      await page.reload();
      await page.waitForSelector('body[data-ready]');
      await page.getByRole('button', { name: '이번 달' }).click();
      await page.waitForSelector('#st-result:not([hidden])');
      const axe = await new AxeBuilder({ page: page as any }).analyze();
      const bad = axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join('; ')}`);
      expect(bad).toEqual([]);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
      mkdirSync('.tmp/screens', { recursive: true });
      await page.screenshot({ path: `.tmp/screens/wallet-signed-in-${width}.png`, fullPage: true });
    }
    expect(await page.evaluate(() => (window as any).__csp)).toEqual([]);
    expect(errors).toEqual([]);
  });
});
