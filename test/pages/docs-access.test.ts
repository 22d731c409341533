import AxeBuilder from '@axe-core/playwright';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { call, get, post } from '../support/http.js';
import { AUTH_TEST_ENV, TEST_ADMIN_PASSWORD, bearer, login } from '../support/auth.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { signInOnPage, textOf, waitText } from '../e2e/editor-text.js';
import { waitFor } from '../support/wait.js';

const hasBrowser = browserAvailable();

/**
 * The documents page and access (docs/collab.md "Access", "Share links"): a private note a second
 * editor cannot see, a comment thread with a mention seen live in a second browser, a named reader's read-only editor, the owner's share dialog (visibility, a
 * link), the link opened without an account (read-only editor, preview, presentation) and its end
 * when revoked. At a desktop's and a phone's width; the tests act through the pages.
 */
describe.skipIf(!hasBrowser)('the documents page keeps documents private and shares them (Chromium)', () => {
  let hub: HubProcess;
  let browser: Browser;
  const tokens: Record<string, string> = {};

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('docs-access-page'), MD_PERSIST_DEBOUNCE_MS: '300', ...AUTH_TEST_ENV });
    browser = await launchChromium();
    const admin = bearer(await login(hub.url, 'admin', TEST_ADMIN_PASSWORD));
    for (const user of ['owner', 'second', 'reader']) {
      expect((await call(hub.url, 'POST', '/api/auth/accounts', { user, password: `pw-${user}-secret`, roles: ['editor'] }, admin)).status).toBe(201);
      tokens[user] = await login(hub.url, user, `pw-${user}-secret`);
    }
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  async function page(width: number, path: string, user?: string): Promise<Page> {
    const ctx = await browser.newContext({ viewport: { width, height: width < 500 ? 780 : 900 } });
    const p = await ctx.newPage();
    const errors: string[] = [];
    p.on('pageerror', (e) => errors.push(e.message));
    (p as any).errors = errors;
    await p.goto(`${hub.url}${path}`);
    await p.waitForSelector('body[data-ready="true"]');
    if (user) await signInOnPage(p, user);
    return p;
  }
  const fits = async (p: Page, width: number) => expect(await p.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
  const axe = async (p: Page) =>
    (await new AxeBuilder({ page: p as any }).analyze()).violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id);
  const listed = (p: Page) => p.$$eval('#doc-list li', (els) => els.map((e) => (e as HTMLElement).dataset.slug));

  for (const width of [1280, 360]) {
    describe(`at ${width} px`, () => {
      it('a private note is invisible to a second editor; a named reader gets a read-only editor that follows the owner\'s edits', async () => {
        const slug = `note-${width}`;
        expect((await post(hub.url, '/api/md/save', { slug, content: '# 내 메모\n\n나만 보는 글\n', visibility: 'private' }, bearer(tokens.owner!))).status).toBe(200);
        expect((await post(hub.url, '/api/md/save', { slug: `team-${width}`, content: '# 팀 문서\n' }, bearer(tokens.owner!))).status).toBe(200);
        const second = await page(width, `/docs`, 'second');
        await second.waitForSelector(`#doc-list li[data-slug="team-${width}"]`);
        expect(await listed(second)).not.toContain(slug);
        await second.evaluate((s) => (location.hash = s), slug);
        await second.waitForSelector('#notice:not([hidden])');
        expect(await second.textContent('#notice')).toContain(slug);
        expect(await second.isHidden('#editor-card')).toBe(true);

        expect((await post(hub.url, '/api/md/access', { slug, readers: ['reader'] }, bearer(tokens.owner!))).status).toBe(200);
        const reader = await page(width, `/docs#${slug}`, 'reader');
        await reader.waitForSelector('#access-note:not([hidden])');
        expect(await reader.textContent('#access-note')).toContain('read-only');
        await waitText(reader, { includes: '나만 보는 글' });
        await reader.waitForSelector('#conn[data-state="live"]');
        expect(await reader.getAttribute('#editor .cm-content', 'contenteditable')).toBe('false');
        expect(await reader.isDisabled('#save-btn')).toBe(true);
        expect(await reader.isDisabled('#lock-btn')).toBe(true);
        expect(await reader.isHidden('#share-btn')).toBe(true);
        // the owner's save reaches the reader's editor live; the reader is not on the presence list
        expect((await post(hub.url, '/api/md/save', { slug, content: '# 내 메모\n\n나만 보는 글\n고친 줄\n' }, bearer(tokens.owner!))).status).toBe(200);
        await waitText(reader, { includes: '고친 줄' });
        expect((await get(hub.url, `/api/md/presence/${slug}`, bearer(tokens.owner!))).body.peers).toEqual([]);
        expect(await listed(reader)).toContain(slug);
        await fits(reader, width);
        expect(await axe(reader)).toEqual([]);
        for (const p of [second, reader]) expect((p as any).errors).toEqual([]);
        for (const p of [second, reader]) await p.context().close();
      }, 90_000);

      it('a comment thread with a mention, seen live in a second browser; a reply and resolve seen back', async () => {
        const slug = `talk-${width}`;
        expect((await post(hub.url, '/api/md/save', { slug, content: '# 안건 하나\n\n본문\n', visibility: 'private' }, bearer(tokens.owner!))).status).toBe(200);
        expect((await post(hub.url, '/api/md/access', { slug, readers: ['reader'] }, bearer(tokens.owner!))).status).toBe(200);
        const owner = await page(width, `/docs#${slug}`, 'owner');
        await owner.waitForSelector('#editor .cm-content[contenteditable="true"]');
        const reader = await page(width, `/docs#${slug}`, 'reader');
        await waitText(reader, { includes: '안건' });
        await reader.waitForSelector('#comment-form:not([hidden])');
        // the owner selects the first line and comments on it, mentioning the reader
        // focus, not a click: a click's own selection can land after the keys and collapse theirs
        await owner.focus('#editor .cm-content');
        await owner.keyboard.press('Control+Home');
        await owner.keyboard.press('Shift+End');
        // the form names the selected text once the editor holds the selection (the button waits for it)
        await owner.waitForFunction(() => document.getElementById('comment-target')!.textContent === '«# 안건 하나»');
        expect(await owner.isDisabled('#comment-send')).toBe(false);
        await owner.fill('#comment-body', '@reader 확인 부탁합니다');
        await owner.click('#comment-form button[type="submit"]');
        await reader.waitForSelector('#threads li[data-thread]');
        expect(await reader.textContent('#threads li[data-thread] blockquote')).toBe('# 안건 하나');
        expect(await reader.textContent('#threads li[data-thread]')).toContain('확인 부탁합니다');
        await reader.waitForFunction(() => document.getElementById('notice')!.textContent!.includes('mentioned'));
        // the reader replies and resolves; the owner sees both
        await reader.fill('#threads li[data-thread] input', '확인했습니다');
        await reader.click('#threads li[data-thread] form button[type="submit"]');
        await owner.waitForFunction(() => document.querySelector('#threads .replies')?.textContent?.includes('확인했습니다'));
        await reader.click('#threads li[data-thread] button[data-action="resolve"]');
        await owner.waitForSelector('#threads li[data-resolved="true"]');
        await fits(reader, width);
        expect(await axe(reader)).toEqual([]);
        for (const p of [owner, reader]) expect((p as any).errors).toEqual([]);
        for (const p of [owner, reader]) await p.context().close();
      }, 90_000);

      it('the owner shares: visibility in the share dialog, a read-only link opened without an account (editor, preview, presentation), ended when revoked', async () => {
        const slug = `shared-${width}`;
        expect((await post(hub.url, '/api/md/save', { slug, content: '# 공유 문서\n\n첫 장\n\n---\n\n## 둘째 장\n', visibility: 'private' }, bearer(tokens.owner!))).status).toBe(200);
        const owner = await page(width, `/docs#${slug}`, 'owner');
        await owner.waitForSelector('#editor .cm-content[contenteditable="true"]');
        await owner.click('#share-btn');
        await owner.waitForSelector('#share:not([hidden])');
        expect(await owner.inputValue('#visibility')).toBe('private');
        await owner.selectOption('#visibility', 'team');
        await owner.fill('#editors', 'second');
        await owner.click('#access-form button[type="submit"]');
        await owner.waitForFunction(() => document.getElementById('notice')!.textContent!.includes('access saved'));
        expect((await get(hub.url, `/api/md/access/${slug}`)).body.access).toMatchObject({ visibility: 'team', editors: ['second'] });
        await owner.selectOption('#visibility', 'private');
        await owner.click('#access-form button[type="submit"]');
        await waitFor(async () => (await get(hub.url, `/api/md/doc/${slug}`)).status === 401, 5000, 'private again');
        // a read link
        await owner.selectOption('#link-role', 'read');
        await owner.click('#link-form button[type="submit"]');
        await owner.waitForSelector('#link-made:not([hidden])');
        const url = await owner.inputValue('#link-url');
        expect(url).toMatch(/\/docs\?share=ms_[^#]+#shared-/);
        await owner.waitForSelector('#links li');
        await fits(owner, width);
        expect(await axe(owner)).toEqual([]);

        // opened in a browser with no account
        const guest = await page(width, url.slice(hub.url.length));
        await waitText(guest, { includes: '첫 장' });
        await guest.waitForSelector('#access-note:not([hidden])');
        expect(await guest.textContent('#access-note')).toContain('share link');
        expect(await guest.getAttribute('#editor .cm-content', 'contenteditable')).toBe('false');
        expect(await guest.isDisabled('#save-btn')).toBe(true);
        if (width < 760) await guest.click('#view-toggle');
        await guest.waitForFunction(() => document.querySelector('#preview h1')?.textContent === '공유 문서');
        await guest.click('#present-btn');
        await guest.waitForSelector('#slides:not([hidden])');
        expect(await guest.textContent('#slide')).toContain('공유 문서');
        await guest.keyboard.press('ArrowRight');
        expect(await guest.textContent('#slide')).toContain('둘째 장');
        await guest.keyboard.press('Escape');
        expect(await textOf(guest)).toContain('첫 장');
        await fits(guest, width);

        // the owner revokes it: the guest's live editor ends, and the page says why
        await owner.click('#links li button');
        await owner.waitForFunction(() => document.querySelectorAll('#links li').length === 0);
        await guest.waitForFunction(() => document.getElementById('notice')!.textContent!.includes('no longer valid'), undefined, { timeout: 10_000 });
        const token = decodeURIComponent(/share=([^#]+)/.exec(url)![1]!);
        expect((await get(hub.url, `/api/md/doc/${slug}`, bearer(token))).body.error.code).toBe('invalid_token');
        for (const p of [owner, guest]) expect((p as any).errors).toEqual([]);
        for (const p of [owner, guest]) await p.context().close();
      }, 90_000);
    });
  }
});
