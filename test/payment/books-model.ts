import fc from 'fast-check';
import { expect } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { AppError } from '../../src/errors.js';
import { checkLedger } from '../../src/payment/check.js';
import { Corrections } from '../../src/payment/corrections.js';
import { K, availableOf, collateralAccount, parseAccount, parseTransfer } from '../../src/payment/ledger.js';
import { PAYOUT, REVIEW_HOLD_MS } from '../../src/payment/payouts.js';
import { PNL } from '../../src/payment/lifecycle.js';
import type { BankingClient } from '../../src/payment/peers.js';
import { RECON, Reconciler, type BankEvent } from '../../src/payment/reconcile.js';
import { collateralFor, mulDivDown, offrampFee, payoutAt, payoutUnits, payoutWeekOf, split, usdMicroToUnits } from '../../src/payment/rules.js';
import { PK, challengeRecords } from '../../src/payment/service.js';
import type { Store } from '../../src/store/port.js';
import { deposit, passedChallenge, relay, wallet } from './support.js';

/**
 * The payment books as a model for fc.commands (test/payment/books.property.test.ts): on-ramp
 * payments confirmed by the bank's webhook and by the reconciliation pull in any order, weekly
 * payouts paid or held for review with a deadline, operator reversals, and collateral per challenge.
 * Every command runs on the real relay services over a real store and on the model; after each one
 * `invariants` checks the books as a ledger engineer would.
 */

const HOUR = 3_600_000;
const DAY = 86_400_000;
export const PEG = 1_350_000_000;
/** Three finished payout weeks. */
export const WEEKS = [0, 1, 2].map((i) => payoutWeekOf(Date.parse('2026-10-28T12:00:00Z') + i * 7 * DAY));
const T0 = payoutAt(WEEKS[2]!) + HOUR;
const ESCROW = 10n ** 18n;

/** Users paid weekly (a passed challenge each) and their realized P&L per week, in cents. */
export const PAYEES = ['p1', 'p2'] as const;
const CENTS: Record<string, number[]> = { p1: [40_000, 0, 12_345], p2: [7_500, 90_000, 1] };
/** On-ramp payments (the hub's on-ramp record exists; the bank has not answered yet). */
export const PAYMENTS = [
  { ref: 'or_0', pid: 'bp_0', user: 'p1', krw: 100_000 },
  { ref: 'or_1', pid: 'bp_1', user: 'p2', krw: 250_000 },
  { ref: 'or_2', pid: 'bp_2', user: 'p1', krw: 30_000 },
].map((p) => ({ ...p, usd: Math.floor((p.krw * 1_000_000) / 1350) }));
/** Passed challenges that can scale up (the figures of defect 1 for k1's two). */
export const CHALLENGES = [
  { id: 'c_k1a', user: 'k1', size: 10_000, peg: 2_529_785 },
  { id: 'c_k1b', user: 'k1', size: 25_000, peg: 2_529_783 },
  { id: 'c_k2a', user: 'k2', size: 10_000, peg: PEG },
  { id: 'c_k2b', user: 'k2', size: 10_000, peg: PEG },
];
/** What the collateral users start with: k1 can fund both, k2 only one. */
const DEPOSITS: [string, bigint][] = [['k1', 3_000_000_000n], ['k2', 500_000_000_000n]];

type Status = 'posted' | 'pending' | 'post' | 'void';
interface Xfer {
  debit: string;
  credit: string;
  amount: bigint;
  code: string;
  status: Status;
}
interface PayoutRec {
  status: string;
  total: bigint;
  trader: bigint;
  platform: bigint;
  holds: string[];
  expires?: number;
}
interface ChallengeModel {
  user: string;
  state: 'passed' | 'funded' | 'withdrawn';
  collateral: bigint;
  held: bigint;
  violations: number[];
  events: number;
  refunded?: bigint;
}
export interface Model {
  now: number;
  avail: Map<string, bigint>;
  xfers: Map<string, Xfer>;
  bank: ('open' | 'confirmed' | 'declined')[];
  onramp: ('open' | 'credited' | 'declined')[];
  /** Bank events the hub has not pulled yet (i: a payment, or an off-ramp of `offramps`). */
  unpulled: { type: 'confirmed' | 'declined' | 'bogus' | 'paid' | 'failed'; i: number }[];
  /** Every event the bank listed, in order (a replay lists one again). */
  listed: { type: 'confirmed' | 'declined' | 'bogus' | 'paid' | 'failed'; i: number }[];
  offramps: { id: string; user: string; net: bigint; fee: bigint; bank: 'sent' | 'paid' | 'failed'; hub: 'sent' | 'paid' | 'returned' }[];
  payouts: Map<string, PayoutRec>;
  expiredWarnings: number;
  chal: Map<string, ChallengeModel>;
}
export interface Real {
  store: Store;
  clock: ManualClock;
  services: ReturnType<typeof relay>;
  fix: Corrections;
  recon: Reconciler;
  bankEvents: BankEvent[];
  /** Every stored transfer (and hold resolution) as first written. */
  seen: Map<string, string>;
  /** The relay as a second hub process sees it (another store client on Redis; the same store on LMDB). */
  peer: ReturnType<typeof relay>;
}

