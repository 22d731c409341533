import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { newWebhookSecret, startPaymentStandins, type PaymentStandins } from '../../src/payment/standins.js';
import { login, signIn, TEST_ADMIN_PASSWORD } from '../support/auth.js';
import { paymentHubEnv } from '../support/payment.js';
import { call } from '../support/http.js';

// The routes of the books: operator reversals and statements, over HTTP against the loopback peers.

const silent = pino({ level: process.env.TEST_LOG ? 'error' : 'silent' });
let n = 0;
const key = () => `bk-${Date.now()}-${++n}`;
const DAY = 86_400_000;

describe('reversals and statements over HTTP', () => {
  let peers: PaymentStandins;
  let maru: Maru;
  let base: string;
  let op: string;
  let notOp: string;
  const secret = newWebhookSecret();
  const clock = new ManualClock(Date.now());

  beforeAll(async () => {
    peers = await startPaymentStandins({ webhookSecret: secret });
    maru = await startMaru(
      loadConfig(paymentHubEnv(peers, secret, 'payment-books', { extra: { PEG_TIMEOUT_MS: '1500' } })),
      { clock, logger: silent },
    );
    base = maru.url;
    // an operator whose display name is not its account id: a reversal records the account id
    const admin = await login(base, 'admin', TEST_ADMIN_PASSWORD);
    const made = await call(base, 'POST', '/api/auth/accounts', { user: 'bookops', name: '운영자', password: 'pw-bookops-secret', roles: ['operator'] }, { authorization: `Bearer ${admin}` });
    expect(made.status).toBe(201);
    op = await login(base, 'bookops', 'pw-bookops-secret');
    notOp = await signIn(base, ['staff'], 'bookuser');
  });
  afterAll(async () => {
    await maru?.stop();
    await peers?.close();
  });

  const as = async (user: string) => ({ authorization: `Bearer ${await peers.banking.issueToken(user)}` });
  const opH = () => ({ authorization: `Bearer ${op}` });
  const reverse = (id: string, body: unknown, headers: Record<string, string>, k = key()) => call(base, 'POST', `/api/token/ops/transfers/${encodeURIComponent(id)}/reverse`, body, { 'idempotency-key': k, ...headers });
  const period = () => `from=${new Date(clock.now() - DAY).toISOString()}&to=${new Date(clock.now() + DAY).toISOString()}`;

  async function topUp(user: string, krw: number): Promise<string> {
    const r = await fetch(`${base}/api/token/onramp`, {
      method: 'POST', redirect: 'manual',
      headers: { 'content-type': 'application/json', 'idempotency-key': key(), ...(await as(user)) },
      body: JSON.stringify({ amount_krw: krw, method: 'card' }),
    });
    const loc = new URL(r.headers.get('location')!);
    const done = await peers.banking.confirm(loc.searchParams.get('ref')!, loc.searchParams);
    expect(done.webhook_status).toBe(200);
    return `onramp:${done.payment_id}`;
  }

  it('an operator reverses an on-ramp credit once; every bad request is a clear 4xx with nothing moved', async () => {
    const h = await as('hana');
    const credit = await topUp('hana', 100_000);
    const before = (await call(base, 'GET', '/api/token/wallet', undefined, h)).body;
    expect(BigInt(before.balance)).toBeGreaterThan(0n);
    const check0 = (await call(base, 'GET', '/api/token/ops/ledger/check', undefined, opH())).body.ledger.transfers;

    const refusals: [Promise<{ status: number; body: any }>, number, string?][] = [
      [reverse(credit, { reason: 'chargeback' }, {}), 401],
      [reverse(credit, { reason: 'chargeback' }, { authorization: `Bearer ${notOp}` }), 403],
      [reverse(credit, { reason: 'chargeback' }, h), 401],
      [reverse(credit, {}, opH()), 400],
      [reverse(credit, { reason: '' }, opH()), 400],
      [reverse(credit, { reason: 'x', extra: 1 }, opH()), 400],
      [reverse('bad id!', { reason: 'x' }, opH()), 400],
      [reverse('onramp:nope', { reason: 'x' }, opH()), 404, 'transfer_not_found'],
      [call(base, 'POST', `/api/token/ops/transfers/${credit}/reverse`, { reason: 'x' }, opH()), 400, 'idempotency_key_missing'],
    ];
    for (const [p, status, code] of refusals) {
      const r = await p;
      expect(r.status, JSON.stringify(r.body)).toBe(status);
      expect(r.body.error).toMatchObject({ code: expect.any(String), message: expect.any(String) });
      if (code) expect(r.body.error.code).toBe(code);
    }
    expect((await call(base, 'GET', '/api/token/ops/ledger/check', undefined, opH())).body.ledger.transfers).toBe(check0);

    const k = key();
    const ok = await reverse(credit, { reason: 'chargeback' }, opH(), k);
    expect(ok.status).toBe(200);
    expect(ok.body.reversal).toMatchObject({ id: `reversal:${credit}`, amount: before.balance, code: 'reversal', meta: { reverses: credit, reason: 'chargeback', by: 'bookops' } });
    const replay = await reverse(credit, { reason: 'chargeback' }, opH(), k);
    expect(replay.body).toEqual(ok.body);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect((await reverse(credit, { reason: 'chargeback' }, opH())).body.error.code).toBe('already_reversed');
    expect((await reverse(`reversal:${credit}`, { reason: 'undo' }, opH())).body.error.code).toBe('reversal_of_reversal');
    expect((await call(base, 'GET', '/api/token/wallet', undefined, h)).body.balance).toBe('0');
    const check = (await call(base, 'GET', '/api/token/ops/ledger/check', undefined, opH())).body;
    expect(check.ledger).toMatchObject({ ok: true, transfers: check0 + 1 });

    // the wallet's statement shows both, the running balance, and closes on the balance
    const s = await call(base, 'GET', `/api/token/statement?account=wallet&${period()}`, undefined, h);
    expect(s.status).toBe(200);
    expect(s.body).toMatchObject({ account: 'u:hana:wallet', opening: '0', closing: '0', credits: before.balance, debits: before.balance });
    expect(s.body.transfers.map((t: { id: string; balance: string }) => [t.id, t.balance])).toEqual([[credit, before.balance], [`reversal:${credit}`, '0']]);
    const csv = await fetch(`${base}/api/token/statement?account=wallet&format=csv&${period()}`, { headers: h });
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toContain('text/csv');
    expect((await csv.text()).trim().split('\r\n')).toHaveLength(5); // header, opening, two transfers, closing
    // the bank boundary's statement, as the operator sees it, ties to the check's totals
    const bank = await call(base, 'GET', `/api/token/ops/statement?account=bank&${period()}`, undefined, opH());
    expect(bank.status).toBe(200);
    expect(bank.body.transfers.some((t: { id: string }) => t.id === `reversal:${credit}`)).toBe(true);
  });

  it('statements refuse another user\'s account, operator accounts, inverted periods and missing credentials', async () => {
    const h = await as('jun');
    const cases: [string, Record<string, string>, number][] = [
      [`/api/token/statement?account=wallet&${period()}`, {}, 401],
      [`/api/token/statement?account=u:hana:wallet&${period()}`, h, 403],
      [`/api/token/statement?account=escrow&${period()}`, h, 403],
      [`/api/token/statement?account=c_notyours&${period()}`, h, 404],
      [`/api/token/statement?account=wallet&from=2026-02-01&to=2026-01-01`, h, 400],
      [`/api/token/statement?account=wallet&from=yesterday&to=2026-01-01`, h, 400],
      [`/api/token/statement?account=wallet&from=2020-01-01&to=2026-01-01`, h, 400],
      [`/api/token/statement?account=wallet`, h, 400],
      [`/api/token/statement?account=wallet&format=xml&${period()}`, h, 400],
      [`/api/token/ops/statement?account=escrow&${period()}`, h, 401],
      [`/api/token/ops/statement?account=escrow&${period()}`, { authorization: `Bearer ${notOp}` }, 403],
      [`/api/token/ops/statement?account=u:nobody:wallet&${period()}`, opH(), 404],
      [`/api/token/ops/statement?account=escrow&from=2026-02-01&to=2026-01-01`, opH(), 400],
    ];
    // the codes as docs/payment.md names them: a bad or inverted period, one longer than 400 days
    const code = async (q: string) => (await call(base, 'GET', `/api/token/statement?account=wallet&${q}`, undefined, h)).body.error?.code;
    expect(await code('from=2026-02-01&to=2026-01-01')).toBe('invalid_period');
    expect(await code('from=yesterday&to=2026-01-01')).toBe('invalid_period');
    expect(await code('from=2020-01-01&to=2026-01-01')).toBe('period_too_long');
    expect(await code('from=2025-01-01&to=2026-02-06')).toBe('period_too_long');
    expect((await call(base, 'GET', '/api/token/statement?account=wallet&from=2025-01-01&to=2026-02-05', undefined, h)).status).toBe(200);
    for (const [path, headers, status] of cases) {
      const r = await call(base, 'GET', path, undefined, headers);
      expect(r.status, path).toBe(status);
      expect(r.body.error, path).toMatchObject({ code: expect.any(String), message: expect.any(String) });
    }
    expect((await call(base, 'GET', `/api/token/statement?account=wallet&${period()}`, undefined, h)).body).toMatchObject({ opening: '0', closing: '0', transfers: [] });
    expect((await call(base, 'GET', `/api/token/ops/statement?account=escrow&${period()}`, undefined, opH())).status).toBe(200);
  });
});
