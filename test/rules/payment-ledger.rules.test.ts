import fc from 'fast-check';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { AppError } from '../../src/errors.js';
import {
  BOUNDARY_ACCOUNT,
  K,
  LedgerTx,
  MAX_AMOUNT,
  SYSTEM_ACCOUNTS,
  TOKEN_DECIMALS,
  UNIT,
  accountJson,
  availableOf,
  balanceOf,
  checkAmount,
  ledgerUpdate,
  parseAccount,
  parseTransfer,
  readAccount,
  transferJson,
  transferKeys,
  userAccount,
  type Account,
  type Transfer,
  type TransferInput,
} from '../../src/payment/ledger.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Json, Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';

// The payment ledger's rules as pure functions over the values one update read (LedgerTx):
// amounts 1..10^30, ids and account names bounded, no overdraft except at the bank boundary,
// holds reduce what can be spent, a hold resolves once, a replay with the same fields is the same
// transfer and with other fields a conflict.

const acct = (id: string, credits = 0n, debits = 0n, debitsPending = 0n): Json =>
  accountJson({ id, credits_posted: credits, debits_posted: debits, debits_pending: debitsPending, credits_pending: 0n });

function tx(values: Record<string, Json | undefined>, now = 1000): LedgerTx {
  return new LedgerTx(new Map(Object.entries(values)), now);
}
/** A tx that has read the transfer ids and both accounts; `alice` holds `balance`. */
function world(balance: bigint, ids: string[] = ['t1', 't2', 'r1', 'r2'], extra: Record<string, Json | undefined> = {}): LedgerTx {
  const values: Record<string, Json | undefined> = { [K.account('alice')]: acct('alice', balance), [K.account('bob')]: undefined, [K.account(BOUNDARY_ACCOUNT)]: undefined, ...extra };
  for (const id of ids) {
    if (!(K.transfer(id) in values)) values[K.transfer(id)] = undefined;
    if (!(K.resolution(id) in values)) values[K.resolution(id)] = undefined;
  }
  return tx(values);
}
const code = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (e) {
    if (e instanceof AppError) return e.code;
    throw e;
  }
  return undefined;
};
/** The refusal `fn` throws, as the hub's error shape sees it: kind (its HTTP status), code, message, details. */
const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    if (e instanceof AppError) return { kind: e.kind, code: e.code, message: e.message, details: e.details };
    throw e;
  }
  return undefined;
};
const pay = (over: Partial<TransferInput> = {}): TransferInput => ({ id: 't1', debit: 'alice', credit: 'bob', amount: 10n, code: 'test', ...over });

describe('ledger figures', () => {
  it('6 decimals, amounts up to 10^30, the bank is the boundary', () => {
    expect(TOKEN_DECIMALS).toBe(6);
    expect(UNIT).toBe(1_000_000n);
    expect(MAX_AMOUNT).toBe(10n ** 30n);
    expect(BOUNDARY_ACCOUNT).toBe('bank');
    expect(SYSTEM_ACCOUNTS).toContain('bank');
    expect(userAccount('u1', 'wallet')).toBe('u:u1:wallet');
    expect([K.account('a'), K.transfer('t'), K.log, K.history('a'), K.accounts]).toEqual(['pay:acct:a', 'pay:xfer:t', 'pay:log', 'pay:hist:a', 'pay:accounts']);
  });
  it('checkAmount: 0 and 10^30 + 1 refused, 1 and 10^30 accepted', () => {
    expect(() => checkAmount(0n)).toThrow(AppError);
    expect(() => checkAmount(-1n)).toThrow(AppError);
    expect(code(() => checkAmount(MAX_AMOUNT + 1n))).toBe('invalid_amount');
    expect(() => checkAmount(1n)).not.toThrow();
    expect(() => checkAmount(MAX_AMOUNT)).not.toThrow();
  });
});

