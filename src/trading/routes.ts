import { z } from 'zod';
import { appearsWithin, Reply, type Hub, type RequestContext } from '../hub/declare.js';
import { OBJECTIVES, OPTIMIZE_OBJECTIVES } from './analyses.js';
import { MAX_CONSTRAINT_LENGTH } from './constraint.js';
import { backtestAnswer, optimizeAnswer } from './answers.js';
import { MAX_CANDLES } from './candles.js';
import { settingsSchema } from './engine.js';
import {
  checkCandles,
  checkConstraint,
  checkGrid,
  checkHeatmap,
  checkGridWarmup,
  checkParams,
  checkWalkForward,
  checkWarmup,
  MAX_COMBINATIONS,
  MAX_MC_RUNS,
  type CandleBody,
} from './rules.js';
import { JOB_TOPIC_PREFIX, type JobOrigin, type TradingService } from './service.js';
import { STRATEGIES, type StrategyId } from './strategies.js';
import { SYMBOLS, TIMEFRAMES } from './symbols.js';

/**
 * The five analysis routes of the trading program service (POST /api/program/backtest,
 * /backtest-compare, /optimize, /walkforward, /montecarlo) and the job cancel route. Bodies and
 * answers: docs/trading.md. Each route answers when its job is done (JSON 200, header X-Job-Id);
 * meanwhile progress goes to WebSocket topic `job:<job_id>`.
 */

/** A job id: chosen by the client (`job_id`) or generated. */
/** How long a subscription to `job:<id>` waits for its job to be admitted. */
export const JOB_TOPIC_WAIT_MS = 10_000;
const JOB_ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

const candleFields = {
  /** Client-chosen job id, so the client can subscribe to job:<id> before it posts. */
  job_id: z.string().regex(JOB_ID_RE, 'must be 1-64 of A-Z a-z 0-9 _ -').optional(),
  symbol: z.enum(SYMBOLS),
  timeframe: z.enum(TIMEFRAMES).default('1m'),
  count: z.number().int().min(50).max(MAX_CANDLES).default(10_000),
  seed: z.number().int().min(0).max(0xffff_ffff).default(1),
  settings: settingsSchema,
};
const paramsField = z.record(z.string(), z.unknown()).optional();
const gridField = z.record(z.string(), z.array(z.number()).min(1).max(MAX_COMBINATIONS)).optional();
const objectiveField = z.enum(OBJECTIVES).default('sharpe');

type Ctx = z.RefinementCtx;

const candleSpec = (b: CandleBody) => ({ seed: b.seed, symbol: b.symbol, timeframe: b.timeframe, count: b.count });

type SingleStrategyBody = CandleBody & {
  job_id?: string | undefined;
  settings: z.output<typeof settingsSchema>;
  strategy: StrategyId;
  params?: Record<string, unknown> | undefined;
};

/** The checks and fields shared by the routes that run one strategy with fixed parameters. */
function singleStrategy(b: SingleStrategyBody, ctx: Ctx) {
  checkCandles(b, ctx);
  const params = checkParams(b.strategy, b.params, ['params'], ctx);
  if (params) checkWarmup(b.strategy, params, b, b.count, 'count', ctx);
  return {
    job_id: b.job_id,
    candles: candleSpec(b),
    settings: b.settings,
    strategy: b.strategy,
    params: params ?? {},
  };
}

export const backtestBody = z
  .strictObject({
    ...candleFields,
    strategy: z.enum(STRATEGIES),
    params: paramsField,
    equity_points: z.number().int().min(2).max(2000).default(500),
    trades_limit: z.number().int().min(0).max(10_000).default(1000),
  })
  .transform((b, ctx) => ({
    ...singleStrategy(b, ctx),
    equity_points: b.equity_points,
    trades_limit: b.trades_limit,
  }));

