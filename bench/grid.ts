/**
 * bench/grid: what sharing indicator series across the combinations of a job buys, in process, one
 * thread. Prints one JSON object.
 *
 *   npm run build && nice node dist/bench/grid.js [--candles 100000] [--repeat 3]
 *
 * 1. The 500-combination EMA-cross grid (fast 2..21 x slow 30..54) on `candles` one-minute ES candles:
 *    gridRows (series shared: 45 EMA series and one ATR series) against the same combinations run one
 *    by one without sharing (each run streams its own EMAs and ATR); the rows must be equal.
 * 2. Walk-forward: every window of 20,000 in-sample / 5,000 out-of-sample bars (step 5,000) with a
 *    25-combination EMA-cross grid, shared against unshared.
 * Wall time and CPU time (process.cpuUsage: the machine is shared, CPU time is the steadier figure),
 * best of `repeat`; each repetition starts with an empty series cache (a fresh candles object).
 */
import { availableParallelism, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { gridRows, runStrategy, walkForwardWindow, walkForwardWindows } from '../src/trading/analyses.js';
import { generateCandles, type Candles } from '../src/trading/candles.js';
import { defaultSettings } from '../src/trading/engine.js';
import { computeMetrics } from '../src/trading/metrics.js';
import { expandGrid } from '../src/trading/strategies.js';

const { values: args } = parseArgs({
  options: { candles: { type: 'string', default: '100000' }, repeat: { type: 'string', default: '3' } },
});
const N = Number(args.candles);
const REPEAT = Number(args.repeat);

function measure(fn: () => unknown): { wall_ms: number; cpu_ms: number } {
  fn(); // warm-up (JIT)
  let wall = Infinity;
  let cpu = Infinity;
  for (let k = 0; k < REPEAT; k++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    fn();
    wall = Math.min(wall, performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu = Math.min(cpu, (c.user + c.system) / 1000);
  }
  return { wall_ms: Math.round(wall), cpu_ms: Math.round(cpu) };
}

const base: Candles = generateCandles({ seed: 1, symbol: 'ES', timeframe: '1m', count: N });
const fresh = (): Candles => ({ ...base }); // a new cache key, the same arrays
const settings = defaultSettings();

const grid = expandGrid('ema_cross', { fast: Array.from({ length: 20 }, (_, i) => 2 + i), slow: Array.from({ length: 25 }, (_, i) => 30 + i) }).combos;
const sharedRows = gridRows(fresh(), 'ema_cross', grid, settings, undefined);
const unsharedRows = grid.map((params) => {
  const cs = fresh();
  return { params, metrics: computeMetrics(runStrategy(cs, 'ema_cross', params, settings), cs) };
});
if (JSON.stringify(sharedRows) !== JSON.stringify(unsharedRows)) throw new Error('shared and unshared grids differ');
const gridShared = measure(() => gridRows(fresh(), 'ema_cross', grid, settings, undefined));
const gridUnshared = measure(() => {
  const cs = fresh();
  for (const params of grid) computeMetrics(runStrategy(cs, 'ema_cross', params, settings), cs);
});

const wfCombos = expandGrid('ema_cross', { fast: [5, 8, 10, 12, 15], slow: [20, 26, 30, 40, 50] }).combos;
const windows = walkForwardWindows(N, 20_000, 5_000, 5_000);
const wfShared = measure(() => {
  const cs = fresh();
  for (const w of windows) walkForwardWindow(cs, 'ema_cross', wfCombos, settings, 'sharpe', w);
});
const wfUnshared = measure(() => {
  const cs = fresh();
  for (const w of windows) {
    for (const params of wfCombos) computeMetrics(runStrategy(cs, 'ema_cross', params, settings, { from: w.start, tradeFrom: w.start, to: w.start + w.inSample }), cs);
    computeMetrics(runStrategy(cs, 'ema_cross', wfCombos[0]!, settings, { from: w.start, tradeFrom: w.start + w.inSample, to: w.start + w.inSample + w.outOfSample }), cs);
  }
});

const perSec = (n: number, ms: number) => Math.round((n / ms) * 1000);
console.log(
  JSON.stringify({
    bench: 'grid',
    node: process.version,
    cores: availableParallelism(),
    load_average: loadavg().map((x) => +x.toFixed(2)),
    candles: N,
    ema_cross_grid_500: {
      combinations: grid.length,
      shared: { ...gridShared, bar_evaluations_per_cpu_s: perSec(grid.length * N, gridShared.cpu_ms) },
      unshared: { ...gridUnshared, bar_evaluations_per_cpu_s: perSec(grid.length * N, gridUnshared.cpu_ms) },
      cpu_speedup: +(gridUnshared.cpu_ms / gridShared.cpu_ms).toFixed(2),
      rows_equal: true,
    },
    walk_forward: {
      windows: windows.length,
      combinations: wfCombos.length,
      shared: wfShared,
      unshared: wfUnshared,
      cpu_speedup: +(wfUnshared.cpu_ms / wfShared.cpu_ms).toFixed(2),
    },
  }),
);
