import { TIMEFRAMES, type Timeframe } from './symbols.js';

/**
 * A trader's candles as CSV (docs/trading.md "Data sets"): parsed and validated the way a data
 * engineer would, every row checked, every problem counted, nothing kept unless all is well. Pure:
 * it takes the file's lines; the route streams them from the upload's temporary file.
 *
 * Columns (a header line first, any order, names case-insensitive): `time` (or `timestamp`,
 * `date`), `open`, `high`, `low`, `close`, `volume`. Time: ISO 8601 (`2024-03-01T14:30:00Z`,
 * `2024-03-01 14:30`, `2024-03-01`, with `Z` or an offset such as `+09:00`; without one it is UTC),
 * or Unix time as an integer (seconds, or milliseconds from 10^11 on). A bar's time is its open.
 */

/** Bar length of each timeframe in ms (a data set's bars are calendar bars: a day is 24 h). */
export const BAR_MS: Record<Timeframe, number> = { '1m': 60_000, '5m': 300_000, '15m': 900_000, '30m': 1_800_000, '1h': 3_600_000, '1d': 86_400_000 };

export const PROBLEMS = [
  'malformed_row',
  'missing_value',
  'bad_number',
  'bad_time',
  'out_of_order',
  'duplicate_time',
  'non_positive_price',
  'high_below_low',
  'open_outside_range',
  'close_outside_range',
  'negative_volume',
  'mixed_bar_length',
] as const;
export type Problem = (typeof PROBLEMS)[number];

export const COLUMNS = ['time', 'open', 'high', 'low', 'close', 'volume'] as const;
const TIME_NAMES = new Set(['time', 'timestamp', 'date']);
/** Longest line read (a longer one is a malformed row). */
export const MAX_LINE_CHARS = 512;
/** Gaps listed one by one in a data set's description (all are counted). */
export const GAPS_LISTED = 20;

export interface Gap {
  /** The bar before the gap and the bar after it (ISO 8601). */
  after: string;
  before: string;
  missing_bars: number;
}

export interface ParsedCandles {
  n: number;
  timeframe: Timeframe;
  /** Six columns of n values each: t o h l c v. */
  columns: Float64Array;
  gaps: { count: number; missing_bars: number; largest: number; first: Gap[] };
}

export type CsvFailure =
  | { kind: 'columns'; message: string; found: string[] }
  | { kind: 'empty'; message: string }
  | { kind: 'too_many_rows'; message: string; limit: number }
  | { kind: 'too_few_rows'; message: string; rows: number; min: number }
  | { kind: 'bar_length'; message: string }
  | {
      kind: 'rows';
      message: string;
      first: { line: number; problem: Problem; message: string };
      problems: Partial<Record<Problem, number>>;
      rows: number;
    };

const NUM = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?)?(Z|[+-]\d{2}:?\d{2})?$/;

/** A time cell as ms since the epoch, or NaN. */
export function parseTime(cell: string): number {
  if (/^\d{1,16}$/.test(cell)) {
    const x = Number(cell);
    return x >= 1e11 ? x : x * 1000;
  }
  const m = ISO.exec(cell);
  if (!m) return NaN;
  const [y, mo, d, hh = '0', mi = '0', ss = '0', ms = '0', zone] = m.slice(1);
  const Y = Number(y), M = Number(mo), D = Number(d), H = Number(hh), N = Number(mi), S = Number(ss);
  if (M < 1 || M > 12 || D < 1 || H > 23 || N > 59 || S > 59) return NaN;
  let t = Date.UTC(Y, M - 1, D, H, N, S, Number(ms.padEnd(3, '0')));
  if (new Date(t).getUTCDate() !== D) return NaN; // 2024-02-30
  if (zone && zone !== 'Z') {
    const sign = zone[0] === '-' ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    const oh = Number(digits.slice(0, 2)), om = Number(digits.slice(2));
    if (oh > 23 || om > 59) return NaN;
    t -= sign * (oh * 60 + om) * 60_000;
  }
  return t;
}

const cellsOf = (line: string) => line.split(',').map((c) => c.trim().replace(/^"(.*)"$/, '$1').trim());

/**
 * Reads and checks the CSV's lines. `timeframe` names the bar length; without it the length is the
 * most frequent time difference (which must be one of the timeframes). Problems are counted over
 * every row; the first offending line is named.
 */
