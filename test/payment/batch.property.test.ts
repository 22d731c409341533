import fc from 'fast-check';
import { rmSync } from 'node:fs';
import { setImmediate as tick } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { K, ledgerOp, resolveKeys, transferKeys, type TransferInput } from '../../src/payment/ledger.js';
import { LedgerBatcher, applyOps, type BatchTrace, type LedgerOp } from '../../src/payment/ledger-batch.js';
import { checkLedger } from '../../src/payment/check.js';
import { leafHash, treeHash } from '../../src/payment/merkle.js';
import { RK, receiptLeafData, receiptWrites, receipts, verifyReceiptChain } from '../../src/payment/receipts.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { openRedisStore } from '../../src/store/redis.js';
import type { Json, Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from '../support/redis.js';

/**
 * Batching changes nothing but the number of commits: requests fired concurrently, in any
 * interleaving and any batch shape (size, delay, commits in flight), leave the same balances, the
 * same transfers, the same receipts (the same Merkle root over them) and the same answer to every
 * caller as the same requests applied one by one in the order the batches recorded. Debits equal
 * credits; no stored transfer ever changes while the batches land.
 */

const redis = await redisOrSkip();

const ACCOUNTS = ['bank', 'escrow', 'operating', 'u:a:wallet', 'u:b:wallet', 'u:c:wallet'];

type Req =
  | { kind: 'transfer'; t: TransferInput; receipt: boolean }
  | { kind: 'resolve'; pending: string; action: 'post' | 'void'; n: number }
  | { kind: 'payout'; week: number; user: 'a' | 'b' | 'c'; amount: bigint }
  | { kind: 'linked'; user: 'a' | 'b' | 'c'; fee: bigint; n: number };

/** A request as the ledger step a service would ask for; `now` fixed per request so a replay is identical. */
function opOf(req: Req, now: number, pendings: Map<string, TransferInput>): LedgerOp<Json> {
  switch (req.kind) {
    case 'transfer':
      return ledgerOp(() => now, [...transferKeys([req.t]), RK.head], (tx, get) => {
        const t = tx.transfer(req.t);
        if (!req.receipt || tx.replayed.length > 0) return { result: t.id };
        return { writes: receiptWrites(get(RK.head), { kind: 'test', user: null, amount: req.t.amount.toString(), transfers: [t.id], ref: t.id, ts: now }).writes, result: t.id };
      });
    case 'resolve': {
      const id = `${req.pending}:r${req.n}`;
      const p = pendings.get(req.pending);
      const keys = [...resolveKeys(req.pending, id), ...(p ? [K.account(p.debit), K.account(p.credit)] : [])];
      return ledgerOp(() => now, keys, (tx) => ({ result: tx.resolve({ id, pending_id: req.pending, action: req.action }).status }));
    }
    case 'payout': {
      // a payout's shape: ids and record derived from (week, user), two linked halves, one receipt
      const rec = `pay:payout:W${req.week}:${req.user}`;
      const moves: TransferInput[] = [
        { id: `payout:W${req.week}:${req.user}:trader`, debit: 'escrow', credit: `u:${req.user}:wallet`, amount: req.amount - req.amount / 10n, code: 'payout' },
        { id: `payout:W${req.week}:${req.user}:platform`, debit: 'escrow', credit: 'operating', amount: req.amount / 10n, code: 'payout_platform' },
      ];
      return ledgerOp(() => now, [...transferKeys(moves), RK.head, rec], (tx, get) => {
        const done = get(rec);
        if (done) return { result: done };
        for (const m of moves) if (m.amount > 0n) tx.transfer(m);
        const r = receiptWrites(get(RK.head), { kind: 'payout', user: req.user, amount: req.amount.toString(), transfers: moves.map((m) => m.id), ref: `W${req.week}`, ts: now });
        const body = { status: 'paid', amount: req.amount.toString(), receipt_hash: r.hash };
        return { writes: [...r.writes, { op: 'set', key: rec, value: body }], result: body };
      });
    }
    case 'linked': {
      // a purchase's shape: the fee from the wallet and its receipt, and a second leg to operating
      const w = `u:${req.user}:wallet`;
      const a: TransferInput = { id: `buy:${req.user}:${req.n}:fee`, debit: w, credit: 'escrow', amount: req.fee, code: 'challenge_fee' };
      const b: TransferInput = { id: `buy:${req.user}:${req.n}:op`, debit: 'escrow', credit: 'operating', amount: 1n, code: 'fee_share' };
      return ledgerOp(() => now, [...transferKeys([a, b]), RK.head], (tx, get) => {
        tx.transfer(a);
        tx.transfer(b);
        if (tx.replayed.length === 2) return { result: 'replayed' };
        const r = receiptWrites(get(RK.head), { kind: 'challenge_purchase', user: req.user, amount: req.fee.toString(), transfers: [a.id, b.id], ref: a.id, ts: now });
        return { writes: r.writes, result: r.hash };
      });
    }
  }
}

const answer = (o: PromiseSettledResult<unknown>) =>
  o.status === 'fulfilled' ? { ok: o.value } : { err: o.reason instanceof AppError ? o.reason.code : String(o.reason) };

/** Everything the ledger holds that must agree: accounts, transfers, receipts and their Merkle root. */
async function snapshot(store: Store) {
  const accts = (await store.indexRange(K.accounts)).map((e) => e.member).sort();
  const accounts = Object.fromEntries(accts.map((a, i) => [a, i]));
  const values = await store.getMany(accts.map((a) => K.account(a)));
  accts.forEach((a, i) => (accounts[a] = values[i] as never));
  const ids = (await store.indexRange(K.log)).map((e) => e.member).sort();
  const xs = await store.getMany(ids.map((id) => K.transfer(id)));
  const transfers = Object.fromEntries(ids.map((id, i) => [id, xs[i]]));
  const hashes = (await store.indexRange(RK.all)).map((e) => e.member);
  const recs = await store.getMany(hashes.map((h) => RK.receipt(h)));
  const leaves = hashes.map((h, i) => leafHash(receiptLeafData(h, receipts.decode(recs[i])!)!));
  return { accounts, transfers, receipts: hashes, root: treeHash(leaves).toString('hex'), head: await store.get(RK.head) };
}

const user = fc.constantFrom<'a' | 'b' | 'c'>('a', 'b', 'c');
const tid = fc.constantFrom('t1', 't2', 't3', 't4', 't5', 't6', 't7', 't8');
const req: fc.Arbitrary<Req> = fc.oneof(
  fc
    .record({ id: tid, debit: fc.constantFrom(...ACCOUNTS), credit: fc.constantFrom(...ACCOUNTS), amount: fc.bigInt(1n, 60n), pending: fc.boolean(), receipt: fc.boolean() })
    .filter((t) => t.debit !== t.credit)
    .map(({ receipt, ...t }) => ({ kind: 'transfer' as const, t: { ...t, code: 'test' }, receipt })),
  fc.record({ pending: tid, action: fc.constantFrom<'post' | 'void'>('post', 'void'), n: fc.integer({ min: 0, max: 1 }) }).map((r) => ({ kind: 'resolve' as const, ...r })),
  fc.record({ week: fc.integer({ min: 1, max: 2 }), user, amount: fc.bigInt(1n, 40n) }).map((r) => ({ kind: 'payout' as const, ...r })),
  fc.record({ user, fee: fc.bigInt(1n, 30n), n: fc.integer({ min: 0, max: 3 }) }).map((r) => ({ kind: 'linked' as const, ...r })),
);
/** The money the requests move: the boundary funds escrow and the wallets first (in the same batches as the rest). */
const seeds: Req[] = [
  { kind: 'transfer', t: { id: 'seed:escrow', debit: 'bank', credit: 'escrow', amount: 120n, code: 'seed' }, receipt: true },
  { kind: 'transfer', t: { id: 'seed:a', debit: 'bank', credit: 'u:a:wallet', amount: 40n, code: 'seed' }, receipt: false },
  { kind: 'transfer', t: { id: 'seed:b', debit: 'bank', credit: 'u:b:wallet', amount: 40n, code: 'seed' }, receipt: true },
];

const scenario = fc.record({
  reqs: fc.array(req, { minLength: 1, maxLength: 40 }),
  /** Arrival: requests come in waves (all of a wave in one turn), a random pause between waves. */
  order: fc.array(fc.nat(), { minLength: 43, maxLength: 43 }),
  waves: fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 12 }),
  pauses: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 12, maxLength: 12 }),
  maxBatch: fc.integer({ min: 1, max: 16 }),
  maxInflight: fc.integer({ min: 1, max: 3 }),
  delayMs: fc.integer({ min: 0, max: 2 }),
});

