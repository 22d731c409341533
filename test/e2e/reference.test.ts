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
    await page.waitForSelector('body[data-ready="true"] .opblock', { timeout: 15_000 });
    expect(await page.$$eval('.opblock', (els) => els.length)).toBe(operations);
    expect(await page.textContent('body')).toContain('/api/md/save');
    expect(external).toEqual([]);
    expect(errors).toEqual([]);
    const pages = (await get(hub.url, '/pages', { accept: 'application/json' })).body.pages;
    expect(pages).toContainEqual(expect.objectContaining({ path: '/reference', title: 'API reference' }));
  }, 40_000);
});
