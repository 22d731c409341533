import { createHash, randomBytes } from 'node:crypto';
import { AppError, badRequest, conflict, notFound } from '../errors.js';
import type { Json, Store, Write } from '../store/port.js';
import { sharedCandles } from './candles.js';
import { parseCandleCsv, type CsvFailure, type Gap } from './dataset-csv.js';
import type { SymbolId, Timeframe } from './symbols.js';

/**
 * A trader's own candles (docs/trading.md "Data sets"): uploaded as CSV, validated, stored per
 * owner, listed, described and deleted by that owner only, and read by every analysis that names
 * them. The bars are kept in the store (so every hub process sharing it gives the same answer),
 * hashed (SHA-256 of the bytes), and handed to the worker threads as one SharedArrayBuffer.
 *
 * Store keys (one aggregate: the owner; every update touches that owner's keys only):
 * - `trading:dataset:<owner>`               {ids: [...]} the owner's data sets, oldest first
 *   (all of an owner's keys are one aggregate, `trading:dataset:<owner>`: docs/partitions.md)
 * - `trading:dataset:<owner>:<id>`          the description (DatasetView plus `parts`)
 * - `trading:dataset:<owner>:<id>:part:<k>` base64 of the k-th MiB of the bars (six Float64 columns)
 */

/** Largest CSV file (bytes): more is 413 `file_too_large`. */
export const DATASET_MAX_BYTES = 16 * 1_048_576;
/** Most rows of one data set: more is 413 `too_many_rows`. */
export const DATASET_MAX_ROWS = 200_000;
/** Fewest rows (the analyses' least candle count). */
export const DATASET_MIN_ROWS = 50;
/** Most data sets one trader keeps: one more is 409 `dataset_limit`. */
export const DATASETS_PER_OWNER = 20;
/** Bytes per stored part. */
const PART_BYTES = 1 << 20;
/** Bars kept in memory for analyses (shared buffers, by hash): at most this many bytes. */
const CACHE_BYTES = 256 * 1_048_576;

export const DATASET_ID = /^ds_[A-Za-z0-9_-]{16}$/;

export interface DatasetView {
  id: string;
  name: string;
  /** The contract whose tick and point value the engine uses (ES NQ CL GC 6E). */
  symbol: SymbolId;
  timeframe: Timeframe;
  bars: number;
  /** First and last bar's open time (ISO 8601, UTC). */
  first: string;
  last: string;
  gaps: { count: number; missing_bars: number; largest: number; first: Gap[] };
  /** SHA-256 of the bars' bytes (hex): the same in every answer on this data set. */
  hash: string;
  filename: string;
  /** The CSV's size in bytes. */
  bytes: number;
  created_at: string;
}

/** A loaded data set: its description and its bars in shared memory. */
export interface LoadedDataset {
  view: DatasetView;
  data: SharedArrayBuffer;
}

const listKey = (owner: string) => `trading:dataset:${owner}`;
const metaKey = (owner: string, id: string) => `trading:dataset:${owner}:${id}`;
const partKey = (owner: string, id: string, k: number) => `trading:dataset:${owner}:${id}:part:${k}`;
const idsOf = (v: Json | undefined): string[] => ((v as { ids?: string[] } | undefined)?.ids ?? []);

/** The refusal of a CSV that does not pass (400, 413 for too many rows), naming the first offending line. */
export function csvRefusal(f: CsvFailure): AppError {
  switch (f.kind) {
    case 'columns':
      return badRequest('invalid_columns', f.message, { found: f.found, expected: ['time', 'open', 'high', 'low', 'close', 'volume'] });
    case 'empty':
      return badRequest('empty_dataset', f.message);
    case 'too_many_rows':
      return new AppError('too_large', 'too_many_rows', f.message, { limit: f.limit });
    case 'too_few_rows':
      return badRequest('too_few_rows', f.message, { rows: f.rows, min: f.min });
    case 'bar_length':
      return badRequest('invalid_body', f.message, { issues: [{ field: 'timeframe', message: f.message.replace(/^timeframe: /, '') }] });
    case 'rows':
      return badRequest('invalid_dataset', f.message, { first: f.first, problems: f.problems, rows: f.rows });
  }
}

export class DatasetService {
  private readonly cache = new Map<string, LoadedDataset>();
  private cachedBytes = 0;

  constructor(private readonly store: Store, private readonly now: () => number = Date.now) {}

