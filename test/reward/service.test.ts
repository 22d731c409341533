import { afterEach, describe, expect, it } from 'vitest';
import { createBus, type Bus } from '../../src/bus.js';
import { AppError, unauthorized } from '../../src/errors.js';
import { outboxDueKey, outboxKey, outboxPartition } from '../../src/outbox.js';
import { K } from '../../src/reward/keys.js';
import { drawn } from '../../src/store/port.js';
import { PRINCIPLE_9 } from '../../src/reward/charter.js';
import { ECOSYSTEM_CATEGORIES, earned, maturityValue, splitAmount, DEFAULT_SPLIT } from '../../src/reward/plan.js';
import { RewardService } from '../../src/reward/service.js';
import { generateMemberKeys } from '../../src/reward/signing.js';
import { DAY, harness, kst, refusal, snapshot, type Harness } from './harness.js';

let h: Harness;
afterEach(async () => {
  await h?.close();
});

const centi = (x: number) => Math.round(x * 100);

/** One real member key per name, so records can be checked against it. */
const memberKeys = new Map<string, string>();
const keyOf = (name: string) => {
  if (!memberKeys.has(name)) memberKeys.set(name, generateMemberKeys().publicKey);
  return memberKeys.get(name)!;
};

async function zoneAndMember(hh: Harness, name = 'Kim') {
  const z = await hh.svc.culture({ country: 'KR', lang: 'ko', name: '서울 문화' });
  const m = await hh.svc.createMember({ name, zone: z.id, public_key: keyOf(name) });
  return { zone: z.id, id: m.id };
}

describe('cultural zones', () => {
  it('registers a zone once and answers idempotently after', async () => {
    h = await harness();
    const a = await h.svc.culture({ country: 'KR', lang: 'ko', name: 'Seoul Arts' });
    expect(a).toEqual({
      ok: true,
      country: 'KR',
      lang: 'ko',
      name: 'Seoul Arts',
      total_cultures: 1,
      id: 'KR-ko-seoul-arts',
      created: true,
    });
    const b = await h.svc.culture({ country: 'KR', lang: 'ko', name: '서울 문화' });
    expect(b.total_cultures).toBe(2);
    const again = await h.svc.culture({ country: 'KR', lang: 'ko', name: ' seoul  arts ' });
    expect(again).toMatchObject({ ok: true, id: a.id, name: 'Seoul Arts', total_cultures: 2, created: false });
    expect((await h.svc.stats()).cultures).toBe(2);
    expect(await h.svc.zone(b.id)).toMatchObject({ id: b.id, name: '서울 문화', members: 0, capacity: 6561 });
    expect((await h.svc.listZones()).zones.map((z) => z.id)).toEqual([a.id, b.id]);
    expect(h.events.filter((e) => (e.message as { type: string }).type === 'culture')).toHaveLength(2);
  });

  it('refuses bad country, lang and name with 400 and changes nothing', async () => {
    h = await harness();
    const before = await snapshot(h);
    for (const [input, code] of [
      [{ country: 'kr', lang: 'ko', name: 'x' }, 'invalid_country'],
      [{ country: 'KOR', lang: 'ko', name: 'x' }, 'invalid_country'],
      [{ country: 'KR', lang: 'KO', name: 'x' }, 'invalid_lang'],
      [{ country: 'KR', lang: 'ko', name: '   ' }, 'invalid_name'],
      [{ country: 'KR', lang: 'ko', name: '가'.repeat(65) }, 'invalid_name'],
    ] as const) {
      const e = await refusal(h.svc.culture(input));
      expect([e.status, e.code]).toEqual([400, code]);
    }
    expect(await refusal(h.svc.zone('KR-ko-nothing'))).toMatchObject({ status: 404, code: 'zone_not_found' });
    expect(await snapshot(h)).toEqual(before);
  });
});

