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
    expect(principles[0]).toContain('not configured');
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
    await page.waitForFunction(() => !document.querySelector('#coverage')?.textContent?.includes('no maturity shortfall'));
    expect(await page.textContent('#coverage')).toMatch(/\d+(\.\d+)?%/);

    mkdirSync('.tmp', { recursive: true });
    await page.screenshot({ path: '.tmp/reward-dashboard.png', fullPage: true });
    expect(errors).toEqual([]);
  });
});