describe('records', () => {
  it('accounts round-trip through JSON; anything unreadable reads as zero', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 31n), max: 10n ** 31n }), fc.bigInt({ min: 0n, max: 10n ** 31n }), fc.bigInt({ min: 0n, max: 10n ** 9n }), fc.bigInt({ min: 0n, max: 10n ** 9n }), (a, b, c, d) => {
        const x: Account = { id: 'x', credits_posted: a, debits_posted: b, debits_pending: c, credits_pending: d };
        expect(parseAccount('x', accountJson(x))).toEqual(x);
        expect(balanceOf(x)).toBe(a - b);
        expect(availableOf(x)).toBe(a - b - c);
      }),
    );
    const zero = { id: 'z', debits_posted: 0n, credits_posted: 0n, debits_pending: 0n, credits_pending: 0n };
    expect(parseAccount('z', undefined)).toEqual(zero);
    expect(parseAccount('z', null)).toEqual(zero);
    expect(parseAccount('z', ['1'])).toEqual(zero);
    expect(parseAccount('z', { credits_posted: 5 as unknown as string, debits_posted: '1.5', debits_pending: 'x1', credits_pending: '2x' })).toEqual(zero);
    expect(parseAccount('z', { credits_posted: '-7' }).credits_posted).toBe(-7n);
  });
  it('transfers round-trip through JSON, optional fields only when present', () => {
    const t: Transfer = { id: 't', debit: 'a', credit: 'b', amount: 12n, code: 'fee', status: 'posted', ts: 5 };
    expect(transferJson(t)).toEqual({ id: 't', debit: 'a', credit: 'b', amount: '12', code: 'fee', status: 'posted', ts: 5 });
    expect(parseTransfer(transferJson(t))).toEqual(t);
    const full: Transfer = { ...t, status: 'post', pending_id: 'p', meta: { k: 1 } };
    expect(parseTransfer(transferJson(full))).toEqual(full);
    expect(parseTransfer(undefined)).toBeUndefined();
    expect(parseTransfer(null)).toBeUndefined();
    expect(parseTransfer(['t'])).toBeUndefined();
    expect(parseTransfer({ id: 1 })).toBeUndefined();
    expect(parseTransfer({ id: 't', pending_id: 3 })).not.toHaveProperty('pending_id');
  });
  it('transferKeys: each transfer and both accounts, once', () => {
    expect(transferKeys([pay(), pay({ id: 't2', debit: 'bob', credit: 'alice' })])).toEqual([K.transfer('t1'), K.account('alice'), K.account('bob'), K.transfer('t2')]);
    expect(transferKeys([])).toEqual([]);
  });
});