describe('members', () => {
  it('creates a member with a server id and an eight-field record', async () => {
    h = await harness();
    const { zone, id } = await zoneAndMember(h);
    expect(id).toMatch(/^m_[A-Za-z0-9_-]{10}$/);
    expect(await h.svc.member(id)).toMatchObject({
      id,
      name: 'Kim',
      grade: 1,
      grade_name: '입문',
      kc: 0,
      ru: 0,
      cu: 0,
      zone,
    });
    const rec = (await h.store.get(K.member(id))) as Record<string, unknown>;
    expect(Object.keys(rec).sort()).toEqual(['cu', 'excess', 'grade', 'grade_name', 'id', 'kc', 'name', 'ru']);
    expect(await h.store.get(K.memberMeta(id))).toMatchObject({ zone, public_key: keyOf('Kim') });
    expect((await h.svc.zone(zone)).members).toBe(1);
    expect((await h.svc.stats()).members).toBe(1);
    const ev = h.events.find((e) => (e.message as { type: string }).type === 'member');
    expect(ev?.topic).toBe('reward');
    expect(ev?.message).toMatchObject({ type: 'member', id, zone, stats: { members: 1, cultures: 1 } });
  });

  it('refuses an unknown zone (404), bad names (400), unknown members (404), changing nothing', async () => {
    h = await harness();
    const { id } = await zoneAndMember(h);
    const before = await snapshot(h, [id]);
    expect(await refusal(h.svc.createMember({ name: 'Lee', zone: 'KR-ko-none' }))).toMatchObject({
      status: 404,
      code: 'zone_not_found',
    });
    const zone = (await h.svc.listZones()).zones[0]!.id;
    expect(await refusal(h.svc.createMember({ name: '', zone }))).toMatchObject({ status: 400, code: 'invalid_name' });
    expect(await refusal(h.svc.createMember({ name: 'x', zone, public_key: 'pk-x' }))).toMatchObject({
      status: 400,
      code: 'invalid_public_key',
    });
    expect(await refusal(h.svc.createMember({ name: 'x'.repeat(65), zone }))).toMatchObject({ code: 'invalid_name' });
    expect(await refusal(h.svc.member('m_nobody0000'))).toMatchObject({ status: 404, code: 'member_not_found' });
    expect(await snapshot(h, [id])).toEqual(before);
  });

  it('never lets a zone pass 6561 members, even under 20 concurrent creates', async () => {
    h = await harness();
    const z = await h.svc.culture({ country: 'KR', lang: 'ko', name: 'Busan' });
    // Fill to 6555 through the service itself.
    for (let i = 0; i < 6555; i += 500) {
      const batch = Array.from({ length: Math.min(500, 6555 - i) }, (_, j) =>
        h.svc.createMember({ name: `m${i + j}`, zone: z.id }),
      );
      await Promise.all(batch);
    }
    expect((await h.svc.zone(z.id)).members).toBe(6555);

    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => h.svc.createMember({ name: `late${i}`, zone: z.id })),
    );
    const ok = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason);
    expect(ok).toHaveLength(6);
    expect(refused).toHaveLength(14);
    for (const e of refused) {
      expect(e).toBeInstanceOf(AppError);
      expect(e).toMatchObject({ status: 409, code: 'zone_full', details: { capacity: 6561, members: 6561 } });
    }
    expect((await h.svc.zone(z.id)).members).toBe(6561);
    expect(await h.store.indexCount(K.zoneMembers(z.id))).toBe(6561);
    expect((await h.svc.stats()).members).toBe(6561);

    const before = await snapshot(h);
    expect(await refusal(h.svc.createMember({ name: 'one more', zone: z.id }))).toMatchObject({ code: 'zone_full' });
    expect(await snapshot(h)).toEqual(before);
  }, 120_000);
});

