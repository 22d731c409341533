import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { checkLedger } from '../../src/payment/check.js';
import { K, balanceOf, ledgerUpdate, parseAccount, transferKeys, userAccount, type TransferInput } from '../../src/payment/ledger.js';
import { PK, challengeRecords, type ChallengeRecord } from '../../src/payment/service.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { deposit, logTransfers, passedChallenge, relay, wallet } from './support.js';

// A challenge funded before collateral was kept per challenge has its collateral in the user's
// former single account (`u:{user}:collateral`). Those books are never rewritten: its violations and
// its withdrawal keep using that account, by the former rule (the challenge's figure at most), and
// a challenge funded now uses its own sub-account beside it.

const T0 = Date.parse('2026-11-18T12:00:00Z');

describe('collateral posted to the former shared account', () => {
  let store: Store;
  let dir: string;
  const clock = new ManualClock(T0);
  beforeAll(async () => {
    dir = tempDir('collateral-former');
    store = await openLmdbStore({ path: dir });
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const bal = async (account: string) => balanceOf(parseAccount(account, await store.get(K.account(account))));

  /** What the scale-up wrote before: wallet -> the user's collateral account, the challenge funded. */
  async function fundedTheFormerWay(user: string, id: string, amount: bigint): Promise<void> {
    await passedChallenge(store, user, id, 'starter_10k', 10_000, 2_529_785);
    const t: TransferInput = { id: `collateral:${id}`, debit: wallet(user), credit: userAccount(user, 'collateral'), amount, code: 'collateral' };
    await ledgerUpdate(store, () => clock.now(), [...transferKeys([t]), PK.challenge(id)], (tx, get) => {
      tx.transfer(t);
      const c = challengeRecords.decode(get(PK.challenge(id))) as ChallengeRecord;
      return { writes: [{ op: 'set', key: PK.challenge(id), value: challengeRecords.encode({ ...c, state: 'funded', collateral: amount.toString() }) }], result: undefined };
    });
  }

  it('deducts from and refunds out of the account it was posted to', async () => {
    const { life, svc } = relay(store, clock);
    await deposit(store, clock.now(), 'fund-f1', wallet('f1'), 5_000_000_000n);
    await fundedTheFormerWay('f1', 'c_old', 758_935_500n);
    await passedChallenge(store, 'f1', 'c_new', 'starter_10k', 10_000, 2_529_785);
    expect(await life.scaleUp('f1', 'c_new', {})).toMatchObject({ collateral: '758935500' });
    expect((await svc.wallet('f1', { limit: 10, offset: 0 })).collateral).toBe('1517871000');

    await life.event('c_old', { type: 'violation', event_id: 'v1', rule: 'daily_loss', ts: clock.now() });
    await life.event('c_old', { type: 'violation', event_id: 'v2', rule: 'daily_loss', ts: clock.now() + 1 });
    const deductions = (await logTransfers(store)).filter((t) => t.code === 'collateral_deduction');
    expect(deductions.map((t) => [t.debit, t.amount])).toEqual([['u:f1:collateral', '75893550']]);
    expect(await bal('collateral_pool:c_new')).toBe(758_935_500n);

    // the former rule: the challenge's figure at most, from what the account still holds
    expect(await life.withdraw('f1', 'c_old', {})).toMatchObject({ state: 'withdrawn', refunded: '683041950' });
    expect(await bal('u:f1:collateral')).toBe(0n);
    expect(await life.withdraw('f1', 'c_new', {})).toMatchObject({ state: 'withdrawn', refunded: '758935500' });
    expect(await bal(wallet('f1'))).toBe(5_000_000_000n - 75_893_550n);
    expect(await checkLedger(store)).toMatchObject({ ok: true });
  });
});
