import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createBus } from '../../src/bus.js';
import { ManualClock } from '../../src/clock.js';
import { K } from '../../src/reward/keys.js';
import { creditKeys, exchangeKeys, planCredit, planExchange } from '../../src/reward/movements.js';
import { DEFAULT_SPLIT, kstDate, kstMonth, stageFor } from '../../src/reward/plan.js';
import { joinKeys, planJoin } from '../../src/reward/registry.js';
import { RewardService } from '../../src/reward/service.js';
import { openLmdbStore, type LmdbStore } from '../../src/store/lmdb.js';
import { partitionOf } from '../../src/store/partition.js';
import type { Json, Write } from '../../src/store/port.js';
import { kst } from './harness.js';

// The reward plan on the partitioned keyspace (docs/partitions.md, docs/reward.md): every update of
// a member, a zone or the ledgers stays in one aggregate (real LMDB, the partition check on), the
// figures stay exact at the moment of each answer, data of the layout before is still read, and a
// movement or a member left half done by a stopped process is finished once by the next start.
const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

async function open(path: string, partitionCheck: boolean): Promise<LmdbStore> {
  return openLmdbStore({ path, partitionCheck });
}

async function write(store: LmdbStore, writes: Write[]): Promise<void> {
  await store.update([], () => ({ writes, result: undefined }));
}