describe('work', () => {
  it('credits the earned RU with the three shares, by the grade before the credit', async () => {
    h = await harness();
    const { id } = await zoneAndMember(h);
    const r = await h.svc.work({ id, kc: 3, v: 100 });
    // grade 1 (60%), v 100%, S0 100%, 3 units: 800 x 0.6 x 3 / 27 = 53.333.. -> 53.33
    const expected = earned(3, 60, 100, 100) / 100;
    expect(expected).toBe(53.33);
    expect(r).toMatchObject({
      id,
      earned_ru: expected,
      new_grade: 1,
      new_total_kc: 3,
      create_3x: 159.99,
      member_share: expected,
      ecosystem_share: expected,
      reserve_share: expected,
      stage: 'S0',
      promoted: false,
    });
    expect(await h.svc.member(id)).toMatchObject({ kc: 3, ru: 53.33, cu: 0, grade: 1 });
    expect(await h.svc.stats()).toMatchObject({ members: 1, cultures: 1, total_ru: 53.33, stage: 'S0' });
  });

  it('promotes when the score reaches a threshold, reporting new_grade', async () => {
    h = await harness();
    const { id } = await zoneAndMember(h);
    // score 0 -> 3 + 100 = 103: past 27 (grade 2) and 81 (grade 3)
    const r = await h.svc.work({ id, kc: 3, v: 200 });
    expect(r.grade).toBe(1);
    expect(r.new_grade).toBe(3);
    expect(r.new_grade_name).toBe('정규');
    expect(r.promoted).toBe(true);
    expect(r.earned_ru).toBe(earned(3, 60, 200, 100) / 100); // paid at grade 1
    h.clock.advance(DAY);
    const r2 = await h.svc.work({ id, kc: 3, v: 100 });
    expect(r2.grade).toBe(3);
    expect(r2.earned_ru).toBe(earned(3, 100, 100, 100) / 100); // paid at grade 3 now
    expect(await h.svc.member(id)).toMatchObject({ grade: 3, grade_name: '정규', kc: 6, excess: 100, score: 106 });
  });

  it('enforces 3 units a day and 27 a calendar month, refusing the whole work', async () => {
    h = await harness(kst('2026-05-01 09:00'));
    const { id } = await zoneAndMember(h);
    await h.svc.work({ id, kc: 2, v: 100 });
    let before = await snapshot(h, [id]);
    const e = await refusal(h.svc.work({ id, kc: 2, v: 100 }));
    expect(e).toMatchObject({
      status: 409,
      code: 'daily_units_exceeded',
      details: { units_today: 2, remaining_today: 1 },
    });
    expect(await snapshot(h, [id])).toEqual(before);
    await h.svc.work({ id, kc: 1, v: 100 });
    expect(await refusal(h.svc.work({ id, kc: 1, v: 100 }))).toMatchObject({
      details: { units_today: 3, remaining_today: 0 },
    });
    // 23:59 KST is still the same day; 00:00 KST is a new one.
    h.clock.set(kst('2026-05-01 23:59'));
    expect(await refusal(h.svc.work({ id, kc: 1, v: 100 }))).toMatchObject({ code: 'daily_units_exceeded' });
    h.clock.set(kst('2026-05-02 00:00'));
    await h.svc.work({ id, kc: 3, v: 100 });
    // 7 more days of 3 units: 27 units in May
    for (let d = 3; d <= 9; d++) {
      h.clock.set(kst(`2026-05-0${d} 12:00`));
      await h.svc.work({ id, kc: 3, v: 100 });
    }
    h.clock.set(kst('2026-05-10 12:00'));
    before = await snapshot(h, [id]);
    expect(await refusal(h.svc.work({ id, kc: 1, v: 100 }))).toMatchObject({
      status: 409,
      code: 'monthly_units_exceeded',
      details: { units_month: 27, remaining_month: 0 },
    });
    expect(await snapshot(h, [id])).toEqual(before);
    const sessions = await h.svc.workSessions(id);
    expect(sessions.month).toEqual({ month: '2026-05', units: 27, remaining: 0 });
    expect(sessions.today).toEqual({ date: '2026-05-10', units: 0, remaining: 0 });
    expect(sessions.months[0]!.days).toHaveLength(9);
    expect(sessions.months[0]!.days.every((d) => d.units === 3)).toBe(true);
    // June is a new calendar month (from 00:00 KST on 1 June, 15:00 UTC on 31 May)
    h.clock.set(Date.UTC(2026, 4, 31, 15, 0));
    expect((await h.svc.work({ id, kc: 3, v: 100 })).units_month).toBe(3);
    expect((await h.svc.workSessions(id)).months.map((m) => [m.month, m.units])).toEqual([
      ['2026-06', 3],
      ['2026-05', 27],
    ]);
  });

  it('refuses invalid kc and v with 400, changing nothing', async () => {
    h = await harness();
    const { id } = await zoneAndMember(h);
    const before = await snapshot(h, [id]);
    for (const [kc, v, code] of [
      [0, 100, 'invalid_kc'],
      [28, 100, 'invalid_kc'],
      [1.5, 100, 'invalid_kc'],
      [1, 99, 'invalid_v'],
      [1, 201, 'invalid_v'],
      [1, 150.5, 'invalid_v'],
    ] as const) {
      expect(await refusal(h.svc.work({ id, kc, v }))).toMatchObject({ status: 400, code });
    }
    expect(await refusal(h.svc.work({ id: 'm_nobody0000', kc: 1, v: 100 }))).toMatchObject({
      status: 404,
      code: 'member_not_found',
    });
    expect(await snapshot(h, [id])).toEqual(before);
  });

  it('credits only inside the plan period (KST)', async () => {
    h = await harness(kst('2026-04-04 23:59'));
    const { id } = await zoneAndMember(h);
    const before = await snapshot(h, [id]);
    expect(await refusal(h.svc.work({ id, kc: 1, v: 100 }))).toMatchObject({ status: 409, code: 'plan_not_started' });
    expect(await snapshot(h, [id])).toEqual(before);
    h.clock.set(kst('2026-04-05 00:00'));
    await h.svc.work({ id, kc: 1, v: 100 });
    h.clock.set(kst('2038-09-30 23:59'));
    const last = await h.svc.work({ id, kc: 1, v: 100 });
    expect(last.stage).toBe('S6');
    expect(last.earned_ru).toBe(earned(1, 60, 100, 600) / 100);
    expect(h.svc.maturity()).toMatchObject({ days_left: 0, stage: 'S6', end_year: 2038 });
    h.clock.set(kst('2038-10-01 00:00'));
    expect(await refusal(h.svc.work({ id, kc: 1, v: 100 }))).toMatchObject({ status: 409, code: 'plan_ended' });
  });

  it('asks the verifier with the member public key; a refusal writes nothing', async () => {
    h = await harness();
    const { id } = await zoneAndMember(h, 'Park');
    const seen: (string | undefined)[] = [];
    await h.svc.work({ id, kc: 1, v: 100, verify: (pk) => void seen.push(pk) });
    expect(seen).toEqual([keyOf('Park')]);
    const before = await snapshot(h, [id]);
    const e = await refusal(
      h.svc.work({
        id,
        kc: 1,
        v: 100,
        verify: () => {
          throw unauthorized('bad signature');
        },
      }),
    );
    expect(e.status).toBe(401);
    expect(await snapshot(h, [id])).toEqual(before);
  });
});

