import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { get } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';

describe.skipIf(!browserAvailable())('API reference page', () => {
  let hub: HubProcess;
  let browser: Browser;
  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('reference') });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  it('renders every operation of /openapi.json from local assets, and is listed in /pages', async () => {
    const doc = (await get(hub.url, '/openapi.json')).body;
    const operations = Object.values(doc.paths as Record<string, object>).reduce((n: number, ops) => n + Object.keys(ops).length, 0);
    const page = await browser.newPage();
    const errors: string[] = [];
    const external: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('request', (r) => {
      if (!r.url().startsWith(hub.url) && !r.url().startsWith('data:')) external.push(r.url());
    });
    await page.goto(`${hub.url}/reference`);
    // one service at a time: every tag of the document is offered, and together they show every operation
    const tags = (doc.tags as { name: string }[]).map((t) => t.name);
    expect(tags).toEqual(expect.arrayContaining(['hub', 'auth', 'payment', 'rental', 'reward', 'collab', 'ticket', 'trading']));
    await page.waitForSelector('body[data-ready="true"] .opblock', { timeout: 15_000 });
    expect(await page.$$eval('#service option', (els) => els.map((e) => (e as HTMLOptionElement).value))).toEqual(tags);
    let shown = 0;
    for (const tag of tags) {
      await page.selectOption('#service', tag);
      await page.waitForSelector('body[data-ready="true"] .opblock', { timeout: 15_000 });
      const n = await page.$$eval('.opblock', (els) => els.length);
      const inDoc = Object.values(doc.paths as Record<string, Record<string, { tags: string[] }>>).reduce((k, ops) => k + Object.values(ops).filter((o) => o.tags.includes(tag)).length, 0);
      expect(n, tag).toBe(inDoc);
      shown += n;
      if (tag === 'collab') expect(await page.textContent('body')).toContain('/api/md/save');
    }
    expect(shown).toBe(operations);
    expect(external).toEqual([]);
    expect(errors).toEqual([]);
    const pages = (await get(hub.url, '/pages', { accept: 'application/json' })).body.pages;
    expect(pages).toContainEqual(expect.objectContaining({ path: '/reference', title: 'API reference' }));
  }, 90_000);
});