export async function parseCandleCsv(
  lines: AsyncIterable<string> | Iterable<string>,
  opts: { timeframe?: Timeframe | undefined; maxRows: number; minRows: number },
): Promise<{ ok: true; value: ParsedCandles } | { ok: false; failure: CsvFailure }> {
  let lineNo = 0;
  let header: number[] | undefined;
  let cap = 1024;
  let cols = new Float64Array(cap * 6);
  let lineOf = new Int32Array(cap);
  let n = 0;
  const counts: Partial<Record<Problem, number>> = {};
  let first: { line: number; problem: Problem; message: string } | undefined;
  const problem = (line: number, p: Problem, message: string) => {
    counts[p] = (counts[p] ?? 0) + 1;
    if (!first || line < first.line) first = { line, problem: p, message };
  };
  let prevT = NaN;
  for await (const raw of lines) {
    lineNo++;
    const line = lineNo === 1 ? raw.replace(/^\ufeff/, '') : raw;
    if (line.trim() === '') continue;
    if (!header) {
      const names = cellsOf(line).map((c) => c.toLowerCase());
      const at = COLUMNS.map((c) => names.findIndex((x) => (c === 'time' ? TIME_NAMES.has(x) : x === c)));
      const unknown = names.filter((x) => !TIME_NAMES.has(x) && !(COLUMNS as readonly string[]).includes(x));
      if (at.some((i) => i < 0) || unknown.length || names.length !== COLUMNS.length) {
        const missing = COLUMNS.filter((_, k) => at[k]! < 0);
        return {
          ok: false,
          failure: {
            kind: 'columns',
            found: names.slice(0, 20),
            message: `line ${lineNo}: the header must name the columns time, open, high, low, close, volume (any order)${missing.length ? `; missing ${missing.join(', ')}` : ''}${unknown.length ? `; unknown ${unknown.slice(0, 5).join(', ')}` : ''}`,
          },
        };
      }
      header = at;
      continue;
    }
    if (n >= opts.maxRows) return { ok: false, failure: { kind: 'too_many_rows', limit: opts.maxRows, message: `more than ${opts.maxRows} rows; at most ${opts.maxRows}` } };
    if (line.length > MAX_LINE_CHARS) {
      problem(lineNo, 'malformed_row', `line ${lineNo}: longer than ${MAX_LINE_CHARS} characters`);
      continue;
    }
    const cells = cellsOf(line);
    if (cells.length !== COLUMNS.length) {
      problem(lineNo, 'malformed_row', `line ${lineNo}: ${cells.length} cells; the header has ${COLUMNS.length}`);
      continue;
    }
    if (n === cap) {
      cap *= 2;
      const c2 = new Float64Array(cap * 6);
      for (let k = 0; k < 6; k++) c2.set(cols.subarray(k * (cap / 2), k * (cap / 2) + n), k * cap);
      cols = c2;
      const l2 = new Int32Array(cap);
      l2.set(lineOf);
      lineOf = l2;
    }
    const v = [0, 0, 0, 0, 0, 0];
    let bad = false;
    for (let k = 0; k < 6; k++) {
      const cell = cells[header[k]!]!;
      if (cell === '' || /^(nan|null|na|n\/a)$/i.test(cell)) {
        problem(lineNo, 'missing_value', `line ${lineNo}: ${COLUMNS[k]} is missing`);
        bad = true;
        continue;
      }
      if (k === 0) {
        v[0] = parseTime(cell);
        if (!Number.isFinite(v[0])) {
          problem(lineNo, 'bad_time', `line ${lineNo}: time '${cell.slice(0, 40)}' is not ISO 8601 or Unix time`);
          bad = true;
        }
      } else {
        v[k] = NUM.test(cell) ? Number(cell) : NaN;
        if (!Number.isFinite(v[k]!)) {
          problem(lineNo, 'bad_number', `line ${lineNo}: ${COLUMNS[k]} '${cell.slice(0, 40)}' is not a number`);
          bad = true;
        }
      }
    }
    if (bad) continue;
    const [t, o, h, l, c, vol] = v as [number, number, number, number, number, number];
    if (t < prevT) problem(lineNo, 'out_of_order', `line ${lineNo}: ${new Date(t).toISOString()} comes before the previous row's ${new Date(prevT).toISOString()}`);
    else if (t === prevT) problem(lineNo, 'duplicate_time', `line ${lineNo}: ${new Date(t).toISOString()} repeats the previous row's time`);
    if (o <= 0 || h <= 0 || l <= 0 || c <= 0) problem(lineNo, 'non_positive_price', `line ${lineNo}: prices must be above 0`);
    if (h < l) problem(lineNo, 'high_below_low', `line ${lineNo}: high ${h} is below low ${l}`);
    else {
      if (o > h || o < l) problem(lineNo, 'open_outside_range', `line ${lineNo}: open ${o} is outside low ${l} .. high ${h}`);
      if (c > h || c < l) problem(lineNo, 'close_outside_range', `line ${lineNo}: close ${c} is outside low ${l} .. high ${h}`);
    }
    if (vol < 0) problem(lineNo, 'negative_volume', `line ${lineNo}: volume ${vol} is below 0`);
    if (!(t <= prevT)) prevT = t;
    for (let k = 0; k < 6; k++) cols[k * cap + n] = v[k]!;
    lineOf[n] = lineNo;
    n++;
  }
  const rows = n + Object.values(counts).reduce((a, b) => a + b, 0);
  if (!header || rows === 0) return { ok: false, failure: { kind: 'empty', message: header ? 'no rows after the header' : 'the file is empty' } };
  const T = cols.subarray(0, n);

  // the bar length: given, or the most frequent difference between consecutive rows
  let timeframe = opts.timeframe;
  if (!timeframe) {
    const freq = new Map<number, number>();
    for (let i = 1; i < Math.min(n, 10_001); i++) {
      const d = T[i]! - T[i - 1]!;
      if (d > 0) freq.set(d, (freq.get(d) ?? 0) + 1);
    }
    let mode = 0;
    let most = 0;
    for (const [d, k] of freq) if (k > most || (k === most && d < mode)) [mode, most] = [d, k];
    timeframe = TIMEFRAMES.find((tf) => BAR_MS[tf] === mode);
    if (!timeframe) {
      return { ok: false, failure: { kind: 'bar_length', message: `timeframe: the bars' most frequent length is ${mode / 60_000} minutes, not one of ${TIMEFRAMES.join(', ')}; name it in the timeframe field` } };
    }
  }
  const bar = BAR_MS[timeframe];
  const gaps = { count: 0, missing_bars: 0, largest: 0, first: [] as Gap[] };
  for (let i = 0; i < n; i++) {
    if (T[i]! % bar !== 0 && !(bar === 86_400_000 && T[i]! % 3_600_000 === 0)) {
      problem(lineOf[i]!, 'mixed_bar_length', `line ${lineOf[i]}: ${new Date(T[i]!).toISOString()} is not on the ${timeframe} grid`);
      continue;
    }
    if (i === 0) continue;
    const d = T[i]! - T[i - 1]!;
    if (d <= 0) continue; // counted above
    if (d % bar !== 0) {
      problem(lineOf[i]!, 'mixed_bar_length', `line ${lineOf[i]}: ${d / 60_000} minutes after the previous bar; bars are ${timeframe}`);
    } else if (d > bar) {
      const missing = d / bar - 1;
      gaps.count++;
      gaps.missing_bars += missing;
      if (missing > gaps.largest) gaps.largest = missing;
      if (gaps.first.length < GAPS_LISTED) gaps.first.push({ after: new Date(T[i - 1]!).toISOString(), before: new Date(T[i]!).toISOString(), missing_bars: missing });
    }
  }
  if (first) {
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    const list = PROBLEMS.filter((p) => counts[p]).map((p) => `${p} ${counts[p]}`).join(', ');
    return { ok: false, failure: { kind: 'rows', first, problems: counts, rows, message: `${first.message} (${total} problem${total === 1 ? '' : 's'} in ${rows} rows: ${list})` } };
  }
  if (n < opts.minRows) return { ok: false, failure: { kind: 'too_few_rows', rows: n, min: opts.minRows, message: `${n} rows; at least ${opts.minRows}` } };
  const out = new Float64Array(n * 6);
  for (let k = 0; k < 6; k++) out.set(cols.subarray(k * cap, k * cap + n), k * n);
  return { ok: true, value: { n, timeframe, columns: out, gaps } };
}
