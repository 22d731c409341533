/**
 * The pages on one typed client (web/common/api.ts), in a real Chromium against a started hub:
 * no page calls fetch itself; no server code in a bundle; refusals in Korean by error code; the
 * smaller defects of the pages that moved (rental marks, a wrong file refused when picked, the
 * duplicate seat's message with no stale success beside it, the coach card after its action, the
 * accounts' stale success); the payments back office for operators; axe at 0 serious or critical
 * on the pages touched, signed in, at 1280 and 360 px.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_TEST_ENV, bearer, signIn, TEST_ADMIN_PASSWORD } from '../support/auth.js';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { call, post } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';

const ROOT = resolve(import.meta.dirname, '../..');
const walk = (dir: string): string[] => readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? walk(join(dir, n)) : [join(dir, n)]));

describe('the pages speak the API through one client', () => {
  it('no page calls fetch itself (web/common/api.ts is the one door)', () => {
    const callers = walk(join(ROOT, 'web'))
      .filter((f) => f.endsWith('.ts'))
      .filter((f) => !f.endsWith('/web/common/api.ts'))
      .filter((f) => /\bfetch\(/.test(readFileSync(f, 'utf8')));
    expect(callers).toEqual([]);
    // and the door is there
    expect(readFileSync(join(ROOT, 'web/common/api.ts'), 'utf8')).toMatch(/\bfetch\(/);
  });

  it('no server code reaches a page bundle (the route tables are imported as types only)', () => {
    const assets = join(ROOT, 'dist/web/assets');
    expect(existsSync(assets), 'run npm run build').toBe(true);
    const bundles = readdirSync(assets).filter((f) => f.endsWith('.js'));
    expect(bundles.length).toBeGreaterThan(10);
    // texts that live only in the server's route modules and hub
    const serverOnly = ['is required: the access key given at submission', 'the hub has no store yet', 'uWebSockets', 'registerRentalRoutes', 'route pattern must start with /', 'registerTradingRoutes', 'a dataset is private to its trader'];
    for (const b of bundles) {
      const text = readFileSync(join(assets, b), 'utf8');
      for (const s of serverOnly) expect(text.includes(s), `${b} holds "${s}"`).toBe(false);
    }
  });
});

const hasBrowser = browserAvailable();

describe.skipIf(!hasBrowser)('pages on the client, in Chromium', () => {
  let hub: HubProcess;
  let browser: Browser;
  let staff: string;

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('client-pages'), ...AUTH_TEST_ENV }, 30_000);
    browser = await launchChromium();
    staff = await signIn(hub.url, ['staff']);
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  async function open(path: string, width = 1280): Promise<{ page: Page; errors: string[] }> {
    // a context of its own (axe-core/playwright needs the page's context)
    const ctx = await browser.newContext({ viewport: { width, height: width < 500 ? 780 : 900 } });
    const page = await ctx.newPage();
    page.on('close', () => void ctx.close().catch(() => undefined));
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${hub.url}${path}`);
    return { page, errors };
  }
  async function signInOn(page: Page, user: string, password: string): Promise<void> {
    await page.fill('#signin-user', user);
    await page.fill('#signin-password', password);
    await page.press('#signin-password', 'Enter');
  }
  async function axeProblems(page: Page): Promise<string[]> {
    const axe = await new AxeBuilder({ page: page as any }).analyze();
    return axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.impact} ${v.id} (${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join('; ')})`);
  }

  it('a wrong sign-in is said in Korean by its code, not in the server\'s English', async () => {
    const { page, errors } = await open('/accounts');
    await page.waitForSelector('#signin-form');
    await signInOn(page, 'admin', 'not-the-password');
    await page.waitForFunction(() => (document.getElementById('signin-error')?.textContent ?? '') !== '');
    expect(await page.textContent('#signin-error')).toBe('아이디 또는 비밀번호가 맞지 않습니다.');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('accounts: a refusal after a success leaves no stale success beside the Korean error', async () => {
    const { page, errors } = await open('/accounts', 360);
    await page.waitForSelector('#signin-form');
    await signInOn(page, 'admin', TEST_ADMIN_PASSWORD);
    await page.waitForSelector('#board:not([hidden])');
    await page.fill('#new-user', 'dup-user');
    await page.fill('#new-password', 'a-long-password');
    await page.click('#new-account button[type=submit]');
    await page.waitForFunction(() => (document.getElementById('new-result')?.textContent ?? '').includes('dup-user'));
    // the same name again: refused (409 account_exists), in Korean, and the success is gone
    await page.fill('#new-user', 'dup-user');
    await page.fill('#new-password', 'a-long-password');
    await page.click('#new-account button[type=submit]');
    await page.waitForFunction(() => (document.getElementById('error')?.textContent ?? '') !== '');
    expect(await page.textContent('#error')).toBe('이미 있는 아이디입니다.');
    expect(await page.textContent('#new-result')).toBe('');
    // a device token comes with a copy button
    await page.fill('#device-gate', 'A');
    await page.fill('#device-name', 'door-a');
    await page.click('#new-device button[type=submit]');
    await page.waitForSelector('#device-token');
    expect(await page.isVisible('#device-result button.copy')).toBe(true);
    expect(await axeProblems(page)).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('rental: an empty submit marks the missing field; a wrong file type is refused when picked', async () => {
    const { page, errors } = await open('/rental.html', 360);
    await page.waitForSelector('body[data-ready]');
    await page.click('#submit');
    expect(await page.getAttribute('#contactPhone', 'aria-invalid')).toBe('true');
    expect(await page.textContent('#contactPhone-error')).toContain('연락처');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('contactPhone');
    // a .txt file is refused as it is picked: the field is emptied and marked
    await page.setInputFiles('#bizCard', { name: 'card.txt', mimeType: 'text/plain', buffer: Buffer.from('not a card') });
    expect(await page.getAttribute('#bizCard', 'aria-invalid')).toBe('true');
    expect(await page.evaluate(() => (document.getElementById('bizCard') as HTMLInputElement).files?.length ?? 0)).toBe(0);
    expect(await page.textContent('#bizCard-error')).toContain('담당자 명함');
    // filled in, the mark goes and the application is received with its total and a copy button
    await page.fill('#contactPhone', '010-1234-5678');
    await page.click('#submit');
    await page.waitForSelector('#done:not([hidden])');
    expect(await page.getAttribute('#contactPhone', 'aria-invalid')).toBeNull();
    expect(await page.textContent('#done-total')).toMatch(/원 \(36개월\)$/);
    expect(await page.isVisible('#access-key-copy button')).toBe(true);
    expect(await page.isVisible('#print')).toBe(true);
    expect(await axeProblems(page)).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('shows: a duplicate seat is refused in Korean and the earlier booking\'s box is gone', async () => {
    const show = (await post(hub.url, '/api/shows', { name: '봄 음악회', venue: '세종문화회관', date: '2026-12-24T19:00:00+09:00' }, bearer(staff))).body;
    const { page, errors } = await open(`/shows#show/${show.id}`);
    await page.evaluate((t) => sessionStorage.setItem('shows:token', t), staff);
    await page.reload();
    await page.waitForSelector('#book-seat');
    const book = async (seat: string) => {
      await page.fill('#book-seat', seat);
      await page.fill('#book-amount', '50000');
      await page.click('#book button[type=submit]');
    };
    await book('A-1');
    await page.waitForSelector('#booked:not([hidden])');
    await book('A-1');
    await page.waitForFunction(() => (document.getElementById('error')?.textContent ?? '') !== '');
    expect(await page.textContent('#error')).toBe('이미 예매된 좌석입니다. 다른 좌석을 고르세요.');
    expect(await page.isHidden('#booked')).toBe(true);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('coach: the card of the day moves on once its action is done, and the phases are explained', async () => {
    const ownerId = `owner-${process.pid}`;
    const owner = (
      await call(
        hub.url,
        'PUT',
        `/api/coach/owners/${ownerId}`,
        { vision: '동네 최고의 빵집', actions: [{ id: 'a1', title: '아침 빵 굽기', phase: '티', reward: 10 }, { id: 'a2', title: '손님께 인사', phase: '옴', reward: 20 }] },
        bearer(staff),
      )
    ).body;
    const { page, errors } = await open(`/coach#owner=${encodeURIComponent(owner.header)}`, 360);
    await page.waitForSelector('body[data-ready]');
    await page.waitForSelector('#nudge:not([hidden])');
    expect(await page.getAttribute('#nudge', 'data-action')).toBe('a1');
    expect(await page.textContent('#phases-help')).toContain('티 → 옴 → 타 → 음');
    await page.click('li[data-action="a1"] button.toggle');
    await page.waitForFunction(() => document.getElementById('nudge')?.dataset.action === 'a2');
    expect(errors).toEqual([]);
    await page.close();
  });

  for (const width of [1280, 360]) {
    it(`chat at ${width} px: at the confirmation the summary and its buttons are in view`, async () => {
      const { page, errors } = await open('/chat', width);
      await page.waitForFunction(() => document.getElementById('stage')?.dataset.stage === 'greet');
      const bots = () => page.$$eval('#log li.bot', (els) => els.length);
      const step = async (act: () => Promise<void>) => {
        const before = await bots();
        await act();
        await page.waitForFunction((n) => document.querySelectorAll('#log li.bot').length > n, before);
      };
      const press = (label: string) => step(() => page.getByRole('button', { name: label, exact: true }).click());
      const say = (text: string) =>
        step(async () => {
          await page.fill('#message', text);
          await page.press('#message', 'Enter');
        });
      await press('검색');
      await press('렌탈');
      await press('신청할게요');
      await say('한지민');
      await say('010-2222-3333');
      await press('건너뛰기');
      await say('네');
      expect(await page.getAttribute('#stage', 'data-stage')).toBe('collect');
      // the summary card and the confirm button are inside the viewport without scrolling by hand
      const inView = (selector: string) =>
        page.$eval(selector, (el) => {
          const r = el.getBoundingClientRect();
          return r.top >= 0 && r.bottom <= window.innerHeight + 1;
        });
      await page.waitForTimeout(300);
      expect(await inView('#choices')).toBe(true);
      expect(await page.$$eval('#log li.card[data-card="summary"]', (c) => c.length)).toBeGreaterThan(0);
      const confirm = page.getByRole('button', { name: '확인', exact: true });
      expect(await confirm.isVisible()).toBe(true);
      expect(await confirm.evaluate((el) => { const r = el.getBoundingClientRect(); return r.top >= 0 && r.bottom <= window.innerHeight + 1; })).toBe(true);
      expect(errors).toEqual([]);
      await page.close();
    }, 60_000);
  }

  for (const width of [1280, 360]) {
    it(`the payments back office: listed in /pages, for operators only, its sections drawn, axe clean at ${width} px`, async () => {
      const pages = (await (await fetch(`${hub.url}/pages`, { headers: { accept: 'application/json' } })).json()) as { pages: { path: string; description: string }[] };
      const listed = pages.pages.find((p) => p.path === '/payments');
      expect(listed?.description).toMatch(/지급/);
      const { page, errors } = await open('/payments', width);
      await page.waitForSelector('#signin-form');
      expect(await page.isVisible('#board')).toBe(false);
      // signed out, the title and the sign-in bar fit the width too
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
      await signInOn(page, 'admin', TEST_ADMIN_PASSWORD);
      await page.waitForSelector('body[data-ready]');
      await page.waitForSelector('#board:not([hidden])');
      // the reviews table is drawn from /api/token/ops/reviews (none held in a fresh hub)
      await page.waitForFunction(() => (document.getElementById('reviews')?.textContent ?? '') !== '');
      expect(await page.textContent('#reviews')).toContain('처리할 심사가 없습니다');
      expect(await page.textContent('#alarms')).not.toBe('');
      // a reversal without a reason is marked, not sent
      await page.fill('#reverse-id', 'tx_1');
      await page.click('#reverse button[type=submit]');
      expect(await page.getAttribute('#reverse-reason', 'aria-invalid')).toBe('true');
      // an unknown transfer with a reason is refused in Korean (the shared error shape, by code)
      await page.fill('#reverse-reason', '잘못된 이체');
      await page.click('#reverse button[type=submit]');
      await page.waitForFunction(() => document.getElementById('notice')?.dataset.kind === 'error');
      expect(await page.textContent('#notice')).toMatch(/[가-힣]/);
      // the operator account statement of this month (a fresh hub: opening and closing 0)
      await page.click('#statement button[type=submit]');
      await page.waitForFunction(() => (document.getElementById('st-summary')?.textContent ?? '') !== '');
      expect(await page.textContent('#st-summary')).toContain('escrow');
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
      expect(await axeProblems(page)).toEqual([]);
      expect(errors).toEqual([]);
      await page.close();
    }, 60_000);
  }

  it('the payments back office refuses a staff member who is not an operator', async () => {
    const { page } = await open('/payments');
    await page.evaluate((t) => sessionStorage.setItem('payments:token', t), staff);
    await page.reload();
    await page.waitForSelector('body[data-ready]');
    expect(await page.isVisible('#board')).toBe(false);
    expect(await page.getAttribute('body', 'data-auth')).toBe('other');
    await page.close();
  });
});
