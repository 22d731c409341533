import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { candlesFromRows, type Candles } from '../../src/trading/candles.js';
import { Engine, EXIT, LONG, NONE, REASONS, SHORT, settingsSchema, type EngineBook, type FillEvent, type RawRun, type Settings } from '../../src/trading/engine.js';
import { STRATEGY_DEFS } from '../../src/trading/strategies.js';

/**
 * The engine's two ways through a run must agree to the bit (docs/trading.md): the streaming
 * `Engine.step` that a live program feeds bar by bar, and the batch loop (src/trading/engine-batch.ts)
 * of backtests and grids. Over random bars, actions, settings (slippage, commission, contracts,
 * stops and targets in points or ATR, several positions, the risk limits, a schedule) and ranges,
 * both give the same trades, equity curve, exposure, commission and risk stops; every fill a live
 * program hears is a trade of the run; and a live program that stops at any bar and continues from
 * its book (snapshot, JSON, restore) hears the same fills as one that never stopped.
 */

interface Bar {
  o: number;
  h: number;
  l: number;
  c: number;
  session: number;
}

/** Bars on a quarter-point grid (ES ticks), with gaps at the open and new sessions now and then. */
const barsArb = fc
  .array(
    fc.record({
      gap: fc.integer({ min: -8, max: 8 }),
      move: fc.integer({ min: -12, max: 12 }),
      up: fc.integer({ min: 0, max: 6 }),
      down: fc.integer({ min: 0, max: 6 }),
      newSession: fc.integer({ min: 0, max: 9 }).map((x) => x < 3),
    }),
    { minLength: 3, maxLength: 60 },
  )
  .map((steps) => {
    const bars: Bar[] = [];
    let c = 100;
    let session = 0;
    for (const s of steps) {
      if (s.newSession && bars.length > 0) session++;
      const o = c + s.gap / 4;
      c = o + s.move / 4;
      bars.push({ o, h: Math.max(o, c) + s.up / 4, l: Math.min(o, c) - s.down / 4, c, session });
    }
    return bars;
  });

const actionArb = fc.constantFrom(NONE, NONE, NONE, LONG, LONG, SHORT, SHORT, EXIT);

