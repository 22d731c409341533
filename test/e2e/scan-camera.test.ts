import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import QRCode from 'qrcode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, browserAvailable } from '../support/browser.js';
import { AUTH_TEST_ENV, bearer, deviceToken, signIn } from '../support/auth.js';
import { get, post } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';

const hasBrowser = browserAvailable();

/** A one-frame Y4M video (grey I420) showing the QR code of `text`: Chromium's fake camera plays it in a loop. */
function qrVideo(text: string, dir: string): string {
  const qr = QRCode.create(text, { errorCorrectionLevel: 'M' });
  const n = qr.modules.size;
  const W = 320;
  const H = 240;
  const scale = Math.floor(200 / (n + 8));
  const off = (size: number) => Math.floor((size - n * scale) / 2);
  const y = Buffer.alloc(W * H, 235);
  for (let r = 0; r < n; r++)
    for (let c = 0; c < n; c++)
      if (qr.modules.data[r * n + c])
        for (let dy = 0; dy < scale; dy++) for (let dx = 0; dx < scale; dx++) y[(off(H) + r * scale + dy) * W + off(W) + c * scale + dx] = 16;
  const uv = Buffer.alloc((W / 2) * (H / 2), 128);
  const file = join(dir, 'qr.y4m');
  writeFileSync(file, Buffer.concat([Buffer.from(`YUV4MPEG2 W${W} H${H} F10:1 Ip A1:1 C420jpeg\n`), Buffer.from('FRAME\n'), y, uv, uv]));
  return file;
}

describe.skipIf(!hasBrowser)('door scanner with a camera, on a phone, in Chromium', () => {
  let hub: HubProcess;
  let browser: Browser | undefined;

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('scan-camera'), ...AUTH_TEST_ENV });
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  it('a QR code held in front of the camera for several seconds is one check-in: the same nonce, still green', async () => {
    const staff = bearer(await signIn(hub.url, ['staff']));
    const show = (await post(hub.url, '/api/shows', { name: '송년 음악회', venue: '세종문화회관', date: '2026-12-30T19:00:00+09:00' }, staff)).body;
    const booked = (await post(hub.url, '/api/reservations', { show_id: show.id, seat: 'A-1', amount_paid: 50000 }, staff)).body;
    // a door device registered for gate N1
    const device = await deviceToken(hub.url, 'N1', 'north-door');
    const video = qrVideo(booked.code, tempDir('scan-video'));
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream', `--use-file-for-fake-video-capture=${video}`],
    });
    const ctx = await browser.newContext({ viewport: { width: 360, height: 740 } });
    await ctx.addInitScript((t) => localStorage.setItem('scan:token', t), device);
    const page: Page = await ctx.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const bodies: { nonce: string; code: string; source: string }[] = [];
    page.on('request', (r) => {
      if (r.url().endsWith('/api/checkin') && r.method() === 'POST') bodies.push(JSON.parse(r.postData() ?? '{}'));
    });
    await page.goto(`${hub.url}/scan`);
    await page.waitForSelector('body[data-ready="true"][data-auth="device"]');
    // the page fits the phone: nothing to scroll sideways, the check-in button fully on screen
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
    const button = (await page.locator('#submit').boundingBox())!;
    expect(button.x + button.width).toBeLessThanOrEqual(360);

    await page.click('#camera-toggle');
    await page.waitForSelector('#result[data-result="ok"]', { timeout: 15_000 });
    // the code stays in front of the camera: the page sends it again after its 4 s pause
    await expect.poll(() => bodies.length, { timeout: 15_000, interval: 200 }).toBeGreaterThanOrEqual(2);
    const [first, second] = bodies;
    expect(first!.code).toBe(booked.code);
    expect(second!.code).toBe(booked.code);
    expect(second!.nonce).toBe(first!.nonce);
    await page.waitForFunction(() => document.querySelector('#result-detail')?.textContent?.includes('같은 스캔'), undefined, { timeout: 5000 });
    expect(await page.getAttribute('#result', 'data-result')).toBe('ok');
    // the server counts one check-in
    const audit = (await get(hub.url, '/api/checkins?limit=10', bearer(device))).body as { checkins: { code: string }[] };
    expect(audit.checkins.filter((c) => c.code === booked.code)).toHaveLength(1);
    expect(errors).toEqual([]);
  }, 60_000);
});
