import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { leafHash, verifyInclusion } from '../../src/payment/merkle.js';
import { chainLeafData, newWebhookSecret, startPaymentStandins, type PaymentStandins } from '../../src/payment/standins.js';
import { signIn } from '../support/auth.js';
import { paymentHubEnv } from '../support/payment.js';
import { call, until } from '../support/http.js';

const silent = pino({ level: process.env.TEST_LOG ? 'error' : 'silent' });
let n = 0;
const key = () => `k-${Date.now()}-${++n}`;

describe('payment relay over HTTP', () => {
  let peers: PaymentStandins;
  let maru: Maru;
  let base: string;
  let op: string;
  const secret = newWebhookSecret();
  const clock = new ManualClock(Date.now());

  beforeAll(async () => {
    peers = await startPaymentStandins({ webhookSecret: secret });
    maru = await startMaru(
      loadConfig(paymentHubEnv(peers, secret, 'payment-http', { chainKey: true, extra: { PEG_TIMEOUT_MS: '1500', PAYMENT_POSTS_PER_MINUTE: '40', OUTBOX_RETRY_MIN_MS: '50', OUTBOX_RETRY_MAX_MS: '200' } })),
      { clock, logger: silent },
    );
    base = maru.url;
    op = await signIn(base, ['operator'], 'payops');
  });
  afterAll(async () => {
    await maru?.stop();
    await peers?.close();
  });

  const as = async (user: string) => ({ authorization: `Bearer ${await peers.banking.issueToken(user)}` });
  const postK = async (path: string, body: unknown, headers: Record<string, string>, k = key()) => call(base, 'POST', path, body, { 'idempotency-key': k, ...headers });

  async function topUp(user: string, krw: number) {
    const h = await as(user);
    const r = await fetch(`${base}/api/token/onramp`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/json', 'idempotency-key': key(), ...h },
      body: JSON.stringify({ amount_krw: krw, method: 'card' }),
    });
    expect(r.status).toBe(303);
    const loc = new URL(r.headers.get('location')!);
    expect(loc.origin).toBe(peers.banking.url);
    const done = await peers.banking.confirm(loc.searchParams.get('ref')!, loc.searchParams);
    expect(done.webhook_status).toBe(200);
    return done;
  }

  it('lists the five challenges', async () => {
    const r = await call(base, 'GET', '/api/token/challenges');
    expect(r.status).toBe(200);
    expect(r.body.challenges).toHaveLength(5);
    for (const c of r.body.challenges) expect(Object.keys(c).sort()).toEqual(['account_size', 'challenge_id', 'entry_fee', 'name']);
  });

  it('refuses missing, expired, badly signed tokens and another user', async () => {
    expect((await call(base, 'GET', '/api/token/wallet')).status).toBe(401);
    const expired = await peers.banking.issueToken('alice', { expiresInS: -10 });
    const r = await call(base, 'GET', '/api/token/wallet', undefined, { authorization: `Bearer ${expired}` });
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toContain('Bearer');
    const good = await peers.banking.issueToken('alice');
    const tampered = good.slice(0, -4) + (good.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    expect((await call(base, 'GET', '/api/token/wallet', undefined, { authorization: `Bearer ${tampered}` })).status).toBe(401);
    const wrongAud = await peers.banking.issueToken('alice', { audience: 'other' });
    expect((await call(base, 'GET', '/api/token/wallet', undefined, { authorization: `Bearer ${wrongAud}` })).status).toBe(401);
    const other = await postK('/api/token/challenge/buy', { challenge_id: 'starter_10k', user_id: 'bob' }, await as('alice'));
    expect(other.status).toBe(403);
  });

  it('on-ramps once per banking payment, buys a challenge, and refuses what it cannot afford', async () => {
    const h = await as('alice');
    const poor = await postK('/api/token/challenge/buy', { challenge_id: 'starter_10k', user_id: 'alice' }, h);
    expect(poor.status).toBe(409);
    expect(poor.body.error.code).toBe('insufficient_balance');
    expect(poor.body.error.details.onramp).toBe('/api/token/onramp');

    const pay = await topUp('alice', 500_000);
    const w1 = (await call(base, 'GET', '/api/token/wallet', undefined, h)).body;
    expect(BigInt(w1.balance)).toBeGreaterThan(900n * 10n ** 6n);
    // the same banking payment confirmed again credits nothing
    const again = await peers.banking.confirm([...peers.banking.state.payments.values()].find((p) => p.id === pay.payment_id)!.ref, new URLSearchParams({ amount_krw: '500000', notify: `${base}/api/token/banking/webhook` }));
    expect(again.webhook_status).toBe(200);
    expect((await call(base, 'GET', '/api/token/wallet', undefined, h)).body.balance).toBe(w1.balance);

    const k = key();
    const buy = await postK('/api/token/challenge/buy', { challenge_id: 'starter_10k', user_id: 'alice' }, h, k);
    expect(buy.status).toBe(200);
    expect(buy.body).toMatchObject({ ok: true, broker_account: expect.stringMatching(/^BA-/), receipt_hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    // replay: same key same body = first answer; other body = 422
    const replay = await postK('/api/token/challenge/buy', { challenge_id: 'starter_10k', user_id: 'alice' }, h, k);
    expect(replay.body).toEqual(buy.body);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect((await postK('/api/token/challenge/buy', { challenge_id: 'pro_100k', user_id: 'alice' }, h, k)).status).toBe(422);
    expect((await call(base, 'POST', '/api/token/challenge/buy', { challenge_id: 'pro_100k', user_id: 'alice' }, h)).status).toBe(400);

    const w2 = (await call(base, 'GET', '/api/token/wallet', undefined, h)).body;
    expect(BigInt(w1.balance) - BigInt(w2.balance)).toBe(100n * 10n ** 6n);
    expect(w2.history.length).toBeGreaterThanOrEqual(2);

    const peg = await call(base, 'GET', '/api/token/peg/starter_10k', undefined, h);
    expect(peg.status).toBe(200);
    expect(peg.body.peg_rate).toMatch(/^2\.\d{6}$/);
    expect(peg.body.inputs).toHaveLength(3);

    // the broker account is created and the receipt recorded on the chain, with an inclusion proof
    await until('broker account', () => peers.broker.state.accounts.has(buy.body.broker_account));
    const rc = await until('chain link', async () => {
      const r = await call(base, 'GET', `/api/token/receipt/${buy.body.receipt_hash}`, undefined, h);
      return r.body.proof ? r : undefined;
    });
    const leaf = leafHash(chainLeafData(`receipt:${buy.body.receipt_hash}`, 'receipt', { hash: buy.body.receipt_hash, prev_hash: rc.body.receipt.prev_hash, n: rc.body.receipt.n, kind: 'challenge_purchase' }));
    expect(leaf.toString('hex')).toBe(rc.body.proof.leaf_hash);
    expect((await call(base, 'GET', `/api/token/receipt/${buy.body.receipt_hash}`, undefined, await as('mallory'))).status).toBe(404);
    const mine = await call(base, 'GET', '/api/token/receipts?limit=1', undefined, h);
    expect(mine.body.receipts[0].receipt_hash).toBe(buy.body.receipt_hash);
    expect(mine.body.page.total).toBe(2); // the on-ramp and the purchase
    expect(verifyInclusion(leaf, rc.body.proof.leaf_index, rc.body.proof.tree_size, rc.body.proof.audit_path.map((x: string) => Buffer.from(x, 'hex')), Buffer.from(rc.body.proof.root, 'hex'))).toBe(true);
    // the hub checked the proof against the chain's signed head it had verified
    expect(rc.body.verified).toBe(true);
    expect(rc.body.sth.tree_size).toBe(rc.body.proof.tree_size);
    expect(rc.body.sth.root).toBe(rc.body.proof.root);
  });

  it('refuses bad input on every user route', async () => {
    const h = await as('carol');
    const cases: [string, unknown, number, string?][] = [
      ['/api/token/challenge/buy', { challenge_id: 'nope', user_id: 'carol' }, 404, 'unknown_challenge'],
      ['/api/token/challenge/buy', { challenge_id: 'starter_10k' }, 400],
      ['/api/token/onramp', { amount_krw: -5, method: 'card' }, 400],
      ['/api/token/onramp', { amount_krw: 1.5, method: 'card' }, 400],
      ['/api/token/onramp', { amount_krw: 10, method: 'cash' }, 400],
      ['/api/token/onramp', { amount_krw: 10 ** 12, method: 'card' }, 400],
      ['/api/token/offramp', { amount: '0' }, 400],
      ['/api/token/offramp', { amount: '1'.padEnd(40, '0') }, 400],
      ['/api/token/offramp', { amount: '1000000' }, 409, 'insufficient_balance'],
      ['/api/token/payout/request', { week: '2026-W99' }, 400, 'invalid_week'],
      ['/api/token/payout/request', { week: 'last week' }, 400],
      ['/api/token/payout/request', { week: '2099-W01' }, 400, 'week_not_finished'],
    ];
    for (const [path, body, status, code] of cases) {
      const r = await postK(path, body, h);
      expect({ path, body, status: r.status, err: r.body.error?.code }).toMatchObject({ path, body, status });
      if (code) expect(r.body.error.code).toBe(code);
    }
    expect((await call(base, 'GET', '/api/token/wallet?limit=0', undefined, h)).status).toBe(400);
    expect((await call(base, 'GET', '/api/token/peg/starter_10k', undefined, h)).status).toBe(404);
    expect((await call(base, 'GET', '/api/token/receipt/xyz', undefined, h)).status).toBe(400);
    expect((await call(base, 'GET', `/api/token/receipt/${'a'.repeat(64)}`)).status).toBe(401);
    expect((await call(base, 'GET', `/api/token/receipt/${'a'.repeat(64)}`, undefined, h)).status).toBe(404);
    // webhooks: unsigned, wrong signature, stale
    const body = JSON.stringify({ type: 'payment.confirmed', data: { payment_id: 'bp_x', ref: 'or_x', amount_krw: 1, usd_micro: 1 } });
    expect((await call(base, 'POST', '/api/token/banking/webhook', body)).status).toBe(401);
    const { webhookSignature } = await import('../../src/payment/standins.js');
    const old = Math.floor(clock.now() / 1000) - 600;
    const stale = await call(base, 'POST', '/api/token/banking/webhook', body, { 'webhook-id': 'bp_x', 'webhook-timestamp': String(old), 'webhook-signature': webhookSignature(secret, 'bp_x', old, body) });
    expect(stale.status).toBe(401);
  });

  it('answers 503 and charges nothing when the price providers are down; two of three suffice', async () => {
    const h = await as('dave');
    await topUp('dave', 300_000);
    const before = (await call(base, 'GET', '/api/token/wallet', undefined, h)).body.balance;
    peers.prices[0]!.knobs.failRate = 1;
    peers.prices[1]!.knobs.delayMs = 3000; // slower than PEG_TIMEOUT_MS
    const down = await postK('/api/token/challenge/buy', { challenge_id: 'starter_10k', user_id: 'dave' }, h);
    expect(down.status).toBe(503);
    expect(down.body.error.code).toBe('peg_unavailable');
    expect((await call(base, 'GET', '/api/token/wallet', undefined, h)).body.balance).toBe(before);
    peers.prices[1]!.knobs.delayMs = 0;
    const two = await postK('/api/token/challenge/buy', { challenge_id: 'starter_10k', user_id: 'dave' }, h);
    expect(two.status).toBe(200);
    const peg = await call(base, 'GET', '/api/token/peg/starter_10k', undefined, h);
    expect(peg.body.inputs.filter((i: { excluded?: string }) => i.excluded)).toHaveLength(1);
    peers.prices[0]!.knobs.failRate = 0;
  });

  it('keeps paying while the chain is down and records later', async () => {
    const h = await as('erin');
    peers.chain.knobs.failRate = 1;
    await topUp('erin', 200_000);
    const buy = await postK('/api/token/challenge/buy', { challenge_id: 'starter_10k', user_id: 'erin' }, h);
    expect(buy.status).toBe(200);
    expect((await call(base, 'GET', `/api/token/receipt/${buy.body.receipt_hash}`, undefined, h)).body.chain).toBeNull();
    peers.chain.knobs.failRate = 0;
    await until('recorded after the chain returns', async () => {
      clock.advance(1000); // the outbox's backoff runs on the hub clock
      return (await call(base, 'GET', `/api/token/receipt/${buy.body.receipt_hash}`, undefined, h)).body.chain;
    });
  });

  it('operators: fail pays learning credit, pass + fills + payout; routes need the operator role', async () => {
    const h = await as('frank');
    await topUp('frank', 600_000);
    expect((await call(base, 'GET', '/api/token/ops/reviews')).status).toBe(401);
    const staff = await signIn(base, ['staff']);
    expect((await call(base, 'GET', '/api/token/ops/reviews', undefined, { authorization: `Bearer ${staff}` })).status).toBe(403);
    const opH = { authorization: `Bearer ${op}` };
    const b1 = await postK('/api/token/challenge/buy', { challenge_id: 'starter_10k', user_id: 'frank' }, h);
    const c1 = (await call(base, 'GET', '/api/token/peg/starter_10k', undefined, h)).body.challenge;
    expect(b1.status).toBe(200);
    const fail = await postK(`/api/token/ops/challenges/${c1}/judge`, { outcome: 'fail', reason: 'manual check' }, opH);
    expect(fail.body).toMatchObject({ state: 'failed' });
    expect(fail.body.learning_credit).toBe((30n * 10n ** 6n).toString());
    expect((await postK(`/api/token/ops/challenges/${c1}/judge`, { outcome: 'pass', reason: 'again' }, opH)).status).toBe(409);
    // learning credit pays first on the next purchase
    await postK('/api/token/challenge/buy', { challenge_id: 'starter_10k', user_id: 'frank' }, h);
    expect((await call(base, 'GET', '/api/token/wallet', undefined, h)).body.learning_credit).toBe('0');
    const c2 = (await call(base, 'GET', '/api/token/peg/starter_10k', undefined, h)).body.challenge;
    // a fill over the 8 % profit target passes it (engine rule)
    const ev = await postK(`/api/token/ops/challenges/${c2}/events`, { type: 'fill', event_id: 'f1', realized_cents: 90_000 }, opH);
    expect(ev.body.state).toBe('passed');
    const scale = await postK('/api/token/challenge/scale-up', { challenge_id: c2 }, h);
    expect(scale.status).toBe(200);
    expect((await call(base, 'GET', '/api/token/wallet', undefined, h)).body.collateral).toBe(scale.body.collateral);
    await postK('/api/token/ops/pool/fund', { amount: (100_000n * 10n ** 6n).toString() }, opH);
    await postK(`/api/token/ops/challenges/${c2}/events`, { type: 'fill', event_id: 'f2', realized_cents: 10_000 }, opH);
    const week = (await import('../../src/payment/rules.js')).payoutWeekOf(clock.now());
    clock.set((await import('../../src/payment/rules.js')).payoutAt(week) + 1000);
    // tokens are checked against the hub clock, which now stands days ahead
    const h2 = { authorization: `Bearer ${await peers.banking.issueToken('frank', { expiresInS: 30 * 86_400 })}` };
    const p = await postK('/api/token/payout/request', { week }, h2);
    expect(p.status).toBe(200);
    expect(p.body.status).toBe('paid');
    expect(BigInt(p.body.amount)).toBeGreaterThan(0n);
    expect(BigInt(p.body.trader) + BigInt(p.body.platform)).toBe(BigInt(p.body.amount));
    const p2 = await postK('/api/token/payout/request', { week }, h2);
    expect(p2.body).toEqual(p.body);
    const check = await call(base, 'GET', '/api/token/ops/ledger/check', undefined, { authorization: `Bearer ${await signIn(base, ['operator'])}` });
    expect(check.body.ledger).toMatchObject({ ok: true, mismatches: [], negative: [] });
    expect(check.body.ledger.debits).toBe(check.body.ledger.credits);
    expect(check.body.receipts.ok).toBe(true);
    // a funded account's second violation within 30 days deducts 10 % of the collateral; withdrawal refunds the rest
    const op2 = { authorization: `Bearer ${await signIn(base, ['operator'])}` };
    const collateral = BigInt(scale.body.collateral);
    await postK(`/api/token/ops/challenges/${c2}/events`, { type: 'violation', event_id: 'v1', rule: 'daily_loss' }, op2);
    await postK(`/api/token/ops/challenges/${c2}/events`, { type: 'violation', event_id: 'v2', rule: 'max_drawdown' }, op2);
    const afterDeduct = BigInt((await call(base, 'GET', '/api/token/wallet', undefined, h2)).body.collateral);
    expect(afterDeduct).toBe(collateral - collateral / 10n);
    const before = BigInt((await call(base, 'GET', '/api/token/wallet', undefined, h2)).body.balance);
    const wd = await postK('/api/token/challenge/withdraw', { challenge_id: c2 }, h2);
    expect(wd.body).toMatchObject({ state: 'withdrawn', refunded: afterDeduct.toString() });
    const after = (await call(base, 'GET', '/api/token/wallet', undefined, h2)).body;
    expect(after.collateral).toBe('0');
    expect(BigInt(after.balance) - before).toBe(afterDeduct);
    clock.set(Date.now()); // back to the banking service's time (webhook timestamps, token expiry)
  });

  it('off-ramps with 1.4 % to the banking service, pages the history, and answers 409 while the first request runs', async () => {
    const h = await as('gina');
    await topUp('gina', 135_000); // about 250 tokens
    // the banking service is down: the off-ramp is booked at once and reaches the bank when it returns
    peers.banking.knobs.failRate = 1;
    const off = await postK('/api/token/offramp', { amount: '100000000' }, h);
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ amount: '100000000', fee: '1400000', net: '98600000' });
    expect(peers.banking.state.offramps.size).toBe(0);
    peers.banking.knobs.failRate = 0;
    await until('the bank got the off-ramp', () => {
      clock.advance(1000); // the outbox's backoff runs on the hub clock
      return peers.banking.state.offramps.size > 0;
    });
    const p1 = await call(base, 'GET', '/api/token/wallet?limit=1&offset=0', undefined, h);
    const p2 = await call(base, 'GET', '/api/token/wallet?limit=1&offset=1', undefined, h);
    expect(p1.body.history).toHaveLength(1);
    expect(p1.body.page.total).toBe(3);
    expect(p2.body.history[0].id).not.toBe(p1.body.history[0].id);
    // a slow peg keeps the first purchase running; the same key again meanwhile is 409
    // (the peg is held for 1 s, within PEG_TIMEOUT_MS, so the second request meets the first in flight even on a busy machine)
    for (const p of peers.prices) p.knobs.delayMs = 1000;
    const k = key();
    const first = postK('/api/token/challenge/buy', { challenge_id: 'starter_10k', user_id: 'gina' }, h, k);
    await new Promise((r) => setTimeout(r, 300));
    const second = await postK('/api/token/challenge/buy', { challenge_id: 'starter_10k', user_id: 'gina' }, h, k);
    for (const p of peers.prices) p.knobs.delayMs = 0;
    expect(second.status).toBe(409);
    expect(second.body.error.code).toBe('idempotency_in_progress');
    expect((await first).status).toBe(200);
    expect((await postK('/api/token/challenge/buy', { challenge_id: 'starter_10k', user_id: 'gina' }, h, k)).status).toBe(200);
    expect((await call(base, 'POST', '/api/token/offramp', { amount: '1' }, { ...h, 'idempotency-key': 'x'.repeat(256) })).body.error.code).toBe('idempotency_key_invalid');
  });

  it('refuses bad input on the operator routes', async () => {
    const opH = { authorization: `Bearer ${await signIn(base, ['operator'])}` };
    const cases: [string, unknown, number][] = [
      ['/api/token/ops/challenges/c_nope/judge', { outcome: 'pass', reason: 'x' }, 404],
      ['/api/token/ops/challenges/c_nope/judge', { outcome: 'maybe', reason: 'x' }, 400],
      ['/api/token/ops/challenges/c_nope/judge', { outcome: 'pass' }, 400],
      ['/api/token/ops/reviews/rv_nope/approve', { reason: 'x' }, 404],
      ['/api/token/ops/reviews/rv_nope/ignore', { reason: 'x' }, 400],
      ['/api/token/ops/pool/fund', { amount: -1 }, 400],
      ['/api/token/ops/pool/fund', { amount: 1.5 }, 400],
      ['/api/token/ops/payout-runs/2026-W60', {}, 400],
      ['/api/token/ops/challenges/c_nope/events', { type: 'fill', event_id: 'e', realized_cents: 1.5 }, 400],
    ];
    for (const [path, body, status] of cases) {
      const r = await postK(path, body, opH);
      expect({ path, status: r.status }).toEqual({ path, status });
    }
    expect((await call(base, 'GET', '/api/token/ops/payout-runs/2020-W01', undefined, opH)).status).toBe(404);
    expect((await call(base, 'GET', '/api/token/ops/reviews?state=odd', undefined, opH)).status).toBe(400);
  });

  it('bounds each user\'s state-changing requests per minute', async () => {
    const h = await as('hal');
    const statuses: number[] = [];
    for (let i = 0; i < 41; i++) statuses.push((await postK('/api/token/payout/request', { week: '2099-W01' }, h)).status);
    expect(statuses.slice(0, 40).every((s) => s === 400)).toBe(true);
    expect(statuses[40]).toBe(429);
    // another user is not affected
    expect((await postK('/api/token/payout/request', { week: '2099-W01' }, await as('ivy'))).status).toBe(400);
  });
});