describe('transfers', () => {
  it('ids of 1 to 200 characters, account names of 1 to 160, of A-Z a-z 0-9 _ : . -', () => {
    const id200 = 'i'.repeat(200);
    expect(code(() => world(100n, [id200]).transfer(pay({ id: id200 })))).toBeUndefined();
    expect(code(() => world(100n, ['i'.repeat(201)]).transfer(pay({ id: 'i'.repeat(201) })))).toBe('invalid_transfer_id');
    expect(code(() => world(100n, ['']).transfer(pay({ id: '' })))).toBe('invalid_transfer_id');
    expect(code(() => world(100n, ['a b']).transfer(pay({ id: 'a b' })))).toBe('invalid_transfer_id');
    const a160 = 'a'.repeat(160);
    expect(code(() => world(100n, ['t1'], { [K.account(a160)]: undefined }).transfer(pay({ credit: a160 })))).toBeUndefined();
    expect(code(() => world(100n).transfer(pay({ credit: 'a'.repeat(161) })))).toBe('invalid_account');
    expect(code(() => world(100n).transfer(pay({ debit: 'al ice' })))).toBe('invalid_account');
    expect(code(() => world(100n).transfer(pay({ credit: '' })))).toBe('invalid_account');
    expect(code(() => world(100n).transfer(pay({ credit: 'alice' })))).toBe('same_account');
    expect(code(() => world(100n).transfer(pay({ amount: 0n })))).toBe('invalid_amount');
  });

  it('no overdraft: the whole balance can be spent, one minor unit more cannot', () => {
    expect(world(10n).transfer(pay({ amount: 10n })).status).toBe('posted');
    const e = (() => {
      try {
        world(10n).transfer(pay({ amount: 11n }));
      } catch (err) {
        return err as AppError;
      }
    })();
    expect(e).toBeInstanceOf(AppError);
    expect(e!.code).toBe('insufficient_balance');
    expect(e!.kind).toBe('conflict');
    expect(e!.details).toEqual({ account: 'alice', shortfall: '1' });
  });

  it('the bank boundary may go below zero; no other account may', () => {
    const t = world(0n);
    t.transfer(pay({ debit: BOUNDARY_ACCOUNT, credit: 'bob', amount: 500n }));
    expect(balanceOf(t.account(BOUNDARY_ACCOUNT))).toBe(-500n);
    expect(balanceOf(t.account('bob'))).toBe(500n);
    expect(code(() => world(0n).transfer(pay({ debit: 'bob', credit: 'alice', amount: 1n })))).toBe('insufficient_balance');
  });

  it('a hold reduces what can be spent, not the balance; posting moves it, voiding frees it', () => {
    const t = world(100n);
    const hold = t.transfer(pay({ id: 't1', amount: 60n, pending: true }));
    expect(hold.status).toBe('pending');
    const a = t.account('alice');
    expect([balanceOf(a), availableOf(a)]).toEqual([100n, 40n]);
    expect(t.account('bob').credits_pending).toBe(60n);
    expect(balanceOf(t.account('bob'))).toBe(0n);
    expect(code(() => t.transfer(pay({ id: 't2', amount: 41n })))).toBe('insufficient_balance');
    const posted = t.resolve({ id: 'r1', pending_id: 't1', action: 'post' });
    expect(posted).toMatchObject({ id: 'r1', status: 'post', pending_id: 't1', amount: 60n, debit: 'alice', credit: 'bob', ts: 1000 });
    expect([balanceOf(t.account('alice')), availableOf(t.account('alice'))]).toEqual([40n, 40n]);
    expect([balanceOf(t.account('bob')), t.account('bob').credits_pending]).toEqual([60n, 0n]);
    expect(code(() => t.resolve({ id: 'r2', pending_id: 't1', action: 'void' }))).toBe('pending_resolved');

    const v = world(100n);
    v.transfer(pay({ id: 't1', amount: 60n, pending: true }));
    expect(v.resolve({ id: 'r1', pending_id: 't1', action: 'void' }).status).toBe('void');
    expect([balanceOf(v.account('alice')), availableOf(v.account('alice'))]).toEqual([100n, 100n]);
    expect(balanceOf(v.account('bob'))).toBe(0n);
    const again = (() => {
      try {
        v.resolve({ id: 'r2', pending_id: 't1', action: 'post' });
      } catch (e) {
        return (e as Error).message;
      }
    })();
    expect(again).toBe('pending transfer t1 is already voided');
  });

  it('resolving something that is not a hold is not found; a bad resolution id is refused', () => {
    const t = world(100n);
    t.transfer(pay({ id: 't1' }));
    expect(code(() => t.resolve({ id: 'r1', pending_id: 't1', action: 'post' }))).toBe('pending_not_found');
    expect(code(() => t.resolve({ id: 'r1', pending_id: 't2', action: 'post' }))).toBe('pending_not_found');
    expect(code(() => t.resolve({ id: 'bad id', pending_id: 't2', action: 'post' }))).toBe('invalid_transfer_id');
  });

  it('a replay with the same fields returns the first transfer and moves nothing; other fields conflict', () => {
    const first = world(100n);
    const t = first.transfer(pay({ amount: 30n }));
    const stored = { [K.transfer('t1')]: transferJson(t) };
    const again = world(70n, ['t1'], stored);
    expect(again.transfer(pay({ amount: 30n }))).toEqual(t);
    expect(again.replayed).toEqual(['t1']);
    expect(again.changed).toBe(false);
    expect(again.writes()).toEqual([]);
    // each field alone differs (the rest as first given): any one of them is a conflict
    for (const other of [pay({ amount: 31n }), pay({ amount: 30n, credit: 'bank' }), pay({ amount: 30n, debit: 'bank' }), pay({ amount: 30n, code: 'other' }), pay({ amount: 30n, pending: true })]) {
      expect(code(() => world(70n, ['t1'], stored).transfer(other)), JSON.stringify(other, (_, x) => (typeof x === 'bigint' ? String(x) : x))).toBe('transfer_id_conflict');
    }
    // a hold replayed as a hold, also after it was resolved (and as stored by older versions)
    const h = world(100n).transfer(pay({ amount: 5n, pending: true }));
    const resolved = { [K.resolution('t1')]: { id: 'r1', action: 'post' } };
    for (const [status, extra] of [['pending', {}], ['pending', resolved], ['pending_posted', {}], ['pending_voided', {}]] as const) {
      const w = world(100n, ['t1'], { [K.transfer('t1')]: transferJson({ ...h, status }), ...extra });
      expect(w.transfer(pay({ amount: 5n, pending: true })).status).toBe(status);
      expect(code(() => world(100n, ['t1'], { [K.transfer('t1')]: transferJson({ ...h, status }), ...extra }).transfer(pay({ amount: 5n })))).toBe('transfer_id_conflict');
    }
    // a resolved hold, by its resolution key or by an older store's status, resolves no more
    for (const [status, extra, what] of [['pending', resolved, 'posted'], ['pending_posted', {}, 'posted'], ['pending_voided', {}, 'voided']] as const) {
      const w = world(100n, ['t1', 'r2'], { [K.transfer('t1')]: transferJson({ ...h, status }), ...extra });
      expect(() => w.resolve({ id: 'r2', pending_id: 't1', action: 'void' })).toThrow(`pending transfer t1 is already ${what}`);
    }
    // a resolution replayed with the same pending id and action; another action conflicts
    const r = { id: 'r1', debit: 'alice', credit: 'bob', amount: 5n, code: 'test', status: 'post' as const, pending_id: 't1', ts: 1 };
    const rw = world(100n, ['r1'], { [K.transfer('r1')]: transferJson(r) });
    expect(rw.resolve({ id: 'r1', pending_id: 't1', action: 'post' })).toEqual(r);
    expect(code(() => world(100n, ['r1'], { [K.transfer('r1')]: transferJson(r) }).resolve({ id: 'r1', pending_id: 't1', action: 'void' }))).toBe('transfer_id_conflict');
    expect(code(() => world(100n, ['r1', 't9'], { [K.transfer('r1')]: transferJson(r) }).resolve({ id: 'r1', pending_id: 't9', action: 'post' }))).toBe('transfer_id_conflict');
  });

  it('refuses to touch what the update did not read', () => {
    expect(() => tx({}).account('alice')).toThrow('ledger: account alice was not read by this update');
    expect(() => tx({}).existing('t1')).toThrow('ledger: transfer t1 was not read by this update');
  });

  it('writes: the accounts, the transfer, the log and both histories; a new account is indexed once', () => {
    const t = world(100n);
    const x = t.transfer(pay({ amount: 25n, meta: { why: 'test' } }));
    expect(x).toEqual({ id: 't1', debit: 'alice', credit: 'bob', amount: 25n, code: 'test', status: 'posted', ts: 1000, meta: { why: 'test' } });
    expect(t.changed).toBe(true);
    expect(t.writes()).toEqual([
      { op: 'set', key: K.account('alice'), value: acct('alice', 100n, 25n) },
      { op: 'set', key: K.account('bob'), value: acct('bob', 25n) },
      { op: 'index', key: K.accounts, member: 'bob', score: 0 },
      { op: 'set', key: K.transfer('t1'), value: transferJson(x) },
      { op: 'index', key: K.log, member: 't1', score: 1000 },
      { op: 'index', key: K.history('alice'), member: 't1', score: 1000 },
      { op: 'index', key: K.history('bob'), member: 't1', score: 1000 },
    ]);
    const r = world(100n);
    const hold = r.transfer(pay({ amount: 5n, pending: true }));
    r.resolve({ id: 'r1', pending_id: 't1', action: 'void' });
    const w = r.writes();
    // the hold is written once (by the update that made it) and never again; its resolution has its own key
    expect(w.filter((x) => x.op === 'set' && x.key === K.transfer('t1'))).toEqual([{ op: 'set', key: K.transfer('t1'), value: transferJson(hold) }]);
    expect(hold.status).toBe('pending');
    expect(w).toContainEqual({ op: 'set', key: K.resolution('t1'), value: { id: 'r1', action: 'void' } });
    expect(w.filter((x) => x.op === 'index' && x.key === K.log).map((x) => (x as { member: string }).member)).toEqual(['t1', 'r1']);
  });
});

