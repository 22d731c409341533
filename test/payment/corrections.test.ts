import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { checkLedger } from '../../src/payment/check.js';
import { Corrections } from '../../src/payment/corrections.js';
import { K, balanceOf, ledgerUpdate, parseAccount, resolveKeys, transferKeys } from '../../src/payment/ledger.js';
import { statement, statementCsv } from '../../src/payment/statements.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { deposit, logTransfers, relay, wallet } from './support.js';

describe('corrections and statements on the ledger', () => {
  let store: Store;
  let dir: string;
  const clock = new ManualClock(Date.parse('2026-11-18T12:00:00Z'));
  beforeAll(async () => {
    dir = tempDir('corrections');
    store = await openLmdbStore({ path: dir });
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const bal = async (a: string) => balanceOf(parseAccount(a, await store.get(K.account(a))));
  const code = async (p: Promise<unknown>) => p.then(() => 'ok', (e: { code?: string }) => e.code ?? String(e));

  it('reverses a posted payout and an on-ramp credit once, by a new linked transfer; refuses the rest with nothing moved', async () => {
    const { svc } = relay(store, clock);
    const fix = new Corrections(svc, store);
    const t0 = clock.now();
    await deposit(store, t0, 'fund-escrow', 'escrow', 1_000_000n);
    const move = (id: string, debit: string, credit: string, amount: bigint, c: string, pending = false) =>
      ledgerUpdate(store, () => (clock.advance(10), clock.now()), transferKeys([{ id, debit, credit, amount, code: c, pending }]), (tx) => ({ result: tx.transfer({ id, debit, credit, amount, code: c, pending }) }));
    clock.advance(1000);
    await move('onramp:p1', 'bank', wallet('r1'), 5_000n, 'onramp');
    await move('payout:2026-W48:r1:trader', 'escrow', wallet('r1'), 900n, 'payout');
    await move('payout:2026-W49:r1:trader', 'escrow', wallet('r1'), 300n, 'payout', true); // a hold
    await move('buy:c1:wallet', wallet('r1'), 'escrow', 100n, 'challenge_fee');
    const before = await logTransfers(store);

    // refusals: unknown, a hold, a purchase: nothing moved
    expect(await code(fix.reverse('nope', 'ops', 'x'))).toBe('transfer_not_found');
    expect(await code(fix.reverse('payout:2026-W49:r1:trader', 'ops', 'x'))).toBe('transfer_pending');
    expect(await code(fix.reverse('buy:c1:wallet', 'ops', 'x'))).toBe('not_reversible');
    expect(await logTransfers(store)).toEqual(before);

    clock.advance(1000);
    const r = (await fix.reverse('payout:2026-W48:r1:trader', 'ops-kim', 'paid to the wrong week')) as { reversal: Record<string, unknown> };
    expect(r.reversal).toMatchObject({ id: 'reversal:payout:2026-W48:r1:trader', debit: wallet('r1'), credit: 'escrow', amount: '900', code: 'reversal', meta: { reverses: 'payout:2026-W48:r1:trader', reason: 'paid to the wrong week', by: 'ops-kim' } });
    // the user spent part of the on-ramp: its reversal would overdraw the wallet, so nothing moves
    const spent = await logTransfers(store);
    expect(await code(fix.reverse('onramp:p1', 'ops-kim', 'chargeback'))).toBe('insufficient_balance');
    expect(await logTransfers(store)).toEqual(spent);
    await move('topup2', 'bank', wallet('r1'), 100n, 'test');
    clock.advance(1000);
    await fix.reverse('onramp:p1', 'ops-kim', 'chargeback');
    expect(await bal(wallet('r1'))).toBe(5_000n + 900n - 100n - 900n + 100n - 5_000n);
    const after = await logTransfers(store);
    expect(await code(fix.reverse('onramp:p1', 'ops-kim', 'again'))).toBe('already_reversed');
    expect(await code(fix.reverse('reversal:onramp:p1', 'ops-kim', 'undo'))).toBe('reversal_of_reversal');
    expect(await logTransfers(store)).toEqual(after);
    // the originals are untouched
    for (const t of before) expect(after.find((x) => x.id === t.id)).toEqual(t);

    // the hold posted by its review can then be reversed (the posting, not the hold)
    await ledgerUpdate(store, () => (clock.advance(10), clock.now()), [...resolveKeys('payout:2026-W49:r1:trader', 'payout:2026-W49:r1:trader:post'), K.account('escrow'), K.account(wallet('r1'))], (tx) => ({
      result: tx.resolve({ id: 'payout:2026-W49:r1:trader:post', pending_id: 'payout:2026-W49:r1:trader', action: 'post' }),
    }));
    clock.advance(1000);
    await fix.reverse('payout:2026-W49:r1:trader:post', 'ops-kim', 'review was wrong');
    expect(await bal(wallet('r1'))).toBe(0n);
    expect(await checkLedger(store)).toMatchObject({ ok: true });

    // the wallet's statement: opening, every transfer with its running balance, closing = the stored balance
    const s = await statement(store, wallet('r1'), t0 + 500, clock.now() + 1);
    expect(s.opening).toBe('0');
    expect(s.transfers.map((x) => [x.id, x.change, x.pending_change, x.balance])).toEqual([
      ['onramp:p1', '5000', '0', '5000'],
      ['payout:2026-W48:r1:trader', '900', '0', '5900'],
      ['payout:2026-W49:r1:trader', '0', '300', '5900'],
      ['buy:c1:wallet', '-100', '0', '5800'],
      ['reversal:payout:2026-W48:r1:trader', '-900', '0', '4900'],
      ['topup2', '100', '0', '5000'],
      ['reversal:onramp:p1', '-5000', '0', '0'],
      ['payout:2026-W49:r1:trader:post', '300', '-300', '300'],
      ['reversal:payout:2026-W49:r1:trader:post', '-300', '0', '0'],
    ].map(([id, ch, pc, b]) => [id, ch, pc, b]));
    expect(s.closing).toBe((await bal(wallet('r1'))).toString());
    expect(BigInt(s.opening) + BigInt(s.credits) - BigInt(s.debits)).toBe(BigInt(s.closing));
    // a later period opens on the earlier one's closing
    const mid = s.transfers[3]!.ts;
    const a = await statement(store, wallet('r1'), t0 + 500, mid);
    const b = await statement(store, wallet('r1'), mid, clock.now() + 1);
    expect(b.opening).toBe(a.closing);
    expect(b.closing).toBe(s.closing);
    // escrow's statement closes on its stored balance too
    const e = await statement(store, 'escrow', 0, clock.now() + 1);
    expect(e.closing).toBe((await bal('escrow')).toString());
    const csv = statementCsv(s).trim().split('\r\n');
    expect(csv[0]).toBe('row,time,transfer,code,status,debit,credit,amount,change,pending_change,balance,pending_id,reverses');
    expect(csv).toHaveLength(s.transfers.length + 3);
    expect(csv.at(-1)).toMatch(/^closing,.*,0,,$/);
  });
});
