import { describe, expect, it } from 'vitest';
import { generateCandles } from '../../src/trading/candles.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { call } from '../support/http.js';
import { tempDir } from '../support/process.js';
import { redisProcesses } from '../support/redis-processes.js';

/**
 * A data set on two hub processes sharing a Redis (each its own worker pool and memory): uploaded
 * on one, the same analyses on the other give byte-identical answers with the same hash, the grid
 * jobs included (they run on the pool of the process that took the request, never through the
 * chunk queue, since the bars are that process's shared memory). Another trader sees nothing of it
 * on either process.
 */
const { redis, prefix: freshPrefix, start } = await redisProcesses();

describe.skipIf(!redis.available)('a data set on two processes', () => {
  it('the same analysis on the same data set gives the same answer on every process', async () => {
    const env = { TRADING_WORKERS: '1', REDIS_URL: redis.url, REDIS_PREFIX: freshPrefix('datasets'), ...AUTH_TEST_ENV };
    const [a, b] = await Promise.all([start({ ...env, DATA_DIR: tempDir('ds-proc-a') }), start({ ...env, DATA_DIR: tempDir('ds-proc-b') })]);
    const token = await signIn(a.url, ['trader']);
    const other = await signIn(b.url, ['trader']);
    const cs = generateCandles({ seed: 9, symbol: 'GC', timeframe: '15m', count: 3000 });
    const lines = ['time,open,high,low,close,volume'];
    for (let i = 0; i < cs.n; i++) lines.push(`${cs.t[i]! / 1000},${cs.o[i]},${cs.h[i]},${cs.l[i]},${cs.c[i]},${cs.v[i]}`);
    const form = new FormData();
    form.set('name', 'gold');
    form.set('symbol', 'GC');
    form.set('file', new Blob([lines.join('\r\n')], { type: 'text/csv' }), 'gc.csv');
    const up = await fetch(`${a.url}/api/program/datasets`, { method: 'POST', body: form, headers: bearer(token) });
    expect(up.status).toBe(201);
    const { dataset } = (await up.json()) as { dataset: { id: string; hash: string; timeframe: string } };
    expect(dataset.timeframe).toBe('15m'); // inferred from Unix seconds
    const bodies: [string, Record<string, unknown>][] = [
      ['/api/program/backtest', { dataset: dataset.id, strategy: 'mean_reversion' }],
      ['/api/program/optimize', { dataset: dataset.id, strategy: 'ema_cross', grid: { fast: [5, 8, 12], slow: [20, 30, 40] }, objective: 'calmar_ratio' }],
      ['/api/program/montecarlo', { dataset: dataset.id, strategy: 'breakout', runs: 100 }],
    ];
    for (const [path, body] of bodies) {
      const onA = await call(a.url, 'POST', path, body, bearer(token));
      const onB = await call(b.url, 'POST', path, body, bearer(token));
      expect(onA.status, onA.text.slice(0, 200)).toBe(200);
      expect(onB.text).toBe(onA.text);
      expect(onA.body.candles).toMatchObject({ dataset: dataset.id, hash: dataset.hash, symbol: 'GC', count: 3000 });
    }
    // the same candles generated give the same figures
    const synth = await call(b.url, 'POST', '/api/program/backtest', { symbol: 'GC', timeframe: '15m', count: 3000, seed: 9, strategy: 'mean_reversion' });
    const onData = await call(b.url, 'POST', '/api/program/backtest', bodies[0]![1], bearer(token));
    expect(onData.body.metrics).toEqual(synth.body.metrics);
    expect(onData.body.candles.checksum).toBe(synth.body.candles.checksum);
    // private on every process
    expect((await call(b.url, 'GET', `/api/program/datasets/${dataset.id}`, undefined, bearer(other))).status).toBe(404);
    expect((await call(a.url, 'POST', '/api/program/backtest', bodies[0]![1], bearer(other))).status).toBe(404);
    expect((await call(b.url, 'GET', '/api/program/datasets', undefined, bearer(token))).body.datasets.map((d: { id: string }) => d.id)).toEqual([dataset.id]);
  }, 120_000);
});
