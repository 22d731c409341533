import type { Candles } from './candles.js';

/**
 * Indicator series shared by the runs of one job (vectorbt's way): a grid, a walk-forward window or a
 * Monte Carlo task asks for the series it needs by key (indicator, parameters, bar range) and every
 * combination that needs the same one gets the same array. One cache per candle set (a WeakMap: the
 * series go when the candles go), bounded in bytes: the oldest series leave first.
 */
export const SERIES_CACHE_BYTES = 256 * 1024 * 1024;

interface Entry {
  value: unknown;
  bytes: number;
}

export class SeriesCache {
  private readonly map = new Map<string, Entry>();
  private bytes = 0;

  constructor(private readonly limit = SERIES_CACHE_BYTES) {}

  /** The series under `key`, made by `make` the first time (size in bytes by `size`). */
  get<T>(key: string, make: () => T, size: (v: T) => number): T {
    const hit = this.map.get(key);
    if (hit !== undefined) return hit.value as T;
    const value = make();
    const bytes = size(value);
    while (this.map.size > 0 && this.bytes + bytes > this.limit) {
      const [oldest, e] = this.map.entries().next().value as [string, Entry];
      this.map.delete(oldest);
      this.bytes -= e.bytes;
    }
    this.map.set(key, { value, bytes });
    this.bytes += bytes;
    return value;
  }

  get size(): number {
    return this.map.size;
  }
}

const caches = new WeakMap<Candles, SeriesCache>();

export function seriesCache(cs: Candles): SeriesCache {
  let c = caches.get(cs);
  if (c === undefined) {
    c = new SeriesCache();
    caches.set(cs, c);
  }
  return c;
}
