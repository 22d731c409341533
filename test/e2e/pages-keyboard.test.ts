import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { until } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';

const hasBrowser = browserAvailable();

/** Presses Tab until the focused element matches `selector` (at most `max` times); fails otherwise. */
async function tabTo(page: Page, selector: string, max = 60): Promise<void> {
  for (let i = 0; i < max; i++) {
    if (await page.evaluate((s) => document.activeElement?.matches(s) ?? false, selector)) return;
    await page.keyboard.press('Tab');
  }
  throw new Error(`Tab never reached ${selector}`);
}

/**
 * The main tasks with the keyboard alone, on the demo data: from /pages to the demo page and a
 * ticket, a bingo cell marked; the door volunteer signs in, registers the device and checks a
 * ticket in by its code; no mouse anywhere.
 */
describe.skipIf(!hasBrowser)('main tasks with the keyboard alone', () => {
  let hub: HubProcess;
  let browser: Browser;
  let password = '';
  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('keyboard'), DEMO: '1' }, 30_000);
    await until('the demo banner', () => hub.output().includes('sign-in '), 5000);
    password = /password for this run: (\S+)/.exec(hub.output())![1]!;
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  it('/pages -> the demo page -> a ticket, and a bingo cell marked with Space', async () => {
    const page = await browser.newPage({ viewport: { width: 360, height: 780 } });
    await page.goto(`${hub.url}/pages`);
    await tabTo(page, 'a[href="/demo"]');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/demo$/);
    await page.waitForSelector('#tour-ticket a[href^="/mticket/"]');
    await tabTo(page, '#tour-ticket a[href^="/mticket/"]');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/mticket\/TK-/);
    await page.waitForSelector('body[data-ready="true"]');
    expect(await page.textContent('#holder')).toBe('김마루');
    await tabTo(page, '.bingo button[aria-pressed]');
    const label = await page.evaluate(() => document.activeElement!.getAttribute('aria-label'));
    await page.keyboard.press('Space');
    expect(await page.getAttribute(`.bingo button[aria-label="${label}"]`, 'aria-pressed')).toBe('true');
    await page.close();
  }, 60_000);

  it('/scan: sign in, register the device and check a ticket in by its code', async () => {
    const code = ((await (await fetch(`${hub.url}/api/demo`)).json()) as { tickets: { code: string }[] }).tickets[1]!.code;
    const page = await browser.newPage({ viewport: { width: 360, height: 780 } });
    await page.goto(`${hub.url}/scan`);
    await page.waitForSelector('body[data-ready="true"][data-auth="none"]');
    await tabTo(page, '#signin-user');
    await page.keyboard.type('demo-staff');
    await tabTo(page, '#signin-password');
    await page.keyboard.type(password);
    await page.keyboard.press('Enter');
    await page.waitForSelector('body[data-auth="staff"]');
    await tabTo(page, '#scanner');
    await page.keyboard.press('Control+A');
    await page.keyboard.type('door-1');
    await tabTo(page, '#gate');
    await page.keyboard.type('정문');
    await page.keyboard.press('Enter');
    await page.waitForSelector('body[data-auth="device"]');
    await tabTo(page, '#code');
    await page.keyboard.type(code);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#result[data-result="ok"]');
    expect(await page.textContent('#result-detail')).toContain(code);
    await page.close();
  }, 60_000);

  it('/trading: the trader signs in, creates a program and starts it', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${hub.url}/trading`);
    await tabTo(page, '#signin-user');
    await page.keyboard.type('demo-trader');
    await tabTo(page, '#signin-password');
    await page.keyboard.type(password);
    await page.keyboard.press('Enter');
    // the demo's two running programs, then one made from the keyboard
    await page.waitForFunction(() => document.querySelectorAll('#programs tr[data-id]').length === 2);
    await tabTo(page, '#cf-name');
    await page.keyboard.type('keyboard-one');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.querySelectorAll('#programs tr[data-id]').length === 3);
    const id = await page.evaluate(() => [...document.querySelectorAll<HTMLElement>('#programs tr[data-id]')].find((tr) => tr.textContent?.includes('keyboard-one'))!.dataset.id!);
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    await tabTo(page, `tr[data-id="${id}"] button[data-move="start"]`, 120);
    await page.keyboard.press('Enter');
    await page.waitForFunction((i) => document.querySelector(`tr[data-id="${i}"] .state`)?.getAttribute('data-state') === 'running', id);
    await page.close();
  }, 60_000);
});
