import { mkdirSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { AUTH_TEST_ENV, bearer, login, TEST_ADMIN_PASSWORD } from '../support/auth.js';

const hasBrowser = browserAvailable();

describe.skipIf(!hasBrowser)('reward dashboard in Chromium', () => {
  let hub: HubProcess;
  let browser: Browser;

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('dashboard'), CLOCK_START: '2026-11-21T12:00:00+09:00', ...AUTH_TEST_ENV });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  for (const width of [1280, 360]) {
    it(`before any reward the coverage says so in people's words, with no developer text (${width} px)`, async () => {
      const page = await browser.newPage({ viewport: { width, height: 900 } });
      await page.goto(hub.url + '/');
      await page.waitForSelector('body[data-ready="true"]');
      // the service's own note (for developers) is not what a person reads
      const reserve = await (await fetch(`${hub.url}/api/reward/reserve`)).json();
      expect(reserve.note).toContain('undefined');
      const body = (await page.textContent('body'))!;
      for (const developer of ['undefined', 'null', 'NaN', reserve.note]) expect(body).not.toContain(developer);
      expect(await page.textContent('#coverage-note')).toContain('아직 만기에 갚아야 할 부족분이 없어');
      expect(await page.textContent('#coverage .bar strong')).toBe('부족분 없음 · nothing to cover');
      // the note stays inside the card at a phone's width
      expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
      await page.close();
    });
  }

  it('shows the principles, the split, coverage and live figures that follow new work', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(hub.url + '/');
    await page.waitForSelector('body[data-ready="true"]');
    await page.waitForSelector('#conn.on');

    expect(await page.textContent('[data-fig="members"]')).toBe('0');
    expect(await page.textContent('#stage-badge')).toBe('S0');
    const principles = await page.$$eval('#principles li', (lis) => lis.map((li) => li.textContent));
    expect(principles).toHaveLength(9);
    expect(principles[8]).toContain('three times the paid value');
    expect(principles[0]).toContain('운영자가 아직 정하지 않았습니다');
    expect(await page.$$eval('#split-donut circle', (c) => c.length)).toBe(3);
    const sim = await page.textContent('#simulation');
    expect(sim).toContain('20%');
    expect(sim).toContain('34%');
    expect(await page.$$eval('#grades tr', (r) => r.length)).toBe(10);

    // work done elsewhere appears live
    const op = bearer(await login(hub.url, 'admin', TEST_ADMIN_PASSWORD));
    const zone = (await (await fetch(`${hub.url}/culture?country=KR&lang=ko&name=ui`, { headers: op })).json()).id;
    const member = await (
      await fetch(`${hub.url}/api/reward/members`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...op },
        body: JSON.stringify({ name: '화면', zone }),
      })
    ).json();
    await fetch(`${hub.url}/work?id=${member.id}&kc=3&v=200`);
    await fetch(`${hub.url}/exchange?id=${member.id}&amt=10`);
    await page.waitForFunction(() => document.querySelector('[data-fig="members"]')?.textContent === '1');
    await page.waitForSelector('#feed li[data-type="exchange"]');
    // 800 x 60% x 200% x 3/27 = 106.66 RU
    expect(await page.textContent('[data-fig="total_ru"]')).toBe('106.66');
    expect(await page.textContent('#feed')).toContain('earned 106.66 RU');
    // The coverage figures follow the exchange live: from '부족분 없음' to a rate.
    await page.waitForFunction(() => /\d+(\.\d+)?%/.test(document.querySelector('#coverage')?.textContent ?? ''));
    expect(await page.textContent('#coverage')).not.toContain('nothing to cover');

    mkdirSync('.tmp', { recursive: true });
    await page.screenshot({ path: '.tmp/reward-dashboard.png', fullPage: true });
    expect(errors).toEqual([]);
  });
});
