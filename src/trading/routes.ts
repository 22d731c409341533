import { z } from 'zod';
import { appearsWithin, Reply, route, validate, type Declared, type Hub, type RequestContext } from '../hub/declare.js';
import { notFound, unauthorized } from '../errors.js';
import { registerDatasetRoutes, registerRunRoutes, type DatasetRoutes, type RunRoutes } from './routes-datasets.js';
import type { ProgramRoutes } from './routes-programs.js';
import type { AlertRoutes } from './routes-alerts.js';
import type { RunKind, RunService } from './runs.js';
import { OBJECTIVES, OPTIMIZE_OBJECTIVES } from './analyses.js';
import { MAX_CONSTRAINT_LENGTH } from './constraint.js';
import { backtestAnswer, compareAnswer, jobCancelAnswer, jobsAnswer, monteCarloAnswer, optimizeAnswer, walkForwardAnswer } from './answers.js';
import { MAX_CANDLES, type CandleSpec } from './candles.js';
import { DATASET_ID, type DatasetService, type LoadedDataset } from './datasets.js';
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
  /** The synthetic series of this symbol, or (`dataset`) a trader's own candles: one of the two. */
  symbol: z.enum(SYMBOLS).optional(),
  /** Default 1m (not with a dataset: the data set names it). */
  timeframe: z.enum(TIMEFRAMES).optional(),
  /** Default 10,000 (not with a dataset). */
  count: z.number().int().min(50).max(MAX_CANDLES).optional(),
  /** A data set of the caller's (docs/trading.md "Data sets"): needs a bearer token. */
  dataset: z.string().regex(DATASET_ID, 'must be a data set id such as ds_…').optional(),
  seed: z.number().int().min(0).max(0xffff_ffff).default(1),
  settings: settingsSchema,
};
const paramsField = z.record(z.string(), z.unknown()).optional();
const gridField = z.record(z.string(), z.array(z.number()).min(1).max(MAX_COMBINATIONS)).optional();
const objectiveField = z.enum(OBJECTIVES).default('sharpe');

type Ctx = z.RefinementCtx;

/**
 * The data set the handler loaded for the body it validates again (`withDataset`): set and cleared
 * around that synchronous parse, so the checks that need the bar count see it.
 */
let loading: LoadedDataset | undefined;
/** The candle fields as the client sent them. */
interface RawCandles {
  symbol?: CandleBody['symbol'] | undefined;
  timeframe?: CandleBody['timeframe'] | undefined;
  count?: number | undefined;
  seed: number;
  dataset?: string | undefined;
}
const loadedFor = (b: RawCandles) => (loading && b.dataset === loading.view.id ? loading : undefined);

/**
 * The candle fields with their defaults, and whether the bar count is known: always for the
 * synthetic series, for a data set once the handler loaded it (the checks that need the count
 * wait for that; the generator's bound does not apply to a data set).
 */
function candlesOf(b: RawCandles, ctx: Ctx): CandleBody & { known: boolean } {
  const loaded = loadedFor(b);
  if (b.dataset !== undefined) {
    for (const f of ['symbol', 'timeframe', 'count'] as const) {
      if (b[f] !== undefined) ctx.addIssue({ code: 'custom', path: [f], message: 'not with a dataset (the data set names its symbol, timeframe and bar count)' });
    }
    return { symbol: loaded?.view.symbol ?? 'ES', timeframe: loaded?.view.timeframe ?? '1m', count: loaded?.view.bars ?? 0, seed: b.seed, known: !!loaded };
  }
  if (b.symbol === undefined) ctx.addIssue({ code: 'custom', path: ['symbol'], message: 'required (or a dataset)' });
  const c = { symbol: b.symbol ?? 'ES', timeframe: b.timeframe ?? '1m', count: b.count ?? 10_000, seed: b.seed, known: true };
  checkCandles(c, ctx);
  return c;
}

const candleSpec = (b: RawCandles, c: CandleBody): CandleSpec => {
  const loaded = loadedFor(b);
  const spec: CandleSpec = { seed: c.seed, symbol: c.symbol, timeframe: c.timeframe, count: c.count };
  return loaded ? { ...spec, dataset: loaded.view.id, hash: loaded.view.hash, data: loaded.data } : spec;
};

type SingleStrategyBody = RawCandles & {
  job_id?: string | undefined;
  settings: z.output<typeof settingsSchema>;
  strategy: StrategyId;
  params?: Record<string, unknown> | undefined;
};

