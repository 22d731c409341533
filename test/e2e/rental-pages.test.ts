import { writeFileSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_TEST_ENV, TEST_PARTNER_PASSWORD } from '../support/auth.js';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { threeFiles } from '../rental/fixtures.js';

const hasBrowser = browserAvailable();

async function partnerPage(browser: Browser, url: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${url}/partner.html`);
  await page.waitForSelector('body[data-ready="true"][data-auth="none"]');
  await page.fill('#password', TEST_PARTNER_PASSWORD);
  await page.click('#login button[type="submit"]');
  await page.waitForSelector('body[data-auth="partner"]');
  return page;
}

describe.skipIf(!hasBrowser)('rental form and partner dashboard in Chromium', () => {
  let hub: HubProcess;
  let browser: Browser;

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('rental-pages'), ...AUTH_TEST_ENV });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  it('an applicant applies with three files; a partner approves them; a second partner page sees it live', async () => {
    const errors: string[] = [];
    // the documents as files on disk, for the file inputs (a real HWP 5 compound file among them)
    const dir = tempDir('rental-files');
    const files = Object.fromEntries(threeFiles().map((f) => {
      const path = join(dir, f.filename);
      writeFileSync(path, f.data);
      return [f.field, path];
    }));

    // the applicant, on a phone
    const form = await browser.newPage({ viewport: { width: 360, height: 780 } });
    form.on('pageerror', (e) => errors.push(e.message));
    await form.goto(`${hub.url}/rental.html`);
    await form.waitForSelector('body[data-ready="true"]');
    // SOL-702 is preselected; the fee follows the building type
    expect(await form.isChecked('#type-rental-ipa')).toBe(true);
    expect(await form.textContent('#fee')).toContain('300,000');
    await form.selectOption('#buildingType', 'office');
    expect(await form.textContent('#fee')).toContain('350,000');
    expect(await form.textContent('#total')).toContain('12,600,000');
    // the required phone is checked in the page first
    await form.click('#submit');
    expect(await form.textContent('#error')).toContain('연락처');
    await form.fill('#organization', '서울중앙초등학교');
    await form.fill('#contactName', '김담당');
    await form.fill('#contactPhone', '010-1234-5678');
    for (const [field, path] of Object.entries(files)) await form.setInputFiles(`#${field}`, path);
    await form.click('#submit');
    await form.waitForSelector('#done:not([hidden])');
    const receipt = (await form.textContent('#receipt'))!;
    expect(receipt).toMatch(/^R\d{6}-\d{6}$/);
    expect(await form.textContent('#done-fee')).toContain('350,000');
    expect(await form.textContent('#access-key')).toMatch(/^ak_/);
    expect(await form.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);

    // two partner pages; the second only watches
    const p1 = await partnerPage(browser, hub.url);
    const p2 = await partnerPage(browser, hub.url);
    for (const p of [p1, p2]) p.on('pageerror', (e) => errors.push(e.message));
    await p2.waitForSelector('#conn.on');
    const row = `#rows tr.app:has(button.expand:text-is("${receipt}"))`;
    await p1.waitForSelector(row);
    expect(await p1.textContent('#c-documents_submitted')).toBe('1');
    await p1.click(row);
    for (const doc of ['bizCard', 'uniqueNumber', 'internalResolution']) {
      await p1.click(`.doc[data-doc="${doc}"] button.approve`);
      await p1.waitForSelector(`.doc[data-doc="${doc}"][data-check="approved"]`);
    }
    await p1.waitForSelector(`${row}[data-status="approved"]`);
    // the PDF and the image preview in the page, under the security policy (nothing refused)
    const refused: string[] = [];
    p1.on('console', (m) => m.text().includes('Content Security Policy') && refused.push(m.text()));
    await p1.click('.doc[data-doc="uniqueNumber"] button.view');
    await p1.waitForSelector('.doc[data-doc="uniqueNumber"] .preview:not([hidden]) iframe[src^="blob:"]');
    // Chromium's PDF viewer opened inside the frame (a refused frame shows chrome-error:// instead)
    for (let i = 0; i < 50 && !p1.frames().some((f) => f.url().startsWith('chrome-extension://')); i++) await p1.waitForTimeout(100);
    expect(p1.frames().map((f) => f.url()).filter((u) => !u.startsWith('http'))).toEqual(expect.arrayContaining([expect.stringMatching(/^chrome-extension:\/\/.+\/index\.html/)]));
    expect(p1.frames().some((f) => f.url().startsWith('chrome-error://'))).toBe(false);
    await p1.click('.doc[data-doc="bizCard"] button.view');
    await p1.waitForFunction(() => {
      const img = document.querySelector('.doc[data-doc="bizCard"] .preview img') as HTMLImageElement | null;
      return !!img && img.complete && img.naturalWidth > 0;
    });
    expect(refused).toEqual([]);
    // the other partner page follows live, without a reload
    await p2.waitForSelector(`${row}[data-status="approved"]`, { timeout: 10_000 });
    expect(await p2.textContent('#c-approved')).toBe('1');
    expect(errors).toEqual([]);
    // a whole journey (three uploads scanned, two partner pages, the PDF viewer): a loaded machine
    // takes longer than the suite's 30 s default
  }, 90_000);

  it('a submission whose answer was lost (a 503 after the application was made): submitting again shows the one receipt', async () => {
    const dir = tempDir('rental-retry-files');
    const paths = threeFiles().map((f) => {
      const path = join(dir, f.filename);
      writeFileSync(path, f.data);
      return [f.field, path] as const;
    });
    const page = await browser.newPage({ viewport: { width: 360, height: 780 } });
    const keys: string[] = [];
    let lose = true;
    // a proxy in front of the hub loses the first submission's answer on the way back: the hub made
    // the application, the page hears a 503
    const target = new URL(hub.url);
    const proxy = createServer((req, res) => {
      const submission = req.method === 'POST' && req.url === '/api/subscriptions';
      if (submission) keys.push(String(req.headers['idempotency-key'] ?? ''));
      const up = httpRequest({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        if (submission && lose) {
          lose = false;
          answer.resume();
          answer.on('end', () => {
            res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
            res.end(JSON.stringify({ error: { code: 'store_unavailable', message: 'try again', upstream: answer.statusCode } }));
          });
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      req.pipe(up);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const via = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    await page.goto(`${via}/rental.html`);
    await page.waitForSelector('body[data-ready="true"]');
    await page.fill('#contactName', '재신청');
    await page.fill('#contactPhone', '010-2222-3333');
    for (const [field, path] of paths) await page.setInputFiles(`#${field}`, path);
    await page.click('#submit');
    await page.waitForFunction(() => (document.querySelector('#error')?.textContent ?? '') !== '');
    expect(await page.isHidden('#done')).toBe(true);
    await page.click('#submit');
    await page.waitForSelector('#done:not([hidden])');
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f]{32}$/);
    expect(keys[1]).toBe(keys[0]);
    const receipt = (await page.textContent('#receipt'))!;
    const { token } = await fetch(`${hub.url}/api/partner/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ password: TEST_PARTNER_PASSWORD }) }).then((r) => r.json());
    const listed = await fetch(`${hub.url}/api/partner/applications?q=${encodeURIComponent('재신청')}`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.json());
    expect(listed.matched).toBe(1);
    expect(listed.items[0].receiptNo).toBe(receipt);
    // a changed form is a new submission: a new key
    await page.goto(`${via}/rental.html`);
    await page.waitForSelector('body[data-ready="true"]');
    await page.fill('#contactName', '다른신청');
    await page.fill('#contactPhone', '010-2222-4444');
    await page.click('#submit');
    await page.waitForSelector('#done:not([hidden])');
    expect(keys).toHaveLength(3);
    expect(keys[2]).not.toBe(keys[0]);
    await page.close();
    proxy.close();
  }, 60_000);
});
