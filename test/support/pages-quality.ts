import { mkdirSync } from 'node:fs';
import AxeBuilder from '@axe-core/playwright';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserAvailable, launchChromium } from './browser.js';
import { AUTH_TEST_ENV, bearer, signIn } from './auth.js';
import { get, post } from './http.js';
import { startHubProcess, tempDir, type HubProcess } from './process.js';

const hasBrowser = browserAvailable();
/** Screenshots for people to look at: SCREENSHOTS=1 keeps one of every page and width in .tmp/screens. */
const SHOTS = process.env.SCREENSHOTS === '1' ? '.tmp/screens' : undefined;

/**
 * Every page the hub lists at /pages (pages added later included), at the given widths (a phone's
 * 360 px and a desktop's 1280 px, one test file each so the two run side by side): no wider than the
 * viewport, no Content-Security-Policy violation, no serious or critical axe-core violation, and
 * with SCREENSHOTS=1 a screenshot kept for people to look at.
 */
export function pageQualitySuite(WIDTHS: readonly number[]): void {
  describe.skipIf(!hasBrowser)(`every page at ${WIDTHS.join(' and ')} px`, () => {
    let hub: HubProcess;
    let browser: Browser;
    let paths: string[] = [];

    beforeAll(async () => {
      // DEMO=1: the demo page (listed in /pages only then) is checked too, with data on every page
      hub = await startHubProcess({ DATA_DIR: tempDir(`pages-quality-${WIDTHS.join('-')}`), DEMO: '1', ...AUTH_TEST_ENV }, 30_000);
      const staff = bearer(await signIn(hub.url, ['staff']));
      browser = await launchChromium();
      if (SHOTS) mkdirSync(SHOTS, { recursive: true });
      // something to show on every page
      const show = (await post(hub.url, '/api/shows', { name: '겨울 음악회', venue: '예술의전당', date: '2026-12-24T19:00:00+09:00' }, staff)).body;
      const ticket = (await post(hub.url, '/api/reservations', { show_id: show.id, seat: 'B-12', amount_paid: 88000, holder: '김민지' }, staff)).body;
      await post(hub.url, '/api/md/save', { slug: 'welcome', category: 'guide', content: '# 환영합니다\n\n**maru** 문서 편집기입니다. 여러 사람이 함께 씁니다.\n' }, bearer(await signIn(hub.url, ['editor'])));
      const listed = (await get(hub.url, '/pages', { accept: 'application/json' })).body.pages as { path: string }[];
      const examples: Record<string, string> = { ':code': ticket.code };
      // the editor with a document open, besides the bare list
      paths = ['/pages', '/docs#welcome'];
      for (const p of listed) {
        const filled = p.path.replace(/:[a-zA-Z]+/g, (m) => examples[m] ?? m);
        if (filled.includes(':') || filled.includes('*')) console.warn(`pages-quality: no example value for ${p.path}: not checked`);
        else paths.push(filled);
      }
    });
    afterAll(async () => {
      await browser?.close();
      await hub?.stop();
    });

    it('lists the pages to check', () => {
      expect(paths).toEqual(expect.arrayContaining(['/pages', '/', '/docs', '/scan', '/shows', '/trading', '/demo', '/coach', '/coach/owners']));
      expect(paths.some((p) => p.startsWith('/mticket/TK-'))).toBe(true);
    });

    for (const width of WIDTHS) {
      it(`at ${width} px: fits, satisfies the CSP, passes axe-core (no serious or critical violation)`, async () => {
        const problems: string[] = [];
        for (const path of paths) {
          const ctx = await browser.newContext({ viewport: { width, height: width < 500 ? 780 : 900 } });
          await ctx.addInitScript(() => {
            (window as any).__csp = [];
            document.addEventListener('securitypolicyviolation', (e) => (window as any).__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
          });
          const page = await ctx.newPage();
          const errors: string[] = [];
          page.on('pageerror', (e) => errors.push(e.message));
          await page.goto(hub.url + path, { waitUntil: 'load' });
          await page.waitForSelector('body[data-ready]', { timeout: 5000 }).catch(() => undefined);
          await page.evaluate(() => document.fonts.ready);
          if (path.includes('#')) await page.waitForSelector('#editor .cm-content', { timeout: 5000 });
          const name = path.replace(/^\//, '').replace(/[^\w-]+/g, '_') || 'root';
          if (SHOTS) await page.screenshot({ path: `${SHOTS}/${name}-${width}.png`, fullPage: true });
          const wide = await page.evaluate(() => document.documentElement.scrollWidth);
          if (wide > width) problems.push(`${path} @${width}: ${wide} px wide`);
          const csp = await page.evaluate(() => (window as any).__csp as string[]);
          if (csp.length) problems.push(`${path} @${width}: CSP ${csp.join(', ')}`);
          if (errors.length) problems.push(`${path} @${width}: errors ${errors.join(' | ')}`);
          // /reference is swagger-ui's markup: its operation header is a button inside a button-like
          // summary (axe nested-interactive), which the page cannot change without forking swagger-ui
          const builder = new AxeBuilder({ page: page as any });
          if (path === '/reference') builder.disableRules(['nested-interactive']);
          const axe = await builder.analyze();
          for (const v of axe.violations.filter((x) => x.impact === 'serious' || x.impact === 'critical')) {
            problems.push(`${path} @${width}: axe ${v.impact} ${v.id} (${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join('; ')})`);
          }
          await ctx.close();
        }
        expect(problems).toEqual([]);
        // a budget for every listed page with axe on a busy two-core machine, not a speed claim
      }, 600_000);
    }

    it('pages use the self-hosted Korean font', async () => {
      const page = await browser.newPage();
      await page.goto(`${hub.url}/docs`);
      await page.evaluate(() => document.fonts.ready);
      const loaded = await page.evaluate(() => [...document.fonts].filter((f) => f.family.replace(/"/g, '') === 'Noto Sans KR' && f.status === 'loaded').length);
      expect(loaded).toBeGreaterThan(0);
      expect(await page.evaluate(() => getComputedStyle(document.body).fontFamily)).toMatch(/^"?Noto Sans KR/);
      await page.close();
    });
  });
}
