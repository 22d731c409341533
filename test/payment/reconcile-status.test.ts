import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { newWebhookSecret, startPaymentStandins, type PaymentStandins } from '../../src/payment/standins.js';
import { signIn } from '../support/auth.js';
import { paymentHubEnv } from '../support/payment.js';
import { call } from '../support/http.js';

// A payment the bank's events never mention is asked for by its status (GET /api/payments/:ref at
// the bank) once it has been open RECONCILE_STATUS_AFTER_MS, and settled by it exactly once.

const silent = pino({ level: 'silent' });
let n = 0;
const key = () => `rs-${Date.now()}-${++n}`;
const AFTER = 120_000;
const DEAD = 'http://127.0.0.1:1/api/token/banking/webhook';

describe('reconciliation asks the bank for the status of payments its events never mention', () => {
  let peers: PaymentStandins;
  let maru: Maru;
  let op: string;
  const secret = newWebhookSecret();
  const clock = new ManualClock(Date.now());

  beforeAll(async () => {
    peers = await startPaymentStandins({ webhookSecret: secret });
    maru = await startMaru(
      loadConfig(paymentHubEnv(peers, secret, 'payment-recon-status', { extra: { RECONCILE_PERIOD_MS: '86400000', RECONCILE_STATUS_AFTER_MS: String(AFTER) } })),
      { clock, logger: silent },
    );
    op = await signIn(maru.url, ['operator'], 'statusops');
  });
  afterAll(async () => {
    await maru?.stop();
    await peers?.close();
  });

  const as = async (user: string) => ({ authorization: `Bearer ${await peers.banking.issueToken(user)}` });
  const pull = async () => {
    const r = await call(maru.url, 'POST', '/api/token/ops/reconcile', undefined, { authorization: `Bearer ${op}` });
    expect(r.status).toBe(200);
    return r.body as Record<string, number>;
  };
  const balance = async (user: string) => BigInt((await call(maru.url, 'GET', '/api/token/wallet', undefined, await as(user))).body.balance);
  const startOnramp = async (user: string, krw: number) => {
    const r = await call(maru.url, 'POST', '/api/token/onramp', { amount_krw: krw, method: 'card' }, { ...(await as(user)), 'idempotency-key': key(), accept: 'application/json' });
    expect(r.status).toBe(200);
    return new URL(r.body.location).searchParams;
  };
  /** The bank's event list loses the events of `ref` (the events never mention it). */
  const forget = (ref: string) => {
    const ev = peers.banking.state.events;
    const gone = ev.filter((e) => e.data.ref === ref);
    peers.banking.state.events = ev.filter((e) => e.data.ref !== ref);
    return gone;
  };

  it('a confirmed payment whose webhook and event were lost is credited by its status after the delay, once', async () => {
    const q = await startOnramp('sena', 150_000);
    const real = q.get('notify')!;
    q.set('notify', DEAD);
    expect((await peers.banking.confirm(q.get('ref')!, q)).webhook_status).toBe(0);
    const lost = forget(q.get('ref')!);
    expect(lost).toHaveLength(1);
    // before the delay: nothing asked, nothing credited
    expect(await pull()).toMatchObject({ credited: 0, status_checked: 0 });
    expect(await balance('sena')).toBe(0n);
    clock.advance(AFTER + 1);
    expect(await pull()).toMatchObject({ credited: 1, status_checked: 1, differences: 0 });
    const credited = await balance('sena');
    expect(credited).toBeGreaterThan(0n);
    // asked once: a later pull asks nothing again; the late webhook and the event coming back credit nothing
    clock.advance(AFTER + 1);
    expect(await pull()).toMatchObject({ credited: 0, status_checked: 0 });
    q.set('notify', real);
    expect((await peers.banking.confirm(q.get('ref')!, q)).webhook_status).toBe(200);
    const ev = peers.banking.state.events;
    for (const e of lost) ev.push({ ...e, id: `evt_${ev.length + 1}`, seq: ev.length + 1 });
    expect(await pull()).toMatchObject({ credited: 0, events: 1 });
    expect(await balance('sena')).toBe(credited);
    const check = await call(maru.url, 'GET', '/api/token/ops/ledger/check', undefined, { authorization: `Bearer ${op}` });
    expect(check.body.ledger.ok).toBe(true);
  });

  it('a declined payment the events never mention is marked declined by its status; one the bank does not know stays open and is asked again later', async () => {
    const d = await startOnramp('tara', 70_000);
    peers.banking.decline(d.get('ref')!, d);
    forget(d.get('ref')!);
    const u = await startOnramp('tara', 80_000); // never paid: the bank does not know it
    clock.advance(AFTER + 1);
    expect(await pull()).toMatchObject({ declined: 1, credited: 0, status_checked: 2 });
    expect(await pull()).toMatchObject({ declined: 0, status_checked: 0 });
    // the one the bank did not know is asked again a period later: paid meanwhile, it is credited
    u.set('notify', DEAD);
    await peers.banking.confirm(u.get('ref')!, u);
    forget(u.get('ref')!);
    clock.advance(AFTER + 1);
    expect(await pull()).toMatchObject({ credited: 1, declined: 0, status_checked: 1 });
    expect(await balance('tara')).toBeGreaterThan(0n);
    // the declined on-ramp cannot be credited afterwards
    const again = await pull();
    expect(again).toMatchObject({ credited: 0, status_checked: 0 });
  });
});
