import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_TEST_ENV, bearer, signIn, TEST_PARTNER_PASSWORD } from '../support/auth.js';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { call } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { threeFiles } from '../rental/fixtures.js';

const hasBrowser = browserAvailable();
const SIZES = [
  { width: 1280, height: 900 },
  { width: 360, height: 780 },
] as const;

/** The applicant's journey after applying: the applicant page (status, results, reasons, re-upload), linked from the form and the rejection mail. */
describe.skipIf(!hasBrowser)('journey: the applicant follows the application on /applicant.html and replaces a rejected document', () => {
  let hub: HubProcess;
  let browser: Browser;
  const errors: string[] = [];
  const files: Record<string, string> = {};

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('journey-applicant'), ...AUTH_TEST_ENV, PUBLIC_URL: 'https://maru.example.kr' });
    browser = await launchChromium();
    const dir = tempDir('journey-files');
    for (const f of threeFiles()) {
      const path = join(dir, f.filename);
      writeFileSync(path, f.data);
      files[f.field] = path;
    }
    writeFileSync(join(dir, 'notes.txt'), 'not a document');
    files.txt = join(dir, 'notes.txt');
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  const watch = (p: Page) => (p.on('pageerror', (e) => errors.push(e.message)), p);

  async function partnerRejects(receiptNo: string, size: (typeof SIZES)[number]): Promise<void> {
    const page = watch(await browser.newPage({ viewport: size }));
    await page.goto(`${hub.url}/partner.html`);
    await page.waitForSelector('body[data-ready="true"][data-auth="none"]');
    await page.fill('#password', TEST_PARTNER_PASSWORD);
    await page.click('#login button[type="submit"]');
    const row = `#rows tr.app:has(button.expand:text-is("${receiptNo}"))`;
    await page.waitForSelector(row);
    await page.click(row);
    // product by its code, building type in Korean; a reject without a reason is refused beside the control
    expect(await page.textContent(`${row} + tr.detail .product`)).toContain('SOL-702');
    expect(await page.textContent(`${row} + tr.detail`)).toContain('관공서·청사');
    await page.click('.doc[data-doc="uniqueNumber"] button.reject');
    expect(await page.textContent('.doc[data-doc="uniqueNumber"] .doc-error')).toBe('반려 사유를 입력하세요.');
    await page.fill('.doc[data-doc="uniqueNumber"] input', '사업자 번호가 보이지 않습니다');
    await page.click('.doc[data-doc="uniqueNumber"] button.reject');
    await page.waitForSelector('.doc[data-doc="uniqueNumber"][data-check="rejected"]');
    // the counters add up: the rejected card counts it
    expect(Number(await page.textContent('#c-rejected'))).toBeGreaterThanOrEqual(1);
    // the readable table at any width: no syllable-per-line wrapping in the rows
    // (the rows are drawn again by the live update of the rejection: judged once the table is settled)
    const wrapping = () => page.$$eval('#rows tr.app td', (tds) => tds.filter((td) => !td.isConnected || getComputedStyle(td).whiteSpace !== 'nowrap').map((td) => `${td.textContent}: ${getComputedStyle(td).whiteSpace}`));
    // asked again until it holds or 20 s pass: a redraw between the wait and the question (a document
    // without its window computes no style) once failed a check made a single time
    await expect.poll(async () => {
      const rows = await page.$$eval('#rows tr.app td', (tds) => tds.length);
      return rows > 0 ? wrapping() : ['no rows yet'];
    }, { timeout: 20_000, interval: 250 }).toEqual([]);
    await page.close();
  }

  for (const size of SIZES) {
    it(`at ${size.width} px: track opens the page; a rejection shows its reason in Korean; the re-upload goes back to review`, async () => {
      const context = await browser.newContext({ viewport: size });
      const form = watch(await context.newPage());
      await form.goto(`${hub.url}/rental.html`);
      await form.waitForSelector('body[data-ready="true"]');
      await form.fill('#organization', '부산남부초등학교');
      await form.fill('#contactName', '박담당');
      await form.fill('#contactPhone', '010-2323-4545');
      await form.fill('#email', `park${size.width}@school.kr`);
      await form.selectOption('#buildingType', 'office');
      for (const field of ['bizCard', 'uniqueNumber', 'internalResolution']) await form.setInputFiles(`#${field}`, files[field]!);
      await form.click('#submit');
      await form.waitForSelector('#done:not([hidden])');
      const receiptNo = (await form.textContent('#receipt'))!;

      // "track" opens the applicant's page, not JSON
      await form.click('#track');
      await form.waitForURL(/\/applicant\.html#/);
      await form.waitForSelector('#app:not([hidden])');
      expect(await form.textContent('#app-receipt')).toBe(receiptNo);
      expect(await form.textContent('#status')).toBe('서류 제출 완료');
      expect(await form.textContent('#building')).toBe('관공서·청사');
      expect(await form.textContent('#product')).toContain('SOL-702');
      const pageText = (await form.textContent('main'))!;
      expect(pageText).toContain('고유번호증');
      expect(pageText).not.toMatch(/uniqueNumber|bizCard|internalResolution|documents_submitted/);

      await partnerRejects(receiptNo, size);

      // the rejection mail names the document in Korean and links to the page
      // (the outbox delivers after the check: read until it is kept)
      const operator = await signIn(hub.url, ['operator']);
      let mail: { subject: string; text?: string } | undefined;
      for (let i = 0; i < 100 && !mail; i++) {
        const mails = await call(hub.url, 'GET', '/api/mail?limit=1000', undefined, bearer(operator));
        mail = (mails.body.mails as { subject: string; text?: string }[]).find((m) => m.subject.includes(receiptNo) && m.subject.includes('반려'));
        if (!mail) await new Promise((r) => setTimeout(r, 100));
      }
      expect(mail?.text).toContain('- 고유번호증: 사업자 번호가 보이지 않습니다');
      expect(mail?.text).toContain(`https://maru.example.kr/applicant.html#receipt=${receiptNo}`);
      expect(mail?.text).not.toContain('uniqueNumber');

      await form.reload();
      await form.waitForSelector('#app:not([hidden]) #status[data-status="rejected"]');
      expect(await form.textContent('#status')).toBe('서류 보완 요청');
      const doc = '#docs li[data-doc="uniqueNumber"]';
      expect(await form.textContent(`${doc} .result`)).toBe('반려');
      expect(await form.textContent(`${doc} .reason`)).toContain('사업자 번호가 보이지 않습니다');
      // a wrong file is refused as it is chosen, in Korean
      await form.setInputFiles('#file-uniqueNumber', files.txt!);
      expect(await form.textContent('#file-uniqueNumber-error')).toContain('파일만 올릴 수 있습니다');
      expect(await form.isDisabled('#send-uniqueNumber')).toBe(true);
      await form.setInputFiles('#file-uniqueNumber', files.uniqueNumber!);
      expect(await form.textContent('#file-uniqueNumber-error')).toBe('');
      await form.click('#send-uniqueNumber');
      await form.waitForSelector('#status[data-status="documents_submitted"]');
      expect(await form.textContent(`${doc} .result`)).toBe('검토 대기');
      expect(await form.textContent('#notice')).toContain('고유번호증');
      expect(await form.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
      // the applicant page with data passes axe-core: no serious or critical violation
      const axe = await new AxeBuilder({ page: form }).analyze();
      expect(axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id)).toEqual([]);
      expect(errors).toEqual([]);
      await context.close();
    }, 90_000);
  }
});
