import { expect } from 'vitest';
import type { PaymentStandins } from '../../src/payment/standins.js';
import { CHALLENGES } from '../../src/payment/rules.js';
import { applicant, form, threeFiles } from '../rental/fixtures.js';
import { bearer, login, signIn, TEST_ADMIN_PASSWORD, TEST_PARTNER_PASSWORD } from './auth.js';
import { call } from './http.js';
import type { HubProcess } from './process.js';
import { sleep } from './wait.js';

/**
 * A burst of acknowledged writes of every kind that matters, from two hub processes on one Redis
 * deployment, while `fail()` takes its master away (kill -9 and a promotion): token purchases,
 * rental applications with their uploads, check-ins, reward credits, accounts, document saves and
 * (when seeded) weekly payouts; a document lock taken before. A client retries a 503 as it is told,
 * with the same Idempotency-Key (purchases, rental applications, reward credits, payouts; a check-in
 * is exactly-once by its code, an account by its name, a save by its text). Afterwards every
 * acknowledged write is there, the exactly-once rules hold, the lock still has its one holder, and
 * the payment ledger checks out. Used by the Sentinel and the Redis Cluster failover tests.
 */
export interface BurstOptions {
  hubs: [HubProcess, HubProcess];
  peers: PaymentStandins;
  /** Called once 20 writes are acknowledged: kills the master and returns when a replica took over. */
  fail: () => Promise<void>;
  /** A finished week whose payouts the users (funded, profitable) ask for during the burst. */
  payouts?: { week: string; users: string[] };
}

type Answer = { status: number; body: any; headers: Headers };
const answer = async (r: Response): Promise<Answer> => {
  const text = await r.text();
  let body: any;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = text;
  }
  return { status: r.status, body, headers: r.headers };
};

