import { describe, expect, it } from 'vitest';
import { ConstraintError, parseConstraint } from '../../src/trading/constraint.js';
import { searchCombos } from '../../src/trading/search.js';
import { expandGrid } from '../../src/trading/strategies.js';
import { heatmapOf } from '../../src/trading/service.js';

/** The optimizer's parts: the constraint language, the grid and random search, the heat map. */

const EMA = ['fast', 'slow'];
const TRIPLE = ['fast', 'slow', 'mid', 'high'];

describe('constraint expressions', () => {
  const ok = (src: string, p: Record<string, number>, names = EMA) => parseConstraint(src, names).test(p);

  it('comparison, arithmetic with precedence, chains, logic and parentheses', () => {
    expect(ok('fast < slow', { fast: 5, slow: 20 })).toBe(true);
    expect(ok('fast < slow', { fast: 20, slow: 20 })).toBe(false);
    expect(ok('fast <= slow', { fast: 20, slow: 20 })).toBe(true);
    // * before +: 2 + 3 * 4 = 14, not 20
    expect(ok('fast + 3 * 4 == slow', { fast: 2, slow: 14 })).toBe(true);
    expect(ok('(fast + 3) * 4 == slow', { fast: 2, slow: 20 })).toBe(true);
    // left to right: 20 - 5 - 5 = 10
    expect(ok('slow - fast - 5 == 10', { fast: 5, slow: 20 })).toBe(true);
    expect(ok('slow / fast >= 2.5', { fast: 8, slow: 20 })).toBe(true);
    expect(ok('slow / fast >= 2.5', { fast: 9, slow: 20 })).toBe(false);
    expect(ok('slow % 5 == 0 && fast != 7', { fast: 8, slow: 25 })).toBe(true);
    expect(ok('-fast > -slow', { fast: 5, slow: 20 })).toBe(true);
    expect(ok('- -fast == fast', { fast: 5, slow: 20 })).toBe(true);
    expect(ok('1e1 < slow', { fast: 5, slow: 20 })).toBe(true);
    // a chain: 5 < fast < slow
    expect(ok('5 < fast < slow', { fast: 6, slow: 20 })).toBe(true);
    expect(ok('5 < fast < slow', { fast: 5, slow: 20 })).toBe(false);
    expect(ok('5 < fast < slow', { fast: 30, slow: 20 })).toBe(false);
    // && binds tighter than ||
    expect(ok('fast > 100 || fast < 10 && slow > 30', { fast: 5, slow: 40 })).toBe(true);
    expect(ok('(fast > 100 || fast < 10) && slow > 30', { fast: 5, slow: 20 })).toBe(false);
    expect(ok('!(fast == 9)', { fast: 9, slow: 20 })).toBe(false);
    expect(ok('!fast == 9', { fast: 8, slow: 20 })).toBe(true); // ! applies to the comparison
    expect(ok('((fast)) * 2 < slow', { fast: 9, slow: 20 })).toBe(true);
    expect(ok('fast < slow && mid < high && slow * high <= 3000', { fast: 9, slow: 21, mid: 5, high: 15 }, TRIPLE)).toBe(true);
    // a division by zero is a number (Infinity), and compares false where it should
    expect(ok('slow / (fast - 5) < 100', { fast: 5, slow: 20 })).toBe(false);
    expect(parseConstraint('slow - fast >= 10', EMA).names.sort()).toEqual(['fast', 'slow']);
  });

  it('refuses what does not parse, with the place', () => {
    const err = (src: string, names = EMA) => {
      try {
        parseConstraint(src, names);
      } catch (e) {
        expect(e).toBeInstanceOf(ConstraintError);
        return (e as Error).message;
      }
      throw new Error(`${src} parsed`);
    };
    expect(err('')).toBe('empty');
    expect(err('   ')).toBe('empty');
    expect(err('fast <')).toMatch(/expected a number, a parameter or '\(', found at the end/);
    expect(err('fast < slow)')).toMatch(/unexpected '\)' at 12/);
    expect(err('(fast < slow')).toMatch(/expected '\)'/);
    expect(err('fast + slow')).toMatch(/a comparison is needed/);
    expect(err('fast')).toMatch(/a comparison is needed/);
    expect(err('fast < slow; 1')).toMatch(/unexpected character ';' at 12/);
    expect(err('fast = slow')).toMatch(/unexpected character '=' at 6/);
    expect(err('fast < slow &&')).toMatch(/found at the end/);
    expect(err('(fast < slow) + 1 > 0')).toMatch(/expected '\)'/);
    // nothing reaches JavaScript: names are parameter names, every other character is refused
    expect(err('process.exit(1) < 2')).toBe("unexpected character '.' at 8");
    expect(err('process < 2')).toMatch(/unknown parameter 'process' at 1/);
    expect(err('fast < slow || this > 1')).toMatch(/unknown parameter 'this' at 16/);
    expect(err('constructor < 1')).toMatch(/unknown parameter 'constructor'/);
    expect(err('__proto__ < 1')).toMatch(/unknown parameter '__proto__'/);
    expect(err('fast < `slow`')).toMatch(/unexpected character '`'/);
    expect(err("fast < 'slow'")).toMatch(/unexpected character '''/);
    expect(err('fsat < slow')).toBe("unknown parameter 'fsat' at 1 (the strategy has fast, slow)");
    expect(err('1e999 > fast')).toMatch(/out of range/);
    expect(err('x'.repeat(501))).toMatch(/longer than 500/);
    // deep nesting is refused, not a stack overflow, and parsing stays fast
    const t0 = performance.now();
    expect(err('('.repeat(150) + 'fast' + ')'.repeat(150) + ' < slow')).toBe('nested too deeply');
    expect(err('-'.repeat(300) + 'fast < slow')).toBe('nested too deeply');
    expect(err('!'.repeat(300) + 'fast < slow')).toBe('nested too deeply');
    expect(parseConstraint('('.repeat(40) + 'fast' + ')'.repeat(40) + ' < slow', EMA).test({ fast: 1, slow: 2 })).toBe(true);
    expect(performance.now() - t0).toBeLessThan(1000);
  });
});

describe('grid and random search', () => {
  const fastSlow = { fast: Array.from({ length: 30 }, (_, i) => i + 2), slow: Array.from({ length: 40 }, (_, i) => i + 10) };
  const lt = parseConstraint('slow - fast >= 10', EMA);

  it('grid: the same combinations as the grid expansion, less those outside the constraint', () => {
    const g = { fast: [5, 8, 12, 20], slow: [20, 26, 30] };
    const all = expandGrid('ema_cross', g);
    const s = searchCombos('ema_cross', g, {}, undefined, { mode: 'grid', samples: 500, seed: 1 });
    expect(s.combos).toEqual(all.combos);
    expect(s.skipped).toBe(all.skipped);
    const c = searchCombos('ema_cross', g, {}, lt, { mode: 'grid', samples: 500, seed: 1 });
    expect(c.combos).toEqual(all.combos.filter((p) => p.slow! - p.fast! >= 10));
    expect(c.constrained).toBe(all.combos.length - c.combos.length);
    expect(c.constrained).toBeGreaterThan(0);
  });

  it('random: seeded and reproducible, distinct, inside the constraint, in grid order', () => {
    const spec = { mode: 'random' as const, samples: 200, seed: 42 };
    const a = searchCombos('ema_cross', fastSlow, {}, lt, spec);
    const b = searchCombos('ema_cross', fastSlow, {}, lt, spec);
    expect(a.asked).toBe(1200);
    expect(a.combos).toHaveLength(200);
    expect(b.combos).toEqual(a.combos);
    expect(new Set(a.combos.map((p) => `${p.fast}/${p.slow}`)).size).toBe(200);
    for (const p of a.combos) expect(p.slow! - p.fast!).toBeGreaterThanOrEqual(10);
    const order = a.combos.map((p) => (p.fast! - 2) * 40 + (p.slow! - 10));
    expect(order).toEqual([...order].sort((x, y) => x - y));
    const other = searchCombos('ema_cross', fastSlow, {}, lt, { ...spec, seed: 43 });
    expect(other.combos).not.toEqual(a.combos);
    // spread over the grid, not its first rows
    expect(Math.max(...a.combos.map((p) => p.fast!))).toBeGreaterThan(25);
  });

  it('random on a grid too large to enumerate (over 100,000 combinations)', () => {
    const big = { fast: Array.from({ length: 99 }, (_, i) => i + 2), slow: Array.from({ length: 397 }, (_, i) => i + 4), mid: Array.from({ length: 28 }, (_, i) => i + 2), high: [15, 30, 60] };
    const spec = { mode: 'random' as const, samples: 500, seed: 7 };
    const cons = parseConstraint('fast * 2 < slow && mid < high', TRIPLE);
    const a = searchCombos('triple_sync', big, {}, cons, spec);
    expect(a.asked).toBe(99 * 397 * 28 * 3);
    expect(a.combos).toHaveLength(500);
    expect(searchCombos('triple_sync', big, {}, cons, spec).combos).toEqual(a.combos);
    for (const p of a.combos) expect(p.fast! * 2 < p.slow! && p.mid! < p.high!).toBe(true);
    expect(new Set(a.combos.map((p) => JSON.stringify(p))).size).toBe(500);
  });

  it('a sample at least the grid: the whole grid', () => {
    const g = { fast: [5, 8], slow: [20, 30] };
    expect(searchCombos('ema_cross', g, {}, undefined, { mode: 'random', samples: 500, seed: 3 }).combos).toEqual(expandGrid('ema_cross', g).combos);
  });
});

describe('heat map', () => {
  it('the objective over two parameters, the others at the best values, null where nothing ran', () => {
    const rows = [
      { params: { fast: 5, slow: 20, mid: 5, high: 15 }, objective_value: 1 },
      { params: { fast: 5, slow: 30, mid: 5, high: 15 }, objective_value: 2 },
      { params: { fast: 9, slow: 20, mid: 5, high: 15 }, objective_value: 3 },
      { params: { fast: 9, slow: 20, mid: 7, high: 15 }, objective_value: 9 }, // mid not at the best: not in the map
      { params: { fast: 12, slow: 30, mid: 5, high: 15 }, objective_value: null },
    ];
    const h = heatmapOf(rows, { fast: 9, slow: 20, mid: 5, high: 15 }, ['slow', 'fast']);
    expect(h).toEqual({
      x: 'slow',
      y: 'fast',
      x_values: [20, 30],
      y_values: [5, 9, 12],
      fixed: { mid: 5, high: 15 },
      values: [
        [1, 2],
        [3, null],
        [null, null],
      ],
    });
  });
});
