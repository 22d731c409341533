import { afterAll, describe, expect, it, vi } from 'vitest';
import { outboxWrites } from '../../src/outbox.js';
import { canonicalJson, sha256Hex } from '../../src/canonical.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Json, Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';

// Receipts (src/payment/receipts.ts): numbered from 1, each hashed with SHA-256 over its canonical
// JSON including the previous receipt's hash (the first links to 64 zeros), stored, indexed (all and
// per user), the head moved and the receipt queued for the chain through the outbox, all in one
// write; the chain walk recomputes every hash in pages of 500. Loaded afresh in each test.
const load = () => {
  vi.resetModules();
  return import('../../src/payment/receipts.js');
};

const stores: Store[] = [];
afterAll(() => Promise.all(stores.map((s) => s.close())));
async function store() {
  const s = await openLmdbStore({ path: tempDir('pay-receipts') });
  stores.push(s);
  return s;
}

const TS = Date.UTC(2026, 10, 24, 12, 0, 0);
const body = (i: number, user: string | null = 'u1') => ({ kind: 'payment', user, amount: `${i}00`, transfers: [`t${i}`], ref: `r${i}`, ts: TS + i });

/** Appends receipts 1..n the way the payment service does: head read and receipt written in one update. */
async function chain(s: Store, n: number, user: (i: number) => string | null = () => 'u1') {
  const { RK, receiptWrites } = await load();
  const hashes: string[] = [];
  for (let i = 1; i <= n; i++) {
    const h = await s.update([RK.head], ([head]) => {
      const r = receiptWrites(head, body(i, user(i)));
      return { writes: r.writes, result: r.hash };
    });
    hashes.push(h);
  }
  return hashes;
}

describe('the keys and the genesis', () => {
  it('are fixed', async () => {
    const { GENESIS, RK } = await load();
    expect(GENESIS).toBe('0'.repeat(64));
    expect([RK.head, RK.receipt('h'), RK.all, RK.user('u'), RK.link('c')]).toEqual(['pay:receipt:head', 'pay:receipt:h', 'pay:receipts', 'pay:ureceipts:u', 'pay:chainlink:c']);
  });
});

describe('receiptWrites', () => {
  it('makes receipt 1 on the genesis, hashed over its canonical JSON, with every write of it', async () => {
    const { receiptWrites, receiptHash, LEDGER_NEAR } = await load();
    const r = receiptWrites(undefined, body(1));
    const receipt = { n: 1, prev_hash: '0'.repeat(64), ...body(1) };
    expect(r.receipt).toEqual(receipt);
    expect(r.hash).toBe(sha256Hex(canonicalJson(receipt)));
    expect(receiptHash(receipt)).toBe(r.hash);
    expect(r.writes).toEqual([
      { op: 'set', key: `pay:receipt:${r.hash}`, value: receipt },
      { op: 'set', key: 'pay:receipt:head', value: { hash: r.hash, n: 1 } },
      { op: 'index', key: 'pay:receipts', member: r.hash, score: 1 },
      ...outboxWrites({ id: `receipt:${r.hash}`, dest: 'chain', payload: { kind: 'receipt', data: { hash: r.hash, prev_hash: '0'.repeat(64), n: 1, kind: 'payment' } }, createdAt: TS + 1 }, LEDGER_NEAR),
      { op: 'index', key: 'pay:ureceipts:u1', member: r.hash, score: 1 },
    ]);
  });

  it('links to the head: the next number and the head hash; no user index without a user', async () => {
    const { receiptWrites } = await load();
    const r = receiptWrites({ hash: 'ab'.repeat(32), n: 41 } as Json, body(2, null));
    expect(r.receipt).toMatchObject({ n: 42, prev_hash: 'ab'.repeat(32), user: null });
    expect(r.writes.filter((w) => w.key.startsWith('pay:')).map((w) => w.key)).toEqual([`pay:receipt:${r.hash}`, 'pay:receipt:head', 'pay:receipts']);
    expect(r.writes.some((w) => w.key.startsWith('pay:ureceipts:'))).toBe(false);
    expect(r.writes[1]).toEqual({ op: 'set', key: 'pay:receipt:head', value: { hash: r.hash, n: 42 } });
    // a head without a number or hash counts from the start
    expect(receiptWrites({} as Json, body(3)).receipt).toMatchObject({ n: 1, prev_hash: '0'.repeat(64) });
  });

  it('changes the hash with any field', async () => {
    const { receiptWrites } = await load();
    const a = receiptWrites(undefined, body(1)).hash;
    expect(receiptWrites(undefined, { ...body(1), amount: '101' }).hash).not.toBe(a);
    expect(receiptWrites({ hash: 'f'.repeat(64), n: 0 } as Json, body(1)).hash).not.toBe(a);
  });
});

