import { z } from 'zod';
import { Breakout, EmaCross, MeanReversion, RsiRebound, TripleSync, tripleWarmup, type StrategyRun } from './strategy-runs.js';

/**
 * The five built-in strategies: names, parameters (zod schemas with defaults), default optimization
 * grids and warm-up; their runs (streaming `next` and batch `fill`) are in strategy-runs.ts.
 */
export { EXIT, LONG, NONE, SHORT, type StrategyRun } from './strategy-runs.js';

export const STRATEGIES = ['ema_cross', 'rsi_rebound', 'breakout', 'mean_reversion', 'triple_sync'] as const;
export type StrategyId = (typeof STRATEGIES)[number];

export interface StrategyDef {
  id: StrategyId;
  name: string;
  description: string;
  /** zod schema of the parameters; every field has a default; unknown fields are refused. */
  schema: z.ZodType<Record<string, number>>;
  /** Default optimization grid (values per parameter). */
  ranges: Record<string, number[]>;
  /** Bars needed before the first action, and what each timeframe needs. */
  warmup(params: Record<string, number>, barsPerSession: number): { bars: number; needs: Record<string, number> };
  create(params: Record<string, number>, barsPerSession: number): StrategyRun;
}

const int = (min: number, max: number, def: number) => z.number().int().min(min).max(max).default(def);
const num = (min: number, max: number, def: number) => z.number().min(min).max(max).default(def);

// ---- definitions ---------------------------------------------------------------------------------

const fastSlow = <T extends z.ZodRawShape>(shape: T) =>
  z.strictObject(shape).refine((p: any) => p.fast < p.slow, { message: 'must be greater than fast', path: ['slow'] });

export const STRATEGY_DEFS: Record<StrategyId, StrategyDef> = {
  ema_cross: {
    id: 'ema_cross',
    name: 'EMA cross',
    description: 'Long when EMA(fast) crosses above EMA(slow), short when it crosses below.',
    schema: fastSlow({ fast: int(2, 200, 9), slow: int(3, 400, 21) }) as any,
    ranges: { fast: [5, 8, 10, 12, 15], slow: [20, 26, 30, 40, 50] },
    warmup: (p) => ({ bars: p.slow!, needs: { base: p.slow! } }),
    create: (p) => new EmaCross(p),
  },
  rsi_rebound: {
    id: 'rsi_rebound',
    name: 'RSI rebound',
    description: 'Long when RSI(period) rises back through oversold, short when it falls back through overbought.',
    schema: z
      .strictObject({ period: int(2, 100, 14), oversold: num(1, 49, 30), overbought: num(51, 99, 70) })
      .refine((p) => p.oversold < p.overbought, { message: 'must be greater than oversold', path: ['overbought'] }) as any,
    ranges: { period: [7, 10, 14, 21], oversold: [20, 25, 30, 35], overbought: [65, 70, 75, 80] },
    warmup: (p) => ({ bars: p.period! + 1, needs: { base: p.period! + 1 } }),
    create: (p) => new RsiRebound(p),
  },
  breakout: {
    id: 'breakout',
    name: 'Breakout',
    description: 'Long when the close breaks above the highest high of the previous lookback bars, short below the lowest low.',
    schema: z.strictObject({ lookback: int(2, 500, 20) }) as any,
    ranges: { lookback: [10, 15, 20, 30, 40, 55, 80, 100] },
    warmup: (p) => ({ bars: p.lookback!, needs: { base: p.lookback! } }),
    create: (p) => new Breakout(p),
  },
  mean_reversion: {
    id: 'mean_reversion',
    name: 'Mean reversion',
    description: 'Long when the close falls below the lower Bollinger band, short above the upper; exit back at the middle band.',
    schema: z.strictObject({ period: int(2, 200, 20), k: num(0.5, 4, 2) }) as any,
    ranges: { period: [10, 15, 20, 30, 40], k: [1.5, 2, 2.5, 3] },
    warmup: (p) => ({ bars: p.period!, needs: { base: p.period! } }),
    create: (p) => new MeanReversion(p),
  },
  triple_sync: {
    id: 'triple_sync',
    name: 'Triple timeframe sync',
    description:
      'EMA(fast) vs EMA(slow) trend on the base timeframe and on bars of mid and high base bars; long when all three turn up together, short when all turn down, exit when they disagree. Waits until every timeframe has slow completed bars.',
    schema: z
      .strictObject({ fast: int(2, 100, 9), slow: int(3, 200, 21), mid: int(2, 30, 5), high: int(3, 120, 15) })
      .refine((p) => p.fast < p.slow, { message: 'must be greater than fast', path: ['slow'] })
      .refine((p) => p.mid < p.high, { message: 'must be greater than mid', path: ['high'] }) as any,
    ranges: { fast: [5, 9, 12], slow: [21, 30, 50], mid: [5], high: [15] },
    warmup: (p, bps) => ({
      bars: tripleWarmup(p, bps),
      needs: { base: p.slow!, mid: p.slow!, high: p.slow! },
    }),
    create: (p, bps) => new TripleSync(p, bps),
  },
};

/** Parameters with defaults filled in; throws the zod error (the route turns it into a 400). */
export function strategyParams(id: StrategyId, params: unknown): Record<string, number> {
  return STRATEGY_DEFS[id].schema.parse(params ?? {});
}

/** The axes of a grid: the default ranges, overridden per parameter by the grid, else by a fixed value. */
export function gridAxes(id: StrategyId, grid: Record<string, number[]> | undefined, fixed: Record<string, number> = {}): [string, number[]][] {
  const axes: [string, number[]][] = Object.entries({ ...STRATEGY_DEFS[id].ranges, ...(grid ?? {}) });
  for (const k of Object.keys(fixed)) {
    const i = axes.findIndex(([name]) => name === k);
    if (i >= 0 && !(grid && k in grid)) axes[i] = [k, [fixed[k]!]];
  }
  return axes;
}

/** Grid of parameter combinations: default ranges overridden per parameter; invalid ones counted. */
export function expandGrid(
  id: StrategyId,
  grid: Record<string, number[]> | undefined,
  fixed: Record<string, number> = {},
): { combos: Record<string, number>[]; asked: number; skipped: number } {
  const def = STRATEGY_DEFS[id];
  const axes = gridAxes(id, grid, fixed);
  let asked = 1;
  for (const [, vals] of axes) asked *= vals.length;
  const combos: Record<string, number>[] = [];
  let skipped = 0;
  if (asked > 100_000) return { combos, asked, skipped };
  const idx = new Array(axes.length).fill(0);
  for (let n = 0; n < asked; n++) {
    const p: Record<string, number> = { ...fixed };
    axes.forEach(([name, vals], j) => (p[name] = vals[idx[j]]!));
    const r = def.schema.safeParse(p);
    if (r.success) combos.push(r.data);
    else skipped++;
    for (let j = axes.length - 1; j >= 0; j--) {
      if (++idx[j] < axes[j]![1].length) break;
      idx[j] = 0;
    }
  }
  return { combos, asked, skipped };
}
