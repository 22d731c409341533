import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { call, get, until, type Answer } from '../support/http.js';
import { tempDir } from '../support/process.js';
import { connectTopics } from '../support/ws.js';

/**
 * The bounds of the trading jobs over real HTTP on in-process hubs with one worker thread: a job
 * abandoned by its client (connection closed before the answer) is cancelled, the queue and the
 * jobs of one client are bounded (503 / 429 with Retry-After), and a job past its time budget stops.
 * Assertions are on the jobs' states and answers, never on wall-clock time.
 */
const silent = pino({ level: 'silent' });
const range = (a: number, n: number) => Array.from({ length: n }, (_, i) => a + i);
/** A 500-combination optimization on 100,000 candles: seconds of work for one thread. */
const heavy = (job_id: string) => ({ symbol: 'ES', timeframe: '1m', count: 100_000, seed: 3, strategy: 'ema_cross', job_id, grid: { fast: range(2, 20), slow: range(30, 25) } });

async function hub(env: Record<string, string>): Promise<Maru> {
  const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('trading-jobs'), LOG_LEVEL: 'silent', TRADING_WORKERS: '1', ...AUTH_TEST_ENV, ...env });
  return startMaru(config, { clock: new ManualClock(Date.UTC(2026, 0, 5)), logger: silent });
}

/** A POST whose connection the test can close before the answer. */
function abandonable(base: string, path: string, body: unknown) {
  const ctl = new AbortController();
  const done = fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: ctl.signal }).then(
    (r) => r.status,
    () => 'aborted' as const,
  );
  return { abort: () => ctl.abort(), done };
}

const jobs = async (base: string) => (await get(base, '/api/program/jobs')).body;

describe('abandoned jobs', () => {
  let maru: Maru;
  beforeAll(async () => {
    maru = await hub({ TRADING_QUEUE_MAX: '20', TRADING_JOBS_PER_CLIENT: '20' });
  });
  afterAll(() => maru?.stop());

  it('12 abandoned optimizations are cancelled and no longer delay a 1,000-candle backtest', async () => {
    const base = maru.url;
    const ws = await connectTopics(base);
    await ws.subscribe('job:abandoned-0');
    const requests = range(0, 12).map((i) => abandonable(base, '/api/program/optimize', heavy(`abandoned-${i}`)));
    const first = await ws.next(10_000);
    expect(first.data).toMatchObject({ job: 'abandoned-0', state: 'running' });
    const admitted = await until('12 jobs admitted', async () => {
      const j = await jobs(base);
      return j.admitted === 12 && j;
    });
    // one thread: one runs, eleven wait in order
    expect(admitted.running).toBe(1);
    expect(admitted.waiting).toBe(11);
    expect(admitted.jobs.filter((j: { state: string }) => j.state === 'queued')).toHaveLength(11);

    for (const r of requests) r.abort();
    expect(await Promise.all(requests.map((r) => r.done))).toEqual(range(0, 12).map(() => 'aborted'));
    // every one is cancelled: the waiting ones leave the queue, the running one stops at its next unit
    const after = await until('all cancelled', async () => {
      const j = await jobs(base);
      return j.admitted === 0 && j.running === 0 && j;
    });
    expect(after.cancelled.abandoned).toBe(12);
    expect(after.waiting).toBe(0);
    let last;
    do last = (await ws.next(10_000)).data;
    while (last.state === 'running');
    expect(last).toMatchObject({ job: 'abandoned-0', state: 'cancelled' });
    expect(last.done).toBeLessThan(500);
    ws.close();

    // the backtest finds the pool free: it is admitted straight into the running slot
    const bt = call(base, 'POST', '/api/program/backtest', { symbol: 'ES', timeframe: '1m', count: 1000, seed: 1, strategy: 'ema_cross', job_id: 'after' });
    const r = await bt;
    expect(r.status).toBe(200);
    expect(r.body.metrics.trades).toBeGreaterThanOrEqual(0);
    expect((await jobs(base)).cancelled.abandoned).toBe(12);
  }, 60_000);
});

describe('cancelling a waiting job', () => {
  let maru: Maru;
  beforeAll(async () => {
    maru = await hub({});
  });
  afterAll(() => maru?.stop());

  it('leaves the queue at once: its request answers 409 cancelled, the running one is untouched until cancelled too', async () => {
    const base = maru.url;
    const owner = bearer(await signIn(base, ['trader']));
    const running = call(base, 'POST', '/api/program/optimize', heavy('run-1'), owner);
    await until('the first runs', async () => (await jobs(base)).running === 1);
    const waiting = call(base, 'POST', '/api/program/optimize', heavy('wait-1'), owner);
    await until('the second waits', async () => (await jobs(base)).waiting === 1);
    const c = await call(base, 'POST', '/api/program/jobs/wait-1/cancel', undefined, owner);
    expect(c.status).toBe(202);
    const w = await waiting;
    expect(w.status).toBe(409);
    expect(w.body.error).toMatchObject({ code: 'cancelled', details: { job: 'wait-1', done: 0, reason: 'cancelled' } });
    const j = await jobs(base);
    expect(j).toMatchObject({ admitted: 1, running: 1, waiting: 0 });
    expect(j.jobs).toEqual([expect.objectContaining({ job: 'run-1', state: 'running' })]);
    expect((await call(base, 'POST', '/api/program/jobs/run-1/cancel', undefined, owner)).status).toBe(202);
    expect((await running).body.error.code).toBe('cancelled');
    expect((await jobs(base)).admitted).toBe(0);
  }, 60_000);
});

