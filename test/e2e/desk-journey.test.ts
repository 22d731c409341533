import AxeBuilder from '@axe-core/playwright';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_TEST_ENV, bearer, login, TEST_ADMIN_PASSWORD } from '../support/auth.js';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { call } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';

const hasBrowser = browserAvailable();

/**
 * The desk in Chromium: a customer on /chat asks for a person; a staff member on /desk sees the
 * conversation waiting, takes it while the customer watches, answers live, reads the customer's
 * reply live, and hands it back; the customer's page says who answers and when the guide is back.
 */
describe.skipIf(!hasBrowser)('/desk and /chat: a person takes over, answers live and hands back', () => {
  let hub: HubProcess;
  let browser: Browser;
  const errors: string[] = [];

  beforeAll(async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('desk-journey'), ...AUTH_TEST_ENV });
    browser = await launchChromium();
    const admin = await login(hub.url, 'admin', TEST_ADMIN_PASSWORD);
    const made = await call(hub.url, 'POST', '/api/auth/accounts', { user: 'agent-kim', password: 'agent-kim-secret', roles: ['staff'], name: '김상담' }, bearer(admin));
    expect(made.status, made.text).toBe(201);
  });
  afterAll(async () => {
    await browser?.close();
    await hub?.stop();
  });

  const page = async (path: string, width = 1280) => {
    // each its own context: the customer and the agent keep their own sessionStorage
    const ctx = await browser.newContext({ viewport: { width, height: 900 } });
    const p = await ctx.newPage();
    p.on('pageerror', (e) => errors.push(`${path}: ${e.message}`));
    await p.goto(`${hub.url}${path}`);
    await p.waitForFunction(() => document.body.dataset.ready === 'true');
    return p;
  };
  /** Serious or critical axe-core violations of the page as it is, and whether it fits its width. */
  const quality = async (p: Page, width: number) => {
    const axe = await new AxeBuilder({ page: p as any }).analyze();
    const out = axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `axe ${v.impact} ${v.id}: ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join('; ')}`);
    const scroll = await p.evaluate(() => document.documentElement.scrollWidth);
    if (scroll > width) out.push(`${scroll} px wide at ${width} px`);
    return out;
  };
  const bots = (p: Page) => p.$$eval('#log li.bot', (els) => els.length);
  const press = async (p: Page, label: string) => {
    const before = await bots(p);
    await p.getByRole('button', { name: label, exact: true }).click();
    await p.waitForFunction((n) => document.querySelectorAll('#log li.bot').length > n, before);
  };

  it('the customer watches a person take the conversation, answer, and hand it back to the guide', async () => {
    const customer = await page('/chat', 360);
    await press(customer, '검색');
    expect(await customer.getAttribute('#stage', 'data-stage')).toBe('need');
    await press(customer, '상담원 연결');
    const before = await bots(customer);
    await customer.fill('#message', '010-2345-6789');
    await customer.press('#message', 'Enter');
    await customer.waitForFunction((n) => document.querySelectorAll('#log li.bot').length > n, before);
    expect(await customer.getAttribute('#stage', 'data-stage')).toBe('handoff');
    await customer.waitForSelector('#person[data-status="waiting"]');
    const id = await customer.evaluate(() => sessionStorage.getItem('maru:chat:session'));
    expect(id).toMatch(/^cs_/);

    const agent = await page('/desk');
    expect(await agent.isVisible('#board')).toBe(false);
    await agent.fill('#signin-user', 'agent-kim');
    await agent.fill('#signin-password', 'agent-kim-secret');
    await agent.click('#signin-form button[type="submit"]');
    const waiting = agent.locator(`#inbox button[data-session="${id}"]`);
    await waiting.waitFor();
    expect(await waiting.getAttribute('data-status')).toBe('waiting');
    // this week's funnel counts the session at greet and need
    expect(Number(await agent.textContent('#funnel tr[data-stage="greet"] td.num'))).toBeGreaterThanOrEqual(1);
    expect(Number(await agent.textContent('#funnel tr[data-stage="need"] td.num'))).toBeGreaterThanOrEqual(1);

    expect(await quality(agent, 1280)).toEqual([]);
    await waiting.click();
    await agent.waitForSelector('#conv:not([hidden])');
    expect(await agent.textContent('#values dd[data-field="contact"]')).toBe('010-2345-6789');
    expect(await agent.textContent('#values dd[data-field="source"]')).toBe('검색');
    const said = await agent.$$eval('#transcript li.customer .text', (els) => els.map((e) => e.textContent));
    expect(said).toEqual(['검색', '상담원 연결', '010-2345-6789']);

    await agent.click('#take');
    await agent.waitForSelector('#answer:not([hidden])');
    // the customer sees a person answering, by name, and no guide choices
    await customer.waitForSelector('#person[data-status="answering"]');
    expect(await customer.textContent('#person')).toContain('김상담');
    expect(await customer.$$eval('#choices button', (b) => b.length)).toBe(0);
    expect(await customer.$$eval('#log li.card[data-card="callback"]', (c) => c.length)).toBe(1);

    await agent.fill('#answer-text', '안녕하세요, 김상담입니다. 어떤 점이 궁금하세요?');
    await agent.press('#answer-text', 'Enter');
    const answer = customer.locator('#log li.agent', { hasText: '김상담입니다' });
    await answer.waitFor();
    expect(await answer.getAttribute('data-agent')).toBe('김상담');
    // a reload keeps the conversation: the person's answer, and who answers
    await customer.reload();
    await customer.waitForFunction(() => document.body.dataset.ready === 'true');
    await customer.waitForSelector('#person[data-status="answering"]');
    expect(await customer.locator('#log li.agent', { hasText: '김상담입니다' }).count()).toBe(1);
    expect(await customer.locator('#log li.me', { hasText: '010-2345-6789' }).count()).toBe(1);

    // both pages in this state: no serious or critical axe-core violation, no sideways scroll
    expect(await quality(customer, 360)).toEqual([]);
    expect(await quality(agent, 1280)).toEqual([]);

    await customer.fill('#message', '설치 일정이 궁금해요');
    await customer.press('#message', 'Enter');
    await agent.locator('#transcript li.customer', { hasText: '설치 일정이 궁금해요' }).waitFor();
    await agent.fill('#answer-text', '설치는 신청 후 일주일 안에 해 드려요.');
    await agent.press('#answer-text', 'Enter');
    await customer.locator('#log li.agent', { hasText: '일주일 안에' }).waitFor();

    await agent.click('#hand-back');
    await customer.waitForSelector('#person[data-status="returned"]');
    await customer.waitForFunction(() => document.getElementById('stage')?.dataset.stage === 'need');
    expect(await customer.textContent('#person')).toContain('다시 안내');
    await press(customer, '렌탈');
    expect(await customer.getAttribute('#stage', 'data-stage')).toBe('recommend');

    // the desk no longer lists it as waiting; its transcript keeps every line
    await agent.waitForFunction((s) => !document.querySelector(`#inbox button[data-session="${s}"]`), id);
    const lines = await agent.$$eval('#transcript li', (els) => els.map((e) => e.className));
    expect(lines).toContain('agent');
    expect(lines).toContain('note');
    expect(await agent.isVisible('#answer')).toBe(false);
    expect(errors).toEqual([]);
  });

  it('an account without staff sees no desk; the page says what it needs', async () => {
    const admin = await login(hub.url, 'admin', TEST_ADMIN_PASSWORD);
    await call(hub.url, 'POST', '/api/auth/accounts', { user: 'writer', password: 'writer-secret1', roles: ['editor'] }, bearer(admin));
    const p = await page('/desk', 360);
    expect(await quality(p, 360)).toEqual([]);
    await p.fill('#signin-user', 'writer');
    await p.fill('#signin-password', 'writer-secret1');
    await p.click('#signin-form button[type="submit"]');
    await p.waitForSelector('#signed-in-as');
    expect(await p.isVisible('#board')).toBe(false);
    expect(await p.isVisible('#need')).toBe(true);
    expect(await quality(p, 360)).toEqual([]);
    expect(errors).toEqual([]);
  });
});
