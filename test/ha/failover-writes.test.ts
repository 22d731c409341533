import { afterAll, describe, expect, it } from 'vitest';
import { newWebhookSecret, startPaymentStandins, type PaymentStandins } from '../../src/payment/standins.js';
import { CHALLENGES } from '../../src/payment/rules.js';
import { applicant, form, threeFiles } from '../rental/fixtures.js';
import { bearer, login, signIn, TEST_ADMIN_PASSWORD, TEST_PARTNER_PASSWORD } from '../support/auth.js';
import { call } from '../support/http.js';
import { paymentHubEnv } from '../support/payment.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { redisBinariesOrSkip, startSentinelSetup, type SentinelSetup } from '../support/sentinel.js';
import { sleep } from '../support/wait.js';

// Two hub processes through three Sentinels, REDIS_MIN_REPLICAS=1, a burst of acknowledged writes of
// every kind that matters (token purchases, rental applications with their uploads, check-ins,
// reward credits; a document lock taken before) while the primary is killed with -9 and the
// replica promoted. A client retries a 503 as it is told, with the same Idempotency-Key (purchases,
// rental applications, reward credits; a check-in is exactly-once by its code).
// Afterwards every acknowledged write is there, the exactly-once rules hold, the lock still has its
// one holder, and the payment ledger checks out.

const binaries = redisBinariesOrSkip();
const setups: SentinelSetup[] = [];
const hubs: HubProcess[] = [];
let peers: PaymentStandins | undefined;
afterAll(async () => {
  for (const h of hubs) await h.stop('SIGKILL');
  for (const s of setups) await s.stop();
  await peers?.close();
});

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

describe.skipIf(!binaries)('a failover under a burst of every kind of write', () => {
  it('REDIS_MIN_REPLICAS=1: purchases, rental uploads, check-ins, reward credits and a lock: 0 lost, 0 doubled, no 500', async () => {
    // the servers as docs/deploy.md sets them up: a primary without a connected replica refuses writes
    // (down-after 2 s: a loaded machine's slow pings must not make the Sentinels fail over twice)
    const setup = await startSentinelSetup({ serverArgs: ['--min-replicas-to-write', '1', '--min-replicas-max-lag', '10'], downAfterMs: 2000 });
    setups.push(setup);
    const secret = newWebhookSecret();
    peers = await startPaymentStandins({ webhookSecret: secret });
    // one DATA_DIR for both: the uploaded files are shared (a shared disk here; S3 in docs/deploy.md)
    const ha = { REDIS_SENTINELS: setup.sentinelList, REDIS_SENTINEL_NAME: setup.name, REDIS_MIN_REPLICAS: '1', REDIS_PREFIX: 'burst:', LOG_LEVEL: 'info', DATA_DIR: tempDir('ha-burst') };
    for (const name of ['ha-burst-1', 'ha-burst-2']) hubs.push(await startHubProcess(paymentHubEnv(peers, secret, name, { extra: ha }), 60_000));
    const [h1, h2] = hubs as [HubProcess, HubProcess];
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
    const old = (await setup.currentPrimary())!;
    const killer = (async () => {
      while (acked < 20) await sleep(5);
      await setup.primary.kill('SIGKILL');
      await setup.waitFailover(old);
      await setup.primary.restart();
    })();
    await Promise.all([purchases(), rental(), checkins(), credits(), killer]);
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
    console.log(JSON.stringify({ failover_burst: { acknowledged: acked, statuses: Object.fromEntries(statuses), doubled_applications: doubledApplications, doubled_credits: doubledCredits } }));
    expect(buys).toHaveLength(18);
    expect(applications).toHaveLength(12);
    expect(checkedIn).toHaveLength(30);
    expect(credited).toHaveLength(30);
    // a 503 whose write had landed (its WAIT fell short, or the answer was lost) and its retry make
    // one: the application or credit and its answer under the key land in one atomic update
    expect(doubledApplications).toBe(0);
    expect(doubledCredits).toBe(0);
  }, 400_000);
});
