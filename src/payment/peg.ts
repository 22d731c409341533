import { AppError } from '../errors.js';
import type { PriceSample, PriceSource } from './peers.js';

/**
 * The snapshot peg (docs/payment.md "Peg"): peg_rate = tokens per 1 USD, fixed when a challenge
 * starts. For each of the three providers, a time-weighted average over the window [end - W, end]:
 *   TWAP = sum p_i * (t_{i+1} - t_i) / (end - start), each sample's price holding until the next one
 *   (the last until `end`), clipped to the window.
 * The window must be fully covered: a sample at or before `start`, no gap between samples longer
 * than maxGapMs, and the last sample at most maxGapMs before `end`. A provider that fails this, errs
 * or does not answer within its time-out is left out (a gap is never silently shortened). With 2 or 3
 * providers left the peg is their median (the mean of two); with fewer, 503 peg_unavailable and
 * nothing is charged. The inputs (each provider's TWAP, sample count, or why it was left out) are
 * kept with the snapshot.
 */

export const PEG_SCALE = 1_000_000n;

export interface PegInput {
  provider: string;
  twap?: number;
  samples?: number;
  excluded?: string;
}

export interface PegSnapshot {
  /** Tokens per USD x 10^6, an integer (decimal string). */
  peg_ppm: string;
  /** peg_rate as shown: a decimal string with 6 places. */
  peg_rate: string;
  snapshot_ts: number;
  window_ms: number;
  inputs: PegInput[];
}

export function twap(samples: PriceSample[], start: number, end: number, maxGapMs: number): number | string {
  const s = [...samples].sort((a, b) => a.t - b.t).filter((x) => x.t <= end);
  if (s.length === 0) return 'no samples';
  const firstIn = s.findIndex((x) => x.t > start);
  const from = firstIn === -1 ? s.length - 1 : firstIn - 1;
  if (from < 0) return 'window start not covered';
  const used = s.slice(from);
  let area = 0;
  for (let i = 0; i < used.length; i++) {
    const t0 = Math.max(used[i]!.t, start);
    const t1 = i + 1 < used.length ? used[i + 1]!.t : end;
    if (i + 1 < used.length && used[i + 1]!.t - used[i]!.t > maxGapMs) return 'gap in the window';
    if (i + 1 === used.length && end - used[i]!.t > maxGapMs) return 'window end not covered';
    area += used[i]!.price * (t1 - t0);
  }
  return area / (end - start);
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function formatPpm(ppm: bigint): string {
  const neg = ppm < 0n;
  const a = neg ? -ppm : ppm;
  return `${neg ? '-' : ''}${a / PEG_SCALE}.${(a % PEG_SCALE).toString().padStart(6, '0')}`;
}

export class PegService {
  constructor(
    private readonly sources: PriceSource[],
    private readonly opts: { windowMs: number; maxGapMs: number; minProviders: number },
  ) {}

  async snapshot(end: number): Promise<PegSnapshot> {
    const start = end - this.opts.windowMs;
    const inputs = await Promise.all(
      this.sources.map(async (src): Promise<PegInput> => {
        try {
          const samples = await src.quotes(start, end);
          const r = twap(samples, start, end, this.opts.maxGapMs);
          return typeof r === 'string' ? { provider: src.name, samples: samples.length, excluded: r } : { provider: src.name, twap: r, samples: samples.length };
        } catch (err) {
          return { provider: src.name, excluded: (err as Error).message.slice(0, 200) };
        }
      }),
    );
    const ok = inputs.filter((i) => i.twap !== undefined).map((i) => i.twap!);
    if (ok.length < this.opts.minProviders) {
      throw new AppError('unavailable', 'peg_unavailable', `the peg needs ${this.opts.minProviders} of ${this.sources.length} price providers; ${ok.length} answered with a covered window`, { inputs });
    }
    const ppm = BigInt(Math.round(median(ok) * 1e6));
    return { peg_ppm: ppm.toString(), peg_rate: formatPpm(ppm), snapshot_ts: end, window_ms: this.opts.windowMs, inputs };
  }
}
