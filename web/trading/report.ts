/**
 * Backtest report figures computed in the page from the answer of POST /api/program/backtest
 * (its equity curve and trade list), in the manner of backtesting.py and TradingView's strategy
 * tester: Sortino, Calmar, the longest drawdown, and the trade list as CSV.
 */
export interface EquityPoint { t: number; equity: number }
export interface Trade { side: 'long' | 'short'; entry_time: string; exit_time: string; entry_price: number; exit_price: number; contracts: number; pnl: number; reason: string }

const YEAR_MS = 365 * 86_400_000;

/**
 * Annualized Sortino ratio of the equity curve's period returns: mean return over the downside
 * deviation (root mean square of the negative returns, target 0), times sqrt(periods per year).
 * null when it is undefined (fewer than 2 points, or no losing period).
 */
export function sortino(curve: EquityPoint[]): number | null {
  if (curve.length < 3) return null;
  const r: number[] = [];
  for (let i = 1; i < curve.length; i++) r.push(curve[i]!.equity / curve[i - 1]!.equity - 1);
  const mean = r.reduce((a, b) => a + b, 0) / r.length;
  const down = Math.sqrt(r.reduce((a, b) => a + (b < 0 ? b * b : 0), 0) / r.length);
  if (down === 0) return null;
  const span = curve.at(-1)!.t - curve[0]!.t;
  const perYear = span > 0 ? (r.length * YEAR_MS) / span : 252;
  return (mean / down) * Math.sqrt(perYear);
}

/** Calmar ratio: annual return over the maximum drawdown (both fractions). null without a drawdown. */
export function calmar(annualReturn: number, maxDrawdown: number): number | null {
  return maxDrawdown > 0 ? annualReturn / maxDrawdown : null;
}

/** Drawdown (fraction below the running peak, ≤ 0) at every point of the curve. */
export function drawdowns(curve: EquityPoint[]): { t: number; dd: number }[] {
  let peak = -Infinity;
  return curve.map((p) => {
    peak = Math.max(peak, p.equity);
    return { t: p.t, dd: peak > 0 ? p.equity / peak - 1 : 0 };
  });
}

/**
 * The longest time spent below a previous peak: from the peak to the first point back at or above
 * it (or to the end of the curve, `recovered: false`). null when the curve never falls.
 */
export function longestDrawdown(curve: EquityPoint[]): { from: number; to: number; ms: number; recovered: boolean } | null {
  let best: { from: number; to: number; ms: number; recovered: boolean } | null = null;
  let peak = curve[0];
  let under = false;
  const consider = (from: number, to: number, recovered: boolean) => {
    if (!best || to - from > best.ms) best = { from, to, ms: to - from, recovered };
  };
  for (const p of curve) {
    if (!peak) break;
    if (p.equity >= peak.equity) {
      if (under) consider(peak.t, p.t, true);
      peak = p;
      under = false;
    } else under = true;
  }
  if (under && peak) consider(peak.t, curve.at(-1)!.t, false);
  return best;
}

/** "3일 4시간" style duration (days, hours, minutes; the two largest non-zero units). */
export function duration(ms: number): string {
  const m = Math.round(ms / 60_000);
  const parts: [number, string][] = [[Math.floor(m / 1440), '일'], [Math.floor((m % 1440) / 60), '시간'], [m % 60, '분']];
  const shown = parts.filter(([n]) => n > 0).slice(0, 2);
  return shown.length ? shown.map(([n, u]) => `${n}${u}`).join(' ') : '0분';
}

const csvCell = (v: unknown) => {
  const s = String(v ?? '');
  // a leading = + - @ would be a formula in a spreadsheet: quote it behind an apostrophe
  const safe = /^[=+\-@\t\r]/.test(s) && !/^-?\d/.test(s) ? `'${s}` : s;
  return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
};

/** The trade list as CSV (RFC 4180, header row, CRLF line ends). */
export function tradesCsv(trades: Trade[]): string {
  const head = ['no', 'side', 'entry_time', 'exit_time', 'entry_price', 'exit_price', 'contracts', 'pnl', 'reason'];
  const rows = trades.map((t, i) => [i + 1, t.side, t.entry_time, t.exit_time, t.entry_price, t.exit_price, t.contracts, t.pnl, t.reason]);
  return [head, ...rows].map((r) => r.map(csvCell).join(',')).join('\r\n') + '\r\n';
}
