import { mkdirSync } from 'node:fs';
import jsQRModule from 'jsqr';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { call, post } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';

const hasBrowser = browserAvailable();


/** The QR image as the page shows it, drawn on a canvas: RGBA pixels for jsQR (decoded in Node). */
async function qrPixels(page: Page): Promise<{ data: Uint8ClampedArray; width: number; height: number }> {
  const { b64, width, height } = await page.$eval('#qr', (img) => {
    const el = img as HTMLImageElement;
    const canvas = document.createElement('canvas');
    canvas.width = el.naturalWidth;
    canvas.height = el.naturalHeight;
    const ctx = canvas.getContext('2d')!;
    ctx.drawImage(el, 0, 0);
    const px = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
    let s = '';
    for (let i = 0; i < px.length; i += 0x8000) s += String.fromCharCode(...px.subarray(i, i + 0x8000));
    return { b64: btoa(s), width: canvas.width, height: canvas.height };
  });
  return { data: new Uint8ClampedArray(Buffer.from(b64, 'base64')), width, height };
}

describe.skipIf(!hasBrowser)('mobile ticket and scanner in Chromium', () => {
  let hub: HubProcess;
  let browser: Browser;

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('ticket-e2e'), ...AUTH_TEST_ENV });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  it('decodes the QR of the ticket page, checks it in by manual entry, and a second scanner sees it live', async () => {
    await call(hub.url, 'POST', '/api/auth/accounts', { user: 'door', password: 'door-password', roles: ['staff'] }, bearer(await signIn(hub.url, ['operator'])));
    const staff = bearer(await signIn(hub.url, ['staff']));
    const show = (await post(hub.url, '/api/shows', { name: '크리스마스 갈라', venue: '예술의전당', date: '2026-12-25T19:00:00+09:00' }, staff)).body;
    const booked = (await post(hub.url, '/api/reservations', { show_id: show.id, seat: 'R-7', amount_paid: 132000, theme: 'food' }, staff)).body;
    const errors: string[] = [];
    const watch = (p: Page) => p.on('pageerror', (e) => errors.push(e.message));

    // the mobile ticket, on a phone-sized screen
    const ticketPage = await browser.newPage({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2 });
    watch(ticketPage);
    await ticketPage.goto(`${hub.url}/mticket/${booked.code}`);
    await ticketPage.waitForSelector('body[data-ready="true"]');
    expect(await ticketPage.textContent('#show-name')).toBe('크리스마스 갈라');
    expect(await ticketPage.textContent('#venue')).toBe('예술의전당');
    expect(await ticketPage.textContent('#seat')).toBe('R-7');
    expect(await ticketPage.textContent('#amount')).toContain('132,000');
    expect(await ticketPage.getAttribute('#status', 'data-status')).toBe('entry_allowed');
    expect(await ticketPage.$$eval('.bingo', (cards) => cards.length)).toBe(2);
    expect(await ticketPage.$$eval('.bingo th', (th) => th.slice(0, 5).map((t) => t.textContent))).toEqual(['B', 'I', 'N', 'G', 'O']);
    expect(await ticketPage.$$eval('.bingo td.free', (td) => td.map((t) => t.textContent))).toEqual(['FREE', 'FREE']);
    // no sideways scrolling on the phone
    expect(await ticketPage.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);

    // read the QR image from the page and decode it with jsQR
    const px = await qrPixels(ticketPage);
    // jsqr is CommonJS: under NodeNext its default export is the module object
    type Decode = (data: Uint8ClampedArray, width: number, height: number) => { data: string } | null;
    const mod = jsQRModule as unknown as Decode & { default?: Decode };
    const jsQR = mod.default ?? mod;
    const decoded = jsQR(px.data, px.width, px.height);
    expect(decoded?.data).toBe(booked.code);
    const code = decoded!.data;

    // two scanner pages; the second only watches
    const scan1 = await browser.newPage({ viewport: { width: 414, height: 900 } });
    const scan2 = await browser.newPage({ viewport: { width: 414, height: 900 } });
    const devices = [
      ['gate-east', 'E1'],
      ['gate-west', 'W1'],
    ];
    for (const [i, p] of [scan1, scan2].entries()) {
      watch(p);
      await p.goto(`${hub.url}/scan`);
      await p.waitForSelector('body[data-ready="true"][data-live="on"][data-auth="none"]');
      // a door volunteer with a staff account signs in once and registers the device for a gate
      await p.fill('#signin-user', 'door');
      await p.fill('#signin-password', 'door-password');
      await p.click('#signin-form button[type="submit"]');
      await p.waitForSelector('body[data-auth="staff"]');
      await p.fill('#scanner', devices[i]![0]!);
      await p.fill('#gate', devices[i]![1]!);
      await p.click('#register-device');
      await p.waitForSelector('body[data-auth="device"]');
      expect(await p.textContent('#device-label')).toBe(`${devices[i]![0]} @ ${devices[i]![1]}`);
    }
    // a reload keeps the device (its token stays in this browser)
    await scan1.reload();
    await scan1.waitForSelector('body[data-ready="true"][data-auth="device"][data-live="on"]');

    // manual entry, typed the way staff type: lower case
    await scan1.fill('#code', code.toLowerCase());
    await scan1.click('#submit');
    await scan1.waitForSelector('#result[data-result="ok"]');
    expect(await scan1.textContent('#result-detail')).toContain(code);

    // live feedback on the other scanner, and on the holder's ticket
    await scan2.waitForSelector(`#live li[data-code="${code}"]`, { timeout: 5000 });
    expect(await scan2.textContent(`#live li[data-code="${code}"]`)).toContain('gate-east @ E1');
    await scan1.waitForSelector(`#live li[data-code="${code}"]`);
    // the door counter, on both gates: checked in over the show's tickets
    for (const p of [scan1, scan2]) {
      await p.waitForFunction(
        () => !document.querySelector('#door-count')?.hasAttribute('hidden') && document.querySelector('#door-in')?.textContent === '1' && document.querySelector('#door-total')?.textContent === '1',
        null,
        { timeout: 15_000 },
      );
    }
    expect(await scan2.textContent('#door-show')).toBe('크리스마스 갈라');
    await ticketPage.waitForSelector('#status[data-status="checked_in"]', { timeout: 5000 });

    // the second scan of the same ticket is refused with the first check-in's scanner
    await scan2.fill('#code', code);
    await scan2.click('#submit');
    await scan2.waitForSelector('#result[data-result="already_redeemed"]');
    expect(await scan2.textContent('#result-detail')).toContain('gate-east');
    // the server audited both scans under the devices' own names and gates
    const audit = (await call(hub.url, 'GET', '/api/checkins/audit?limit=10', undefined, staff)).body.entries as any[];
    expect(audit.filter((e) => e.code === code).map((e) => `${e.result}:${e.scanner}@${e.gate}`).sort()).toEqual([
      'already_redeemed:gate-west@W1',
      'ok:gate-east@E1',
    ]);
    // an unknown code and a malformed one are refused too
    await scan2.fill('#code', 'TK-22222222');
    await scan2.click('#submit');
    await scan2.waitForSelector('#result[data-result="invalid"]');

    // no camera in headless Chromium: the scanner says so and manual entry stays
    await scan2.click('#camera-toggle');
    await scan2.waitForSelector('.camera[data-state="unavailable"]', { timeout: 5000 });
    expect(await scan2.isVisible('#code')).toBe(true);
    // in plain Korean, with the manual entry offered (and focused)
    expect(await scan2.textContent('#camera-help-text')).toContain('티켓 코드를 직접 입력하세요');
    await scan2.click('#camera-help-manual');
    expect(await scan2.evaluate(() => document.activeElement?.id)).toBe('code');

    // the scanner and gate names stay on the device
    await scan1.reload();
    await scan1.waitForSelector('body[data-ready="true"]');
    expect(await scan1.inputValue('#scanner')).toBe('gate-east');
    expect(await scan1.inputValue('#gate')).toBe('E1');

    mkdirSync('.tmp', { recursive: true });
    await ticketPage.screenshot({ path: '.tmp/mticket.png', fullPage: true });
    await scan1.screenshot({ path: '.tmp/scan.png', fullPage: true });
    expect(errors).toEqual([]);
  });
});
