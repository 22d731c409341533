import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { backtestResult } from '../../src/trading/analyses.js';
import { generateCandles, type CandleSpec } from '../../src/trading/candles.js';
import { settingsSchema } from '../../src/trading/engine.js';
import { expandGrid, STRATEGIES, STRATEGY_DEFS, type StrategyId } from '../../src/trading/strategies.js';
import { monteCarloJob, runTask, walkForwardWindowsFor } from './golden-support.js';

/**
 * Byte-identity of the engine's results with outputs recorded before the speed work (golden/*.json):
 * a backtest per strategy (and settings that reach every fill path), grids, walk-forward windows and
 * Monte Carlo on fixed inputs, through the same task entry points the workers use. Every optimization
 * must keep these bytes. `GOLDEN_WRITE=1` records the files anew (only when a result is meant to change).
 */
const dir = new URL('./golden/', import.meta.url);
const WRITE = process.env.GOLDEN_WRITE === '1';

function check(name: string, value: unknown) {
  const json = JSON.stringify(value);
  const file = new URL(`${name}.json`, dir);
  if (WRITE || !existsSync(file)) writeFileSync(file, json);
  const want = readFileSync(file, 'utf8');
  // compare digests first (a readable failure), then the bytes
  expect(createHash('sha256').update(json).digest('hex')).toBe(createHash('sha256').update(want).digest('hex'));
  expect(json === want).toBe(true);
}

const ES1: CandleSpec = { seed: 7, symbol: 'ES', timeframe: '1m', count: 30_000 };
const GC5: CandleSpec = { seed: 11, symbol: 'GC', timeframe: '5m', count: 12_000 };
const NQ1: CandleSpec = { seed: 3, symbol: 'NQ', timeframe: '1m', count: 15_000 };

const variants: Record<string, unknown> = {
  default: {},
  pyramid: { max_positions: 3, daily_loss_limit: 400, daily_trade_limit: 12 },
  schedule: { schedule: { start: '13:30', end: '20:00', days: [1, 2, 3, 4, 5] }, contracts: 2, slippage_ticks: 2 },
  points: { stop_loss_points: 6, take_profit_points: 9, commission: 1 },
  no_stops: { stop_loss_atr: 0, take_profit_atr: 0, max_positions: 2 },
  overnight: { schedule: { start: '22:30', end: '03:00', days: [0, 1, 2, 3, 4] }, atr_period: 30, take_profit_atr: 0 },
};

describe('golden results (byte-identical to the recorded outputs)', () => {
  const es = generateCandles(ES1);
  for (const id of STRATEGIES) {
    it(`backtest ${id} under every settings variant`, () => {
      const params = STRATEGY_DEFS[id].schema.parse({});
      const out: Record<string, unknown> = {};
      for (const [name, s] of Object.entries(variants)) {
        out[name] = backtestResult(es, { candles: ES1, strategy: id, params, settings: settingsSchema.parse(s), equity_points: 120, trades_limit: 150 });
      }
      check(`backtest-${id}`, out);
    });
  }

  it('backtests with other parameters and timeframes', () => {
    const gc = generateCandles(GC5);
    const nq = generateCandles(NQ1);
    const runs: [StrategyId, Record<string, number>][] = [
      ['ema_cross', { fast: 3, slow: 50 }],
      ['rsi_rebound', { period: 5, oversold: 25, overbought: 80 }],
      ['breakout', { lookback: 3 }],
      ['breakout', { lookback: 200 }],
      ['mean_reversion', { period: 7, k: 1 }],
      ['triple_sync', { fast: 3, slow: 8, mid: 3, high: 12 }],
      ['triple_sync', { fast: 5, slow: 30, mid: 7, high: 100 }],
    ];
    const out: unknown[] = [];
    for (const [cs, spec] of [[gc, GC5], [nq, NQ1]] as const) {
      for (const [id, p] of runs) {
        for (const v of ['default', 'pyramid', 'no_stops']) {
          out.push(backtestResult(cs, { candles: spec, strategy: id, params: STRATEGY_DEFS[id].schema.parse(p), settings: settingsSchema.parse(variants[v]), equity_points: 40, trades_limit: 40 }));
        }
      }
    }
    check('backtest-other', out);
  });

  it('grids (the default grid of every strategy, and an EMA-cross grid under several settings)', () => {
    const out: Record<string, unknown> = {};
    for (const id of STRATEGIES) {
      const { combos } = expandGrid(id, undefined);
      out[id] = runTask({ kind: 'grid', candles: GC5, strategy: id, combos, settings: settingsSchema.parse({}) });
    }
    const { combos } = expandGrid('ema_cross', { fast: [2, 3, 5, 8, 13, 21], slow: [22, 30, 34, 55, 89] });
    for (const v of ['pyramid', 'no_stops', 'points', 'schedule']) {
      out[`ema_cross_${v}`] = runTask({ kind: 'grid', candles: NQ1, strategy: 'ema_cross', combos, settings: settingsSchema.parse(variants[v]) });
    }
    check('grid', out);
  });

  it('walk-forward windows', () => {
    const out: Record<string, unknown> = {};
    for (const id of STRATEGIES) {
      const { combos } = expandGrid(id, undefined);
      out[id] = walkForwardWindowsFor(GC5, 4000, 1500, 2500).map((window) =>
        runTask({ kind: 'wf_window', candles: GC5, strategy: id, combos, settings: settingsSchema.parse(variants.pyramid), objective: 'sharpe', window }),
      );
    }
    const { combos } = expandGrid('ema_cross', { fast: [4, 9], slow: [20, 40, 60] });
    out.ema_cross_net = walkForwardWindowsFor(ES1, 8000, 2000, 5000).map((window) =>
      runTask({ kind: 'wf_window', candles: ES1, strategy: 'ema_cross', combos, settings: settingsSchema.parse({}), objective: 'net_profit', window }),
    );
    check('walkforward', out);
  });

  it('Monte Carlo', () => {
    const out: Record<string, unknown> = {};
    for (const id of STRATEGIES) {
      // the service's path: the backtest task, then chunks of runs (uneven cuts), then the summary
      out[id] = monteCarloJob({ candles: ES1, strategy: id, params: STRATEGY_DEFS[id].schema.parse({}), settings: settingsSchema.parse({}), runs: 300, seed: 17, ruin_level: 95_000 }, [1, 77, 150, 299]);
    }
    check('montecarlo', out);
  });
});