describe('the key names and account names, loaded afresh', () => {
  const load = () => {
    vi.resetModules();
    return import('../../src/payment/ledger.js');
  };
  it('a resolution has its own key beside the transfer; a challenge collateral is a sub-account of the pool', async () => {
    const m = await load();
    expect(m.K.resolution('p1')).toBe('pay:xres:p1');
    expect(m.resolveKeys('p1', 'r1')).toEqual(['pay:xfer:p1', 'pay:xfer:r1', 'pay:xres:p1']);
    expect(m.collateralAccount('c1')).toBe('collateral_pool:c1');
    expect(m.userAccount('u1', 'collateral')).toBe('u:u1:collateral');
  });
});

describe('optional fields are absent, not undefined', () => {
  it('transferJson and parseTransfer leave out pending_id and meta when there are none', () => {
    const t: Transfer = { id: 't', debit: 'a', credit: 'b', amount: 12n, code: 'fee', status: 'posted', ts: 5 };
    expect(transferJson(t)).toStrictEqual({ id: 't', debit: 'a', credit: 'b', amount: '12', code: 'fee', status: 'posted', ts: 5 });
    expect(parseTransfer(transferJson(t))).toStrictEqual(t);
    expect(parseTransfer({ ...transferJson(t), pending_id: 3 })).toStrictEqual(t);
  });
  it('a transfer without meta has no meta key', () => {
    const x = world(100n).transfer(pay());
    expect(x).toStrictEqual({ id: 't1', debit: 'alice', credit: 'bob', amount: 10n, code: 'test', status: 'posted', ts: 1000 });
  });
});

