import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_TEST_ENV, bearer, login, signIn, TEST_ADMIN_PASSWORD } from '../support/auth.js';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { get, post } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { until } from '../support/wait.js';
import { signInOnPage, waitText } from './editor-text.js';

const hasBrowser = browserAvailable();

describe.skipIf(!hasBrowser)('the console in Chromium', () => {
  let hub: HubProcess;
  let browser: Browser;
  let admin: string;

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('console-page'), CONSOLE_LIVE_MS: '300', ...AUTH_TEST_ENV });
    browser = await launchChromium();
    admin = await login(hub.url, 'admin', TEST_ADMIN_PASSWORD);
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  const yjsOf = async (user: string) =>
    ((await get(hub.url, `/api/console/connections?user=${user}`, bearer(admin))).body.connections as { id: string; endpoint: string }[]).filter((c) => c.endpoint === '/yjs/:slug');

  async function open(path: string, errors: string[]): Promise<Page> {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await ctx.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${hub.url}${path}`);
    await page.waitForSelector('body[data-ready="true"]');
    return page;
  }

  it('an operator looks up an editor signed in on /docs and disconnects it with its tokens revoked: the documents page sees its sign-in end', async () => {
    const user = `kim${process.pid}`;
    const token = await signIn(hub.url, ['editor'], user);
    expect((await post(hub.url, '/api/md/save', { slug: 'console-live', content: '# 실시간\n\n본문입니다.\n' }, bearer(token))).status).toBe(200);

    // the editor on /docs: signed in, the document open over its live co-editing socket
    const editorErrors: string[] = [];
    const docs = await open('/docs#console-live', editorErrors);
    await signInOnPage(docs, user);
    await waitText(docs, { includes: '본문입니다' });
    await until('the editor page holds a live socket', async () => (await yjsOf(user)).length > 0);

    // the operator on /console: the live state drawn, then the editor's connections looked up
    const consoleErrors: string[] = [];
    const page = await open('/console', consoleErrors);
    await page.fill('#signin-user', 'admin');
    await page.fill('#signin-password', TEST_ADMIN_PASSWORD);
    await page.press('#signin-password', 'Enter');
    await page.waitForSelector('body[data-auth="operator"]');
    await page.waitForSelector('#nodes tr[data-node]');
    expect(await page.textContent('#store')).toContain('lmdb');
    await page.fill('#conn-user', user);
    await page.press('#conn-user', 'Enter');
    const [socket] = await yjsOf(user);
    await page.waitForSelector(`tr[data-conn="${socket!.id}"]`);
    expect(await page.textContent(`tr[data-conn="${socket!.id}"]`)).toContain('/yjs/:slug');

    await page.check('#conn-revoke');
    await page.click('#disconnect-all');
    await page.waitForFunction(() => (document.getElementById('result')?.textContent ?? '').includes('tokens revoked'));
    // the console's list is drawn again: nothing of the editor is left open
    await page.waitForSelector('tr[data-empty="true"]');

    // the documents page saw its socket end with 4401 and its token refused: the sign-in form is back
    await docs.waitForSelector('#signin-form', { timeout: 10_000 });
    expect(await docs.isVisible('#signed-in-as')).toBe(false);
    expect((await get(hub.url, '/api/auth/me', bearer(token))).status).toBe(401);
    expect(await yjsOf(user)).toEqual([]);
    // the signed-in console fits a phone
    await page.setViewportSize({ width: 360, height: 780 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
    expect(editorErrors).toEqual([]);
    expect(consoleErrors).toEqual([]);
  }, 60_000);
});