const av = (m: Model, a: string) => m.avail.get(a) ?? 0n;
const add = (m: Model, a: string, d: bigint) => {
  if (a !== 'bank') m.avail.set(a, av(m, a) + d);
};
function move(m: Model, id: string, x: Xfer) {
  m.xfers.set(id, x);
  if (x.status === 'posted') {
    add(m, x.debit, -x.amount);
    add(m, x.credit, x.amount);
  } else if (x.status === 'pending') add(m, x.debit, -x.amount);
}

async function outcome<T>(p: Promise<T>): Promise<{ code: string; value?: T }> {
  try {
    return { code: 'ok', value: await p };
  } catch (err) {
    if (err instanceof AppError) return { code: err.code };
    throw err;
  }
}

/** The hub's reconciliation against the bank's event list (as the stand-in's GET /api/events pages it). */
function reconciler(svc: Real['services']['svc'], store: Store, bankEvents: BankEvent[]): Reconciler {
  const bank = { events: async (after: number, limit = 100) => ({ events: bankEvents.slice(after, after + limit), has_more: after + limit < bankEvents.length }) };
  return new Reconciler(svc, store, bank as unknown as BankingClient, { periodMs: 60_000, leaseMs: 30_000 });
}

/** A fresh world: escrow funded, payees with P&L, on-ramps opened, collateral users with deposits. */
export async function setup(store: Store, peerStore: Store = store): Promise<{ model: Model; real: Real }> {
  const clock = new ManualClock(T0);
  const services = relay(store, clock, { breakerPercent: 100n });
  const peer = relay(peerStore, clock, { breakerPercent: 100n });
  const bankEvents: BankEvent[] = [];
  const real: Real = { store, clock, services, fix: new Corrections(services.svc, store), recon: reconciler(services.svc, store, bankEvents), bankEvents, seen: new Map(), peer };
  const model: Model = { now: T0, avail: new Map(), xfers: new Map(), bank: PAYMENTS.map(() => 'open'), onramp: PAYMENTS.map(() => 'open'), unpulled: [], listed: [], offramps: [], payouts: new Map(), expiredWarnings: 0, chal: new Map() };
  const seed = async (id: string, account: string, amount: bigint) => {
    await deposit(store, T0, id, account, amount);
    move(model, id, { debit: 'bank', credit: account, amount, code: 'test', status: 'posted' });
  };
  await seed('seed:escrow', 'escrow', ESCROW);
  for (const [u, amount] of DEPOSITS) await seed(`seed:${u}`, wallet(u), amount);
  for (const u of PAYEES) {
    await passedChallenge(store, u, `c_${u}`, 'starter_10k', 10_000, PEG);
    for (const [i, w] of WEEKS.entries()) if (CENTS[u]![i]) await store.set(PNL(`c_${u}`, w), CENTS[u]![i]!);
  }
  for (const p of PAYMENTS) {
    await store.set(PK.onramp(p.ref), { id: p.ref, user: p.user, amount_krw: p.krw, method: 'card', peg_ppm: String(PEG), created_at: T0, state: 'open' });
  }
  for (const c of CHALLENGES) {
    await passedChallenge(store, c.user, c.id, 'starter_10k', c.size, c.peg);
    model.chal.set(c.id, { user: c.user, state: 'passed', collateral: collateralFor(c.size, BigInt(c.peg)), held: 0n, violations: [], events: 0 });
  }
  return { model, real };
}

// ---- invariants ---------------------------------------------------------------------------------

