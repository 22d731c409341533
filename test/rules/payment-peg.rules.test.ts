import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { formatPpm, median, PegService, twap } from '../../src/payment/peg.js';
import type { PriceSample, PriceSource } from '../../src/payment/peers.js';

// The snapshot peg (docs/payment.md "Peg"): per provider a time-weighted average over [end - W, end]
// with the window fully covered (no gap over maxGap), then the median of the providers left (the mean
// of two), at least two of three, as tokens per USD x 10^6.

const W = 300_000;
const GAP = 60_000;
const END = 1_800_000_000_000;
const START = END - W;

describe('TWAP', () => {
  it('weights each price by how long it held, clipped to the window', () => {
    // 100 from before the window to START+100s, 200 until START+200s, then 400 until END
    const s: PriceSample[] = [
      { t: START - 10_000, price: 100 },
      { t: START + 50_000, price: 100 },
      { t: START + 100_000, price: 200 },
      { t: START + 150_000, price: 200 },
      { t: START + 200_000, price: 400 },
      { t: START + 250_000, price: 400 },
    ];
    expect(twap(s, START, END, GAP)).toBeCloseTo((100 * 100_000 + 200 * 100_000 + 400 * 100_000) / W, 9);
  });

  it('sorts the samples by time first', () => {
    const s: PriceSample[] = [
      { t: START + 240_000, price: 3 },
      { t: START, price: 1 },
      { t: START + 60_000, price: 1 },
      { t: START + 120_000, price: 1 },
      { t: START + 180_000, price: 1 },
    ];
    // 1 for 240 s, 3 for the last 60 s
    expect(twap(s, START, END, GAP)).toBeCloseTo((1 * 240_000 + 3 * 60_000) / W, 9);
  });

  it('uses the last sample at or before the start, not an earlier one', () => {
    const s: PriceSample[] = [{ t: START - 20_000, price: 50 }, { t: START - 5_000, price: 10 }, ...steady(START + 55_000, 10)];
    expect(twap(s, START, END, GAP)).toBe(10);
    const atStart: PriceSample[] = [{ t: START - 1, price: 99 }, { t: START, price: 10 }, ...steady(START + 55_000, 10)];
    expect(twap(atStart, START, END, GAP)).toBe(10);
  });

  it('ignores samples after the end', () => {
    const s = [...steady(START, 7), { t: END + 1, price: 1000 }];
    expect(twap(s, START, END, GAP)).toBe(7);
  });

  it('says why a window is not covered', () => {
    expect(twap([], START, END, GAP)).toBe('no samples');
    expect(twap([{ t: END + 1, price: 1 }], START, END, GAP)).toBe('no samples');
    expect(twap(steady(START + 1, 5), START, END, GAP)).toBe('window start not covered');
    // one gap of exactly maxGap is allowed, one more millisecond is not
    const exact = [{ t: START, price: 1 }, { t: START + GAP, price: 1 }, { t: START + 2 * GAP, price: 1 }, { t: START + 3 * GAP, price: 1 }, { t: START + 4 * GAP, price: 1 }];
    expect(twap(exact, START, END, GAP)).toBe(1);
    const gap = [{ t: START, price: 1 }, { t: START + GAP + 1, price: 1 }, ...steady(START + GAP + 1, 1).slice(1)];
    expect(twap(gap, START, END, GAP)).toBe('gap in the window');
    // the last sample at most maxGap before the end
    const lastAt = (t: number) => [{ t: START, price: 1 }, { t: START + 60_000, price: 1 }, { t: START + 120_000, price: 1 }, { t: START + 180_000, price: 1 }, { t, price: 1 }];
    expect(twap(lastAt(END - GAP), START, END, GAP)).toBe(1);
    expect(twap(lastAt(END - GAP - 1), START, END, GAP)).toBe('window end not covered');
    // a sample at the end itself counts (and here shows the gap before it)
    expect(twap([...lastAt(END - GAP - 1), { t: END, price: 1 }], START, END, GAP)).toBe('gap in the window');
  });
});

/** A sample every 55 s from `from` to the end. */
function steady(from: number, price: number): PriceSample[] {
  const out: PriceSample[] = [];
  for (let t = from; t <= END; t += 55_000) out.push({ t, price });
  return out;
}

