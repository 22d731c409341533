import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { post } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';

const hasBrowser = browserAvailable();

/** "2026-11-25 13:05 KST" of an instant (what web/common/time.ts writes), computed here without a browser. */
const kst = (ms: number) => `${new Date(ms + 9 * 3_600_000).toISOString().slice(0, 16).replace('T', ' ')} KST`;
const STAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2} KST$/;

/**
 * One time-zone rule on every page: times in KST with the zone written and dates with their year,
 * whatever zone the browser is in (this browser: Los Angeles).
 */
describe.skipIf(!hasBrowser)('times on the pages in Chromium (a browser in another zone)', () => {
  let hub: HubProcess;
  let browser: Browser;
  let ctx: BrowserContext;
  let staff: Record<string, string>;

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('time-zone'), ...AUTH_TEST_ENV });
    staff = bearer(await signIn(hub.url, ['staff']));
    browser = await launchChromium();
    ctx = await browser.newContext({ timezoneId: 'America/Los_Angeles', locale: 'en-US', viewport: { width: 360, height: 800 } });
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  it('the ticket: the show\'s time and the check-in time in KST with the year', async () => {
    const show = (await post(hub.url, '/api/shows', { name: '봄 콘서트', venue: '올림픽홀', date: '2027-03-01T18:00:00+09:00' }, staff)).body;
    const t = (await post(hub.url, '/api/reservations', { show_id: show.id, seat: 'B-2', amount_paid: 70000 }, staff)).body;
    const checkin = await post(hub.url, '/api/checkin', { code: t.code, scanner: 'gate-west' }, staff);
    expect(checkin.status).toBe(201);
    const page = await ctx.newPage();
    expect(await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone)).toBe('America/Los_Angeles');
    await page.goto(`${hub.url}/mticket/${t.code}`);
    await page.waitForSelector('body[data-ready="true"]');
    expect(await page.textContent('#date')).toBe('2027-03-01 18:00 KST');
    expect(await page.textContent('#checked-in')).toContain(kst(Date.parse(checkin.body.checkin.at)));
    await page.close();
  });

  it('the documents: the recent list in KST with the year', async () => {
    const editor = bearer(await signIn(hub.url, ['editor']));
    const before = Date.now();
    expect((await post(hub.url, '/api/md/save', { slug: 'zone-note', content: '# 시간대\n\n본문\n' }, editor)).status).toBe(200);
    const page = await ctx.newPage();
    await page.goto(`${hub.url}/docs`);
    await page.click('#show-stats');
    await page.waitForSelector('#recent li');
    const line = (await page.textContent('#recent li'))!;
    const stamp = line.split(' · ').at(-1)!;
    expect(stamp).toMatch(STAMP);
    // the minute of the save, within a minute
    const at = Date.parse(`${stamp.slice(0, 16).replace(' ', 'T')}:00+09:00`);
    expect(Math.abs(at - before)).toBeLessThan(120_000);
    await page.close();
  });
});
