import type { Page } from 'playwright-core';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_TEST_ENV, login, TEST_ADMIN_PASSWORD } from '../support/auth.js';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { get } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';

const hasBrowser = browserAvailable();

describe.skipIf(!hasBrowser)('the accounts page in Chromium', () => {
  let hub: HubProcess;
  let browser: Browser;

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('accounts-page'), ...AUTH_TEST_ENV });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  async function signIn(page: Page, user: string, password: string): Promise<void> {
    await page.fill('#signin-user', user);
    await page.fill('#signin-password', password);
    await page.press('#signin-password', 'Enter');
  }

  it('an operator creates an editor, disables it, and issues and revokes a scanner device, with the keyboard', async () => {
    const errors: string[] = [];
    const page = await browser.newPage({ viewport: { width: 360, height: 780 } });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${hub.url}/accounts`);
    await page.waitForSelector('#signin-form');
    expect(await page.isVisible('#board')).toBe(false);

    // a wrong password is said in the page
    await signIn(page, 'admin', 'not-the-password');
    await page.waitForFunction(() => (document.getElementById('signin-error')?.textContent ?? '') !== '');
    await signIn(page, 'admin', TEST_ADMIN_PASSWORD);
    await page.waitForSelector('body[data-auth="operator"]');
    await page.waitForSelector('tr[data-user="admin"]');

    // a new editor account, typed and submitted from the keyboard
    await page.focus('#new-user');
    await page.keyboard.type('jiwoo');
    await page.keyboard.press('Tab');
    await page.keyboard.type('김지우');
    await page.keyboard.press('Tab');
    await page.keyboard.type('editor-password-1');
    await page.uncheck('#new-staff');
    await page.check('#new-editor');
    await page.press('#new-password', 'Enter');
    await page.waitForSelector('tr[data-user="jiwoo"]');
    expect(await page.textContent('tr[data-user="jiwoo"]')).toContain('김지우');
    const token = await login(hub.url, 'jiwoo', 'editor-password-1');
    expect((await get(hub.url, '/api/auth/me', { authorization: `Bearer ${token}` })).body.identity.roles).toEqual(['editor']);
    expect(await page.textContent('#new-result')).toContain('jiwoo');
    // the same id again: the refusal alone is shown, not the earlier success beside it
    await page.fill('#new-user', 'jiwoo');
    await page.fill('#new-password', 'editor-password-2');
    await page.press('#new-password', 'Enter');
    await page.waitForFunction(() => (document.getElementById('error')?.textContent ?? '') !== '');
    expect(await page.textContent('#new-result')).toBe('');

    // disabling it ends its sign-in
    await page.click('tr[data-user="jiwoo"] button[data-act="toggle"]');
    await page.waitForFunction(() => document.querySelector('tr[data-user="jiwoo"]')?.textContent?.includes('disabled'));
    const refused = await fetch(`${hub.url}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user: 'jiwoo', password: 'editor-password-1' }) });
    expect(refused.status).toBe(401);

    // a device token for gate B, shown once, valid until revoked
    await page.fill('#device-gate', 'B');
    await page.fill('#device-name', '동문 스캐너');
    await page.press('#device-name', 'Enter');
    await page.waitForSelector('#device-token');
    const device = (await page.textContent('#device-token'))!.trim();
    const me = await get(hub.url, '/api/auth/me', { authorization: `Bearer ${device}` });
    expect(me.body.identity).toMatchObject({ kind: 'device', gate: 'B', name: '동문 스캐너' });
    await page.click('tbody#devices tr button');
    await page.waitForFunction(() => document.querySelectorAll('tbody#devices tr').length === 0);
    expect((await get(hub.url, '/api/auth/me', { authorization: `Bearer ${device}` })).status).toBe(401);

    // fits the phone
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
    expect(errors).toEqual([]);
  });
});