/** Checked after every command. */
export async function invariants(m: Model, r: Real): Promise<void> {
  const { store } = r;
  const ids = (await store.indexRange(K.log)).map((e) => e.member);
  expect(new Set(ids).size, 'a transfer id twice in the log').toBe(ids.length);
  const raw = await store.getMany(ids.map((id) => K.transfer(id)));
  const log = raw.map((v) => parseTransfer(v)!);

  // immutability: every stored transfer and hold resolution is byte-identical to its first writing
  const pendings = log.filter((t) => t.pending_id !== undefined).map((t) => t.pending_id!);
  const resolutions = await store.getMany(pendings.map((p) => K.resolution(p)));
  const now: [string, string][] = [...ids.map((id, i): [string, string] => [id, JSON.stringify(raw[i])]), ...pendings.map((p, i): [string, string] => [`resolution of ${p}`, JSON.stringify(resolutions[i])])];
  for (const [key, bytes] of now) {
    const first = r.seen.get(key);
    if (first === undefined) r.seen.set(key, bytes);
    else expect(bytes, `${key} changed`).toBe(first);
  }
  expect(r.seen.size, 'a stored transfer disappeared').toBe(now.length);

  // exactly the transfers the model made, with its fields; a hold's resolution names it
  expect([...ids].sort()).toEqual([...m.xfers.keys()].sort());
  for (const t of log) {
    const x = m.xfers.get(t.id)!;
    expect({ id: t.id, debit: t.debit, credit: t.credit, amount: t.amount, code: t.code, status: t.status }).toEqual({ id: t.id, ...x });
  }
  pendings.forEach((p, i) => {
    const by = log.find((t) => t.pending_id === p)!;
    expect(resolutions[i]).toEqual({ id: by.id, action: by.status });
  });
  expect(pendings.length, 'a hold resolved twice').toBe(new Set(pendings).size);

  // every balance is the fold of the log (recomputed here, independently of the ledger check)
  const fold = new Map<string, { dp: bigint; cp: bigint; dq: bigint; cq: bigint }>();
  const acct = (a: string) => fold.get(a) ?? (fold.set(a, { dp: 0n, cp: 0n, dq: 0n, cq: 0n }), fold.get(a)!);
  for (const t of log) {
    const d = acct(t.debit);
    const c = acct(t.credit);
    const sign = t.status === 'pending' ? 1n : t.status === 'posted' ? 0n : -1n;
    d.dq += sign * t.amount;
    c.cq += sign * t.amount;
    if (t.status === 'posted' || t.status === 'post') {
      d.dp += t.amount;
      c.cp += t.amount;
    }
  }
  const accounts = [...new Set([...fold.keys(), ...(await store.indexRange(K.accounts)).map((e) => e.member)])];
  const stored = (await store.getMany(accounts.map((a) => K.account(a)))).map((v, i) => parseAccount(accounts[i]!, v));
  stored.forEach((s) => {
    const f = fold.get(s.id) ?? { dp: 0n, cp: 0n, dq: 0n, cq: 0n };
    expect([s.id, s.debits_posted, s.credits_posted, s.debits_pending, s.credits_pending]).toEqual([s.id, f.dp, f.cp, f.dq, f.cq]);
    if (s.id !== 'bank') expect(availableOf(s), `${s.id} is negative`).toBe(av(m, s.id));
  });
  const check = await checkLedger(store);
  expect(check).toMatchObject({ ok: true, mismatches: [], negative: [] });
  expect(check.debits).toBe(check.credits);

  // a payment is credited at most once, whatever the order of webhook and pull
  for (const [i, p] of PAYMENTS.entries()) {
    const credits = log.filter((t) => t.code === 'onramp' && (t.meta as { ref?: string } | undefined)?.ref === p.ref);
    expect(credits.map((t) => t.id)).toEqual(m.onramp[i] === 'credited' ? [`onramp:${p.pid}`] : []);
    expect(((await store.get(PK.onramp(p.ref))) as { state: string }).state).toBe(m.onramp[i]);
  }

  // an off-ramp is tracked until the bank answers; a rejected one comes back once, with its fee
  for (const o of m.offramps) {
    expect(await r.recon.offrampStatus(o.id, o.user)).toMatchObject({ offramp: o.id, state: o.hub });
    expect(log.filter((t) => t.id === `${o.id}:return`).length).toBe(o.hub === 'returned' ? 1 : 0);
  }

  // a challenge's collateral is what its sub-account holds; a refund paid back exactly that
  for (const [id, c] of m.chal) {
    const rec = challengeRecords.decode(await store.get(PK.challenge(id)))!;
    expect([id, rec.state]).toEqual([id, c.state]);
    const posted = log.filter((t) => t.id === `collateral:${id}`).reduce((s, t) => s + t.amount, 0n);
    const deducted = log.filter((t) => t.code === 'collateral_deduction' && t.debit === collateralAccount(id)).reduce((s, t) => s + t.amount, 0n);
    const refunded = log.filter((t) => t.id === `refund:${id}`).reduce((s, t) => s + t.amount, 0n);
    expect(posted - deducted - refunded).toBe(c.held);
    if (c.state === 'withdrawn') {
      expect(rec.refunded).toBe(c.refunded!.toString());
      expect(refunded).toBe(posted - deducted);
    }
  }

  // holds: the payout record's status; an expired hold was voided, never posted
  for (const [key, p] of m.payouts) {
    const [week, user] = key.split('|') as [string, string];
    expect(((await store.get(PAYOUT.record(week, user))) as { status: string }).status).toBe(p.status);
    if (p.status === 'expired') for (const h of p.holds) expect(m.xfers.get(`${h}:void`)?.status).toBe('void');
  }
  const warnings = (await store.range(PAYOUT.warnings, 0, -1)) as { reason: string }[];
  expect(warnings.filter((w) => w.reason === 'review_expired').length).toBe(m.expiredWarnings);
}

