import { afterAll, describe, expect, it, vi } from 'vitest';
import { outboxKey, outboxPartition } from '../../src/outbox.js';
import { LEDGER_NEAR } from '../../src/payment/receipts.js';
import { ManualClock } from '../../src/clock.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Json, Store, Write } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { refusal } from '../support/refusal.js';
import { recordingStore } from '../support/recording-store.js';
import { flatPriceSource } from '../support/payment.js';

// The challenge engine (src/payment/lifecycle.ts; docs/payment.md "Challenges"): active -> failed |
// passed -> funded -> withdrawn. A failed challenge pays learning credit = entry fee x 0.3, rounded
// down, from escrow; a pass by the profit target (8 % of the account size) funds the account and
// its later fills count toward the weekly payout; scale-up posts collateral = account size x 3 % x
// peg, rounded up, from the wallet to the challenge's own sub-account; a funded challenge's second
// violation within 30 days (the window's older end excluded, this violation counted) deducts
// `violationDeductPercent` of the posted collateral, rounded down and at most what the sub-account
// holds, to escrow; withdrawal refunds what the sub-account holds (for collateral in the former
// shared account, the challenge's figure at most). Each money movement has its receipt, and each
// step its chain event. The modules are loaded afresh in each test.
const load = async () => {
  vi.resetModules();
  return {
    ...(await import('../../src/payment/lifecycle.js')),
    ...(await import('../../src/payment/ledger.js')),
    ...(await import('../../src/payment/service.js')),
    ...(await import('../../src/payment/receipts.js')),
    rules: await import('../../src/payment/rules.js'),
    PegService: (await import('../../src/payment/peg.js')).PegService,
    Idempotency: (await import('../../src/idempotency.js')).Idempotency,
  };
};

const T0 = Date.parse('2026-11-18T12:00:00Z'); // a Wednesday
const DAY = 86_400_000;
const UNIT = 1_000_000n;
const stores: Store[] = [];
afterAll(() => Promise.all(stores.map((s) => s.close())));

const source = (name: string) => flatPriceSource(name);

type Rec = Record<string, Json>;

async function world(opts: { deductPercent?: bigint; noKick?: boolean } = {}) {
  const m = await load();
  const raw = await openLmdbStore({ path: tempDir('lifecycle-rules') });
  stores.push(raw);
  const { store, writes } = recordingStore(raw);
  const clock = new ManualClock(T0);
  let kicks = 0;
  const peg = new m.PegService([source('p0'), source('p1'), source('p2')], { windowMs: 300_000, maxGapMs: 60_000, minProviders: 2 });
  const idem = new m.Idempotency(store, clock);
  const svc = new m.PaymentService({ store, clock, peg, idempotency: idem, maxOnrampKrw: 1e7, ...(opts.noKick ? {} : { onKick: () => void kicks++ }) });
  const life = new m.ChallengeLifecycle(svc, store, { rules: m.rules.DEFAULT_RULES, violationDeductPercent: opts.deductPercent ?? 10n });
  const move = (id: string, debit: string, credit: string, amount: bigint) =>
    m.ledgerUpdate(store, () => clock.now(), m.transferKeys([{ id, debit, credit, amount, code: 'test' }]), (tx) => (tx.transfer({ id, debit, credit, amount, code: 'test' }), { result: undefined }));
  const fund = (id: string, credit: string, amount: bigint) => move(id, 'bank', credit, amount);
  const bal = async (account: string) => m.balanceOf(await m.readAccount(store, account));
  /** A challenge written directly, in any state, with a chosen size, fee and peg. */
  const put = async (id: string, over: Partial<Record<string, Json>> = {}) => {
    const rec = {
      id, kind: 'starter_10k', user: 'u1', state: 'active', account_size: 10_000, entry_fee: String(100n * UNIT),
      peg: { peg_ppm: '1380000000', peg_rate: '1380.000000', snapshot_ts: 0, window_ms: 300_000, inputs: [] },
      broker_account: `BA-${id}`, receipt_hash: '', started_at: T0, stats: { realized_cents: 0, peak_cents: 0, day: '', day_cents: 0 }, violations: [], collateral: '0',
      ...over,
    };
    await raw.set(m.PK.challenge(id), m.challengeRecords.encode(rec as never) as Json);
    await raw.index(m.PK.userChallenges(String(rec.user)), id, 1);
    return rec;
  };
  const get = async (id: string) => (await raw.get(m.PK.challenge(id))) as Rec;
  const transfer = async (id: string) => (await raw.get(m.K.transfer(id))) as Rec | undefined;
  const receipt = async (hash: string) => (await raw.get(m.RK.receipt(hash))) as Rec;
  const chain = async (id: string) => ((await raw.get(outboxKey(id, outboxPartition(LEDGER_NEAR)))) as { dest: string; payload: Json; createdAt: number } | undefined);
  const ticket = async (key: string) => {
    const b = await idem.begin('t', key, 'fp');
    if (!('ticket' in b)) throw new Error('expected a ticket');
    return b.ticket;
  };
  return { ...m, raw, store, clock, svc, life, idem, writes, fund, move, bal, put, get, transfer, receipt, chain, ticket, kicks: () => kicks };
}

