import fc from 'fast-check';
import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { K, ledgerUpdate, resolveKeys, parseAccount, availableOf, transferKeys, type TransferInput } from '../../src/payment/ledger.js';
import { checkLedger } from '../../src/payment/check.js';
import { RK, receiptWrites, verifyReceiptChain } from '../../src/payment/receipts.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Json, Store } from '../../src/store/port.js';
import { Corrections } from '../../src/payment/corrections.js';
import { Idempotency } from '../../src/idempotency.js';
import { PegService } from '../../src/payment/peg.js';
import { PaymentService } from '../../src/payment/service.js';
import { tempDir } from '../support/process.js';

/**
 * fc.commands against an in-memory model of the ledger: every command runs on the real ledger (LMDB)
 * and on the model; after each, balances agree; after each run, the log recomputes to the stored
 * totals, debits = credits, no non-boundary account is negative, holds resolved at most once, one
 * payout per (week, user), operator reversals once (never of a reversal, nor overdrawing), no stored
 * transfer ever changes (checked after every command), and the receipt chain verifies.
 */

const ACCOUNTS = ['bank', 'escrow', 'operating', 'u:a:wallet', 'u:b:wallet'];

interface Model {
  /** available (credits_posted - debits_posted - debits_pending) per account */
  avail: Map<string, bigint>;
  transfers: Map<string, { debit: string; credit: string; amount: bigint; code: string; pending: boolean; state: 'posted' | 'pending' | 'resolved' }>;
  resolutions: Map<string, string>;
  payouts: Set<string>;
  receipts: number;
}
interface Real {
  store: Store;
  now: number;
  /** Every stored transfer as first seen: none may ever change. */
  seen?: Map<string, Json | undefined>;
}

/** After each command: every transfer in the log is stored exactly as when it was first seen. */
async function immutable(r: Real) {
  const seen = (r.seen ??= new Map());
  const ids = (await r.store.indexRange(K.log)).map((e) => e.member);
  const recs = await r.store.getMany(ids.map((id) => K.transfer(id)));
  ids.forEach((id, i) => {
    if (seen.has(id)) expect(recs[i], `transfer ${id} changed`).toEqual(seen.get(id));
    else seen.set(id, recs[i]);
  });
  expect(ids.length).toBe(seen.size);
}

function corrections(r: Real) {
  const clock = { now: () => ++r.now };
  const peg = new PegService([], { windowMs: 1, maxGapMs: 1, minProviders: 1 });
  return new Corrections(new PaymentService({ store: r.store, clock, peg, idempotency: new Idempotency(r.store, clock), maxOnrampKrw: 1 }), r.store);
}

const av = (m: Model, a: string) => m.avail.get(a) ?? 0n;

async function outcome(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    if (err instanceof AppError) return err.code;
    throw err;
  }
}

async function realAvail(r: Real, a: string) {
  return availableOf(parseAccount(a, await r.store.get(K.account(a))));
}

class TransferCmd implements fc.AsyncCommand<Model, Real> {
  constructor(readonly t: TransferInput) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const t = this.t;
    const got = await outcome(ledgerUpdate(r.store, () => ++r.now, transferKeys([t]), (tx) => (tx.transfer(t), { result: undefined })));
    const prior = m.transfers.get(t.id);
    let want: string;
    if (prior) {
      want = prior.debit === t.debit && prior.credit === t.credit && prior.amount === t.amount && prior.code === t.code && prior.pending === Boolean(t.pending) ? 'ok' : 'transfer_id_conflict';
    } else if (t.debit !== 'bank' && av(m, t.debit) < t.amount) want = 'insufficient_balance';
    else {
      want = 'ok';
      m.avail.set(t.debit, av(m, t.debit) - t.amount);
      if (!t.pending) m.avail.set(t.credit, av(m, t.credit) + t.amount);
      m.transfers.set(t.id, { debit: t.debit, credit: t.credit, amount: t.amount, code: t.code, pending: Boolean(t.pending), state: t.pending ? 'pending' : 'posted' });
    }
    expect(got).toBe(want);
    for (const a of [t.debit, t.credit]) expect(await realAvail(r, a)).toBe(av(m, a));
    await immutable(r);
  }
  toString = () => `transfer(${this.t.id} ${this.t.debit}->${this.t.credit} ${this.t.amount}${this.t.pending ? ' pending' : ''})`;
}