// ---- commands -----------------------------------------------------------------------------------

type Cmd = fc.AsyncCommand<Model, Real>;
const always = () => true;
type Listed = Model['listed'][number];

/** The bank lists an event (in the model: not yet pulled). */
function list(m: Model, r: Real, ev: Listed, type: string, data: Record<string, unknown>) {
  m.unpulled.push(ev);
  m.listed.push(ev);
  const seq = r.bankEvents.length + 1;
  r.bankEvents.push({ id: `evt_${seq}`, seq, type, data });
}

/** The bank confirms a payment (once); its webhook arrives or is lost. Or a webhook is delivered again. */
class Webhook implements Cmd {
  constructor(readonly i: number, readonly lost: boolean) {}
  check = always;
  async run(m: Model, r: Real) {
    const p = PAYMENTS[this.i]!;
    if (m.bank[this.i] === 'open') {
      m.bank[this.i] = 'confirmed';
      list(m, r, { type: 'confirmed', i: this.i }, 'payment.confirmed', confirmation(this.i));
    }
    if (this.lost || m.bank[this.i] !== 'confirmed') return;
    const got = await outcome(r.services.svc.confirmOnramp({ payment_id: p.pid, ref: p.ref, amount_krw: p.krw, usd_micro: p.usd }));
    expect(got.code).toBe('ok');
    expect(got.value!.credited).toBe(credit(m, this.i));
  }
  toString = () => `webhook(${this.i}${this.lost ? ' lost' : ''})`;
}

const confirmation = (i: number) => {
  const p = PAYMENTS[i]!;
  return { payment_id: p.pid, ref: p.ref, amount_krw: p.krw, usd_micro: p.usd, user: p.user };
};

/** Credits payment i in the model unless it was credited; whether it credited. */
function credit(m: Model, i: number): boolean {
  if (m.onramp[i] === 'credited') return false;
  const p = PAYMENTS[i]!;
  m.onramp[i] = 'credited';
  move(m, `onramp:${p.pid}`, { debit: 'bank', credit: wallet(p.user), amount: usdMicroToUnits(BigInt(p.usd), BigInt(PEG)), code: 'onramp', status: 'posted' });
  return true;
}

/** A webhook (or an event in the bank's list) with another amount: nothing moves. */
/** A confirmation with another amount, for an unknown on-ramp, or an unknown off-ramp's outcome: nothing moves. */
class Forged implements Cmd {
  constructor(readonly i: number, readonly kind: 'amount' | 'unknown' | 'offramp', readonly viaPull: boolean) {}
  check = always;
  async run(m: Model, r: Real) {
    const p = PAYMENTS[this.i]!;
    if (this.kind === 'offramp') {
      list(m, r, { type: 'bogus', i: this.i }, 'offramp.failed', { key: `offramp:off_unknown${this.i}`, reason: 'forged' });
      return;
    }
    const data = { payment_id: `${p.pid}_x`, ref: this.kind === 'unknown' ? `${p.ref}_x` : p.ref, amount_krw: p.krw + (this.kind === 'amount' ? 1 : 0), usd_micro: p.usd };
    if (this.viaPull) list(m, r, { type: 'bogus', i: this.i }, 'payment.confirmed', data);
    else expect((await outcome(r.services.svc.confirmOnramp(data))).code).toBe(this.kind === 'amount' ? 'amount_mismatch' : 'onramp_not_found');
  }
  toString = () => `forged ${this.kind}(${this.i}${this.viaPull || this.kind === 'offramp' ? ' in the event list' : ' webhook'})`;
}

class Decline implements Cmd {
  constructor(readonly i: number) {}
  check = always;
  async run(m: Model, r: Real) {
    if (m.bank[this.i] !== 'open') return;
    m.bank[this.i] = 'declined';
    list(m, r, { type: 'declined', i: this.i }, 'payment.declined', { ref: PAYMENTS[this.i]!.ref });
  }
  toString = () => `bank declines(${this.i})`;
}

/** What a pull of every unpulled event does to the model; its report. */
function pulled(m: Model, r: Real) {
  const want = { status: 'done', events: m.unpulled.length, credited: 0, declined: 0, offramps_paid: 0, offramps_returned: 0, differences: 0, cursor: r.bankEvents.length };
  for (const ev of m.unpulled.splice(0)) {
    if (ev.type === 'confirmed' && credit(m, ev.i)) want.credited++;
    if (ev.type === 'declined' && m.onramp[ev.i] === 'open') {
      m.onramp[ev.i] = 'declined';
      want.declined++;
    }
    if (ev.type === 'bogus') want.differences++;
    const o = m.offramps[ev.i];
    if ((ev.type === 'paid' || ev.type === 'failed') && o && o.hub === 'sent') {
      if (ev.type === 'paid') {
        o.hub = 'paid';
        want.offramps_paid++;
      } else {
        o.hub = 'returned';
        want.offramps_returned++;
        move(m, `${o.id}:return`, { debit: 'bank', credit: wallet(o.user), amount: o.net + o.fee, code: 'offramp_return', status: 'posted' });
      }
    }
  }
  return want;
}

