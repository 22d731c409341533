import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createBus } from '../../src/bus.js';
import { ManualClock } from '../../src/clock.js';
import { K } from '../../src/reward/keys.js';
import { RewardService } from '../../src/reward/service.js';
import { openRedisStore, type RedisStore } from '../../src/store/redis.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from '../support/redis.js';
import { DAY, harness, kst, type Harness } from './harness.js';

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

describe('the ledger numbered by its own counter', () => {
  it('a store numbered from credits + exchanges (no entries counter) gets the counter and numbers on', async () => {
    h = await harness();
    const z = await h.svc.culture({ country: 'KR', lang: 'ko', name: 'Before' });
    const m = await h.svc.createMember({ name: 'Kim', zone: z.id });
    await h.svc.work({ id: m.id, kc: 1, v: 100 });
    await h.svc.work({ id: m.id, kc: 1, v: 100 });
    await h.svc.exchange({ id: m.id, amt: 1 });
    expect(await h.store.get(K.n.entries)).toBe(3);
    await h.store.del(K.n.entries); // what a store of the version before the counter holds
    await h.reopen();
    const r = await h.svc.work({ id: m.id, kc: 1, v: 100 });
    expect(r.seq).toBe(4);
    expect(await h.store.getMany([K.n.entries, K.n.credits, K.n.exchanges])).toEqual([4, 3, 1]);
    expect((await h.svc.rewardLedger()).entries.map((e) => e.seq)).toEqual([4, 3, 2, 1]);
    expect((await h.svc.ecosystemLedger()).entries.map((e) => [e.seq, e.ledger_seq])).toEqual([[3, 4], [2, 2], [1, 1]]);
    const x = await h.svc.exchange({ id: m.id, amt: 1 });
    expect(x.seq).toBe(5);
  });
});

const prefixes: string[] = [];
afterAll(async () => {
  for (const p of prefixes) await deletePrefix(redis.url, p);
});

describe.skipIf(!redis.available)('two processes on one Redis', () => {
  it('credit and exchange at once: no retries, exact aggregates, ledger numbered 1..n without gaps or repeats', async () => {
    const prefix = uniquePrefix('reward-counters');
    prefixes.push(prefix);
    const clock = new ManualClock(kst('2026-05-04 10:00'));
    const open = async () => {
      const store = await openRedisStore({ url: redis.url, prefix });
      const bus = createBus(store, `p${Math.random()}`);
      await bus.start();
      return { store, bus, svc: new RewardService({ store, clock, bus }) };
    };
    const [a, b] = [await open(), await open()];
    const retries = (p: { store: RedisStore }) => p.store.stats().retries;
    const z = await a.svc.culture({ country: 'KR', lang: 'ko', name: 'Shared' });
    const members = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).svc.createMember({ name: `m${i}`, zone: z.id })));
    // each member's movements go through one process (its own records are read by both movements)
    const owner = (i: number) => (i % 2 ? b : a);
    const before = retries(a) + retries(b);
    const credits = await Promise.all(
      members.flatMap((m, i) => [1, 2].map((kc) => owner(i).svc.work({ id: m.id, kc, v: 100 + i }))),
    );
    expect(credits.map((c) => c.seq).sort((x, y) => x - y)).toEqual(Array.from({ length: 80 }, (_, i) => i + 1));
    // the next day: a credit and an exchange of every member, all at once
    clock.advance(DAY);
    const mixed = await Promise.all(
      members.flatMap((m, i) => [owner(i).svc.work({ id: m.id, kc: 1, v: 100 }), owner(i).svc.exchange({ id: m.id, amt: 1 })]),
    );
    // crediting and exchanging read no shared counter: the two processes never made each other retry
    expect(retries(a) + retries(b) - before).toBe(0);
    const all = [...credits, ...mixed];
    expect(all.map((c) => c.seq).sort((x, y) => x - y)).toEqual(Array.from({ length: 160 }, (_, i) => i + 1));
    const credited = [...credits, ...mixed.filter((x) => 'earned_ru' in x)] as typeof credits;
    const earned = credited.reduce((s, c) => s + Math.round(c.earned_ru * 100), 0);
    const ledger = await a.svc.rewardLedger({ limit: 1000 });
    expect(ledger.totals).toMatchObject({ entries: 160, credits: 120, exchanges: 40, units: 160, ru_earned: earned / 100, ru_burned: 40 });
    expect(ledger.entries.map((e) => e.seq)).toEqual(Array.from({ length: 160 }, (_, i) => 160 - i));
    const sync = await b.svc.syncPayload({ limit: 1000 });
    expect(sync.entries.map((e) => e.seq)).toEqual(Array.from({ length: 120 }, (_, i) => i + 1));
    expect(sync.entries.map((e) => e.ledger_seq).sort((x, y) => x - y)).toEqual(credited.map((c) => c.seq).sort((x, y) => x - y));
    expect(Math.round(sync.period_total * 100)).toBe(earned);
    expect(await a.svc.reservePool()).toMatchObject({ balance: earned / 100, credits: 120, lots: 40, lots_cu: 40 });
    expect(await a.store.getMany([K.n.entries, K.n.credits, K.n.exchanges, K.n.units])).toEqual([160, 120, 40, 160]);
    for (const p of [a, b]) {
      await p.bus.close();
      await p.store.close();
    }
  });
});