describe('exchange', () => {
  it('burns RU and mints CU 1:1, with the maturity value of the stage', async () => {
    h = await harness();
    const { id } = await zoneAndMember(h);
    await h.svc.work({ id, kc: 3, v: 200 }); // 106.66 RU
    const r = await h.svc.exchange({ id, amt: 17.77 });
    expect(r).toMatchObject({
      id,
      ru_burned: 17.77,
      cu_minted: 17.77,
      stage: 'S0',
      maturity_value: 106.62,
      ru: 88.89,
      cu: 17.77,
    });
    const s = await h.svc.exchange({ id, amt: '0.5' });
    expect(s.ru).toBe(88.39);
    expect(await h.svc.member(id)).toMatchObject({ ru: 88.39, cu: 18.27 });
    // the whole rest
    expect((await h.svc.exchange({ id, amt: 88.39 })).ru).toBe(0);
  });

  it('refuses zero, negative, over 2 decimals (400) and over the balance (409), changing nothing', async () => {
    h = await harness();
    const { id } = await zoneAndMember(h);
    await h.svc.work({ id, kc: 1, v: 100 }); // 17.77
    const before = await snapshot(h, [id]);
    for (const amt of [0, -1, 1.234, '1.234', 'abc', Number.NaN, Number.POSITIVE_INFINITY, 0.001]) {
      expect(await refusal(h.svc.exchange({ id, amt }))).toMatchObject({ status: 400, code: 'invalid_amount' });
    }
    expect(await refusal(h.svc.exchange({ id, amt: 17.78 }))).toMatchObject({
      status: 409,
      code: 'insufficient_ru',
      details: { balance: 17.77 },
    });
    expect(await refusal(h.svc.exchange({ id: 'm_nobody0000', amt: 1 }))).toMatchObject({ status: 404 });
    expect(await snapshot(h, [id])).toEqual(before);
  });

  it('gives 1x at maturity (2038)', async () => {
    h = await harness(kst('2038-03-01 10:00'));
    const { id } = await zoneAndMember(h);
    await h.svc.work({ id, kc: 3, v: 100 });
    const r = await h.svc.exchange({ id, amt: 10 });
    expect(r).toMatchObject({ stage: 'S6', maturity_value: 10, maturity_multiple: 1 });
  });
});

