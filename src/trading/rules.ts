import type { z } from 'zod';
import { walkForwardWindows } from './analyses.js';
import { MAX_BASE_MINUTES } from './candles.js';
import { ConstraintError, parseConstraint, type Constraint } from './constraint.js';
import { searchCombos, type SearchSpec } from './search.js';
import { gridAxes, STRATEGY_DEFS, type StrategyId } from './strategies.js';
import { TIMEFRAME_MINUTES, type SYMBOLS, type TIMEFRAMES } from './symbols.js';

/**
 * Trading request rules shared by the routes (analyses and live programs): warm-up, grid size,
 * walk-forward windows and work budget. They belong to the domain, so route modules import them
 * from here and not from one another. Each adds its issues to a zod refinement context, so a
 * route answers 400 `invalid_body` naming the field.
 */

/** Largest grid (the document: at most 500 parameter combinations). */
export const MAX_COMBINATIONS = 500;
/** Largest Monte Carlo run count (the document: at most 500 shuffles). */
export const MAX_MC_RUNS = 500;
/** Most walk-forward windows of one request. */
export const MAX_WINDOWS = 50;
/** Walk-forward work cap: windows x combinations x in-sample bars. */
export const MAX_WALKFORWARD_BAR_EVALUATIONS = 1_000_000_000;

type Ctx = z.RefinementCtx;
export type CandleBody = { symbol: (typeof SYMBOLS)[number]; timeframe: (typeof TIMEFRAMES)[number]; count: number; seed: number };

/** Validates params against the strategy's schema (issues under `prefix`); returns them with defaults. */
export function checkParams(strategy: StrategyId, params: unknown, prefix: (string | number)[], ctx: Ctx): Record<string, number> | undefined {
  const r = STRATEGY_DEFS[strategy].schema.safeParse(params ?? {});
  if (r.success) return r.data;
  for (const i of r.error.issues) ctx.addIssue({ code: 'custom', path: [...prefix, ...(i.path as (string | number)[])], message: i.message });
  return undefined;
}

/** The candles asked for must fit the one-minute base series. */
export function checkCandles(b: CandleBody, ctx: Ctx): void {
  const minutes = b.count * TIMEFRAME_MINUTES[b.timeframe];
  if (minutes > MAX_BASE_MINUTES) {
    ctx.addIssue({
      code: 'custom',
      path: ['count'],
      message: `${b.count} ${b.timeframe} candles need ${minutes} one-minute bars; at most ${MAX_BASE_MINUTES} (${Math.floor(MAX_BASE_MINUTES / TIMEFRAME_MINUTES[b.timeframe])} ${b.timeframe} candles)`,
    });
  }
}

/** A strategy needs its warm-up bars (on every timeframe it reads) plus a bar to fill. */
export function checkWarmup(strategy: StrategyId, params: Record<string, number>, b: CandleBody, bars: number, path: string, ctx: Ctx): void {
  const w = STRATEGY_DEFS[strategy].warmup(params, 1380 / TIMEFRAME_MINUTES[b.timeframe]);
  if (bars < w.bars + 2) {
    const needs = Object.entries(w.needs).map(([tf, k]) => `${k} on ${tf}`).join(', ');
    ctx.addIssue({
      code: 'custom',
      path: [path],
      message: `${strategy} needs at least ${w.bars + 2} candles (${needs} completed bars before it can act, then a bar to fill); got ${bars}`,
    });
  }
}

/** The parameter names of a strategy. */
export function paramNames(strategy: StrategyId): string[] {
  return Object.keys((STRATEGY_DEFS[strategy].schema as unknown as { shape: Record<string, z.ZodType> }).shape);
}

/**
 * Grid keys must be the strategy's parameters, each value inside its schema; the whole grid at most
 * 500 combinations, unless a random search samples at most 500 of it. A constraint drops combinations
 * before they count as run.
 */
