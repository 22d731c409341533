import AxeBuilder from '@axe-core/playwright';
import { mkdirSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_TEST_ENV, login, TEST_ADMIN_PASSWORD } from '../support/auth.js';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { get } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';

const hasBrowser = browserAvailable();
const SECRET = 'coach-owner-secret-e2e-0123456789';
const STAFF = 'coach-staff';
const STAFF_PASSWORD = 'coach-staff-password-1';

/**
 * The staff page of coaching owners, in pages only (the API is only read, to check the state):
 * staff sign in, register an owner with three actions, copy the owner's link; the owner opens it on
 * a phone and completes an action; staff see the points in the list.
 */
describe.skipIf(!hasBrowser)('the coaching owners page in Chromium', () => {
  let hub: HubProcess;
  let browser: Browser;
  let staffCtx: BrowserContext;
  let staffPage: Page;
  const errors: string[] = [];

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('coach-owners-e2e'), COACH_OWNER_SECRET: SECRET, ...AUTH_TEST_ENV });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  const watch = async (ctx: BrowserContext) => {
    await ctx.addInitScript(() => {
      (window as any).__csp = [];
      document.addEventListener('securitypolicyviolation', (e) => (window as any).__csp.push(`${e.violatedDirective} ${e.blockedURI}`));
    });
    const page = await ctx.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    return page;
  };
  const signIn = async (page: Page, user: string, password: string) => {
    await page.fill('#signin-user', user);
    await page.fill('#signin-password', password);
    await page.press('#signin-password', 'Enter');
  };

  it('an operator makes a staff account in the accounts page', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await watch(ctx);
    await page.goto(`${hub.url}/accounts`);
    await signIn(page, 'admin', TEST_ADMIN_PASSWORD);
    await page.waitForSelector('body[data-auth="operator"]');
    await page.fill('#new-user', STAFF);
    await page.fill('#new-name', '코칭 담당');
    await page.fill('#new-password', STAFF_PASSWORD);
    expect(await page.isChecked('#new-staff')).toBe(true);
    await page.press('#new-password', 'Enter');
    await page.waitForSelector(`tr[data-user="${STAFF}"]`);
    await ctx.close();
  });

  it('staff register an owner with three actions; the page checks the fields first; the link is copied', async () => {
    staffCtx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await staffCtx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: hub.url });
    staffPage = await watch(staffCtx);
    const page = staffPage;
    await page.goto(`${hub.url}/coach/owners`);
    await page.waitForSelector('#signin-form');
    expect(await page.isVisible('#board')).toBe(false);
    await signIn(page, STAFF, STAFF_PASSWORD);
    await page.waitForSelector('body[data-auth="staff"]');
    await page.waitForSelector('#empty:not([hidden])');

    // the form starts with one row; two more make three
    await page.click('#add-action');
    await page.click('#add-action');
    expect(await page.locator('#action-rows li').count()).toBe(3);
    // a bad id and an empty title are said in Korean next to their fields, and nothing is sent
    await page.fill('#owner-id', '김 코치');
    await page.fill('#vision', '건강한 하루를 만든다');
    const rows = page.locator('#action-rows li');
    await rows.nth(0).locator('.title').fill('아침 산책 20분');
    await rows.nth(0).locator('.phase').selectOption('티');
    await rows.nth(0).locator('.reward').fill('10');
    await rows.nth(1).locator('.phase').selectOption('옴');
    await rows.nth(1).locator('.reward').fill('25');
    await rows.nth(2).locator('.title').fill('고객 한 분께 안부 전화');
    await rows.nth(2).locator('.phase').selectOption('타');
    await rows.nth(2).locator('.reward').fill('2000000');
    await page.click('#save');
    expect(await page.textContent('#owner-id-error')).toContain('코칭 ID는');
    expect(await page.getAttribute('#owner-id', 'aria-invalid')).toBe('true');
    expect(await rows.nth(1).locator('.err').textContent()).toContain('실천 제목을');
    expect(await rows.nth(2).locator('.err').textContent()).toContain('보상은');
    expect((await get(hub.url, '/api/coach/owners', { authorization: `Bearer ${await login(hub.url, STAFF, STAFF_PASSWORD)}` })).body.total).toBe(0);

    // a fourth row added and removed again
    await page.click('#add-action');
    await rows.nth(3).locator('.remove').click();
    expect(await rows.count()).toBe(3);

    await page.fill('#owner-id', 'jiwoo');
    await rows.nth(1).locator('.title').fill('책 10쪽 읽기');
    await rows.nth(2).locator('.reward').fill('30');
    // a refusal of the service itself (the request altered on its way: the page would not send it)
    // is shown in Korean next to its field, with the service's words after it
    await page.route('**/api/coach/owners/jiwoo', async (route) => {
      if (route.request().method() !== 'PUT') return route.continue();
      const body = route.request().postDataJSON();
      body.actions[1].reward = -1;
      await route.continue({ postData: JSON.stringify(body) });
    });
    await page.click('#save');
    await page.waitForFunction(() => document.querySelectorAll('#action-rows li')[1]?.querySelector('.err')?.textContent !== '');
    expect(await rows.nth(1).locator('.err').textContent()).toMatch(/^보상은 0~1,000,000 사이의 정수입니다.*\(actions\.1\.reward: /);
    expect(await rows.nth(1).locator('.reward').getAttribute('aria-invalid')).toBe('true');
    expect(await page.evaluate(() => document.activeElement?.classList.contains('reward'))).toBe(true);
    await page.unroute('**/api/coach/owners/jiwoo');
    await page.click('#save');
    await page.waitForFunction(() => document.getElementById('form-result')?.textContent?.includes('등록했습니다'));
    expect(await page.textContent('#owner-id-error')).toBe('');
    await page.waitForSelector('tr[data-owner="jiwoo"]');
    expect(await page.textContent('tr[data-owner="jiwoo"]')).toContain('대기 3 · 진행 0 · 완료 0');
    expect(await page.textContent('tr[data-owner="jiwoo"] td.points')).toBe('0점');

    // registering the same id again is refused in the page (the PUT would replace the owner)
    await page.click('#cancel-edit');
    await page.fill('#owner-id', 'jiwoo');
    await page.locator('#action-rows li .title').first().fill('다른 실천');
    await page.click('#save');
    // the page asks the hub whether the id is taken before it shows the refusal
    await page.waitForFunction(() => document.getElementById('owner-id-error')?.textContent?.includes('이미 등록된'));
    expect(await page.isVisible('#edit-existing')).toBe(true);
    // ...with a way to edit that owner instead
    await page.click('#edit-existing');
    await page.waitForSelector('#edit-note:not([hidden])');
    expect(await page.inputValue('#vision')).toBe('건강한 하루를 만든다');
    expect(await page.locator('#action-rows li').count()).toBe(3);
    await page.click('#cancel-edit');
    expect(await page.isVisible('#edit-existing')).toBe(false);

    // the personal link: copied to the clipboard, the owner header in the fragment
    await page.click('tr[data-owner="jiwoo"] button[data-act="link"]');
    await page.click('#copy-link');
    await page.waitForFunction(() => document.getElementById('link-status')?.textContent?.includes('복사했습니다'));
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    expect(copied).toBe(await page.inputValue('#owner-link'));
    expect(copied).toMatch(new RegExp(`^${hub.url}/coach#owner=jiwoo\\.[A-Za-z0-9_-]{43}$`));
    linkForOwner = copied;
  });

  let linkForOwner = '';

  it('the owner opens the link on a phone, completes an action and sees the reward', async () => {
    const ctx = await browser.newContext({ viewport: { width: 360, height: 780 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
    const page = await watch(ctx);
    await page.goto(linkForOwner);
    await page.waitForSelector('#actions li');
    expect(await page.textContent('#vision')).toBe('건강한 하루를 만든다');
    expect(await page.locator('#actions li').count()).toBe(3);
    // the header left the address at once
    expect(page.url()).toBe(`${hub.url}/coach`);
    await page.click('#actions li:has-text("책 10쪽 읽기") button.toggle');
    await page.waitForSelector('#reward.play');
    expect(await page.textContent('#reward')).toContain('+25점');
    await page.waitForFunction(() => document.getElementById('points')?.textContent === '25점');
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    // the signed header never reached the server's log (a fragment is not sent)
    const signature = linkForOwner.split('.').at(-1)!;
    expect(hub.output()).not.toContain(signature);
    await ctx.close();
  });

  it('staff see the points and statuses in the list, and edit the owner keeping the done action', async () => {
    const page = staffPage;
    await page.reload();
    await page.waitForSelector('tr[data-owner="jiwoo"]');
    expect(await page.textContent('tr[data-owner="jiwoo"] td.points')).toBe('25점');
    expect(await page.textContent('tr[data-owner="jiwoo"]')).toContain('대기 2 · 진행 0 · 완료 1');

    await page.click('tr[data-owner="jiwoo"] button[data-act="edit"]');
    await page.waitForSelector('#edit-note:not([hidden])');
    const rows = page.locator('#action-rows li');
    expect(await rows.count()).toBe(3);
    expect(await rows.nth(1).locator('.status').textContent()).toContain('완료');
    await rows.nth(0).locator('.remove').click();
    await page.click('#add-action');
    await rows.nth(2).locator('.title').fill('하루 회고 쓰기');
    await rows.nth(2).locator('.phase').selectOption('음');
    await page.click('#save');
    await page.waitForFunction(() => document.getElementById('form-result')?.textContent?.includes('저장했습니다'));
    await page.waitForFunction(() => document.querySelector('tr[data-owner="jiwoo"]')?.textContent?.includes('대기 2 · 진행 0 · 완료 1'));
    expect(await page.textContent('tr[data-owner="jiwoo"] td.points')).toBe('25점');
    const one = await get(hub.url, '/api/coach/owners/jiwoo', { authorization: `Bearer ${await login(hub.url, STAFF, STAFF_PASSWORD)}` });
    expect(one.body.actions.map((a: { title: string; status: string }) => `${a.title}:${a.status}`)).toEqual(['책 10쪽 읽기:완료', '고객 한 분께 안부 전화:대기', '하루 회고 쓰기:대기']);
  });

  it('fits at 1280 and 360 px and has no serious or critical axe violation, signed in with data', async () => {
    const page = staffPage;
    for (const width of [1280, 360]) {
      await page.setViewportSize({ width, height: 800 });
      await page.reload();
      await page.waitForSelector('tr[data-owner="jiwoo"]');
      await page.click('tr[data-owner="jiwoo"] button[data-act="link"]');
      await page.click('#save'); // an empty new form: the field messages show too
      await page.waitForFunction(() => document.getElementById('owner-id')?.getAttribute('aria-invalid') === 'true');
      const axe = await new AxeBuilder({ page: page as any }).analyze();
      const bad = axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join('; ')}`);
      expect(bad).toEqual([]);
      expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
      mkdirSync('.tmp/screens', { recursive: true });
      await page.screenshot({ path: `.tmp/screens/coach-owners-${width}.png`, fullPage: true });
    }
    expect(await page.evaluate(() => (window as any).__csp)).toEqual([]);
    // signed out, the sign-in form fits the phone too
    const ctx = await browser.newContext({ viewport: { width: 360, height: 780 } });
    const out = await watch(ctx);
    await out.goto(`${hub.url}/coach/owners`);
    await out.waitForSelector('#signin-form');
    expect(await out.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await ctx.close();
    expect(errors).toEqual([]);
  });
});
