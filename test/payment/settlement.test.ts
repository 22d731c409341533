import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { newWebhookSecret, startPaymentStandins, type PaymentStandins } from '../../src/payment/standins.js';
import { signIn } from '../support/auth.js';
import { paymentHubEnv } from '../support/payment.js';
import { call, until } from '../support/http.js';

const silent = pino({ level: 'silent' });
let n = 0;
const key = () => `st-${Date.now()}-${++n}`;
const DEAD = 'http://127.0.0.1:1/api/token/banking/webhook';

/** The daily settlement report: a real hub and the real banking stand-in, over HTTP. */
describe('daily settlement against the bank', () => {
  let peers: PaymentStandins;
  let maru: Maru;
  let op: string;
  const secret = newWebhookSecret();
  const today = () => new Date().toISOString().slice(0, 10);

  beforeAll(async () => {
    peers = await startPaymentStandins({ webhookSecret: secret });
    maru = await startMaru(
      loadConfig(paymentHubEnv(peers, secret, 'payment-settlement', { extra: { OUTBOX_RETRY_MIN_MS: '50', OUTBOX_RETRY_MAX_MS: '200', RECONCILE_PERIOD_MS: '86400000' } })),
      { logger: silent },
    );
    op = await signIn(maru.url, ['operator'], 'settleops');
  });
  afterAll(async () => {
    await maru?.stop();
    await peers?.close();
  });

  const as = async (user: string) => ({ authorization: `Bearer ${await peers.banking.issueToken(user)}` });
  const opH = () => ({ authorization: `Bearer ${op}` });
  const report = async (date = today()) => {
    const r = await call(maru.url, 'GET', `/api/token/ops/settlement?date=${date}`, undefined, opH());
    expect(r.status).toBe(200);
    return r.body;
  };
  const pull = async () => expect((await call(maru.url, 'POST', '/api/token/ops/reconcile', undefined, opH())).status).toBe(200);
  const startOnramp = async (user: string, krw: number) => {
    const r = await call(maru.url, 'POST', '/api/token/onramp', { amount_krw: krw, method: 'card' }, { ...(await as(user)), 'idempotency-key': key(), accept: 'application/json' });
    expect(r.status).toBe(200);
    return new URL(r.body.location).searchParams;
  };
  const offramp = async (user: string, amount: string) => {
    const r = await call(maru.url, 'POST', '/api/token/offramp', { amount }, { ...(await as(user)), 'idempotency-key': key() });
    expect(r.status).toBe(200);
    const bankKey = `offramp:${r.body.offramp}`;
    await until('the bank got the off-ramp', () => peers.banking.state.offramps.has(bankKey) || undefined);
    return { id: r.body.offramp as string, bankKey, net: r.body.net as string };
  };

  it('a clean day balances: on-ramps and off-ramps (pending, paid, returned) agree in list and totals', async () => {
    const q1 = await startOnramp('ada', 300_000);
    const p1 = await peers.banking.confirm(q1.get('ref')!, q1);
    expect(p1.webhook_status).toBe(200);
    const q2 = await startOnramp('ben', 135_000);
    expect((await peers.banking.confirm(q2.get('ref')!, q2)).webhook_status).toBe(200);
    const declined = await startOnramp('ben', 20_000);
    peers.banking.decline(declined.get('ref')!, declined);
    const paid = await offramp('ada', '50000000');
    const sent = await offramp('ada', '20000000');
    const failed = await offramp('ada', '10000000');
    peers.banking.settleOfframp(paid.bankKey, 'paid');
    peers.banking.settleOfframp(failed.bankKey, 'failed', 'account closed');
    await pull();

    const r = await report();
    expect(r.differences).toEqual([]);
    expect(r).toMatchObject({ date: today(), dated_by: 'bank', balanced: true });
    expect(r.hub).toEqual({ onramps: { count: 2, sum_krw: 435_000 }, offramps: { count: 2, sum: (BigInt(paid.net) + BigInt(sent.net)).toString() } });
    expect(r.bank).toEqual(r.hub);
    expect(r.payments).toBe(6); // two on-ramps, one declined, three off-ramps, each listed by the bank
    // the bank's own route: its list by id and amount
    const bank = await (await fetch(`${peers.banking.url}/api/settlement?date=${today()}`)).json();
    expect(bank.payments.find((p: { id: string }) => p.id === p1.payment_id)).toMatchObject({ kind: 'onramp', status: 'confirmed', amount_krw: 300_000 });
    expect(bank.payments.find((p: { id: string }) => p.id === failed.id)).toMatchObject({ kind: 'offramp', status: 'failed', amount: failed.net });
    // an earlier day has nothing on either side and balances
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    expect(await report(yesterday)).toMatchObject({ balanced: true, differences: [], hub: { onramps: { count: 0 } }, bank: { onramps: { count: 0 } } });
  });

  it('a payment the bank settled but the hub missed is a difference until reconciliation settles it', async () => {
    const q = await startOnramp('cleo', 200_000);
    q.set('notify', DEAD);
    const lost = await peers.banking.confirm(q.get('ref')!, q);
    expect(lost.webhook_status).toBe(0);
    const before = await report();
    expect(before.balanced).toBe(false);
    expect(before.differences).toEqual([
      expect.objectContaining({ kind: 'missing_at_hub', payment: 'onramp', id: lost.payment_id, hub: null, bank: expect.objectContaining({ amount_krw: 200_000, status: 'confirmed' }) }),
    ]);
    expect(before.bank.onramps.count).toBe(before.hub.onramps.count + 1);
    expect(before.bank.onramps.sum_krw).toBe(before.hub.onramps.sum_krw + 200_000);
    await pull();
    const after = await report();
    expect(after.differences).toEqual([]);
    expect(after.balanced).toBe(true);
    expect(after.hub).toEqual(after.bank);
  });

  it('a bank off-ramp status the hub has not learned shows as a status difference until the pull', async () => {
    await startOnramp('dora', 100_000).then((q) => peers.banking.confirm(q.get('ref')!, q));
    const o = await offramp('dora', '10000000');
    peers.banking.settleOfframp(o.bankKey, 'failed', 'account closed');
    const r = await report();
    expect(r.balanced).toBe(false);
    expect(r.differences).toEqual([expect.objectContaining({ kind: 'status_mismatch', payment: 'offramp', id: o.id, hub: expect.objectContaining({ status: 'sent' }), bank: expect.objectContaining({ status: 'failed' }) })]);
    await pull();
    expect(await report()).toMatchObject({ balanced: true, differences: [] });
  });

  it('the bank\'s clock dates a payment: one the bank took yesterday and the hub booked today is yesterday\'s on both sides', async () => {
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    const q = await startOnramp('finn', 120_000);
    const p = await peers.banking.confirm(q.get('ref')!, q);
    expect(p.webhook_status).toBe(200);
    // the bank confirmed it just before midnight (by its clock); the hub booked it after
    peers.banking.state.payments.get(p.payment_id)!.ts = Date.parse(`${yesterday}T23:59:59.000Z`);
    const y = await report(yesterday);
    expect(y).toMatchObject({ balanced: true, differences: [], hub: { onramps: { count: 1, sum_krw: 120_000 } }, bank: { onramps: { count: 1, sum_krw: 120_000 } } });
    const t = await report();
    expect(t).toMatchObject({ balanced: true, differences: [] }); // not missing at the bank today: the bank has it yesterday
    expect(t.hub).toEqual(t.bank);
  });

  it('an amount the bank books otherwise, and a hub payment the bank does not know, show as differences', async () => {
    const q = await startOnramp('emil', 150_000);
    const p = await peers.banking.confirm(q.get('ref')!, q);
    expect(p.webhook_status).toBe(200);
    const o = await offramp('emil', '30000000');
    expect(await report()).toMatchObject({ balanced: true });
    // the bank's books say another amount for the on-ramp, and have lost the off-ramp
    peers.banking.state.payments.get(p.payment_id)!.amount_krw = 151_000;
    peers.banking.state.offramps.delete(o.bankKey);
    const r = await report();
    expect(r.balanced).toBe(false);
    const byKind = Object.fromEntries(r.differences.map((d: { kind: string }) => [d.kind, d]));
    expect(Object.keys(byKind).sort()).toEqual(['amount_mismatch', 'missing_at_bank']);
    expect(byKind.amount_mismatch).toMatchObject({ payment: 'onramp', id: p.payment_id, hub: { amount_krw: 150_000 }, bank: { amount_krw: 151_000 } });
    expect(byKind.missing_at_bank).toMatchObject({ payment: 'offramp', id: o.id, hub: { amount: o.net, status: 'sent' }, bank: null });
    expect(r.bank.onramps.sum_krw - r.hub.onramps.sum_krw).toBe(1_000);
    expect(BigInt(r.hub.offramps.sum) - BigInt(r.bank.offramps.sum)).toBe(BigInt(o.net));
  });

  it('refuses bad dates, missing or wrong credentials and non-operators with the error shape', async () => {
    const get = (q: string, h: Record<string, string> = opH()) => call(maru.url, 'GET', `/api/token/ops/settlement${q}`, undefined, h);
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const cases: [string, Record<string, string> | undefined, number, string | undefined][] = [
      ['?date=2026-1-5', undefined, 400, undefined],
      ['?date=yesterday', undefined, 400, undefined],
      ['', undefined, 400, undefined],
      ['?date=2026-02-30', undefined, 400, 'invalid_date'],
      ['?date=2026-13-01', undefined, 400, 'invalid_date'],
      [`?date=${tomorrow}`, undefined, 400, 'future_date'],
      [`?date=${today()}&extra=1`, undefined, 400, undefined],
      [`?date=${today()}`, {}, 401, undefined],
      [`?date=${today()}`, { authorization: 'Bearer not-a-token' }, 401, undefined],
      [`?date=${today()}`, await as('ada'), 401, undefined],
      [`?date=${today()}`, { authorization: `Bearer ${await signIn(maru.url, ['partner'])}` }, 403, undefined],
    ];
    for (const [q, h, status, code] of cases) {
      const r = await get(q, h);
      expect([q, r.status]).toEqual([q, status]);
      expect(typeof r.body.error.code).toBe('string');
      expect(typeof r.body.error.message).toBe('string');
      if (code) expect(r.body.error.code).toBe(code);
    }
    // the bank's own route refuses an impossible day too
    const bad = await fetch(`${peers.banking.url}/api/settlement?date=2026-02-30`);
    expect(bad.status).toBe(400);
  });
});
