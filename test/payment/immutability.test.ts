import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkLedger } from '../../src/payment/check.js';
import { K, ledgerUpdate, resolveKeys, transferKeys, type TransferInput } from '../../src/payment/ledger.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Json, Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';

// Defect 5 of the payment books: resolving a hold must not rewrite it. A hold is resolved by a new
// transfer that posts or voids it; every stored transfer keeps the bytes it was first written with,
// and every balance is the fold of the log.

describe('ledger: no stored transfer ever changes', () => {
  let store: Store;
  let dir: string;
  let now = 1_000;
  beforeAll(async () => {
    dir = tempDir('immutable');
    store = await openLmdbStore({ path: dir });
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const move = (t: TransferInput) => ledgerUpdate(store, () => ++now, transferKeys([t]), (tx) => ({ result: tx.transfer(t) }));
  const resolve = (pending: string, id: string, action: 'post' | 'void', accounts: string[]) =>
    ledgerUpdate(store, () => ++now, [...resolveKeys(pending, id), ...accounts.map((a) => K.account(a))], (tx) => ({ result: tx.resolve({ id, pending_id: pending, action }) }));
  /** Every transfer of the log, as stored. */
  const snapshot = async () => {
    const ids = (await store.indexRange(K.log)).map((e) => e.member);
    const recs = await store.getMany(ids.map((id) => K.transfer(id)));
    return new Map<string, Json | undefined>(ids.map((id, i) => [id, recs[i]]));
  };

  it('posting and voiding holds add transfers and change none; the log folds to the stored balances', async () => {
    await move({ id: 'fund', debit: 'bank', credit: 'escrow', amount: 1_000n, code: 'test' });
    await move({ id: 'h1', debit: 'escrow', credit: 'u:a:wallet', amount: 300n, code: 'payout', pending: true });
    await move({ id: 'h2', debit: 'escrow', credit: 'u:a:wallet', amount: 200n, code: 'payout', pending: true });
    const before = await snapshot();
    expect((before.get('h1') as { status: string }).status).toBe('pending');

    await resolve('h1', 'h1:post', 'post', ['escrow', 'u:a:wallet']);
    await resolve('h2', 'h2:void', 'void', ['escrow', 'u:a:wallet']);
    const after = await snapshot();
    for (const [id, v] of before) expect(after.get(id), `transfer ${id} was rewritten`).toEqual(v);
    expect([...after.keys()].sort()).toEqual(['fund', 'h1', 'h1:post', 'h2', 'h2:void']);
    expect(after.get('h1:post')).toMatchObject({ status: 'post', pending_id: 'h1', amount: '300' });
    expect(after.get('h2:void')).toMatchObject({ status: 'void', pending_id: 'h2', amount: '200' });

    // a second resolution of either is refused and writes nothing
    await expect(resolve('h1', 'h1:void', 'void', ['escrow', 'u:a:wallet'])).rejects.toMatchObject({ code: 'pending_resolved' });
    await expect(resolve('h2', 'h2:post', 'post', ['escrow', 'u:a:wallet'])).rejects.toMatchObject({ code: 'pending_resolved' });
    expect(await snapshot()).toEqual(after);

    const check = await checkLedger(store);
    expect(check).toMatchObject({ ok: true, transfers: 5, mismatches: [], negative: [] });
    expect(await store.get(K.account('escrow'))).toMatchObject({ credits_posted: '1000', debits_posted: '300', debits_pending: '0' });
    expect(await store.get(K.account('u:a:wallet'))).toMatchObject({ credits_posted: '300', credits_pending: '0' });
  });
});