class ResolveCmd implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly pending: string,
    readonly action: 'post' | 'void',
    readonly n: number,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const id = `${this.pending}:r${this.n}`;
    const p = m.transfers.get(this.pending);
    const keys = [...resolveKeys(this.pending, id), ...(p ? [K.account(p.debit), K.account(p.credit)] : [])];
    const got = await outcome(ledgerUpdate(r.store, () => ++r.now, keys, (tx) => (tx.resolve({ id, pending_id: this.pending, action: this.action }), { result: undefined })));
    let want: string;
    const prev = m.resolutions.get(id);
    if (prev !== undefined) want = prev === this.action ? 'ok' : 'transfer_id_conflict';
    else if (!p || !p.pending) want = 'pending_not_found';
    else if (p.state !== 'pending') want = 'pending_resolved';
    else {
      want = 'ok';
      p.state = 'resolved';
      m.resolutions.set(id, this.action);
      if (this.action === 'post') m.avail.set(p.credit, av(m, p.credit) + p.amount);
      else m.avail.set(p.debit, av(m, p.debit) + p.amount);
    }
    expect(got).toBe(want);
    await immutable(r);
  }
  toString = () => `resolve(${this.pending} ${this.action} #${this.n})`;
}

class PayoutCmd implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly week: number,
    readonly user: 'a' | 'b',
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    // the weekly payout's shape: ids derived from (week, user), linked pair, one receipt when new
    const ids = [`payout:W${this.week}:${this.user}:trader`, `payout:W${this.week}:${this.user}:platform`];
    const moves: TransferInput[] = [
      { id: ids[0]!, debit: 'escrow', credit: `u:${this.user}:wallet`, amount: 9n, code: 'payout' },
      { id: ids[1]!, debit: 'escrow', credit: 'operating', amount: 1n, code: 'payout_platform' },
    ];
    const got = await outcome(
      ledgerUpdate(r.store, () => ++r.now, [...transferKeys(moves), RK.head], (tx, get) => {
        for (const mv of moves) tx.transfer(mv);
        if (tx.replayed.length === moves.length) return { result: undefined };
        return { writes: receiptWrites(get(RK.head), { kind: 'payout', user: this.user, amount: '10', transfers: ids, ref: `W${this.week}`, ts: r.now }).writes, result: undefined };
      }),
    );
    const key = `${this.week}:${this.user}`;
    let want = 'ok';
    if (!m.payouts.has(key)) {
      if (av(m, 'escrow') < 10n) want = 'insufficient_balance';
      else {
        m.payouts.add(key);
        m.receipts++;
        m.avail.set('escrow', av(m, 'escrow') - 10n);
        m.avail.set(`u:${this.user}:wallet`, av(m, `u:${this.user}:wallet`) + 9n);
        m.avail.set('operating', av(m, 'operating') + 1n);
        for (const [i, mv] of moves.entries()) m.transfers.set(ids[i]!, { debit: mv.debit, credit: mv.credit, amount: mv.amount, code: mv.code, pending: false, state: 'posted' });
      }
    }
    expect(got).toBe(want);
    await immutable(r);
  }
  toString = () => `payout(W${this.week} ${this.user})`;
}

class ReverseCmd implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly week: number,
    readonly user: 'a' | 'b',
    readonly ofReversal: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const payout = `payout:W${this.week}:${this.user}:trader`;
    const target = this.ofReversal ? `reversal:${payout}` : payout;
    const got = await outcome(corrections(r).reverse(target, 'op', 'test'));
    const w = `u:${this.user}:wallet`;
    let want: string;
    if (!m.transfers.has(target)) want = 'transfer_not_found';
    else if (this.ofReversal) want = 'reversal_of_reversal';
    else if (m.transfers.has(`reversal:${payout}`)) want = 'already_reversed';
    else if (av(m, w) < 9n) want = 'insufficient_balance';
    else {
      want = 'ok';
      m.avail.set(w, av(m, w) - 9n);
      m.avail.set('escrow', av(m, 'escrow') + 9n);
      m.receipts++;
      m.transfers.set(`reversal:${payout}`, { debit: w, credit: 'escrow', amount: 9n, code: 'reversal', pending: false, state: 'posted' });
    }
    expect(got).toBe(want);
    await immutable(r);
  }
  toString = () => `reverse(${this.ofReversal ? 'reversal of ' : ''}W${this.week} ${this.user})`;
}

