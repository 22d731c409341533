import { z } from 'zod';
import { ALERT_EVENTS } from './alerts.js';
import { OPTIMIZE_OBJECTIVES } from './analyses.js';
import { settingsSchema } from './engine.js';
import { REASONS } from './engine-settings.js';
import { RUN_KINDS } from './runs.js';
import { STRATEGIES } from './strategies.js';
import { SYMBOLS, TIMEFRAMES } from './symbols.js';

/**
 * The answers of the analysis routes as zod schemas (`response:` of the routes), so /openapi.json
 * describes them and the tests' contract check validates every answer. Definitions: docs/trading.md.
 */

const int = z.number().int();
const ratio = z.number();
const usd = z.number();
const nullable = (s: z.ZodNumber, what: string) => s.nullable().describe(`${what}; null where backtesting.py gives NaN`);
const durationMs = (what: string) => int.nullable().describe(`${what} (ms); null where backtesting.py gives NaN`);

export const metricsSchema = z.object({
  trades: int,
  wins: int,
  losses: int,
  win_rate: ratio.describe('trades with P&L > 0 / trades (0 without trades)'),
  profit_factor: ratio.describe('gross profit / |gross loss|, capped at 100'),
  net_profit: usd,
  gross_profit: usd,
  gross_loss: usd,
  total_return: ratio,
  annual_return: ratio.describe('compounded: (final / capital)^(252 / days) - 1, never below -1'),
  sharpe: ratio.describe('mean / std (ddof 1) of daily returns x sqrt(252) (vectorbt/Lean form)'),
  max_drawdown: ratio,
  max_drawdown_usd: usd,
  exposure: ratio,
  sqn: ratio,
  avg_trade: usd,
  best_trade: usd,
  worst_trade: usd,
  commission: usd,
  final_equity: usd,
  bars: int,
  days: int,
  risk_stops: int,
});

/** backtesting.py's `stats` (backtesting/_stats.py) where they apply to this engine. */
export const statsSchema = z.object({
  start: z.string().describe('first traded bar (ISO 8601)'),
  end: z.string().describe('last bar (ISO 8601)'),
  duration_ms: int.describe('end - start (ms)'),
  exposure_time: ratio.describe('share of bars from an entry bar to its exit bar'),
  equity_final: usd,
  equity_peak: usd.describe('highest equity, the capital included'),
  return: ratio.describe('final / capital - 1'),
  buy_and_hold_return: ratio.describe('last close / first close - 1'),
  annual_return: ratio.describe('(1 + geometric mean of daily returns)^252 - 1'),
  annual_volatility: nullable(z.number(), 'sqrt((var(r, ddof 1) + (1 + g)^2)^252 - (1 + g)^504)'),
  sharpe_ratio: nullable(z.number(), 'annual_return / annual_volatility (risk-free 0)'),
  sortino_ratio: nullable(z.number(), 'annual_return / (sqrt(mean(min(r, 0)^2)) x sqrt(252))'),
  calmar_ratio: nullable(z.number(), 'annual_return / max_drawdown'),
  max_drawdown: ratio,
  avg_drawdown: nullable(z.number(), 'mean of the drawdown periods\' depths'),
  max_drawdown_duration_ms: durationMs('longest drawdown period'),
  avg_drawdown_duration_ms: durationMs('mean drawdown period'),
  trades: int,
  win_rate: nullable(z.number(), 'trades with P&L > 0 / trades'),
  best_trade_return: nullable(z.number(), 'largest trade return (net P&L / notional at entry)'),
  worst_trade_return: nullable(z.number(), 'smallest trade return'),
  avg_trade_return: nullable(z.number(), 'geometric mean of the trade returns'),
  max_trade_duration_ms: durationMs('longest trade, exit bar time - entry bar time'),
  avg_trade_duration_ms: durationMs('mean trade duration'),
  return_profit_factor: nullable(z.number(), 'sum of positive trade returns / |sum of negative ones|'),
  expectancy: nullable(z.number(), 'arithmetic mean of the trade returns'),
  sqn: nullable(z.number(), 'sqrt(n) mean(P&L) / std(P&L, ddof 1)'),
});

