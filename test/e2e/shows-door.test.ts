import AxeBuilder from '@axe-core/playwright';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { call, post } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';

// The door on /shows (docs/ticket.md, "The door"): a show's check-in lists with their rules and the
// people inside each, live as scans come in; a list added from the page, a contradicting one refused.
const hasBrowser = browserAvailable();

describe.skipIf(!hasBrowser)('the door on the shows page in Chromium', () => {
  let hub: HubProcess;
  let browser: Browser;

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('shows-door'), ...AUTH_TEST_ENV });
    browser = await launchChromium();
    const operator = bearer(await signIn(hub.url, ['operator']));
    await call(hub.url, 'POST', '/api/auth/accounts', { user: 'office', password: 'office-password', roles: ['staff'] }, operator);
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  it('lists with their rules and who is inside, live; a list is added, a contradicting one refused', async () => {
    const staff = bearer(await signIn(hub.url, ['staff']));
    const show = (await post(hub.url, '/api/shows', { name: '명단 공연', venue: '체조경기장', date: '2026-12-31T20:00:00+09:00' }, staff)).body;
    const t = (await post(hub.url, '/api/reservations', { show_id: show.id, seat: 'V-2', amount_paid: 200000, holder: '최가온' }, staff)).body;
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page: Page = await ctx.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${hub.url}/shows#show/${show.id}`);
    await page.fill('#signin-user', 'office');
    await page.fill('#signin-password', 'office-password');
    await page.press('#signin-password', 'Enter');
    await page.waitForSelector('#lists tr[data-list="main"]');
    expect(await page.textContent('#lists tr[data-list="main"]')).toContain('전체 · all tickets');

    // a list whose validity ends before it starts: refused, nothing added
    await page.fill('#list-name', '거꾸로');
    await page.fill('#list-from-time', '2026-12-31T22:00');
    await page.fill('#list-until-time', '2026-12-31T18:00');
    await page.click('#new-list button[type="submit"]');
    // the refusal is told in Korean by its code (web/common/messages.ts), not as the server's field name
    await page.waitForFunction(() => (document.getElementById('error')?.textContent ?? '').includes('입력한 내용을 확인하세요'));
    expect(await page.locator('#lists tr').count()).toBe(1);

    // a VIP list for seats V-1..V-9, no re-entry
    await page.fill('#list-name', 'VIP');
    await page.fill('#list-from', 'V-1');
    await page.fill('#list-to', 'V-9');
    await page.fill('#list-from-time', '');
    await page.fill('#list-until-time', '');
    await page.uncheck('#list-after-exit');
    await page.click('#new-list button[type="submit"]');
    await page.waitForFunction(() => document.querySelectorAll('#lists tr').length === 2);
    const vipRow = page.locator('#lists tr').nth(1);
    expect(await vipRow.textContent()).toContain('V-1–V-9');
    expect(await vipRow.textContent()).toContain('재입장 없음 · no re-entry');
    const vipId = (await vipRow.getAttribute('data-list'))!;
    expect(await vipRow.locator('a').getAttribute('href')).toBe(`/scan?show=${show.id}&list=${vipId}`);

    // scans at the door move the counts on the page, live
    expect((await call(hub.url, 'POST', '/api/checkin', { code: t.code, list_id: vipId, source: 'camera' }, staff)).status).toBe(201);
    await page.waitForFunction((id) => document.querySelector(`#lists tr[data-list="${id}"] td.inside`)?.textContent === '1' && document.getElementById('c-inside')?.textContent === '1', vipId);
    expect((await call(hub.url, 'POST', '/api/checkin', { code: t.code, list_id: vipId, type: 'exit', source: 'camera' }, staff)).status).toBe(201);
    await page.waitForFunction((id) => document.querySelector(`#lists tr[data-list="${id}"] td.inside`)?.textContent === '0' && document.getElementById('c-inside')?.textContent === '0', vipId);
    const result = await new AxeBuilder({ page: page as any }).include('#lists').include('#new-list').analyze();
    expect(result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id)).toEqual([]);
    expect(errors).toEqual([]);
    await ctx.close();
  });
});