/** The hub pulls the bank's event list (or two hub processes at once: the lease lets one through). */
class Pull implements Cmd {
  constructor(readonly twice: boolean) {}
  check = always;
  async run(m: Model, r: Real) {
    const want = pulled(m, r);
    if (!this.twice) {
      expect(await r.recon.pull()).toMatchObject(want);
      return;
    }
    const other = reconciler(r.peer.svc, r.peer.store, r.bankEvents);
    const reports = await Promise.all([r.recon.pull(), other.pull()]);
    const done = reports.filter((x) => x.status === 'done');
    expect(done.length).toBeGreaterThan(0);
    const sum = (k: 'events' | 'credited' | 'declined' | 'offramps_paid' | 'offramps_returned' | 'differences') => done.reduce((n, x) => n + x[k], 0);
    const { status: _s, cursor: _c, ...counts } = want;
    expect({ events: sum('events'), credited: sum('credited'), declined: sum('declined'), offramps_paid: sum('offramps_paid'), offramps_returned: sum('offramps_returned'), differences: sum('differences') }).toEqual(counts);
    expect(await r.store.get(RECON.cursor)).toBe(r.bankEvents.length === 0 ? undefined : r.bankEvents.length);
  }
  toString = () => (this.twice ? 'pull in two processes at once' : 'pull');
}

/** The bank lists one of its events again (a replay): settled once all the same. */
class Replay implements Cmd {
  constructor(readonly n: number) {}
  check = always;
  async run(m: Model, r: Real) {
    if (r.bankEvents.length === 0) return;
    const j = this.n % r.bankEvents.length;
    const ev = r.bankEvents[j]!;
    list(m, r, m.listed[j]!, ev.type, ev.data);
  }
  toString = () => `bank lists event #${this.n} again`;
}

/**
 * The bank confirms payment i; its webhook reaches one hub process while another pulls the event
 * list, at the same time. Whichever wins credits; the other credits nothing.
 */
class Race implements Cmd {
  constructor(readonly i: number) {}
  check = always;
  async run(m: Model, r: Real) {
    if (m.bank[this.i] === 'open') {
      m.bank[this.i] = 'confirmed';
      list(m, r, { type: 'confirmed', i: this.i }, 'payment.confirmed', confirmation(this.i));
    }
    if (m.bank[this.i] !== 'confirmed') return;
    const open = m.onramp[this.i] !== 'credited';
    const [hook, pull] = await Promise.all([r.peer.svc.confirmOnramp(confirmation(this.i)), r.recon.pull()]);
    // in the model the pull credits payment i when it is still open (its confirmation is then
    // unpulled: pulling it would have credited it); in truth exactly one of the two did
    const want = pulled(m, r);
    if (!open) expect(hook.credited).toBe(false);
    expect(pull).toMatchObject({ ...want, credited: want.credited - (open && hook.credited ? 1 : 0) });
  }
  toString = () => `race webhook and pull(${this.i})`;
}

/** A user sends tokens out through the bank (net + 1.4 % fee). */
class Offramp implements Cmd {
  constructor(readonly user: string, readonly amount: bigint) {}
  check = always;
  async run(m: Model, r: Real) {
    const got = await outcome(r.services.svc.offramp(this.user, this.amount, {}));
    const fee = offrampFee(this.amount);
    let want = 'ok';
    if (this.amount - fee <= 0n) want = 'invalid_amount';
    else if (av(m, wallet(this.user)) < this.amount) want = 'insufficient_balance';
    expect(got.code).toBe(want);
    if (want !== 'ok') return;
    const id = (got.value as { offramp: string }).offramp;
    m.offramps.push({ id, user: this.user, net: this.amount - fee, fee, bank: 'sent', hub: 'sent' });
    move(m, `${id}:net`, { debit: wallet(this.user), credit: 'bank', amount: this.amount - fee, code: 'offramp', status: 'posted' });
    move(m, `${id}:fee`, { debit: wallet(this.user), credit: 'bank', amount: fee, code: 'offramp_fee', status: 'posted' });
  }
  toString = () => `offramp(${this.user} ${this.amount})`;
}

