/**
 * Every page the hub lists at /pages, signed in with the role it needs (or opened the way its
 * reader opens it: a ticket's code, an applicant's receipt and key, a coaching owner's link, the
 * bank's SSO token for the wallet), at 1280 and 360 px: drawn (body[data-ready="true"]), then no
 * serious or critical axe-core violation. One hub (DEMO=1, so every page has data to show, on the
 * payment relay's loopback stand-ins) and one browser; a page listed without a plan here fails the
 * first test, so a new page is checked from the day it is listed.
 */
import AxeBuilder from '@axe-core/playwright';
import pino from 'pino';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { newWebhookSecret, startPaymentStandins, type PaymentStandins } from '../../src/payment/standins.js';
import { signIn } from '../support/auth.js';
import { browserAvailable, launchChromium } from '../support/browser.js';
import { call } from '../support/http.js';
import { paymentHubEnv } from '../support/payment.js';

const hasBrowser = browserAvailable();
const WIDTHS = [1280, 360] as const;

/** How a page is opened signed in: the role and where the page keeps its token, or the address it is opened by. */
interface Plan {
  role?: string;
  /** The page's token key (web/common/auth.ts Session), in sessionStorage unless `local`. */
  key?: string;
  local?: boolean;
  /** The address to open (a fragment or a filled pattern); the listed path when absent. */
  open?: (d: Demo) => Promise<string> | string;
}

interface Demo {
  tickets: { code: string }[];
  documents: { slug: string }[];
  rental: Record<string, unknown>;
  coach: { owner: string; header?: string }[];
  /** The wallet's user: the demo's, else one topped up here. */
  walletUser: string;
  sso: (user: string) => Promise<string>;
}

const PLANS: Record<string, Plan> = {
  '/pages': {},
  '/': {},
  '/reference': {},
  '/chat': {},
  '/demo': {},
  '/rental.html': {},
  '/applicant.html': { open: (d) => applicantLink(d) },
  '/partner.html': { role: 'partner', key: 'partner:token' },
  '/docs': { role: 'editor', key: 'docs:token', open: (d) => `/docs#${d.documents[0]!.slug}` },
  '/accounts': { role: 'operator', key: 'accounts:token' },
  '/console': { role: 'operator', key: 'console:token' },
  '/payments': { role: 'operator', key: 'payments:token' },
  '/shows': { role: 'staff', key: 'shows:token' },
  '/scan': { role: 'staff', key: 'scan:token', local: true },
  '/desk': { role: 'staff', key: 'desk:token' },
  '/coach/owners': { role: 'staff', key: 'coach-owners:token' },
  '/coach': { open: (d) => coachLink(d) },
  '/trading': { role: 'trader', key: 'trading:token' },
  '/mticket/:code': { open: (d) => `/mticket/${d.tickets[0]!.code}` },
  '/wallet': { open: async (d) => `/wallet#token=${await d.sso(d.walletUser)}` },
};

/** The demo's first applicant's link: its receipt number and the access key, in the fragment. */
function applicantLink(d: Demo): string {
  const r = d.rental as { receipts?: string[]; applicant_key?: string };
  if (!r.receipts?.[0] || !r.applicant_key) throw new Error(`no applicant in the demo's rental: ${JSON.stringify(d.rental).slice(0, 300)}`);
  return `/applicant.html#receipt=${encodeURIComponent(r.receipts[0])}&key=${encodeURIComponent(r.applicant_key)}`;
}
/** The demo's first coaching owner's personal link. */
function coachLink(d: Demo): string {
  const owner = d.coach[0]?.header;
  if (!owner) throw new Error(`no coaching owner in the demo: ${JSON.stringify(d.coach).slice(0, 300)}`);
  return `/coach#owner=${encodeURIComponent(owner)}`;
}

