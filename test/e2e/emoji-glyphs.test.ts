import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { THEMES } from '../../src/ticket/bingo.js';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { call, post } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';

const hasBrowser = browserAvailable();

/**
 * How each text draws in the font stack of the element `selector` (its computed font-family), once
 * the page's fonts for it are loaded: width, and how many pixels are not in the ink colour (black
 * here). A colour emoji paints many in its own palette (greys and whites too); the empty box a
 * missing glyph draws is all ink.
 */
function drawn(page: Page, selector: string, texts: string[]) {
  return page.evaluate(
    async ([sel, list]) => {
      const family = getComputedStyle(document.querySelector(sel!)!).fontFamily;
      const font = `32px ${family}`;
      await Promise.all((list as string[]).map((t) => document.fonts.load(font, t)));
      const canvas = document.createElement('canvas');
      canvas.width = 64;
      canvas.height = 64;
      const g = canvas.getContext('2d', { willReadFrequently: true })!;
      return (list as string[]).map((text) => {
        g.clearRect(0, 0, 64, 64);
        g.font = font;
        g.fillStyle = '#000';
        g.textBaseline = 'middle';
        g.fillText(text, 4, 32);
        const px = g.getImageData(0, 0, 64, 64).data;
        let coloured = 0;
        // the ink is black: a pixel of any other colour comes from the glyph's own palette
        for (let i = 0; i < px.length; i += 4) if (px[i + 3]! > 0 && Math.max(px[i]!, px[i + 1]!, px[i + 2]!) > 40) coloured++;
        return { text, width: g.measureText(text).width, coloured };
      });
    },
    [selector, texts] as const,
  );
}

/**
 * Emoji the pages show (bingo cards on the ticket, the coach's reward) render as colour glyphs of the
 * self-hosted emoji font on a machine without an emoji font of its own (this one: Debian's Chromium
 * with no fonts-noto-color-emoji), not as boxes.
 */
describe.skipIf(!hasBrowser)('emoji on the pages in Chromium without a system emoji font', () => {
  let hub: HubProcess;
  let browser: Browser;
  let staff: Record<string, string>;

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('emoji-glyphs'), ...AUTH_TEST_ENV });
    staff = bearer(await signIn(hub.url, ['staff']));
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  it('draws every emoji of every bingo theme in colour, and the cells of an emoji card at a real size (360 and 1280 px)', async () => {
    const show = (await post(hub.url, '/api/shows', { name: '동물 콘서트', venue: '올림픽홀', date: '2027-03-01T18:00:00+09:00' }, staff)).body;
    const t = (await post(hub.url, '/api/reservations', { show_id: show.id, seat: 'A-1', amount_paid: 50000, theme: 'animals' }, staff)).body;
    for (const width of [360, 1280]) {
      const page = await browser.newPage({ viewport: { width, height: 900 } });
      await page.goto(`${hub.url}/mticket/${t.code}`);
      await page.waitForSelector('body[data-ready="true"]');
      const cell = '.bingo[data-kind="emoji"] td button';
      // the card's own cells, in the page
      const onCard = await page.$$eval(cell, (b) => b.map((x) => x.textContent!));
      expect(onCard.length).toBe(48);
      const every = THEMES.filter((th) => th.kind === 'emoji').flatMap((th) => [...th.items]);
      const bad = (await drawn(page, cell, [...new Set([...onCard, ...every])])).filter((d) => d.coloured < 30 || d.width < 16);
      expect(bad).toEqual([]);
      // a known-missing character draws no colour: the measure tells the two apart
      const [missing] = await drawn(page, cell, ['\u{10FFFD}']);
      expect(missing!.coloured).toBe(0);
      // laid out: each cell's text has a size
      const box = await page.locator(cell).first().boundingBox();
      expect(box!.width).toBeGreaterThan(16);
      expect(box!.height).toBeGreaterThan(16);
      await page.close();
    }
  });

  it('draws the coach\'s reward emoji in colour', async () => {
    const owner = `emo${Date.now().toString(36)}`;
    expect((await call(hub.url, 'PUT', `/api/coach/owners/${owner}`, { actions: [{ id: 'walk', title: '아침 산책 20분', phase: '티', reward: 10 }] }, staff)).status).toBe(201);
    const page = await browser.newPage({ viewport: { width: 360, height: 780 } });
    await page.goto(`${hub.url}/coach#owner=${owner}`);
    await page.waitForSelector('#actions li');
    await page.click('#actions li button.toggle');
    await page.waitForSelector('#reward:not([hidden])');
    const text = (await page.textContent('#reward'))!;
    const emoji = [...new Intl.Segmenter().segment(text)].map((s) => s.segment).filter((s) => /\p{Extended_Pictographic}/u.test(s));
    expect(emoji.length).toBeGreaterThan(0);
    const bad = (await drawn(page, '#reward', emoji)).filter((d) => d.coloured < 30 || d.width < 16);
    expect(bad).toEqual([]);
    await page.close();
  });
});
