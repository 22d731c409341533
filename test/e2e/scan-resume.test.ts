import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_TEST_ENV, bearer, deviceToken, signIn } from '../support/auth.js';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { post } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { tcpProxy, type TcpProxy } from '../support/proxy.js';

const hasBrowser = browserAvailable();

describe.skipIf(!hasBrowser)('a scanner that loses its connection', () => {
  let hub: HubProcess;
  let browser: Browser;
  let proxy: TcpProxy;

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('scan-resume'), ...AUTH_TEST_ENV });
    proxy = await tcpProxy(hub.url);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await proxy?.close();
    await hub?.stop();
  });

  it('shows the three check-ins made elsewhere during a 10 s drop, from the WebSocket history, without reloading the list', async () => {
    const staff = await signIn(hub.url, ['staff']);
    const as = bearer(staff);
    const show = (await post(hub.url, '/api/shows', { name: '송년 음악회', venue: '세종문화회관', date: '2026-12-31T20:00:00+09:00' }, as)).body;
    const codes: string[] = [];
    for (const seat of ['A-1', 'A-2', 'A-3', 'A-4']) {
      codes.push((await post(hub.url, '/api/reservations', { show_id: show.id, seat, amount_paid: 50000, theme: 'food' }, as)).body.code);
    }

    // this scanner is a registered door device (its token kept in the browser, as the page keeps it)
    const device = await deviceToken(hub.url, 'N1', 'gate-north');
    const page = await browser.newPage();
    await page.addInitScript((t) => localStorage.setItem('scan:token', t), device);
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const listLoads: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/api/checkins')) listLoads.push(r.url());
    });
    await page.goto(`${proxy.url}/scan`);
    await page.waitForSelector('body[data-ready="true"][data-live="on"][data-auth="device"]');

    // one check-in while connected arrives live (and gives the page its position)
    expect((await post(hub.url, '/api/checkin', { code: codes[0], scanner: 'gate-west' }, as)).status).toBe(201);
    await page.waitForSelector(`#live li[data-code="${codes[0]}"]`, { timeout: 5000 });
    const loadsBefore = listLoads.length;

    // the network drops for 10 s; three tickets are checked in at another gate meanwhile
    proxy.cut();
    await page.waitForSelector('body[data-live="off"]', { timeout: 5000 });
    const droppedAt = Date.now();
    for (const code of codes.slice(1)) {
      expect((await post(hub.url, '/api/checkin', { code, scanner: 'gate-west' }, as)).status).toBe(201);
    }
    for (const code of codes.slice(1)) expect(await page.$(`#live li[data-code="${code}"]`)).toBeNull();
    await new Promise((r) => setTimeout(r, Math.max(0, 10_000 - (Date.now() - droppedAt))));
    proxy.restore();

    // back online: all three appear, recovered from the hub's history (no list reload)
    await page.waitForSelector('body[data-live="on"]', { timeout: 20_000 });
    for (const code of codes.slice(1)) await page.waitForSelector(`#live li[data-code="${code}"]`, { timeout: 5000 });
    expect(await page.textContent('#count')).toBe('4');
    expect(listLoads.length).toBe(loadsBefore);
    expect(errors).toEqual([]);
  }, 60_000);
});
