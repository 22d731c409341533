import AxeBuilder from '@axe-core/playwright';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { calmar, drawdowns, duration, longestDrawdown, sortino, tradesCsv, type Trade } from '../../web/trading/report.js';
import { browserAvailable, downloadedText, launchChromium } from '../support/browser.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { AUTH_TEST_ENV, signIn } from '../support/auth.js';

async function signInOnPage(page: import('playwright-core').Page): Promise<void> {
  await page.waitForSelector('#signin-form');
  await page.fill('#signin-user', 'reporter');
  await page.fill('#signin-password', 'pw-reporter-secret');
  await page.click('#signin-form button[type="submit"]');
}

const H = 3_600_000;

describe('backtest report figures', () => {
  it('longest drawdown: from the peak to the recovery, or to the end when not recovered', () => {
    const curve = [100, 110, 105, 100, 111, 108, 120, 119, 118].map((equity, i) => ({ t: i * H, equity }));
    // 110 at 1h, back above at 4h (3 h); 120 at 6h, never recovered by 8h (2 h)
    expect(longestDrawdown(curve)).toEqual({ from: 1 * H, to: 4 * H, ms: 3 * H, recovered: true });
    const falling = [100, 90, 80].map((equity, i) => ({ t: i * H, equity }));
    expect(longestDrawdown(falling)).toEqual({ from: 0, to: 2 * H, ms: 2 * H, recovered: false });
    expect(longestDrawdown([100, 101, 102].map((equity, i) => ({ t: i * H, equity })))).toBeNull();
    drawdowns(falling).forEach((d, i) => expect(d.dd).toBeCloseTo([0, -0.1, -0.2][i]!, 12));
  });

  it('Sortino uses only the losing periods; Calmar is annual return over max drawdown', () => {
    const up = [100, 101, 102, 103].map((equity, i) => ({ t: i * 86_400_000, equity }));
    expect(sortino(up)).toBeNull();
    const mixed = [100, 102, 101, 104, 103, 106].map((equity, i) => ({ t: i * 86_400_000, equity }));
    const s = sortino(mixed)!;
    expect(s).toBeGreaterThan(0);
    // negative periods only: a bigger loss lowers it
    const worse = [100, 102, 95, 104, 103, 106].map((equity, i) => ({ t: i * 86_400_000, equity }));
    expect(sortino(worse)!).toBeLessThan(s);
    expect(calmar(0.3, 0.1)).toBeCloseTo(3);
    expect(calmar(0.3, 0)).toBeNull();
    expect(duration(3 * 86_400_000 + 4 * H + 5 * 60_000)).toBe('3일 4시간');
    expect(duration(30 * 60_000)).toBe('30분');
  });

  it('CSV: header, one row per trade, quoted when needed, no spreadsheet formulas', () => {
    const t: Trade = { side: 'long', entry_time: '2024-01-01T05:30:00.000Z', exit_time: '2024-01-01T06:15:00.000Z', entry_price: 4966, exit_price: 4978.5, contracts: 1, pnl: -317.5, reason: '=cmd, "x"' };
    const csv = tradesCsv([t]);
    const lines = csv.split('\r\n');
    expect(lines[0]).toBe('no,side,entry_time,exit_time,entry_price,exit_price,contracts,pnl,reason');
    expect(lines[1]).toBe(`1,long,2024-01-01T05:30:00.000Z,2024-01-01T06:15:00.000Z,4966,4978.5,1,-317.5,"'=cmd, ""x"""`);
    expect(lines[2]).toBe('');
  });
});

const hasBrowser = browserAvailable();