const compareEntry = z.union([z.enum(STRATEGIES), z.strictObject({ strategy: z.enum(STRATEGIES), params: paramsField })]);
export const compareBody = z
  .strictObject({
    ...candleFields,
    strategies: z.array(compareEntry).min(1).max(10).default([...STRATEGIES]),
    objective: objectiveField,
    equity_points: z.number().int().min(2).max(2000).default(200),
  })
  .transform((b, ctx) => {
    checkCandles(b, ctx);
    const entries = b.strategies.map((e, i) => {
      const strategy = typeof e === 'string' ? e : e.strategy;
      const params = checkParams(strategy, typeof e === 'string' ? {} : e.params, ['strategies', i, 'params'], ctx);
      if (params) checkWarmup(strategy, params, b, b.count, 'count', ctx);
      return { strategy, params: params ?? {} };
    });
    return { job_id: b.job_id, candles: candleSpec(b), settings: b.settings, entries, objective: b.objective, equity_points: b.equity_points };
  });

/** The fields shared by the grid routes (optimize, walk-forward). */
function gridFields<O extends string>(b: SingleStrategyBody & { grid?: Record<string, number[]> | undefined; objective: O }) {
  return {
    job_id: b.job_id,
    candles: candleSpec(b),
    settings: b.settings,
    strategy: b.strategy,
    grid: b.grid,
    params: (b.params ?? {}) as Record<string, number>,
    objective: b.objective,
  };
}

export const optimizeBody = z
  .strictObject({
    ...candleFields,
    strategy: z.enum(STRATEGIES),
    params: paramsField,
    grid: gridField,
    /** A metric or any statistic of the report (docs/trading.md). */
    objective: z.enum(OPTIMIZE_OBJECTIVES).default('sharpe'),
    /** Kept combinations must satisfy it, e.g. "fast < slow" (the expression language of docs/trading.md). */
    constraint: z.string().max(MAX_CONSTRAINT_LENGTH).optional(),
    /** "grid" runs every combination (at most 500); "random" a seeded sample of `samples` of them. */
    search: z.enum(['grid', 'random']).default('grid'),
    samples: z.number().int().min(1).max(MAX_COMBINATIONS).default(MAX_COMBINATIONS),
    search_seed: z.number().int().min(0).max(0xffff_ffff).optional(),
    /** Two parameters: the objective over their values, the others at the best combination's values. */
    heatmap: z.tuple([z.string(), z.string()]).optional(),
  })
  .transform((b, ctx) => {
    checkCandles(b, ctx);
    const fixed = checkParams(b.strategy, b.params, ['params'], ctx);
    const c = checkConstraint(b.strategy, b.constraint, ctx);
    checkHeatmap(b.strategy, b.heatmap, ctx);
    const search = { mode: b.search, samples: b.samples, seed: b.search_seed ?? b.seed };
    const g = fixed && c.ok ? checkGrid(b.strategy, b.grid, b.params ? (b.params as Record<string, number>) : {}, ctx, { constraint: c.constraint, search }) : undefined;
    if (g) checkGridWarmup(b.strategy, b, g.combos, ctx);
    return {
      ...gridFields(b),
      constraint: b.constraint ?? null,
      search,
      heatmap: b.heatmap ?? null,
      combos: g?.combos ?? [],
      asked: g?.asked ?? 0,
      skipped: g?.skipped ?? 0,
      constrained: g?.constrained ?? 0,
    };
  });

export const walkForwardBody = z
  .strictObject({
    ...candleFields,
    strategy: z.enum(STRATEGIES),
    params: paramsField,
    grid: gridField,
    objective: objectiveField,
    in_sample: z.number().int().min(10).max(MAX_CANDLES),
    out_of_sample: z.number().int().min(2).max(MAX_CANDLES),
    step: z.number().int().min(1).max(MAX_CANDLES).optional(),
  })
  .transform((b, ctx) => {
    checkCandles(b, ctx);
    const step = b.step ?? b.out_of_sample;
    const fixed = checkParams(b.strategy, b.params, ['params'], ctx);
    const g = fixed ? checkGrid(b.strategy, b.grid, (b.params ?? {}) as Record<string, number>, ctx) : undefined;
    checkWalkForward(b.strategy, b, step, g?.combos, ctx);
    return {
      ...gridFields(b),
      in_sample: b.in_sample,
      out_of_sample: b.out_of_sample,
      step,
    };
  });