describe('median', () => {
  it('takes the middle of an odd count and the mean of the two middles of an even one', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([5])).toBe(5);
    expect(median([10, 4])).toBe(7);
    expect(median([1, 100, 3, 7])).toBe(5);
    expect(median([-4, -2])).toBe(-3);
  });

  it('sorts numerically and leaves its input as it was', () => {
    const xs = [10, 9, 100];
    expect(median(xs)).toBe(10);
    expect(xs).toEqual([10, 9, 100]);
  });
});

describe('formatPpm', () => {
  it('writes six decimal places', () => {
    expect(formatPpm(1_380_500_000n)).toBe('1380.500000');
    expect(formatPpm(1n)).toBe('0.000001');
    expect(formatPpm(999_999n)).toBe('0.999999');
    expect(formatPpm(1_000_000n)).toBe('1.000000');
    expect(formatPpm(0n)).toBe('0.000000');
    expect(formatPpm(-1_500_000n)).toBe('-1.500000');
  });
});

const source = (name: string, price: number | Error | PriceSample[]): PriceSource => ({
  name,
  quotes: async () => {
    if (price instanceof Error) throw price;
    return Array.isArray(price) ? price : steady(START, price);
  },
});

describe('the peg snapshot', () => {
  const peg = (...sources: PriceSource[]) => new PegService(sources, { windowMs: W, maxGapMs: GAP, minProviders: 2 });

  it('is the median of three providers in millionths', async () => {
    const snap = await peg(source('a', 1380.1), source('b', 1390.25), source('c', 1379.9)).snapshot(END);
    expect(snap.peg_ppm).toBe('1380100000');
    expect(snap.peg_rate).toBe('1380.100000');
    expect(snap.snapshot_ts).toBe(END);
    expect(snap.window_ms).toBe(W);
    expect(snap.inputs.map((i) => i.provider)).toEqual(['a', 'b', 'c']);
    expect(snap.inputs[0]).toMatchObject({ twap: 1380.1 });
    expect(snap.inputs[0]!.samples).toBe(steady(START, 1).length);
  });

  it('with one provider down is the mean of the other two, and keeps why it was left out', async () => {
    const snap = await peg(source('a', 1380), source('b', new Error('timed out')), source('c', 1390)).snapshot(END);
    expect(snap.peg_rate).toBe('1385.000000');
    expect(snap.inputs[1]).toEqual({ provider: 'b', excluded: 'timed out' });
    const gappy = await peg(source('a', 1380), source('b', [{ t: START, price: 1 }]), source('c', 1390)).snapshot(END);
    expect(gappy.inputs[1]).toEqual({ provider: 'b', samples: 1, excluded: 'window end not covered' });
    expect(gappy.peg_rate).toBe('1385.000000');
  });

  it('cuts a long error message to 200 characters', async () => {
    const snap = await peg(source('a', 1), source('b', new Error('x'.repeat(500))), source('c', 1)).snapshot(END);
    expect(snap.inputs[1]!.excluded).toHaveLength(200);
  });

  it('with fewer than two providers is unavailable (503 peg_unavailable), naming the inputs', async () => {
    const err = await peg(source('a', 1380), source('b', new Error('down')), source('c', new Error('down')))
      .snapshot(END)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('peg_unavailable');
    expect((err as AppError).status).toBe(503);
    expect((err as AppError).message).toBe('the peg needs 2 of 3 price providers; 1 answered with a covered window');
    expect(((err as AppError).details as { inputs: unknown[] }).inputs).toHaveLength(3);
  });

  it('asks each provider for the window [end - W, end]', async () => {
    const asked: [number, number][] = [];
    const recording: PriceSource = { name: 'r', quotes: async (from, to) => (asked.push([from, to]), steady(START, 2)) };
    await peg(recording, source('b', 2)).snapshot(END);
    expect(asked).toEqual([[START, END]]);
  });

  it('rounds to the nearest millionth', async () => {
    const snap = await peg(source('a', 1.0000004), source('b', 1.0000006)).snapshot(END);
    expect(snap.peg_ppm).toBe('1000001');
    const down = await peg(source('a', 2.0000004), source('b', 2.0000004)).snapshot(END);
    expect(down.peg_ppm).toBe('2000000');
  });
});
