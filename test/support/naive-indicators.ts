/**
 * Indicators computed the plain way, straight from their definitions (TA-Lib's, shared/ANCHORS.md),
 * for tests that hold the streaming and batch indicators and the strategies built on them to it.
 */

/** EMA(n): NaN for the first n - 1 values, seeded with their SMA, then value + 2/(n+1) x (x - value). */
export function naiveEma(xs: number[], n: number) {
  const out: number[] = [];
  let v = NaN;
  xs.forEach((x, i) => {
    if (i < n - 1) out.push(NaN);
    else if (i === n - 1) out.push((v = xs.slice(0, n).reduce((a, b) => a + b, 0) / n));
    else out.push((v = v + (2 / (n + 1)) * (x - v)));
  });
  return out;
}
/** RSI(n), Wilder's smoothing: NaN for the first n values; 50 when nothing moved, 100 without losses. */
export function naiveRsi(xs: number[], n: number) {
  const out: number[] = [NaN];
  let g = 0;
  let l = 0;
  for (let i = 1; i < xs.length; i++) {
    const d = xs[i]! - xs[i - 1]!;
    const gi = Math.max(d, 0);
    const li = Math.max(-d, 0);
    if (i < n) {
      g += gi;
      l += li;
      out.push(NaN);
      continue;
    }
    if (i === n) {
      g = (g + gi) / n;
      l = (l + li) / n;
    } else {
      g = (g * (n - 1) + gi) / n;
      l = (l * (n - 1) + li) / n;
    }
    out.push(l === 0 ? (g === 0 ? 50 : 100) : 100 - 100 / (1 + g / l));
  }
  return out.slice(0, xs.length);
}
