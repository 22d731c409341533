import { describe, expect, it, vi } from 'vitest';
import { candlesFromRows } from '../../src/trading/candles.js';
import { Engine, EXIT, LONG, NONE, REASONS, SHORT, settingsSchema, type FillEvent, type RawRun, type Settings } from '../../src/trading/engine.js';
import { dayLossReached, entryBlock, riskLimits, scheduleTest } from '../../src/trading/risk.js';

/**
 * The risk controls of document 2 (daily loss limit, maximum positions, daily trade limit, schedule),
 * each on both sides of its boundary: the rules alone (src/trading/risk.ts) and as both engines
 * apply them (the streaming Engine.step of a live program, and the batch loop of a backtest), which
 * must agree trade for trade.
 */

const DAY = 86_400_000;
/** 2024-01-01 was a Monday. */
const MONDAY = Date.UTC(2024, 0, 1);
const at = (day: number, hh: number, mm: number, ss = 0) => MONDAY + day * DAY + ((hh * 60 + mm) * 60 + ss) * 1000;
const sched = (start: string, end: string, days?: number[]) => settingsSchema.parse({ schedule: { start, end, ...(days ? { days } : {}) } });

describe('risk limits', () => {
  it('an absent limit is no limit; a given one is taken as it is', () => {
    expect(riskLimits(settingsSchema.parse({}))).toEqual({ maxPositions: 1, dayLossLimit: Infinity, dayTradeLimit: Infinity });
    expect(riskLimits(settingsSchema.parse({ max_positions: 3, daily_loss_limit: 250, daily_trade_limit: 4 }))).toEqual({
      maxPositions: 3,
      dayLossLimit: 250,
      dayTradeLimit: 4,
    });
  });

  it('the daily loss limit is reached at the limit, not a cent before', () => {
    expect(dayLossReached(-100, 100)).toBe(true);
    expect(dayLossReached(-100.01, 100)).toBe(true);
    expect(dayLossReached(-99.99, 100)).toBe(false);
    expect(dayLossReached(0, 100)).toBe(false);
    expect(dayLossReached(100, 100)).toBe(false);
    expect(dayLossReached(-1e9, Infinity)).toBe(false);
  });
});

describe('schedule', () => {
  it('no schedule: no test', () => {
    expect(scheduleTest(settingsSchema.parse({}))).toBeNull();
  });

  it('a day window is [start, end): the start minute in, the end minute out', () => {
    const ok = scheduleTest(sched('09:30', '16:00'))!;
    expect(ok(at(1, 9, 29, 59))).toBe(false);
    expect(ok(at(1, 9, 30))).toBe(true);
    expect(ok(at(1, 12, 0))).toBe(true);
    expect(ok(at(1, 15, 59, 59))).toBe(true);
    expect(ok(at(1, 16, 0))).toBe(false);
    expect(ok(at(1, 20, 0))).toBe(false);
    expect(ok(at(1, 0, 0))).toBe(false);
  });

  it('a window across midnight takes the evening and the morning', () => {
    const ok = scheduleTest(sched('21:00', '02:00', [0, 1, 2, 3, 4, 5, 6]))!;
    expect(ok(at(1, 20, 59))).toBe(false);
    expect(ok(at(1, 21, 0))).toBe(true);
    expect(ok(at(1, 23, 59))).toBe(true);
    expect(ok(at(2, 0, 0))).toBe(true);
    expect(ok(at(2, 1, 59))).toBe(true);
    expect(ok(at(2, 2, 0))).toBe(false);
    expect(ok(at(2, 12, 0))).toBe(false);
  });

  it('a window of one minute, and an empty one (start = end)', () => {
    const one = scheduleTest(sched('10:00', '10:01', [1]))!;
    expect([at(0, 9, 59), at(0, 10, 0), at(0, 10, 0, 59), at(0, 10, 1)].map(one)).toEqual([false, true, true, false]);
    const none = scheduleTest(sched('10:00', '10:00', [1]))!;
    expect([at(0, 0, 0), at(0, 9, 59), at(0, 10, 0), at(0, 23, 0)].map(none)).toEqual([false, false, false, false]);
  });

  it('each weekday alone: a bar counts on its trading day, which opens at 23:00 UTC the evening before', () => {
    for (let d = 0; d < 7; d++) {
      const ok = scheduleTest(sched('00:00', '23:59', [d]))!;
      // 2024-01-01 (day 0) is a Monday (1): the calendar day k has weekday (k + 1) % 7
      const open = Array.from({ length: 7 }, (_, k) => ok(at(k, 12, 0)));
      expect(open).toEqual(Array.from({ length: 7 }, (_, k) => (k + 1) % 7 === d));
    }
    const monday = scheduleTest(sched('22:00', '23:59', [1]))!;
    expect(monday(at(-1, 22, 59, 59))).toBe(false); // Sunday 22:59: still Sunday's trading day
    expect(monday(at(-1, 23, 0))).toBe(true); // Sunday 23:00: Monday's session has opened
    expect(monday(at(0, 22, 59))).toBe(true); // Monday 22:59
    expect(monday(at(0, 23, 0))).toBe(false); // Monday 23:00: Tuesday's session
  });

  it('the default days are Monday to Friday', () => {
    const ok = scheduleTest(sched('00:00', '23:59'))!;
    expect(Array.from({ length: 7 }, (_, k) => ok(at(k, 12, 0)))).toEqual([true, true, true, true, true, false, false]);
  });
});

