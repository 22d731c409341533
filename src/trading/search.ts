import type { Constraint } from './constraint.js';
import { Rng } from './rng.js';
import { gridAxes, STRATEGY_DEFS, type StrategyId } from './strategies.js';

/**
 * The combinations an optimization runs: the whole grid (search "grid"), or a seeded random sample of
 * it (search "random", for grids larger than the 500 combinations a request may run). Both keep only
 * the combinations the strategy's schema accepts (`skipped` counts the others) and the constraint
 * accepts (`constrained`), and both give them in grid order (the first axis varies slowest).
 */
export interface SearchSpec {
  mode: 'grid' | 'random';
  /** Random: how many combinations to run. */
  samples: number;
  /** Random: the seed of the sampler (the same seed, grid and constraint give the same sample). */
  seed: number;
}

export interface SearchResult {
  combos: Record<string, number>[];
  /** Size of the grid (the product of the value lists). */
  asked: number;
  skipped: number;
  constrained: number;
}

/** Grids up to this size are enumerated before sampling (the sample is then exact and complete). */
const ENUMERATE_MAX = 100_000;
/** Random draws per wanted combination on a grid too large to enumerate. */
const DRAWS_PER_SAMPLE = 50;

export function searchCombos(id: StrategyId, grid: Record<string, number[]> | undefined, fixed: Record<string, number>, constraint: Constraint | undefined, spec: SearchSpec): SearchResult {
  const def = STRATEGY_DEFS[id];
  const axes = gridAxes(id, grid, fixed);
  let asked = 1;
  for (const [, vals] of axes) asked *= vals.length;
  let skipped = 0;
  let constrained = 0;
  /** The combination at a grid index (mixed radix, last axis fastest); undefined when refused. */
  const at = (index: number): Record<string, number> | undefined => {
    const p: Record<string, number> = { ...fixed };
    let rest = index;
    for (let j = axes.length - 1; j >= 0; j--) {
      const [name, vals] = axes[j]!;
      p[name] = vals[rest % vals.length]!;
      rest = Math.floor(rest / vals.length);
    }
    const r = def.schema.safeParse(p);
    if (!r.success) {
      skipped++;
      return undefined;
    }
    if (constraint && !constraint.test(r.data)) {
      constrained++;
      return undefined;
    }
    return r.data as Record<string, number>;
  };
  if (spec.mode === 'grid' || asked <= spec.samples) {
    const combos: Record<string, number>[] = [];
    if (asked <= ENUMERATE_MAX) for (let i = 0; i < asked; i++) { const p = at(i); if (p) combos.push(p); }
    return { combos, asked, skipped, constrained };
  }
  const rng = new Rng(spec.seed);
  if (asked <= ENUMERATE_MAX) {
    // every valid combination, then a partial Fisher-Yates shuffle picks the sample
    const valid: number[] = [];
    const rows = new Map<number, Record<string, number>>();
    for (let i = 0; i < asked; i++) {
      const p = at(i);
      if (p) {
        valid.push(i);
        rows.set(i, p);
      }
    }
    const k = Math.min(spec.samples, valid.length);
    for (let i = 0; i < k; i++) {
      const j = i + rng.int(valid.length - i);
      [valid[i], valid[j]] = [valid[j]!, valid[i]!];
    }
    const picked = valid.slice(0, k).sort((a, b) => a - b);
    return { combos: picked.map((i) => rows.get(i)!), asked, skipped, constrained };
  }
  // too large to enumerate: draw each axis's value at random, keep distinct valid combinations
  const seen = new Map<number, Record<string, number> | undefined>();
  let valid = 0;
  for (let d = 0; d < spec.samples * DRAWS_PER_SAMPLE && valid < spec.samples; d++) {
    let index = 0;
    for (const [, vals] of axes) index = index * vals.length + rng.int(vals.length);
    if (seen.has(index)) continue;
    const p = at(index);
    seen.set(index, p);
    if (p) valid++;
  }
  const picked = [...seen.entries()].filter(([, p]) => p !== undefined).sort((a, b) => a[0] - b[0]);
  return { combos: picked.map(([, p]) => p!), asked, skipped, constrained };
}
