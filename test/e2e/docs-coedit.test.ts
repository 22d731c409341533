import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { post as postAs } from '../support/http.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { signInOnPage, textOf, waitText } from './editor-text.js';

const hasBrowser = browserAvailable();


/** `n` tokens that are each unique, so every typed character can be accounted for. */
const tokens = (who: string, n: number) => Array.from({ length: n }, (_, i) => `${who}${String(i).padStart(2, '0')} `).join('');

describe.skipIf(!hasBrowser)('co-editing in Chromium', () => {
  let hub: HubProcess;
  let browser: Browser;
  const creds: Record<string, string> = {};
  /** Writes over HTTP as ann (or as `who`). */
  const post = (base: string, path: string, body: unknown, who = 'ann') => postAs(base, path, body, bearer(creds[who]!));

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('docs-coedit'), MD_PERSIST_DEBOUNCE_MS: '300', AUTH_RECHECK_MS: '200', ...AUTH_TEST_ENV });
    browser = await launchChromium();
    for (const user of ['ann', 'bob', 'carol']) creds[user] = await signIn(hub.url, ['editor'], user);
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  async function openAs(name: string, slug: string, width = 1280): Promise<Page> {
    const ctx = await browser.newContext({ viewport: { width, height: 900 } });
    const page = await ctx.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    (page as any).errors = errors;
    await page.goto(`${hub.url}/docs#${slug}`);
    await page.waitForSelector('body[data-ready="true"]');
    await signInOnPage(page, name);
    return page;
  }

  it('two people typing at once, one at the top and one at the end: same text, every character once, in order', async () => {
    const body = '# 공동 편집\n\n가운데 문단입니다.\n';
    expect((await post(hub.url, '/api/md/save', { slug: 'together', content: body })).status).toBe(200);
    const a = await openAs('ann', 'together');
    const b = await openAs('bob', 'together');
    for (const p of [a, b]) await waitText(p, { includes: '가운데' });
    await a.click('#editor');
    await a.keyboard.press('Control+Home');
    await b.click('#editor');
    await b.keyboard.press('Control+End');
    // about five seconds of simultaneous typing on both pages
    const typedA = tokens('a', 40);
    const typedB = tokens('b', 40);
    await Promise.all([a.keyboard.type(typedA, { delay: 30 }), b.keyboard.type(typedB, { delay: 30 })]);
    const expected = typedA + body + typedB;
    // both pages settle on one text (or the comparison below shows how they differ)
    for (const p of [a, b]) await waitText(p, { minLength: expected.length }).catch(() => undefined);
    await waitText(a, { equals: await textOf(b) }, 5_000).catch(() => undefined);
    const [ta, tb] = [await textOf(a), await textOf(b)];
    expect(ta).toBe(tb);
    expect(ta).toBe(expected);
    expect((a as any).errors).toEqual([]);
    expect((b as any).errors).toEqual([]);
    await a.context().close();
    await b.context().close();
  }, 60_000);
  it('remote carets come from awareness, and undo takes back only your own typing', async () => {
    expect((await post(hub.url, '/api/md/save', { slug: 'undo', content: '# 되돌리기\n\n본문\n' })).status).toBe(200);
    const a = await openAs('ann', 'undo');
    const b = await openAs('bob', 'undo');
    for (const p of [a, b]) await waitText(p, { includes: '본문' });
    await a.click('#editor .cm-content');
    await a.keyboard.press('Control+End');
    await a.keyboard.type('ANN');
    await waitText(b, { includes: 'ANN' });
    await b.click('#editor .cm-content');
    await b.keyboard.press('Control+Home');
    await b.keyboard.type('BOB');
    await waitText(a, { startsWith: 'BOB' });
    // bob's caret is drawn on ann's page with his name
    await a.waitForSelector('#editor .cm-ySelectionCaret');
    expect(await a.textContent('#editor .cm-ySelectionInfo')).toBe('bob');
    // ann undoes: her ANN goes, bob's BOB stays, on both pages
    await a.keyboard.press('Control+z');
    for (const p of [a, b]) await waitText(p, { startsWith: 'BOB', excludes: 'ANN' });
    expect(await textOf(b)).toBe('BOB# 되돌리기\n\n본문\n');
    await a.context().close();
    await b.context().close();
  }, 60_000);

  it('Korean IME composition arrives whole on the other page', async () => {
    expect((await post(hub.url, '/api/md/save', { slug: 'ime', content: '# 입력기\n' })).status).toBe(200);
    const a = await openAs('ann', 'ime');
    const b = await openAs('bob', 'ime');
    for (const p of [a, b]) await waitText(p, { includes: '입력기' });
    await a.click('#editor .cm-content');
    await a.keyboard.press('Control+End');
    const cdp = await a.context().newCDPSession(a);
    // ㅎ -> 하 -> 한 -> 한ㄱ -> 한그 -> 한글, then committed, as an IME sends it
    for (const t of ['ㅎ', '하', '한', '한ㄱ', '한그', '한글']) await cdp.send('Input.imeSetComposition', { text: t, selectionStart: t.length, selectionEnd: t.length });
    await cdp.send('Input.insertText', { text: '한글' });
    await waitText(b, { endsWith: '한글' });
    expect(await textOf(a)).toBe('# 입력기\n한글');
    expect(await textOf(b)).toBe('# 입력기\n한글');
    await a.context().close();
    await b.context().close();
  }, 60_000);

  it('a lock held by someone else disables lock and save and makes the editor read-only', async () => {
    expect((await post(hub.url, '/api/md/save', { slug: 'locked', content: '# 잠금\n' })).status).toBe(200);
    const a = await openAs('ann', 'locked');
    await a.waitForSelector('#lock-state:has-text("잠금 없음")');
    await a.waitForSelector('#save-btn:enabled');
    const lock = await post(hub.url, '/api/md/lock', { slug: 'locked' }, 'carol');
    expect(lock.status).toBe(200);
    await a.waitForSelector('#save-btn:disabled');
    expect(await a.isDisabled('#lock-btn')).toBe(true);
    expect(await a.textContent('#lock-state')).toContain('carol');
    expect(await a.getAttribute('#editor .cm-content', 'contenteditable')).toBe('false');
    // the holder's own page: her lock, her controls
    const c = await openAs('carol', 'locked');
    await c.waitForSelector('#lock-state:has-text("내 잠금")');
    expect(await c.isEnabled('#save-btn')).toBe(true);
    expect(await c.textContent('#lock-btn')).toBe('잠금 해제');
    await c.click('#lock-btn');
    await a.waitForSelector('#save-btn:enabled');
    expect(await a.getAttribute('#editor .cm-content', 'contenteditable')).toBe('true');
    expect(await a.isEnabled('#lock-btn')).toBe(true);
    await a.context().close();
    await c.context().close();
  }, 60_000);

  it('signed out: the document reads, but nothing can be written and no live socket opens', async () => {
    expect((await post(hub.url, '/api/md/save', { slug: 'readonly', content: '# 읽기 전용\n' })).status).toBe(200);
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const p = await ctx.newPage();
    const sockets: string[] = [];
    p.on('websocket', (w) => sockets.push(w.url()));
    await p.goto(`${hub.url}/docs#readonly`);
    await p.waitForSelector('body[data-ready="true"]');
    await waitText(p, { equals: '# 읽기 전용\n' });
    expect(await p.getAttribute('#editor .cm-content', 'contenteditable')).toBe('false');
    for (const id of ['#save-btn', '#lock-btn', '#new-doc']) expect(await p.isDisabled(id), id).toBe(true);
    expect(sockets.filter((u) => u.includes('/yjs/'))).toEqual([]);
    // signing in through the shared form opens the live document with the token
    await signInOnPage(p, 'bob');
    await p.waitForSelector('#save-btn:enabled');
    expect(sockets.find((u) => u.includes('/yjs/readonly'))).toMatch(/access_token=mt_/);
    expect(await p.getAttribute('#editor .cm-content', 'contenteditable')).toBe('true');
    await ctx.close();
  }, 60_000);

  it('a token revoked elsewhere ends the live socket: the page asks to sign in again and the document turns read-only', async () => {
    expect((await post(hub.url, '/api/md/save', { slug: 'revoked', content: '# 취소된 토큰\n' })).status).toBe(200);
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const p = await ctx.newPage();
    const errors: string[] = [];
    p.on('pageerror', (e) => errors.push(e.message));
    const sockets: { url: string; closed: boolean }[] = [];
    p.on('websocket', (w) => {
      const s = { url: w.url(), closed: false };
      sockets.push(s);
      w.on('close', () => (s.closed = true));
    });
    await p.goto(`${hub.url}/docs#revoked`);
    await p.waitForSelector('body[data-ready="true"]');
    await signInOnPage(p, 'carol');
    await p.waitForSelector('#save-btn:enabled');
    await waitText(p, { includes: '취소된 토큰' });
    const live = sockets.filter((s) => s.url.includes('/yjs/revoked'));
    expect(live.length).toBe(1);
    // the same token is logged out from somewhere else (another tab, an operator's change)
    const token = await p.evaluate(() => sessionStorage.getItem('docs:token'));
    expect((await postAs(hub.url, '/api/auth/logout', {}, bearer(token!))).status).toBe(200);
    // within a check period (200 ms here) the hub ends the socket, and the page shows the form again
    await p.waitForSelector('#signin-form', { timeout: 10_000 });
    await p.waitForFunction(() => document.querySelector('#editor .cm-content')?.getAttribute('contenteditable') === 'false');
    expect(live[0]!.closed).toBe(true);
    expect(await p.isDisabled('#save-btn')).toBe(true);
    await waitText(p, { includes: '취소된 토큰' });
    // no socket keeps knocking with the dead token
    await p.waitForTimeout(1500);
    expect(sockets.filter((s) => s.url.includes('/yjs/'))).toHaveLength(1);
    expect(errors).toEqual([]);
    await ctx.close();
  }, 60_000);

  it('new documents and errors are shown in the page (no dialogs); history diffs side by side', async () => {
    const a = await openAs('ann', '');
    let dialogs = 0;
    a.on('dialog', (d) => (dialogs++, void d.dismiss()));
    await a.click('#new-doc');
    await a.fill('#new-slug', 'bad/slug');
    await a.click('#new-form button[type=submit]');
    await a.waitForFunction(() => document.getElementById('new-error')!.textContent !== '');
    expect(await a.textContent('#new-error')).toMatch(/slug/);
    await a.fill('#new-slug', '회의록');
    await a.fill('#new-category', 'meetings');
    await a.click('#new-form button[type=submit]');
    await waitText(a, { startsWith: '# 회의록' });
    expect(await a.isHidden('#new-form')).toBe(true);
    // a long document with a change near the end: the diff is computed, not given up on
    const lines = Array.from({ length: 3000 }, (_, i) => `줄 ${i}`);
    const v2 = (await post(hub.url, '/api/md/save', { slug: '회의록', content: `# 회의록\n${lines.join('\n')}\n` })).body.doc.version;
    lines[2990] = '바뀐 줄';
    await post(hub.url, '/api/md/save', { slug: '회의록', content: `# 회의록\n${lines.join('\n')}\n` });
    await waitText(a, { includes: '바뀐 줄' });
    await a.click('#history-btn');
    await a.click(`#versions li[data-version="${v2}"] button:has-text("비교")`);
    await a.waitForSelector('#diff table.sbs');
    const changed = await a.$$eval('#diff tr[data-kind="changed"]', (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    expect(changed).toEqual([['2992', '줄 2990', '2992', '바뀐 줄']]);
    expect(await a.$$eval('#diff tr.fold', (t) => t.length)).toBeGreaterThan(0);
    // the version as a standalone HTML file, downloaded from its history row
    const [download] = await Promise.all([a.waitForEvent('download'), a.click(`#versions li[data-version="${v2}"] a.export[data-format="html"]`)]);
    expect(download.suggestedFilename()).toBe(`회의록-v${v2}.html`);
    const saved = join(tempDir('docs-export'), 'export.html');
    await download.saveAs(saved);
    const file = readFileSync(saved, 'utf8');
    expect(file).toMatch(/^<!doctype html>/);
    expect(file).toContain('줄 2990');
    expect(file).not.toContain('바뀐 줄');
    expect(dialogs).toBe(0);
    expect((a as any).errors).toEqual([]);
    await a.context().close();
  }, 60_000);

  it('on a phone: nothing wider than the screen, the preview one tap away', async () => {
    expect((await post(hub.url, '/api/md/save', { slug: 'phone', content: '# 전화\n\n' + 'ㄱ'.repeat(500) + '\n' })).status).toBe(200);
    const a = await openAs('ann', 'phone', 360);
    await waitText(a, { includes: '전화' });
    expect(await a.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
    expect(await a.isVisible('#editor')).toBe(true);
    await a.click('#view-toggle');
    expect(await a.isVisible('#preview')).toBe(true);
    expect(await a.isHidden('#editor')).toBe(true);
    expect(await a.textContent('#preview h1')).toBe('전화');
    await a.context().close();
  }, 60_000);
});
