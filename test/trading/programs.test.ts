import { afterEach, describe, expect, it } from 'vitest';
import { createBus, type Bus } from '../../src/bus.js';
import { ManualClock } from '../../src/clock.js';
import { AppError } from '../../src/errors.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/port.js';
import { settingsSchema } from '../../src/trading/engine.js';
import { Market } from '../../src/trading/market.js';
import { K, ProgramService, type CreateInput, type ProgramEvent } from '../../src/trading/programs.js';
import { strategyParams, type StrategyId } from '../../src/trading/strategies.js';
import { tempDir } from '../support/process.js';

/**
 * The program service on an LMDB store, a ManualClock and one-second candles: the test moves the
 * clock candle by candle and pumps, so every outcome is deterministic (the market is a pure
 * function of the candle index).
 */
const BAR = 1000;
// a Wednesday, 12:01 UTC, on a candle boundary
const T0 = Date.parse('2026-11-18T12:01:00Z'); // candle index = 0 mod 1380: a market session starts

interface Rig {
  clock: ManualClock;
  store: Store;
  bus: Bus;
  svc: ProgramService;
  events: ProgramEvent[];
  /** Each event's offset in the Bus history of program:events (as the stream's ids carry them). */
  offsets: number[];
  bars(n: number): Promise<void>;
}

const rigs: Rig[] = [];
afterEach(async () => {
  const all = rigs.splice(0);
  for (const r of all) {
    await r.svc.close();
    await r.bus.close();
  }
  for (const store of new Set(all.map((r) => r.store))) await store.close();
});

/** A service; `on` shares the clock and store of another rig (a second process on the same store). */
async function rig(on?: Rig): Promise<Rig> {
  const clock = on?.clock ?? new ManualClock(T0);
  const store = on?.store ?? (await openStore({ DATA_DIR: tempDir('programs'), REDIS_PREFIX: 'x:' }));
  const bus = createBus(store, `test-${rigs.length}`);
  await bus.start();
  bus.retain('program:events', { size: 1000 });
  const events: ProgramEvent[] = [];
  const offsets: number[] = [];
  bus.onMessage(({ topic, message, offset }) => {
    if (topic !== 'program:events') return;
    events.push(message as unknown as ProgramEvent);
    offsets.push(offset!);
  });
  const svc = new ProgramService({ store, clock, bus, barMs: BAR, leaseMs: 60_000, pumpMs: 3_600_000 });
  await svc.start();
  const r: Rig = {
    clock,
    store,
    bus,
    svc,
    events,
    offsets,
    async bars(n) {
      for (let i = 0; i < n; i++) {
        clock.advance(BAR);
        await svc.pump();
      }
    },
  };
  rigs.push(r);
  return r;
}

const input = (strategy: StrategyId, params: Record<string, number>, settings: Record<string, unknown> = {}): CreateInput => ({
  strategy,
  symbol: 'ES',
  params: strategyParams(strategy, params),
  settings: settingsSchema.parse(settings),
});

async function status(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 200;
  } catch (err) {
    if (err instanceof AppError) return err.status;
    throw err;
  }
}

describe('live market', () => {
  it('is a pure function of the candle index and never jumps at the turn of its cycle', () => {
    const a = new Market('ES', BAR);
    const b = new Market('ES', 5 * BAR);
    expect(a.bar(123_456).c).toBe(b.bar(123_456).c);
    expect(a.bar(123_456).t).toBe(123_456 * BAR);
    // forward to backward, and backward to forward again: the open is the previous close
    expect(a.bar(27_600).o).toBe(a.bar(27_599).c);
    expect(a.bar(55_200).o).toBe(a.bar(55_199).c);
    expect(a.bar(55_200).c).toBe(a.bar(0).c);
  });
});