describe('who may cancel a job', () => {
  let maru: Maru;
  beforeAll(async () => {
    maru = await hub({ TRADING_JOBS_PER_CLIENT: '4' });
  });
  afterAll(() => maru?.stop());

  it('only its owner (or an operator): no token 401, a bad token 401, another trader 403, an unknown job 404', async () => {
    const base = maru.url;
    const owner = bearer(await signIn(base, ['trader']));
    const other = bearer(await signIn(base, ['trader']));
    const running = call(base, 'POST', '/api/program/optimize', heavy('mine-1'), owner);
    const anonymous = call(base, 'POST', '/api/program/optimize', heavy('anon-1'));
    await until('both admitted', async () => (await jobs(base)).admitted === 2);

    const none = await call(base, 'POST', '/api/program/jobs/mine-1/cancel');
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('unauthorized');
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const bad = await call(base, 'POST', '/api/program/jobs/mine-1/cancel', undefined, bearer('not-a-token'));
    expect(bad.status).toBe(401);
    expect(bad.body.error.code).toBe('invalid_token');
    const theirs = await call(base, 'POST', '/api/program/jobs/mine-1/cancel', undefined, other);
    expect(theirs.status).toBe(403);
    expect(theirs.body.error).toMatchObject({ code: 'forbidden', details: { job: 'mine-1' } });
    // a job started without a token belongs to no identity: only its connection (or an operator) ends it
    expect((await call(base, 'POST', '/api/program/jobs/anon-1/cancel', undefined, other)).status).toBe(403);
    expect((await call(base, 'POST', '/api/program/jobs/nobody/cancel', undefined, other)).status).toBe(404);
    // nothing was cancelled by the refused attempts
    expect((await jobs(base)).cancelled.cancelled).toBe(0);
    expect((await jobs(base)).admitted).toBe(2);

    const mine = await call(base, 'POST', '/api/program/jobs/mine-1/cancel', undefined, owner);
    expect(mine.status).toBe(202);
    expect(mine.body).toMatchObject({ job: 'mine-1', kind: 'optimize', state: 'cancelling' });
    expect((await running).body.error).toMatchObject({ code: 'cancelled', details: { job: 'mine-1', reason: 'cancelled' } });
    const operator = bearer(await signIn(base, ['operator']));
    expect((await call(base, 'POST', '/api/program/jobs/anon-1/cancel', undefined, operator)).status).toBe(202);
    expect((await anonymous).body.error.code).toBe('cancelled');
  }, 60_000);
});

describe('job bounds', () => {
  let maru: Maru;
  beforeAll(async () => {
    maru = await hub({ TRADING_QUEUE_MAX: '3', TRADING_JOBS_PER_CLIENT: '2', TRADING_JOB_TIMEOUT_MS: '300' });
  });
  afterAll(() => maru?.stop());

  it('a full queue is a 503, a client at its limit a 429, both with Retry-After; a job past its budget stops', async () => {
    const base = maru.url;
    const trader = await signIn(base, ['trader']);
    const mine = [0, 1].map((i) => call(base, 'POST', '/api/program/optimize', heavy(`mine-${i}`), bearer(trader)));
    await until('two jobs admitted', async () => (await jobs(base)).admitted === 2);
    const third = await call(base, 'POST', '/api/program/optimize', heavy('mine-2'), bearer(trader));
    expect(third.status).toBe(429);
    expect(third.body.error).toMatchObject({ code: 'too_many_jobs', details: { limit: 2 } });
    expect(third.headers.get('retry-after')).toBe('2');

    // another client (by address) still gets in, up to the queue bound
    const anon = call(base, 'POST', '/api/program/optimize', heavy('anon-0'));
    await until('three jobs admitted', async () => (await jobs(base)).admitted === 3);
    const full = await call(base, 'POST', '/api/program/backtest', { symbol: 'ES', count: 1000, strategy: 'ema_cross' });
    expect(full.status).toBe(503);
    expect(full.body.error).toMatchObject({ code: 'queue_full', details: { limit: 3 } });
    expect(full.headers.get('retry-after')).toBe('2');
    expect(third.headers.get('content-type')).toContain('application/json');

    // each job stops once it has run 300 ms: answers 503 job_timeout with its budget
    const answers: Answer[] = await Promise.all([...mine, anon]);
    for (const a of answers) {
      expect(a.status).toBe(503);
      expect(a.body.error).toMatchObject({ code: 'job_timeout', details: { budget_ms: 300, total: 500 } });
      expect(a.body.error.details.done).toBeLessThan(500);
    }
    const j = await jobs(base);
    expect(j).toMatchObject({ admitted: 0, running: 0, waiting: 0, cancelled: { timeout: 3 } });
    // the limits are free again
    const ok = await call(base, 'POST', '/api/program/backtest', { symbol: 'ES', count: 1000, strategy: 'ema_cross' }, bearer(trader));
    expect(ok.status).toBe(200);
  }, 60_000);

  it('an invalid token on a job route is a 401, and bad input never takes a queue place', async () => {
    const base = maru.url;
    const bad = await call(base, 'POST', '/api/program/backtest', { symbol: 'ES', count: 1000, strategy: 'ema_cross' }, bearer('nope'));
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toMatch(/^Bearer/);
    for (let i = 0; i < 5; i++) expect((await call(base, 'POST', '/api/program/optimize', { symbol: 'ES', strategy: 'nope' })).status).toBe(400);
    expect((await jobs(base)).admitted).toBe(0);
  });
});