describe('chainEventWrites', () => {
  it('queues the event for the chain under its id', async () => {
    const { chainEventWrites, LEDGER_NEAR } = await load();
    expect(chainEventWrites('ev-1', 'payout', { a: 1 }, TS)).toEqual(outboxWrites({ id: 'ev-1', dest: 'chain', payload: { kind: 'payout', data: { a: 1 } }, createdAt: TS }, LEDGER_NEAR));
  });
});

describe('verifyReceiptChain', () => {
  it('accepts an empty chain and a whole one, over more than one page of 500', async () => {
    const { verifyReceiptChain } = await load();
    const s = await store();
    expect(await verifyReceiptChain(s)).toEqual({ ok: true, count: 0 });
    await chain(s, 501);
    expect(await verifyReceiptChain(s)).toEqual({ ok: true, count: 501 });
  });

  it('accepts exactly 500 receipts (one full page)', async () => {
    const { verifyReceiptChain } = await load();
    const s = await store();
    await chain(s, 500);
    expect(await verifyReceiptChain(s)).toEqual({ ok: true, count: 500 });
  });

  it('names the first receipt whose content, link or record is wrong', async () => {
    const { verifyReceiptChain, RK } = await load();
    const s = await store();
    const h = await chain(s, 4);
    const rec = (await s.get(RK.receipt(h[2]!))) as Record<string, Json>;
    await s.set(RK.receipt(h[2]!), { ...rec, amount: '999999' });
    expect(await verifyReceiptChain(s)).toEqual({ ok: false, count: 2, broken: h[2] });
    await s.set(RK.receipt(h[2]!), { ...rec, prev_hash: h[0]! });
    expect(await verifyReceiptChain(s)).toEqual({ ok: false, count: 2, broken: h[2] });
    await s.del(RK.receipt(h[2]!));
    expect(await verifyReceiptChain(s)).toEqual({ ok: false, count: 2, broken: h[2] });
    await s.set(RK.receipt(h[2]!), rec);
    expect(await verifyReceiptChain(s)).toEqual({ ok: true, count: 4 });
    // the first receipt must link to the genesis
    const first = (await s.get(RK.receipt(h[0]!))) as Record<string, Json>;
    await s.set(RK.receipt(h[0]!), { ...first, prev_hash: 'f'.repeat(64) });
    expect(await verifyReceiptChain(s)).toEqual({ ok: false, count: 0, broken: h[0] });
  });

  it('walks the receipts in their number order: two swapped break the link', async () => {
    const { verifyReceiptChain, RK } = await load();
    const s = await store();
    const h = await chain(s, 3);
    await s.index(RK.all, h[1]!, 3);
    await s.index(RK.all, h[2]!, 2);
    expect(await verifyReceiptChain(s)).toEqual({ ok: false, count: 1, broken: h[2] });
  });

  it('refuses a stored receipt that is not one (500 corrupt_record)', async () => {
    const { verifyReceiptChain, RK } = await load();
    const s = await store();
    const h = await chain(s, 2);
    const rec = (await s.get(RK.receipt(h[1]!))) as Record<string, Json>;
    for (const bad of [{ ...rec, n: '2' }, { ...rec, prev_hash: 7 }]) {
      await s.set(RK.receipt(h[1]!), bad as Json);
      await expect(verifyReceiptChain(s)).rejects.toMatchObject({ code: 'corrupt_record', message: 'a stored receipt is not readable' });
    }
  });

  it('finds a wrong receipt on the second page', async () => {
    const { verifyReceiptChain, RK } = await load();
    const s = await store();
    const h = await chain(s, 502);
    const rec = (await s.get(RK.receipt(h[500]!))) as Record<string, Json>;
    await s.set(RK.receipt(h[500]!), { ...rec, ref: 'changed' });
    expect(await verifyReceiptChain(s)).toEqual({ ok: false, count: 500, broken: h[500] });
  });

  it('needs the head on the last receipt', async () => {
    const { verifyReceiptChain, RK } = await load();
    const s = await store();
    const h = await chain(s, 3);
    await s.set(RK.head, { hash: h[1]!, n: 2 });
    expect(await verifyReceiptChain(s)).toEqual({ ok: false, count: 3, broken: 'head' });
    await s.del(RK.head);
    expect(await verifyReceiptChain(s)).toEqual({ ok: false, count: 3, broken: 'head' });
    const empty = await store();
    await empty.set(RK.head, { hash: h[0]!, n: 1 });
    expect(await verifyReceiptChain(empty)).toEqual({ ok: false, count: 0, broken: 'head' });
  });
});
