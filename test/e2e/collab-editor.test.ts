import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { signInOnPage, waitText } from './editor-text.js';
import { AUTH_TEST_ENV, signIn } from '../support/auth.js';

const hasBrowser = browserAvailable();


const DECK = '# 발표\n\n<script>window.__xss = 1</script><img src=x onerror="window.__xss=2">\n\n---\n\n## 둘째\n\n```\n---\n```\n\n---\n\n셋째 슬라이드\n';

describe.skipIf(!hasBrowser)('document editor in Chromium', () => {
  let hub: HubProcess;
  let browser: Browser;
  let token = '';
  const save = (body: unknown) => fetch(`${hub.url}/api/md/save`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify(body) });

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('collab-editor'), MD_PERSIST_DEBOUNCE_MS: '300', ...AUTH_TEST_ENV });
    browser = await launchChromium();
    for (const user of ['ann', 'bob', 'cat']) token = await signIn(hub.url, ['editor'], user);
    await save({ slug: 'deck', category: 'talks', content: DECK });
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  async function openAs(name: string, slug = 'deck'): Promise<Page> {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await ctx.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    (page as any).errors = errors;
    await page.goto(`${hub.url}/docs#${slug}`);
    await page.waitForSelector('body[data-ready="true"]');
    await signInOnPage(page, name);
    return page;
  }

  it('two pages co-edit one document, see each other in presence, and nothing in the document runs', async () => {
    const a = await openAs('ann');
    const b = await openAs('bob');
    for (const p of [a, b]) await p.waitForFunction(() => document.querySelectorAll('#presence .avatar').length === 2);
    const colours = await a.$$eval('#presence .avatar', (els) => els.map((e) => (e as HTMLElement).style.background));
    expect(new Set(colours).size).toBe(2);
    await waitText(a, { includes: '셋째' });
    await a.click('#editor .cm-content');
    await a.keyboard.press('Control+End');
    await a.keyboard.type('ann was here');
    await waitText(b, { includes: 'ann was here' });
    await b.click('#editor .cm-content');
    await b.keyboard.press('Control+Home');
    await b.keyboard.type('bob: ');
    await waitText(a, { startsWith: 'bob: ' });
    // a remote cursor of bob is drawn on ann's page, named
    await a.waitForSelector('#editor .cm-ySelectionCaret');
    expect(await a.textContent('#editor .cm-ySelectionInfo')).toBe('bob');
    expect(await a.$eval('#preview', (e) => e.innerHTML)).not.toContain('<script');
    expect(await a.evaluate(() => (window as any).__xss)).toBeUndefined();
    expect((a as any).errors).toEqual([]);
    await b.context().close();
    await a.context().close();
  });

  it('presentation mode: slides at --- lines (not inside code), Right, Space, Left, Esc', async () => {
    await save({ slug: 'deck2', content: DECK });
    const p = await openAs('cat', 'deck2');
    await waitText(p, { includes: '셋째' });
    await p.click('#present-btn');
    expect(await p.textContent('#slide-no')).toBe('1 / 3');
    expect(await p.textContent('#slide h1')).toBe('발표');
    await p.keyboard.press('ArrowRight');
    expect(await p.textContent('#slide h2')).toBe('둘째');
    await p.keyboard.press(' ');
    expect(await p.textContent('#slide-no')).toBe('3 / 3');
    await p.keyboard.press('Space');
    expect(await p.textContent('#slide-no')).toBe('3 / 3');
    await p.keyboard.press('ArrowLeft');
    expect(await p.textContent('#slide-no')).toBe('2 / 3');
    await p.keyboard.press('Escape');
    expect(await p.isHidden('#slides')).toBe(true);
    expect(await p.evaluate(() => (window as any).__xss)).toBeUndefined();
    await p.context().close();
  });
});
