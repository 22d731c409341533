import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { bearer, login } from '../support/auth.js';
import { get, post, until } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';

/**
 * DEMO=1 seeds all eight services through their own methods (a show with bookings, reward members,
 * documents with history, running trading programs, rental applications in every status with their
 * files and checks, conversations with a receipt and a referral used once, coaching owners, a wallet
 * on the embedded bank stand-in with a challenge running as a program), prints each service's page
 * and sign-in; a second start seeds nothing twice; a plain start seeds nothing and runs no stand-in bank.
 */
const STATUSES = ['pending', 'documents_submitted', 'under_review', 'rejected', 'approved'];
const MAGIC: Record<string, string> = { png: '89504e47', pdf: '25504446', hwp: 'd0cf11e0' };
const ADMIN = 'demo-admin-password-1';

/** The demo wallet user's SSO token: the bank stand-in's sign-in answers it in the redirect's fragment. */
async function walletToken(signInUrl: string): Promise<string> {
  const r = await fetch(signInUrl, { redirect: 'manual' });
  expect(r.status).toBe(303);
  const token = new URLSearchParams(new URL(r.headers.get('location')!).hash.slice(1)).get('token');
  expect(token).toBeTruthy();
  return token!;
}

/** What the partner, the conversation, coaching and wallet routes answer about the seeded data (compared across starts). */
async function serviceCounts(url: string, password: string, demo: any) {
  const partner = bearer(await login(url, 'demo-partner', password));
  const list = (await get(url, '/api/partner/applications?pageSize=50', partner)).body;
  const referral = (await get(url, `/api/referral/${demo.chat.referral_code}`)).body;
  const coach = await Promise.all(demo.coach.map(async (c: any) => (await get(url, '/api/coach/profile', { 'x-service-owner': c.header })).body));
  const w = { authorization: `Bearer ${await walletToken(demo.wallet.sign_in_url)}` };
  const wallet = (await get(url, '/api/token/wallet?limit=50', w)).body;
  const challenges = (await get(url, '/api/token/my/challenges', w)).body;
  const admin = bearer(await login(url, 'admin', ADMIN));
  const reviews = (await get(url, '/api/token/ops/reviews', admin)).body.reviews as { id: string; state: string }[];
  const receipts = (await get(url, '/api/token/receipts?limit=50', w)).body.receipts as { kind: string }[];
  return {
    counters: list.counters,
    referral_uses: referral.uses,
    rewards: referral.rewards.length,
    shareholder: (await get(url, '/api/shareholder')).body.cumulativeReceipts,
    coach_points: coach.map((p: any) => p.points),
    balance: wallet.balance,
    challenges: JSON.stringify(challenges).match(/c_[0-9a-f]{16}/g)?.length ?? 0,
    reviews: reviews.map((r) => `${r.id}:${r.state}`),
    payout_receipts: receipts.filter((r) => r.kind === 'payout').length,
    history: wallet.page.total,
  };
}
describe('DEMO=1 start', () => {
  const dir = tempDir('demo');
  const env = { DATA_DIR: dir, DEMO: '1', ADMIN_PASSWORD: ADMIN, PROGRAM_CANDLE_MS: '1000', PROGRAM_SPEED: '20' };
  let hub: HubProcess | undefined;
  let counts: Awaited<ReturnType<typeof serviceCounts>> | undefined;
  afterAll(async () => {
    await hub?.stop();
  });

  const seeded = async (h: HubProcess) => {
    // the banner follows the "listening" line
    await until('the demo banner', () => h.output().includes('sign-in '), 5000);
    const password = /password for this run: (\S+)/.exec(h.output())?.[1];
    expect(password, h.output()).toBeTruthy();
    const demo = (await get(h.url, '/api/demo')).body;
    return { password: password!, demo };
  };

  it('serves the seeded data of all eight services through their APIs, and prints each service\'s page and sign-in', async () => {
    hub = await startHubProcess(env, 30_000);
    const { password, demo } = await seeded(hub);
    const out = hub.output();
    expect(out).toContain(`${hub.url}/pages`);
    expect(out).toMatch(new RegExp(`${hub.url}/mticket/TK-`));
    expect(out).toContain('demo-staff, demo-editor, demo-trader, demo-partner');
    // one line per service: its page and who to sign in as
    for (const [service, page] of <[string, string][]>[['reward', '/'], ['ticket', '/mticket/TK-'], ['trading', '/trading'], ['collab', '/docs'], ['rental', '/partner.html?user=demo-partner'], ['chat', '/chat?ref=MARU-'], ['coach', '/coach#owner=demo-coach-1'], ['payment', '/wallet']]) {
      expect(out).toMatch(new RegExp(`^  ${service} +${hub.url.replace(/[.]/g, '\\.')}${page.replace(/[?.]/g, '\\$&')}\\S* +sign in: `, 'm'));
    }
    // the README's first-run section shows these lines (its "…" stand for what changes at every start)
    const readme = /```text\n(maru demo is ready:\n[\s\S]*?)```/.exec(readFileSync(new URL('../../README.md', import.meta.url), 'utf8'))![1]!.trim().split('\n');
    const printed = /maru demo is ready:\n[\s\S]*?password for this run: \S+/.exec(out)![0].split('\n');
    const esc = (t: string) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/127\\\.0\\\.0\\\.1:8080/g, '127\\.0\\.0\\.1:\\d+').replace(/\s+/g, ' +');
    expect(printed.length).toBe(readme.length);
    readme.forEach((line, i) => expect(printed[i], line).toMatch(new RegExp(`^ *${line.trim().split('…').map(esc).join('\\S*')}$`)));
    // DEMO=1 with no bank configured runs the payment stand-ins in-process
    expect(out).toContain('payment stand-ins started in-process');

    // the show with its bookings: the tickets open, one already checked in, with holders
    expect(demo.tickets.length).toBe(5);
    const tickets = await Promise.all(demo.tickets.map((t: { code: string }) => get(hub!.url, `/api/mticket/${t.code}`)));
    expect(tickets.every((t) => t.status === 200 && t.body.show_id === demo.show_id)).toBe(true);
    expect(tickets.filter((t) => t.body.status === 'checked_in').length).toBe(1);
    expect(tickets[0]!.body.holder).toBe('김마루');
    expect((await get(hub.url, `/api/shows/${demo.show_id}`)).body.name).toBe('마루 데모 콘서트');
    expect((await get(hub.url, demo.tickets[0].page_url)).status).toBe(200);

    // reward members with credited work
    const stats = (await get(hub.url, '/stats')).body;
    expect(stats.members).toBe(3);
    expect(stats.total_ru).toBeGreaterThan(0);

    // documents with history
    const history = (await get(hub.url, '/api/md/history/welcome')).body;
    expect(history.versions.length).toBe(3);
    expect((await get(hub.url, '/api/md/history/door-checklist')).body.versions.length).toBe(2);

    // the demo accounts sign in with the printed password; the trader's programs run on the market
    const trader = bearer(await login(hub.url, 'demo-trader', password));
    await login(hub.url, 'demo-staff', password);
    await login(hub.url, 'demo-editor', password);
    const list = await until('the demo programs to process bars', async () => {
      const r = (await get(hub!.url, '/api/program/list', trader)).body;
      return r.programs.length === 2 && r.programs.every((p: any) => p.state === 'running' && p.stats.bars > 0) ? r : undefined;
    }, 20_000, 100);
    expect(list.programs.map((p: any) => p.symbol).sort()).toEqual(['ES', 'GC']);

    // the demo page is listed in /pages
    const pages = (await get(hub.url, '/pages', { accept: 'application/json' })).body.pages as { path: string }[];
    expect(pages.map((p) => p.path)).toContain('/demo');
    expect((await get(hub.url, '/demo')).status).toBe(200);
    expect(demo.stops.map((x: { service: string }) => x.service)).toEqual(['reward', 'ticket', 'trading', 'collab', 'rental', 'chat', 'coach', 'payment']);

    // rental: one application in each status, for the demo partner, with real files and the checks in the audit trail
    const partner = bearer(await login(hub.url, 'demo-partner', password));
    const apps = (await get(hub.url, '/api/partner/applications?pageSize=50', partner)).body;
    expect(apps.counters).toEqual({ total: 5, pending: 1, documents_submitted: 1, under_review: 1, approved: 1, rejected: 1 });
    const byReceipt = new Map(apps.items.map((a: any) => [a.receiptNo, a]));
    expect(demo.rental.receipts.map((r: string) => (byReceipt.get(r) as any).status)).toEqual(STATUSES);
    const rejected = byReceipt.get(demo.rental.receipts[3]) as any;
    expect(rejected.documents.internalResolution).toMatchObject({ check: 'rejected', reason: expect.stringContaining('서명') });
    const kinds = new Set<string>();
    for (const doc of Object.values(rejected.documents) as { url: string; mediaType: string }[]) {
      const ext = doc.url.slice(doc.url.lastIndexOf('.') + 1);
      const file = await fetch(`${hub.url}${doc.url}`, { headers: partner });
      expect(file.status).toBe(200);
      expect(Buffer.from(await file.arrayBuffer()).subarray(0, 4).toString('hex')).toBe(MAGIC[ext]);
      kinds.add(ext);
    }
    expect([...kinds].sort()).toEqual(['hwp', 'pdf', 'png']);
    const audit = (await get(hub.url, '/api/partner/audit?limit=1000', partner)).body.entries as { actor: string; action: string; result: string }[];
    expect(audit.filter((e) => e.actor === 'demo-partner' && e.action === 'check').map((e) => e.result).sort()).toEqual([...Array(5).fill('approved'), 'rejected']);
    // the applicant of the rejected application follows it with the printed key
    const tracked = await get(hub.url, `/api/subscriptions/${demo.rental.receipts[3]}?key=${demo.rental.applicant_key}`);
    expect(tracked.status).toBe(200);
    expect(tracked.body.status).toBe('rejected');

    // chat: conversations at several stages, a registered receipt, the referral code used once
    const stages = await Promise.all(demo.chat.sessions.map(async (c: { session: string }) => (await get(hub!.url, `/api/chat/${c.session}`)).body.stage));
    expect(stages).toEqual(['greet', 'recommend', 'sharing', 'received']);
    const shared = (await get(hub.url, `/api/chat/${demo.chat.sessions[2].session}`)).body;
    expect(shared.receiptNo).toBe(demo.chat.receipts[0]);
    const referral = (await get(hub.url, `/api/referral/${demo.chat.referral_code}`)).body;
    expect(referral.uses).toBe(1);
    expect(referral.rewards.map((r: { side: string }) => r.side).sort()).toEqual(['owner', 'referred']);
    expect((await get(hub.url, '/api/shareholder')).body.cumulativeReceipts).toBeGreaterThanOrEqual(2);

    // coach: two owners with a vision, actions in all four phases, a card of the day
    expect(demo.coach.map((c: { owner: string }) => c.owner)).toEqual(['demo-coach-1', 'demo-coach-2']);
    for (const c of demo.coach) {
      const profile = (await get(hub.url, '/api/coach/profile', { 'x-service-owner': c.header })).body;
      expect(profile.vision).toBeTruthy();
      expect(new Set(profile.actions.map((a: { phase: string }) => a.phase))).toEqual(new Set(['티', '옴', '타', '음']));
      expect(profile.points).toBeGreaterThan(0);
      const nudge = await get(hub.url, '/api/coach/nudge', { 'x-service-owner': c.header });
      expect(nudge.status).toBe(200);
      expect(nudge.body.action.status).not.toBe('완료');
    }

    // payment: the demo user signs in through the bank stand-in; the on-ramp is settled and the challenge runs as a program
    const w = { authorization: `Bearer ${await walletToken(demo.wallet.sign_in_url)}` };
    const wallet = (await get(hub.url, '/api/token/wallet?limit=50', w)).body;
    expect(BigInt(wallet.balance)).toBeGreaterThan(0n);
    const challenge = await until('the demo challenge bound to its program', async () => {
      const mine = (await get(hub!.url, '/api/token/my/challenges', w)).body;
      return JSON.stringify(mine).includes(demo.wallet.challenge) ? mine : undefined;
    }, 5000, 100);
    expect(JSON.stringify(challenge)).toContain('starter_10k');
    expect(demo.wallet.program).toMatch(/^p_/);
    expect((await get(hub.url, '/api/token/receipts?limit=20', w)).body.receipts.length).toBeGreaterThan(0);

    // payouts through the relay's payout service: one paid (posted, with its receipt), one held for review
    const { paid, held } = demo.wallet.payouts;
    expect(paid).toMatchObject({ status: 'paid', week: expect.stringMatching(/^\d{4}-W\d{2}$/), receipt_hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(held).toMatchObject({ status: 'review', reason: 'violation_last_7_days', review: `rv_${held.week}_demo-wallet`, receipt_hash: null });
    expect(held.week).not.toBe(paid.week);
    const moves = wallet.history.filter((t: any) => t.code === 'payout').map((t: any) => `${t.meta.week}:${t.status}`).sort();
    expect(moves).toEqual([`${paid.week}:posted`, `${held.week}:pending`].sort());
    const receipts = (await get(hub.url, '/api/token/receipts?limit=50', w)).body.receipts;
    expect(receipts.filter((r: any) => r.kind === 'payout').map((r: any) => r.receipt_hash)).toEqual([paid.receipt_hash]);
    const admin = bearer(await login(hub.url, 'admin', ADMIN));
    const open = (await get(hub.url, '/api/token/ops/reviews?state=open', admin)).body.reviews;
    expect(open.map((r: any) => [r.id, r.reason, r.user])).toEqual([[held.review, 'violation_last_7_days', 'demo-wallet']]);
    expect((await get(hub.url, '/api/token/ops/warnings', admin)).body.warnings.some((x: any) => x.week === held.week && x.user === 'demo-wallet')).toBe(true);
    counts = await serviceCounts(hub.url, password, demo);
  }, 90_000);

  it('a second start on the same data seeds nothing twice, and the new password works', async () => {
    const before = (await get(hub!.url, '/api/demo')).body;
    await hub!.stop();
    hub = await startHubProcess(env, 30_000);
    const { password, demo } = await seeded(hub);
    // the same data; only the bank stand-in's address (a new port at every start) differs
    const same = (d: any) => ({ ...d, wallet: { ...d.wallet, sign_in_url: undefined }, stops: undefined });
    expect(same(demo)).toEqual(same(before));
    expect(demo.wallet.sign_in_url).not.toBe(before.wallet.sign_in_url);
    expect(await serviceCounts(hub.url, password, demo)).toEqual(counts);
    expect((await get(hub.url, '/stats')).body.members).toBe(3);
    expect((await get(hub.url, '/api/md/history/welcome')).body.versions.length).toBe(3);
    const trader = bearer(await login(hub.url, 'demo-trader', password));
    expect((await get(hub.url, '/api/program/list', trader)).body.programs.length).toBe(2);
  }, 90_000);

  it('mints one-time sign-in tickets for the demo accounts only with this run\'s tour key, and trades each once for a sign-in token', async () => {
    const url = hub!.url;
    // a fresh tour key at every start, printed in the tour's address and served nowhere
    const key = /guided tour +\S+\/demo#key=([A-Za-z0-9_-]+)/.exec(hub!.output())![1]!;
    expect(JSON.stringify((await get(url, '/api/demo')).body)).not.toContain(key);
    const mint = (body: unknown, headers: Record<string, string> = { 'x-demo-key': key }) => post(url, '/api/demo/sign-in', body, headers);
    const exchange = (body: unknown) => post(url, '/api/demo/sign-in/exchange', body);

    // missing or wrong key: 401, whatever the account
    expect((await mint({ user: 'demo-trader' }, {})).body.error.code).toBe('invalid_demo_key');
    expect((await mint({ user: 'demo-trader' }, { 'x-demo-key': 'x'.repeat(24) })).status).toBe(401);
    expect((await mint({ user: 'demo-trader' }, { 'x-demo-key': `${key}x` })).status).toBe(401);
    // bad input: 400
    for (const body of [{}, { user: 'Demo Trader' }, { user: 'demo-trader', extra: 1 }, { user: 7 }, 'not json']) expect((await mint(body)).status, JSON.stringify(body)).toBe(400);
    // only the demo accounts: never the operator or the rental partner
    for (const user of ['admin', 'partner', 'demo-wallet', 'nobody']) {
      const r = await mint({ user });
      expect(r.status, user).toBe(404);
      expect(r.body.error.code).toBe('not_a_demo_account');
    }

    const t = await mint({ user: 'demo-trader' });
    expect(t.status).toBe(200);
    expect(t.body.user).toBe('demo-trader');
    expect(Date.parse(t.body.expires_at) - Date.now()).toBeLessThanOrEqual(60_000);
    // bad or unknown tickets
    for (const body of [{}, { ticket: '' }, { ticket: 'short' }, { ticket: `${t.body.ticket}!` }, { ticket: t.body.ticket, user: 'admin' }]) expect((await exchange(body)).status, JSON.stringify(body)).toBe(400);
    expect((await exchange({ ticket: 'A'.repeat(32) })).status).toBe(401);
    // the ticket signs in as its account, once
    const got = await exchange({ ticket: t.body.ticket });
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ user: 'demo-trader', roles: ['trader'] });
    const me = await get(url, '/api/auth/me', bearer(got.body.token));
    expect(me.body.identity).toMatchObject({ id: 'demo-trader', roles: ['trader'] });
    const used = await exchange({ ticket: t.body.ticket });
    expect(used.status).toBe(401);
    expect(used.body.error.code).toBe('invalid_ticket');
  }, 30_000);
});