describe('a refused entry, as a live program names it', () => {
  // parsed inside each test: a schema broken by a change then fails the test, not the file's collection
  const settings = () => settingsSchema.parse({ max_positions: 2, daily_trade_limit: 3, schedule: { start: '09:30', end: '16:00', days: [1, 2] } });

  it('the daily trade limit first, at its limit and not before', () => {
    const s = settings();
    expect(entryBlock(s, 3, true, 2)).toEqual({ code: 'daily_trade_limit', detail: '3 of 3 entries today' });
    expect(entryBlock(s, 4, false, 0)).toEqual({ code: 'daily_trade_limit', detail: '4 of 3 entries today' });
    expect(entryBlock(s, 2, true, 2).code).toBe('max_positions');
  });

  it('then the maximum positions, only for a signal that would add to its own direction', () => {
    const s = settings();
    expect(entryBlock(s, 0, true, 2)).toEqual({ code: 'max_positions', detail: '2 of 2 positions open' });
    expect(entryBlock(s, 0, true, 1).code).toBe('schedule');
    expect(entryBlock(s, 0, false, 2).code).toBe('schedule');
  });

  it('then the schedule when there is one, else the daily loss halt', () => {
    const s = settings();
    expect(entryBlock(s, 0, false, 0)).toEqual({ code: 'schedule', detail: 'outside 09:30-16:00 UTC on days 1,2' });
    const plain = settingsSchema.parse({ daily_loss_limit: 100 });
    expect(entryBlock(plain, 0, false, 0)).toEqual({ code: 'risk', detail: 'refused by the engine' });
    expect(entryBlock(plain, 50, true, 0)).toEqual({ code: 'risk', detail: 'refused by the engine' });
  });
});

describe('the settings of a run', () => {
  // the schema is built when its module loads: a fresh copy in each test, so that a change to it
  // fails the tests here rather than the loading of the file
  const fresh = async () => {
    vi.resetModules();
    const { settingsSchema, defaultSettings } = await import('../../src/trading/engine-settings.js');
    return { settingsSchema, defaultSettings, ok: (v: object) => settingsSchema.safeParse(v).success };
  };

  it('every default', async () => {
    const { settingsSchema, defaultSettings } = await fresh();
    expect(defaultSettings()).toEqual(settingsSchema.parse({}));
    expect(settingsSchema.parse(undefined)).toEqual({
      capital: 100_000,
      contracts: 1,
      slippage_ticks: 1,
      commission: 2.5,
      stop_loss_atr: 2,
      take_profit_atr: 3,
      atr_period: 14,
      max_positions: 1,
    });
    expect(settingsSchema.parse({ schedule: { start: '09:00', end: '10:00' } }).schedule).toEqual({ start: '09:00', end: '10:00', days: [1, 2, 3, 4, 5] });
  });

  it('each bound on both sides', async () => {
    const { ok } = await fresh();
    const cases: [string, number, number, number, number][] = [
      // field, lowest taken, refused below, highest taken, refused above
      ['capital', 0.01, 0, 1e12, 1e12 + 1],
      ['contracts', 1, 0, 1000, 1001],
      ['slippage_ticks', 0, -0.01, 100, 100.01],
      ['commission', 0, -0.01, 1000, 1000.01],
      ['stop_loss_atr', 0, -0.01, 50, 50.01],
      ['take_profit_atr', 0, -0.01, 50, 50.01],
      ['stop_loss_points', 0.25, 0, 1e6, 1e6 + 1],
      ['take_profit_points', 0.25, 0, 1e6, 1e6 + 1],
      ['atr_period', 2, 1, 200, 201],
      ['daily_loss_limit', 0.01, 0, 1e12, 1e12 + 1],
      ['max_positions', 1, 0, 10, 11],
      ['daily_trade_limit', 1, 0, 100_000, 100_001],
    ];
    for (const [field, low, below, high, above] of cases) {
      expect([ok({ [field]: low }), ok({ [field]: below }), ok({ [field]: high }), ok({ [field]: above })], field).toEqual([true, false, true, false]);
    }
    expect(ok({ contracts: 1.5 })).toBe(false);
    expect(ok({ unknown: 1 })).toBe(false);
  });

  it('schedule times are HH:MM from 00:00 to 23:59, days 0 to 6', async () => {
    const { settingsSchema, ok } = await fresh();
    const time = (start: string) => ok({ schedule: { start, end: '12:00' } });
    for (const t of ['00:00', '09:05', '19:59', '20:00', '23:59']) expect(time(t), t).toBe(true);
    for (const t of ['24:00', '23:60', '30:00', '9:05', '09:5', '0905', '09:055', 'x09:05', '09:05x', '', '09-05', 'aa:bb']) expect(time(t), t).toBe(false);
    const r = settingsSchema.safeParse({ schedule: { start: '25:00', end: '12:00' } });
    expect(r.success ? '' : r.error.issues[0]!.message).toBe('must be HH:MM (UTC)');
    const days = (d: unknown) => ok({ schedule: { start: '09:00', end: '12:00', days: d } });
    expect([days([0]), days([6]), days([0, 1, 2, 3, 4, 5, 6]), days([-1]), days([7]), days([]), days([1.5])]).toEqual([true, true, true, false, false, false, false]);
  });
});

