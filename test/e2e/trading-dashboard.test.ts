import { mkdirSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { post } from '../support/http.js';

/** The trading dashboard (/trading) in Debian's Chromium against a built hub process (one-second candles). */
const hasBrowser = browserAvailable();

describe.skipIf(!hasBrowser)('trading dashboard in Chromium', () => {
  let hub: HubProcess;
  let browser: Browser;
  let page: Page;
  const errors: string[] = [];

  beforeAll(async () => {
    hub = await startHubProcess({
      DATA_DIR: tempDir('trading-dashboard'),
      CLOCK_START: '2026-11-18T12:01:00Z',
      PROGRAM_SPEED: '60',
      TRADING_WORKERS: '2',
      AUTH_RECHECK_MS: '200',
      ...AUTH_TEST_ENV,
    });
    // a trader account (signIn's password rule: pw-<user>-secret)
    await signIn(hub.url, ['trader'], 'trader1');
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(hub.url + '/trading');
    // programs belong to the trader who signs in
    await page.waitForSelector('#signin-form');
    await page.fill('#signin-user', 'trader1');
    await page.fill('#signin-password', 'pw-trader1-secret');
    await page.click('#signin-form button[type="submit"]');
    await page.waitForSelector('body[data-ready="true"]');
    await page.waitForSelector('#conn.on');
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  const row = (name: string) => `#programs tr[data-id]:has(td:text-is("${name}"))`;
  const stateOf = (name: string) => page.textContent(`${row(name)} .state`);

  it('creates from the parameter schema, runs, pauses, stops and deletes a program with a live log and equity chart', async () => {
    // the form comes from the strategy's schema
    await page.selectOption('#cf-strategy', 'ema_cross');
    expect(await page.inputValue('input[name="param.fast"]')).toBe('9');
    expect(await page.getAttribute('input[name="param.fast"]', 'min')).toBe('2');
    await page.selectOption('#cf-strategy', 'rsi_rebound');
    expect(await page.$$eval('#cf-params input', (i) => i.map((x) => (x as HTMLInputElement).name))).toEqual(['param.period', 'param.oversold', 'param.overbought']);
    await page.selectOption('#cf-strategy', 'ema_cross');

    // invalid parameters: the 400 is shown
    await page.fill('input[name="param.fast"]', '30');
    await page.fill('input[name="param.slow"]', '10');
    await page.click('#cf-submit');
    await page.waitForFunction(() => document.querySelector('#cf-error')?.textContent?.includes('params.slow'));

    await page.fill('#cf-name', 'live-one');
    await page.fill('input[name="param.fast"]', '2');
    await page.fill('input[name="param.slow"]', '3');
    await page.selectOption('#cf-symbol', 'CL');
    await page.click('#cf-submit');
    await page.waitForSelector(row('live-one'));
    // states, reasons and strategies in words, not codes
    expect(await stateOf('live-one')).toBe('만듦 · created');
    expect(await page.textContent(`${row('live-one')} td[data-strategy="ema_cross"]`)).toBe('EMA 교차 · EMA cross');
    expect(await page.$$eval('#lab-strategy option', (o) => o.map((x) => x.textContent))).toContain('RSI 반등 · RSI rebound');
    expect(await page.isDisabled(`${row('live-one')} button[data-move="pause"]`)).toBe(true);

    await page.click(`${row('live-one')} button[data-move="start"]`);
    await page.waitForFunction(() => document.querySelector('#programs tr[data-id] .state')?.getAttribute('data-state') === 'running');
    expect(await stateOf('live-one')).toBe('실행 중 · running');
    await page.click(`${row('live-one')} td:first-child`);
    // the price chart opens with the market's recent bars (two minutes of them at this speed: four
    // half-minute candles), not with the one candle the first tick would make
    await page.waitForFunction(() => Number(document.querySelector('#live-candles')?.getAttribute('data-bars')) >= 4, null, { timeout: 5_000 });
    // ticks every 3 s feed the chart; signals and the log arrive live
    await page.waitForFunction(() => Number(document.querySelector('#equity-chart')?.getAttribute('data-points')) >= 2, null, { timeout: 15_000 });
    await page.waitForSelector('#signals li', { timeout: 15_000 });
    await page.waitForSelector('#log li[data-code="running"]');
    // the log in a trader's words: what happened, not which process or bar number
    await page.waitForSelector('#log li[data-code="claimed"]');
    const log = await page.$$eval('#log li', (li) => li.map((x) => x.textContent ?? ''));
    expect(log.join('\n')).toContain('following the market');
    expect(log.join('\n')).not.toMatch(/\d+-[0-9a-f]{8}|driven by|from bar|->/);
    // log and signal times in KST, the zone written (the pages' one rule), not UTC
    for (const line of [...log, ...(await page.$$eval('#signals li', (li) => li.map((x) => x.textContent ?? '')))]) expect(line).toMatch(/^\d{2}:\d{2}:\d{2} KST /);
    expect(await page.$$eval('#equity-chart polyline', (p) => p.length)).toBe(1);
    // the live market as candles (lightweight-charts) with the signals and fills marked on them
    await page.waitForFunction(() => Number(document.querySelector('#live-candles')?.getAttribute('data-bars')) >= 1, null, { timeout: 15_000 });
    await page.waitForFunction(() => Number(document.querySelector('#live-candles')?.getAttribute('data-markers')) >= 1, null, { timeout: 20_000 });
    expect(await page.$$eval('#live-candles canvas', (c) => c.length)).toBeGreaterThan(0);
    expect(await page.textContent('[data-fig="running"]')).toBe('1');

    await page.click(`${row('live-one')} button[data-move="pause"]`);
    await page.waitForFunction(() => document.querySelector('#programs tr[data-id] .state')?.textContent?.startsWith('일시정지 · paused'));
    expect(await stateOf('live-one')).not.toMatch(/[a-z]+_[a-z]+/);
    await page.click(`${row('live-one')} button[data-move="stop"]`);
    await page.waitForFunction(() => document.querySelector('#programs tr[data-id] .state')?.textContent?.startsWith('정지 · stopped'));
    await page.waitForSelector('#log li[data-code="stopped"]');
    await page.click(`${row('live-one')} button[data-move="delete"]`);
    await page.waitForFunction(() => document.querySelectorAll('#programs tr[data-id]').length === 0);
    expect(errors).toEqual([]);
  }, 60_000);

  it('runs the backtest lab: backtest, compare, optimize heat map, walk-forward windows, Monte Carlo fan, with progress', async () => {
    await page.selectOption('#lab-strategy', 'ema_cross');
    await page.fill('#lab-form input[name="count"]', '4000');
    const finished = async () => {
      await page.waitForFunction(() => document.body.dataset.job === 'idle' && document.querySelector('#lab-progress-text')?.textContent === 'done', null, { timeout: 30_000 });
      const p = await page.$eval('#lab-progress', (x) => [(x as HTMLProgressElement).value, (x as HTMLProgressElement).max]);
      expect(p[0]).toBe(p[1]);
    };

    await page.click('#bt-run');
    await page.waitForSelector('#bt-metrics', { timeout: 30_000 });
    await finished();
    // equity with its drawdown pane, and the candles, drawn by lightweight-charts
    await page.waitForSelector('#bt-equity canvas');
    await page.waitForSelector('#bt-candles canvas');

    await page.click('#bt-compare');
    await page.waitForSelector('#compare-table', { timeout: 30_000 });
    await finished();
    expect(await page.$$eval('#compare-table tbody tr', (r) => r.length)).toBe(5);
    // the figures under Korean names (the API's key only in the title), ratios as percentages
    const heads = await page.$$eval('#compare-table th', (th) => th.map((x) => ({ text: x.textContent!, title: x.getAttribute('title') })));
    for (const h of heads) expect(h.text).toMatch(/[가-힣]/);
    expect(heads.map((h) => h.text).join(' ')).not.toMatch(/_/);
    expect(heads.find((h) => h.title === 'win_rate')?.text).toBe('승률 win rate');
    const winCol = heads.findIndex((h) => h.title === 'win_rate') + 1;
    for (const v of await page.$$eval(`#compare-table tbody td:nth-child(${winCol})`, (td) => td.map((x) => x.textContent!))) expect(v).toMatch(/^\d{1,3}\.\d%$/);
    const ddCol = heads.findIndex((h) => h.title === 'max_drawdown') + 1;
    for (const v of await page.$$eval(`#compare-table tbody td:nth-child(${ddCol})`, (td) => td.map((x) => x.textContent!))) expect(v).toMatch(/^\d{1,3}\.\d%$/);
    expect(await page.textContent('#lab-result h3')).not.toMatch(/\(sharpe\)|_/);
    // no candle hash in the heading, the strategies by name
    expect(await page.textContent('#lab-result h3')).not.toMatch(/[0-9a-f]{12,}/);
    expect(await page.$$eval('#compare-table tbody td:nth-child(2)', (td) => td.map((x) => x.textContent).sort())).toEqual(
      ['3중 시간대 동조 · triple timeframe sync', 'EMA 교차 · EMA cross', 'RSI 반등 · RSI rebound', '돌파 · breakout', '평균 회귀 · mean reversion'].sort(),
    );
    // the legend is the ranked table: row k's swatch has the colour of line k
    const swatches = await page.$$eval('#compare-table .swatch', (s) => s.map((x) => getComputedStyle(x).backgroundColor));
    const strokes = await page.$$eval('#compare-chart polyline', (p) => p.map((x) => x.getAttribute('stroke')));
    const hex = (rgb: string) => '#' + rgb.match(/\d+/g)!.slice(0, 3).map((n) => Number(n).toString(16).padStart(2, '0')).join('');
    expect(swatches.map(hex)).toEqual(strokes);

    await page.click('#bt-optimize');
    await page.waitForSelector('#heatmap', { timeout: 30_000 });
    await finished();
    // the default ema_cross grid: 5 fast x 5 slow
    expect(await page.$$eval('#heatmap rect[data-value]', (r) => r.length)).toBe(25);
    // each cell shows its value; a colour scale names the objective
    expect(await page.$$eval('#heatmap text.cell-value', (t) => t.length)).toBe(25);
    expect(await page.$$eval('#heatmap text', (t) => t.map((x) => x.textContent))).toEqual(expect.arrayContaining(['sharpe', 'fast', 'slow']));
    expect(await page.$eval('#lab-progress', (x) => (x as HTMLProgressElement).max)).toBeGreaterThan(1);

    await page.click('#bt-walk');
    await page.waitForSelector('#wf-table', { timeout: 30_000 });
    await finished();
    expect(await page.$$eval('#wf-table tbody tr', (r) => r.length)).toBeGreaterThan(1);
    // windows as readable dates with their year, in KST with the zone written (not ISO stamps, not UTC)
    const windowCell = await page.textContent('#wf-table tbody tr:first-child td:nth-child(2)');
    expect(windowCell).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2} – \d{4}-\d{2}-\d{2} \d{2}:\d{2} KST$/);
    expect(await page.$$eval('#wf-table th', (th) => th.map((x) => x.textContent!).join(' '))).not.toMatch(/UTC|_/);

    await page.click('#bt-mc');
    await page.waitForSelector('#fan', { timeout: 30_000 });
    await finished();
    expect(await page.$$eval('#fan polygon', (p) => p.length)).toBe(3);
    // percentiles labelled, with an equity axis
    expect(await page.$$eval('#fan text.pct', (t) => t.map((x) => x.textContent!.split(' ')[0]))).toEqual(expect.arrayContaining(['p5', 'p25', 'p75', 'p95', '중앙값']));
    expect(await page.$$eval('#fan text', (t) => t.filter((x) => /^\$[\d,]+$/.test(x.textContent!)).length)).toBe(5);
    expect(await page.textContent('#lab-result')).toContain('probability of ruin');
    expect(errors).toEqual([]);
  }, 120_000);

  it('shows each program whole on a phone (360 px): P&L and its buttons on the screen, nothing to scroll sideways to', async () => {
    await page.fill('#cf-name', 'phone-one');
    await page.click('#cf-submit');
    await page.waitForSelector(row('phone-one'));
    for (const width of [360, 1280]) {
      await page.setViewportSize({ width, height: 900 });
      const tr = page.locator(row('phone-one'));
      await tr.scrollIntoViewIfNeeded();
      // every cell that matters lies within the viewport and within its card (no clipping by the scroller)
      for (const sel of ['td.pnl', 'td.equity', 'button[data-move="start"]', 'button[data-move="pause"]', 'button[data-move="stop"]', 'button[data-move="delete"]']) {
        const box = (await tr.locator(sel).boundingBox())!;
        expect(box.width, `${sel} at ${width}`).toBeGreaterThan(0);
        expect(box.x, `${sel} at ${width}`).toBeGreaterThanOrEqual(0);
        expect(box.x + box.width, `${sel} at ${width}`).toBeLessThanOrEqual(width);
      }
      const scroll = await page.$eval('#programs', (b) => { const s = b.closest('.scroll')!; return { content: s.scrollWidth, shown: s.clientWidth }; });
      if (width === 360) {
        expect(scroll.content).toBeLessThanOrEqual(scroll.shown);
        // the figures keep their names where the header row is not shown
        expect(await tr.locator('td.pnl').evaluate((td) => getComputedStyle(td, '::before').content)).toContain('P&L');
        mkdirSync('.tmp/screens', { recursive: true });
        await page.screenshot({ path: '.tmp/screens/trading-programs-360.png' });
      }
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
    }
    await page.click(`${row('phone-one')} button[data-move="delete"]`);
    await page.waitForFunction(() => document.querySelectorAll('#programs tr[data-id]').length === 0);
    expect(errors).toEqual([]);
  }, 60_000);

  it('a token revoked elsewhere ends the program stream: the page stops it and asks to sign in again', async () => {
    await page.waitForSelector('#conn.on');
    const token = await page.evaluate(() => sessionStorage.getItem('trading:token'));
    expect((await post(hub.url, '/api/auth/logout', {}, bearer(token!))).status).toBe(200);
    // within a check period (200 ms here) the hub sends the stream its `closed` event and ends it
    await page.waitForSelector('#signin-form', { timeout: 10_000 });
    await page.waitForSelector('#conn:not(.on)');
    await page.waitForFunction(() => document.querySelector('#programs-error')?.textContent?.includes('sign in as a trader'));
    expect(await page.evaluate(() => sessionStorage.getItem('trading:token'))).toBeNull();
    expect(errors).toEqual([]);
  }, 60_000);
});
