import {
  AreaSeries,
  CandlestickSeries,
  ColorType,
  createChart,
  createSeriesMarkers,
  LineSeries,
  type IChartApi,
  type SeriesMarker,
  type Time,
  type UTCTimestamp,
} from 'lightweight-charts';
import { drawdowns, type EquityPoint, type Trade } from './report.js';

/** Charts of the dashboard with TradingView's lightweight-charts (canvas; resizes with its box). */
const sec = (ms: number) => Math.floor(ms / 1000) as UTCTimestamp;
const BASE = {
  autoSize: true,
  layout: { background: { type: ColorType.Solid, color: '#ffffff' }, textColor: '#3d4754', fontFamily: '"Noto Sans KR", system-ui, sans-serif', attributionLogo: true },
  grid: { vertLines: { color: '#eef0f3' }, horzLines: { color: '#eef0f3' } },
  timeScale: { timeVisible: true, secondsVisible: false },
  localization: { locale: 'ko-KR' },
} as const;
// colour-blind-safe pair (blue / orange) for long and short; red-green is avoided
const LONG = '#1f6fd1';
const SHORT = '#d9731a';

const charts = new WeakMap<HTMLElement, IChartApi>();
function fresh(host: HTMLElement): IChartApi {
  charts.get(host)?.remove();
  const chart = createChart(host, BASE);
  charts.set(host, chart);
  return chart;
}

export interface CandleRow { t: number; o: number; h: number; l: number; c: number }

/**
 * Candles with the trades on them: an arrow at each entry (up for long, down for short, with the
 * side) and a dot at each exit (with the P&L). Markers are placed on the bar that holds the time.
 */
export function candleChart(host: HTMLElement, candles: CandleRow[], trades: Trade[]): IChartApi {
  const chart = fresh(host);
  const series = chart.addSeries(CandlestickSeries, { upColor: '#ffffff', downColor: '#3d4754', borderUpColor: '#3d4754', borderDownColor: '#3d4754', wickUpColor: '#3d4754', wickDownColor: '#3d4754' });
  series.setData(candles.map((k) => ({ time: sec(k.t), open: k.o, high: k.h, low: k.l, close: k.c })));
  const times = candles.map((k) => k.t);
  const barOf = (iso: string) => {
    const t = Date.parse(iso);
    let lo = 0;
    let hi = times.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (times[mid]! <= t) lo = mid;
      else hi = mid - 1;
    }
    return sec(times[lo] ?? t);
  };
  const markers: SeriesMarker<Time>[] = [];
  for (const tr of trades) {
    const long = tr.side === 'long';
    markers.push({ time: barOf(tr.entry_time), position: long ? 'belowBar' : 'aboveBar', shape: long ? 'arrowUp' : 'arrowDown', color: long ? LONG : SHORT, text: long ? '매수' : '매도' });
    markers.push({ time: barOf(tr.exit_time), position: long ? 'aboveBar' : 'belowBar', shape: 'circle', color: tr.pnl >= 0 ? LONG : SHORT, text: `${tr.pnl >= 0 ? '+' : ''}${Math.round(tr.pnl)}` });
  }
  markers.sort((a, b) => (a.time as number) - (b.time as number));
  createSeriesMarkers(series, markers);
  chart.timeScale().fitContent();
  return chart;
}

/** Equity line on top, the drawdown (percent below the running peak) in its own pane below. */
export function equityChart(host: HTMLElement, curve: EquityPoint[]): IChartApi {
  const chart = fresh(host);
  const eq = chart.addSeries(LineSeries, { color: LONG, lineWidth: 2, priceFormat: { type: 'price', precision: 0, minMove: 1 }, title: '자산 equity' });
  const seen = new Set<number>();
  const points = curve.filter((p) => !seen.has(sec(p.t)) && seen.add(sec(p.t)));
  eq.setData(points.map((p) => ({ time: sec(p.t), value: p.equity })));
  const dd = chart.addSeries(
    AreaSeries,
    { lineColor: SHORT, topColor: 'rgba(217,115,26,0.05)', bottomColor: 'rgba(217,115,26,0.35)', lineWidth: 1, priceFormat: { type: 'percent', precision: 1 }, title: '낙폭 drawdown', invertFilledArea: true },
    1,
  );
  dd.setData(drawdowns(points).map((d) => ({ time: sec(d.t), value: d.dd * 100 })));
  const panes = chart.panes();
  panes[0]?.setStretchFactor(3);
  panes[1]?.setStretchFactor(1);
  chart.timeScale().fitContent();
  return chart;
}