/**
 * Both engines over the same bars: the batch loop (a fresh engine without a fill listener) and the
 * streaming step (with one). Slippage and commission are 0, so a point of ES is 50 USD.
 */
function both(rows: Parameters<typeof candlesFromRows>[1], acts: number[], over: Partial<Settings>) {
  const cs = candlesFromRows('ES', rows);
  const settings = settingsSchema.parse({ capital: 10_000, slippage_ticks: 0, commission: 0, stop_loss_points: 50, take_profit_points: 50, ...over });
  const actions = Int8Array.from(acts);
  const batch = new Engine(cs, settings).runActions(actions);
  const fills: FillEvent[] = [];
  const streaming = new Engine(cs, settings);
  streaming.onFill = (f) => fills.push(f);
  const stepped = streaming.runActions(actions);
  const view = (r: RawRun) => ({
    trades: Array.from({ length: r.trades.n }, (_, k) => ({
      entry: r.trades.entryBar[k],
      exit: r.trades.exitBar[k],
      dir: r.trades.dir[k],
      pnl: r.trades.pnl[k],
      reason: REASONS[r.trades.reason[k]!],
    })),
    riskStops: r.riskStops,
    equity: Array.from(r.equity),
  });
  expect(view(stepped)).toEqual(view(batch));
  return { ...view(batch), fills, book: streaming.snapshot() };
}

const flat = (o: number, session = 0) => ({ o, h: o, l: o, c: o, session });

describe('the daily loss limit in both engines', () => {
  // an action fills at the next bar's open, in that bar's session. Bar 0 LONG fills at bar 1's open
  // 100; bar 1 EXIT closes it at bar 2's open 98: -100 USD. Bars 5 and 6 are the next session.
  const rows = [flat(100), flat(100), flat(98), flat(98), flat(98), flat(99, 1), flat(99, 1)];
  const acts = [LONG, EXIT, LONG, LONG, NONE, NONE, NONE];

  it('a loss of exactly the limit halts the session: no entry until the next one', () => {
    const r = both(rows, acts, { daily_loss_limit: 100 });
    expect(r.riskStops).toBe(1);
    // the LONG of bars 2 and 3 would fill at bars 3 and 4, in the halted session
    expect(r.trades).toEqual([{ entry: 1, exit: 2, dir: LONG, pnl: -100, reason: 'signal' }]);
    // the book of a run that ends in the halted session
    const halted = both(rows.slice(0, 5), acts.slice(0, 5), { daily_loss_limit: 100 });
    expect(halted.book).toMatchObject({ halted: true, day_pnl: -100, day_trades: 1, flatten: false });
  });

  it('a limit one cent above the loss lets the next entry fill', () => {
    const r = both(rows, acts, { daily_loss_limit: 100.01 });
    expect(r.riskStops).toBe(0);
    // bar 3's LONG is refused by the maximum of one position instead
    expect(r.trades.map((t) => t.entry)).toEqual([1, 3]);
    expect(r.book.halted).toBe(false);
  });

  it('a new session lifts the halt', () => {
    const r = both(rows, [LONG, EXIT, LONG, NONE, LONG, NONE, NONE], { daily_loss_limit: 100 });
    // bar 4's LONG fills at bar 5's open, the first bar of session 1; closed at the end
    expect(r.trades.map((t) => [t.entry, t.reason])).toEqual([
      [1, 'signal'],
      [5, 'end'],
    ]);
    expect(r.book).toMatchObject({ halted: false, day_pnl: 0, day_trades: 1 });
  });

  it('a loss that reaches the limit with a position still open flattens it at the next open, as a risk exit', () => {
    // two longs (max 2) at 100 and 101, stops 2 points below each; bar 3's low 98.5 stops only the
    // second (at 99: -100 USD), which reaches the limit; the first is closed at bar 4's open
    const r = both(
      [flat(100), flat(100), flat(101), { o: 100, h: 100, l: 98.5, c: 99 }, flat(99.5), flat(99.5)],
      [LONG, LONG, NONE, NONE, NONE, NONE],
      { daily_loss_limit: 100, max_positions: 2, stop_loss_points: 2 },
    );
    expect(r.trades).toEqual([
      { entry: 2, exit: 3, dir: LONG, pnl: -100, reason: 'stop_loss' },
      { entry: 1, exit: 4, dir: LONG, pnl: -25, reason: 'risk' },
    ]);
    expect(r.riskStops).toBe(1);
    expect(r.fills.map((f) => `${f.bar}:${f.kind}:${f.reason ?? ''}`)).toEqual(['1:entry:', '2:entry:', '3:exit:stop_loss', '4:exit:risk']);
  });

  it('the last close-out counts toward the day but flattens nothing more', () => {
    const r = both([flat(100), flat(100), flat(90)], [LONG, NONE, NONE], { daily_loss_limit: 100 });
    expect(r.trades).toEqual([{ entry: 1, exit: 2, dir: LONG, pnl: -500, reason: 'end' }]);
    expect(r.riskStops).toBe(1);
  });
});

