import { THEMES } from '../../src/ticket/themes.js';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { post } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';

const hasBrowser = browserAvailable();

describe.skipIf(!hasBrowser)('the holder\'s ticket page in Chromium', () => {
  let hub: HubProcess;
  let browser: Browser;
  let show: { id: string };
  let staff: Record<string, string>;

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('mticket-page'), ...AUTH_TEST_ENV });
    staff = bearer(await signIn(hub.url, ['staff']));
    browser = await launchChromium();
    show = (await post(hub.url, '/api/shows', { name: '봄 콘서트', venue: '올림픽홀', date: '2027-03-01T18:00:00+09:00' }, staff)).body;
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  it('names the holder, and bingo cells are marked from the keyboard', async () => {
    const t = (await post(hub.url, '/api/reservations', { show_id: show.id, seat: 'C-3', amount_paid: 70000, holder: '박서준' }, staff)).body;
    const page = await browser.newPage({ viewport: { width: 360, height: 780 } });
    await page.goto(`${hub.url}/mticket/${t.code}`);
    await page.waitForSelector('body[data-ready="true"]');
    expect(await page.textContent('#holder')).toBe('박서준');
    expect(await page.isVisible('#qr')).toBe(true);
    // each card's title names its theme as people read it (the hub's list), never its code
    const themeId = (await page.getAttribute('.bingo[data-card="1"] h2', 'data-theme'))!;
    const named = THEMES.find((th) => th.id === themeId)!;
    expect(await page.textContent('.bingo[data-card="1"] h2')).toBe(`빙고 1 · ${named.name}`);
    expect(await page.textContent('.bingo[data-card="1"] h2')).toMatch(/[가-힣]/);
    // Tab to the first cell of the first card, Enter marks it, Space unmarks it
    const first = page.locator('.bingo[data-card="1"] td button').first();
    await first.focus();
    expect(await page.evaluate(() => document.activeElement?.closest('td') !== null)).toBe(true);
    await page.keyboard.press('Enter');
    expect(await first.getAttribute('aria-pressed')).toBe('true');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Space');
    const second = page.locator('.bingo[data-card="1"] td button').nth(1);
    expect(await second.getAttribute('aria-pressed')).toBe('true');
    expect(await page.locator('.bingo[data-card="1"] td.marked').count()).toBe(2);
    // the marks survive a reload (kept on the phone)
    await page.reload();
    await page.waitForSelector('body[data-ready="true"]');
    expect(await page.locator('.bingo[data-card="1"] td.marked').count()).toBe(2);
    await page.close();
  });

  it('a cancelled ticket is shown as cancelled, with no QR code to scan — also when it is cancelled while open', async () => {
    const t = (await post(hub.url, '/api/reservations', { show_id: show.id, seat: 'C-4', amount_paid: 70000 }, staff)).body;
    const page = await browser.newPage({ viewport: { width: 360, height: 780 } });
    await page.goto(`${hub.url}/mticket/${t.code}`);
    await page.waitForSelector('body[data-ready="true"]');
    expect(await page.isVisible('#qr')).toBe(true);
    expect((await post(hub.url, `/api/tickets/${t.reservation_id}/cancel`, {}, staff)).status).toBe(200);
    await page.waitForSelector('#status[data-status="cancelled"]');
    expect(await page.isHidden('#qr')).toBe(true);
    expect(await page.getAttribute('#qr', 'src')).toBeNull();
    expect(await page.textContent('#void')).toContain('취소된 티켓');
    await page.reload();
    await page.waitForSelector('body[data-ready="true"]');
    expect(await page.isHidden('#qr-box')).toBe(true);
    expect(await page.getAttribute('#qr', 'src')).toBeNull();
    expect(await page.isVisible('#void')).toBe(true);
    await page.close();
  });

  /** A phone that opened the ticket once (the service worker kept it), then reloads it offline. */
  async function reloadedOffline(code: string) {
    const ctx = await browser.newContext({ viewport: { width: 360, height: 780 } });
    const page = await ctx.newPage();
    await page.goto(`${hub.url}/mticket/${code}`);
    await page.waitForSelector('body[data-ready="true"][data-offline-ready="true"]', { timeout: 10_000 });
    await ctx.setOffline(true);
    await page.reload();
    await page.waitForSelector('body[data-ready="true"]', { timeout: 10_000 });
    return { ctx, page };
  }

  it('still shows the ticket when the phone goes offline (the service worker keeps the last one)', async () => {
    const t = (await post(hub.url, '/api/reservations', { show_id: show.id, seat: 'C-5', amount_paid: 70000, holder: '이하늘' }, staff)).body;
    const { ctx, page } = await reloadedOffline(t.code);
    expect(await page.textContent('#show-name')).toBe('봄 콘서트');
    expect(await page.textContent('#holder')).toBe('이하늘');
    expect(await page.textContent('#code')).toBe(t.code);
    expect(await page.isVisible('#offline')).toBe(true);
    expect(await page.evaluate(() => (document.getElementById('qr') as HTMLImageElement).complete && (document.getElementById('qr') as HTMLImageElement).naturalWidth > 0)).toBe(true);
    await ctx.close();
  }, 60_000);

  it('offline, the ticket keeps the web font: its Korean is drawn with Noto Sans KR, not a system font', async () => {
    const t = (await post(hub.url, '/api/reservations', { show_id: show.id, seat: 'C-6', amount_paid: 70000, holder: '정다은' }, staff)).body;
    const { ctx, page } = await reloadedOffline(t.code);
    expect(await page.isVisible('#offline')).toBe(true);
    const fonts = await page.evaluate(async () => {
      const holder = document.getElementById('holder')!.textContent ?? '';
      // the faces the page's text needs (the slices whose unicode-range it uses) load or fail by now
      await document.fonts.ready;
      const faces = [...document.fonts].filter((f) => f.family.replace(/"/g, '') === 'Noto Sans KR');
      return { holder, loaded: faces.filter((f) => f.status === 'loaded').length, failed: faces.filter((f) => f.status === 'error').length, family: getComputedStyle(document.getElementById('holder')!).fontFamily };
    });
    expect(fonts.holder).toBe('정다은');
    expect(fonts.family).toMatch(/^"Noto Sans KR"/);
    expect(fonts.loaded).toBeGreaterThan(0);
    expect(fonts.failed).toBe(0);
    await ctx.close();
  }, 60_000);

  it('follows the door live: checked in at a scan, entry allowed again when staff undo it', async () => {
    const t = (await post(hub.url, '/api/reservations', { show_id: show.id, seat: 'D-4', amount_paid: 70000 }, staff)).body;
    const page = await browser.newPage({ viewport: { width: 360, height: 780 } });
    await page.goto(`${hub.url}/mticket/${t.code}`);
    await page.waitForSelector('body[data-ready="true"][data-live="on"]');
    expect(await page.getAttribute('#status', 'data-status')).toBe('entry_allowed');
    const scanned = await post(hub.url, '/api/checkin', { code: t.code }, staff);
    expect(scanned.status).toBe(201);
    await page.waitForSelector('#status[data-status="checked_in"]');
    const undo = await post(hub.url, `/api/shows/${show.id}/lists/main/revert`, { reservation_id: t.reservation_id, scan_id: scanned.body.checkin.id, reason: '잘못 찍음' }, staff);
    expect(undo.status).toBe(200);
    await page.waitForSelector('#status[data-status="entry_allowed"]');
    expect(await page.textContent('#status')).toBe('입장 가능 · entry allowed');
    expect(await page.textContent('#checked-in')).toBe('');
    await page.close();
  });
});
