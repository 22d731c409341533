import { spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { Idempotency } from '../../src/idempotency.js';
import { K } from '../../src/payment/ledger.js';
import { checkLedger } from '../../src/payment/check.js';
import { PegService } from '../../src/payment/peg.js';
import { PayoutService } from '../../src/payment/payouts.js';
import { payoutAt, payoutWeekOf } from '../../src/payment/rules.js';
import { PaymentService } from '../../src/payment/service.js';
import { startPriceStandin, type PriceState } from '../../src/payment/standins.js';
import type { Standin } from '../../src/peers/value-standin.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { tempDir } from '../support/process.js';
import { seedProfitableChallenges } from './support.js';

const CLI = resolve(import.meta.dirname, '../../dist/src/payment/cli.js');
const T0 = Date.parse('2026-11-11T12:00:00Z');
const USERS = Array.from({ length: 120 }, (_, i) => `k${String(i).padStart(3, '0')}`);

/** The weekly payout run as its own process (the operator command), killed with SIGKILL mid-run, then run again. */
describe('weekly payout killed in the middle', () => {
  let prices: Standin<PriceState>[];
  const dir = tempDir('payout-kill');
  const week = payoutWeekOf(T0);

  beforeAll(async () => {
    if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run npm run build`);
    prices = await Promise.all([0, 0.001, -0.001].map((bias) => startPriceStandin({ bias })));
    const store = await openLmdbStore({ path: join(dir, 'store') });
    await seedProfitableChallenges(store, new ManualClock(T0), prices.map((p) => p.url), USERS);
    await store.close();
  }, 120_000);
  afterAll(async () => {
    await Promise.all(prices.map((p) => p.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('posts each payout once after a SIGKILL and a rerun', async () => {
    expect(payoutAt(week)).toBeLessThan(Date.now());
    const child = spawn(process.execPath, [CLI, 'payout-run', week], { env: { PATH: process.env.PATH ?? '', DATA_DIR: dir, LOG_LEVEL: 'silent' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let lines = 0;
    const exited = new Promise<NodeJS.Signals | null>((r) => child.once('exit', (_c, sig) => r(sig)));
    child.stdout.on('data', (d: Buffer) => {
      lines += d.toString().split('\n').filter((l) => l.includes('"status":"paid"')).length;
      if (lines >= 3) child.kill('SIGKILL');
    });
    expect(await exited).toBe('SIGKILL');

    const store = await openLmdbStore({ path: join(dir, 'store') });
    try {
      const traderIds = async () => (await store.indexRange(K.log)).map((e) => e.member).filter((m) => m.startsWith(`payout:${week}:`) && m.endsWith(':trader'));
      const paidByKilled = (await traderIds()).length;
      expect(paidByKilled).toBeGreaterThanOrEqual(3);
      expect(paidByKilled).toBeLessThan(USERS.length); // killed in the middle
      // the killed run's lease holds the week until it expires; a later run (the cron or the catch-up) finishes it
      const clock = new ManualClock(Date.now());
      const svc = new PaymentService({ store, clock, peg: new PegService([], { windowMs: 1, maxGapMs: 1, minProviders: 2 }), idempotency: new Idempotency(store, clock), maxOnrampKrw: 0 });
      const pay = new PayoutService(svc, store, { scalePpm: 1_000_000n, disciplinePpm: 900_000n, breakerPercent: 5n, poolFactor: 2n, catchUpWeeks: 8, leaseMs: 60_000 });
      expect(await pay.runWeek(week)).toMatchObject({ status: 'busy' });
      clock.advance(61_000);
      const report = (await pay.runWeek(week)) as { outcomes: Record<string, number> };
      expect(report.outcomes.paid).toBe(USERS.length);
      await pay.runWeek(week);
      const ids = await traderIds();
      expect(ids).toHaveLength(USERS.length);
      expect(new Set(ids).size).toBe(USERS.length);
      expect(await checkLedger(store)).toMatchObject({ ok: true, mismatches: [], negative: [] });
    } finally {
      await store.close();
    }
  });
});
