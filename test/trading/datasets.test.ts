import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { generateCandles, sessionOfTime, type Candles } from '../../src/trading/candles.js';
import { parseCandleCsv, parseTime } from '../../src/trading/dataset-csv.js';
import { DATASET_MAX_BYTES, DATASET_MAX_ROWS, DATASETS_PER_OWNER, DatasetService } from '../../src/trading/datasets.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { RunService, RUNS_PER_OWNER } from '../../src/trading/runs.js';
import { call, post } from '../support/http.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { tempDir } from '../support/process.js';

/**
 * A trader's own candles: the CSV checks one rule at a time, the upload over real HTTP (multipart
 * through the hub's upload pipeline), and every analysis on a data set, which must give what the
 * same analysis gives on the same candles generated (the data set is the synthetic series written
 * as CSV, so the checksums, metrics and statistics must be equal to the bit).
 */
const silent = pino({ level: 'silent' });

const HEADER = 'time,open,high,low,close,volume';
/** n rows of 1-minute bars from 2024-01-02 00:00 UTC, price 100 + i/100. */
function rows(n: number, start = Date.UTC(2024, 0, 2)): string[] {
  return Array.from({ length: n }, (_, i) => {
    const p = 100 + i / 100;
    return `${new Date(start + i * 60_000).toISOString()},${p},${p + 0.5},${p - 0.5},${p + 0.25},${10 + i}`;
  });
}
const swapHighLow = (row: string) => {
  const c = row.split(',');
  return [c[0], c[1], c[3], c[2], c[4], c[5]].join(',');
};
const parse = (lines: string[], timeframe?: '1m' | '5m' | '1h' | '1d') => parseCandleCsv(lines, { timeframe, maxRows: 1000, minRows: 5 });
const failure = async (lines: string[]) => {
  const r = await parse(lines);
  if (r.ok) throw new Error('expected a refusal');
  return r.failure;
};

/** The candles as the CSV a trader would upload (ISO times, the engine's doubles written exactly). */
function csvOf(cs: Candles): string {
  const out = [HEADER];
  for (let i = 0; i < cs.n; i++) out.push(`${new Date(cs.t[i]!).toISOString()},${cs.o[i]},${cs.h[i]},${cs.l[i]},${cs.c[i]},${cs.v[i]}`);
  return out.join('\n') + '\n';
}