/** The bank pays an off-ramp or rejects it (once), in its event list. */
class OfframpOutcome implements Cmd {
  constructor(readonly n: number, readonly paid: boolean) {}
  check = always;
  async run(m: Model, r: Real) {
    if (m.offramps.length === 0) return;
    const k = this.n % m.offramps.length;
    const o = m.offramps[k]!;
    if (o.bank !== 'sent') return;
    o.bank = this.paid ? 'paid' : 'failed';
    list(m, r, { type: o.bank, i: k }, this.paid ? 'offramp.paid' : 'offramp.failed', { key: `offramp:${o.id}`, ...(this.paid ? {} : { reason: 'account closed' }) });
  }
  toString = () => `bank ${this.paid ? 'pays' : 'rejects'} off-ramp #${this.n}`;
}

const payoutKey = (w: number, u: string) => `${WEEKS[w]}|${u}`;

/** The relay as one hub process sees it. */
type Side = ReturnType<typeof relay> & { fix: Corrections };

/**
 * A request that may be sent twice at once (by two hub processes, or a retry racing the first): the
 * outcomes of the two are, in some order, the model's answer to the first and to the same request
 * again. `call` asks the real relay; `step` gives the model's answer and applies it.
 */
abstract class Op implements Cmd {
  constructor(readonly twice: boolean) {}
  abstract call(s: Side, m: Model): Promise<string>;
  abstract step(m: Model): string;
  abstract name(): string;
  /** Fixes what both calls send (read from the model before either runs). */
  prepare(_m: Model): void {}
  check = always;
  async run(m: Model, r: Real) {
    this.prepare(m);
    const sides: Side[] = [{ ...r.services, fix: r.fix }, ...(this.twice ? [{ ...r.peer, fix: new Corrections(r.peer.svc, r.peer.store) }] : [])];
    const got = await Promise.all(sides.map((side) => this.call(side, m)));
    const want = sides.map(() => this.step(m));
    expect(got.sort()).toEqual(want.sort());
  }
  toString = () => `${this.name()}${this.twice ? ' twice at once' : ''}`;
}

const code = async (p: Promise<unknown>) => (await outcome(p)).code;

class Payout extends Op {
  constructor(readonly w: number, readonly user: string, readonly hold: boolean, twice: boolean) {
    super(twice);
  }
  async call(s: Side) {
    return ((await s.pay.payout(WEEKS[this.w]!, this.user, {}, undefined, this.hold ? 'pool_floor_run' : undefined)) as { status: string }).status;
  }
  step(m: Model) {
    const week = WEEKS[this.w]!;
    const key = payoutKey(this.w, this.user);
    let p = m.payouts.get(key);
    if (!p) {
      const total = payoutUnits(CENTS[this.user]![this.w]!, 1_000_000n, 900_000n, BigInt(PEG));
      const { trader, platform } = split(total, 20n);
      const holds = [`payout:${week}:${this.user}:trader`, ...(platform > 0n ? [`payout:${week}:${this.user}:platform`] : [])];
      p = { status: total === 0n ? 'nothing' : this.hold ? 'review' : 'paid', total, trader, platform, holds };
      if (total > 0n) {
        const status = this.hold ? 'pending' : 'posted';
        move(m, holds[0]!, { debit: 'escrow', credit: wallet(this.user), amount: trader, code: 'payout', status });
        if (platform > 0n) move(m, holds[1]!, { debit: 'escrow', credit: 'operating', amount: platform, code: 'payout_platform', status });
      }
      if (this.hold && total > 0n) p.expires = m.now + REVIEW_HOLD_MS;
      m.payouts.set(key, p);
    }
    return p.status;
  }
  name = () => `payout(${WEEKS[this.w]} ${this.user}${this.hold ? ' held' : ''})`;
}

/** An operator approves or rejects a held payout. A hold past its deadline is no longer decided. */
class Decide extends Op {
  constructor(readonly w: number, readonly user: string, readonly action: 'approve' | 'reject', twice: boolean) {
    super(twice);
  }
  call(s: Side) {
    return code(s.pay.decide(`rv_${WEEKS[this.w]}_${this.user}`, this.action, 'ops', 'checked'));
  }
  step(m: Model) {
    const p = m.payouts.get(payoutKey(this.w, this.user));
    if (!p || p.expires === undefined) return 'review_not_found';
    if (p.status !== 'review') return 'review_closed';
    if (p.expires <= m.now) return 'review_expired';
    resolveHolds(m, p, this.action === 'approve' ? 'post' : 'void', this.action === 'approve' ? 'paid' : 'rejected');
    return 'ok';
  }
  name = () => `${this.action}(${WEEKS[this.w]} ${this.user})`;
}

function resolveHolds(m: Model, p: PayoutRec, action: 'post' | 'void', status: string) {
  p.status = status;
  for (const h of p.holds) {
    const x = m.xfers.get(h)!;
    m.xfers.set(`${h}:${action}`, { ...x, status: action });
    if (action === 'post') add(m, x.credit, x.amount);
    else add(m, x.debit, x.amount);
  }
}