type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

async function property(open: () => Promise<{ store: Store; done: () => Promise<unknown> }>, s: Scenario) {
  const all = [...seeds, ...s.reqs];
  // a random permutation of the arrivals
  const idx = all.map((_, i) => i).sort((x, y) => (s.order[x] ?? 0) - (s.order[y] ?? 0) || x - y);
  const pendings = new Map<string, TransferInput>();
  for (const r of all) if (r.kind === 'transfer' && r.t.pending && !pendings.has(r.t.id)) pendings.set(r.t.id, r.t);
  const ops = all.map((r, i) => opOf(r, 1_000 + i, pendings));
  const batched = await open();
  const single = await open();
  try {
    const b = new LedgerBatcher(batched.store, { maxBatch: s.maxBatch, maxInflight: s.maxInflight, delayMs: s.delayMs });
    const recorded: LedgerOp<unknown>[] = [];
    const traces: BatchTrace[] = [];
    b.onBatch = (t) => {
      traces.push(t);
      recorded.push(...t.ops);
    };
    const seen = new Map<string, Json | undefined>();
    const unchanged = async () => {
      const now = await snapshot(batched.store);
      for (const [id, v] of Object.entries(now.transfers)) {
        if (seen.has(id)) expect(v, `transfer ${id} changed`).toEqual(seen.get(id));
        else seen.set(id, v);
      }
    };
    const pending: Promise<unknown>[] = new Array(all.length);
    let at = 0;
    for (let w = 0; at < idx.length; w++) {
      const size = s.waves[w % s.waves.length]!;
      for (const i of idx.slice(at, at + size)) {
        pending[i] = b.run(ops[i]!);
        pending[i].catch(() => undefined); // read below, after the pauses
      }
      at += size;
      for (let p = 0; p < s.pauses[w % s.pauses.length]!; p++) await tick();
      await unchanged();
    }
    const got = (await Promise.allSettled(pending)).map(answer);
    await unchanged();
    expect(recorded.length).toBe(all.length);
    expect(traces.every((t) => t.ops.length <= s.maxBatch)).toBe(true);

    // the same requests, one by one, in the order the batches applied them
    const want = new Map<LedgerOp<unknown>, ReturnType<typeof answer>>();
    for (const op of recorded) {
      const one = await Promise.allSettled([single.store.update(op.keys, (cur) => applyOps(op.keys, cur, [op])).then(([o]) => (o!.ok ? o!.value : Promise.reject(o!.error)))]);
      want.set(op, answer(one[0]!));
    }
    ops.forEach((op, i) => expect(got[i], `answer to request ${i}`).toEqual(want.get(op)));
    const [x, y] = [await snapshot(batched.store), await snapshot(single.store)];
    expect(x).toEqual(y);
    const report = await checkLedger(batched.store);
    expect(report.mismatches).toEqual([]);
    expect(report.negative).toEqual([]);
    expect(report.debits).toBe(report.credits);
    expect((await verifyReceiptChain(batched.store)).ok).toBe(true);
  } finally {
    await batched.done();
    await single.done();
  }
}

