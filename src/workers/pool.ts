import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { TaskOutcome, TaskRunner, TradingTask } from '../trading/tasks.js';

export type { TaskRunner } from '../trading/tasks.js';

/**
 * The worker file Piscina loads must be compiled JavaScript. From dist/ (npm start, the bench) it
 * sits next to this module; when this module runs from TypeScript sources (vitest), the compiled
 * copy in dist/src/workers is used instead: `npm test` builds first (or run `npm run build`).
 */
export function tradingWorkerFile(): string {
  const here = new URL('./trading.js', import.meta.url);
  if (existsSync(fileURLToPath(here))) return here.href;
  const built = new URL('../../dist/src/workers/trading.js', import.meta.url);
  if (existsSync(fileURLToPath(built))) return built.href;
  throw new Error(`${fileURLToPath(built)} is missing: run npm run build (npm test does)`);
}

/** The Piscina adapter of the trading domain's TaskRunner. */
export class TradingPool implements TaskRunner {
  private readonly pool: Piscina<TradingTask, TaskOutcome>;
  constructor(readonly threads: number) {
    this.pool = new Piscina({
      filename: tradingWorkerFile(),
      minThreads: threads,
      maxThreads: threads,
      idleTimeout: 60_000,
    });
    // one warm-up task per thread, ahead of any request (a thread takes one task at a time, so
    // each starting thread takes one): its hot loops are compiled before a request needs them. Run
    // as tasks, not while the worker's module loads: a pool closed at once then ends threads that
    // run a task, as it does for any task.
    for (let i = 0; i < threads; i++) void this.pool.run({ kind: 'warmup' }).catch(() => undefined);
  }
  run(task: TradingTask): Promise<TaskOutcome> {
    return this.pool.run(task);
  }
  async close(): Promise<void> {
    await this.pool.close({ force: true });
  }
}