class Advance implements Cmd {
  constructor(readonly ms: number) {}
  check = always;
  async run(m: Model, r: Real) {
    m.now += this.ms;
    r.clock.advance(this.ms);
  }
  toString = () => `advance(${this.ms} ms)`;
}

/**
 * The minute sweep of open reviews: every one past its deadline is voided once, with a warning (also
 * when two hub processes sweep at once: each review is voided by one of them).
 */
class Sweep implements Cmd {
  constructor(readonly twice: boolean) {}
  check = always;
  async run(m: Model, r: Real) {
    const want: string[] = [];
    for (const [key, p] of m.payouts) {
      if (p.status !== 'review' || p.expires! > m.now) continue;
      resolveHolds(m, p, 'void', 'expired');
      m.expiredWarnings++;
      want.push(`rv_${key.replace('|', '_')}`);
    }
    const got = await Promise.all([r.services.pay.expireReviews(), ...(this.twice ? [r.peer.pay.expireReviews()] : [])]);
    expect(got.flat().sort()).toEqual(want.sort());
    const open = await r.store.indexRange(PAYOUT.reviewsOpen);
    const recs = (await r.store.getMany(open.map((e) => PAYOUT.review(e.member)))) as { expires_at: number }[];
    for (const rv of recs) expect(rv.expires_at).toBeGreaterThan(m.now);
  }
  toString = () => `sweep reviews${this.twice ? ' in two processes at once' : ''}`;
}

const REVERSIBLE = ['payout', 'payout_platform', 'onramp'];

class Reverse extends Op {
  constructor(readonly target: string, twice: boolean) {
    super(twice);
  }
  call(s: Side) {
    return code(s.fix.reverse(this.target, 'ops', 'correction'));
  }
  step(m: Model) {
    const x = m.xfers.get(this.target);
    const id = `reversal:${this.target}`;
    if (!x) return 'transfer_not_found';
    if (x.code === 'reversal') return 'reversal_of_reversal';
    if (x.status === 'pending') return 'transfer_pending';
    if (x.status === 'void' || !REVERSIBLE.includes(x.code)) return 'not_reversible';
    if (m.xfers.has(id)) return 'already_reversed';
    if (av(m, x.credit) < x.amount) return 'insufficient_balance';
    move(m, id, { debit: x.credit, credit: x.debit, amount: x.amount, code: 'reversal', status: 'posted' });
    return 'ok';
  }
  name = () => `reverse(${this.target})`;
}

class ScaleUp extends Op {
  constructor(readonly id: string, twice: boolean) {
    super(twice);
  }
  call(s: Side, m: Model) {
    return code(s.life.scaleUp(m.chal.get(this.id)!.user, this.id, {}));
  }
  step(m: Model) {
    const c = m.chal.get(this.id)!;
    if (c.state !== 'passed') return 'challenge_not_passed';
    if (av(m, wallet(c.user)) < c.collateral) return 'insufficient_balance';
    c.state = 'funded';
    c.held = c.collateral;
    move(m, `collateral:${this.id}`, { debit: wallet(c.user), credit: collateralAccount(this.id), amount: c.collateral, code: 'collateral', status: 'posted' });
    return 'ok';
  }
  name = () => `scale-up(${this.id})`;
}

/** A rule violation from the challenge's program (a new event, or the last one again). */
class Violation extends Op {
  private ev = 0;
  private fresh = true;
  constructor(readonly id: string, readonly replay: boolean, twice: boolean) {
    super(twice);
  }
  override prepare(m: Model) {
    const c = m.chal.get(this.id)!;
    this.fresh = !(this.replay && c.events > 0);
    this.ev = this.fresh ? c.events : c.events - 1;
  }
  async call(s: Side, m: Model) {
    const got = await s.life.event(this.id, { type: 'violation', event_id: `v${this.ev}`, rule: 'daily_loss', ts: m.now });
    return `${got.applied ? 'applied' : 'seen'} ${got.state}`;
  }
  step(m: Model) {
    const c = m.chal.get(this.id)!;
    if (!this.fresh || c.events > this.ev) return `seen ${c.state}`;
    c.events = this.ev + 1;
    c.violations = [...c.violations, m.now].slice(-50);
    if (c.state !== 'funded' || c.violations.filter((t) => t > m.now - 30 * DAY && t <= m.now).length < 2) return `applied ${c.state}`;
    const amount = mulDivDown(c.collateral, 10n, 100n);
    const take = amount < c.held ? amount : c.held;
    if (take > 0n) {
      c.held -= take;
      move(m, `deduct:${this.id}:v${this.ev}`, { debit: collateralAccount(this.id), credit: 'escrow', amount: take, code: 'collateral_deduction', status: 'posted' });
    }
    return `applied ${c.state}`;
  }
  name = () => `violation(${this.id}${this.replay ? ' again' : ''})`;
}