describe('refusals: kind, code and the message an API user reads', () => {
  it('amounts', () => {
    const m = `an amount must be a positive integer of at most 1000000000000000000000000000000 minor units`;
    expect(refusal(() => checkAmount(0n))).toEqual({ kind: 'invalid', code: 'invalid_amount', message: m, details: undefined });
    expect(refusal(() => world(100n).transfer(pay({ amount: MAX_AMOUNT + 1n })))).toEqual({ kind: 'invalid', code: 'invalid_amount', message: m, details: undefined });
  });
  it('ids, accounts, the same account twice', () => {
    expect(refusal(() => world(100n, ['a b']).transfer(pay({ id: 'a b' })))).toEqual({
      kind: 'invalid',
      code: 'invalid_transfer_id',
      message: 'a transfer id is 1 to 200 of A-Z a-z 0-9 _ : . -',
      details: undefined,
    });
    expect(refusal(() => world(100n).transfer(pay({ credit: 'b b' })))).toEqual({ kind: 'invalid', code: 'invalid_account', message: 'bad account id', details: undefined });
    expect(refusal(() => world(100n).transfer(pay({ credit: 'alice' })))).toEqual({
      kind: 'invalid',
      code: 'same_account',
      message: 'debit and credit accounts must differ',
      details: undefined,
    });
    expect(refusal(() => world(100n).resolve({ id: 'bad id', pending_id: 't1', action: 'post' }))).toEqual({
      kind: 'invalid',
      code: 'invalid_transfer_id',
      message: 'bad transfer id',
      details: undefined,
    });
  });
  it('an overdraft names the account and the shortfall', () => {
    expect(refusal(() => world(10n).transfer(pay({ amount: 11n })))).toEqual({
      kind: 'conflict',
      code: 'insufficient_balance',
      message: 'account alice lacks 1 minor units',
      details: { account: 'alice', shortfall: '1' },
    });
    // a hold counts: 100 with 60 held lacks 1 for 41
    const t = world(100n);
    t.transfer(pay({ amount: 60n, pending: true }));
    expect(refusal(() => t.transfer(pay({ id: 't2', amount: 41n })))).toMatchObject({ message: 'account alice lacks 1 minor units', details: { shortfall: '1' } });
  });
  it('an id used with other fields, by a transfer or a resolution', () => {
    const stored = { [K.transfer('t1')]: transferJson(world(100n).transfer(pay({ amount: 30n }))) };
    expect(refusal(() => world(70n, ['t1'], stored).transfer(pay({ amount: 31n })))).toEqual({
      kind: 'conflict',
      code: 'transfer_id_conflict',
      message: 'transfer t1 exists with other fields',
      details: undefined,
    });
    const r = { id: 'r1', debit: 'alice', credit: 'bob', amount: 5n, code: 'test', status: 'post' as const, pending_id: 't1', ts: 1 };
    expect(refusal(() => world(100n, ['r1'], { [K.transfer('r1')]: transferJson(r) }).resolve({ id: 'r1', pending_id: 't1', action: 'void' }))).toEqual({
      kind: 'conflict',
      code: 'transfer_id_conflict',
      message: 'transfer r1 exists with other fields',
      details: undefined,
    });
  });
  it('no such hold; a hold already resolved names what resolved it', () => {
    expect(refusal(() => world(100n).resolve({ id: 'r1', pending_id: 't2', action: 'post' }))).toEqual({
      kind: 'not_found',
      code: 'pending_not_found',
      message: 'no pending transfer t2',
      details: undefined,
    });
    const t = world(100n);
    t.transfer(pay({ amount: 5n, pending: true }));
    t.resolve({ id: 'r1', pending_id: 't1', action: 'post' });
    expect(refusal(() => t.resolve({ id: 'r2', pending_id: 't1', action: 'void' }))).toEqual({
      kind: 'conflict',
      code: 'pending_resolved',
      message: 'pending transfer t1 is already posted',
      details: { resolved_by: 'r1' },
    });
  });
});