export function checkGrid(
  strategy: StrategyId,
  grid: Record<string, number[]> | undefined,
  fixed: Record<string, number>,
  ctx: Ctx,
  opts: { constraint?: Constraint | undefined; search?: SearchSpec | undefined } = {},
) {
  const def = STRATEGY_DEFS[strategy];
  const shape = (def.schema as unknown as { shape: Record<string, z.ZodType> }).shape;
  let ok = true;
  for (const [k, vals] of Object.entries(grid ?? {})) {
    const field = shape[k];
    if (!field) {
      ctx.addIssue({ code: 'custom', path: ['grid', k], message: `${strategy} has no parameter ${k} (it has ${Object.keys(shape).join(', ')})` });
      ok = false;
      continue;
    }
    vals.forEach((v, i) => {
      const r = field.safeParse(v);
      if (!r.success) {
        ctx.addIssue({ code: 'custom', path: ['grid', k, i], message: r.error.issues[0]!.message });
        ok = false;
      }
    });
  }
  if (!ok) return undefined;
  const search = opts.search ?? { mode: 'grid', samples: MAX_COMBINATIONS, seed: 0 };
  // a grid too large to run whole is refused before it is expanded
  let asked = 1;
  for (const [, vals] of gridAxes(strategy, grid, fixed)) asked *= vals.length;
  if (search.mode === 'grid' && asked > MAX_COMBINATIONS) {
    // the optimizer offers a random search instead (walk-forward runs whole grids)
    const hint = opts.search ? ` (or search "random" to run a sample of at most ${MAX_COMBINATIONS})` : '';
    ctx.addIssue({ code: 'custom', path: ['grid'], message: `${asked} combinations asked; at most ${MAX_COMBINATIONS}${hint}` });
    return undefined;
  }
  const g = searchCombos(strategy, grid, fixed, opts.constraint, search);
  if (g.combos.length === 0) {
    const out = g.constrained ? `, ${g.constrained} outside the constraint` : '';
    ctx.addIssue({ code: 'custom', path: [g.constrained ? 'constraint' : 'grid'], message: `none of the ${g.asked} combinations is valid (${g.skipped} skipped${out})` });
    return undefined;
  }
  return g;
}

/** Parses an optimization's constraint over the strategy's parameters (a 400 on `constraint` when it does not). */
export function checkConstraint(strategy: StrategyId, src: string | undefined, ctx: Ctx): { ok: boolean; constraint?: Constraint } {
  if (src === undefined) return { ok: true };
  try {
    return { ok: true, constraint: parseConstraint(src, paramNames(strategy)) };
  } catch (e) {
    if (!(e instanceof ConstraintError)) throw e;
    ctx.addIssue({ code: 'custom', path: ['constraint'], message: e.message });
    return { ok: false };
  }
}

/** A heat map's two axes: two different parameters of the strategy. */
export function checkHeatmap(strategy: StrategyId, axes: [string, string] | undefined, ctx: Ctx): void {
  if (!axes) return;
  const names = paramNames(strategy);
  axes.forEach((a, i) => {
    if (!names.includes(a)) ctx.addIssue({ code: 'custom', path: ['heatmap', i], message: `${strategy} has no parameter ${a} (it has ${names.join(', ')})` });
  });
  if (axes[0] === axes[1]) ctx.addIssue({ code: 'custom', path: ['heatmap', 1], message: 'must differ from the first axis' });
}

/** Bars the slowest combination of a grid needs before it can act. */
export function gridWarmup(strategy: StrategyId, timeframe: CandleBody['timeframe'], combos: Record<string, number>[]): number {
  return combos.reduce((m, p) => Math.max(m, STRATEGY_DEFS[strategy].warmup(p, 1380 / TIMEFRAME_MINUTES[timeframe]).bars), 0);
}

/** An optimization's candles must cover the grid's slowest warm-up. */
export function checkGridWarmup(strategy: StrategyId, b: CandleBody, combos: Record<string, number>[], ctx: Ctx): void {
  const worst = gridWarmup(strategy, b.timeframe, combos);
  if (b.count < worst + 2) ctx.addIssue({ code: 'custom', path: ['count'], message: `the grid needs at least ${worst + 2} candles (its slowest combination's warm-up); got ${b.count}` });
}

/**
 * Walk-forward: at least one and at most MAX_WINDOWS complete windows, in-sample windows that cover
 * the grid's slowest warm-up, and at most MAX_WALKFORWARD_BAR_EVALUATIONS bar evaluations.
 */
export function checkWalkForward(
  strategy: StrategyId,
  b: CandleBody & { in_sample: number; out_of_sample: number },
  step: number,
  combos: Record<string, number>[] | undefined,
  ctx: Ctx,
): void {
  const windows = walkForwardWindows(b.count, b.in_sample, b.out_of_sample, step).length;
  if (windows === 0) {
    ctx.addIssue({
      code: 'custom',
      path: ['in_sample'],
      message: `no complete window: in_sample + out_of_sample = ${b.in_sample + b.out_of_sample} is more than count ${b.count}`,
    });
  } else if (windows > MAX_WINDOWS) {
    ctx.addIssue({ code: 'custom', path: ['step'], message: `${windows} windows; at most ${MAX_WINDOWS} (raise step or in_sample)` });
  }
  if (combos && windows > 0) {
    const worst = gridWarmup(strategy, b.timeframe, combos);
    if (b.in_sample < worst + 2) {
      ctx.addIssue({ code: 'custom', path: ['in_sample'], message: `in-sample windows need at least ${worst + 2} candles (the grid's slowest warm-up); got ${b.in_sample}` });
    }
    const work = windows * combos.length * b.in_sample;
    if (work > MAX_WALKFORWARD_BAR_EVALUATIONS) {
      ctx.addIssue({ code: 'custom', path: ['grid'], message: `${combos.length} combinations x ${windows} windows x ${b.in_sample} bars is over the ${MAX_WALKFORWARD_BAR_EVALUATIONS} bar-evaluation budget` });
    }
  }
}
