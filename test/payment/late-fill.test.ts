import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { bookingWeek, payoutAt, payoutUnits, payoutWeekOf, split } from '../../src/payment/rules.js';
import type { Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { deposit, passedChallenge, relay } from './support.js';

// Defect 3 of the payment books: a fill dated inside a week whose payout instant (Sunday 00:00 UTC)
// has already passed when it arrives is booked to the week open at arrival and paid with that
// week's payout (an adjustment); a fill arriving before the instant counts in its own week.

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const W = payoutWeekOf(Date.parse('2026-11-18T12:00:00Z'));
const NEXT = payoutWeekOf(payoutAt(W) + HOUR);
const PEG = 1_350_000_000; // tokens per USD x 10^6
const units = (cents: number) => split(payoutUnits(cents, 1_000_000n, 900_000n, BigInt(PEG)), 20n);

describe('late fills', () => {
  let store: Store;
  let dir: string;
  const clock = new ManualClock(payoutAt(W) - 3 * DAY);
  beforeAll(async () => {
    dir = tempDir('latefill');
    store = await openLmdbStore({ path: dir });
    await deposit(store, clock.now(), 'fund-escrow', 'escrow', 10n ** 18n);
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the booking week: its own while its payout instant is ahead, else the week open at arrival', () => {
    const inside = payoutAt(W) - 2 * DAY;
    expect(bookingWeek(inside, payoutAt(W) - 1)).toBe(W);
    expect(bookingWeek(inside, payoutAt(W))).toBe(NEXT);
    expect(bookingWeek(inside, payoutAt(W) + 9 * DAY)).toBe(payoutWeekOf(payoutAt(W) + 9 * DAY));
  });

  it('a fill arriving before Sunday 00:00 UTC is paid with its own week', async () => {
    const { life, pay } = relay(store, clock);
    await passedChallenge(store, 'lf1', 'c_lf1', 'starter_10k', 10_000, PEG);
    clock.set(payoutAt(W) - HOUR);
    await life.event('c_lf1', { type: 'fill', event_id: 'f1', realized_cents: 12_345, ts: payoutAt(W) - 2 * DAY });
    clock.set(payoutAt(W) + HOUR);
    const x = units(12_345);
    expect(await pay.payout(W, 'lf1')).toMatchObject({ status: 'paid', amount: String(x.platform + x.trader), trader: String(x.trader) });
  });

  it('a fill arriving after the week was requested (answer: nothing) is paid the next week, once', async () => {
    const { life, pay } = relay(store, clock);
    await passedChallenge(store, 'lf2', 'c_lf2', 'starter_10k', 10_000, PEG);
    clock.set(payoutAt(W) + HOUR);
    expect(await pay.payout(W, 'lf2')).toMatchObject({ status: 'nothing', amount: '0' });
    // the late fill, dated inside W
    expect(await life.event('c_lf2', { type: 'fill', event_id: 'late', realized_cents: 50_000, ts: payoutAt(W) - 2 * DAY })).toMatchObject({ applied: true });
    expect(await pay.payout(W, 'lf2')).toMatchObject({ status: 'nothing', amount: '0' }); // W stays closed
    clock.set(payoutAt(NEXT) + HOUR);
    const x = units(50_000);
    expect(await pay.payout(NEXT, 'lf2')).toMatchObject({ status: 'paid', amount: String(x.platform + x.trader), challenges: ['c_lf2'] });
    expect(await pay.payout(NEXT, 'lf2')).toMatchObject({ status: 'paid', amount: String(x.platform + x.trader) });
  });
});