describe('failing a challenge: learning credit = entry fee x 0.3, rounded down', () => {
  it('a violation of an active challenge fails it and pays 30 % of the 100-token fee back as learning credit', async () => {
    const w = await world();
    await w.fund('f', w.userAccount('u1', 'wallet'), 100n * UNIT);
    const c = ((await w.svc.buy('u1', 'starter_10k', {})) as { challenge: string }).challenge;
    w.clock.advance(5000);
    const now = w.clock.now();
    expect(await w.life.event(c, { type: 'violation', event_id: 'v1', rule: 'daily_loss', ts: now - 10 })).toEqual({ applied: true, state: 'failed', outcome: 'fail:daily_loss' });
    expect(await w.bal(w.userAccount('u1', 'credit'))).toBe(30n * UNIT);
    expect(await w.bal('escrow')).toBe(70n * UNIT);
    const rec = await w.get(c);
    expect(rec).toMatchObject({ state: 'failed', judged: { outcome: 'fail', by: 'engine', reason: 'daily_loss', ts: now }, violations: [{ rule: 'daily_loss', ts: now - 10 }] });
    expect(await w.raw.get(w.PK.userKind('u1', 'starter_10k'))).toEqual({ id: c, state: 'failed' });
    expect(await w.transfer(`credit:${c}`)).toMatchObject({ debit: 'escrow', credit: 'u:u1:credit', amount: String(30n * UNIT), code: 'learning_credit' });
    // its receipt, the violation's chain event and the judged one
    const head = (await w.raw.get(w.RK.head)) as { hash: string };
    expect(await w.receipt(head.hash)).toMatchObject({ kind: 'learning_credit', user: 'u1', amount: String(30n * UNIT), transfers: [`credit:${c}`], ref: c, ts: now });
    expect(await w.chain(`violation:${c}:v1`)).toMatchObject({ dest: 'chain', payload: { kind: 'risk_violation', data: { challenge: c, rule: 'daily_loss', ts: now - 10 } }, createdAt: now });
    expect(await w.chain(`violation:${c}:judged`)).toMatchObject({ payload: { kind: 'risk_violation', data: { challenge: c, rule: 'daily_loss', ts: now } }, createdAt: now });
    expect(await w.raw.range(w.PK.audit)).toEqual([{ action: 'judge', challenge: c, outcome: 'fail', by: 'engine', reason: 'daily_loss', ts: now }]);
  });

  it('on both sides of a whole unit: fees 3, 4, 7, 10 and 1,000,003 give 0, 1, 2, 3 and 300,000', async () => {
    const w = await world();
    await w.fund('e', 'escrow', 10n * UNIT);
    for (const [fee, credit] of [[3n, 0n], [4n, 1n], [7n, 2n], [10n, 3n], [1_000_003n, 300_000n]] as const) {
      const id = `c_fee${fee}`;
      await w.put(id, { entry_fee: String(fee), user: `u${fee}` });
      const body = (await w.life.judge(id, 'fail', 'op', 'by hand')) as Rec;
      expect(body, String(fee)).toMatchObject({ challenge: id, state: 'failed', learning_credit: String(credit) });
      expect(await w.bal(w.userAccount(`u${fee}`, 'credit')), String(fee)).toBe(credit);
      if (credit === 0n) {
        expect(body.receipt_hash).toBeNull();
        expect(await w.transfer(`credit:${id}`)).toBeUndefined();
        expect(await w.chain(`violation:${id}:judged`)).toBeUndefined();
      } else {
        expect(body.receipt_hash).toMatch(/^[0-9a-f]{64}$/);
        expect(await w.receipt(body.receipt_hash as string)).toMatchObject({ kind: 'learning_credit', amount: String(credit), user: `u${fee}` });
        expect(await w.chain(`violation:${id}:judged`)).toMatchObject({ payload: { kind: 'risk_violation', data: { challenge: id, rule: 'by hand' } } });
      }
    }
  });

  it('an operator judgement is audited and answers with the new state; a second one is 409 challenge_not_active', async () => {
    const w = await world();
    await w.fund('e', 'escrow', 10n * UNIT);
    await w.put('c1', { entry_fee: '10' });
    w.clock.advance(7);
    expect(await w.life.judge('c1', 'fail', 'ops', 'broke a rule')).toEqual({ challenge: 'c1', state: 'failed', learning_credit: '3', receipt_hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(w.writes).toContainEqual({ op: 'push', key: 'pay:audit', value: { action: 'judge', challenge: 'c1', outcome: 'fail', by: 'ops', reason: 'broke a rule', ts: T0 + 7 }, cap: 10_000 });
    expect(await w.raw.get(w.PK.userKind('u1', 'starter_10k'))).toEqual({ id: 'c1', state: 'failed' });
    for (const outcome of ['fail', 'pass'] as const) {
      expect(await refusal(w.life.judge('c1', outcome, 'ops', 'again'))).toEqual({ status: 409, code: 'challenge_not_active', message: 'challenge c1 is failed' });
    }
    expect(await w.bal(w.userAccount('u1', 'credit'))).toBe(3n);
  });

  it('a judgement with an Idempotency-Key keeps its answer: the same key answers it again', async () => {
    const w = await world();
    await w.fund('e', 'escrow', 10n * UNIT);
    await w.put('c1', { entry_fee: '10' });
    const t = await w.ticket('k1');
    const first = await w.life.judge('c1', 'fail', 'ops', 'x', { ticket: t });
    expect(await w.raw.get(t.storeKey)).toMatchObject({ state: 'done', answer: { status: 200, body: first as Json } });
    expect(await w.life.judge('c1', 'fail', 'ops', 'x', { ticket: t })).toEqual(first);
    expect(await w.bal(w.userAccount('u1', 'credit'))).toBe(3n);
  });

  it('an unknown challenge is 404', async () => {
    const w = await world();
    for (const p of [w.life.judge('c_none', 'pass', 'ops', 'x'), w.life.event('c_none', { type: 'fill', event_id: 'e', realized_cents: 1, ts: T0 })]) {
      expect(await refusal(p)).toEqual({ status: 404, code: 'challenge_not_found', message: 'no challenge c_none' });
    }
  });
});

describe('passing a challenge', () => {
  it('a fill reaching 8 % of the account size passes it (one cent less does not): funded, on the chain, no credit', async () => {
    const w = await world();
    await w.put('c1');
    expect(await w.life.event('c1', { type: 'fill', event_id: 'f1', realized_cents: 79_999, ts: T0 })).toEqual({ applied: true, state: 'active', outcome: undefined });
    w.clock.advance(1000);
    expect(await w.life.event('c1', { type: 'fill', event_id: 'f2', realized_cents: 1, ts: T0 + 1000 })).toEqual({ applied: true, state: 'passed', outcome: 'pass' });
    const rec = await w.get('c1');
    expect(rec).toMatchObject({ state: 'passed', judged: { outcome: 'pass', by: 'engine', reason: 'profit target reached', ts: T0 + 1000 }, stats: { realized_cents: 80_000, peak_cents: 80_000 } });
    expect(await w.raw.indexRange(w.PK.funded)).toEqual([{ member: 'c1', score: T0 + 1000 }]);
    expect(await w.chain('pass:c1')).toMatchObject({ payload: { kind: 'challenge_pass', data: { challenge: 'c1', by: 'engine', ts: T0 + 1000 } }, createdAt: T0 + 1000 });
    expect(await w.transfer('credit:c1')).toBeUndefined();
    expect(await w.raw.get(w.PK.userKind('u1', 'starter_10k'))).toEqual({ id: 'c1', state: 'passed' });
  });

  it('by hand: learning credit 0 and no receipt', async () => {
    const w = await world();
    await w.fund('e', 'escrow', 10n * UNIT);
    await w.put('c1');
    expect(await w.life.judge('c1', 'pass', 'ops', 'good')).toEqual({ challenge: 'c1', state: 'passed', learning_credit: '0', receipt_hash: null });
    expect(await w.bal(w.userAccount('u1', 'credit'))).toBe(0n);
    expect(await w.bal('escrow')).toBe(10n * UNIT);
  });

  it('a day loss of 5 % fails by daily_loss, a drawdown of 10 % by max_drawdown', async () => {
    const w = await world();
    await w.fund('e', 'escrow', 1000n * UNIT);
    await w.put('c1', { user: 'a' });
    expect(await w.life.event('c1', { type: 'fill', event_id: 'f', realized_cents: -49_999, ts: T0 })).toMatchObject({ state: 'active', outcome: undefined });
    expect(await w.life.event('c1', { type: 'fill', event_id: 'g', realized_cents: -1, ts: T0 })).toEqual({ applied: true, state: 'failed', outcome: 'fail:daily_loss' });
    expect(await w.get('c1')).toMatchObject({ judged: { reason: 'daily_loss' } });
    expect(await w.bal(w.userAccount('a', 'credit'))).toBe(30n * UNIT);
    await w.put('c2', { user: 'b' });
    await w.life.event('c2', { type: 'fill', event_id: 'up', realized_cents: 70_000, ts: T0 - 4 * DAY });
    await w.life.event('c2', { type: 'fill', event_id: 'd1', realized_cents: -45_000, ts: T0 - 3 * DAY });
    await w.life.event('c2', { type: 'fill', event_id: 'd2', realized_cents: -45_000, ts: T0 - 2 * DAY });
    expect(await w.life.event('c2', { type: 'fill', event_id: 'd3', realized_cents: -9_999, ts: T0 - DAY })).toMatchObject({ state: 'active', outcome: undefined });
    expect(await w.life.event('c2', { type: 'fill', event_id: 'd4', realized_cents: -1, ts: T0 - DAY })).toEqual({ applied: true, state: 'failed', outcome: 'fail:max_drawdown' });
    expect(await w.get('c2')).toMatchObject({ judged: { reason: 'max_drawdown' }, stats: { realized_cents: -30_000, peak_cents: 70_000 } });
  });
});

describe('fills', () => {
  it('count realized, peak and the UTC day (a new day starts from 0), are on the chain, remembered 30 days', async () => {
    const w = await world();
    await w.put('c1');
    const d1 = Date.parse('2026-11-17T10:00:00Z');
    await w.life.event('c1', { type: 'fill', event_id: 'a', realized_cents: 30_000, ts: d1 });
    await w.life.event('c1', { type: 'fill', event_id: 'b', realized_cents: -10_000, ts: d1 + 3_600_000 });
    expect((await w.get('c1')).stats).toEqual({ realized_cents: 20_000, peak_cents: 30_000, day: '2026-11-17', day_cents: 20_000 });
    await w.life.event('c1', { type: 'fill', event_id: 'c', realized_cents: -5_000, ts: d1 + DAY });
    expect((await w.get('c1')).stats).toEqual({ realized_cents: 15_000, peak_cents: 30_000, day: '2026-11-18', day_cents: -5_000 });
    expect(w.writes).toContainEqual({ op: 'set', key: 'pay:fill:c1:a', value: 1, ttlMs: 30 * DAY });
    expect(await w.chain('fill:c1:a')).toMatchObject({ payload: { kind: 'trade_fill', data: { challenge: 'c1', realized_cents: 30_000, ts: d1 } }, createdAt: T0 });
    expect(((await w.chain('fill:c1:a'))!.payload as { data: Rec }).data).toEqual({ challenge: 'c1', realized_cents: 30_000, ts: d1 });
    // an active challenge keeps no weekly P&L
    expect(w.writes.filter((x) => x.key.startsWith('pay:pnl:'))).toEqual([]);
  });

  it('the same event id again changes nothing and kicks nothing', async () => {
    const w = await world();
    await w.put('c1');
    const ev = { type: 'fill', event_id: 'a', realized_cents: 100, ts: T0 } as const;
    expect(await w.life.event('c1', ev)).toEqual({ applied: true, state: 'active', outcome: undefined });
    expect(w.kicks()).toBe(1);
    const before = w.writes.length;
    expect(await w.life.event('c1', ev)).toEqual({ applied: false, state: 'active', outcome: undefined });
    expect(w.writes.length).toBe(before);
    expect(w.kicks()).toBe(1);
    expect((await w.get('c1')).stats).toMatchObject({ realized_cents: 100 });
  });

  it('without a kick hook an event is applied all the same', async () => {
    const w = await world({ noKick: true });
    await w.put('c1');
    expect(await w.life.event('c1', { type: 'fill', event_id: 'a', realized_cents: 100, ts: T0 })).toMatchObject({ applied: true });
  });

  it('realized_cents must be an integer: 400 invalid_amount, nothing recorded', async () => {
    const w = await world();
    await w.put('c1');
    for (const realized_cents of [1.5, Number.NaN, 2 ** 53]) {
      expect(await refusal(w.life.event('c1', { type: 'fill', event_id: 'x', realized_cents, ts: T0 }))).toEqual({ status: 400, code: 'invalid_amount', message: 'realized_cents must be an integer' });
    }
    expect(await w.raw.get('pay:fill:c1:x')).toBeUndefined();
  });

  it('a passed or funded challenge adds its fills to the week they are booked to; a late one says so', async () => {
    const w = await world();
    const { PNL, rules } = w;
    for (const state of ['passed', 'funded']) {
      const id = `c_${state}`;
      await w.put(id, { state });
      await w.life.event(id, { type: 'fill', event_id: 'a', realized_cents: 1_000, ts: T0 });
      await w.life.event(id, { type: 'fill', event_id: 'b', realized_cents: -300, ts: T0 });
      expect(await w.raw.get(PNL(id, rules.payoutWeekOf(T0))), state).toBe(700);
      // a loss of a funded account fails nothing
      await w.life.event(id, { type: 'fill', event_id: 'c', realized_cents: -900_000, ts: T0 });
      expect((await w.get(id)).state).toBe(state);
    }
    expect(PNL('c', 'W')).toBe('pay:pnl:c:W');
    // a fill dated in a week whose payout instant has passed is booked to the week open now
    const week = rules.payoutWeekOf(T0);
    w.clock.set(rules.payoutAt(week) + 1000);
    await w.life.event('c_passed', { type: 'fill', event_id: 'late', realized_cents: 50, ts: T0 });
    const open = rules.payoutWeekOf(w.clock.now());
    expect(open).not.toBe(week);
    expect(await w.raw.get(PNL('c_passed', open))).toBe(50);
    expect(((await w.chain('fill:c_passed:late'))!.payload as { data: Rec }).data).toEqual({ challenge: 'c_passed', realized_cents: 50, ts: T0, late: true, booked_week: open });
  });
});

describe('violations', () => {
  it('are kept, the last 50, and put on the chain; a passed challenge is not failed', async () => {
    const w = await world();
    await w.put('c1', { state: 'passed' });
    for (let i = 0; i < 51; i++) {
      expect(await w.life.event('c1', { type: 'violation', event_id: `v${i}`, rule: `r${i}`, ts: T0 + i })).toEqual({ applied: true, state: 'passed', outcome: undefined });
    }
    const v = (await w.get('c1')).violations as { rule: string; ts: number }[];
    expect(v).toHaveLength(50);
    expect(v[0]).toEqual({ rule: 'r1', ts: T0 + 1 });
    expect(v[49]).toEqual({ rule: 'r50', ts: T0 + 50 });
    expect(await w.chain('violation:c1:v7')).toMatchObject({ payload: { kind: 'risk_violation', data: { challenge: 'c1', rule: 'r7', ts: T0 + 7 } } });
    expect(w.writes.filter((x) => x.op === 'set' && x.key.startsWith('pay:xfer:deduct'))).toEqual([]);
  });
});

describe('scale-up: collateral = account size x 3 % x peg, rounded up', () => {
  it('10,000 USD at 1,380 tokens per USD posts 414,000 tokens from the wallet to the challenge sub-account', async () => {
    const w = await world();
    await w.put('c1', { state: 'passed' });
    const amount = 414_000n * UNIT;
    await w.fund('f', w.userAccount('u1', 'wallet'), amount);
    const body = (await w.life.scaleUp('u1', 'c1', {})) as Rec;
    expect(body).toEqual({ challenge: 'c1', state: 'funded', collateral: String(amount), receipt_hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(await w.bal('collateral_pool:c1')).toBe(amount);
    expect(await w.bal(w.userAccount('u1', 'wallet'))).toBe(0n);
    expect(await w.get('c1')).toMatchObject({ state: 'funded', collateral: String(amount) });
    expect(await w.transfer('collateral:c1')).toMatchObject({ debit: 'u:u1:wallet', credit: 'collateral_pool:c1', amount: String(amount), code: 'collateral', meta: { challenge: 'c1' } });
    expect(await w.receipt(body.receipt_hash as string)).toMatchObject({ kind: 'collateral', user: 'u1', amount: String(amount), transfers: ['collateral:c1'], ref: 'c1', ts: T0 });
  });

  it('rounds up: 333 USD at 1.000001 tokens per USD is 9.990010 tokens, not 9.990009', async () => {
    const w = await world();
    await w.put('c1', { state: 'passed', account_size: 333, peg: { peg_ppm: '1000001', peg_rate: '1.000001', snapshot_ts: 0, window_ms: 300_000, inputs: [] } });
    await w.fund('f', w.userAccount('u1', 'wallet'), 9_990_010n);
    expect(await w.life.scaleUp('u1', 'c1', {})).toMatchObject({ collateral: '9990010' });
  });

  it('a wallet one unit short is 409 insufficient_balance with the shortfall; exactly enough is taken', async () => {
    const w = await world();
    await w.put('c1', { state: 'passed', account_size: 100, peg: { peg_ppm: '1000000', peg_rate: '1.000000', snapshot_ts: 0, window_ms: 300_000, inputs: [] } });
    await w.fund('f', w.userAccount('u1', 'wallet'), 2_999_999n);
    expect(await refusal(w.life.scaleUp('u1', 'c1', {}), { details: true })).toEqual({
      status: 409, code: 'insufficient_balance', message: 'the balance is 1 minor units short; top up through POST /api/token/onramp', details: { shortfall: '1', onramp: '/api/token/onramp' },
    });
    expect((await w.get('c1')).state).toBe('passed');
    await w.fund('g', w.userAccount('u1', 'wallet'), 1n);
    expect(await w.life.scaleUp('u1', 'c1', {})).toMatchObject({ collateral: '3000000', state: 'funded' });
  });

  it('only a passed challenge of the caller: 409 challenge_not_passed, 404 for another user', async () => {
    const w = await world();
    await w.fund('f', w.userAccount('u1', 'wallet'), 10n ** 15n);
    for (const state of ['active', 'failed', 'funded', 'withdrawn']) {
      await w.put(`c_${state}`, { state });
      expect(await refusal(w.life.scaleUp('u1', `c_${state}`, {}))).toEqual({ status: 409, code: 'challenge_not_passed', message: `challenge c_${state} is ${state}; only a passed challenge scales up` });
    }
    await w.put('c1', { state: 'passed' });
    expect(await refusal(w.life.scaleUp('u2', 'c1', {}))).toEqual({ status: 404, code: 'challenge_not_found', message: 'no challenge c1' });
    expect((await w.get('c1')).state).toBe('passed');
  });

  it('with an Idempotency-Key the answer is kept and the same key answers it again', async () => {
    const w = await world();
    await w.put('c1', { state: 'passed' });
    await w.fund('f', w.userAccount('u1', 'wallet'), 10n ** 15n);
    const t = await w.ticket('s1');
    const first = await w.life.scaleUp('u1', 'c1', { ticket: t });
    expect(await w.raw.get(t.storeKey)).toMatchObject({ state: 'done', answer: { status: 200, body: first as Json } });
    expect(await w.life.scaleUp('u1', 'c1', { ticket: t })).toEqual(first);
    expect(await w.bal('collateral_pool:c1')).toBe(414_000n * UNIT);
  });
});

describe('a funded challenge repeated violation deducts from its collateral', () => {
  const funded = async (w: Awaited<ReturnType<typeof world>>, id: string, collateral: bigint) => {
    await w.put(id, { state: 'funded', collateral: String(collateral) });
    await w.move(`collateral:${id}`, 'bank', `collateral_pool:${id}`, collateral);
  };
  const deductions = (w: Awaited<ReturnType<typeof world>>) =>
    w.writes.filter((x): x is Extract<Write, { op: 'set' }> => x.op === 'set' && x.key.startsWith('pay:xfer:deduct:')).map((x) => (x.value as Rec).amount);

  it('the second within 30 days deducts 10 % of the posted collateral, rounded down, to escrow, with its receipt', async () => {
    const w = await world();
    await funded(w, 'c1', 1_009n);
    w.clock.advance(5);
    expect(await w.life.event('c1', { type: 'violation', event_id: 'v1', rule: 'daily_loss', ts: T0 })).toEqual({ applied: true, state: 'funded', outcome: undefined });
    expect(deductions(w)).toEqual([]);
    await w.life.event('c1', { type: 'violation', event_id: 'v2', rule: 'daily_loss', ts: T0 + 1 });
    expect(deductions(w)).toEqual(['100']);
    expect(await w.bal('collateral_pool:c1')).toBe(909n);
    expect(await w.bal('escrow')).toBe(100n);
    expect(await w.transfer('deduct:c1:v2')).toMatchObject({ debit: 'collateral_pool:c1', credit: 'escrow', amount: '100', code: 'collateral_deduction', meta: { challenge: 'c1' } });
    const head = (await w.raw.get(w.RK.head)) as { hash: string };
    expect(await w.receipt(head.hash)).toMatchObject({ kind: 'collateral_deduction', user: 'u1', amount: '100', transfers: ['deduct:c1:v2'], ref: 'c1', ts: T0 + 5 });
    // the third deducts again, from the posted figure, not from what is left
    await w.life.event('c1', { type: 'violation', event_id: 'v3', rule: 'daily_loss', ts: T0 + 2 });
    expect(deductions(w)).toEqual(['100', '100']);
    expect((await w.get('c1')).collateral).toBe('1009');
  });

  it('another percentage when configured: 25 % of 1,003 is 250', async () => {
    const w = await world({ deductPercent: 25n });
    await funded(w, 'c1', 1_003n);
    await w.life.event('c1', { type: 'violation', event_id: 'v1', rule: 'x', ts: T0 });
    await w.life.event('c1', { type: 'violation', event_id: 'v2', rule: 'x', ts: T0 });
    expect(deductions(w)).toEqual(['250']);
  });

  it('30 days: an earlier violation exactly 30 days before does not count, one a millisecond later does', async () => {
    const w = await world();
    await funded(w, 'c1', 1_000n);
    await w.life.event('c1', { type: 'violation', event_id: 'v1', rule: 'x', ts: T0 });
    await w.life.event('c1', { type: 'violation', event_id: 'v2', rule: 'x', ts: T0 + 30 * DAY });
    expect(deductions(w)).toEqual([]);
    await funded(w, 'c2', 1_000n);
    await w.life.event('c2', { type: 'violation', event_id: 'v1', rule: 'x', ts: T0 + 1 });
    await w.life.event('c2', { type: 'violation', event_id: 'v2', rule: 'x', ts: T0 + 30 * DAY });
    expect(deductions(w)).toEqual(['100']);
  });

  it('a violation dated before one already counted does not count that later one', async () => {
    const w = await world();
    await funded(w, 'c1', 1_000n);
    await w.life.event('c1', { type: 'violation', event_id: 'v1', rule: 'x', ts: T0 + DAY });
    await w.life.event('c1', { type: 'violation', event_id: 'v0', rule: 'x', ts: T0 });
    expect(deductions(w)).toEqual([]);
    // at the same instant both count
    await w.life.event('c1', { type: 'violation', event_id: 'v2', rule: 'x', ts: T0 });
    expect(deductions(w)).toEqual(['100']);
  });

  it('at most what the sub-account holds, and nothing once it is empty', async () => {
    const w = await world({ deductPercent: 60n });
    await funded(w, 'c1', 1_000n);
    for (const e of ['v1', 'v2', 'v3', 'v4']) await w.life.event('c1', { type: 'violation', event_id: e, rule: 'x', ts: T0 });
    expect(deductions(w)).toEqual(['600', '400']);
    expect(await w.bal('collateral_pool:c1')).toBe(0n);
    expect(await w.transfer('deduct:c1:v4')).toBeUndefined();
  });

  it('a deduction of 0 (collateral too small for a whole unit) moves nothing', async () => {
    const w = await world();
    await funded(w, 'c1', 9n);
    await w.life.event('c1', { type: 'violation', event_id: 'v1', rule: 'x', ts: T0 });
    await w.life.event('c1', { type: 'violation', event_id: 'v2', rule: 'x', ts: T0 });
    expect(deductions(w)).toEqual([]);
    expect(await w.bal('collateral_pool:c1')).toBe(9n);
  });
});

describe('withdrawal refunds what the sub-account holds', () => {
  it('all of it, even above the posted figure, with its receipt; the challenge leaves the funded index', async () => {
    const w = await world();
    await w.put('c1', { state: 'funded', collateral: '1000' });
    await w.move('collateral:c1', 'bank', 'collateral_pool:c1', 1000n);
    await w.move('extra', 'bank', 'collateral_pool:c1', 5n);
    await w.raw.index(w.PK.funded, 'c1', 1);
    w.clock.advance(9);
    const body = (await w.life.withdraw('u1', 'c1', {})) as Rec;
    expect(body).toEqual({ challenge: 'c1', state: 'withdrawn', refunded: '1005', receipt_hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(await w.bal(w.userAccount('u1', 'wallet'))).toBe(1005n);
    expect(await w.bal('collateral_pool:c1')).toBe(0n);
    expect(await w.get('c1')).toMatchObject({ state: 'withdrawn', refunded: '1005' });
    expect(w.writes).toContainEqual({ op: 'unindex', key: 'pay:funded', member: 'c1' });
    expect(await w.transfer('refund:c1')).toMatchObject({ debit: 'collateral_pool:c1', credit: 'u:u1:wallet', amount: '1005', code: 'collateral_refund', meta: { challenge: 'c1' } });
    expect(await w.receipt(body.receipt_hash as string)).toMatchObject({ kind: 'collateral_refund', user: 'u1', amount: '1005', transfers: ['refund:c1'], ref: 'c1', ts: T0 + 9 });
  });

  it('an empty sub-account refunds 0 with no transfer and no receipt', async () => {
    const w = await world();
    await w.put('c1', { state: 'funded', collateral: '1000' });
    expect(await w.life.withdraw('u1', 'c1', {})).toEqual({ challenge: 'c1', state: 'withdrawn', refunded: '0', receipt_hash: null });
    expect(await w.transfer('refund:c1')).toBeUndefined();
  });

  it('collateral in the former shared account: the challenge figure at most, or what the account holds', async () => {
    const w = await world();
    const former = w.userAccount('u1', 'collateral');
    for (const [id, figure] of [['c_a', 700n], ['c_b', 500n]] as const) {
      await w.put(id, { state: 'funded', collateral: String(figure) });
      await w.move(`collateral:${id}`, 'bank', former, figure);
    }
    // 1,200 held for two challenges: the first takes its 700, the second what is left after a deduction
    expect(await w.life.withdraw('u1', 'c_a', {})).toMatchObject({ refunded: '700' });
    await w.move('taken', former, 'escrow', 100n);
    expect(await w.life.withdraw('u1', 'c_b', {})).toMatchObject({ refunded: '400' });
    expect(await w.transfer('refund:c_b')).toMatchObject({ debit: former, credit: 'u:u1:wallet', amount: '400' });
  });

  it('a former-account challenge deducts from that account', async () => {
    const w = await world();
    const former = w.userAccount('u1', 'collateral');
    await w.put('c1', { state: 'funded', collateral: '1000' });
    await w.move('collateral:c1', 'bank', former, 1000n);
    await w.life.event('c1', { type: 'violation', event_id: 'v1', rule: 'x', ts: T0 });
    await w.life.event('c1', { type: 'violation', event_id: 'v2', rule: 'x', ts: T0 });
    expect(await w.transfer('deduct:c1:v2')).toMatchObject({ debit: former, credit: 'escrow', amount: '100' });
  });

  it('a withdrawn challenge deducts nothing, even from a former shared account that still holds collateral', async () => {
    const w = await world();
    const former = w.userAccount('u1', 'collateral');
    for (const id of ['c_a', 'c_b']) {
      await w.put(id, { state: 'funded', collateral: '1000' });
      await w.move(`collateral:${id}`, 'bank', former, 1000n);
    }
    await w.life.withdraw('u1', 'c_a', {});
    for (const e of ['v1', 'v2']) expect(await w.life.event('c_a', { type: 'violation', event_id: e, rule: 'x', ts: T0 })).toEqual({ applied: true, state: 'withdrawn', outcome: undefined });
    expect(await w.transfer('deduct:c_a:v2')).toBeUndefined();
    expect(await w.bal(former)).toBe(1000n);
  });

  it('only a funded challenge of the caller: 409 challenge_not_funded, 404 for another user', async () => {
    const w = await world();
    for (const state of ['active', 'failed', 'passed', 'withdrawn']) {
      await w.put(`c_${state}`, { state });
      expect(await refusal(w.life.withdraw('u1', `c_${state}`, {}))).toEqual({ status: 409, code: 'challenge_not_funded', message: `challenge c_${state} is ${state}` });
    }
    await w.put('c1', { state: 'funded' });
    expect(await refusal(w.life.withdraw('u2', 'c1', {}))).toEqual({ status: 404, code: 'challenge_not_found', message: 'no challenge c1' });
  });

  it('with an Idempotency-Key the answer is kept and the same key answers it again', async () => {
    const w = await world();
    await w.put('c1', { state: 'funded', collateral: '1000' });
    await w.move('collateral:c1', 'bank', 'collateral_pool:c1', 1000n);
    const t = await w.ticket('w1');
    const first = await w.life.withdraw('u1', 'c1', { ticket: t });
    expect(await w.raw.get(t.storeKey)).toMatchObject({ state: 'done', answer: { status: 200, body: first as Json } });
    expect(await w.life.withdraw('u1', 'c1', { ticket: t })).toEqual(first);
    expect(await w.bal(w.userAccount('u1', 'wallet'))).toBe(1000n);
  });
});