class Withdraw extends Op {
  constructor(readonly id: string, twice: boolean) {
    super(twice);
  }
  async call(s: Side, m: Model) {
    const got = await outcome(s.life.withdraw(m.chal.get(this.id)!.user, this.id, {}));
    return got.code === 'ok' ? `refunded ${(got.value as { refunded: string }).refunded}` : got.code;
  }
  step(m: Model) {
    const c = m.chal.get(this.id)!;
    if (c.state !== 'funded') return 'challenge_not_funded';
    const refund = c.held;
    c.state = 'withdrawn';
    c.refunded = refund;
    c.held = 0n;
    if (refund > 0n) move(m, `refund:${this.id}`, { debit: collateralAccount(this.id), credit: wallet(c.user), amount: refund, code: 'collateral_refund', status: 'posted' });
    return `refunded ${refund}`;
  }
  name = () => `withdraw(${this.id})`;
}

/** Runs a command, then the invariants. */
class Checked implements Cmd {
  constructor(readonly inner: Cmd) {}
  check = (m: Readonly<Model>) => this.inner.check(m);
  async run(m: Model, r: Real) {
    await this.inner.run(m, r);
    await invariants(m, r);
  }
  toString = () => this.inner.toString();
}

// ---- arbitraries --------------------------------------------------------------------------------

const payment = fc.nat({ max: PAYMENTS.length - 1 });
const week = fc.nat({ max: WEEKS.length - 1 });
const payee = fc.constantFrom(...PAYEES);
const challenge = fc.constantFrom(...CHALLENGES.map((c) => c.id));
const payoutTransfer = fc
  .tuple(week, payee, fc.constantFrom('trader', 'platform'), fc.constantFrom('', ':post', ':void'))
  .map(([w, u, share, suffix]) => `payout:${WEEKS[w]}:${u}:${share}${suffix}`);
const reversible = fc.oneof(payoutTransfer, payment.map((i) => `onramp:${PAYMENTS[i]!.pid}`), fc.constantFrom('seed:escrow', 'collateral:c_k1a', 'nope'));
const target = fc.tuple(reversible, fc.nat({ max: 4 })).map(([t, n]) => (n === 0 ? `reversal:${t}` : t));

/** Now and then the same request twice at once. */
const twice = fc.nat({ max: 4 }).map((n) => n === 0);

export const reconciliation = [
  fc.tuple(payment, fc.boolean()).map(([i, lost]) => new Webhook(i, lost)),
  fc.tuple(payment, fc.constantFrom<'amount' | 'unknown' | 'offramp'>('amount', 'unknown', 'offramp'), fc.boolean()).map(([i, k, viaPull]) => new Forged(i, k, viaPull)),
  payment.map((i) => new Decline(i)),
  twice.map((t) => new Pull(t)),
  fc.nat({ max: 20 }).map((n) => new Replay(n)),
  payment.map((i) => new Race(i)),
  fc.tuple(payee, fc.constantFrom(1n, 70n, 1_000_000n, 10n ** 12n, 10n ** 15n)).map(([u, a]) => new Offramp(u, a)),
  fc.tuple(fc.nat({ max: 5 }), fc.boolean()).map(([n, paid]) => new OfframpOutcome(n, paid)),
];
export const holds = [
  fc.tuple(week, payee, fc.boolean(), twice).map(([w, u, h, t]) => new Payout(w, u, h, t)),
  fc.tuple(week, payee, fc.constantFrom<'approve' | 'reject'>('approve', 'reject'), twice).map(([w, u, a, t]) => new Decide(w, u, a, t)),
  fc.constantFrom(HOUR, 2 * DAY, 6 * DAY, REVIEW_HOLD_MS - 1, 1).map((ms) => new Advance(ms)),
  twice.map((t) => new Sweep(t)),
];
export const reversals = [fc.tuple(target, twice).map(([x, t]) => new Reverse(x, t))];
export const collateral = [
  fc.tuple(challenge, twice).map(([id, t]) => new ScaleUp(id, t)),
  fc.tuple(challenge, fc.nat({ max: 3 }), twice).map(([id, n, t]) => new Violation(id, n === 0, t)),
  fc.tuple(challenge, twice).map(([id, t]) => new Withdraw(id, t)),
  fc.constantFrom(HOUR, 20 * DAY).map((ms) => new Advance(ms)),
];

/** Every command checked by the invariants after it runs. */
export const commandsOf = (arbs: fc.Arbitrary<Cmd>[], maxCommands: number) => fc.commands(arbs.map((a) => a.map((c): Cmd => new Checked(c))), { maxCommands, size: 'medium' });