describe('which transfer resolved a hold', () => {
  const hold = () => world(100n).transfer(pay({ amount: 5n, pending: true }));
  /** A tx that read hold t1 (as stored with `status`), its accounts, `r2`, and the resolution key as `res` (left unread when absent). */
  const read = (status: Transfer['status'], res?: { value: Json | undefined }) => {
    const values: Record<string, Json | undefined> = {
      [K.account('alice')]: acct('alice', 100n, 0n, 5n),
      [K.account('bob')]: undefined,
      [K.transfer('t1')]: transferJson({ ...hold(), status }),
      [K.transfer('r2')]: undefined,
    };
    if (res) values[K.resolution('t1')] = res.value;
    return tx(values);
  };
  it('a stored resolution record, by its action', () => {
    const v = read('pending', { value: { id: 'r1', action: 'void' } });
    expect(v.resolvedBy(v.existing('t1')!)).toEqual({ id: 'r1', action: 'void' });
    expect(refusal(() => v.resolve({ id: 'r2', pending_id: 't1', action: 'post' }))).toEqual({
      kind: 'conflict',
      code: 'pending_resolved',
      message: 'pending transfer t1 is already voided',
      details: { resolved_by: 'r1' },
    });
    const p = read('pending', { value: { id: 'r1', action: 'post' } });
    expect(p.resolvedBy(p.existing('t1')!)).toEqual({ id: 'r1', action: 'post' });
  });
  it("an older store's status: resolved by an unknown transfer ('?')", () => {
    for (const [status, action, what] of [['pending_posted', 'post', 'posted'], ['pending_voided', 'void', 'voided']] as const) {
      const w = read(status, { value: undefined });
      expect(w.resolvedBy(w.existing('t1')!)).toEqual({ id: '?', action });
      expect(refusal(() => w.resolve({ id: 'r2', pending_id: 't1', action: 'post' }))).toEqual({
        kind: 'conflict',
        code: 'pending_resolved',
        message: `pending transfer t1 is already ${what}`,
        details: { resolved_by: '?' },
      });
    }
  });
  it('only a record with a transfer id resolves: null, an array or a record without id leave the hold open', () => {
    for (const value of [null, ['r1'], {}, { action: 'post' }, { id: 7, action: 'post' }, 'r1'] as Json[]) {
      const w = read('pending', { value });
      expect(w.resolvedBy(w.existing('t1')!), JSON.stringify(value)).toBeUndefined();
      expect(w.resolve({ id: 'r2', pending_id: 't1', action: 'post' }).status).toBe('post');
    }
  });
  it('refuses to judge a hold whose resolution key the update did not read', () => {
    const w = read('pending');
    expect(() => w.resolve({ id: 'r2', pending_id: 't1', action: 'post' })).toThrow(new Error('ledger: resolution of t1 was not read by this update'));
  });
});

