import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { call } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';

const hasBrowser = browserAvailable();

// registered with the phases backwards (음 first, 티 last), several actions each
const ACTIONS = [
  { id: 'note1', title: '하루 회고 쓰기', phase: '음', reward: 15 },
  { id: 'note2', title: '감사 일기 세 줄', phase: '음', reward: 15 },
  { id: 'call1', title: '고객 한 분께 안부 전화', phase: '타', reward: 30 },
  { id: 'call2', title: '동료에게 칭찬 한마디', phase: '타', reward: 10 },
  { id: 'read1', title: '책 10쪽 읽기', phase: '옴', reward: 20 },
  { id: 'read2', title: '강의 한 편 듣기', phase: '옴', reward: 20 },
  { id: 'walk1', title: '아침 산책 20분', phase: '티', reward: 10 },
  { id: 'walk2', title: '물 여덟 잔 마시기', phase: '티', reward: 5 },
];

/**
 * The coach page's card of the day suggests the actions in the order of the phases (티 → 옴 → 타 →
 * 음), whatever order they were registered in, and doing another action does not change it.
 */
describe.skipIf(!hasBrowser)('the coach\'s card of the day in Chromium', () => {
  let hub: HubProcess;
  let browser: Browser;
  let staff: Record<string, string>;

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('coach-card'), ...AUTH_TEST_ENV });
    staff = bearer(await signIn(hub.url, ['staff']));
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  const card = async (page: Page) => {
    await page.waitForSelector('#nudge', { state: 'visible', timeout: 10_000 });
    return { phase: await page.getAttribute('#nudge', 'data-phase'), message: (await page.textContent('#nudge-message'))! };
  };

  it('starts with the first 티 action for every owner, and keeps it while other actions are done (1280 and 360 px)', async () => {
    for (const [i, width] of [1280, 360, 1280].entries()) {
      const owner = `card${i}${Date.now().toString(36)}`;
      expect((await call(hub.url, 'PUT', `/api/coach/owners/${owner}`, { vision: '건강한 하루', actions: ACTIONS }, staff)).status).toBe(201);
      const page = await browser.newPage({ viewport: { width, height: 800 } });
      await page.goto(`${hub.url}/coach#owner=${owner}`);
      await page.waitForSelector('#actions li');
      const first = await card(page);
      expect(first.phase).toBe('티');
      expect(first.message).toContain('아침 산책 20분');
      // the card sits on the screen, not off its side
      const box = (await page.locator('#nudge').boundingBox())!;
      expect(box.x + box.width).toBeLessThanOrEqual(width);

      // another action (the last phase's) done: the card of the day stays
      await page.click('#actions li[data-action="note1"] button.toggle');
      await page.waitForSelector('#actions li[data-action="note1"][data-status="완료"]');
      await expect.poll(async () => (await call(hub.url, 'GET', '/api/coach/profile', undefined, { 'x-service-owner': owner })).body.points).toBe(15);
      await page.reload();
      await page.waitForSelector('#actions li');
      expect(await card(page)).toEqual(first);

      // the card's own action done: the next in order (the other 티 action), then 옴 once 티 is done
      await page.click('#actions li[data-action="walk1"] button.toggle');
      await expect.poll(async () => (await call(hub.url, 'GET', '/api/coach/profile', undefined, { 'x-service-owner': owner })).body.points).toBe(25);
      await page.reload();
      await page.waitForSelector('#actions li');
      const second = await card(page);
      expect(second.phase).toBe('티');
      expect(second.message).toContain('물 여덟 잔 마시기');
      await page.click('#actions li[data-action="walk2"] button.toggle');
      await expect.poll(async () => (await call(hub.url, 'GET', '/api/coach/profile', undefined, { 'x-service-owner': owner })).body.points).toBe(30);
      await page.reload();
      await page.waitForSelector('#actions li');
      const third = await card(page);
      expect(third.phase).toBe('옴');
      expect(third.message).toContain('책 10쪽 읽기');
      await page.close();
    }
  });
});
