import { randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newWebhookSecret, startPaymentStandins, type PaymentStandins } from '../../src/payment/standins.js';
import { signIn } from '../support/auth.js';
import { call } from '../support/http.js';
import { paymentHubEnv } from '../support/payment.js';
import { startHubProcess, type HubProcess } from '../support/process.js';

/**
 * kill -9 of a real hub process in the middle of the payment relay's two-step work: a bank event and
 * its settlement (webhooks, lost webhooks and reconciliation pulls at once), a violation and its
 * collateral deduction (a burst of violations on funded challenges). Both steps land in one store
 * update, so there is no window to aim at: the process is killed at a random point of each burst,
 * restarted on the same data, and the invariants are checked after every restart.
 */

let n = 0;
const key = () => `ck-${process.pid}-${Date.now()}-${++n}`;
const DEAD = 'http://127.0.0.1:1/api/token/banking/webhook';

describe('kill -9 of the hub between the two steps of a payment', () => {
  let peers: PaymentStandins;
  const secret = newWebhookSecret();
  let hub: HubProcess | undefined;

  beforeAll(async () => {
    peers = await startPaymentStandins({ webhookSecret: secret });
  });
  afterAll(async () => {
    await hub?.stop('SIGKILL');
    await peers?.close();
  });

  const env = (name: string) =>
    paymentHubEnv(peers, secret, name, {
      extra: { LOG_LEVEL: 'info', RECONCILE_PERIOD_MS: '86400000', RECONCILE_LEASE_MS: '1500', OUTBOX_RETRY_MIN_MS: '50', OUTBOX_RETRY_MAX_MS: '200' },
    });
  const as = async (user: string) => ({ authorization: `Bearer ${await peers.banking.issueToken(user)}` });
  const operator = async (url: string) => ({ authorization: `Bearer ${await signIn(url, ['operator'])}` });
  const startOnramp = async (url: string, user: string, krw: number) => {
    const r = await call(url, 'POST', '/api/token/onramp', { amount_krw: krw, method: 'transfer' }, { ...(await as(user)), 'idempotency-key': key(), accept: 'application/json' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return new URL(r.body.location).searchParams;
  };
  /** Kills the running hub with SIGKILL after `ms`, while `burst` runs; waits for the burst to end. */
  const killDuring = async (h: HubProcess, ms: number, burst: Promise<unknown>) => {
    await sleep(ms);
    expect(await h.stop('SIGKILL')).toBe(null); // killed by the signal, not exited
    expect(h.child.signalCode).toBe('SIGKILL');
    await burst;
  };
  const ledgerOk = async (url: string, op: Record<string, string>) => {
    const check = await call(url, 'GET', '/api/token/ops/ledger/check', undefined, op);
    expect(check.status).toBe(200);
    expect(check.body.ledger).toMatchObject({ ok: true, mismatches: [] });
    expect(check.body.receipts.ok).toBe(true);
  };

  it('between a bank event and its settlement: each on-ramp is credited exactly once after restart', { timeout: 240_000 }, async () => {
    const e = env('pay-kill-bank');
    const users: { user: string; krw: number; payment?: string }[] = [];
    let killedWithWork = 0;
    for (let round = 0; round < 4; round++) {
      hub = await startHubProcess(e, 40_000);
      const url = hub.url;
      const op = await operator(url);
      const mine: { user: string; krw: number; payment?: string }[] = Array.from({ length: 12 }, (_, i) => ({ user: `kb${round}x${i}`, krw: 10_000 * (i + 1) + round }));
      const qs = await Promise.all(mine.map((m) => startOnramp(url, m.user, m.krw)));
      users.push(...mine);
      // the burst: the bank confirms every payment (a third with the webhook lost on the way) while
      // operators pull the bank's events as fast as the hub answers
      let stop = false;
      const pulls = (async () => {
        while (!stop) await call(url, 'POST', '/api/token/ops/reconcile', undefined, op).catch(() => sleep(5));
      })();
      const confirms = qs.map(async (q, i) => {
        await sleep(i * 10); // the last ones come after the kill (0..110 ms against 5..80): the hub is down
        if (i % 3 === 0) q.set('notify', DEAD);
        const r = await peers.banking.confirm(q.get('ref')!, q);
        mine[i]!.payment = r.payment_id;
      });
      const burst = Promise.all(confirms).then(() => ((stop = true), pulls));
      await killDuring(hub, randomInt(5, 80), burst);
      stop = true;
      await pulls;

      // restart on the same data; the pull settles what the webhooks and the killed pulls missed
      hub = await startHubProcess(e, 40_000);
      const op2 = await operator(hub.url);
      let pulled: any;
      for (let tries = 0; tries < 100; tries++) {
        pulled = (await call(hub.url, 'POST', '/api/token/ops/reconcile', undefined, op2)).body;
        if (pulled.status === 'done') break;
        await sleep(100); // the killed process's lease runs out (RECONCILE_LEASE_MS)
      }
      expect(pulled.status).toBe('done');
      expect(pulled.differences).toBe(0);
      if (pulled.credited > 0) killedWithWork++;
      for (const u of users) {
        const w = (await call(hub.url, 'GET', '/api/token/wallet?limit=100', undefined, await as(u.user))).body;
        const credits = w.history.filter((t: { code: string }) => t.code === 'onramp');
        expect(credits.map((t: { id: string }) => t.id)).toEqual([`onramp:${u.payment}`]);
        expect(w.balance).toBe(credits[0].amount);
      }
      await ledgerOk(hub.url, op2);
      // the bank's books and the hub's agree, count for count and won for won
      const days = new Set([...peers.banking.state.payments.values()].map((p) => new Date(p.ts).toISOString().slice(0, 10)));
      for (const day of days) {
        const s = (await call(hub.url, 'GET', `/api/token/ops/settlement?date=${day}`, undefined, op2)).body;
        expect(s.differences).toEqual([]);
        expect(s.balanced).toBe(true);
      }
      const total = [...peers.banking.state.payments.values()].reduce((a, p) => a + p.amount_krw, 0);
      expect(total).toBe(users.reduce((a, u) => a + u.krw, 0));
      await hub.stop('SIGKILL');
      hub = undefined;
    }
    // the lost webhooks leave work for the pull after every restart
    expect(killedWithWork).toBe(4);
  });

  it('between a violation and its deduction: every violation has exactly one deduction after restart', { timeout: 240_000 }, async () => {
    const e = env('pay-kill-violation');
    hub = await startHubProcess(e, 40_000);
    let op = await operator(hub.url);
    // six funded challenges: on-ramp, purchase, pass, scale-up (collateral in its own sub-account)
    const funded: { user: string; id: string; collateral: bigint }[] = [];
    for (let i = 0; i < 6; i++) {
      const user = `kv${i}`;
      const q = await startOnramp(hub.url, user, 600_000);
      expect((await peers.banking.confirm(q.get('ref')!, q)).webhook_status).toBe(200);
      const h = await as(user);
      const buy = await call(hub.url, 'POST', '/api/token/challenge/buy', { challenge_id: 'starter_10k', user_id: user }, { ...h, 'idempotency-key': key() });
      expect(buy.status).toBe(200);
      const id = buy.body.challenge as string;
      const pass = await call(hub.url, 'POST', `/api/token/ops/challenges/${id}/events`, { type: 'fill', event_id: 'pass', realized_cents: 100_000 }, { ...op, 'idempotency-key': key() });
      expect(pass.body).toMatchObject({ applied: true, state: 'passed' });
      const up = await call(hub.url, 'POST', '/api/token/challenge/scale-up', { challenge_id: id }, { ...h, 'idempotency-key': key() });
      expect(up.body).toMatchObject({ state: 'funded' });
      funded.push({ user, id, collateral: BigInt(up.body.collateral) });
    }

    const sent = new Map<string, string[]>(funded.map((f) => [f.id, []]));
    const from = new Date(Date.now() - 86_400_000).toISOString();
    let appliedBeforeKill = 0;
    for (let round = 0; round < 3; round++) {
      // the burst: three violations on each challenge at once, all dated now (the 30-day window holds them all)
      const ts = Date.now();
      const events = funded.flatMap((f) => [0, 1, 2].map((k) => ({ id: f.id, body: { type: 'violation', event_id: `v${round}x${k}`, rule: 'daily_loss', ts } })));
      for (const ev of events) sent.get(ev.id)!.push(ev.body.event_id);
      const url = hub.url;
      const post = (ev: (typeof events)[number], o: Record<string, string>, base = url) =>
        call(base, 'POST', `/api/token/ops/challenges/${ev.id}/events`, ev.body, { ...o, 'idempotency-key': key() });
      let first: () => void = () => undefined;
      const answered = new Promise<void>((r) => (first = r));
      const burst = Promise.all(
        events.map((ev) =>
          post(ev, op).then(
            (r) => {
              if (r.status === 200) appliedBeforeKill++;
              first();
            },
            () => undefined,
          ),
        ),
      );
      // killed once the first violation has been answered, at a random point of what is still running
      await Promise.race([answered, sleep(5_000)]);
      await killDuring(hub, randomInt(0, 15), burst);

      // restart on the same data; the operator (or the program) sends every violation again
      hub = await startHubProcess(e, 40_000);
      op = await operator(hub.url);
      for (const ev of events) {
        const r = await post(ev, op, hub.url);
        expect(r.status).toBe(200);
        expect(r.body.state).toBe('funded');
      }
      const to = new Date(Date.now() + 86_400_000).toISOString();
      for (const f of funded) {
        const mine = (await call(hub.url, 'GET', '/api/token/my/challenges', undefined, await as(f.user))).body.challenges.find((c: { id: string }) => c.id === f.id);
        const mySent = sent.get(f.id)!;
        expect(mine.violations).toHaveLength(mySent.length); // none lost, none doubled
        const st = await call(hub.url, 'GET', `/api/token/ops/statement?account=collateral_pool:${f.id}&from=${from}&to=${to}`, undefined, op);
        expect(st.status).toBe(200);
        const deductions = st.body.transfers.filter((t: { code: string }) => t.code === 'collateral_deduction');
        // the first violation of a funded account warns; every later one deducts 10 % of the collateral, once
        expect(deductions).toHaveLength(mySent.length - 1);
        const ids = deductions.map((t: { id: string }) => t.id);
        expect(new Set(ids).size).toBe(ids.length);
        for (const id of ids) expect(mySent.map((v) => `deduct:${f.id}:${v}`)).toContain(id);
        const each = (f.collateral * 10n) / 100n;
        for (const t of deductions) expect(BigInt(t.amount)).toBe(each);
        expect(BigInt(st.body.closing)).toBe(f.collateral - each * BigInt(deductions.length));
      }
      await ledgerOk(hub.url, op);
    }
    // some violations were answered before a kill: the kills fell inside the bursts, not before them
    expect(appliedBeforeKill).toBeGreaterThan(0);
  });
});