/** freqtrade's exit reason table. */
export const exitsSchema = z.array(
  z.object({
    reason: z.enum(REASONS),
    exits: int,
    wins: int,
    draws: int,
    losses: int,
    win_rate: ratio.nullable().describe('wins / exits; null without exits'),
    avg_return: ratio.nullable().describe('mean trade return of these exits; null without exits'),
    total_pnl: usd,
    total_return: ratio.describe('total_pnl / capital'),
  }),
);

/** A data set's id and hash (docs/trading.md "Data sets"), in every answer on one. */
const datasetFields = {
  dataset: z.string().optional().describe('the data set the candles came from (absent: the synthetic series)'),
  hash: z.string().optional().describe("SHA-256 of the data set's bars (hex)"),
};

const candlesSchema = z.object({
  seed: int,
  symbol: z.enum(SYMBOLS),
  timeframe: z.enum(TIMEFRAMES),
  count: int,
  ...datasetFields,
  checksum: z.string(),
  from: z.string(),
  to: z.string(),
});

export const backtestAnswer = z.object({
  strategy: z.enum(STRATEGIES),
  params: z.record(z.string(), z.number()),
  settings: settingsSchema,
  candles: candlesSchema,
  warmup: z.object({ bars: int, needs: z.record(z.string(), int) }),
  metrics: metricsSchema,
  stats: statsSchema,
  exits: exitsSchema,
  monthly: z.array(z.object({ month: z.string(), pnl: usd, return: ratio, trades: int })),
  equity_curve: z.array(z.object({ t: int, equity: usd })),
  trades: z.array(
    z.object({
      side: z.enum(['long', 'short']),
      entry_time: z.string(),
      exit_time: z.string(),
      entry_price: z.number(),
      exit_price: z.number(),
      contracts: int,
      pnl: usd,
      reason: z.enum(REASONS),
    }),
  ),
  trades_total: int,
});

const objectiveValue = z.number().nullable().describe('the objective of this combination; null where the statistic is undefined');
const paramsSchema = z.record(z.string(), z.number());

/** POST /api/program/optimize. */
export const optimizeAnswer = z.object({
  strategy: z.enum(STRATEGIES),
  objective: z.enum(OPTIMIZE_OBJECTIVES),
  candles: z.object({ seed: int, symbol: z.enum(SYMBOLS), timeframe: z.enum(TIMEFRAMES), count: int, ...datasetFields }),
  combinations: int.describe('combinations run'),
  asked: int.describe('size of the grid (the product of the value lists)'),
  skipped: int.describe('combinations the strategy refuses (e.g. fast >= slow)'),
  constraint: z.string().nullable(),
  constrained: int.describe('combinations outside the constraint'),
  search: z.object({ mode: z.enum(['grid', 'random']), samples: int, seed: int }),
  best: z.object({ params: paramsSchema, metrics: metricsSchema, objective_value: objectiveValue }).nullable(),
  top: z.array(z.object({ params: paramsSchema, metrics: metricsSchema, objective_value: objectiveValue })),
  results: z.array(
    z.object({
      params: paramsSchema,
      trades: int,
      win_rate: ratio,
      profit_factor: ratio,
      net_profit: usd,
      sharpe: ratio,
      max_drawdown: ratio,
      sqn: ratio,
      objective_value: objectiveValue,
    }),
  ),
  heatmap: z
    .object({
      x: z.string(),
      y: z.string(),
      x_values: z.array(z.number()),
      y_values: z.array(z.number()),
      fixed: paramsSchema.describe('the other parameters, at the best combination\'s values'),
      values: z.array(z.array(z.number().nullable())).describe('values[j][i]: the objective at y_values[j], x_values[i]; null where no such combination ran'),
    })
    .nullable(),
});

/** A backtest's answer as one entry of a comparison (without its candles and trades). */
const compareEntry = backtestAnswer.omit({ candles: true, trades: true });

/** POST /api/program/backtest-compare. */
export const compareAnswer = z.object({
  candles: candlesSchema,
  objective: z.enum(OPTIMIZE_OBJECTIVES),
  results: z.array(compareEntry),
  ranking: z.array(z.object({ index: int, strategy: z.enum(STRATEGIES), params: paramsSchema, score: z.number().describe('the objective of the entry (ranked best first)') })),
});

const specSchema = z.object({ seed: int, symbol: z.enum(SYMBOLS), timeframe: z.enum(TIMEFRAMES), count: int, ...datasetFields });
const span = { from: z.string(), to: z.string(), bars: int };

