import { mkdirSync } from 'node:fs';
import AxeBuilder from '@axe-core/playwright';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_TEST_ENV, bearer, login, TEST_ADMIN_PASSWORD } from '../support/auth.js';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { get } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';

const hasBrowser = browserAvailable();
const SHOTS = '.tmp/screens';
const STAFF = { user: 'boxoffice', password: 'box-office-password' };

/**
 * The staff back office in Chromium, in pages only (the API is called only to read state): an
 * operator makes a staff account on /accounts; the staff member signs in on /shows, creates a show,
 * books two tickets, opens a holder's ticket link, cancels one booking with a reason through the
 * dialog (keyboard only) and sees the counters change; at 1280 px and at 360 px, nothing wider than
 * the window, and axe-core finds no serious or critical violation with data on the page.
 */
describe.skipIf(!hasBrowser)('the shows back office in Chromium', () => {
  let hub: HubProcess;
  let browser: Browser;

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('shows-backoffice'), ...AUTH_TEST_ENV });
    browser = await launchChromium();
    // the staff account, made on the accounts page
    const page = await browser.newPage();
    await page.goto(`${hub.url}/accounts`);
    await page.fill('#signin-user', 'admin');
    await page.fill('#signin-password', TEST_ADMIN_PASSWORD);
    await page.press('#signin-password', 'Enter');
    await page.waitForSelector('body[data-auth="operator"]');
    await page.fill('#new-user', STAFF.user);
    await page.fill('#new-name', '매표소');
    await page.fill('#new-password', STAFF.password);
    await page.press('#new-password', 'Enter');
    await page.waitForSelector(`tr[data-user="${STAFF.user}"]`);
    await page.close();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  const fits = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
  async function axe(page: Page, where: string): Promise<string[]> {
    const result = await new AxeBuilder({ page: page as any }).analyze();
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${where}: ${v.impact} ${v.id} (${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join('; ')})`);
  }

  for (const width of [1280, 360] as const) {
    it(`at ${width} px: sign in, create a show, book two tickets, open a ticket link, cancel one through the dialog`, async () => {
      const ctx = await browser.newContext({ viewport: { width, height: width < 500 ? 780 : 900 } });
      const page = await ctx.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      const problems: string[] = [];
      const token = await login(hub.url, STAFF.user, STAFF.password); // to read state only

      await page.goto(`${hub.url}/shows`);
      await page.waitForSelector('#signin-form');
      expect(await page.isVisible('#board')).toBe(false);
      if (!(await fits(page))) problems.push(`signed out @${width}: wider than the window`);
      problems.push(...(await axe(page, `signed out @${width}`)));
      await page.fill('#signin-user', STAFF.user);
      await page.fill('#signin-password', STAFF.password);
      await page.press('#signin-password', 'Enter');
      await page.waitForSelector('body[data-auth="staff"][data-ready="true"]');
      await page.waitForSelector('#board:not([hidden])');

      // a show, typed in Korean time
      const name = `겨울 음악회 ${width}`;
      await page.fill('#show-name', name);
      await page.fill('#show-venue', '예술의전당 콘서트홀');
      await page.fill('#show-date', '2026-12-24T19:30');
      await page.press('#show-venue', 'Enter');
      await page.waitForSelector('#detail:not([hidden])');
      await page.waitForFunction((n) => document.getElementById('detail-title')?.textContent === n, name);
      const showId = /#show\/(s_[\w-]{10})$/.exec(page.url())![1]!;
      const show = (await get(hub.url, `/api/shows/${showId}`)).body;
      expect(show).toMatchObject({ name, venue: '예술의전당 콘서트홀', date: '2026-12-24T19:30:00+09:00' });
      expect(await page.textContent('#detail-meta')).toContain('오후 7:30 KST');

      // two bookings; the second's link is shown to send to the holder
      const bookOne = async (seat: string, amount: string, holder: string, theme?: string) => {
        await page.fill('#book-seat', seat);
        await page.fill('#book-amount', amount);
        await page.fill('#book-holder', holder);
        if (theme) await page.selectOption('#book-theme', theme);
        await page.click('#book button[type="submit"]');
        await page.waitForFunction((s) => document.getElementById('booked-title')?.textContent?.startsWith(`${s} ·`), seat);
        return page.getAttribute('#booked-link', 'href');
      };
      const link1 = await bookOne('A-1', '88000', '김민지', 'music');
      const link2 = await bookOne('A-2', '1250000', 'Lee Jun');
      expect(link1).toMatch(new RegExp(`^${hub.url}/mticket/TK-[A-Z0-9]{8}$`));
      expect(link2).not.toBe(link1);
      await page.waitForFunction(() => document.querySelectorAll('#bookings tr[data-reservation]').length === 2);
      const rows = await page.locator('#bookings tr').allTextContents();
      expect(rows[0]).toContain('A-2');
      expect(rows[0]).toContain('1,250,000원');
      expect(rows[1]).toContain('88,000원');
      expect(rows[1]).toContain('유효 · valid');
      expect(await page.textContent('#c-tickets')).toBe('2');

      // the holder's ticket opens from the bookings list, in a new tab
      const [ticketPage] = await Promise.all([ctx.waitForEvent('page'), page.click('#bookings tr:nth-child(2) a.code')]);
      await ticketPage.waitForSelector('body[data-ready="true"]');
      expect(ticketPage.url()).toBe(link1);
      expect(await ticketPage.textContent('#holder')).toBe('김민지');
      await ticketPage.close();

      // axe with data on the page, and it fits
      if (!(await fits(page))) problems.push(`detail @${width}: wider than the window`);
      problems.push(...(await axe(page, `detail @${width}`)));

      // cancel A-2: Escape leaves the dialog without cancelling; then from the keyboard with a reason
      const cancelA2 = page.locator('#bookings tr', { hasText: 'A-2' }).locator('button[data-act="cancel"]');
      await cancelA2.focus();
      await page.keyboard.press('Enter');
      await page.waitForSelector('#cancel-dialog[open]');
      expect(await page.evaluate(() => document.activeElement?.id)).toBe('cancel-reason');
      if (!(await fits(page))) problems.push(`dialog @${width}: wider than the window`);
      problems.push(...(await axe(page, `dialog @${width}`)));
      await page.keyboard.press('Escape');
      await page.waitForFunction(() => !(document.getElementById('cancel-dialog') as HTMLDialogElement).open);
      expect(await page.evaluate(() => document.activeElement?.getAttribute('data-act'))).toBe('cancel');
      expect((await get(hub.url, `/api/shows/${showId}/counts`, bearer(token))).body.cancelled).toBe(0);
      await page.keyboard.press('Enter');
      await page.waitForSelector('#cancel-dialog[open]');
      await page.keyboard.type('고객 요청 환불');
      await page.keyboard.press('Enter');
      await page.waitForFunction(() => !(document.getElementById('cancel-dialog') as HTMLDialogElement).open);
      await page.waitForSelector('#bookings tr[data-status="cancelled"]');
      expect(await page.textContent('#bookings tr[data-status="cancelled"]')).toContain('고객 요청 환불');
      expect(await page.textContent('#bookings tr[data-status="cancelled"]')).toContain('KST');
      await page.waitForFunction(() => document.getElementById('c-cancelled')?.textContent === '1');
      expect(await page.textContent('#c-tickets')).toBe('1');
      const tickets = (await get(hub.url, `/api/shows/${showId}/tickets`, bearer(token))).body.tickets as { seat: string; status: string; cancel_reason: string | null }[];
      expect(tickets.find((t) => t.seat === 'A-2')).toMatchObject({ status: 'cancelled', cancel_reason: '고객 요청 환불' });
      expect(tickets.find((t) => t.seat === 'A-1')!.status).toBe('entry_allowed');

      mkdirSync(SHOTS, { recursive: true });
      await page.screenshot({ path: `${SHOTS}/shows-detail-${width}.png`, fullPage: true });

      // search by holder, then by seat
      await page.fill('#q', '민지');
      await page.press('#q', 'Enter');
      await page.waitForFunction(() => document.querySelectorAll('#bookings tr[data-reservation]').length === 1);
      expect(await page.textContent('#bookings')).toContain('A-1');
      await page.fill('#q', 'a-2');
      await page.press('#q', 'Enter');
      await page.waitForFunction(() => document.querySelector('#bookings tr[data-reservation]')?.textContent?.includes('A-2'));

      // back to the list: the show is first, with its counters
      await page.click('#back');
      await page.waitForSelector('#board:not([hidden])');
      const row = page.locator(`#shows tr[data-show="${showId}"]`);
      await row.waitFor();
      expect(await page.locator('#shows tr').first().getAttribute('data-show')).toBe(showId);
      expect(await row.locator('[data-count="tickets"]').textContent()).toBe('1');
      expect(await row.locator('[data-count="checked_in"]').textContent()).toBe('0');
      expect(await row.locator('[data-count="cancelled"]').textContent()).toBe('1');
      expect(await row.textContent()).toContain('KST');
      if (!(await fits(page))) problems.push(`list @${width}: wider than the window`);
      problems.push(...(await axe(page, `list @${width}`)));

      expect(problems).toEqual([]);
      expect(errors).toEqual([]);
      await ctx.close();
    }, 120_000);
  }
});
