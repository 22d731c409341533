import { checkCancel, round6, tick, type Control } from './analyses.js';
import { Rng } from './rng.js';

/**
 * Monte Carlo on a backtest's trade list, cut into chunks of runs: run i depends only on its index
 * (Rng(seed + i)), so chunks of runs can run anywhere (threads, processes) and monteCarloSummary
 * puts their figures together in run order, exactly as one piece would give them.
 */

export const PERCENTILES = [5, 25, 50, 75, 95] as const;

/** Linear interpolation between closest ranks (numpy's default). */
export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  const pos = ((sorted.length - 1) * p) / 100;
  const lo = Math.floor(pos);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

function table(values: Float64Array, round: (x: number) => number): Record<string, number> {
  const sorted = values.slice().sort();
  const out: Record<string, number> = {};
  for (const p of PERCENTILES) out[`p${p}`] = round(percentile(sorted, p));
  return out;
}

/** The figures of runs [from, to) of a Monte Carlo: per run, in run order, and the ruin counts. */
export interface MonteCarloRuns {
  from: number;
  to: number;
  max_drawdown: Float64Array;
  max_drawdown_usd: Float64Array;
  lowest_equity: Float64Array;
  final_equity: Float64Array;
  ruin_shuffle: number;
  ruin_bootstrap: number;
}

/**
 * Runs [from, to) of a Monte Carlo on a trade list. Run i uses Rng(seed + i): it shuffles the
 * trades (Fisher-Yates) for the path statistics (maximum drawdown, lowest equity; the final equity
 * of a shuffle never changes) and then draws a bootstrap sample (n trades with replacement) for the
 * final equity. Ruin: the equity path touches `ruinLevel` (USD) at or below it. A run depends on
 * nothing but its index, so any cut of the runs gives the same figures.
 */
export function monteCarloRuns(
  pnls: ArrayLike<number>,
  capital: number,
  from: number,
  to: number,
  seed: number,
  ruinLevel: number,
  ctl?: Control,
): MonteCarloRuns {
  const n = pnls.length;
  const count = Math.max(0, to - from);
  const dd = new Float64Array(count);
  const ddUsd = new Float64Array(count);
  const lowest = new Float64Array(count);
  const finals = new Float64Array(count);
  const work = Float64Array.from(pnls);
  let ruinShuffle = 0;
  let ruinBoot = 0;
  for (let r = 0; r < count; r++) {
    if ((r & 15) === 0) checkCancel(ctl);
    const rng = new Rng((seed + from + r) >>> 0);
    work.set(pnls);
    for (let j = n - 1; j > 0; j--) {
      const k = rng.int(j + 1);
      const tmp = work[j]!;
      work[j] = work[k]!;
      work[k] = tmp;
    }
    let e = capital;
    let peak = capital;
    let low = capital;
    let mdd = 0;
    let mddUsd = 0;
    for (let j = 0; j < n; j++) {
      e += work[j]!;
      if (e > peak) peak = e;
      if (e < low) low = e;
      const d = peak > 0 ? 1 - e / peak : 1;
      if (d > mdd) mdd = d;
      if (peak - e > mddUsd) mddUsd = peak - e;
    }
    dd[r] = mdd;
    ddUsd[r] = mddUsd;
    lowest[r] = low;
    if (low <= ruinLevel) ruinShuffle++;
    // bootstrap
    let b = capital;
    let bLow = capital;
    for (let j = 0; j < n; j++) {
      b += pnls[rng.int(n)]!;
      if (b < bLow) bLow = b;
    }
    finals[r] = b;
    if (bLow <= ruinLevel) ruinBoot++;
    tick(ctl);
  }
  return { from, to: from + count, max_drawdown: dd, max_drawdown_usd: ddUsd, lowest_equity: lowest, final_equity: finals, ruin_shuffle: ruinShuffle, ruin_bootstrap: ruinBoot };
}

/**
 * The Monte Carlo result of `runs` runs on `trades` trades from the figures of its parts, which
 * cover [0, runs) in order (one part: the whole job; several: its chunks). The percentiles are
 * taken over every run at once, so the answer does not depend on the cut.
 */
export function monteCarloSummary(trades: number, runs: number, seed: number, ruinLevel: number, parts: MonteCarloRuns[]) {
  let at = 0;
  for (const p of parts) {
    if (p.from !== at) throw new Error(`Monte Carlo parts do not cover the runs in order: ${p.from}, expected ${at}`);
    at = p.to;
  }
  if (at !== runs) throw new Error(`Monte Carlo parts cover ${at} runs of ${runs}`);
  const joined = (k: 'max_drawdown' | 'max_drawdown_usd' | 'lowest_equity' | 'final_equity') => {
    if (parts.length === 1) return parts[0]![k];
    const out = new Float64Array(runs);
    for (const p of parts) out.set(p[k], p.from);
    return out;
  };
  const ruinShuffle = parts.reduce((a, p) => a + p.ruin_shuffle, 0);
  const ruinBoot = parts.reduce((a, p) => a + p.ruin_bootstrap, 0);
  const money = (x: number) => Math.round(x * 100) / 100 + 0;
  return {
    runs,
    trades,
    seed,
    ruin_level: money(ruinLevel),
    probability_of_ruin: runs ? round6(ruinShuffle / runs) : 0,
    probability_of_ruin_bootstrap: runs ? round6(ruinBoot / runs) : 0,
    max_drawdown: table(joined('max_drawdown'), round6),
    max_drawdown_usd: table(joined('max_drawdown_usd'), money),
    lowest_equity: table(joined('lowest_equity'), money),
    final_equity: table(joined('final_equity'), money),
  };
}

/** Monte Carlo on a trade list, every run at once (monteCarloRuns over [0, runs), summarized). */
export function monteCarlo(pnls: ArrayLike<number>, capital: number, runs: number, seed: number, ruinLevel: number, ctl?: Control) {
  return monteCarloSummary(pnls.length, runs, seed, ruinLevel, [monteCarloRuns(pnls, capital, 0, runs, seed, ruinLevel, ctl)]);
}