describe('the reward plan on the partitioned keyspace', () => {
  it('runs zones, members, work and exchanges with the partition check on, reading the layout of before', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'maru-reward-parts-'));
    dirs.push(dir);
    const path = join(dir, 'store');
    const T = kst('2026-05-04 10:00');
    const month = kstMonth(T);

    // What a store of the layout before holds: a zone with one member, whose two credits of 1 unit
    // (6.00 RU each at 100%, hundredths) and one exchange of 1.00 RU are in the global ledgers.
    const old = await open(path, false);
    await write(old, [
      { op: 'set', key: 'reward:zone:kr-ko-old', value: { id: 'kr-ko-old', country: 'KR', lang: 'ko', name: '옛', key: '옛', members: 1, created_at: T - 9000 } },
      { op: 'index', key: 'reward:zones', member: 'kr-ko-old', score: T - 9000 },
      { op: 'index', key: 'reward:zone-members:kr-ko-old', member: 'm_old0000001', score: T - 9000 },
      { op: 'set', key: 'reward:member:m_old0000001', value: { id: 'm_old0000001', name: 'Old', grade: 1, grade_name: '입문', kc: 2, ru: 1100, cu: 100, excess: 0 } },
      { op: 'set', key: 'reward:member-meta:m_old0000001', value: { zone: 'kr-ko-old', public_key: null, created_at: T - 9000 } },
      { op: 'index', key: 'reward:members', member: 'm_old0000001', score: T - 9000 },
      { op: 'set', key: `reward:session:m_old0000001:${month}`, value: { month, units: 2, days: { [kstDate(T)]: 2 } } },
      { op: 'index', key: 'reward:session-months:m_old0000001', member: month, score: Number(month.replace('-', '')) },
      ...[1, 2].map((seq): Write => ({
        op: 'set',
        key: `reward:ledger:entry:${seq}`,
        value: {
          seq, id: `c_old${seq}`, at: T - 5000 + seq, member: 'm_old0000001', kind: 'credit', ru: 600, cu: null, stage: 'S0', coin_pct: 100,
          kc: 1, v: 100, grade: 1, grade_pct: 60, new_grade: 1, create_3x: 1800, member_share: 600, ecosystem_share: 600, reserve_share: 600,
        },
      })),
      {
        op: 'set',
        key: 'reward:ledger:entry:3',
        value: { seq: 3, id: 'x_old', at: T - 4000, member: 'm_old0000001', kind: 'exchange', ru: 100, cu: 100, stage: 'S0', coin_pct: 100, maturity_value: 600 },
      },
      ...[1, 2, 3].map((seq): Write => ({ op: 'index', key: 'reward:ledger:member:m_old0000001', member: String(seq).padStart(12, '0'), score: seq })),
      ...[1, 2].map((seq): Write => ({
        op: 'set',
        key: `reward:eco:entry:${seq}`,
        value: { seq, id: `c_old${seq}`, ledger_seq: seq, member: 'm_old0000001', at: T - 5000 + seq, amount: 600, categories: { service: 180, module: 120, content: 120, infrastructure: 180 } },
      })),
      { op: 'set', key: 'reward:eco:cursor', value: { seq: 1, at: T - 3000 } },
      ...(
        [
          ['entries', 3], ['credits', 2], ['exchanges', 1], ['units', 2], ['ru_earned', 1200], ['ru_burned', 100],
          ['eco:service', 360], ['eco:module', 240], ['eco:content', 240], ['obligation', 600],
          ['stage:S0:lots', 1], ['stage:S0:cu', 100], ['stage:S0:obligation', 600],
        ] as const
      ).map(([name, by]): Write => ({ op: 'incr', key: `reward:n:${name}`, by })),
    ]);
    await old.close();

    const store = await open(path, true);
    const clock = new ManualClock(T);
    const bus = createBus(store, 'reward-parts');
    const events: string[] = [];
    bus.onMessage((m) => events.push(String((m.message as { type?: string } | null)?.type)));
    try {
      const svc = new RewardService({ store, clock, bus });
      const zones = [];
      for (const name of ['서울', '부산', '대구']) zones.push(await svc.culture({ country: 'KR', lang: 'ko', name }));
      const members = [];
      for (let i = 0; i < 8; i++) members.push(await svc.createMember({ name: `p${i}`, zone: zones[i % 3]!.id }));
      expect(new Set(members.map((m) => partitionOf(K.member(m.id)))).size).toBeGreaterThan(2);
      expect(members.map((m) => m.zone_members)).toEqual([1, 1, 1, 2, 2, 2, 3, 3]);
      expect((await svc.zone(zones[0]!.id)).members).toBe(3);
      expect(await store.indexCount(K.zoneMembers(zones[0]!.id))).toBe(3);
      expect(await svc.stats()).toMatchObject({ members: 9, cultures: 4, total_ru: 12 });
      // the old member: read from its facts of before, its month's units counted
      expect(await svc.member('m_old0000001')).toMatchObject({ zone: 'kr-ko-old', ru: 11, cu: 1 });
      expect(await svc.workSessions('m_old0000001')).toMatchObject({ today: { units: 2, remaining: 1 }, month: { units: 2 } });
      expect(await svc.work({ id: 'm_old0000001', kc: 2, v: 100 }).catch((e: { code: string }) => e.code)).toBe('daily_units_exceeded');

      // the numbering goes on after the entries of before, exact at each answer
      const answers: Json[] = [];
      const w1 = await svc.work({ id: 'm_old0000001', kc: 1, v: 100, creditId: 'cr_retry00000001', answer: (r) => (answers.push(r), []) });
      expect(w1.seq).toBe(4);
      expect(answers).toEqual([w1]);
      // a retried request names the same credit: made once, answered the same (the day is full now)
      expect(await svc.work({ id: 'm_old0000001', kc: 1, v: 100, creditId: 'cr_retry00000001' })).toEqual(w1);
      const w2 = await svc.work({ id: members[0]!.id, kc: 3, v: 100 });
      expect(w2.seq).toBe(5);
      const x = await svc.exchange({ id: members[0]!.id, amt: 1 });
      expect(x.seq).toBe(6);
      expect(await svc.stats()).toMatchObject({ total_ru: 12 + Number(w1.earned_ru) + Number(w2.earned_ru) });
      const ledger = await svc.rewardLedger();
      expect(ledger.entries.map((e) => e.seq)).toEqual([6, 5, 4, 3, 2, 1]);
      expect(ledger.totals).toMatchObject({ entries: 6, credits: 4, exchanges: 2, units: 6 });
      const mine = await svc.rewardLedger({ member: 'm_old0000001' });
      expect(mine.entries.map((e) => e.seq)).toEqual([4, 3, 2, 1]);
      expect(mine.totals).toMatchObject({ entries: 4 });
      const eco = await svc.ecosystemLedger();
      expect(eco.entries.map((e) => [e.seq, e.ledger_seq])).toEqual([[4, 5], [3, 4], [2, 2], [1, 1]]);
      expect(eco.sync_cursor.seq).toBe(1);
      expect(await svc.markSynced(3)).toEqual({ seq: 3, advanced: true });
      expect((await svc.syncPayload()).entries.map((e) => e.seq)).toEqual([4]);
      expect(await svc.reservePool()).toMatchObject({ lots: 2, lots_cu: 2, credits: 4 });
      // nothing is left pending, and the counters of before are gone (moved)
      expect(await store.indexCount(K.pendingOf(members[0]!.id))).toBe(0);
      expect(await store.get('reward:n:entries')).toBeUndefined();
      await new Promise((r) => setTimeout(r, 50));
      expect(events).toEqual(expect.arrayContaining(['culture', 'member', 'work', 'exchange']));
    } finally {
      await bus.close();
      await store.close();
    }
  });

  it('finishes, once, a member and movements a stopped process left between their updates', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'maru-reward-left-'));
    dirs.push(dir);
    const path = join(dir, 'store');
    const T = kst('2026-05-04 10:00');
    const store = await open(path, true);
    const clock = new ManualClock(T);
    let bus = createBus(store, 'reward-left');
    try {
      const svc = new RewardService({ store, clock, bus });
      const z = await svc.culture({ country: 'KR', lang: 'ko', name: '서울' });
      const m = await svc.createMember({ name: 'Kim', zone: z.id });
      await svc.work({ id: m.id, kc: 1, v: 100 });
      // a process stopped after the zone counted a member, and after a credit's and an exchange's
      // member updates: their second updates never ran
      await store.update(joinKeys(z.id, 'm_halfdone01'), (cur) =>
        planJoin({ id: 'm_halfdone01', name: 'Half', zone: z.id, public_key: null, created_at: T }, cur),
      );
      const stage = stageFor(T);
      const c = await store.update(creditKeys(m.id, kstMonth(T)), (cur) =>
        planCredit({ id: m.id, kc: 1, v: 100, now: T, today: kstDate(T), month: kstMonth(T), stage, split: DEFAULT_SPLIT, creditId: 'cr_left' }, cur),
      );
      await store.update(exchangeKeys(m.id), (cur) => planExchange({ id: m.id, amt: 100, now: T, stage, exchangeId: 'ex_left' }, cur));
      expect((await svc.rewardLedger()).totals).toMatchObject({ entries: 1 });

      // the next start finishes them, once, even when two services start together
      await bus.close();
      bus = createBus(store, 'reward-left');
      const a = new RewardService({ store, clock, bus });
      const b = new RewardService({ store, clock, bus });
      const [sa, sb] = await Promise.all([a.stats(), b.stats()]);
      expect(sa.members).toBe(2);
      expect(sb.members).toBe(2);
      expect(await a.member('m_halfdone01')).toMatchObject({ zone: z.id, ru: 0 });
      expect((await a.zone(z.id)).members).toBe(2);
      const ledger = await a.rewardLedger();
      expect(ledger.entries.map((e) => [e.seq, e.id])).toEqual([[3, 'ex_left'], [2, 'cr_left'], [1, expect.any(String)]]);
      expect(ledger.totals).toMatchObject({ entries: 3, credits: 2, exchanges: 1, ru_earned: 2 * (c.amount / 100), ru_burned: 1 });
      expect(await a.member(m.id)).toMatchObject({ ru: (2 * c.amount - 100) / 100, cu: 1 });
      expect(await store.indexCount(K.pendingOf(m.id))).toBe(0);
      expect(await store.indexCount(K.joiningOf(z.id))).toBe(0);
      // and work goes on, numbered after them
      expect((await a.work({ id: m.id, kc: 1, v: 100 })).seq).toBe(4);
    } finally {
      await bus.close();
      await store.close();
    }
  });
});
