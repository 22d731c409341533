import AxeBuilder from '@axe-core/playwright';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCandles } from '../../src/trading/candles.js';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { AUTH_TEST_ENV, signIn } from '../support/auth.js';

/**
 * The trading page with a trader's own candles, in Chromium at 1280 and 360 px: upload a CSV (and
 * read a refusal naming its line), backtest it, optimize it with a constraint and read the heat map,
 * open a saved run, compare two side by side, and start a live program from one.
 */
const hasBrowser = browserAvailable();

function csv(): string {
  const cs = generateCandles({ seed: 5, symbol: 'NQ', timeframe: '5m', count: 2500 });
  const out = ['time,open,high,low,close,volume'];
  for (let i = 0; i < cs.n; i++) out.push(`${new Date(cs.t[i]!).toISOString()},${cs.o[i]},${cs.h[i]},${cs.l[i]},${cs.c[i]},${cs.v[i]}`);
  return out.join('\n');
}

describe.skipIf(!hasBrowser)('my data sets and saved runs in Chromium', () => {
  let hub: HubProcess;
  let browser: Browser;

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('trading-datasets-page'), TRADING_WORKERS: '2', ...AUTH_TEST_ENV });
    await signIn(hub.url, ['trader'], 'owner1');
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  it('upload, backtest, optimize with a constraint, open a saved run, compare, start a program: at 1280 and 360 px', async () => {
    const good = csv();
    const bad = good.split('\n');
    const cells = bad[8]!.split(',');
    bad[8] = [cells[0], cells[1], cells[3], cells[2], cells[4], cells[5]].join(','); // high and low swapped on line 9
    for (const width of [1280, 360]) {
      const ctx = await browser.newContext({ viewport: { width, height: 900 } });
      const page = await ctx.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(`${hub.url}/trading`);
      await page.waitForSelector('#signin-form');
      await page.fill('#signin-user', 'owner1');
      await page.fill('#signin-password', 'pw-owner1-secret');
      await page.click('#signin-form button[type="submit"]');
      await page.waitForSelector('body[data-ready="true"]');

      // a refused upload names the line and the problem; nothing is listed
      const before = await page.locator('#ds-list tr').count();
      await page.fill('#ds-name', `bad ${width}`);
      await page.selectOption('#ds-symbol', 'NQ');
      await page.setInputFiles('#ds-file', { name: 'bad.csv', mimeType: 'text/csv', buffer: Buffer.from(bad.join('\n')) });
      await page.click('#ds-upload');
      await page.waitForFunction(() => document.getElementById('ds-error')!.textContent !== '');
      // in words first (by its code), then the line and problem as the server names them
      expect(await page.textContent('#ds-error')).toMatch(/^캔들 파일에 잘못된 줄이 있어 받지 않았습니다.* — line 9: high .* is below low .*high_below_low 1/);
      expect(await page.locator('#ds-list tr').count()).toBe(before);

      // the good file: listed with its bars and gaps, and chosen for the lab
      await page.fill('#ds-name', `nq ${width}`);
      await page.setInputFiles('#ds-file', { name: 'nq.csv', mimeType: 'text/csv', buffer: Buffer.from(good) });
      await page.click('#ds-upload');
      const row = page.locator(`#ds-list tr:has(td:text-is("nq ${width}"))`);
      await row.waitFor();
      expect(await row.locator('td[data-bars]').getAttribute('data-bars')).toBe('2500');
      expect(await row.textContent()).toContain('NQ 5m');
      const dsId = await row.getAttribute('data-id');
      expect(await page.inputValue('#lab-data')).toBe(dsId);

      // a backtest on it
      await page.selectOption('#lab-strategy', 'ema_cross');
      await page.click('#bt-run');
      await page.waitForSelector('#bt-metrics', { timeout: 30_000 });
      expect(await page.textContent('#bt-metrics td[data-key="승률 win rate"]')).toMatch(/%$/);

      // optimize with a constraint: the heading counts what the constraint left out, the heat map is drawn
      await page.selectOption('#lab-objective', 'sortino_ratio');
      await page.fill('#lab-constraint', 'slow - fast >= 15');
      await page.click('#bt-optimize');
      await page.waitForSelector('#heatmap', { timeout: 30_000 });
      expect(await page.textContent('#lab-result h3')).toMatch(/outside slow - fast >= 15/);
      const best = (await page.getAttribute('#lab-result h3', 'data-best'))!;
      const [fast, slow] = [...best.matchAll(/=(\d+)/g)].map((m) => Number(m[1]));
      expect(slow! - fast!).toBeGreaterThanOrEqual(15);

      // the saved runs: both kept, newest first, on this data set
      await page.waitForFunction(() => document.querySelectorAll('#runs-list tr').length >= 2);
      const kinds = await page.$$eval('#runs-list tr', (trs) => trs.slice(0, 2).map((tr) => (tr as HTMLElement).dataset.kind));
      expect(kinds).toEqual(['optimize', 'backtest']);
      expect(await page.textContent('#runs-list tr:nth-child(2)')).toContain(`nq ${width}`);
      // open the backtest run: its report again
      await page.click('#runs-list tr[data-kind="backtest"] button[data-open]');
      await page.waitForSelector('#opened-run');
      await page.waitForSelector('#bt-metrics');
      // side by side
      await page.check('#runs-list tr:nth-child(1) input[data-pick]');
      await page.check('#runs-list tr:nth-child(2) input[data-pick]');
      await page.click('#runs-compare');
      await page.waitForSelector('#runs-side-table');
      expect(await page.locator('#runs-side-table thead th').count()).toBe(3);
      // a live program from the optimization: its best parameters, the data set's contract
      await page.click('#runs-list tr[data-kind="optimize"] button[data-program]');
      await page.waitForSelector('body[data-program-from-run]');
      const programRow = page.locator(`#programs tr[data-id="${await page.getAttribute('body', 'data-program-from-run')}"]`);
      await programRow.waitFor();
      expect(await programRow.textContent()).toContain('NQ');
      expect(await programRow.locator('.state').getAttribute('data-state')).toBe('running');

      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
      const axe = await new AxeBuilder({ page: page as any }).include('#datasets').include('#runs').analyze();
      expect(axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} ${v.nodes[0]?.target}`)).toEqual([]);
      expect(errors).toEqual([]);
      await ctx.close();
    }
  }, 180_000);
});