describe('program lifecycle', () => {
  it('allows the documented moves, answers the others with 409 and the current state', async () => {
    const { svc, events, offsets, bars } = await rig();
    const p = await svc.create(input('ema_cross', { fast: 3, slow: 8 }));
    expect(p.state).toBe('created');
    expect(await status(svc.move(p.id, 'pause'))).toBe(409);
    const err = await svc.move(p.id, 'stop').catch((e: AppError) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).details).toMatchObject({ state: 'created', move: 'stop' });
    expect((err as AppError).message).toContain('created');

    expect((await svc.move(p.id, 'start')).state).toBe('running');
    expect(svc.owned()).toEqual([p.id]);
    expect(await status(svc.move(p.id, 'start'))).toBe(409);
    await bars(5);
    expect((await svc.get(p.id)).stats.bars).toBe(5);
    expect((await svc.move(p.id, 'pause')).state).toBe('paused');
    expect(svc.owned()).toEqual([]);
    await bars(3);
    expect((await svc.get(p.id)).stats.bars).toBe(5);
    expect((await svc.move(p.id, 'start')).state).toBe('running');
    expect((await svc.move(p.id, 'stop')).state).toBe('stopped');
    expect(await status(svc.move(p.id, 'pause'))).toBe(409);
    expect((await svc.move(p.id, 'start')).state).toBe('running');

    // deleting a running program stops it first
    await svc.remove(p.id);
    const statuses = events.filter((e) => e.type === 'status').map((e) => (e.type === 'status' ? `${e.previous}>${e.state}` : ''));
    expect(statuses).toEqual(['created>running', 'running>paused', 'paused>running', 'running>stopped', 'stopped>running', 'running>stopped', 'stopped>deleted']);
    expect(svc.owned()).toEqual([]);
    expect(await status(svc.get(p.id))).toBe(404);
    expect(await status(svc.move(p.id, 'start'))).toBe(404);
    expect(await status(svc.remove(p.id))).toBe(404);
    expect(await svc.list()).toEqual([]);
    // stream positions increase by one, in order; every event has its own id
    expect(offsets).toEqual(offsets.map((_, i) => offsets[0]! + i));
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    expect(events.every((e) => e.created_by === null && e.id.startsWith(`${p.id}-`))).toBe(true);
  });
});

