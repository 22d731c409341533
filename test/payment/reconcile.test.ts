import fc from 'fast-check';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { newWebhookSecret, startPaymentStandins, webhookSignature, type PaymentStandins } from '../../src/payment/standins.js';
import { signIn } from '../support/auth.js';
import { paymentHubEnv } from '../support/payment.js';
import { call, until } from '../support/http.js';

const silent = pino({ level: 'silent' });
let n = 0;
const key = () => `rk-${Date.now()}-${++n}`;

describe('reconciliation with the bank', () => {
  let peers: PaymentStandins;
  let maru: Maru;
  let op: string;
  const secret = newWebhookSecret();

  beforeAll(async () => {
    peers = await startPaymentStandins({ webhookSecret: secret });
    maru = await startMaru(
      loadConfig(paymentHubEnv(peers, secret, 'payment-recon', { extra: { OUTBOX_RETRY_MIN_MS: '50', OUTBOX_RETRY_MAX_MS: '200',
        RECONCILE_PERIOD_MS: '86400000' } })),
      { logger: silent },
    );
    op = await signIn(maru.url, ['operator'], 'reconops');
  });
  afterAll(async () => {
    await maru?.stop();
    await peers?.close();
  });

  const as = async (user: string) => ({ authorization: `Bearer ${await peers.banking.issueToken(user)}` });
  const opH = () => ({ authorization: `Bearer ${op}` });
  const pull = async () => {
    const r = await call(maru.url, 'POST', '/api/token/ops/reconcile', undefined, opH());
    expect(r.status).toBe(200);
    return r.body;
  };
  const balance = async (user: string) => BigInt((await call(maru.url, 'GET', '/api/token/wallet', undefined, await as(user))).body.balance);
  const startOnramp = async (user: string, krw: number) => {
    const r = await call(maru.url, 'POST', '/api/token/onramp', { amount_krw: krw, method: 'card' }, { ...(await as(user)), 'idempotency-key': key(), accept: 'application/json' });
    expect(r.status).toBe(200);
    return new URL(r.body.location).searchParams;
  };
  const DEAD = 'http://127.0.0.1:1/api/token/banking/webhook';

  it('a lost webhook is settled by the pull, once; the late webhook then credits nothing', async () => {
    const q = await startOnramp('lena', 200_000);
    const realNotify = q.get('notify')!;
    q.set('notify', DEAD);
    const lost = await peers.banking.confirm(q.get('ref')!, q);
    expect(lost.webhook_status).toBe(0);
    expect(await balance('lena')).toBe(0n);
    const p = await pull();
    expect(p).toMatchObject({ status: 'done', credited: 1, differences: 0 });
    const after = await balance('lena');
    expect(after).toBeGreaterThan(0n);
    expect((await pull()).credited).toBe(0);
    q.set('notify', realNotify);
    const late = await peers.banking.confirm(q.get('ref')!, q);
    expect(late.webhook_status).toBe(200);
    expect(await balance('lena')).toBe(after);
  });

  it('property: webhooks (delivered, lost, repeated) and pulls in any order credit each payment once', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ lost: fc.boolean(), redeliver: fc.boolean(), pullFirst: fc.boolean() }), { minLength: 1, maxLength: 3 }),
        fc.array(fc.nat({ max: 5 }), { minLength: 0, maxLength: 4 }),
        async (payments, pullsAt) => {
          const user = `prop${++run}`;
          const qs = [];
          for (let i = 0; i < payments.length; i++) qs.push(await startOnramp(user, 10_000 * (i + 1)));
          for (let i = 0; i < payments.length; i++) {
            const p = payments[i]!;
            const q = qs[i]!;
            const notify = q.get('notify')!;
            if (p.pullFirst || pullsAt.includes(i)) await pull();
            q.set('notify', p.lost ? DEAD : notify);
            await peers.banking.confirm(q.get('ref')!, q);
            if (p.redeliver) {
              q.set('notify', notify);
              await peers.banking.confirm(q.get('ref')!, q);
            }
          }
          await pull();
          const w = (await call(maru.url, 'GET', '/api/token/wallet?limit=100', undefined, await as(user))).body;
          const credits = w.history.filter((t: { code: string }) => t.code === 'onramp');
          return credits.length === payments.length && new Set(credits.map((t: { id: string }) => t.id)).size === payments.length;
        },
      ),
      { numRuns: 8 },
    );
  });

  it('a webhook that arrived first is not credited again by the pull', async () => {
    const q = await startOnramp('mina', 100_000);
    expect((await peers.banking.confirm(q.get('ref')!, q)).webhook_status).toBe(200);
    const b = await balance('mina');
    expect(b).toBeGreaterThan(0n);
    const p = await pull();
    expect(p.credited).toBe(0);
    expect(await balance('mina')).toBe(b);
  });

  it('marks a declined on-ramp and keeps unknown payments and other amounts as differences, moving nothing', async () => {
    const q = await startOnramp('nora', 50_000);
    peers.banking.decline(q.get('ref')!, q);
    expect((await pull()).declined).toBe(1);
    const ev = peers.banking.state.events;
    ev.push({ id: `evt_${ev.length + 1}`, seq: ev.length + 1, type: 'payment.confirmed', created: Date.now(), data: { payment_id: 'bp_unknown', ref: 'or_unknown', amount_krw: 1000, usd_micro: 700000, user: 'nora' } });
    const q2 = await startOnramp('nora', 60_000);
    ev.push({ id: `evt_${ev.length + 1}`, seq: ev.length + 1, type: 'payment.confirmed', created: Date.now(), data: { payment_id: 'bp_other_amount', ref: q2.get('ref')!, amount_krw: 61_000, usd_micro: 45_000_000, user: 'nora' } });
    const p = await pull();
    expect(p).toMatchObject({ credited: 0, differences: 2 });
    expect(await balance('nora')).toBe(0n);
    const d = await call(maru.url, 'GET', '/api/token/ops/reconcile/differences', undefined, opH());
    expect(d.body.differences.map((x: { code: string }) => x.code)).toEqual(['onramp_not_found', 'amount_mismatch']);
    // read again: the cursor moved past them, nothing is settled twice
    expect((await pull()).events).toBe(0);
    expect((await call(maru.url, 'POST', '/api/token/ops/reconcile', undefined, await as('nora'))).status).toBe(401);
  });

  it('a confirmation of a declined on-ramp is a 409 naming its state, never a payment id it does not have', async () => {
    const q = await startOnramp('petra', 40_000);
    peers.banking.decline(q.get('ref')!, q);
    expect((await pull()).declined).toBe(1);
    const body = JSON.stringify({ type: 'payment.confirmed', data: { payment_id: 'bp_after_decline', ref: q.get('ref')!, amount_krw: 40_000, usd_micro: 29_000_000 } });
    const ts = Math.floor(Date.now() / 1000);
    const r = await call(maru.url, 'POST', '/api/token/banking/webhook', body, { 'webhook-id': 'bp_after_decline', 'webhook-timestamp': String(ts), 'webhook-signature': webhookSignature(secret, 'bp_after_decline', ts, body) });
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe('onramp_settled');
    expect(r.body.error.message).toContain('declined');
    expect(r.body.error.message).not.toContain('undefined');
    expect(r.body.error.details).toMatchObject({ state: 'declined' });
    expect(await balance('petra')).toBe(0n);
  });

  it('tracks an off-ramp until the bank pays it or rejects it; a rejected one returns with its fee, once', async () => {
    const q = await startOnramp('olga', 300_000);
    await peers.banking.confirm(q.get('ref')!, q);
    const h = await as('olga');
    const start = await balance('olga');
    const off = await call(maru.url, 'POST', '/api/token/offramp', { amount: '100000000' }, { ...h, 'idempotency-key': key() });
    expect(off.status).toBe(200);
    const bankKey = `offramp:${off.body.offramp}`;
    await until('bank got the off-ramp', () => peers.banking.state.offramps.has(bankKey) || undefined);
    expect((await call(maru.url, 'GET', `/api/token/offramp/${off.body.offramp}`, undefined, h)).body.state).toBe('sent');
    expect((await call(maru.url, 'GET', `/api/token/offramp/${off.body.offramp}`, undefined, await as('mallory'))).status).toBe(404);
    expect(await balance('olga')).toBe(start - 100_000_000n);
    peers.banking.settleOfframp(bankKey, 'failed', 'account closed');
    expect((await pull()).offramps_returned).toBe(1);
    expect(await balance('olga')).toBe(start);
    const st = (await call(maru.url, 'GET', `/api/token/offramp/${off.body.offramp}`, undefined, h)).body;
    expect(st).toMatchObject({ state: 'returned', reason: 'account closed' });
    // the same event read again (a replay) moves nothing
    const ev = peers.banking.state.events;
    const failed = ev.find((e) => e.type === 'offramp.failed')!;
    ev.push({ ...failed, id: `evt_${ev.length + 1}`, seq: ev.length + 1 });
    expect((await pull()).offramps_returned).toBe(0);
    expect(await balance('olga')).toBe(start);

    const off2 = await call(maru.url, 'POST', '/api/token/offramp', { amount: '50000000' }, { ...h, 'idempotency-key': key() });
    await until('bank got the second off-ramp', () => peers.banking.state.offramps.has(`offramp:${off2.body.offramp}`) || undefined);
    peers.banking.settleOfframp(`offramp:${off2.body.offramp}`, 'paid');
    expect((await pull()).offramps_paid).toBe(1);
    expect((await call(maru.url, 'GET', `/api/token/offramp/${off2.body.offramp}`, undefined, h)).body.state).toBe('paid');
    expect(await balance('olga')).toBe(start - 50_000_000n);
    const check = await call(maru.url, 'GET', '/api/token/ops/ledger/check', undefined, opH());
    expect(check.body.ledger.ok).toBe(true);
    expect(check.body.receipts.ok).toBe(true);
  });
});