describe('the CSV checks, one rule at a time', () => {
  it('reads a good file: columns in any order, BOM, CRLF, Unix seconds and ms, offsets', async () => {
    const good = await parse([`\ufeffVolume,Close,Low,High,Open,Timestamp`, ...rows(6).map((r) => r.split(',').reverse().join(','))]);
    expect(good.ok).toBe(true);
    if (!good.ok) return;
    expect(good.value.n).toBe(6);
    expect(good.value.timeframe).toBe('1m');
    expect(Array.from(good.value.columns.subarray(6, 8))).toEqual([100, 100.01]); // opens
    expect(parseTime('1704153600')).toBe(Date.UTC(2024, 0, 2));
    expect(parseTime('1704153600000')).toBe(Date.UTC(2024, 0, 2));
    expect(parseTime('2024-01-02 09:00+09:00')).toBe(Date.UTC(2024, 0, 2));
    expect(parseTime('2024-01-02')).toBe(Date.UTC(2024, 0, 2));
    expect(parseTime('2024-02-30T00:00:00Z')).toBeNaN();
    expect(parseTime('yesterday')).toBeNaN();
  });

  it('wrong columns: named, with what is missing and unknown', async () => {
    const f = await failure(['time,open,high,low,close', ...rows(3)]);
    expect(f.kind).toBe('columns');
    expect(f.message).toMatch(/missing volume/);
    const g = await failure(['time,open,high,low,close,volume,extra', ...rows(3)]);
    expect(g.message).toMatch(/unknown extra/);
  });

  it('empty: no file, or a header only', async () => {
    expect((await failure([])).kind).toBe('empty');
    expect((await failure([HEADER, ''])).kind).toBe('empty');
  });

  const cases: [string, (r: string[]) => string[], number][] = [
    // [problem, how the good rows are spoiled, the first offending line (the header is line 1)]
    ['out_of_order', (r) => [r[0]!, r[2]!, r[1]!, ...r.slice(3)], 4],
    ['duplicate_time', (r) => [r[0]!, r[1]!, r[1]!, ...r.slice(3)], 4],
    ['high_below_low', (r) => r.map((x, i) => (i === 4 ? swapHighLow(x) : x)), 6],
    ['open_outside_range', (r) => r.map((x, i) => (i === 2 ? x.replace(/Z,[\d.]+,/, 'Z,999,') : x)), 4],
    ['close_outside_range', (r) => r.map((x, i) => (i === 3 ? x.replace(/,([\d.]+),(\d+)$/, ',1,$2') : x)), 5],
    ['non_positive_price', (r) => r.map((x, i) => (i === 1 ? x.split(',').map((c, k) => (k > 0 && k < 5 ? '0' : c)).join(',') : x)), 3],
    ['missing_value', (r) => r.map((x, i) => (i === 2 ? x.replace(/,\d+$/, ',') : x)), 4],
    ['bad_number', (r) => r.map((x, i) => (i === 2 ? x.replace(/,\d+$/, ',lots') : x)), 4],
    ['bad_time', (r) => r.map((x, i) => (i === 5 ? x.replace(/^[^,]+/, 'soon') : x)), 7],
    ['malformed_row', (r) => r.map((x, i) => (i === 3 ? `${x},1` : x)), 5],
    ['negative_volume', (r) => r.map((x, i) => (i === 2 ? x.replace(/,\d+$/, ',-3') : x)), 4],
    ['mixed_bar_length', (r) => r.map((x, i) => (i === 4 ? x.replace(/:04:00/, ':04:30') : x)), 6],
  ];
  for (const [problem, spoil, line] of cases) {
    it(`${problem}: the first offending line and the count of each problem`, async () => {
      const f = await failure([HEADER, ...spoil(rows(10))]);
      if (f.kind !== 'rows') throw new Error(`expected row problems, got ${f.kind}`);
      expect(f.first.problem).toBe(problem);
      expect(f.first.line).toBe(line);
      expect(f.problems[problem as keyof typeof f.problems]).toBeGreaterThanOrEqual(1);
      expect(f.message).toMatch(new RegExp(`^line ${line}: .*${problem}`));
    });
  }

  it('counts every problem over every row, first line first', async () => {
    const r = rows(10);
    r[7] = r[7]!.replace(/,\d+$/, ',-1'); // line 9
    r[2] = r[2]!.replace(/,\d+$/, ',-1'); // line 4
    r[5] = r[5]!.replace(/Z,[\d.]+,/, 'Z,999,'); // line 7
    const f = await failure([HEADER, ...r]);
    if (f.kind !== 'rows') throw new Error(f.kind);
    expect(f.first.line).toBe(4);
    expect(f.problems).toEqual({ negative_volume: 2, open_outside_range: 1 });
  });

  it('gaps are reported, not filled; the bar length is inferred or given', async () => {
    const r = rows(20);
    const kept = [...r.slice(0, 5), ...r.slice(8)]; // 3 bars missing after the 5th
    const ok = await parse([HEADER, ...kept]);
    if (!ok.ok) throw new Error(ok.failure.message);
    expect(ok.value.n).toBe(17);
    expect(ok.value.gaps).toMatchObject({ count: 1, missing_bars: 3, largest: 3 });
    expect(ok.value.gaps.first[0]).toEqual({ after: '2024-01-02T00:04:00.000Z', before: '2024-01-02T00:08:00.000Z', missing_bars: 3 });
    // given as 5m, one-minute steps are mixed bar lengths
    const five = await parse([HEADER, ...r], '5m');
    expect(!five.ok && five.failure.kind === 'rows' && five.failure.first.problem).toBe('mixed_bar_length');
    // a length that is no timeframe
    const odd = await failure([HEADER, ...Array.from({ length: 8 }, (_, i) => `${1704153600 + i * 120},1,1,1,1,1`)]);
    expect(odd.kind).toBe('bar_length');
  });

  it('too many and too few rows', async () => {
    expect((await failure([HEADER, ...rows(1001)])).kind).toBe('too_many_rows');
    expect((await failure([HEADER, ...rows(3)])).kind).toBe('too_few_rows');
  });

  it("a bar's session is the engine's: the same as the synthetic series", () => {
    const cs = generateCandles({ seed: 3, symbol: 'ES', timeframe: '15m', count: 2000 });
    for (let i = 0; i < cs.n; i++) expect(sessionOfTime(cs.t[i]!)).toBe(cs.session[i]);
  });
});