describe('risk', () => {
  it('stops the program when a fill takes the day loss to the daily loss limit', async () => {
    const { svc, events, bars } = await rig();
    const p = await svc.create(input('ema_cross', { fast: 2, slow: 3 }, { daily_loss_limit: 1, stop_loss_atr: 0.5, take_profit_atr: 5 }));
    await svc.move(p.id, 'start');
    for (let i = 0; i < 400 && (await svc.get(p.id)).state === 'running'; i += 10) await bars(10);
    const got = await svc.get(p.id);
    expect(got.state).toBe('stopped');
    expect(got.reason).toBe('daily_loss_limit');
    expect(got.stats.day_pnl).toBeLessThanOrEqual(-1);
    expect(got.stats.open_positions).toBe(0);
    const stop = events.find((e) => e.type === 'status' && e.state === 'stopped');
    expect(stop).toMatchObject({ program: p.id, previous: 'running', reason: 'daily_loss_limit' });
    // the losing exit comes before the status event
    const losing = events.findIndex((e) => e.type === 'trade' && e.kind === 'exit' && (e.pnl ?? 0) < 0);
    expect(losing).toBeGreaterThanOrEqual(0);
    expect(losing).toBeLessThan(events.indexOf(stop!));
    expect(svc.owned()).toEqual([]);
    const logs = await svc.logs(p.id);
    expect(logs.logs.some((l) => l.code === 'stopped' && l.message.includes('daily_loss_limit'))).toBe(true);
  });

  it('reads its log through the log entries codec: a corrupt stored entry is refused, not handed on', async () => {
    const { svc, store } = await rig();
    const p = await svc.create(input('ema_cross', { fast: 2, slow: 3 }));
    await svc.move(p.id, 'start');
    expect((await svc.logs(p.id)).logs.every((l) => typeof l.message === 'string')).toBe(true);
    await store.push(K.log(p.id), { t: 1, level: 'loud', code: 'x', message: 'y' }, 10);
    const err = await svc.logs(p.id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('corrupt_record');
  });

  it('enforces and logs maximum positions, the daily trade limit and the schedule', async () => {
    const { svc, bars } = await rig();
    // breakout signals again on every new high (or low): one position at most, no stop or target
    const maxPos = await svc.create(input('breakout', { lookback: 3 }, { max_positions: 1, stop_loss_atr: 0, take_profit_atr: 0 }));
    const trades = await svc.create(input('ema_cross', { fast: 2, slow: 3 }, { daily_trade_limit: 2, stop_loss_atr: 0, take_profit_atr: 0 }));
    // Wednesday 12:00 UTC is outside a Sunday-only schedule
    const sched = await svc.create(input('ema_cross', { fast: 2, slow: 3 }, { schedule: { start: '00:00', end: '23:59', days: [0] } }));
    for (const p of [maxPos, trades, sched]) await svc.move(p.id, 'start');
    await bars(200);
    const a = await svc.get(maxPos.id);
    expect(a.stats.entries).toBeGreaterThan(0);
    expect(a.stats.open_positions).toBe(1);
    // reversals close the open position before opening the other side: never two open
    expect(a.stats.entries - a.stats.trades).toBe(1);
    expect(a.stats.blocked).toBeGreaterThan(0);
    expect((await svc.logs(maxPos.id)).logs.some((l) => l.code === 'max_positions' && l.level === 'warn')).toBe(true);

    const b = await svc.get(trades.id);
    expect(b.stats.entries).toBe(2);
    expect(b.stats.day_trades).toBe(2);
    expect((await svc.logs(trades.id)).logs.some((l) => l.code === 'daily_trade_limit')).toBe(true);

    const c = await svc.get(sched.id);
    expect(c.stats.entries).toBe(0);
    expect(c.stats.signals).toBeGreaterThan(0);
    expect((await svc.logs(sched.id)).logs.some((l) => l.code === 'schedule')).toBe(true);

    const signals = (await svc.logs(trades.id)).signals;
    expect(signals.length).toBeGreaterThan(2);
  });
});

describe('bars a program processes', () => {
  it('only bars that close after it was started or resumed, each once', async () => {
    const { svc, bars } = await rig();
    const a = await svc.create(input('ema_cross', { fast: 2, slow: 3 }));
    const b = await svc.create(input('ema_cross', { fast: 2, slow: 3 }));
    await svc.move(a.id, 'start');
    await bars(30);
    await svc.move(a.id, 'pause');
    // 20 bars close while nothing runs on the symbol
    await bars(20);
    await svc.move(b.id, 'start');
    await svc.pump();
    expect((await svc.get(b.id)).stats.bars).toBe(0);
    await bars(3);
    expect((await svc.get(b.id)).stats.bars).toBe(3);
    // the resumed program skips the 23 bars it was paused for
    await svc.move(a.id, 'start');
    await svc.pump();
    expect((await svc.get(a.id)).stats.bars).toBe(30);
    await bars(4);
    const got = await svc.get(a.id);
    expect(got.stats.bars).toBe(34);
    const signals = (await svc.logs(a.id, 500)).signals as { bar: number; t: number }[];
    expect(new Set(signals.map((x) => x.bar)).size).toBe(signals.length);
    // no signal of a bar that closed before the start or during the pause
    const closes = signals.map((x) => x.t + BAR);
    const pausedFrom = T0 + 30 * BAR;
    const resumedAt = T0 + 53 * BAR;
    expect(closes.every((c) => c > T0 && (c <= pausedFrom || c > resumedAt))).toBe(true);
  });

  it('a new owner continues from the last committed bar with the open position', async () => {
    const first = await rig();
    // always in the market once it entered: a reversal closes and reopens, no stop or target
    const p = await first.svc.create(input('ema_cross', { fast: 2, slow: 3 }, { stop_loss_atr: 0, take_profit_atr: 0 }));
    await first.svc.move(p.id, 'start');
    let n = 0;
    while ((await first.svc.get(p.id)).stats.entries === 0 && n < 200) n += (await first.bars(5), 5);
    await first.bars(1);
    n += 1;
    const before = await first.svc.get(p.id);
    expect(before.stats.open_positions).toBe(1);
    // the first owner goes away with the position open; 7 bars close before another takes over
    await first.svc.close();
    rigs.splice(rigs.indexOf(first), 1);
    await first.bus.close();
    first.clock.advance(7 * BAR);
    const second = await rig(first);
    expect(second.svc.owned()).toEqual([p.id]);
    const claimed = await second.svc.get(p.id);
    expect(claimed.stats.open_positions).toBe(1);
    expect(claimed.stats.position).toBe(before.stats.position);
    await second.svc.pump();
    await second.bars(60);
    const after = await second.svc.get(p.id);
    // every bar that closed since the start, once
    expect(after.stats.bars).toBe(n + 7 + 60);
    const trades = second.events.filter((e) => e.type === 'trade' && e.program === p.id);
    expect(trades.length).toBeGreaterThan(0);
    // the restored position is closed by the new owner before it opens another
    expect(trades[0]).toMatchObject({ kind: 'exit', side: before.stats.position === 'long' ? 'sell' : 'buy' });
    const signals = (await second.svc.logs(p.id, 500)).signals as { bar: number }[];
    expect(new Set(signals.map((x) => x.bar)).size).toBe(signals.length);
    const logs = (await second.svc.logs(p.id)).logs;
    expect(logs.some((l) => l.code === 'claimed' && l.message.includes('restored'))).toBe(true);
  });

  it('an owner that stalled past its lease writes nothing after another took over: no bar or signal twice', async () => {
    const first = await rig();
    const p = await first.svc.create(input('ema_cross', { fast: 2, slow: 3 }, { stop_loss_atr: 0, take_profit_atr: 0 }));
    await first.svc.move(p.id, 'start');
    await first.bars(20);
    const before = await first.svc.get(p.id);
    expect(before.stats.bars).toBe(20);
    // the first owner stalls: its lease expires (as a store TTL would end it) and another process claims it
    await first.store.update([K.lease(p.id)], () => ({ writes: [{ op: 'del', key: K.lease(p.id) }], result: null }));
    const second = await rig(first);
    expect(second.svc.owned()).toEqual([p.id]);
    // both pump the next 15 bars, the stalled one first: its output is refused
    for (let i = 0; i < 15; i++) {
      first.clock.advance(BAR);
      await first.svc.pump();
      await second.svc.pump();
    }
    // each process's Bus saw every published signal (both share the store): one per bar, one per id
    const published = (r: Rig) => r.events.filter((e) => e.type === 'signal' && e.program === p.id && e.bar > before.stats.last_bar);
    for (const r of [first, second]) {
      const seen = published(r);
      expect(seen.length).toBeGreaterThan(0);
      expect(new Set(seen.map((e) => e.type === 'signal' && e.bar)).size).toBe(seen.length);
      expect(new Set(seen.map((e) => e.id)).size).toBe(seen.length);
    }
    await first.svc.leaseRound();
    expect(first.svc.owned()).toEqual([]);
    const after = await second.svc.get(p.id);
    expect(after.stats.bars).toBe(35);
    expect(after.owner).toBe(second.svc.owner);
    const signals = (await second.svc.logs(p.id, 500)).signals as { bar: number }[];
    expect(signals).toHaveLength(after.stats.signals);
    expect(new Set(signals.map((x) => x.bar)).size).toBe(signals.length);
  });
});
