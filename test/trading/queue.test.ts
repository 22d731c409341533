import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { settingsSchema } from '../../src/trading/engine.js';
import { STRATEGY_DEFS } from '../../src/trading/strategies.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { call, get, until } from '../support/http.js';
import { tempDir, type HubProcess } from '../support/process.js';
import { redisProcesses } from '../support/redis-processes.js';
import { connectTopics } from '../support/ws.js';
import { monteCarloWhole } from './golden-support.js';

/**
 * Trading jobs spread over hub processes through the BullMQ queue on a shared Redis (each test its
 * own prefix): two real processes (dist/src/main.js) with one worker thread each. A grid's answer is
 * byte-identical to a single process's without Redis, also when the helper process is killed in
 * the middle of a chunk (its chunk runs again elsewhere after the lock) or stops gracefully (its
 * chunk fails there and runs again on the origin's pool); a Monte Carlo job's chunks
 * of runs run on both processes and give the answer computed in one piece; a cancel reaches the chunks running
 * on the other process. Assertions are on answers and counts, never on time.
 */
const { redis, prefix: freshPrefix, start: startProcess } = await redisProcesses();

const ENV = { TRADING_WORKERS: '1', TRADING_CHUNK_LOCK_MS: '1000', TRADING_CHUNKS: '32', ...AUTH_TEST_ENV };
async function start(env: Record<string, string>): Promise<HubProcess> {
  return startProcess({ ...ENV, DATA_DIR: tempDir('trading-queue'), ...env });
}
const range = (a: number, n: number) => Array.from({ length: n }, (_, i) => a + i);
/**
 * 240 ema_cross combinations on 300,000 candles, in 30 chunks (TRADING_CHUNKS 32: 8 each): 72M bar
 * evaluations, a few seconds of one thread, so a chunk (about 0.1 s) can be caught while it runs.
 */
const grid = (job_id: string) => ({ symbol: 'NQ', timeframe: '1m', count: 300_000, seed: 11, strategy: 'ema_cross', objective: 'net_profit', job_id, grid: { fast: range(2, 12), slow: range(30, 20) } });
/** The BullMQ events of the deployment's chunk queue (a Redis stream), oldest first. */
async function eventsOf(prefix: string): Promise<Record<string, string>[]> {
  const client = new Redis(redis.url);
  try {
    const rows = await client.xrange(`${prefix}bull:trading-chunks:events`, '-', '+');
    return rows.map(([, fields]) => Object.fromEntries(fields.flatMap((f, i) => (i % 2 ? [] : [[f, fields[i + 1]!]]))));
  } finally {
    client.disconnect();
  }
}
/** Monte Carlo on tens of thousands of trades (NQ 1m, EMA 3/8), 500 runs: about a second of one thread. */
const mc = (job_id: string, count: number, params = { fast: 3, slow: 8 }) => ({ symbol: 'NQ', timeframe: '1m', count, seed: 11, strategy: 'ema_cross', params, runs: 500, mc_seed: 4, job_id });
async function keysOf(pattern: string): Promise<string[]> {
  const client = new Redis(redis.url);
  try {
    return await client.keys(pattern);
  } finally {
    client.disconnect();
  }
}
const queueStats = async (base: string) => (await get(base, '/api/program/jobs')).body.queue as { chunks: number; claimed: number; served: number; serving: number; rerun: number };