describe('a transfer input is judged by its transfer fields', () => {
  it('an input object carrying other properties (action, pending_id) replays as the same transfer', () => {
    const first = world(100n).transfer(pay({ amount: 30n }));
    const wider = { ...pay({ amount: 30n }), action: 'post' as const };
    const again = world(70n, ['t1'], { [K.transfer('t1')]: transferJson(first) });
    expect(again.transfer(wider)).toEqual(first);
    const other = { ...pay({ amount: 30n }), pending_id: 'p' };
    expect(world(70n, ['t1'], { [K.transfer('t1')]: transferJson(first) }).transfer(other)).toEqual(first);
  });
});

describe('on a store (LMDB)', () => {
  const stores: Store[] = [];
  afterAll(() => Promise.all(stores.map((s) => s.close())));
  async function store() {
    const s = await openLmdbStore({ path: tempDir('pay-ledger') });
    stores.push(s);
    return s;
  }
  it('ledgerUpdate: one update with the ledger writes and the caller own; get reads only what was read', async () => {
    const s = await store();
    await s.set('extra', { n: 1 });
    const t = { id: 't1', debit: BOUNDARY_ACCOUNT, credit: 'alice', amount: 40n, code: 'onramp' };
    const seen = await ledgerUpdate(s, () => 77, [...transferKeys([t]), 'extra', K.account('alice')], (x, get) => {
      x.transfer(t);
      expect(() => get('not-read')).toThrow(new Error('ledger update: key not-read was not read'));
      return { writes: [{ op: 'set', key: 'mine', value: 'written' }], result: get('extra') };
    });
    expect(seen).toEqual({ n: 1 });
    expect(await s.get('mine')).toBe('written');
    expect(await readAccount(s, 'alice')).toEqual({ id: 'alice', credits_posted: 40n, debits_posted: 0n, debits_pending: 0n, credits_pending: 0n });
    expect(await readAccount(s, BOUNDARY_ACCOUNT)).toEqual({ id: 'bank', credits_posted: 0n, debits_posted: 40n, debits_pending: 0n, credits_pending: 0n });
    expect(parseTransfer(await s.get(K.transfer('t1')))).toStrictEqual({ ...t, status: 'posted', ts: 77 });
    // an account never written reads as zero
    expect(await readAccount(s, 'nobody')).toEqual({ id: 'nobody', credits_posted: 0n, debits_posted: 0n, debits_pending: 0n, credits_pending: 0n });
  });
  it('a refusal inside the update writes nothing, neither the ledger nor the caller', async () => {
    const s = await store();
    const t = { id: 't1', debit: 'alice', credit: 'bob', amount: 1n, code: 'x' };
    await expect(ledgerUpdate(s, () => 1, transferKeys([t]), (x) => (x.transfer(t), { writes: [{ op: 'set', key: 'mine', value: 1 }], result: 0 }))).rejects.toMatchObject({
      code: 'insufficient_balance',
    });
    expect(await s.get('mine')).toBeUndefined();
    expect(await s.get(K.transfer('t1'))).toBeUndefined();
  });
});