const account = fc.constantFrom(...ACCOUNTS);
const ids = fc.constantFrom('t1', 't2', 't3', 't4', 't5', 't6');
const commands = [
  fc.record({ id: ids, debit: account, credit: account, amount: fc.oneof(fc.bigInt(1n, 50n), fc.bigInt(2n ** 53n, 2n ** 80n)), pending: fc.boolean() })
    .filter((t) => t.debit !== t.credit)
    .map((t) => new TransferCmd({ ...t, code: 'test' })),
  fc.tuple(ids, fc.constantFrom<'post' | 'void'>('post', 'void'), fc.integer({ min: 0, max: 1 })).map(([p, a, n]) => new ResolveCmd(p, a, n)),
  fc.tuple(fc.integer({ min: 1, max: 3 }), fc.constantFrom<'a' | 'b'>('a', 'b')).map(([w, u]) => new PayoutCmd(w, u)),
  fc.tuple(fc.integer({ min: 1, max: 3 }), fc.constantFrom<'a' | 'b'>('a', 'b'), fc.boolean()).map(([w, u, rr]) => new ReverseCmd(w, u, rr)),
];

describe('ledger properties (fc.commands against a model)', () => {
  it('keeps every invariant through random command sequences', async () => {
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 40 }), async (cmds) => {
        const dir = tempDir('ledger-prop');
        const store = await openLmdbStore({ path: dir });
        try {
          const model: Model = { avail: new Map(), transfers: new Map(), resolutions: new Map(), payouts: new Set(), receipts: 0 };
          await fc.asyncModelRun(() => ({ model, real: { store, now: 1_000 } }), cmds);
          const report = await checkLedger(store);
          expect(report.mismatches).toEqual([]);
          expect(report.negative).toEqual([]);
          expect(report.debits).toBe(report.credits);
          const chain = await verifyReceiptChain(store);
          expect(chain).toEqual({ ok: true, count: model.receipts });
          for (const a of ACCOUNTS) expect(await realAvail({ store, now: 0 }, a)).toBe(av(model, a));
        } finally {
          await store.close();
          rmSync(dir, { recursive: true, force: true });
        }
      }),
      { numRuns: 40 },
    );
  });

  it('linked transfers land all or nothing (the two halves of a payout, a purchase and its fee)', async () => {
    const dir = tempDir('ledger-linked');
    const store = await openLmdbStore({ path: dir });
    try {
      const seed: TransferInput = { id: 'seed', debit: 'bank', credit: 'escrow', amount: 100n, code: 'seed' };
      await ledgerUpdate(store, () => 1, transferKeys([seed]), (tx) => (tx.transfer(seed), { result: undefined }));
      const trader: TransferInput = { id: 'payout:W1:a:trader', debit: 'escrow', credit: 'u:a:wallet', amount: 90n, code: 'payout' };
      const platform: TransferInput = { id: 'payout:W1:a:platform', debit: 'escrow', credit: 'operating', amount: 20n, code: 'payout_platform' };
      // the second half cannot be paid (escrow has 100, the pair needs 110): neither lands
      await expect(
        ledgerUpdate(store, () => 2, transferKeys([trader, platform]), (tx) => {
          tx.transfer(trader);
          tx.transfer(platform);
          return { result: undefined };
        }),
      ).rejects.toMatchObject({ code: 'insufficient_balance' });
      expect(await store.get(K.transfer(trader.id))).toBeUndefined();
      expect(await realAvail({ store, now: 0 }, 'escrow')).toBe(100n);
      expect(await realAvail({ store, now: 0 }, 'u:a:wallet')).toBe(0n);
      expect((await checkLedger(store)).ok).toBe(true);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

