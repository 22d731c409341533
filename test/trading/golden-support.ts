import { walkForwardWindows } from '../../src/trading/analyses.js';
import type { CandleSpec } from '../../src/trading/candles.js';
import { runTask as run, type TradingTask } from '../../src/trading/tasks.js';

/** Runs a task in process and returns its value (a cancelled task fails the test). */
export function runTask(task: TradingTask): unknown {
  const r = run(task);
  if (!r.ok) throw new Error('task cancelled');
  return r.value;
}

export const walkForwardWindowsFor = (spec: CandleSpec, inSample: number, outOfSample: number, step: number) =>
  walkForwardWindows(spec.count, inSample, outOfSample, step);