describe('a plain start', () => {
  let hub: HubProcess | undefined;
  afterAll(async () => {
    await hub?.stop();
  });

  it('seeds nothing and runs no stand-in bank: no demo page, accounts, members, documents, coaching owners or referrals', async () => {
    hub = await startHubProcess({ DATA_DIR: tempDir('nodemo') });
    expect(hub.output()).not.toContain('password for this run');
    // no stand-in bank: the wallet has no bank to send anyone to
    expect(hub.output()).not.toContain('payment stand-ins started');
    expect((await get(hub.url, '/api/demo')).status).toBe(404);
    expect((await get(hub.url, '/demo')).status).toBe(404);
    // no demo sign-in: the routes do not exist
    expect((await post(hub.url, '/api/demo/sign-in', { user: 'demo-trader' }, { 'x-demo-key': 'x'.repeat(24) })).status).toBe(404);
    expect((await post(hub.url, '/api/demo/sign-in/exchange', { ticket: 'A'.repeat(32) })).status).toBe(404);
    // the payment relay is not configured, and says so where the wallet page reads it
    expect((await get(hub.url, '/api/token/config')).body).toEqual({ sso_login_url: null, chain_public_key: null });
    const pages = (await get(hub.url, '/pages', { accept: 'application/json' })).body.pages as { path: string }[];
    expect(pages.map((p) => p.path)).not.toContain('/demo');
    expect((await get(hub.url, '/stats')).body.members).toBe(0);
    expect((await get(hub.url, '/api/md/docs')).body.docs).toEqual([]);
    expect((await get(hub.url, '/api/coach/profile', { 'x-service-owner': 'demo-coach-1' })).status).toBe(404);
    expect((await get(hub.url, '/api/referral/MARU-1')).status).toBe(404);
    expect((await fetch(`${hub.url}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user: 'demo-trader', password: 'x'.repeat(12) }) })).status).toBe(401);
  }, 30_000);
});