/** POST /api/program/walkforward. */
export const walkForwardAnswer = z.object({
  strategy: z.enum(STRATEGIES),
  objective: z.enum(OPTIMIZE_OBJECTIVES),
  candles: specSchema,
  in_sample: int,
  out_of_sample: int,
  step: int,
  combinations: int,
  asked: int,
  skipped: int,
  summary: z.object({
    windows: int,
    profitable_oos_share: ratio,
    walk_forward_efficiency: ratio.nullable().describe('mean of the windows\' efficiencies; null when no window has one'),
    parameter_stability: ratio,
    parameter_variation: z.record(z.string(), z.object({ mean: z.number(), sd: z.number(), cv: z.number(), values: z.array(z.number()) })),
    oos_net_profit: usd,
    oos_trades: int,
    oos_sharpe: ratio,
    robustness_score: z.number(),
  }),
  windows: z.array(
    z.object({
      index: int,
      in_sample: z.object({ ...span, best_params: paramsSchema, metrics: metricsSchema }),
      out_of_sample: z.object({ ...span, metrics: metricsSchema }),
      efficiency: ratio.nullable().describe('annualized OOS return / annualized IS return; null when the IS return is not positive'),
    }),
  ),
});

const percentiles = z.object({ p5: z.number(), p25: z.number(), p50: z.number(), p75: z.number(), p95: z.number() });

/** POST /api/program/montecarlo. */
export const monteCarloAnswer = z.object({
  strategy: z.enum(STRATEGIES),
  params: paramsSchema,
  candles: specSchema,
  ruin_drawdown: ratio,
  backtest: metricsSchema,
  runs: int,
  trades: int,
  seed: int,
  ruin_level: usd,
  probability_of_ruin: ratio,
  probability_of_ruin_bootstrap: ratio,
  max_drawdown: percentiles,
  max_drawdown_usd: percentiles,
  lowest_equity: percentiles,
  final_equity: percentiles,
});

// ---- the answers of the jobs, data sets, saved runs and alerts routes --------------------------

const jobState = z.object({ job: z.string(), kind: z.string(), done: int, total: int });
export const jobsAnswer = z.object({
  jobs: z.array(jobState.extend({ state: z.enum(['queued', 'running']) })),
  admitted: int,
  running: int,
  waiting: int,
  limits: z.object({ running: int, queue: int, perClient: int, timeoutMs: int }),
  cancelled: z.object({ cancelled: int, abandoned: int, timeout: int }),
  queue: z.record(z.string(), z.number()).optional().describe('the shared work queue\'s counts, with TRADING_QUEUE on'),
});
export const jobCancelAnswer = jobState.extend({ state: z.literal('cancelling') });

export const datasetView = z.object({
  id: z.string(),
  name: z.string(),
  symbol: z.enum(SYMBOLS),
  timeframe: z.enum(TIMEFRAMES),
  bars: int,
  first: z.string().describe('the first bar\'s open time (ISO 8601, UTC)'),
  last: z.string(),
  gaps: z.object({ count: int, missing_bars: int, largest: int, first: z.array(z.object({ after: z.string(), before: z.string(), missing_bars: int })) }),
  hash: z.string().describe("SHA-256 of the data set's bars (hex)"),
  filename: z.string(),
  bytes: int,
  created_at: z.string(),
});
export const deletedAnswer = z.object({ id: z.string(), deleted: z.literal(true) });

const runSummary = z.object({
  id: z.string(),
  kind: z.enum(RUN_KINDS),
  created_at: z.string(),
  strategy: z.string().nullable(),
  candles: z.record(z.string(), z.unknown()),
  figures: z.record(z.string(), z.number().nullable()).describe('net profit, Sharpe, trades, max drawdown'),
  trimmed: z.array(z.string()).describe('parts of the answer left out to fit the size limit'),
});
export const runsAnswer = z.object({ runs: z.array(runSummary), limits: z.object({ runs: int, result_bytes: int }) });
export const runAnswer = z.object({ run: runSummary.extend({ request: z.record(z.string(), z.unknown()), result: z.unknown() }) });

const alertView = z.object({ program: z.string(), url: z.string(), events: z.array(z.enum(ALERT_EVENTS)), created_by: z.string().nullable(), created_at: z.string() });
export const alertAnswer = z.object({ alert: alertView });
export const alertSetAnswer = z.object({ alert: alertView.extend({ secret: z.string().describe('whsec_…: shown in this answer only') }) });