/** The checks and fields shared by the routes that run one strategy with fixed parameters. */
function singleStrategy(b: SingleStrategyBody, ctx: Ctx) {
  const c = candlesOf(b, ctx);
  const params = checkParams(b.strategy, b.params, ['params'], ctx);
  if (params && c.known) checkWarmup(b.strategy, params, c, c.count, b.dataset ? 'dataset' : 'count', ctx);
  return {
    source: b,
    job_id: b.job_id,
    candles: candleSpec(b, c),
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
    const c = candlesOf(b, ctx);
    const entries = b.strategies.map((e, i) => {
      const strategy = typeof e === 'string' ? e : e.strategy;
      const params = checkParams(strategy, typeof e === 'string' ? {} : e.params, ['strategies', i, 'params'], ctx);
      if (params && c.known) checkWarmup(strategy, params, c, c.count, b.dataset ? 'dataset' : 'count', ctx);
      return { strategy, params: params ?? {} };
    });
    return { source: b, job_id: b.job_id, candles: candleSpec(b, c), settings: b.settings, entries, objective: b.objective, equity_points: b.equity_points };
  });

/** The fields shared by the grid routes (optimize, walk-forward). */
function gridFields<O extends string>(b: SingleStrategyBody & { grid?: Record<string, number[]> | undefined; objective: O }, c: CandleBody) {
  return {
    source: b,
    job_id: b.job_id,
    candles: candleSpec(b, c),
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
    const cb = candlesOf(b, ctx);
    const fixed = checkParams(b.strategy, b.params, ['params'], ctx);
    const c = checkConstraint(b.strategy, b.constraint, ctx);
    checkHeatmap(b.strategy, b.heatmap, ctx);
    const search = { mode: b.search, samples: b.samples, seed: b.search_seed ?? b.seed };
    const g = fixed && c.ok ? checkGrid(b.strategy, b.grid, b.params ? (b.params as Record<string, number>) : {}, ctx, { constraint: c.constraint, search }) : undefined;
    if (g && cb.known) checkGridWarmup(b.strategy, cb, g.combos, ctx);
    return {
      ...gridFields(b, cb),
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
    const cb = candlesOf(b, ctx);
    const step = b.step ?? b.out_of_sample;
    const fixed = checkParams(b.strategy, b.params, ['params'], ctx);
    const g = fixed ? checkGrid(b.strategy, b.grid, (b.params ?? {}) as Record<string, number>, ctx) : undefined;
    if (cb.known) checkWalkForward(b.strategy, { ...cb, in_sample: b.in_sample, out_of_sample: b.out_of_sample }, step, g?.combos, ctx);
    return {
      ...gridFields(b, cb),
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
  /** A trader's data sets; without it, a body naming a dataset is refused. */
  datasets?: DatasetService;
  /** Saved runs; without it, nothing is kept. */
  runs?: RunService;
}

/** The analyses' bodies after validation: what the handler keeps of the request as the client sent it. */
type Validated = { source: { dataset?: string | undefined } };

/** The analysis and job routes of this file as data (hub.mount). */
export type AnalysisRoutes = ReturnType<typeof registerTradingRoutes>['analyses'] & ReturnType<typeof registerTradingRoutes>['jobs'];
/**
 * Every route of the trading program service as data: what the pages' client reads (web/common/api.ts).
 * Data sets and saved runs are mounted when the service has them (module.ts gives both).
 */
export type TradingRoutes = AnalysisRoutes & DatasetRoutes & RunRoutes & ProgramRoutes & AlertRoutes;

/** A POST analysis route as declared: its body schema and, where it has one, its answer's. */
type AnalysisRoute<P extends string, S extends z.ZodType, A extends z.ZodType | undefined> = Declared<'POST', P, z.ZodType<Record<string, string>>, S, z.ZodType<Record<string, string>>, A, undefined>;

export function registerTradingRoutes(hub: Hub, opts: TradingRoutesOptions) {
  const { service, datasets, runs } = opts;
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

  /** A job counts against its client (the signed-in identity, else the address) and ends with its connection. */
  const origin = (ctx: RequestContext): JobOrigin => ({
    client: ctx.identity ? clientOf(ctx.identity.id) : `ip:${ctx.remoteAddress}`,
    signal: ctx.signal,
  });
  const optional = { optional: true } as const;

  /**
   * A body naming a data set: the caller's (a bearer token needed: 401; another trader's or none:
   * 404 `dataset_not_found`), loaded, and the body validated again with its bars known (warm-up,
   * walk-forward windows), as a synthetic body is at once.
   */
  async function withDataset<B extends Validated>(ctx: RequestContext, schema: z.ZodType<B>, body: B): Promise<B> {
    const id = body.source.dataset;
    if (id === undefined) return body;
    if (!ctx.identity) throw unauthorized('a dataset is private to its trader: send your bearer token', { dataset: id });
    if (!datasets) throw notFound('dataset_not_found', `no data set ${id}`, { dataset: id });
    const loaded = await datasets.load(ctx.identity.id, id);
    loading = loaded;
    try {
      return validate(schema, JSON.parse(JSON.stringify(body.source)), 'body');
    } finally {
      loading = undefined;
    }
  }

  /** Runs an analysis; a signed-in caller's run is kept (header X-Run-Id). */
  function analysis<const P extends string, S extends z.ZodType<Validated>, A extends z.ZodType | undefined = undefined>(
    path: P,
    kind: RunKind,
    schema: S,
    run: (body: z.output<S>, from: JobOrigin) => Promise<{ job: string; result: unknown }>,
    response?: A,
  ): AnalysisRoute<P, S, A> {
    return route({
      method: 'POST',
      path,
      auth: optional,
      body: { schema: schema as z.ZodType<Validated> },
      ...(response ? { response } : {}),
      handler: async (ctx) => {
        const body = await withDataset(ctx, schema as unknown as z.ZodType<z.output<S>>, ctx.body as z.output<S>);
        const out = await run(body, origin(ctx));
        const headers: Record<string, string> = { 'x-job-id': out.job, 'cache-control': 'no-store' };
        if (runs && ctx.identity) {
          // the answer is not lost when the run cannot be kept (the store unavailable): it comes without X-Run-Id
          const saved = await runs.save(ctx.identity.id, kind, JSON.parse(JSON.stringify(body.source)), out.result as Record<string, any>).catch(() => undefined);
          if (saved) headers['x-run-id'] = saved.id;
        }
        return Reply.json(out.result, 200, headers);
      },
    }) as unknown as AnalysisRoute<P, S, A>;
  }

  const analyses = hub.mount('/api/program', {
    postBacktest: analysis('/backtest', 'backtest', backtestBody, (b, o) => service.backtest(b, o), backtestAnswer),
    postBacktestCompare: analysis('/backtest-compare', 'compare', compareBody, (b, o) => service.compare(b, o), compareAnswer),
    postOptimize: analysis('/optimize', 'optimize', optimizeBody, (b, o) => service.optimize(b, o), optimizeAnswer),
    postWalkforward: analysis('/walkforward', 'walkforward', walkForwardBody, (b, o) => service.walkForward(b, o), walkForwardAnswer),
    postMontecarlo: analysis('/montecarlo', 'montecarlo', monteCarloBody, (b, o) => service.monteCarlo(b, o), monteCarloAnswer),
  });

  const datasetRoutes = datasets ? registerDatasetRoutes(hub, datasets) : undefined;
  const runRoutes = runs ? registerRunRoutes(hub, runs) : undefined;

  // ---- jobs (beyond the document's fourteen routes: docs/trading.md) -------------------------
  const postJobCancel = route({
    method: 'POST',
    path: '/jobs/:id/cancel',
    // a job belongs to whoever started it: the cancel needs the bearer token of that identity (an
    // operator cancels any); a job started without one is cancelled by closing its connection
    auth: {},
    params: z.object({ id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/) }),
    response: { 202: jobCancelAnswer },
    handler: async (ctx) =>
      Reply.json(await service.cancel(ctx.params.id, { client: clientOf(ctx.identity!.id), operator: ctx.identity!.roles.includes('operator') }), 202, { 'cache-control': 'no-store' }),
  });
  const getJobs = route({ method: 'GET', path: '/jobs', cacheControl: 'no-store', response: jobsAnswer, handler: () => ({ jobs: service.jobs.list(), ...service.jobs.stats(), ...service.queueStats() }) });
  const jobs = hub.mount('/api/program', { postJobCancel, getJobs });
  return { analyses, datasets: datasetRoutes, runs: runRoutes, jobs };
}
