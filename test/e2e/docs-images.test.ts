import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { call, get, post } from '../support/http.js';
import { AUTH_TEST_ENV, TEST_ADMIN_PASSWORD, bearer, login } from '../support/auth.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { makePng } from '../support/uploads.js';
import { waitFor } from '../support/wait.js';
import { signInOnPage, waitText } from './editor-text.js';

const hasBrowser = browserAvailable();

/**
 * Images in the documents page (docs/collab.md "Images"): a PNG pasted into the editor of a private
 * document goes through the upload route, its address lands in the text, the preview and the
 * presentation show it (loaded with the page's credential), and the HTML export carries it inline.
 */
describe.skipIf(!hasBrowser)('images pasted into a document (Chromium)', () => {
  let hub: HubProcess;
  let browser: Browser;
  let owner = '';

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('docs-images-page'), MD_PERSIST_DEBOUNCE_MS: '300', ...AUTH_TEST_ENV });
    browser = await launchChromium();
    const admin = bearer(await login(hub.url, 'admin', TEST_ADMIN_PASSWORD));
    expect((await call(hub.url, 'POST', '/api/auth/accounts', { user: 'painter', password: 'pw-painter-secret', roles: ['editor'] }, admin)).status).toBe(201);
    owner = await login(hub.url, 'painter', 'pw-painter-secret');
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  async function page(path: string): Promise<Page> {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    const p = await ctx.newPage();
    const errors: string[] = [];
    p.on('pageerror', (e) => errors.push(e.message));
    (p as any).errors = errors;
    await p.goto(`${hub.url}${path}`);
    await p.waitForSelector('body[data-ready="true"]');
    return p;
  }

  it('a pasted PNG is uploaded, shown in the preview and the presentation, and inlined in the HTML export', async () => {
    expect((await post(hub.url, '/api/md/save', { slug: 'album', content: '# 사진첩\n\n', visibility: 'private' }, bearer(owner))).status).toBe(200);
    const p = await page('/docs#album');
    await signInOnPage(p, 'painter');
    await waitText(p, { includes: '사진첩' });
    await p.waitForFunction(() => document.querySelector('#editor .cm-content')?.getAttribute('contenteditable') === 'true');
    // the cursor at the end, then a paste that carries a PNG file (as a screenshot tool's would)
    await p.click('#editor .cm-content');
    await p.keyboard.press('Control+End');
    const png = makePng();
    await p.evaluate((bytes) => {
      const dt = new DataTransfer();
      dt.items.add(new File([new Uint8Array(bytes)], 'chart.png', { type: 'image/png' }));
      document.querySelector('#editor .cm-content')!.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
    }, [...png]);
    await waitText(p, { includes: '![chart](/api/md/images/album/' });
    // the preview shows it, loaded through the client (a private document: the <img> alone could not)
    await p.waitForFunction(() => {
      const img = document.querySelector<HTMLImageElement>('#preview img[data-image]');
      return !!img && img.src.startsWith('blob:') && img.complete && img.naturalWidth === 1;
    });
    expect(await p.getAttribute('#preview img[data-image]', 'alt')).toBe('chart');
    // the presentation too
    await p.click('#present-btn');
    await p.waitForFunction(() => {
      const img = document.querySelector<HTMLImageElement>('#slide img[data-image]');
      return !!img && img.src.startsWith('blob:') && img.complete && img.naturalWidth === 1;
    });
    await p.keyboard.press('Escape');
    // saved: the HTML export from the history row carries the image inside the file
    await p.click('#save-btn');
    await p.waitForSelector('#save-state[data-state="saved"]');
    const saved = (await get(hub.url, '/api/md/doc/album', bearer(owner))).body.doc;
    expect(saved.content).toMatch(/!\[chart\]\(\/api\/md\/images\/album\/[a-f0-9]{16}\)/);
    await p.click('#history-btn');
    const [download] = await Promise.all([p.waitForEvent('download'), p.click(`#versions li[data-version="${saved.version}"] a.export[data-format="html"]`)]);
    expect(download.suggestedFilename()).toBe(`album-v${saved.version}.html`);
    const file = join(tempDir('docs-images-export'), 'album.html');
    await download.saveAs(file);
    const html = readFileSync(file, 'utf8');
    expect(html).toContain(`src="data:image/png;base64,${png.toString('base64')}"`);
    // a file that is not an image is refused, in Korean by its code, and the text is unchanged
    const before = saved.content as string;
    await p.evaluate(() => {
      const dt = new DataTransfer();
      dt.items.add(new File(['not an image'], 'notes.png', { type: 'image/png' }));
      document.querySelector('#editor .cm-content')!.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
    });
    await p.waitForFunction(() => (document.getElementById('notice')?.textContent ?? '').includes('그림 파일이 아닙니다'));
    await waitFor(async () => (await p.evaluate(() => document.querySelector('#editor .cm-content')?.textContent ?? '')).length > 0);
    expect((await get(hub.url, '/api/md/doc/album', bearer(owner))).body.doc.content).toBe(before);
    expect((p as any).errors).toEqual([]);
    await p.context().close();
  }, 90_000);
});
