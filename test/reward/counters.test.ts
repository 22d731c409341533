import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createBus } from '../../src/bus.js';
import { ManualClock } from '../../src/clock.js';
import { K } from '../../src/reward/keys.js';
import { RewardService } from '../../src/reward/service.js';
import type { Store } from '../../src/store/port.js';
import { openRedisStore } from '../../src/store/redis.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from '../support/redis.js';
import { harness, kst, type Harness } from './harness.js';

const redis = await redisOrSkip();

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('aggregates kept as counters', () => {
  it('a store written with the earlier layout (shared totals, eco and reserve records) is moved to the counters', async () => {
    h = await harness();
    const z = await h.svc.culture({ country: 'KR', lang: 'ko', name: 'Old' });
    const m = await h.svc.createMember({ name: 'Lee', zone: z.id });
    // what the earlier layout held after two credits of 8 and 10 and one exchange of 3 (hundredths)
    const legacy: Array<[string, unknown]> = [
      ['reward:totals', { seq: 3, credits: 2, exchanges: 1, units: 3, ru_earned: 1800, ru_burned: 300, cu_minted: 300 }],
      ['reward:eco', { seq: 2, total: 1800, service: 540, module: 360, content: 360, infrastructure: 540 }],
      ['reward:reserve', { balance: 1800, credits: 2, lots: 1, lots_cu: 300, obligation: 1800, by_stage: { S0: { lots: 1, cu: 300, obligation: 1800 } } }],
    ];
    for (const [key, value] of legacy) await h.store.set(key, value as never);
    await h.store.index('reward:ledger', '000000000001', 1);
    await h.reopen(); // a process of this version starts on that store

    expect(await h.svc.stats()).toMatchObject({ total_ru: 18 });
    expect(await h.store.getMany(['reward:totals', 'reward:eco', 'reward:reserve'])).toEqual([undefined, undefined, undefined]);
    expect(await h.store.indexCount('reward:ledger')).toBe(0);
    expect((await h.svc.rewardLedger()).totals).toEqual({
      entries: 3,
      credits: 2,
      exchanges: 1,
      units: 3,
      ru_earned: 18,
      ru_burned: 3,
      cu_minted: 3,
      ru_outstanding: 15,
    });
    expect(await h.svc.reservePool()).toMatchObject({ balance: 18, credits: 2, lots: 1, lots_cu: 3, maturity_obligation: 18 });
    expect((await h.svc.ecosystemLedger()).totals).toEqual({ service: 5.4, module: 3.6, content: 3.6, infrastructure: 5.4 });
    // numbering goes on after the old entries
    const r = await h.svc.work({ id: m.id, kc: 1, v: 100 });
    expect(r.seq).toBe(4);
    expect((await h.svc.ecosystemLedger()).entries[0]).toMatchObject({ seq: 3, ledger_seq: 4 });
  });
});

const prefixes: string[] = [];
afterAll(async () => {
  for (const p of prefixes) await deletePrefix(redis.url, p);
});

describe.skipIf(!redis.available)('two processes on one Redis', () => {
  it('credit at once: exact aggregates, ledger numbered 1..n without gaps or repeats', async () => {
    const prefix = uniquePrefix('reward-counters');
    prefixes.push(prefix);
    const clock = new ManualClock(kst('2026-05-04 10:00'));
    const open = async () => {
      const store: Store = await openRedisStore({ url: redis.url, prefix });
      const bus = createBus(store, `p${Math.random()}`);
      await bus.start();
      return { store, bus, svc: new RewardService({ store, clock, bus }) };
    };
    const [a, b] = [await open(), await open()];
    const z = await a.svc.culture({ country: 'KR', lang: 'ko', name: 'Shared' });
    const members = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).svc.createMember({ name: `m${i}`, zone: z.id })));
    const credits = await Promise.all(
      members.flatMap((m, i) => [1, 2].map((kc) => (i % 2 ? b : a).svc.work({ id: m.id, kc: kc === 1 ? 1 : 2, v: 100 + i }))),
    );
    expect(credits.map((c) => c.seq).sort((x, y) => x - y)).toEqual(Array.from({ length: 80 }, (_, i) => i + 1));
    const earned = credits.reduce((s, c) => s + Math.round(c.earned_ru * 100), 0);
    const ledger = await a.svc.rewardLedger({ limit: 1000 });
    expect(ledger.totals).toMatchObject({ entries: 80, credits: 80, units: 120, ru_earned: earned / 100 });
    expect(ledger.entries.map((e) => e.seq)).toEqual(Array.from({ length: 80 }, (_, i) => 80 - i));
    const sync = await b.svc.syncPayload({ limit: 1000 });
    expect(sync.entries.map((e) => e.seq)).toEqual(Array.from({ length: 80 }, (_, i) => i + 1));
    expect(Math.round(sync.period_total * 100)).toBe(earned);
    expect((await b.svc.reservePool()).balance).toBe(earned / 100);
    expect(await a.store.get(K.n.units)).toBe(120);
    for (const p of [a, b]) {
      await p.bus.close();
      await p.store.close();
    }
  });
});