  /** Validates the CSV's lines and stores the data set for `owner`; nothing is stored when a check fails. */
  async create(
    owner: string,
    input: { name: string; symbol: SymbolId; timeframe?: Timeframe | undefined; filename: string; bytes: number },
    lines: AsyncIterable<string> | Iterable<string>,
  ): Promise<DatasetView> {
    const parsed = await parseCandleCsv(lines, { timeframe: input.timeframe, maxRows: DATASET_MAX_ROWS, minRows: DATASET_MIN_ROWS });
    if (!parsed.ok) throw csvRefusal(parsed.failure);
    const { n, columns, timeframe, gaps } = parsed.value;
    const bytes = Buffer.from(columns.buffer, columns.byteOffset, columns.byteLength);
    const hash = createHash('sha256').update(bytes).digest('hex');
    const id = `ds_${randomBytes(12).toString('base64url')}`;
    const view: DatasetView = {
      id,
      name: input.name,
      symbol: input.symbol,
      timeframe,
      bars: n,
      first: new Date(columns[0]!).toISOString(),
      last: new Date(columns[n - 1]!).toISOString(),
      gaps,
      hash,
      filename: input.filename,
      bytes: input.bytes,
      created_at: new Date(this.now()).toISOString(),
    };
    const parts: Write[] = [];
    for (let k = 0; k * PART_BYTES < bytes.length; k++) {
      parts.push({ op: 'set', key: partKey(owner, id, k), value: bytes.subarray(k * PART_BYTES, (k + 1) * PART_BYTES).toString('base64') });
    }
    await this.store.update([listKey(owner)], ([list]) => {
      const ids = idsOf(list);
      if (ids.length >= DATASETS_PER_OWNER) {
        throw conflict('dataset_limit', `at most ${DATASETS_PER_OWNER} data sets per trader; delete one first`, { limit: DATASETS_PER_OWNER });
      }
      return {
        writes: [...parts, { op: 'set', key: metaKey(owner, id), value: { ...view, parts: parts.length } as unknown as Json }, { op: 'set', key: listKey(owner), value: { ids: [...ids, id] } }],
        result: undefined,
      };
    });
    return view;
  }

  async list(owner: string): Promise<DatasetView[]> {
    const ids = idsOf(await this.store.get(listKey(owner)));
    const metas = await this.store.getMany(ids.map((id) => metaKey(owner, id)));
    return metas.filter((m): m is Json => m !== undefined).map(viewOf);
  }

  /** The owner's data set; another trader's, or none: 404 `dataset_not_found`. */
  async get(owner: string, id: string): Promise<DatasetView> {
    const meta = DATASET_ID.test(id) ? await this.store.get(metaKey(owner, id)) : undefined;
    if (!meta) throw notFound('dataset_not_found', `no data set ${id}`, { dataset: id });
    return viewOf(meta);
  }

  async delete(owner: string, id: string): Promise<{ id: string; deleted: true }> {
    if (!DATASET_ID.test(id)) throw notFound('dataset_not_found', `no data set ${id}`, { dataset: id });
    await this.store.update([listKey(owner), metaKey(owner, id)], ([list, meta]) => {
      if (!meta) throw notFound('dataset_not_found', `no data set ${id}`, { dataset: id });
      const parts = (meta as { parts: number }).parts;
      return {
        writes: [
          { op: 'del', key: metaKey(owner, id) },
          ...Array.from({ length: parts }, (_, k) => ({ op: 'del' as const, key: partKey(owner, id, k) })),
          { op: 'set', key: listKey(owner), value: { ids: idsOf(list).filter((x) => x !== id) } },
        ],
        result: undefined,
      };
    });
    return { id, deleted: true };
  }

  /**
   * The data set's bars for an analysis: from this process's memory when its hash was loaded
   * before, else from the store (the bytes checked against the hash).
   */
  async load(owner: string, id: string): Promise<LoadedDataset> {
    const view = await this.get(owner, id);
    const hit = this.cache.get(view.hash);
    if (hit) {
      this.cache.delete(view.hash);
      this.cache.set(view.hash, hit); // most recent last
      return { view, data: hit.data };
    }
    const parts = (await this.store.get<{ parts: number }>(metaKey(owner, id)))?.parts ?? 0;
    const chunks = await this.store.getMany<string>(Array.from({ length: parts }, (_, k) => partKey(owner, id, k)));
    if (chunks.some((c) => typeof c !== 'string')) throw notFound('dataset_not_found', `no data set ${id}`, { dataset: id });
    const bytes = Buffer.concat(chunks.map((c) => Buffer.from(c!, 'base64')));
    if (createHash('sha256').update(bytes).digest('hex') !== view.hash || bytes.length !== view.bars * 48) {
      throw new AppError('internal', 'dataset_corrupt', `data set ${id} does not match its hash`, { dataset: id });
    }
    const columns = new Float64Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
    const data = sharedCandles(columns, view.bars);
    this.cache.set(view.hash, { view, data });
    this.cachedBytes += data.byteLength;
    for (const [h, d] of this.cache) {
      if (this.cachedBytes <= CACHE_BYTES || h === view.hash) break;
      this.cache.delete(h);
      this.cachedBytes -= d.data.byteLength;
    }
    return { view, data };
  }
}

function viewOf(meta: Json): DatasetView {
  const { parts: _p, ...view } = meta as unknown as DatasetView & { parts: number };
  return view;
}