describe.skipIf(!hasBrowser)('backtest report in Chromium', () => {
  let hub: HubProcess;
  let browser: Browser;

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('trading-report'), ...AUTH_TEST_ENV });
    // the lab's forms come with the trader's program list: a trader signs in first
    await signIn(hub.url, ['trader'], 'reporter');
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  it('figures, candles with trades, equity with drawdown, a paginated trade list and its CSV, on a phone too', async () => {
    for (const width of [1280, 360]) {
      const ctx = await browser.newContext({ viewport: { width, height: 900 }, acceptDownloads: true });
      const page = await ctx.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(`${hub.url}/trading`);
      await signInOnPage(page);
      await page.waitForSelector('#lab-strategy option[value="ema_cross"]', { state: 'attached' });
      await page.selectOption('#lab-strategy', 'ema_cross');
      await page.fill('#lab-form input[name="count"]', '3000');
      await page.click('#bt-run');
      await page.waitForSelector('#bt-metrics', { timeout: 30_000 });
      const fig = async (k: string) => page.textContent(`#bt-metrics td[data-key="${k}"]`);
      for (const k of ['소르티노 Sortino', '칼마 Calmar', '시장 노출 exposure', '평균 거래 average trade', '최장 낙폭 기간 longest drawdown']) {
        expect(await fig(k), k).toMatch(/\d/);
      }
      expect(await fig('승률 win rate')).toMatch(/^\d+\.\d%$/);
      expect(await fig('시장 노출 exposure')).toMatch(/%$/);
      expect(await page.textContent('#bt-params td[data-key="fast"]')).toBe('9');
      // backtesting.py's statistics from the answer, and the exits by reason (every reason, adding up to the trades)
      expect(await fig('연 변동성 annual volatility')).toMatch(/^\d+\.\d%$/);
      expect(await fig('평균 / 최장 보유 trade duration')).toMatch(/\d.* \/ \d/);
      expect(await page.locator('#bt-exits tbody tr').count()).toBe(5);
      const exitCounts = await page.$$eval('#bt-exits tbody tr td:nth-of-type(1)', (tds) => tds.map((td) => Number(td.textContent)));
      await page.waitForSelector('#bt-candles canvas');
      await page.waitForSelector('#bt-equity canvas');
      // the trade list: 25 a page
      const total = Number(/\((\d+)/.exec((await page.textContent('#lab-result h3:has-text("거래 목록")'))!)![1]);
      expect(total).toBeGreaterThan(25);
      expect(exitCounts.reduce((a, b) => a + b, 0)).toBe(total);
      expect(await page.locator('#bt-trades tbody tr').count()).toBe(25);
      expect(await page.textContent('#bt-page')).toBe(`1 / ${Math.ceil(total / 25)}`);
      await page.click('#bt-trades button[data-page="next"]');
      expect(await page.textContent('#bt-trades tbody tr:first-child td:first-child')).toBe('26');
      expect(await page.isEnabled('#bt-trades button[data-page="prev"]')).toBe(true);
      // CSV export: every trade
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('#bt-csv')]);
      expect(download.suggestedFilename()).toMatch(/^backtest-ema_cross-.+\.csv$/);
      const csv = (await downloadedText(download)).trim().split('\r\n');
      expect(csv[0]).toMatch(/^no,side,entry_time/);
      expect(csv).toHaveLength(total + 1);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
      const axe = await new AxeBuilder({ page: page as any }).include('#lab').analyze();
      expect(axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} ${v.nodes[0]?.target}`)).toEqual([]);
      expect(errors).toEqual([]);
      await ctx.close();
    }
  }, 90_000);
  it('a job cancelled from the page is shown as cancelled, not as an error', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${hub.url}/trading`);
    await signInOnPage(page);
    await page.waitForSelector('#lab-strategy option[value="ema_cross"]', { state: 'attached' });
    await page.selectOption('#lab-strategy', 'ema_cross');
    await page.fill('#lab-form input[name="count"]', '100000');
    await page.click('#bt-optimize');
    // cancel once the job is under way (its first progress has arrived)
    await page.waitForFunction(() => (document.getElementById('lab-progress') as HTMLProgressElement).max > 1, null, { timeout: 20_000 });
    await page.click('#bt-cancel');
    await page.waitForSelector('body[data-job-result="cancelled"]', { timeout: 20_000 });
    expect(await page.textContent('#lab-progress-text')).toContain('cancelled');
    expect(await page.textContent('#lab-error')).toBe('');
    await page.close();
  }, 60_000);
});