describe.skipIf(!redis.available)('trading jobs on two processes through the queue', () => {
  /** The grid's answer from one process without Redis (computed once for the tests that need it). */
  let single: Promise<string> | undefined;
  const singleAnswer = () =>
    (single ??= (async () => {
      const alone = await start({});
      try {
        const r = await call(alone.url, 'POST', '/api/program/optimize', grid('ref'));
        expect(r.status).toBe(200);
        return r.text;
      } finally {
        await alone.stop();
      }
    })());

  it('a grid completes with the single-process answer when the helper process is killed halfway', async () => {
    const reference = await singleAnswer();

    const prefix = freshPrefix('trading-queue');
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: prefix };
    const [a, b] = await Promise.all([start(env), start(env)]);
    const ws = await connectTopics(a.url);
    try {
      await ws.subscribe('job:spread-1');
      const answer = call(a.url, 'POST', '/api/program/optimize', grid('spread-1'));
      // the helper works on a chunk of a's job, and a has counted some of its progress
      await until('b runs a chunk after finishing one', async () => {
        const s = await queueStats(b.url);
        return s.served >= 1 && s.serving >= 1;
      }, 60_000);
      expect(await b.stop('SIGKILL')).toBe(null);
      const r = await answer;
      expect(r.status).toBe(200);
      expect(r.text).toBe(reference);
      const sa = await queueStats(a.url);
      expect(sa.chunks).toBe(30); // 240 combinations in chunks of 8
      // a ran chunks on its own pool first (claimed) and, through its queue worker, chunks nobody
      // else ran; the chunk b held when it died is among them (the answer is whole)
      expect(sa.claimed).toBeGreaterThanOrEqual(1);
      expect(sa.served).toBeGreaterThanOrEqual(1);
      // the chunk b held when it died stalled (its lock ran out) and went back to the queue
      const events = await eventsOf(prefix);
      expect(events.filter((e) => e.event === 'stalled').length).toBeGreaterThanOrEqual(1);
      // progress on a's topic counted the units of both processes, and ended at the total
      const frames: any[] = [];
      for (;;) {
        const f = (await ws.next(10_000)).data;
        frames.push(f);
        if (f.state !== 'running') break;
      }
      expect(frames.at(-1)).toEqual({ job: 'spread-1', done: 240, total: 240, state: 'done' });
    } finally {
      ws.close();
    }
  }, 180_000);

  it('a helper process that stops in the middle of a chunk fails it, and the origin runs it again on its own pool', async () => {
    const reference = await singleAnswer();
    const prefix = freshPrefix('trading-queue');
    // a chunk nobody runs again would hold the job until its time budget: 503 job_timeout
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: prefix, TRADING_JOB_TIMEOUT_MS: '30000' };
    const [a, b] = await Promise.all([start(env), start(env)]);
    const answer = call(a.url, 'POST', '/api/program/optimize', grid('spread-stop'));
    await until('b runs a chunk of a\'s job', async () => (await queueStats(b.url)).serving >= 1, 60_000);
    // a graceful stop: b's chunk stops at its next unit and fails (it is not the job's cancel)
    expect(await b.stop('SIGTERM')).toBe(0);
    const r = await answer;
    expect(r.status).toBe(200);
    expect(r.text).toBe(reference);
    expect((await queueStats(a.url)).rerun).toBeGreaterThanOrEqual(1);
    const events = await eventsOf(prefix);
    expect(events.filter((e) => e.event === 'failed').length).toBeGreaterThanOrEqual(1);
  }, 180_000);

  it('walk-forward and Monte Carlo through the queue give the single-process answers', async () => {
    const wf = { symbol: 'ES', timeframe: '5m', count: 6000, seed: 5, strategy: 'ema_cross', grid: { fast: range(3, 6), slow: range(20, 6) }, in_sample: 1500, out_of_sample: 500 };
    const mc = { symbol: 'CL', timeframe: '1m', count: 20_000, seed: 9, strategy: 'ema_cross', runs: 300, mc_seed: 4 };
    const alone = await start({});
    const refWf = await call(alone.url, 'POST', '/api/program/walkforward', wf);
    const refMc = await call(alone.url, 'POST', '/api/program/montecarlo', mc);
    expect([refWf.status, refMc.status]).toEqual([200, 200]);
    await alone.stop();
    const prefix = freshPrefix('trading-queue');
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: prefix };
    const [a, b] = await Promise.all([start(env), start(env)]);
    const [wfA, mcB] = await Promise.all([call(a.url, 'POST', '/api/program/walkforward', wf), call(b.url, 'POST', '/api/program/montecarlo', mc)]);
    expect(wfA.text).toBe(refWf.text);
    expect(mcB.text).toBe(refMc.text);
    expect(wfA.body.windows.length).toBeGreaterThan(5);
  }, 180_000);

  it('a Monte Carlo job runs its chunks of runs on both processes and gives the answer computed in one piece; a cancel reaches them', async () => {
    const body = mc('mc-ref', 400_000);
    const alone = await start({});
    const reference = await call(alone.url, 'POST', '/api/program/montecarlo', body);
    expect(reference.status).toBe(200);
    await alone.stop();
    // the single process's chunked answer is the job computed in one piece (backtest, then every run at once)
    const { strategy: _s, params, candles, ruin_drawdown, ...figures } = reference.body;
    const settings = settingsSchema.parse({});
    const { metrics, monte_carlo } = monteCarloWhole({ candles, strategy: 'ema_cross', params: STRATEGY_DEFS.ema_cross.schema.parse(params), settings, runs: 500, seed: 4, ruin_level: settings.capital * (1 - ruin_drawdown) }) as { metrics: unknown; monte_carlo: object };
    expect(JSON.stringify(figures)).toBe(JSON.stringify({ backtest: metrics, ...monte_carlo }));
    expect(figures.trades).toBeGreaterThan(40_000);

    const prefix = freshPrefix('trading-queue');
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: prefix };
    const [a, b] = await Promise.all([start(env), start(env)]);
    const ws = await connectTopics(a.url);
    try {
      await ws.subscribe('job:mc-1');
      const r = await call(a.url, 'POST', '/api/program/montecarlo', { ...body, job_id: 'mc-1' });
      expect(r.status).toBe(200);
      expect(r.text).toBe(reference.text);
      // 500 runs in 32 chunks of 16 (TRADING_CHUNKS 32): a ran some on its pool, b some for the queue
      const [sa, sb] = [await queueStats(a.url), await queueStats(b.url)];
      expect(sa.chunks).toBe(32);
      expect(sa.claimed).toBeGreaterThanOrEqual(1);
      expect(sb.served).toBeGreaterThanOrEqual(1);
      // b's chunks took the trades' P&L (about 400 kB, stored once for the job) and none had to run
      // again; the stored copy is gone with the job
      expect(sa.rerun).toBe(0);
      expect(await keysOf(`${prefix}trading:shared:*`)).toEqual([]);
      // progress on a's topic: the backtest's unit and every run, wherever it ran
      let last: any;
      do last = (await ws.next(10_000)).data;
      while (last.state === 'running');
      expect(last).toEqual({ job: 'mc-1', done: 501, total: 501, state: 'done' });
    } finally {
      ws.close();
    }

    // a longer job (about 200,000 trades), cancelled by its owner while b runs one of its chunks
    const before = { a: await queueStats(a.url), b: await queueStats(b.url) };
    const owner = bearer(await signIn(a.url, ['trader']));
    const answer = call(a.url, 'POST', '/api/program/montecarlo', mc('mc-2', 1_000_000, { fast: 2, slow: 5 }), owner);
    await until('b runs a chunk of the job', async () => (await queueStats(b.url)).serving >= 1, 60_000);
    const served = (await queueStats(b.url)).served;
    const c = await call(a.url, 'POST', '/api/program/jobs/mc-2/cancel', undefined, owner);
    expect(c.status).toBe(202);
    expect(c.body).toMatchObject({ job: 'mc-2', kind: 'montecarlo', total: 501, state: 'cancelling' });
    const cancelled = await answer;
    expect(cancelled.status).toBe(409);
    expect(cancelled.body.error).toMatchObject({ code: 'cancelled', details: { job: 'mc-2', reason: 'cancelled' } });
    await until('b stopped', async () => (await queueStats(b.url)).serving === 0, 30_000);
    expect((await queueStats(b.url)).served - served).toBeLessThanOrEqual(1);
    // the job's chunks stopped on both processes: fewer than its 32 ran (begun here, or run whole for the queue)
    const [ea, eb] = [await queueStats(a.url), await queueStats(b.url)];
    expect(ea.chunks).toBe(32);
    expect(ea.claimed - before.a.claimed + (ea.served - before.a.served) + (eb.served - before.b.served)).toBeLessThan(32);
  }, 180_000);

  it('a cancel asked of either process reaches the chunks running on the other process', async () => {
    const prefix = freshPrefix('trading-queue');
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: prefix };
    const [a, b] = await Promise.all([start(env), start(env)]);
    const owner = bearer(await signIn(a.url, ['trader']));
    const answer = call(a.url, 'POST', '/api/program/optimize', grid('spread-2'), owner);
    await until('b runs a chunk', async () => (await queueStats(b.url)).serving >= 1, 60_000);
    // the cancel may reach any process: b finds the job's record (its owner) and asks a to cancel it
    const other = bearer(await signIn(a.url, ['trader']));
    expect((await call(b.url, 'POST', '/api/program/jobs/spread-2/cancel', undefined, other)).status).toBe(403);
    expect((await call(b.url, 'POST', '/api/program/jobs/nothing/cancel', undefined, owner)).status).toBe(404);
    const served = (await queueStats(b.url)).served;
    const c = await call(b.url, 'POST', '/api/program/jobs/spread-2/cancel', undefined, owner);
    expect(c.status).toBe(202);
    expect(c.body).toMatchObject({ job: 'spread-2', kind: 'optimize', total: 240, state: 'cancelling' });
    const r = await answer;
    expect(r.status).toBe(409);
    expect(r.body.error).toMatchObject({ code: 'cancelled', details: { job: 'spread-2', reason: 'cancelled' } });
    // b stops its chunk at the next unit and takes no other chunk of the job (it may have finished
    // the one it held while the cancel was on its way)
    await until('b stopped', async () => (await queueStats(b.url)).serving === 0, 30_000);
    const after = (await queueStats(b.url)).served;
    expect(after - served).toBeLessThanOrEqual(1);
    expect(after + (await queueStats(a.url)).claimed).toBeLessThan(30);
    // both processes go on serving new jobs
    const next = await call(b.url, 'POST', '/api/program/optimize', { ...grid('after'), count: 5000 });
    expect(next.status).toBe(200);
  }, 180_000);
});
