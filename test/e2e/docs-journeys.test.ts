import AxeBuilder from '@axe-core/playwright';
import type { Browser, BrowserContext, Page, WebSocketRoute } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { call, get, post } from '../support/http.js';
import { AUTH_TEST_ENV, TEST_ADMIN_PASSWORD, bearer, login } from '../support/auth.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { tcpProxy } from '../support/proxy.js';
import { signInOnPage, textOf, waitText } from './editor-text.js';

const hasBrowser = browserAvailable();

/** "2026-11-25 13:05 KST" of an instant, as web/common/time.ts writes it, computed here without a browser. */
const kst = (ms: number) => `${new Date(ms + 9 * 3_600_000).toISOString().slice(0, 16).replace('T', ' ')} KST`;
const STAMP = /\d{4}-\d{2}-\d{2} \d{2}:\d{2} KST/;

/**
 * The documents page tells people what is going on, in the page: who is there (by name), whose lock
 * keeps the editor read-only and until when, whether the live socket is up, whether a save failed,
 * and a save someone else's save overtook (the merge screen). Each journey at a desktop's and a
 * phone's width; the tests act only through the pages (and the network under them).
 */
describe.skipIf(!hasBrowser)('the documents page says what is going on (Chromium)', () => {
  let hub: HubProcess;
  let browser: Browser;
  let editor = '';

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('docs-journeys'), MD_PERSIST_DEBOUNCE_MS: '300', ...AUTH_TEST_ENV });
    browser = await launchChromium();
    // two editors whose names begin alike, and one named only by the user id (an account's default name)
    const admin = bearer(await login(hub.url, 'admin', TEST_ADMIN_PASSWORD));
    for (const [user, name] of [['kim', '편집자 김민지'], ['lee', '편집자 이서준'], ['park', undefined]] as const) {
      const r = await call(hub.url, 'POST', '/api/auth/accounts', { user, password: `pw-${user}-secret`, roles: ['editor'], ...(name ? { name } : {}) }, admin);
      expect(r.status).toBe(201);
    }
    editor = await login(hub.url, 'park', 'pw-park-secret');
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  const save = (slug: string, content: string) => post(hub.url, '/api/md/save', { slug, content }, bearer(editor));

  async function openAs(user: string, slug: string, width: number, opts: { base?: string; ctx?: BrowserContext } = {}): Promise<Page> {
    const ctx = opts.ctx ?? (await browser.newContext({ viewport: { width, height: width < 500 ? 780 : 900 } }));
    const page = await ctx.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    (page as any).errors = errors;
    await page.goto(`${opts.base ?? hub.url}/docs#${slug}`);
    await page.waitForSelector('body[data-ready="true"]');
    await signInOnPage(page, user);
    // signing in reopens the document for editing: wait until it is (not the read-only one before)
    await page.waitForSelector('#editor .cm-content[contenteditable="true"]');
    return page;
  }
  const names = (p: Page) => p.$$eval('#presence .peer-name', (els) => els.map((e) => e.textContent).sort());
  const fits = async (p: Page, width: number) => expect(await p.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
  /** Serious or critical axe-core violations of the page as it is now (the bar every page meets, test/support/pages-quality.ts). */
  const axe = async (p: Page) =>
    (await new AxeBuilder({ page: p as any }).analyze()).violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id}: ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join('; ')}`);

  for (const width of [1280, 360]) {
    describe(`at ${width} px`, () => {
      it('presence: each person by their own name (the user id when the account has no other), two tabs of one person are one person', async () => {
        const slug = `people-${width}`;
        expect((await save(slug, '# 함께\n\n본문\n')).status).toBe(200);
        const kim = await openAs('kim', slug, width);
        const lee = await openAs('lee', slug, width);
        const park = await openAs('park', slug, width);
        for (const p of [kim, lee, park]) await p.waitForFunction(() => document.querySelectorAll('#presence .peer').length === 3);
        for (const p of [kim, lee, park]) expect(await names(p)).toEqual(['park', '편집자 김민지', '편집자 이서준']);
        // one's own chip is marked
        expect(await kim.getAttribute('#presence .peer[data-me]', 'data-user')).toBe('kim');
        // the colours differ per person
        const colours = await kim.$$eval('#presence .avatar', (els) => els.map((e) => (e as HTMLElement).style.background));
        expect(new Set(colours).size).toBe(3);
        // kim's remote caret on lee's page carries kim's name
        await waitText(kim, { includes: '본문' });
        await kim.click('#editor .cm-content');
        await kim.keyboard.press('Control+End');
        await kim.keyboard.type('김');
        await waitText(lee, { endsWith: '김' });
        await lee.waitForSelector('#editor .cm-ySelectionInfo');
        expect(await lee.textContent('#editor .cm-ySelectionInfo')).toBe('편집자 김민지');
        // a second tab of kim (a tab signs in for itself): still three people, kim's chip counts two tabs
        const kim2 = await openAs('kim', slug, width, { ctx: kim.context() });
        await lee.waitForSelector('#presence .peer[data-user="kim"] .peer-tabs');
        expect(await lee.textContent('#presence .peer[data-user="kim"] .peer-tabs')).toContain('2 tabs');
        expect(await lee.$$eval('#presence .peer', (els) => els.length)).toBe(3);
        expect(await names(lee)).toEqual(['park', '편집자 김민지', '편집자 이서준']);
        await fits(lee, width);
        expect(await axe(lee)).toEqual([]);
        for (const p of [kim, kim2, lee, park]) expect((p as any).errors).toEqual([]);
        for (const p of [kim, lee, park]) await p.context().close();
      }, 90_000);

      it('a lock held by someone else: the page says who holds it until when (KST), then that it was released', async () => {
        const slug = `lock-${width}`;
        expect((await save(slug, '# 잠금 안내\n')).status).toBe(200);
        const kim = await openAs('kim', slug, width);
        const lee = await openAs('lee', slug, width);
        for (const p of [kim, lee]) await p.waitForSelector('#lock-state:has-text("잠금 없음")');
        expect(await kim.isHidden('#lock-note')).toBe(true);
        // lee takes the lock on her page
        await lee.click('#lock-btn');
        await lee.waitForSelector('#lock-state:has-text("내 잠금")');
        const held = (await get(hub.url, `/api/md/lock/${slug}`)).body;
        expect(held.holder).toBe('lee');
        // kim's page: a note beside the editor names lee and the end of the lock in KST, with the zone
        await kim.waitForSelector('#editor-card #lock-note[data-state="locked"]');
        const note = (await kim.textContent('#lock-note'))!;
        expect(note).toContain('편집자 이서준');
        expect(note).toContain(`${kst(held.expires)}까지`);
        expect(note).toContain(`until ${kst(held.expires)}`);
        expect(note).toContain('읽기 전용');
        expect(await kim.getAttribute('#editor .cm-content', 'contenteditable')).toBe('false');
        // the note is in view next to the editor, and nothing is wider than the screen
        const box = (await kim.locator('#lock-note').boundingBox())!;
        expect(box.x + box.width).toBeLessThanOrEqual(width);
        await fits(kim, width);
        expect(await axe(kim)).toEqual([]);
        // the holder's page has no such note
        expect(await lee.isHidden('#lock-note')).toBe(true);
        // lee releases it: kim's page says so, when, and the editor is editable again
        const before = Date.now();
        await lee.click('#lock-btn');
        await kim.waitForSelector('#lock-note[data-state="released"]');
        const released = (await kim.textContent('#lock-note'))!;
        expect(released).toContain('편집자 이서준');
        expect(released).toMatch(/잠금을 풀었습니다/);
        expect(released).toMatch(/released the lock at/);
        const stamp = STAMP.exec(released)![0];
        expect(Math.abs(Date.parse(`${stamp.slice(0, 16).replace(' ', 'T')}:00+09:00`) - before)).toBeLessThan(120_000);
        await kim.waitForFunction(() => document.querySelector('#editor .cm-content')?.getAttribute('contenteditable') === 'true');
        expect(await kim.isEnabled('#save-btn')).toBe(true);
        for (const p of [kim, lee]) expect((p as any).errors).toEqual([]);
        for (const p of [kim, lee]) await p.context().close();
      }, 90_000);

      it('the header follows the live socket (live, offline and reconnecting, live again); a failed save stays failed until a save succeeds', async () => {
        const slug = `conn-${width}`;
        expect((await save(slug, '# 연결\n')).status).toBe(200);
        const proxy = await tcpProxy(hub.url);
        try {
          const kim = await openAs('kim', slug, width, { base: proxy.url });
          await waitText(kim, { includes: '연결' });
          await kim.waitForSelector('#conn[data-state="live"]');
          expect(await kim.textContent('#conn')).toBe('실시간 · live');
          // the network drops: the header says so within moments
          proxy.cut();
          await kim.waitForSelector('#conn[data-state="offline"]', { timeout: 10_000 });
          expect(await kim.textContent('#conn')).toBe('오프라인, 다시 연결 중 · offline, reconnecting');
          // a save now fails, and says so beside the button
          await kim.click('#save-btn');
          await kim.waitForSelector('#save-state[data-state="failed"]');
          const failedAt = Date.now();
          expect(await kim.textContent('#save-state')).toContain('저장 실패 · save failed');
          await fits(kim, width);
          expect(await axe(kim)).toEqual([]);
          // the network is back: the header is live again (the sockets reconnect by themselves)
          proxy.restore();
          await kim.waitForSelector('#conn[data-state="live"]', { timeout: 30_000 });
          // past the time a passing notice disappears, the failure is still shown: nothing was saved since
          const left = 9_000 - (Date.now() - failedAt);
          if (left > 0) await kim.waitForTimeout(left);
          expect(await kim.getAttribute('#save-state', 'data-state')).toBe('failed');
          expect(await kim.isVisible('#save-state')).toBe(true);
          // a save that succeeds replaces it
          await kim.click('#save-btn');
          await kim.waitForSelector('#save-state[data-state="saved"]');
          expect(await kim.textContent('#save-state')).toMatch(/^v\d+ 저장됨 \d{2}:\d{2} KST · saved$/);
          expect((kim as any).errors).toEqual([]);
          await kim.context().close();
        } finally {
          await proxy.close();
        }
      }, 90_000);

      it('the live channel cannot connect (a proxy that refuses WebSockets): the saved text is shown read-only, then edited over HTTP; a save adds to it and never replaces it with nothing', async () => {
        const slug = `blocked-${width}`;
        const note = `# 회의 메모\n\n${'오늘 회의에서 정한 것들을 적어 둡니다. '.repeat(8)}\n`;
        expect((await save(slug, note)).status).toBe(200);
        // the co-editing socket first opens and hears nothing (the room never syncs), then is refused
        const ctx = await browser.newContext({ viewport: { width, height: width < 500 ? 780 : 900 } });
        let refuse = false;
        const held: WebSocketRoute[] = [];
        await ctx.routeWebSocket(/\/yjs\//, (ws) => {
          if (refuse) void ws.close({ code: 4500, reason: 'blocked' });
          else held.push(ws);
        });
        const page = await ctx.newPage();
        const errors: string[] = [];
        page.on('pageerror', (e) => errors.push(e.message));
        await page.goto(`${hub.url}/docs#${slug}`);
        await page.waitForSelector('body[data-ready="true"]');
        await signInOnPage(page, 'kim');
        await page.waitForFunction(() => document.getElementById('conn')?.dataset.state === 'connecting');
        // the room has not synced: the editor holds the saved text, read-only, and nothing can be saved
        await waitText(page, { equals: note });
        await page.waitForTimeout(500);
        expect(await page.getAttribute('#editor .cm-content', 'contenteditable')).toBe('false');
        expect(await page.isDisabled('#save-btn')).toBe(true);
        expect(await textOf(page)).toBe(note);
        // the proxy refuses the socket: the page edits the saved text over HTTP, and says so
        refuse = true;
        for (const ws of held.splice(0)) await ws.close({ code: 4500, reason: 'blocked' }).catch(() => undefined);
        await page.waitForSelector('#editor .cm-content[contenteditable="true"]', { timeout: 20_000 });
        expect(await textOf(page)).toBe(note);
        expect(await page.textContent('#notice')).toContain('저장된 내용을 편집합니다');
        await page.click('#editor .cm-content');
        await page.keyboard.press('Control+End');
        await page.keyboard.type('결정: 금요일 배포');
        await page.click('#save-btn');
        await page.waitForSelector('#save-state[data-state="saved"]');
        expect((await get(hub.url, `/api/md/doc/${slug}`)).body.doc.content).toBe(`${note}결정: 금요일 배포`);
        // someone else saves next: this page's save is a conflict shown on the merge screen, not an overwrite
        await page.waitForSelector('#editor .cm-content[contenteditable="true"]', { timeout: 20_000 });
        const theirs = `${note}결정: 금요일 배포\n다른 사람의 줄\n`;
        expect((await save(slug, theirs)).status).toBe(200);
        await page.click('#editor .cm-content');
        await page.keyboard.press('Control+End');
        await page.keyboard.type('\n내 줄');
        await page.click('#save-btn');
        await page.waitForSelector('#merge', { state: 'visible' });
        expect((await get(hub.url, `/api/md/doc/${slug}`)).body.doc.content).toBe(theirs);
        expect(await axe(page)).toEqual([]);
        expect(errors).toEqual([]);
        await ctx.close();
      }, 90_000);

      it('another editor saves first while this page is offline from the room: the save is refused and the merge screen shows both texts; the merged save is kept once', async () => {
        const slug = `merge-${width}`;
        const body = '# 병합\n\n첫 줄\n';
        expect((await save(slug, body)).status).toBe(200);
        // kim's co-editing socket goes through a switch the test can turn off (HTTP and /ws stay up)
        const ctx = await browser.newContext({ viewport: { width, height: width < 500 ? 780 : 900 } });
        let offline = false;
        const open: { page: WebSocketRoute; server: WebSocketRoute }[] = [];
        await ctx.routeWebSocket(/\/yjs\//, (ws) => {
          if (offline) return void ws.close({ code: 4500, reason: 'offline' });
          open.push({ page: ws, server: ws.connectToServer() });
        });
        const kim = await openAs('kim', slug, width, { ctx });
        const lee = await openAs('lee', slug, width);
        for (const p of [kim, lee]) await waitText(p, { includes: '첫 줄' });
        await kim.waitForSelector('#conn[data-state="live"]');
        // kim's live socket drops
        offline = true;
        for (const c of open.splice(0)) {
          await c.page.close({ code: 4500, reason: 'offline' }).catch(() => undefined);
          await c.server.close().catch(() => undefined);
        }
        await kim.waitForSelector('#conn[data-state="offline"]');
        // kim writes a line offline; lee writes another and saves a version first
        await kim.click('#editor .cm-content');
        await kim.keyboard.press('Control+End');
        await kim.keyboard.type('김의 줄\n');
        await lee.click('#editor .cm-content');
        await lee.keyboard.press('Control+End');
        await lee.keyboard.type('이의 줄\n');
        await lee.click('#save-btn');
        await lee.waitForSelector('#save-state[data-state="saved"]');
        const leeVersion = Number(/^v(\d+)/.exec((await lee.textContent('#save-state'))!)![1]);
        // kim's page hears of lee's save (its /ws is up), but its text does not have lee's line
        await kim.waitForFunction((v) => document.getElementById('doc-meta')!.textContent!.startsWith(`v${v} `), leeVersion);
        expect(await textOf(kim)).toBe(`${body}김의 줄\n`);
        // kim saves: refused as stale, the merge screen shows lee's text beside kim's
        await kim.click('#save-btn');
        await kim.waitForSelector('#merge', { state: 'visible' });
        expect(await kim.textContent('#merge-info')).toContain(`v${leeVersion}`);
        const diff = (await kim.textContent('#merge-diff'))!;
        expect(diff).toContain('이의 줄');
        expect(diff).toContain('김의 줄');
        expect(await kim.inputValue('#mine')).toBe(`${body}김의 줄\n`);
        expect(await kim.getAttribute('#save-state', 'data-state')).toBe('conflict');
        await fits(kim, width);
        expect(await axe(kim)).toEqual([]);
        // kim merges by hand and saves the merge
        const merged = `${body}이의 줄\n김의 줄\n`;
        await kim.fill('#mine', merged);
        await kim.click('#merge-save');
        await kim.waitForSelector('#save-state[data-state="saved"]');
        expect(await kim.isHidden('#merge')).toBe(true);
        expect((await get(hub.url, `/api/md/doc/${slug}`)).body.doc.content).toBe(merged);
        // the save reopened the document while the socket is still down: its reconnects are refused
        // for a while, and the page keeps waiting for the room (it synced before: WebSockets pass)
        await kim.waitForTimeout(1500);
        // kim's socket comes back: both pages hold the merge, every line once
        offline = false;
        // y-websocket retries with a back-off of up to 2.5 s; a loaded machine takes longer to sync
        await kim.waitForSelector('#conn[data-state="live"]', { timeout: 40_000 });
        for (const p of [kim, lee]) await waitText(p, { equals: merged }, 15_000);
        await lee.waitForTimeout(1000);
        for (const p of [kim, lee]) expect(await textOf(p)).toBe(merged);
        for (const p of [kim, lee]) expect((p as any).errors).toEqual([]);
        await ctx.close();
        await lee.context().close();
      }, 90_000);
    });
  }
});
