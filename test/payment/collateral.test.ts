import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { checkLedger } from '../../src/payment/check.js';
import { K, parseAccount, balanceOf } from '../../src/payment/ledger.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { deposit, logTransfers, passedChallenge, relay, wallet } from './support.js';

const T0 = Date.parse('2026-11-18T12:00:00Z');

describe('collateral per challenge (defects 1 and 2 of the payment books)', () => {
  let store: Store;
  let dir: string;
  const clock = new ManualClock(T0);
  beforeAll(async () => {
    dir = tempDir('collateral');
    store = await openLmdbStore({ path: dir });
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const bal = async (account: string) => balanceOf(parseAccount(account, await store.get(K.account(account))));
  const deductions = async (challenge: string) => (await logTransfers(store)).filter((t) => t.code === 'collateral_deduction' && t.id.startsWith(`deduct:${challenge}:`));

  it('a deduction lowers its own challenge: the starter refunds 683,041,950 and the standard 1,897,337,250', async () => {
    const { life, svc } = relay(store, clock);
    await deposit(store, clock.now(), 'fund-d1', wallet('d1'), 5_000_000_000n);
    await passedChallenge(store, 'd1', 'c_starter', 'starter_10k', 10_000, 2_529_785);
    await passedChallenge(store, 'd1', 'c_standard', 'standard_25k', 25_000, 2_529_783);
    expect(await life.scaleUp('d1', 'c_starter', {})).toMatchObject({ collateral: '758935500' });
    expect(await life.scaleUp('d1', 'c_standard', {})).toMatchObject({ collateral: '1897337250' });
    expect((await svc.wallet('d1', { limit: 10, offset: 0 })).collateral).toBe('2656272750');

    await life.event('c_starter', { type: 'violation', event_id: 'v1', rule: 'daily_loss', ts: clock.now() });
    await life.event('c_starter', { type: 'violation', event_id: 'v2', rule: 'daily_loss', ts: clock.now() + 1 });
    expect((await deductions('c_starter')).map((t) => t.amount)).toEqual(['75893550']);
    expect((await svc.wallet('d1', { limit: 10, offset: 0 })).collateral).toBe(String(2_656_272_750 - 75_893_550));

    expect(await life.withdraw('d1', 'c_starter', {})).toMatchObject({ state: 'withdrawn', refunded: '683041950' });
    expect(await life.withdraw('d1', 'c_standard', {})).toMatchObject({ state: 'withdrawn', refunded: '1897337250' });
    expect(await bal(wallet('d1'))).toBe(5_000_000_000n - 75_893_550n);
    expect((await svc.wallet('d1', { limit: 10, offset: 0 })).collateral).toBe('0');
    expect(await checkLedger(store)).toMatchObject({ ok: true });
  });

  it('two violations posted at once each deduct (two deductions, not one)', async () => {
    const { life } = relay(store, clock);
    await deposit(store, clock.now(), 'fund-d2', wallet('d2'), 5_000_000_000n);
    await passedChallenge(store, 'd2', 'c_race', 'starter_10k', 10_000, 2_529_785);
    await life.scaleUp('d2', 'c_race', {});
    await life.event('c_race', { type: 'violation', event_id: 'r1', rule: 'daily_loss', ts: clock.now() });
    expect(await deductions('c_race')).toEqual([]);
    await Promise.all(['r2', 'r3'].map((e, i) => life.event('c_race', { type: 'violation', event_id: e, rule: 'daily_loss', ts: clock.now() + 1 + i })));
    expect((await deductions('c_race')).map((t) => t.amount)).toEqual(['75893550', '75893550']);
    // the same events delivered again change nothing
    await Promise.all(['r2', 'r3'].map((e, i) => life.event('c_race', { type: 'violation', event_id: e, rule: 'daily_loss', ts: clock.now() + 1 + i })));
    expect(await deductions('c_race')).toHaveLength(2);
    expect(await life.withdraw('d2', 'c_race', {})).toMatchObject({ refunded: String(758_935_500 - 2 * 75_893_550) });
    expect(await checkLedger(store)).toMatchObject({ ok: true });
  });

  it('a process dying right after the violation is recorded loses no deduction and doubles none', async () => {
    const { life } = relay(store, clock);
    await deposit(store, clock.now(), 'fund-d3', wallet('d3'), 5_000_000_000n);
    await passedChallenge(store, 'd3', 'c_crash', 'starter_10k', 10_000, 2_529_785);
    await life.scaleUp('d3', 'c_crash', {});
    await life.event('c_crash', { type: 'violation', event_id: 'k1', rule: 'daily_loss', ts: clock.now() });
    // the dying process: its store answers until the update recording event k2 commits, then the
    // process is gone (every later call fails, as after kill -9)
    let dead = false;
    const dying: Store = new Proxy(store, {
      get(target, prop, recv) {
        const v = Reflect.get(target, prop, recv) as unknown;
        if (typeof v !== 'function') return v;
        return async (...args: unknown[]) => {
          if (dead) throw new Error('process killed');
          const out = await (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          if (prop === 'update' && (args[0] as string[]).includes('pay:fill:c_crash:k2')) {
            dead = true;
            throw new Error('process killed');
          }
          return out;
        };
      },
    });
    await expect(relay(dying, clock).life.event('c_crash', { type: 'violation', event_id: 'k2', rule: 'daily_loss', ts: clock.now() + 1 })).rejects.toThrow('process killed');
    // a new process: the violation is on the books, and so is its deduction (nothing owed to a retry)
    expect((await store.get('pay:chal:c_crash')) as { violations: unknown[] }).toMatchObject({ violations: [{}, {}] });
    expect((await deductions('c_crash')).map((t) => t.amount)).toEqual(['75893550']);
    // the program delivers the event again (at least once): nothing doubles
    const after = relay(store, clock).life;
    expect(await after.event('c_crash', { type: 'violation', event_id: 'k2', rule: 'daily_loss', ts: clock.now() + 1 })).toMatchObject({ applied: false });
    expect(await after.event('c_crash', { type: 'violation', event_id: 'k2', rule: 'daily_loss', ts: clock.now() + 1 })).toMatchObject({ applied: false });
    expect((await deductions('c_crash')).map((t) => t.amount)).toEqual(['75893550']);
    expect(await checkLedger(store)).toMatchObject({ ok: true });
  });
});
