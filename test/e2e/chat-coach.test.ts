import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { call } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';

const hasBrowser = browserAvailable();

describe.skipIf(!hasBrowser)('conversation and coaching pages in Chromium', () => {
  let hub: HubProcess;
  let browser: Browser;
  const errors: string[] = [];
  const phone = async () => {
    const p = await browser.newPage({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2 });
    p.on('pageerror', (e) => errors.push(e.message));
    return p;
  };

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('chat-e2e'), ...AUTH_TEST_ENV });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  const lastBot = (page: Page) => page.$$eval('#log li.bot', (els) => els.at(-1)?.textContent ?? '');
  const stage = (page: Page) => page.getAttribute('#stage', 'data-stage');
  const pick = async (page: Page, label: string, next: string) => {
    await page.getByRole('button', { name: label, exact: true }).click();
    await page.waitForFunction((s) => document.getElementById('stage')?.dataset.stage === s && !document.querySelector('#choices button[disabled]'), next);
  };
  const say = async (page: Page, text: string) => {
    const before = await page.$$eval('#log li.bot', (els) => els.length);
    await page.fill('#message', text);
    await page.press('#message', 'Enter');
    await page.waitForFunction((n) => document.querySelectorAll('#log li.bot').length > n, before);
  };

  it('walks /chat with buttons and typed answers to a receipt number', async () => {
    const page = await phone();
    await page.goto(`${hub.url}/chat`);
    await page.waitForFunction(() => document.getElementById('stage')?.dataset.stage === 'greet');
    expect(await lastBot(page)).toContain('어떻게 알게 되셨나요');
    await say(page, '인스타 보고 왔어요');
    expect(await stage(page)).toBe('need');
    await pick(page, '버틀러 서비스', 'recommend');
    // the product by its name, not its rule number
    expect(await page.textContent('#log li.card[data-card="product"] .card-title')).toBe('버틀러 케어 서비스');
    expect(await page.textContent('#log li.card[data-card="product"]')).not.toContain('코드');
    await pick(page, '신청할게요', 'collect');
    await say(page, '한지민');
    await say(page, '잘못된 번호');
    expect(await lastBot(page)).toContain('010-1234-5678');
    await say(page, '010-3030-4040');
    await say(page, 'jimin@example.kr');
    await pick(page, '없음', 'collect');
    await page.waitForSelector('#log li.card[data-card="summary"]');
    expect(await page.textContent('#stage')).toBe('4. 정보 입력');
    expect(await page.textContent('#log li.card[data-card="summary"] dd[data-field="contact"]')).toBe('010-3030-4040');
    await pick(page, '확인', 'received');
    await page.waitForSelector('#receipt:not([hidden])');
    const receiptNo = (await page.textContent('#receipt-no'))!;
    expect(receiptNo).toMatch(/^R\d{6}-\d{6,}$/);
    expect(await page.textContent('#log li.card[data-card="receipt"]')).toContain(receiptNo);
    await pick(page, '진행 상황 보기', 'track');
    expect(await page.textContent('#log li.card[data-card="progress"]')).toContain('접수 완료');
    // the page fits a phone: no horizontal scrolling
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    // a reload continues the same session
    await page.reload();
    await page.waitForFunction(() => document.getElementById('stage')?.dataset.stage === 'track');
    expect(await page.textContent('#receipt-no')).toBe(receiptNo);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('toggles an action on /coach: optimistic, kept when the call fails, reward animation on completion', async () => {
    const staff = await signIn(hub.url, ['staff']);
    const reg = await call(
      hub.url,
      'PUT',
      '/api/coach/owners/web-owner',
      {
        vision: '매일 한 걸음씩',
        actions: [
          { id: 'walk', title: '아침 산책', phase: '티', reward: 10 },
          { id: 'read', title: '책 읽기', phase: '옴', reward: 25 },
          { id: 'call', title: '안부 전화', phase: '타', reward: 5 },
          { id: 'note', title: '회고 쓰기', phase: '음', reward: 7 },
        ],
      },
      bearer(staff),
    );
    expect(reg.status).toBe(201);
    const page = await phone();
    await page.goto(`${hub.url}/coach?owner=${reg.body.header}`);
    await page.waitForSelector('#actions li');
    expect(await page.textContent('#vision')).toBe('매일 한 걸음씩');
    // the nudge comes from its own request: wait for it to show rather than racing it
    await page.waitForSelector('#nudge', { state: 'visible', timeout: 10_000 });
    expect(await page.isVisible('#nudge')).toBe(true);
    // each phase in its own colour
    const colours = await page.$$eval('#actions li .phase', (els) => els.map((e) => getComputedStyle(e).backgroundColor));
    expect(new Set(colours).size).toBe(4);

    // a completion: flips at once, the server pays, the reward animation plays
    await page.click('#actions li[data-action="read"] button.toggle');
    expect(await page.getAttribute('#actions li[data-action="read"]', 'data-status')).toBe('완료');
    await page.waitForSelector('#reward.play');
    expect(await page.textContent('#reward')).toContain('+25');
    await page.waitForFunction(() => document.getElementById('points')?.textContent === '25점');
    const profile = await call(hub.url, 'GET', '/api/coach/profile', undefined, { 'x-service-owner': reg.body.header });
    expect(profile.body.actions.find((a: { id: string }) => a.id === 'read').status).toBe('완료');

    // the call fails: the toggle stays flipped (optimistic update kept)
    await page.route('**/api/coach/action', (route) => route.abort('failed'));
    await page.click('#actions li[data-action="walk"] button.toggle');
    await page.waitForSelector('#actions li[data-action="walk"][data-sync="failed"]');
    expect(await page.getAttribute('#actions li[data-action="walk"]', 'data-status')).toBe('완료');
    const after = await call(hub.url, 'GET', '/api/coach/profile', undefined, { 'x-service-owner': reg.body.header });
    expect(after.body.actions.find((a: { id: string }) => a.id === 'walk').status).toBe('대기');

    // the dismiss control hides the card without a call
    await page.click('#dismiss');
    expect(await page.isVisible('#nudge')).toBe(false);
    expect(errors).toEqual([]);
    await page.close();
  });
});