describe('data sets: bounded per trader', () => {
  it(`keeps at most ${DATASETS_PER_OWNER} per trader (409 dataset_limit, nothing written); a delete makes room`, async () => {
    const store = await openLmdbStore({ path: tempDir('datasets-bound') });
    try {
      const ds = new DatasetService(store);
      const input = { name: 'd', symbol: 'ES' as const, filename: 'd.csv', bytes: 1 };
      const made = [];
      for (let i = 0; i < DATASETS_PER_OWNER; i++) made.push(await ds.create('carol', input, [HEADER, ...rows(60, Date.UTC(2024, 0, 2) + i * 86_400_000)]));
      await expect(ds.create('carol', input, [HEADER, ...rows(60)])).rejects.toMatchObject({ code: 'dataset_limit', status: 409 });
      expect(await ds.list('carol')).toHaveLength(DATASETS_PER_OWNER);
      // another trader is not counted, and sees none of them
      expect(await ds.list('dave')).toEqual([]);
      await expect(ds.get('dave', made[0]!.id)).rejects.toMatchObject({ code: 'dataset_not_found' });
      await ds.delete('carol', made[0]!.id);
      expect(await store.get(`trading:dataset:carol:${made[0]!.id}:part:0`)).toBeUndefined();
      const again = await ds.create('carol', input, [HEADER, ...rows(60)]);
      // the bars read back are the bytes hashed at the upload
      const loaded = await ds.load('carol', again.id);
      expect(loaded.view.hash).toBe(again.hash);
      expect(new Float64Array(loaded.data, 8 * 60, 60)[1]).toBe(100.01);
    } finally {
      await store.close();
    }
  });
});

describe('saved runs: bounded per trader', () => {
  it(`keeps the newest ${RUNS_PER_OWNER}; another trader sees none of them`, async () => {
    const store = await openLmdbStore({ path: tempDir('runs-bound') });
    try {
      const runs = new RunService(store);
      const ids: string[] = [];
      for (let i = 0; i < RUNS_PER_OWNER + 3; i++) ids.push((await runs.save('alice', 'backtest', { strategy: 'ema_cross', n: i }, { strategy: 'ema_cross', metrics: { net_profit: i } })).id);
      const list = await runs.list('alice');
      expect(list).toHaveLength(RUNS_PER_OWNER);
      expect(list[0]!.id).toBe(ids.at(-1));
      expect(list.at(-1)!.id).toBe(ids[3]);
      await expect(runs.get('alice', ids[0]!)).rejects.toMatchObject({ code: 'run_not_found' });
      expect(await runs.list('bob')).toEqual([]);
      await expect(runs.get('bob', ids.at(-1)!)).rejects.toMatchObject({ code: 'run_not_found' });
      // an answer too large keeps its figures without its trade list
      const big = await runs.save('alice', 'backtest', {}, { metrics: { net_profit: 1, sharpe: 2, trades: 3, max_drawdown: 0.1 }, trades: Array.from({ length: 20_000 }, (_, i) => ({ i, note: 'x'.repeat(60) })) });
      expect(big.trimmed).toEqual(['trades']);
      const got = await runs.get('alice', big.id);
      expect(got.result).toEqual({ metrics: { net_profit: 1, sharpe: 2, trades: 3, max_drawdown: 0.1 } });
      expect(got.figures).toEqual({ net_profit: 1, sharpe: 2, trades: 3, max_drawdown: 0.1 });
    } finally {
      await store.close();
    }
  });
});