describe('ledgers', () => {
  async function activity(hh: Harness) {
    const { zone, id } = await zoneAndMember(hh);
    const b = await hh.svc.createMember({ name: 'Choi', zone });
    const works: [string, number, number][] = [
      [id, 3, 100],
      [b.id, 1, 137],
      [id, 2, 199],
      [b.id, 3, 200],
    ];
    for (const [m, kc, v] of works) {
      hh.clock.advance(DAY);
      await hh.svc.work({ id: m, kc, v });
    }
    await hh.svc.exchange({ id, amt: 20.01 });
    // an exchange in S1 (2028)
    hh.clock.set(kst('2028-02-01 10:00'));
    await hh.svc.work({ id: b.id, kc: 3, v: 150 });
    await hh.svc.exchange({ id: b.id, amt: 33.33 });
    return { a: id, b: b.id };
  }

  it('keeps every credit and exchange, with exact totals', async () => {
    h = await harness();
    const { a, b } = await activity(h);
    const all = await h.svc.rewardLedger();
    expect(all.entries.map((e) => e.seq)).toEqual([7, 6, 5, 4, 3, 2, 1]);
    const credits = all.entries.filter((e) => e.kind === 'credit');
    const exchanges = all.entries.filter((e) => e.kind === 'exchange');
    const sum = (xs: number[]) => xs.reduce((s, x) => s + centi(x), 0) / 100;
    expect(all.totals).toMatchObject({
      entries: 7,
      credits: 5,
      exchanges: 2,
      units: 12,
      ru_earned: sum(credits.map((e) => e.ru)),
      ru_burned: 53.34,
      cu_minted: 53.34,
    });
    expect((await h.svc.stats()).total_ru).toBe(all.totals.ru_earned);
    for (const e of credits) {
      if (e.kind !== 'credit') continue;
      expect(e.create_3x).toBe(sum([e.ru, e.ru, e.ru]));
      expect([e.member_share, e.ecosystem_share, e.reserve_share]).toEqual([e.ru, e.ru, e.ru]);
    }
    // per member, and paging
    const mine = await h.svc.rewardLedger({ member: a });
    expect(mine.entries.every((e) => e.member === a)).toBe(true);
    expect(mine.entries).toHaveLength(3);
    const page = await h.svc.rewardLedger({ limit: 3 });
    expect(page.entries.map((e) => e.seq)).toEqual([7, 6, 5]);
    const next = await h.svc.rewardLedger({ limit: 3, before: page.next_before! });
    expect(next.entries.map((e) => e.seq)).toEqual([4, 3, 2]);
    // balances = credits - exchanges
    for (const m of [a, b]) {
      const ent = (await h.svc.rewardLedger({ member: m })).entries;
      const credited = sum(ent.filter((e) => e.kind === 'credit').map((e) => e.ru));
      const burned = sum(ent.filter((e) => e.kind === 'exchange').map((e) => e.ru));
      const member = await h.svc.member(m);
      expect(member.ru).toBe(sum([credited, -burned]));
      expect(member.cu).toBe(burned);
    }
  });

  it('splits every ecosystem share into the four categories without losing a hundredth', async () => {
    h = await harness();
    await activity(h);
    const eco = await h.svc.ecosystemLedger();
    const ledger = await h.svc.rewardLedger();
    const credits = ledger.entries.filter((e) => e.kind === 'credit');
    expect(eco.entries).toHaveLength(credits.length);
    for (const e of eco.entries) {
      const parts = ECOSYSTEM_CATEGORIES.reduce((s, k) => s + centi(e.categories[k]), 0);
      expect(parts).toBe(centi(e.amount));
      expect(e.categories).toEqual(
        Object.fromEntries(
          Object.entries(splitAmount(centi(e.amount), DEFAULT_SPLIT)).map(([k, v]) => [k, v / 100]),
        ),
      );
    }
    const totalShares = credits.reduce((s, e) => s + centi(e.kind === 'credit' ? e.ecosystem_share : 0), 0);
    expect(centi(eco.total)).toBe(totalShares);
    expect(ECOSYSTEM_CATEGORIES.reduce((s, k) => s + centi(eco.totals[k]), 0)).toBe(totalShares);
    expect(centi(eco.realizable)).toBe(totalShares - centi(eco.totals.infrastructure));
  });

  it('produces the value-service sync payload since the cursor', async () => {
    h = await harness();
    await activity(h);
    const p1 = await h.svc.syncPayload({ limit: 3 });
    expect(p1).toMatchObject({ source: 'maru-reward', cursor: { from: 0, to: 3, more: true }, period: { from: null } });
    expect(p1.entries.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(centi(p1.period_total)).toBe(p1.entries.reduce((s, e) => s + centi(e.amount), 0));
    expect(await h.svc.markSynced(p1.cursor.to)).toEqual({ seq: 3, advanced: true });
    const p2 = await h.svc.syncPayload();
    expect(p2.cursor).toEqual({ from: 3, to: 5, more: false });
    expect(p2.entries.map((e) => e.seq)).toEqual([4, 5]);
    expect(p2.period.from).toBe(p2.generated_at);
    expect(p2.totals).toEqual((await h.svc.ecosystemLedger()).totals);
    expect(await h.svc.markSynced(2)).toEqual({ seq: 3, advanced: false });
    expect(await refusal(h.svc.markSynced(99))).toMatchObject({ status: 400, code: 'invalid_cursor' });
  });

  it('computes the reserve pool, maturity shortfall and coverage from the lots', async () => {
    h = await harness();
    expect(await h.svc.reservePool()).toMatchObject({
      balance: 0,
      maturity_shortfall: 0,
      reserve_coverage_pct: null,
      combined_coverage_pct: null,
    });
    await activity(h);
    const pool = await h.svc.reservePool();
    const ledger = await h.svc.rewardLedger();
    const eco = await h.svc.ecosystemLedger();
    const credits = ledger.entries.filter((e) => e.kind === 'credit');
    const lots = ledger.entries.filter((e) => e.kind === 'exchange');
    const reserve = credits.reduce((s, e) => s + centi(e.kind === 'credit' ? e.reserve_share : 0), 0);
    const obligation = lots.reduce((s, e) => s + maturityValue(centi(e.cu!), e.coin_pct), 0);
    const lotsCu = lots.reduce((s, e) => s + centi(e.cu!), 0);
    expect(lots.map((e) => e.stage)).toEqual(['S1', 'S0']);
    const shortfall = obligation - lotsCu;
    expect(pool).toMatchObject({
      balance: reserve / 100,
      lots: 2,
      lots_cu: lotsCu / 100,
      maturity_obligation: obligation / 100,
      maturity_shortfall: shortfall / 100,
      ecosystem_realizable: eco.realizable,
      note: null,
    });
    expect(pool.reserve_coverage_pct).toBe(Math.round((reserve / shortfall) * 10000) / 100);
    expect(pool.combined_coverage_pct).toBe(
      Math.round(((reserve + centi(eco.realizable)) / shortfall) * 10000) / 100,
    );
    expect(pool.by_stage.map((s) => s.stage)).toEqual(['S0', 'S1']);
  });

  it("enqueues the value and task-ledger deliveries in the member's atomic update of the credit, then writes the ledgers once", async () => {
    h = await harness();
    const { id } = await zoneAndMember(h);
    h.plans.length = 0;
    const r = await h.svc.work({ id, kc: 3, v: 120 });
    // the member's update, the ledgers' update, the member's pending movement removed
    expect(h.plans).toHaveLength(3);
    const p = outboxPartition(K.member(id));
    const [member, ledgers, settled] = h.plans.map((plan) => plan.map((w) => w.key));
    expect(member).toEqual(
      expect.arrayContaining([K.member(id), K.pending(id, r.credit_id), outboxKey(`value:${r.credit_id}`, p), outboxKey(`task-ledger:${r.credit_id}`, p)]),
    );
    expect(ledgers).toEqual(
      expect.arrayContaining([
        K.n.ruEarned,
        K.n.ecoService,
        // the entries under the numbers drawn in the same commit (ledger seq, ecosystem seq)
        K.entry(drawn(0)),
        K.ecoEntry(drawn(1)),
        K.applied(r.credit_id),
      ]),
    );
    expect(settled).toEqual([K.pending(id, r.credit_id), K.pendingOf(id)]);
    expect(await h.store.get(K.pending(id, r.credit_id))).toBeUndefined();
    expect(await h.store.get(K.applied(r.credit_id))).toEqual({ seq: r.seq, eco: 1 });
    const value = (await h.store.get(outboxKey(`value:${r.credit_id}`, p))) as Record<string, unknown>;
    const eco = (await h.svc.ecosystemLedger()).entries[0]!;
    expect(eco).toMatchObject({ id: r.credit_id, ledger_seq: r.seq });
    expect(value).toMatchObject({
      dest: 'value',
      payload: { id: r.credit_id, member: id, amount: r.ecosystem_share, categories: eco.categories },
    });
    expect(await h.store.get(outboxKey(`task-ledger:${r.credit_id}`, p))).toMatchObject({
      dest: 'task-ledger',
      payload: { id: r.credit_id, member: id, kc: 3, v: 120, earned_ru: r.earned_ru },
    });
    expect(await h.store.indexCount(outboxDueKey(p))).toBe(2);
    // a refused work enqueues nothing
    await refusal(h.svc.work({ id, kc: 1, v: 100 }));
    expect(await h.store.indexCount(outboxDueKey(p))).toBe(2);
  });
});

describe('persistence, events, charter', () => {
  it('keeps everything across a close and reopen of the store', async () => {
    h = await harness();
    const { id } = await zoneAndMember(h);
    await h.svc.work({ id, kc: 3, v: 180 });
    await h.svc.exchange({ id, amt: 5.55 });
    await h.svc.markSynced(1);
    const before = await snapshot(h, [id]);
    await h.reopen();
    expect(await snapshot(h, [id])).toEqual(before);
    h.clock.advance(DAY);
    const r = await h.svc.work({ id, kc: 1, v: 100 });
    expect(r.seq).toBe(3);
    expect(r.new_total_kc).toBe(4);
  });

  it('publishes each change on the reward topic with fresh stats', async () => {
    h = await harness();
    const { id } = await zoneAndMember(h);
    await h.svc.work({ id, kc: 2, v: 100 });
    await h.svc.exchange({ id, amt: 1 });
    const msgs = h.events.filter((e) => e.topic === 'reward').map((e) => e.message as Record<string, unknown>);
    expect(msgs.map((m) => m.type)).toEqual(['culture', 'member', 'work', 'exchange']);
    const work = msgs[2]!;
    expect(work).toMatchObject({ type: 'work', id, earned_ru: 35.55, new_grade: 1, stats: { total_ru: 35.55 } });
    expect(msgs[3]).toMatchObject({ type: 'exchange', ru_burned: 1, cu_minted: 1, stage: 'S0' });
  });

  it('does not fail a request when publishing fails', async () => {
    h = await harness();
    // the bus's store refuses to publish (rejecting, or throwing at once); the bus logs each failure
    const errors: unknown[] = [];
    const logger = { warn: (obj: { err?: unknown }) => void errors.push(obj.err) };
    const storeFailing = (how: 'reject' | 'throw') =>
      new Proxy(h.store, {
        get: (target, prop, recv) =>
          prop !== 'publish'
            ? Reflect.get(target, prop, recv)
            : how === 'reject'
              ? () => Promise.reject(new Error('bus down'))
              : () => {
                  throw new Error('bus broken');
                },
      });
    const failing: Bus = createBus(storeFailing('reject'), 'failing', { logger });
    const throwing: Bus = createBus(storeFailing('throw'), 'throwing', { logger });
    for (const bus of [failing, throwing]) {
      errors.length = 0;
      const svc = new RewardService({ store: h.store, clock: h.clock, bus });
      const z = await svc.culture({ country: 'JP', lang: 'ja', name: `Tokyo ${errors.length}${bus === failing}` });
      const m = await svc.createMember({ name: 'Sato', zone: z.id });
      expect((await svc.work({ id: m.id, kc: 1, v: 100 })).earned_ru).toBe(17.77);
      await new Promise((r) => setTimeout(r, 10));
      expect(errors.length).toBe(3);
    }
  });

  it('declares the nine principles without inventing 1-8', async () => {
    h = await harness();
    const d = h.svc.declare();
    expect(d.principles).toHaveLength(9);
    expect(d.principles[8]).toMatchObject({ number: 9, text: PRINCIPLE_9, configured: true });
    expect(d.principles.slice(0, 8).every((p) => p.text === null && !p.configured)).toBe(true);
    const texts = Array.from({ length: 8 }, (_, i) => `Operator principle ${i + 1}`);
    const svc = new RewardService({ store: h.store, clock: h.clock, bus: h.bus, charter: texts });
    expect(svc.declare().principles.map((p) => p.text)).toEqual([...texts, PRINCIPLE_9]);
    expect(() => new RewardService({ store: h.store, clock: h.clock, bus: h.bus, charter: texts.slice(1) })).toThrow();
  });

  it('describes itself in /spec and /readme', async () => {
    h = await harness();
    const s = h.svc.spec();
    expect(s.service).toMatchObject({ version: '1.0' });
    expect(s.figures).toMatchObject({
      unit_seconds: 3200,
      units_per_day: 3,
      units_per_work_month: 27,
      base_ru: 800,
      max_ru_per_month: 28800,
      zone_capacity: 6561,
      plan: { start: '2026-04-05', end: '2038-09-30', days: 4555 },
    });
    expect(s.grades).toHaveLength(9);
    expect(s.stages.map((x) => x.stage)).toEqual(['S0', 'S1', 'S2', 'S3', 'S4', 'S5', 'S6']);
    expect(s.principles[8]!.text).toBe(PRINCIPLE_9);
    expect(s.integration.value_service).toMatchObject({ method: 'POST', path: '/api/inflow' });
    expect(JSON.parse(JSON.stringify(s))).toEqual(s);
    const md = h.svc.readme();
    expect(md).toMatch(/^# /);
    for (const route of ['/stats', '/maturity', '/member', '/work', '/exchange', '/culture', '/declare', '/spec']) {
      expect(md).toContain(route);
    }
    expect(md).toContain('28800');
  });

  it('reports maturity and stats figures', async () => {
    h = await harness(kst('2026-04-05 00:00'));
    expect(h.svc.maturity()).toMatchObject({ days_left: 4561, progress: 0, stage: 'S0', end_year: 2038 });
    h.clock.set(kst('2030-06-01 12:00'));
    const m = h.svc.maturity();
    expect(m.stage).toBe('S2');
    const elapsed = (Date.UTC(2030, 5, 1) - Date.UTC(2026, 3, 5)) / DAY;
    expect(m.progress).toBe(Math.floor((elapsed * 10000) / 4555) / 100);
    expect(await h.svc.stats()).toEqual({ members: 0, cultures: 0, total_ru: 0, progress: m.progress, stage: 'S2' });
  });

  it('runs the coverage simulation with the service split', async () => {
    h = await harness();
    const sim = h.svc.coverageSimulation();
    expect(sim.final).toMatchObject({ reserve_coverage_pct: 20, combined_coverage_pct: 34 });
  });
});