const lmdb = async () => {
  const dir = tempDir('ledger-batch');
  const store = await openLmdbStore({ path: dir });
  return { store, done: async () => (await store.close(), rmSync(dir, { recursive: true, force: true })) };
};

describe('batched ledger = one by one in the recorded order', () => {
  it('LMDB: any interleaving and batch shape', { timeout: 240_000 }, async () => {
    await fc.assert(fc.asyncProperty(scenario, (s) => property(lmdb, s)), { numRuns: 40 });
  });

  it.skipIf(!redis.available)('Redis: any interleaving and batch shape', { timeout: 120_000 }, async () => {
    const prefixes: string[] = [];
    const open = async () => {
      const prefix = uniquePrefix('ledger-batch');
      prefixes.push(prefix);
      const store = await openRedisStore({ url: redis.url, prefix });
      return { store, done: async () => (await store.close(), await deletePrefix(redis.url, prefix)) };
    };
    await fc.assert(fc.asyncProperty(scenario, (s) => property(open, s)), { numRuns: 15 });
  });

  it('a batch applies many ops in one commit, and a failing op fails alone', async () => {
    const { store, done } = await lmdb();
    try {
      const b = new LedgerBatcher(store, { maxBatch: 100 });
      const traces: BatchTrace[] = [];
      b.onBatch = (t) => traces.push(t);
      const pend = new Map<string, TransferInput>();
      const reqs: Req[] = [
        seeds[0]!,
        { kind: 'payout', week: 1, user: 'a', amount: 50n },
        { kind: 'payout', week: 1, user: 'a', amount: 50n }, // the same week twice: one pays
        { kind: 'transfer', t: { id: 'over', debit: 'u:c:wallet', credit: 'escrow', amount: 5n, code: 'x' }, receipt: true }, // c has nothing
        { kind: 'linked', user: 'a', fee: 100n, n: 0 }, // a has 45: the pair fails together
        { kind: 'linked', user: 'a', fee: 40n, n: 1 },
      ];
      const out = (await Promise.allSettled(reqs.map((r, i) => b.run(opOf(r, 10 + i, pend))))).map(answer);
      expect(traces.length).toBe(1); // all in one batch, one commit
      expect(traces[0]!.ops.length).toBe(6);
      const paid = out[1]!.ok as { receipt_hash: string };
      expect(out[2]).toEqual({ ok: paid }); // the second payout of the week reads the first's record
      expect(out[3]).toEqual({ err: 'insufficient_balance' });
      expect(out[4]).toEqual({ err: 'insufficient_balance' });
      expect(await store.get(K.transfer('buy:a:0:fee'))).toBeUndefined();
      expect(await store.get(K.transfer('buy:a:0:op'))).toBeUndefined();
      expect(typeof out[5]!.ok).toBe('string');
      // three receipts, chained in the batch's order: seed, payout, purchase
      expect((await verifyReceiptChain(store))).toEqual({ ok: true, count: 3 });
      const head = (await store.get(RK.head)) as { hash: string; n: number };
      expect(head).toEqual({ hash: out[5]!.ok, n: 3 });
      expect((await checkLedger(store)).ok).toBe(true);
    } finally {
      await done();
    }
  });

  it('a full queue refuses the next step with 503 ledger_busy, moving nothing', async () => {
    const { store, done } = await lmdb();
    try {
      const b = new LedgerBatcher(store, { maxQueue: 2, maxInflight: 1 });
      const pend = new Map<string, TransferInput>();
      const reqs = [0, 1, 2, 3].map((i): Req => ({ kind: 'transfer', t: { id: `q${i}`, debit: 'bank', credit: 'escrow', amount: 1n, code: 'x' }, receipt: false }));
      // all four arrive in one turn: two wait for the next commit, the other two find the queue full
      const out = (await Promise.allSettled(reqs.map((r, i) => b.run(opOf(r, i, pend))))).map(answer);
      expect(out.slice(0, 2)).toEqual([{ ok: 'q0' }, { ok: 'q1' }]);
      expect(out[2]).toEqual({ err: 'ledger_busy' });
      expect(out[3]).toEqual({ err: 'ledger_busy' });
      expect(await store.get(K.transfer('q2'))).toBeUndefined();
      expect((await checkLedger(store)).ok).toBe(true);
    } finally {
      await done();
    }
  });
});