describe('data sets over HTTP', () => {
  let maru: Maru;
  let base: string;
  let alice: string;
  let bob: string;

  beforeAll(async () => {
    const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('trading-datasets'), LOG_LEVEL: 'silent', TRADING_WORKERS: '2', ...AUTH_TEST_ENV });
    maru = await startMaru(config, { clock: new ManualClock(Date.UTC(2026, 0, 5)), logger: silent });
    base = maru.url;
    alice = await signIn(base, ['trader']);
    bob = await signIn(base, ['trader']);
  });
  afterAll(() => maru.stop());

  async function upload(token: string | undefined, csv: string | Buffer, fields: Record<string, string> = { name: 'my ES', symbol: 'ES' }, filename = 'es.csv') {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) form.set(k, v);
    form.set('file', new Blob([typeof csv === 'string' ? csv : new Uint8Array(csv)], { type: 'text/csv' }), filename);
    const res = await fetch(`${base}/api/program/datasets`, { method: 'POST', body: form, headers: token ? bearer(token) : {} });
    const text = await res.text();
    return { status: res.status, body: JSON.parse(text) };
  }

  const synth = { symbol: 'ES' as const, timeframe: '5m' as const, count: 3000, seed: 7 };
  let dsId = '';
  let hash = '';

  it('uploads a CSV, describes it, and lists it for its owner only', async () => {
    const cs = generateCandles(synth);
    const r = await upload(alice, csvOf(cs));
    expect(r.status).toBe(201);
    const d = r.body.dataset;
    expect(d).toMatchObject({ name: 'my ES', symbol: 'ES', timeframe: '5m', bars: 3000, first: new Date(cs.t[0]!).toISOString(), last: new Date(cs.t[2999]!).toISOString(), filename: 'es.csv' });
    expect(d.id).toMatch(/^ds_[A-Za-z0-9_-]{16}$/);
    expect(d.hash).toMatch(/^[0-9a-f]{64}$/);
    // the synthetic series has a gap at each session close and weekend: each one reported
    expect(d.gaps.count).toBeGreaterThan(0);
    expect(d.gaps.first[0]).toEqual({ after: new Date(cs.t[275]!).toISOString(), before: new Date(cs.t[276]!).toISOString(), missing_bars: 12 });
    dsId = d.id;
    hash = d.hash;
    const list = await call(base, 'GET', '/api/program/datasets', undefined, bearer(alice));
    expect(list.body.datasets.map((x: { id: string }) => x.id)).toEqual([dsId]);
    expect((await call(base, 'GET', `/api/program/datasets/${dsId}`, undefined, bearer(alice))).body.dataset).toEqual(d);
    expect((await call(base, 'GET', '/api/program/datasets', undefined, bearer(bob))).body.datasets).toEqual([]);
    const other = await call(base, 'GET', `/api/program/datasets/${dsId}`, undefined, bearer(bob));
    expect(other.status).toBe(404);
    expect(other.body.error.code).toBe('dataset_not_found');
  });

  it('a backtest on the data set equals the one on the same candles generated, with the hash in the answer', async () => {
    const strategy = { strategy: 'ema_cross', params: { fast: 8, slow: 30 } };
    const onData = await post(base, '/api/program/backtest', { dataset: dsId, seed: 7, ...strategy }, bearer(alice));
    expect(onData.status).toBe(200);
    const onSynth = await post(base, '/api/program/backtest', { ...synth, ...strategy });
    expect(onData.body.candles).toEqual({ ...onSynth.body.candles, dataset: dsId, hash });
    for (const k of ['metrics', 'stats', 'exits', 'monthly', 'equity_curve', 'trades', 'trades_total']) expect(onData.body[k]).toEqual(onSynth.body[k]);
    expect(onData.body.metrics.trades).toBeGreaterThan(10);
    // the same request again: the same bytes
    const again = await post(base, '/api/program/backtest', { dataset: dsId, seed: 7, ...strategy }, bearer(alice));
    expect(again.text).toBe(onData.text);
  });

  it('optimize, walk-forward, Monte Carlo and compare on the data set equal theirs on the synthetic series', async () => {
    const grid = { fast: [5, 8, 12], slow: [20, 30] };
    const pairs: [string, Record<string, unknown>][] = [
      ['/api/program/optimize', { strategy: 'ema_cross', grid, objective: 'sortino_ratio', constraint: 'slow - fast >= 10', heatmap: ['fast', 'slow'] }],
      ['/api/program/walkforward', { strategy: 'ema_cross', grid, in_sample: 1000, out_of_sample: 500 }],
      ['/api/program/montecarlo', { strategy: 'breakout', runs: 50 }],
      ['/api/program/backtest-compare', { strategies: ['ema_cross', 'breakout'] }],
    ];
    for (const [path, body] of pairs) {
      const a = await post(base, path, { dataset: dsId, seed: 7, ...body }, bearer(alice));
      const b = await post(base, path, { ...synth, ...body });
      expect(a.status, `${path}: ${a.text.slice(0, 200)}`).toBe(200);
      expect(a.body.candles.hash ?? hash).toBe(hash);
      expect({ ...a.body, candles: undefined }).toEqual({ ...b.body, candles: undefined });
    }
  });

  it('refuses an analysis on a data set without a token (401), of another trader (404), with a symbol (400), too short for the strategy (400)', async () => {
    const bt = { dataset: dsId, strategy: 'ema_cross' };
    const none = await post(base, '/api/program/backtest', bt);
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('unauthorized');
    const wrong = await post(base, '/api/program/backtest', bt, bearer('not-a-token'));
    expect(wrong.status).toBe(401);
    const other = await post(base, '/api/program/backtest', bt, bearer(bob));
    expect(other.status).toBe(404);
    expect(other.body.error.code).toBe('dataset_not_found');
    const both = await post(base, '/api/program/backtest', { ...bt, symbol: 'ES', count: 500 }, bearer(alice));
    expect(both.status).toBe(400);
    expect(both.body.error.details.issues.map((i: { field: string }) => i.field).sort()).toEqual(['count', 'symbol']);
    const neither = await post(base, '/api/program/backtest', { strategy: 'ema_cross' });
    expect(neither.status).toBe(400);
    expect(neither.body.error.message).toMatch(/^symbol: required/);
    const long = await post(base, '/api/program/backtest', { ...bt, strategy: 'breakout', params: { lookback: 500 } }, bearer(alice));
    expect(long.status).toBe(200);
    const wf = await post(base, '/api/program/walkforward', { dataset: dsId, strategy: 'ema_cross', in_sample: 2900, out_of_sample: 200 }, bearer(alice));
    expect(wf.status).toBe(400);
    expect(wf.body.error.details.issues[0].field).toBe('in_sample');
    const bad = await post(base, '/api/program/backtest', { dataset: 'ds_nope', strategy: 'ema_cross' }, bearer(alice));
    expect(bad.status).toBe(400);
  });

  it('upload refusals: no or a bad token, malformed rows, wrong columns, empty, too many rows or bytes, a bad field; nothing stored', async () => {
    const good = [HEADER, ...rows(60)].join('\n');
    expect((await upload(undefined, good)).status).toBe(401);
    expect((await upload('bad-token', good)).status).toBe(401);
    const broken = [HEADER, ...rows(60)];
    broken[10] = swapHighLow(broken[10]!);
    broken[20] = broken[19]!;
    const rowsBad = await upload(alice, broken.join('\n'));
    expect(rowsBad.status).toBe(400);
    expect(rowsBad.body.error.code).toBe('invalid_dataset');
    expect(rowsBad.body.error.details.first).toMatchObject({ line: 11, problem: 'high_below_low' });
    expect(rowsBad.body.error.details.problems).toEqual({ high_below_low: 1, duplicate_time: 1 });
    const cols = await upload(alice, ['date,o,h,l,c,v', ...rows(60)].join('\n'));
    expect(cols.status).toBe(400);
    expect(cols.body.error.code).toBe('invalid_columns');
    const empty = await upload(alice, '');
    expect(empty.status).toBe(400);
    expect(empty.body.error.code).toBe('empty_dataset');
    const many = await upload(alice, [HEADER, ...rows(DATASET_MAX_ROWS + 1)].join('\n'));
    expect(many.status).toBe(413);
    expect(many.body.error.code).toBe('too_many_rows');
    const huge = await upload(alice, Buffer.alloc(DATASET_MAX_BYTES + 1, 0x20));
    expect(huge.status).toBe(413);
    const sym = await upload(alice, good, { name: 'x', symbol: 'BTC' });
    expect(sym.status).toBe(400);
    expect(sym.body.error.details.issues[0].field).toBe('symbol');
    const list = await call(base, 'GET', '/api/program/datasets', undefined, bearer(alice));
    expect(list.body.datasets).toHaveLength(1);
  });

  it('saved runs: every analysis of a signed-in trader is kept, opened and deleted by that trader only', async () => {
    const r = await post(base, '/api/program/backtest', { dataset: dsId, strategy: 'breakout' }, bearer(alice));
    const id = r.headers.get('x-run-id')!;
    expect(id).toMatch(/^r_/);
    const anon = await post(base, '/api/program/backtest', { symbol: 'ES', count: 500, strategy: 'breakout' });
    expect(anon.headers.get('x-run-id')).toBeNull();
    const list = await call(base, 'GET', '/api/program/runs', undefined, bearer(alice));
    expect(list.status).toBe(200);
    expect(list.body.runs[0]).toMatchObject({ id, kind: 'backtest', strategy: 'breakout', candles: { dataset: dsId, hash }, figures: { net_profit: r.body.metrics.net_profit, trades: r.body.metrics.trades } });
    const open = await call(base, 'GET', `/api/program/runs/${id}`, undefined, bearer(alice));
    expect(open.body.run.request).toEqual({ dataset: dsId, strategy: 'breakout', seed: 1, settings: r.body.settings, equity_points: 500, trades_limit: 1000 });
    expect(open.body.run.result).toEqual(r.body);
    expect((await call(base, 'GET', `/api/program/runs/${id}`, undefined, bearer(bob))).status).toBe(404);
    expect((await call(base, 'DELETE', `/api/program/runs/${id}`, undefined, bearer(bob))).status).toBe(404);
    expect((await call(base, 'GET', '/api/program/runs')).status).toBe(401);
    expect((await call(base, 'GET', '/api/program/runs/nope', undefined, bearer(alice))).status).toBe(400);
    const del = await call(base, 'DELETE', `/api/program/runs/${id}`, undefined, bearer(alice));
    expect(del.body).toEqual({ id, deleted: true });
    expect((await call(base, 'GET', `/api/program/runs/${id}`, undefined, bearer(alice))).status).toBe(404);
  });

  it('deletes a data set for its owner only; then analyses on it are 404', async () => {
    expect((await call(base, 'DELETE', `/api/program/datasets/${dsId}`, undefined, bearer(bob))).status).toBe(404);
    expect((await call(base, 'DELETE', `/api/program/datasets/${dsId}`)).status).toBe(401);
    const del = await call(base, 'DELETE', `/api/program/datasets/${dsId}`, undefined, bearer(alice));
    expect(del.body).toEqual({ id: dsId, deleted: true });
    expect((await call(base, 'GET', '/api/program/datasets', undefined, bearer(alice))).body.datasets).toEqual([]);
    expect((await post(base, '/api/program/backtest', { dataset: dsId, strategy: 'ema_cross' }, bearer(alice))).status).toBe(404);
  });
});
