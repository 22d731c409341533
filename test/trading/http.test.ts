import pino from 'pino';
import { post } from '../support/http.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { tempDir } from '../support/process.js';
import { connectTopics } from '../support/ws.js';

/**
 * The five analysis routes over real HTTP, on a hub started in-process. The Piscina workers load
 * the compiled worker (dist/src/workers/trading.js): `npm test` builds first.
 */
const silent = pino({ level: 'silent' });


const range = (a: number, n: number, step = 1) => Array.from({ length: n }, (_, i) => a + i * step);
/** 20 x 25 = 500 valid ema_cross combinations. */
const grid500 = { fast: range(2, 20), slow: range(30, 25) };

describe('trading analyses over HTTP', () => {
  let maru: Maru;
  let base: string;

  beforeAll(async () => {
    const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('trading-http'), LOG_LEVEL: 'silent', TRADING_WORKERS: '2', ...AUTH_TEST_ENV });
    maru = await startMaru(config, { clock: new ManualClock(Date.UTC(2026, 0, 5)), logger: silent });
    base = maru.url;
  });
  afterAll(() => maru.stop());

  const bt = { symbol: 'ES', timeframe: '5m', count: 5000, seed: 7, strategy: 'ema_cross' };

  it('backtest: the same request gives a byte-identical result', async () => {
    const a = await post(base, '/api/program/backtest', bt);
    const b = await post(base, '/api/program/backtest', bt);
    expect(a.status).toBe(200);
    expect(a.text).toBe(b.text);
    expect(a.headers.get('x-job-id')).toMatch(/^[0-9a-f]{16}$/);
    expect(a.body.params).toEqual({ fast: 9, slow: 21 });
    expect(a.body.metrics.trades).toBe(a.body.trades_total);
    expect(a.body.equity_curve.length).toBeLessThanOrEqual(500);
    expect(a.body.monthly[0].month).toBe('2024-01');
    expect(a.text).not.toMatch(/NaN|Infinity/);
    // null only where backtesting.py gives NaN: the statistics and exit rows (a reason without exits)
    expect(JSON.stringify({ ...a.body, stats: undefined, exits: undefined })).not.toMatch(/null/);
  });

  it("backtest: backtesting.py's statistics and the exits by reason, declared in /openapi.json", async () => {
    const a = await post(base, '/api/program/backtest', bt);
    const s = a.body.stats;
    expect(s.trades).toBe(a.body.trades_total);
    expect(s.annual_return).toBe(a.body.metrics.annual_return);
    expect(s.annual_return).toBeGreaterThanOrEqual(-1);
    expect(s.start).toBe(a.body.candles.from);
    expect(s.end).toBe(a.body.candles.to);
    expect(a.body.exits.map((e: { reason: string }) => e.reason)).toEqual(['signal', 'stop_loss', 'take_profit', 'risk', 'end']);
    expect(a.body.exits.reduce((n: number, e: { exits: number }) => n + e.exits, 0)).toBe(a.body.trades_total);
    const doc = (await (await fetch(`${base}/openapi.json`)).json()) as { paths: Record<string, { post: { responses: Record<string, { content: { 'application/json': { schema: { properties: Record<string, { properties?: Record<string, unknown> }> } } } }> } }> };
    const props = doc.paths['/api/program/backtest']!.post.responses['200']!.content['application/json'].schema.properties;
    for (const k of ['metrics', 'stats', 'exits', 'monthly', 'equity_curve', 'trades', 'trades_total']) expect(props).toHaveProperty(k);
    for (const k of Object.keys(s)) expect(props.stats!.properties).toHaveProperty(k);
    // the former field names stay on the wire
    for (const k of ['win_rate', 'profit_factor', 'sharpe', 'max_drawdown', 'annual_return', 'net_profit']) expect(props.metrics!.properties).toHaveProperty(k);
  });

  it('backtest-compare runs every strategy on identical candles', async () => {
    const r = await post(base, '/api/program/backtest-compare', { symbol: 'NQ', count: 4000, seed: 3 });
    expect(r.status).toBe(200);
    expect(r.body.results.map((x: any) => x.strategy)).toEqual(['ema_cross', 'rsi_rebound', 'breakout', 'mean_reversion', 'triple_sync']);
    expect(r.body.candles.checksum).toMatch(/^[0-9a-f]{8}$/);
    expect(r.body.ranking).toHaveLength(5);
    // each strategy alone on the same candles gives the same metrics
    const single = await post(base, '/api/program/backtest', { symbol: 'NQ', count: 4000, seed: 3, strategy: 'breakout' });
    expect(single.body.candles.checksum).toBe(r.body.candles.checksum);
    expect(r.body.results[2].metrics).toEqual(single.body.metrics);
  });

  it("optimize: the best equals the best of the same backtests run one by one", async () => {
    const grid = { fast: [5, 8, 12], slow: [20, 30] };
    const opt = await post(base, '/api/program/optimize', { ...bt, grid, objective: 'net_profit' });
    expect(opt.status).toBe(200);
    expect(opt.body.combinations).toBe(6);
    const singles = [];
    for (const fast of grid.fast) for (const slow of grid.slow) {
      singles.push((await post(base, '/api/program/backtest', { ...bt, params: { fast, slow } })).body);
    }
    let best = singles[0]!;
    for (const s of singles) if (s.metrics.net_profit > best.metrics.net_profit) best = s;
    expect(opt.body.best.params).toEqual(best.params);
    expect(opt.body.best.metrics).toEqual(best.metrics);
  });

  it('optimize: a constraint, a statistic as the objective, and a heat map', async () => {
    const grid = { fast: [5, 8, 12], slow: [20, 30] };
    const opt = await post(base, '/api/program/optimize', { ...bt, grid, objective: 'sortino_ratio', constraint: 'slow - fast >= 15', heatmap: ['fast', 'slow'] });
    expect(opt.status).toBe(200);
    // (5,20) (5,30) (8,30) (12,30) kept; (8,20) and (12,20) outside the constraint
    expect(opt.body.results.map((r: any) => [r.params.fast, r.params.slow])).toEqual([[5, 20], [5, 30], [8, 30], [12, 30]]);
    expect(opt.body).toMatchObject({ combinations: 4, asked: 6, constrained: 2, constraint: 'slow - fast >= 15', objective: 'sortino_ratio' });
    // each row's value is the backtest's statistic, and the best is the largest
    const singles = [];
    for (const r of opt.body.results) singles.push((await post(base, '/api/program/backtest', { ...bt, params: r.params })).body);
    expect(opt.body.results.map((r: any) => r.objective_value)).toEqual(singles.map((b) => b.stats.sortino_ratio));
    const top = singles.reduce((a, b) => (b.stats.sortino_ratio > a.stats.sortino_ratio ? b : a));
    expect(opt.body.best.params).toEqual(top.params);
    expect(opt.body.best.objective_value).toBe(top.stats.sortino_ratio);
    // the heat map: fast x slow (no other parameter), null where the constraint left nothing
    expect(opt.body.heatmap).toMatchObject({ x: 'fast', y: 'slow', x_values: [5, 8, 12], y_values: [20, 30], fixed: {} });
    const v = (f: number, sl: number) => opt.body.results.find((r: any) => r.params.fast === f && r.params.slow === sl)?.objective_value ?? null;
    expect(opt.body.heatmap.values).toEqual([[v(5, 20), null, null], [v(5, 30), v(8, 30), v(12, 30)]]);
    // a lower-is-better statistic ranks the other way round
    const dd = await post(base, '/api/program/optimize', { ...bt, grid, objective: 'max_drawdown_duration_ms' });
    const durations = dd.body.results.map((r: any) => r.objective_value as number);
    expect(dd.body.best.objective_value).toBe(Math.min(...durations));
    // the answer is declared (and each answer above checked against it by the contract check)
    const doc = (await (await fetch(`${base}/openapi.json`)).json()) as any;
    const props = doc.paths['/api/program/optimize'].post.responses['200'].content['application/json'].schema.properties;
    for (const k of ['best', 'top', 'results', 'constraint', 'constrained', 'search', 'heatmap']) expect(props).toHaveProperty(k);
    expect(props.objective.enum).toEqual(expect.arrayContaining(['sharpe', 'sortino_ratio', 'calmar_ratio', 'max_drawdown_duration_ms']));
  });

  it('optimize: a grid over 500 combinations runs as a seeded random search', async () => {
    const grid = { fast: range(2, 24), slow: range(30, 30) }; // 720 combinations: refused as a grid
    const body = { ...bt, count: 2000, grid, search: 'random', samples: 40, search_seed: 5, constraint: 'slow >= 2 * fast' };
    const a = await post(base, '/api/program/optimize', body);
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({ asked: 720, combinations: 40, search: { mode: 'random', samples: 40, seed: 5 } });
    for (const r of a.body.results) expect(r.params.slow).toBeGreaterThanOrEqual(2 * r.params.fast);
    const b = await post(base, '/api/program/optimize', body);
    expect(b.text).toBe(a.text);
    const c = await post(base, '/api/program/optimize', { ...body, search_seed: 6 });
    expect(c.body.results.map((r: any) => r.params)).not.toEqual(a.body.results.map((r: any) => r.params));
  });

  it('walkforward: per-window results, efficiency and a robustness score', async () => {
    const r = await post(base, '/api/program/walkforward', {
      ...bt,
      count: 6000,
      grid: { fast: [5, 10], slow: [20, 40] },
      in_sample: 2000,
      out_of_sample: 1000,
    });
    expect(r.status).toBe(200);
    expect(r.body.windows).toHaveLength(4);
    expect(r.body.windows[0].in_sample.best_params).toHaveProperty('fast');
    expect(r.body.summary.windows).toBe(4);
    expect(r.body.summary.robustness_score).toBeGreaterThanOrEqual(0);
    expect(r.body.summary.robustness_score).toBeLessThanOrEqual(100);
    expect(r.text).not.toMatch(/NaN|Infinity/);
  });

  it('montecarlo: seeded and reproducible', async () => {
    const body = { ...bt, runs: 300, mc_seed: 99 };
    const a = await post(base, '/api/program/montecarlo', body);
    const b = await post(base, '/api/program/montecarlo', body);
    expect(a.status).toBe(200);
    expect(a.text).toBe(b.text);
    expect(a.body.runs).toBe(300);
    expect(a.body.final_equity).toHaveProperty('p50');
    expect(a.body.probability_of_ruin).toBeGreaterThanOrEqual(0);
    const other = await post(base, '/api/program/montecarlo', { ...body, mc_seed: 100 });
    expect(other.body.max_drawdown).not.toEqual(a.body.max_drawdown);
  });

  it('bad input is a 400 naming the field', async () => {
    const cases: [string, unknown, string, RegExp?][] = [
      ['/api/program/backtest', { ...bt, symbol: 'XX' }, 'symbol'],
      ['/api/program/backtest', { ...bt, strategy: 'martingale' }, 'strategy'],
      ['/api/program/backtest', { ...bt, params: { fast: 0 } }, 'params.fast'],
      ['/api/program/backtest', { ...bt, params: { fast: 30, slow: 20 } }, 'params.slow'],
      ['/api/program/backtest', { ...bt, params: { speed: 3 } }, 'params'],
      ['/api/program/backtest', { ...bt, count: 2_000_000 }, 'count'],
      ['/api/program/backtest', { ...bt, timeframe: '1d', count: 10_000 }, 'count', /one-minute bars/],
      ['/api/program/backtest', { ...bt, strategy: 'triple_sync', timeframe: '1m', count: 200 }, 'count', /needs at least 316 candles/],
      ['/api/program/backtest', { ...bt, settings: { max_positions: 11 } }, 'settings.max_positions'],
      ['/api/program/backtest', { ...bt, settings: { schedule: { start: '25:00', end: '10:00' } } }, 'settings.schedule.start'],
      ['/api/program/backtest-compare', { ...bt, strategies: ['ema_cross', { strategy: 'breakout', params: { lookback: 1 } }] }, 'strategies.1.params.lookback'],
      ['/api/program/optimize', { ...bt, grid: { fast: range(2, 24), slow: range(30, 30) } }, 'grid', /^grid: 720 combinations asked; at most 500/],
      ['/api/program/optimize', { ...bt, grid: { fast: [5, 1000] } }, 'grid.fast.1'],
      ['/api/program/optimize', { ...bt, grid: { depth: [1] } }, 'grid.depth'],
      ['/api/program/optimize', { ...bt, constraint: 'fast < ' }, 'constraint', /^constraint: expected a number, a parameter or '\(', found at the end/],
      ['/api/program/optimize', { ...bt, constraint: 'fast < slow)' }, 'constraint', /unexpected '\)' at 12/],
      ['/api/program/optimize', { ...bt, constraint: 'fast + slow' }, 'constraint', /a comparison is needed/],
      ['/api/program/optimize', { ...bt, constraint: 'fast < slwo' }, 'constraint', /unknown parameter 'slwo' at 8 \(the strategy has fast, slow\)/],
      ['/api/program/optimize', { ...bt, constraint: 'require("fs") < 1' }, 'constraint', /unexpected character '"'/],
      ['/api/program/optimize', { ...bt, constraint: 'fast > slow' }, 'constraint', /none of the 25 combinations is valid \(0 skipped, 25 outside the constraint\)/],
      ['/api/program/optimize', { ...bt, objective: 'kelly_criterion' }, 'objective'],
      ['/api/program/optimize', { ...bt, objective: 'start' }, 'objective'],
      ['/api/program/optimize', { ...bt, heatmap: ['fast', 'depth'] }, 'heatmap.1'],
      ['/api/program/optimize', { ...bt, heatmap: ['fast', 'fast'] }, 'heatmap.1'],
      ['/api/program/optimize', { ...bt, search: 'random', samples: 501 }, 'samples'],
      ['/api/program/optimize', { ...bt, search: 'annealing' }, 'search'],
      ['/api/program/walkforward', { ...bt, in_sample: 4000, out_of_sample: 2000 }, 'in_sample', /no complete window/],
      ['/api/program/walkforward', { ...bt, in_sample: 100, out_of_sample: 50, step: 50 }, 'step'],
      ['/api/program/montecarlo', { ...bt, runs: 501 }, 'runs'],
      ['/api/program/montecarlo', { ...bt, ruin_drawdown: 1 }, 'ruin_drawdown'],
      ['/api/program/backtest', { ...bt, job_id: 'a b' }, 'job_id'],
    ];
    for (const [path, body, field, message] of cases) {
      const r = await post(base, path, body);
      expect(r.status, `${path} ${JSON.stringify(body)}`).toBe(400);
      expect(r.body.error.code).toBe('invalid_body');
      expect(r.body.error.details.issues.map((i: any) => i.field)).toContain(field);
      expect(r.body.error.message.startsWith(`${r.body.error.details.issues[0].field}:`)).toBe(true);
      if (message) expect(r.body.error.message).toMatch(message);
    }
  });

  it('progress is published on job:<id> over a real WebSocket', async () => {
    const ws = await connectTopics(base);
    try {
      await ws.subscribe('job:progress-1');
      const r = await post(base, '/api/program/optimize', { ...bt, job_id: 'progress-1', grid: { fast: range(2, 10), slow: range(30, 10) } });
      expect(r.status).toBe(200);
      expect(r.headers.get('x-job-id')).toBe('progress-1');
      const frames = [];
      for (;;) {
        const f = await ws.next();
        frames.push(f.data);
        if (f.data.state !== 'running') break;
      }
      expect(frames[0]).toMatchObject({ job: 'progress-1', total: 100, state: 'running' });
      expect(frames.at(-1)).toEqual({ job: 'progress-1', done: 100, total: 100, state: 'done' });
      for (let i = 1; i < frames.length; i++) expect(frames[i].done).toBeGreaterThanOrEqual(frames[i - 1].done);
    } finally {
      ws.close();
    }
  });

  it('a job can be cancelled by the trader who started it: the running request answers 409 cancelled', async () => {
    const owner = bearer(await signIn(base, ['trader']));
    const ws = await connectTopics(base);
    try {
      await ws.subscribe('job:cancel-me');
      const running = post(base, '/api/program/optimize', { ...bt, count: 20_000, job_id: 'cancel-me', grid: grid500 }, owner);
      const first = await ws.next(10_000);
      expect(first.data).toMatchObject({ job: 'cancel-me', total: 500, state: 'running' });
      const dup = await post(base, '/api/program/optimize', { ...bt, job_id: 'cancel-me' });
      expect(dup.status).toBe(409);
      expect(dup.body.error.code).toBe('job_running');
      const c = await fetch(`${base}/api/program/jobs/cancel-me/cancel`, { method: 'POST', headers: owner });
      expect(c.status).toBe(202);
      const r = await running;
      expect(r.status).toBe(409);
      expect(r.body.error.code).toBe('cancelled');
      let last;
      do last = (await ws.next()).data;
      while (last.state === 'running');
      expect(last.state).toBe('cancelled');
      expect((await fetch(`${base}/api/program/jobs/cancel-me/cancel`, { method: 'POST', headers: owner })).status).toBe(404);
    } finally {
      ws.close();
    }
  });

  it('the event loop keeps answering /healthz while a 500-combination optimization runs', async () => {
    let finished = false;
    const job = post(base, '/api/program/optimize', { ...bt, count: 20_000, grid: grid500 }).then((r) => {
      finished = true;
      return r;
    });
    let answered = 0;
    let duringJob = 0;
    while (!finished && answered < 200) {
      const h = await fetch(`${base}/healthz`);
      expect(h.status).toBe(200);
      answered++;
      if (!finished) duringJob++;
      await new Promise((r) => setTimeout(r, 20));
    }
    const r = await job;
    expect(r.status).toBe(200);
    expect(r.body.combinations).toBe(500);
    expect(duringJob).toBeGreaterThan(0);
  });
});
