import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import AxeBuilder from '@axe-core/playwright';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { call, get, post } from '../support/http.js';

/**
 * A live program's alert webhook on /trading (docs/trading.md "Alerts"), in Chromium at 1280 and
 * 360 px against a built hub process: set from the program's panel (the secret shown once, with a copy
 * button), read back without the secret, a delivery arriving at a loopback receiver (the hub started
 * with ALERTS_ALLOW_PRIVATE=1), and removed. axe-core on the whole page, signed in, the panel open: no serious or critical violation.
 */
const hasBrowser = browserAvailable();

interface Delivery {
  headers: IncomingHttpHeaders;
  body: { type?: string; data?: { program?: string } };
}

describe.skipIf(!hasBrowser)('a program alert on the trading page', () => {
  let hub: HubProcess;
  let browser: Browser;
  let receiver: Server;
  let hookUrl = '';
  let token = '';
  let programId = '';
  const deliveries: Delivery[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let text = '';
      req.on('data', (c) => (text += c));
      req.on('end', () => {
        try {
          deliveries.push({ headers: req.headers, body: JSON.parse(text) });
        } catch {
          deliveries.push({ headers: req.headers, body: {} });
        }
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    hub = await startHubProcess({
      DATA_DIR: tempDir('trading-alerts'),
      CLOCK_START: '2026-11-18T12:01:00Z',
      PROGRAM_SPEED: '60',
      TRADING_WORKERS: '1',
      ALERTS_ALLOW_PRIVATE: '1',
      OUTBOX_RETRY_MIN_MS: '100',
      ...AUTH_TEST_ENV,
    });
    token = await signIn(hub.url, ['trader'], 'alerter');
    const created = await post(hub.url, '/api/program/create', { name: 'alerted', strategy: 'ema_cross', symbol: 'CL', params: { fast: 2, slow: 3 } }, bearer(token));
    expect(created.status).toBe(200);
    programId = (created.body as { program: { id: string } }).program.id;
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
    await new Promise((r) => receiver?.close(r));
  });

  async function openProgram(width: number): Promise<{ ctx: BrowserContext; page: Page; errors: string[] }> {
    const ctx = await browser.newContext({ viewport: { width, height: width < 500 ? 780 : 900 } });
    await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: hub.url });
    const page = await ctx.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(hub.url + '/trading');
    await page.waitForSelector('#signin-form');
    await page.fill('#signin-user', 'alerter');
    await page.fill('#signin-password', 'pw-alerter-secret');
    await page.click('#signin-form button[type="submit"]');
    await page.waitForSelector('body[data-ready="true"]');
    await page.click(`#programs tr[data-id="${programId}"] td:first-child`);
    await page.waitForSelector('#alert:not([hidden]) #alert-current[data-state]');
    return { ctx, page, errors };
  }

  async function seriousAxe(page: Page): Promise<string[]> {
    const axe = await new AxeBuilder({ page: page as any }).analyze();
    return axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} ${v.nodes.map((n) => n.target.join(' ')).join('; ')}`);
  }

  it('at 1280 px: sets the webhook (secret once, copied), reads it back without the secret, a delivery arrives, and removes it', async () => {
    const { ctx, page, errors } = await openProgram(1280);
    expect(await page.getAttribute('#alert-current', 'data-state')).toBe('none');
    expect(await page.textContent('#alert-current')).toBe('설정된 알림이 없습니다.');
    expect(await page.isDisabled('#alert-remove')).toBe(true);

    // an empty address is marked at the field, nothing is sent
    await page.click('#alert-save');
    expect(await page.getAttribute('#alert-url', 'aria-invalid')).toBe('true');
    expect(await page.textContent('#alert-notice')).toContain('웹훅 주소');
    expect((await get(hub.url, `/api/program/alert/${programId}`, bearer(token))).status).toBe(404);

    // an address the hub refuses (no credentials in it): the server's refusal in words, at the field
    await page.fill('#alert-url', 'http://user:pw@127.0.0.1/x');
    await page.click('#alert-save');
    await page.waitForSelector('#alert-notice[data-kind="error"]');
    expect(await page.getAttribute('#alert-url', 'aria-invalid')).toBe('true');
    expect(await page.isHidden('#alert-secret')).toBe(true);

    // signals and status changes only
    await page.fill('#alert-url', hookUrl);
    await page.uncheck('#alert-events input[value="trade"]');
    await page.click('#alert-save');
    await page.waitForSelector('#alert-secret:not([hidden])');
    const secret = (await page.textContent('#alert-secret-value'))!;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/=]+$/);
    expect(await page.getAttribute('#alert-current', 'data-state')).toBe('set');
    expect(await page.textContent('#alert-current-url')).toBe(hookUrl);
    expect(await page.textContent('#alert-current')).toContain('신호, 상태 변경');
    expect(await page.getAttribute('#alert-notice', 'data-kind')).toBe('ok');
    expect(await page.isEnabled('#alert-remove')).toBe(true);
    await page.click('#alert-secret-copy button');
    await page.waitForFunction(() => document.querySelector('#alert-secret-copy button')?.textContent === '복사했습니다 · copied');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);

    // the stored alert, read by the API: the same address and events, and no secret
    const read = await get(hub.url, `/api/program/alert/${programId}`, bearer(token));
    expect(read.status).toBe(200);
    const alert = (read.body as { alert: Record<string, unknown> }).alert;
    expect(alert).toMatchObject({ program: programId, url: hookUrl, events: ['signal', 'status'] });
    expect(alert.secret).toBeUndefined();

    expect(await seriousAxe(page)).toEqual([]);

    // started from the page: its status change is posted to the receiver, signed
    await page.click(`#programs tr[data-id="${programId}"] button[data-move="start"]`);
    const deadline = Date.now() + 30_000;
    while (!deliveries.some((d) => d.body.type === 'program.status') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const status = deliveries.find((d) => d.body.type === 'program.status');
    expect(status?.body.data?.program).toBe(programId);
    expect(status?.headers['webhook-signature']).toMatch(/^v1,/);
    expect(deliveries.every((d) => d.body.type !== 'program.trade')).toBe(true);

    // opened again: the alert is read, the secret is not shown again
    await page.reload();
    await page.waitForSelector('body[data-ready="true"]');
    await page.click(`#programs tr[data-id="${programId}"] td:first-child`);
    await page.waitForSelector('#alert-current[data-state="set"]');
    expect(await page.isHidden('#alert-secret')).toBe(true);
    expect(await page.inputValue('#alert-url')).toBe(hookUrl);
    expect(await page.isChecked('#alert-events input[value="trade"]')).toBe(false);

    await page.click('#alert-remove');
    await page.waitForSelector('#alert-current[data-state="none"]');
    expect(await page.getAttribute('#alert-notice', 'data-kind')).toBe('ok');
    const gone = await get(hub.url, `/api/program/alert/${programId}`, bearer(token));
    expect(gone.status).toBe(404);
    expect((gone.body as { error: { code: string } }).error.code).toBe('alert_not_found');
    expect(errors).toEqual([]);
    await ctx.close();
  }, 120_000);

  it('at 360 px: the alert form fits the phone and passes axe-core with the secret shown', async () => {
    const { ctx, page, errors } = await openProgram(360);
    await page.fill('#alert-url', hookUrl);
    await page.click('#alert-save');
    await page.waitForSelector('#alert-secret:not([hidden])');
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    expect(wide).toBeLessThanOrEqual(360);
    const box = await page.locator('#alert-save').boundingBox();
    expect(box!.x + box!.width).toBeLessThanOrEqual(360);
    expect(await seriousAxe(page)).toEqual([]);
    expect(errors).toEqual([]);
    // another trader reads none of it
    const other = await signIn(hub.url, ['trader'], 'other');
    expect((await call(hub.url, 'GET', `/api/program/alert/${programId}`, undefined, bearer(other))).status).toBe(403);
    await ctx.close();
  }, 120_000);
});