const settingsArb = fc
  .record({
    contracts: fc.integer({ min: 1, max: 3 }),
    slippage_ticks: fc.integer({ min: 0, max: 2 }),
    commission: fc.constantFrom(0, 0.5, 2.5),
    stops: fc.constantFrom('points', 'atr', 'none', 'mixed', 'atr-stop'),
    sl: fc.integer({ min: 1, max: 16 }).map((q) => q / 4),
    tp: fc.integer({ min: 1, max: 24 }).map((q) => q / 4),
    atrMult: fc.constantFrom(0.5, 1, 2),
    atr_period: fc.integer({ min: 2, max: 4 }),
    max_positions: fc.integer({ min: 1, max: 3 }),
    daily_loss_limit: fc.option(fc.constantFrom(25, 100, 250, 600), { nil: undefined }),
    daily_trade_limit: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
    // sessions open at 23:00 UTC, one bar a minute
    schedule: fc.option(
      fc.tuple(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 1, max: 40 })).map(([a, len]) => {
        const hhmm = (m: number) => `${String(23 + Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
        return { start: hhmm(a), end: hhmm(Math.min(59, a + len)), days: [0, 1, 2, 3, 4, 5, 6] };
      }),
      { nil: undefined },
    ),
  })
  .map((r): Settings => {
    const s: Record<string, unknown> = {
      capital: 10_000,
      contracts: r.contracts,
      slippage_ticks: r.slippage_ticks,
      commission: r.commission,
      atr_period: r.atr_period,
      max_positions: r.max_positions,
      daily_loss_limit: r.daily_loss_limit,
      daily_trade_limit: r.daily_trade_limit,
      schedule: r.schedule,
    };
    if (r.stops === 'points') Object.assign(s, { stop_loss_points: r.sl, take_profit_points: r.tp });
    if (r.stops === 'atr') Object.assign(s, { stop_loss_atr: r.atrMult, take_profit_atr: r.atrMult * 1.5 });
    if (r.stops === 'none') Object.assign(s, { stop_loss_atr: 0, take_profit_atr: 0 });
    if (r.stops === 'mixed') Object.assign(s, { stop_loss_points: r.sl, stop_loss_atr: r.atrMult, take_profit_atr: r.atrMult });
    // the stop in ATR multiples, the target in points
    if (r.stops === 'atr-stop') Object.assign(s, { stop_loss_atr: r.atrMult, take_profit_points: r.tp });
    return settingsSchema.parse(JSON.parse(JSON.stringify(s)));
  });

const caseArb = barsArb.chain((bars) =>
  fc.record({
    bars: fc.constant(bars),
    actions: fc.array(actionArb, { minLength: bars.length, maxLength: bars.length }),
    settings: settingsArb,
    tradeFrom: fc.integer({ min: 0, max: Math.floor(bars.length / 3) }),
    // a tick of 0.01 or 0.1 and a point value of 1,000 or 100 make the order of a product show in its last bits
    symbol: fc.constantFrom('ES' as const, 'CL' as const, 'GC' as const),
    cut: fc.integer({ min: 1, max: bars.length - 1 }),
  }),
);

const runView = (r: RawRun) => ({
  trades: Array.from({ length: r.trades.n }, (_, k) => [
    r.trades.dir[k],
    r.trades.entryBar[k],
    r.trades.exitBar[k],
    r.trades.entryPrice[k],
    r.trades.exitPrice[k],
    r.trades.pnl[k],
    REASONS[r.trades.reason[k]!],
  ]),
  equity: Array.from(r.equity),
  exposedBars: r.exposedBars,
  commission: r.commission,
  riskStops: r.riskStops,
  capital: r.capital,
  range: r.range,
});

function streamed(cs: Candles, settings: Settings, range: { from: number; tradeFrom: number; to: number }, actions: Int8Array) {
  const fills: FillEvent[] = [];
  const engine = new Engine(cs, settings, range);
  engine.onFill = (f) => fills.push(f);
  const run = engine.runActions(actions);
  return { run, fills };
}

describe('the streaming engine and the batch loop', () => {
  it('agree to the bit on every run', () => {
    fc.assert(
      fc.property(caseArb, ({ bars, actions, settings, tradeFrom, symbol }) => {
        const cs = candlesFromRows(symbol, bars);
        const range = { from: 0, tradeFrom, to: bars.length };
        const acts = Int8Array.from(actions);
        const batch = new Engine(cs, settings, range).runActions(acts);
        const { run, fills } = streamed(cs, settings, range, acts);
        expect(runView(run)).toEqual(runView(batch));
        // every exit a live program hears is a trade of the run (trades before tradeFrom are not recorded)
        const exits = fills.filter((f) => f.kind === 'exit' && f.bar >= tradeFrom);
        const trades = runView(batch).trades.filter((t) => (t[2] as number) >= tradeFrom);
        expect(exits.map((f) => [f.side === 'sell' ? LONG : SHORT, f.bar, f.price, f.pnl, f.reason])).toEqual(trades.map((t) => [t[0], t[2], t[4], t[5], t[6]]));
        for (const f of fills) {
          expect(f.t).toBe(cs.t[f.bar]);
          expect(f.contracts).toBe(settings.contracts);
        }
        // entries come before their exits, one entry a trade
        expect(fills.filter((f) => f.kind === 'entry').length).toBeGreaterThanOrEqual(exits.length);
      }),
      { numRuns: 300, seed: 20261127 },
    );
  });

  it('a run stopped at any bar and continued from its book hears the same fills', () => {
    fc.assert(
      fc.property(caseArb, ({ bars, actions, settings, cut }) => {
        // stops and targets in points: the ATR is a series that a new engine builds again
        const s = settingsSchema.parse({ ...settings, stop_loss_atr: 0, take_profit_atr: 0, stop_loss_points: 1.5, take_profit_points: 2.5 });
        const cs = candlesFromRows('ES', bars);
        const range = { from: 0, tradeFrom: 0, to: bars.length };
        const acts = Int8Array.from(actions);
        const whole = streamed(cs, s, range, acts).fills;

        const heard: FillEvent[] = [];
        const first = new Engine(cs, s, range);
        first.onFill = (f) => heard.push(f);
        for (let i = 0; i < cut; i++) first.step(i, acts[i]!);
        const book = JSON.parse(JSON.stringify(first.snapshot())) as EngineBook;
        expect(book.positions.length).toBe(first.snapshot().positions.length);
        const second = new Engine(cs, s, range);
        second.onFill = (f) => heard.push(f);
        second.restore(book);
        expect(second.snapshot()).toEqual(book);
        expect(second.haltedToday).toBe(book.halted);
        for (let i = cut; i < bars.length; i++) second.step(i, acts[i]!);
        second.finish();
        expect(heard).toEqual(whole);
      }),
      { numRuns: 300, seed: 7 },
    );
  });
});

describe('the book of a live run', () => {
  it('holds the open positions with their levels, the order waiting and the day', () => {
    const cs = candlesFromRows('ES', [
      { o: 100, h: 100, l: 100, c: 100 },
      { o: 100, h: 101, l: 99.5, c: 100.5 },
      { o: 101, h: 101, l: 101, c: 101 },
      { o: 101, h: 101, l: 101, c: 101 },
    ]);
    const s = settingsSchema.parse({ slippage_ticks: 0, commission: 1.5, contracts: 2, max_positions: 2, stop_loss_points: 2, take_profit_atr: 0, daily_trade_limit: 5 });
    const e = new Engine(cs, s);
    e.onFill = () => {};
    e.step(0, LONG);
    expect(e.snapshot()).toEqual({ dir: 0, positions: [], pend: LONG, pend_sl: 2, pend_tp: 0, flatten: false, halted: false, day: 0, day_pnl: 0, day_trades: 0 });
    e.step(1, LONG);
    e.step(2, SHORT);
    expect(e.snapshot()).toEqual({
      dir: LONG,
      positions: [
        { entry: 100, sl: 98, tp: null, bar: 1 },
        { entry: 101, sl: 99, tp: null, bar: 2 },
      ],
      pend: SHORT,
      pend_sl: 2,
      pend_tp: 0,
      flatten: false,
      halted: false,
      day: 0,
      day_pnl: 0,
      day_trades: 2,
    });
    // restored: the cash is the capital less the open positions' entry commissions
    const r = new Engine(cs, s);
    r.restore(e.snapshot());
    r.step(3, NONE);
    const run = r.finish();
    // bar 3: the short closes both longs at the open (101) and opens; the run's end closes the short.
    // 2 contracts: a point is 100 USD, a side costs 3 USD
    expect(Array.from(run.trades.entryBar)).toEqual([2, 1, 3]);
    expect(Array.from(run.trades.pnl)).toEqual([-6, 94, -6]);
    // 100,000 less the two entries' commissions, +100 on the first long, the short's entry and the three exits
    expect(run.equity[3]).toBe(100_000 - 6 + 100 - 3 - 9);
  });
});

describe('a level crossed at the open or inside the bar, in both engines', () => {
  // one position from bar 1's open at 100 (no slippage on entry: 0 ticks), stop 2 and target 3 points
  // away; bar 2 decides the exit. Slippage applies to the stop's fill only.
  const exitOf = (dir: number, bar2: { o: number; h: number; l: number; c: number }, slippage_ticks = 0) => {
    const rows = [
      { o: 100, h: 100, l: 100, c: 100 },
      { o: 100, h: 100, l: 100, c: 100 },
      bar2,
      { o: 100, h: 100, l: 100, c: 100 },
    ];
    const settings = settingsSchema.parse({ capital: 10_000, slippage_ticks, commission: 0, stop_loss_points: 2, take_profit_points: 3 });
    const cs = candlesFromRows('ES', rows);
    const acts = Int8Array.from([dir, NONE, NONE, NONE]);
    const batch = new Engine(cs, settings).runActions(acts);
    const { run } = streamed(cs, settings, { from: 0, tradeFrom: 0, to: rows.length }, acts);
    expect(runView(run)).toEqual(runView(batch));
    return [batch.trades.exitBar[0], batch.trades.exitPrice[0], REASONS[batch.trades.reason[0]!]];
  };

  it('a long: a gap through the stop or the target fills at the open; inside the bar at the level; both inside, the stop', () => {
    // entry 100 (+ slippage 0.25 when asked): stop 98, target 103
    expect(exitOf(LONG, { o: 97, h: 97.5, l: 96, c: 97 })).toEqual([2, 97, 'stop_loss']);
    expect(exitOf(LONG, { o: 98, h: 99, l: 98, c: 98.5 })).toEqual([2, 98, 'stop_loss']);
    expect(exitOf(LONG, { o: 104, h: 105, l: 97, c: 104 })).toEqual([2, 104, 'take_profit']);
    expect(exitOf(LONG, { o: 103, h: 103, l: 97, c: 103 })).toEqual([2, 103, 'take_profit']);
    expect(exitOf(LONG, { o: 100, h: 103.5, l: 99, c: 101 })).toEqual([2, 103, 'take_profit']);
    expect(exitOf(LONG, { o: 100, h: 101, l: 98, c: 100 })).toEqual([2, 98, 'stop_loss']);
    expect(exitOf(LONG, { o: 100, h: 104, l: 97, c: 100 })).toEqual([2, 98, 'stop_loss']);
    expect(exitOf(LONG, { o: 100, h: 102.75, l: 98.25, c: 100 })).toEqual([3, 100, 'end']);
    // a level touched exactly inside the bar
    expect(exitOf(LONG, { o: 100, h: 103, l: 99, c: 101 })).toEqual([2, 103, 'take_profit']);
    expect(exitOf(LONG, { o: 100, h: 101, l: 98, c: 99 })).toEqual([2, 98, 'stop_loss']);
    // with a tick of slippage: entry 100.25, stop 98.25 filled a tick lower, the target as it is
    expect(exitOf(LONG, { o: 97, h: 97.5, l: 96, c: 97 }, 1)).toEqual([2, 96.75, 'stop_loss']);
    expect(exitOf(LONG, { o: 100, h: 101, l: 98, c: 100 }, 1)).toEqual([2, 98, 'stop_loss']);
    expect(exitOf(LONG, { o: 104, h: 105, l: 97, c: 104 }, 1)).toEqual([2, 104, 'take_profit']);
  });

  it('a short: the same, mirrored', () => {
    // entry 100: stop 102, target 97
    expect(exitOf(SHORT, { o: 103, h: 104, l: 102.5, c: 103 })).toEqual([2, 103, 'stop_loss']);
    expect(exitOf(SHORT, { o: 102, h: 102, l: 101, c: 101.5 })).toEqual([2, 102, 'stop_loss']);
    expect(exitOf(SHORT, { o: 96, h: 103, l: 95, c: 96 })).toEqual([2, 96, 'take_profit']);
    expect(exitOf(SHORT, { o: 97, h: 103, l: 97, c: 97 })).toEqual([2, 97, 'take_profit']);
    expect(exitOf(SHORT, { o: 100, h: 101, l: 96.5, c: 99 })).toEqual([2, 97, 'take_profit']);
    expect(exitOf(SHORT, { o: 100, h: 102, l: 99, c: 100 })).toEqual([2, 102, 'stop_loss']);
    expect(exitOf(SHORT, { o: 100, h: 103, l: 96, c: 100 })).toEqual([2, 102, 'stop_loss']);
    // the target touched exactly by the low
    expect(exitOf(SHORT, { o: 100, h: 101, l: 97, c: 99 })).toEqual([2, 97, 'take_profit']);
    expect(exitOf(SHORT, { o: 103, h: 104, l: 102.5, c: 103 }, 1)).toEqual([2, 103.25, 'stop_loss']);
    expect(exitOf(SHORT, { o: 100, h: 102, l: 99, c: 100 }, 1)).toEqual([2, 102, 'stop_loss']);
  });
});

describe('a strategy run', () => {
  it("is the strategy's actions run through the engine", () => {
    const rows = Array.from({ length: 40 }, (_, i) => {
      const c = 100 + 3 * Math.sin(i / 3);
      return { o: c - 0.25, h: c + 0.5, l: c - 0.75, c };
    });
    const cs = candlesFromRows('ES', rows);
    const settings = settingsSchema.parse({ stop_loss_atr: 0, take_profit_atr: 0 });
    const strategy = () => STRATEGY_DEFS.ema_cross.create({ fast: 2, slow: 3 }, cs.barsPerSession);
    const actions = new Int8Array(cs.n);
    strategy().fill(cs, 0, cs.n, actions);
    const direct = new Engine(cs, settings).runActions(actions);
    const run = new Engine(cs, settings).run(strategy());
    expect(direct.trades.n).toBeGreaterThan(2);
    expect(runView(run)).toEqual(runView(direct));
  });
});

describe('the close-out at the end of a run', () => {
  it('counts toward the day: one risk stop when its losses reach the limit, commissions included, however many positions close', () => {
    // two longs at 100 (max 2), closed at the last close 99: 2 x (-50 - 2 x 2.5) = -110 with commissions
    const flat = (o: number) => ({ o, h: o, l: o, c: o });
    const rows = [flat(100), flat(100), flat(100), flat(99)];
    const acts = [LONG, LONG, NONE, NONE];
    const run = (limit: number) => {
      const cs = candlesFromRows('ES', rows);
      const settings = settingsSchema.parse({ capital: 10_000, slippage_ticks: 0, commission: 2.5, max_positions: 2, stop_loss_atr: 0, take_profit_atr: 0, daily_loss_limit: limit });
      const a = Int8Array.from(acts);
      const batch = new Engine(cs, settings).runActions(a);
      const { run: stepped } = streamed(cs, settings, { from: 0, tradeFrom: 0, to: rows.length }, a);
      expect(runView(stepped)).toEqual(runView(batch));
      return batch;
    };
    const at = run(110);
    expect(Array.from(at.trades.pnl)).toEqual([-55, -55]);
    expect(at.riskStops).toBe(1);
    // without the commissions the loss (100) would not reach 105
    expect(run(105).riskStops).toBe(1);
    expect(run(110.01).riskStops).toBe(0);
    // reached at the first position already: still one stop
    expect(run(50).riskStops).toBe(1);
  });
});