export async function failoverBurst(o: BurstOptions): Promise<void> {
  const [h1, h2] = o.hubs;
  const peers = o.peers;
  const hubOf = (i: number) => (i % 2 ? h2 : h1);
  const admin = bearer(await login(h1.url, 'admin', TEST_ADMIN_PASSWORD));
  const staff = bearer(await signIn(h1.url, ['staff']));
  const operator = bearer(await signIn(h1.url, ['operator']));

  // --- before the burst: wallets, tickets, reward members
  const payers = Array.from({ length: 6 }, (_, i) => `burst${i}x${Date.now()}`);
  const tokenOf = new Map<string, Record<string, string>>();
  for (const user of payers) {
    const h = bearer(await peers.banking.issueToken(user));
    tokenOf.set(user, h);
    const r = await fetch(`${h1.url}/api/token/onramp`, {
      method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/json', 'idempotency-key': `or-${user}`, ...h },
      body: JSON.stringify({ amount_krw: 360_000, method: 'transfer' }),
    });
    expect(r.status).toBe(303);
    const loc = new URL(r.headers.get('location')!);
    expect((await peers.banking.confirm(loc.searchParams.get('ref')!, loc.searchParams)).webhook_status).toBe(200);
  }
  const balance = async (user: string) => BigInt((await call(h1.url, 'GET', '/api/token/wallet', undefined, tokenOf.get(user)!)).body.balance);
  const start = new Map<string, bigint>();
  for (const u of payers) start.set(u, await balance(u));
  const show = (await call(h1.url, 'POST', '/api/shows', { name: '장애 조치', venue: '홀', date: '2026-12-31' }, staff)).body;
  const codes: string[] = [];
  for (let i = 0; i < 30; i++) codes.push((await call(h2.url, 'POST', '/api/reservations', { show_id: show.id, seat: `F-${i}`, amount_paid: 10_000 }, staff)).body.code);
  const zone = (await call(h1.url, 'POST', '/culture', { country: 'KR', lang: 'ko', name: '장애조치' }, admin)).body.id as string;
  const members: string[] = [];
  for (let i = 0; i < 30; i++) members.push((await call(h2.url, 'POST', '/api/reward/members', { name: `회원${i}`, zone }, admin)).body.id);

  // a document lock taken before the failover
  const lockHolder = bearer(await signIn(h1.url, ['editor']));
  const other = bearer(await signIn(h2.url, ['editor']));
  expect((await call(h1.url, 'POST', '/api/md/save', { slug: 'ha-locked', content: '# 잠금\n' }, lockHolder)).status).toBe(200);
  expect((await call(h1.url, 'POST', '/api/md/lock', { slug: 'ha-locked' }, lockHolder)).status).toBe(200);

  // --- the burst
  const statuses = new Map<number, number>();
  const count = (s: number) => statuses.set(s, (statuses.get(s) ?? 0) + 1);
  let acked = 0;
  /**
   * Sends until acknowledged; a 503 (with Retry-After) is retried, and so is a 409
   * idempotency_in_progress (the first attempt still holds its key: the draft's "retry later");
   * `done` says what else ends it.
   */
  const untilAcknowledged = async (send: () => Promise<Answer>, done: (a: Answer, tries: number) => boolean): Promise<Answer> => {
    let last: unknown;
    // a failover takes seconds; on a loaded two-core machine far more: give it two minutes
    const deadline = Date.now() + 120_000;
    for (let tries = 0; Date.now() < deadline; tries++) {
      const a = await send().catch((err: unknown) => void (last = err));
      if (a) {
        last = { status: a.status, body: a.body };
        count(a.status);
        if (done(a, tries)) {
          acked++;
          return a;
        }
        if (a.status === 409 && a.body?.error?.code === 'idempotency_in_progress') {
          await sleep(250);
          continue;
        }
        expect(a.status, JSON.stringify(a.body)).toBe(503);
        expect(a.headers.get('retry-after')).toBeTruthy();
      }
      await sleep(50);
    }
    throw new Error(`never acknowledged; last answer: ${last instanceof Error ? last.message : JSON.stringify(last)}`);
  };

  const buys: { user: string; key: string; kind: string; fee: bigint; challenge?: string }[] = [];
  const purchases = async () => {
    // each user buys the three cheapest kinds (100 + 200 + 300 of its 650 tokens): one running challenge per kind
    for (let i = 0; i < 18; i++) {
      const user = payers[i % payers.length]!;
      const cheap = CHALLENGES[Math.floor(i / payers.length)]!;
      const key = `buy-${user}-${i}`;
      const a = await untilAcknowledged(
        async () => answer(await fetch(`${hubOf(i).url}/api/token/challenge/buy`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': key, ...tokenOf.get(user)! }, body: JSON.stringify({ challenge_id: cheap.challenge_id, user_id: user }) })),
        (x) => x.status === 200,
      );
      buys.push({ user, key, kind: cheap.challenge_id, fee: BigInt(cheap.entry_fee), challenge: a.body.challenge });
    }
  };
  const applications: { receiptNo: string; accessKey: string; documents: Record<string, { url: string }> }[] = [];
  const rental = async () => {
    for (let i = 0; i < 12; i++) {
      const files = threeFiles();
      const key = { 'idempotency-key': `apply-${i}-${Date.now()}` };
      const a = await untilAcknowledged(async () => answer(await fetch(`${hubOf(i).url}/api/subscriptions`, { method: 'POST', headers: key, body: form({ ...applicant, contactName: `신청${i}` }, files) })), (x) => x.status === 201);
      applications.push(a.body);
    }
  };
  const checkedIn: string[] = [];
  const checkins = async () => {
    for (const [i, code] of codes.entries()) {
      // a retried check-in whose first try landed answers 409 already_redeemed: acknowledged too
      await untilAcknowledged(
        async () => answer(await fetch(`${hubOf(i).url}/api/checkin`, { method: 'POST', headers: { ...staff, 'content-type': 'application/json' }, body: JSON.stringify({ code, source: 'camera', scanner: `burst-${i}` }) })),
        (x, tries) => x.status === 201 || (tries > 0 && x.status === 409 && x.body?.error?.code === 'already_redeemed'),
      );
      checkedIn.push(code);
    }
  };
  const credited: string[] = [];
  const credits = async () => {
    for (const [i, id] of members.entries()) {
      const key = { 'idempotency-key': `work-${id}` };
      await untilAcknowledged(async () => answer(await fetch(`${hubOf(i).url}/work?id=${id}&kc=1&v=100`, { headers: { ...admin, ...key } })), (x) => x.status === 200);
      credited.push(id);
    }
  };
  const madeAccounts: string[] = [];
  const accounts = async () => {
    for (let i = 0; i < 12; i++) {
      const user = `burst-acct-${i}`;
      // a retried creation whose first try landed answers 409: acknowledged too
      await untilAcknowledged(
        async () => answer(await fetch(`${hubOf(i).url}/api/auth/accounts`, { method: 'POST', headers: { ...admin, 'content-type': 'application/json' }, body: JSON.stringify({ user, password: `pw-${user}-secret`, roles: ['editor'] }) })),
        (x, tries) => x.status === 201 || (tries > 0 && x.status === 409),
      );
      madeAccounts.push(user);
    }
  };
  const saved: { slug: string; content: string }[] = [];
  const saves = async () => {
    for (let i = 0; i < 12; i++) {
      const slug = `burst-doc-${i}`;
      const content = `# 저장 ${i}\n\n장애 중에 저장한 글 ${i}\n`;
      await untilAcknowledged(async () => answer(await fetch(`${hubOf(i).url}/api/md/save`, { method: 'POST', headers: { ...lockHolder, 'content-type': 'application/json' }, body: JSON.stringify({ slug, content }) })), (x) => x.status === 200);
      saved.push({ slug, content });
    }
  };
  const paid: { user: string; body: any }[] = [];
  const payouts = async () => {
    for (const [i, user] of (o.payouts?.users ?? []).entries()) {
      const h = bearer(await peers.banking.issueToken(user));
      const a = await untilAcknowledged(
        async () => answer(await fetch(`${hubOf(i).url}/api/token/payout/request`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': `payout-${user}`, ...h }, body: JSON.stringify({ week: o.payouts!.week }) })),
        (x) => x.status === 200,
      );
      paid.push({ user, body: a.body });
    }
  };
  const killer = (async () => {
    while (acked < 20) await sleep(5);
    await o.fail();
  })();
  await Promise.all([purchases(), rental(), checkins(), credits(), accounts(), saves(), payouts(), killer]);
  expect(statuses.get(500)).toBeUndefined();

  // --- afterwards: nothing acknowledged lost, nothing doubled
  // purchases: each wallet is down by exactly the acknowledged fees; a replay of a key changes nothing
  for (const u of payers) {
    const spent = buys.filter((b) => b.user === u).reduce((s, b) => s + b.fee, 0n);
    expect(await balance(u), u).toBe(start.get(u)! - spent);
  }
  const replay = buys[0]!;
  const again = await call(h2.url, 'POST', '/api/token/challenge/buy', { challenge_id: replay.kind, user_id: replay.user }, { 'idempotency-key': replay.key, ...tokenOf.get(replay.user)! });
  expect(again.status).toBe(200);
  expect(again.body.challenge).toBe(replay.challenge);
  expect(await balance(replay.user)).toBe(start.get(replay.user)! - buys.filter((b) => b.user === replay.user).reduce((s, b) => s + b.fee, 0n));
  const check = await call(h2.url, 'GET', '/api/token/ops/ledger/check', undefined, operator);
  expect(check.body.ledger).toMatchObject({ ok: true, mismatches: [], negative: [] });

  // rental: every acknowledged application is there with its three files; none was made twice
  for (const app of applications) {
    const tracked = await call(h2.url, 'GET', `/api/subscriptions/${app.receiptNo}?key=${app.accessKey}`);
    expect(tracked.status, app.receiptNo).toBe(200);
    for (const doc of Object.values(app.documents)) {
      const f = await fetch(`${h1.url}${doc.url}?key=${app.accessKey}`);
      expect(f.status, doc.url).toBe(200);
      await f.arrayBuffer();
    }
  }
  const partner = (await call(h1.url, 'POST', '/api/partner/login', { password: TEST_PARTNER_PASSWORD })).body.token as string;
  const listed = await call(h1.url, 'GET', '/api/partner/applications?pageSize=100', undefined, bearer(partner));
  const names = (listed.body.items as { contactName: string }[]).map((x) => x.contactName).filter((n) => n.startsWith('신청'));
  const doubledApplications = names.length - new Set(names).size;

  // check-ins: each code redeemed exactly once
  for (const [i, code] of checkedIn.entries()) {
    const r = await call(hubOf(i + 1).url, 'POST', '/api/checkin', { code, source: 'camera', scanner: 'after' }, staff);
    expect(r.status, code).toBe(409);
    expect(r.body.error.code).toBe('already_redeemed');
  }

  // the lock taken before the failover still holds: not granted to a second editor
  const second = await call(h2.url, 'POST', '/api/md/lock', { slug: 'ha-locked' }, other);
  expect(second.status).toBe(423);
  expect((await call(h1.url, 'POST', '/api/md/lock', { slug: 'ha-locked' }, lockHolder)).status).toBe(200); // its holder renews it

  // reward: each credited member holds exactly its one unit
  let doubledCredits = 0;
  for (const id of credited) {
    const m = await call(h1.url, 'GET', `/member?id=${id}`, undefined, admin);
    expect(m.body.kc, id).toBeGreaterThanOrEqual(1);
    if (m.body.kc > 1) doubledCredits++;
  }
  // accounts: each acknowledged account signs in, once
  for (const user of madeAccounts) expect(await login(h2.url, user, `pw-${user}-secret`), user).toBeTruthy();
  // document saves: each acknowledged save is the document's text
  for (const s of saved) {
    const d = await call(hubOf(1).url, 'GET', `/api/md/doc/${s.slug}`, undefined, lockHolder);
    expect(d.status, s.slug).toBe(200);
    expect(d.body.doc.content).toBe(s.content);
  }
  // payouts: each user paid once; asking again answers the same payout
  for (const p of paid) {
    expect(p.body.status, p.user).toBe('paid');
    const h = bearer(await peers.banking.issueToken(p.user));
    const again = await call(h1.url, 'POST', '/api/token/payout/request', { week: o.payouts!.week }, { 'idempotency-key': `payout-${p.user}-again`, ...h });
    expect(again.body, p.user).toMatchObject({ status: 'paid', amount: p.body.amount });
  }
  console.log(JSON.stringify({ failover_burst: { acknowledged: acked, statuses: Object.fromEntries(statuses), doubled_applications: doubledApplications, doubled_credits: doubledCredits } }));
  expect(buys).toHaveLength(18);
  expect(applications).toHaveLength(12);
  expect(checkedIn).toHaveLength(30);
  expect(credited).toHaveLength(30);
  expect(madeAccounts).toHaveLength(12);
  expect(saved).toHaveLength(12);
  expect(paid).toHaveLength(o.payouts?.users.length ?? 0);
  // a 503 whose write had landed (its WAIT fell short, or the answer was lost) and its retry make
  // one: the application's id and the credit's id are derived from the Idempotency-Key, so the
  // retry finds what the first attempt wrote (its kept answer) instead of writing it again
  expect(doubledApplications).toBe(0);
  expect(doubledCredits).toBe(0);
}