export const monteCarloBody = z
  .strictObject({
    ...candleFields,
    strategy: z.enum(STRATEGIES),
    params: paramsField,
    runs: z.number().int().min(1).max(MAX_MC_RUNS).default(MAX_MC_RUNS),
    mc_seed: z.number().int().min(0).max(0xffff_ffff).optional(),
    ruin_drawdown: z.number().gt(0).lt(1).default(0.5),
  })
  .transform((b, ctx) => ({
    ...singleStrategy(b, ctx),
    runs: b.runs,
    mc_seed: b.mc_seed ?? b.seed,
    ruin_drawdown: b.ruin_drawdown,
  }));

const clientOf = (identity: string) => `id:${identity}`;

export interface TradingRoutesOptions {
  service: TradingService;
}

export function registerTradingRoutes(hub: Hub, opts: TradingRoutesOptions): void {
  const { service } = opts;
  // a job's progress: the topic of a job admitted on any process (or ended here a moment ago). A
  // client may subscribe just before it posts the job (docs/trading.md): such a subscription is
  // made at once and ended with unknown_topic if no job of that id is admitted within JOB_TOPIC_WAIT_MS
  hub.topic({
    name: `${JOB_TOPIC_PREFIX}*`,
    policy: 'drop',
    authorize: async (topic) => {
      const id = topic.slice(JOB_TOPIC_PREFIX.length);
      if (!JOB_ID_RE.test(id)) return 'unknown';
      if (await service.jobKnown(id)) return 'ok';
      // this process's jobs every 100 ms, the other processes' job records (a store read) every second
      return { pending: appearsWithin((tick) => service.jobKnown(id, tick % 10 !== 0), JOB_TOPIC_WAIT_MS, 100) };
    },
  });

  const answer = (out: { job: string; result: unknown }) =>
    Reply.json(out.result, 200, { 'x-job-id': out.job, 'cache-control': 'no-store' });
  /** A job counts against its client (the signed-in identity, else the address) and ends with its connection. */
  const origin = (ctx: RequestContext): JobOrigin => ({
    client: ctx.identity ? clientOf(ctx.identity.id) : `ip:${ctx.remoteAddress}`,
    signal: ctx.signal,
  });
  const optional = { optional: true } as const;

  hub.route({ method: 'POST', path: '/api/program/backtest', auth: optional, body: { schema: backtestBody }, response: backtestAnswer, handler: async (ctx) => answer(await service.backtest(ctx.body, origin(ctx))) });
  hub.route({ method: 'POST', path: '/api/program/backtest-compare', auth: optional, body: { schema: compareBody }, handler: async (ctx) => answer(await service.compare(ctx.body, origin(ctx))) });
  hub.route({ method: 'POST', path: '/api/program/optimize', auth: optional, body: { schema: optimizeBody }, response: optimizeAnswer, handler: async (ctx) => answer(await service.optimize(ctx.body, origin(ctx))) });
  hub.route({ method: 'POST', path: '/api/program/walkforward', auth: optional, body: { schema: walkForwardBody }, handler: async (ctx) => answer(await service.walkForward(ctx.body, origin(ctx))) });
  hub.route({ method: 'POST', path: '/api/program/montecarlo', auth: optional, body: { schema: monteCarloBody }, handler: async (ctx) => answer(await service.monteCarlo(ctx.body, origin(ctx))) });

  // ---- jobs (beyond the document's fourteen routes: docs/trading.md) -------------------------
  hub.route({
    method: 'POST',
    path: '/api/program/jobs/:id/cancel',
    // a job belongs to whoever started it: the cancel needs the bearer token of that identity (an
    // operator cancels any); a job started without one is cancelled by closing its connection
    auth: {},
    params: z.object({ id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/) }),
    handler: async (ctx) =>
      Reply.json(await service.cancel(ctx.params.id, { client: clientOf(ctx.identity!.id), operator: ctx.identity!.roles.includes('operator') }), 202, { 'cache-control': 'no-store' }),
  });
  hub.route({ method: 'GET', path: '/api/program/jobs', cacheControl: 'no-store', handler: () => ({ jobs: service.jobs.list(), ...service.jobs.stats(), ...service.queueStats() }) });
}