describe('maximum positions and the daily trade limit in both engines', () => {
  const rows = [flat(100), flat(100), flat(100), flat(100), flat(100), flat(100, 1), flat(100, 1), flat(100, 1), flat(100, 1)];

  it('same-direction signals add up to the maximum; an opposite one closes them all and reverses', () => {
    const acts = [LONG, LONG, LONG, SHORT, NONE, NONE, NONE, NONE, NONE];
    for (const max of [1, 2, 3]) {
      const r = both(rows, acts, { max_positions: max });
      expect(r.trades.filter((t) => t.dir === LONG).length, `max ${max}`).toBe(max);
      expect(r.trades.filter((t) => t.dir === SHORT).map((t) => t.entry)).toEqual([4]);
    }
  });

  it('entries per session stop at the limit and start again with the next session', () => {
    const acts = [LONG, SHORT, LONG, SHORT, LONG, LONG, SHORT, LONG, NONE];
    // fills at bars 1 to 8; bars 5 to 8 are session 1. With 2 a session: bar 3's LONG closes the
    // short but opens nothing, bar 4's SHORT is refused, bar 6's second LONG meets the maximum of
    // one position, bar 8's LONG closes the short only.
    const two = both(rows, acts, { daily_trade_limit: 2 });
    expect(two.trades.map((t) => t.entry)).toEqual([1, 2, 5, 7]);
    expect(two.book.day_trades).toBe(2);
    const three = both(rows, acts, { daily_trade_limit: 3 });
    expect(three.trades.map((t) => t.entry)).toEqual([1, 2, 3, 5, 7, 8]);
    expect(both(rows, acts, {}).trades.map((t) => t.entry)).toEqual([1, 2, 3, 4, 5, 7, 8]);
  });
});

describe('the schedule in both engines', () => {
  // session 0 opens Sunday 2023-12-31 23:00 UTC (Monday's trading day); one bar a minute
  const rows = [flat(100), flat(100), flat(100), flat(100), flat(100)];
  const acts = [LONG, EXIT, LONG, EXIT, NONE];

  it('an entry fills only when its bar opens inside the window; exits are not held back', () => {
    const inside = both(rows, acts, { schedule: { start: '23:01', end: '23:04', days: [1] } });
    expect(inside.trades.map((t) => [t.entry, t.exit])).toEqual([
      [1, 2],
      [3, 4],
    ]);
    const late = both(rows, acts, { schedule: { start: '23:02', end: '23:04', days: [1] } });
    expect(late.trades.map((t) => [t.entry, t.exit])).toEqual([[3, 4]]);
    const early = both(rows, acts, { schedule: { start: '23:00', end: '23:03', days: [1] } });
    expect(early.trades.map((t) => [t.entry, t.exit])).toEqual([[1, 2]]);
    const otherDay = both(rows, acts, { schedule: { start: '23:00', end: '23:59', days: [0] } });
    expect(otherDay.trades).toEqual([]);
  });
});
