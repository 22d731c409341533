/** The Piscina entry point: the worker thread runs the trading domain's tasks (src/trading/tasks.ts). */
export { runTask as default } from '../trading/tasks.js';
export type { TaskOutcome, TradingTask } from '../trading/tasks.js';