describe.skipIf(!hasBrowser)('axe-core on every listed page, signed in, at 1280 and 360 px', () => {
  let peers: PaymentStandins;
  let maru: Maru;
  let browser: Browser;
  let listed: string[] = [];
  let descriptions: Record<string, string> = {};
  let demo: Demo;
  const tokens = new Map<string, string>();
  const secret = newWebhookSecret();

  beforeAll(async () => {
    peers = await startPaymentStandins({ webhookSecret: secret });
    maru = await startMaru(loadConfig(paymentHubEnv(peers, secret, 'axe-all', { chainKey: true, extra: { DEMO: '1' } })), { logger: pino({ level: 'silent' }) });
    browser = await launchChromium();
    const pages = (await call(maru.url, 'GET', '/pages', undefined, { accept: 'application/json' })).body.pages as { path: string; description: string }[];
    listed = pages.map((p) => p.path);
    descriptions = Object.fromEntries(pages.map((p) => [p.path, p.description]));
    const d = (await call(maru.url, 'GET', '/api/demo')).body;
    demo = { ...d, walletUser: d.wallet?.user ?? (await walletWithHistory()), sso: (user: string) => peers.banking.issueToken(user) };
    for (const role of new Set(Object.values(PLANS).flatMap((p) => (p.role ? [p.role] : [])))) tokens.set(role, await signIn(maru.url, [role]));
  }, 120_000);
  /** A wallet user with a top-up and a purchase behind it (when the demo has no wallet of its own). */
  async function walletWithHistory(): Promise<string> {
    const user = 'axe-wallet';
    const auth = { authorization: `Bearer ${await peers.banking.issueToken(user)}` };
    const r = await fetch(`${maru.url}/api/token/onramp`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/json', 'idempotency-key': `axe-${Date.now()}`, ...auth },
      body: JSON.stringify({ amount_krw: 300_000, method: 'card' }),
    });
    const loc = new URL(r.headers.get('location')!);
    await peers.banking.confirm(loc.searchParams.get('ref')!, loc.searchParams);
    expect((await call(maru.url, 'POST', '/api/token/challenge/buy', { challenge_id: 'starter_10k', user_id: user }, { ...auth, 'idempotency-key': `axe-buy-${Date.now()}` })).status).toBe(200);
    return user;
  }
  afterAll(async () => {
    await browser?.close();
    await maru?.stop();
    await peers?.close();
  });

  it('has a plan for every page /pages lists, and every plan is a listed page (or the index itself)', () => {
    expect(listed.length).toBeGreaterThanOrEqual(16);
    expect({ unplanned: listed.filter((p) => !(p in PLANS)), unlisted: Object.keys(PLANS).filter((p) => p !== '/pages' && !listed.includes(p)) }).toEqual({ unplanned: [], unlisted: [] });
  });

  it('describes every listed page in Korean (the index is read by people)', () => {
    const english = Object.entries(descriptions).filter(([, d]) => (d.match(/[가-힣]/g) ?? []).length < 8);
    expect(english).toEqual([]);
  });

  for (const [path, plan] of Object.entries(PLANS)) {
    it(`${path}${plan.role ? ` as ${plan.role}` : ''}: no serious or critical violation at ${WIDTHS.join(' and ')} px`, async () => {
      const problems: string[] = [];
      const address = plan.open ? await plan.open(demo) : path;
      for (const width of WIDTHS) {
        const ctx = await browser.newContext({ viewport: { width, height: width < 500 ? 780 : 900 } });
        if (plan.role) {
          await ctx.addInitScript(
            ([key, token, local]) => {
              (local ? localStorage : sessionStorage).setItem(key as string, token as string);
            },
            [plan.key!, tokens.get(plan.role)!, Boolean(plan.local)] as const,
          );
        }
        const page = await ctx.newPage();
        const errors: string[] = [];
        page.on('pageerror', (e) => errors.push(e.message));
        await page.goto(maru.url + address, { waitUntil: 'load' });
        await page.waitForSelector('body[data-ready="true"]', { timeout: 15_000 });
        await page.evaluate(() => document.fonts.ready);
        // signed in: no sign-in form left on the page
        if (plan.role) expect(await page.locator('#signin-form, #login:visible').count(), `${path} @${width}: still asks to sign in`).toBe(0);
        const builder = new AxeBuilder({ page: page as any });
        // /reference is swagger-ui's markup: its operation header is a button inside a button-like
        // summary (axe nested-interactive), which the page cannot change without forking swagger-ui
        if (path === '/reference') builder.disableRules(['nested-interactive']);
        const axe = await builder.analyze();
        expect(axe.passes.length, `${path} @${width}: axe checked nothing`).toBeGreaterThan(5);
        for (const v of axe.violations.filter((x) => x.impact === 'serious' || x.impact === 'critical')) {
          problems.push(`${path} @${width}: ${v.impact} ${v.id}: ${v.nodes.slice(0, 4).map((n) => `${n.target.join(' ')} ${n.failureSummary?.split('\n')[1]?.trim() ?? ''}`).join('; ')}`);
        }
        if (errors.length) problems.push(`${path} @${width}: page errors ${errors.join(' | ')}`);
        await ctx.close();
      }
      expect(problems).toEqual([]);
    }, 90_000);
  }
});
