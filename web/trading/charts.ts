import {
  AreaSeries,
  CandlestickSeries,
  ColorType,
  createChart,
  createSeriesMarkers,
  LineSeries,
  TickMarkType,
  type IChartApi,
  type SeriesMarker,
  type Time,
  type UTCTimestamp,
} from 'lightweight-charts';
import { kst, kstDate, kstTime } from '../common/time.js';
import { drawdowns, type EquityPoint, type Trade } from './report.js';

/** Charts of the dashboard with TradingView's lightweight-charts (canvas; resizes with its box). */
const sec = (ms: number) => Math.floor(ms / 1000) as UTCTimestamp;
/** The time axis in KST like every time on the pages (the library would write UTC): ticks short, the crosshair in full. */
const ms = (t: Time) => (typeof t === 'number' ? t * 1000 : typeof t === 'string' ? Date.parse(t) : Date.UTC(t.year, t.month - 1, t.day));
function tick(t: Time, type: TickMarkType): string {
  const at = ms(t);
  if (type === TickMarkType.Year) return kstDate(at).slice(0, 4);
  if (type === TickMarkType.Month) return kstDate(at).slice(0, 7);
  if (type === TickMarkType.DayOfMonth) return kstDate(at).slice(5);
  return kstTime(at, { seconds: type === TickMarkType.TimeWithSeconds }).replace(' KST', '');
}
const BASE = {
  autoSize: true,
  layout: { background: { type: ColorType.Solid, color: '#ffffff' }, textColor: '#3d4754', fontFamily: '"Noto Sans KR", system-ui, sans-serif', attributionLogo: true },
  grid: { vertLines: { color: '#eef0f3' }, horzLines: { color: '#eef0f3' } },
  timeScale: { timeVisible: true, secondsVisible: false, tickMarkFormatter: tick },
  localization: { locale: 'ko-KR', timeFormatter: (t: Time) => kst(ms(t)) },
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
  // labels only while they stay readable; with many trades the shapes and colours tell
  const labels = trades.length <= 40;
  for (const tr of trades) {
    const long = tr.side === 'long';
    markers.push({ time: barOf(tr.entry_time), position: long ? 'belowBar' : 'aboveBar', shape: long ? 'arrowUp' : 'arrowDown', color: long ? LONG : SHORT, ...(labels ? { text: long ? '매수' : '매도' } : {}) });
    markers.push({ time: barOf(tr.exit_time), position: long ? 'aboveBar' : 'belowBar', shape: 'circle', size: 0.6, color: tr.pnl >= 0 ? LONG : SHORT, ...(labels ? { text: `${tr.pnl >= 0 ? '+' : ''}${Math.round(tr.pnl)}` } : {}) });
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

/**
 * A live program's market: the ticks' prices gathered into candles of `bucketS` seconds, with
 * each signal (arrow) and each fill (dot with the side, and the P&L on an exit) marked on its bar.
 */
/** One candle of the live chart: the prices of one bucket of time. */
type Bucket = { time: UTCTimestamp; open: number; high: number; low: number; close: number };

export class LiveCandles {
  private chart?: IChartApi;
  private series?: ReturnType<IChartApi['addSeries']>;
  private markers?: ReturnType<typeof createSeriesMarkers<Time>>;
  private marks: SeriesMarker<Time>[] = [];
  private bar?: Bucket;
  bars = 0;

  constructor(private readonly host: HTMLElement, private readonly bucketS = 30) {}

  reset(): void {
    this.chart = fresh(this.host);
    this.series = this.chart.addSeries(CandlestickSeries, { upColor: '#ffffff', downColor: '#3d4754', borderUpColor: '#3d4754', borderDownColor: '#3d4754', wickUpColor: '#3d4754', wickDownColor: '#3d4754' });
    this.markers = createSeriesMarkers(this.series, []);
    this.marks = [];
    this.bar = undefined;
    this.bars = 0;
    this.host.dataset.bars = '0';
  }

  private bucket(tMs: number): UTCTimestamp {
    return (Math.floor(tMs / 1000 / this.bucketS) * this.bucketS) as UTCTimestamp;
  }

  /** Recent closed bars of the market (oldest first), gathered into the chart's buckets: the chart opens with history. */
  history(bars: readonly { t: number; o: number; h: number; l: number; c: number }[]): void {
    if (!this.series) return;
    const out: Bucket[] = [];
    for (const b of bars) {
      const time = this.bucket(b.t);
      const cur = out[out.length - 1];
      if (cur && cur.time === time) out[out.length - 1] = { ...cur, high: Math.max(cur.high, b.h), low: Math.min(cur.low, b.l), close: b.c };
      else if (!cur || time > cur.time) out.push({ time, open: b.o, high: b.h, low: b.l, close: b.c });
    }
    if (out.length === 0) return;
    this.series.setData(out);
    this.bar = out[out.length - 1];
    this.bars = out.length;
    this.host.dataset.bars = String(this.bars);
    this.chart?.timeScale().fitContent();
  }

  tick(tMs: number, price: number | null): void {
    if (!this.series || price === null || !Number.isFinite(price)) return;
    const time = this.bucket(tMs);
    if (this.bar && time < this.bar.time) return;
    if (this.bar && this.bar.time === time) {
      this.bar = { ...this.bar, high: Math.max(this.bar.high, price), low: Math.min(this.bar.low, price), close: price };
    } else {
      this.bar = { time, open: this.bar?.close ?? price, high: Math.max(price, this.bar?.close ?? price), low: Math.min(price, this.bar?.close ?? price), close: price };
      this.bars++;
      this.host.dataset.bars = String(this.bars);
    }
    this.series.update(this.bar);
  }

  private mark(m: SeriesMarker<Time>): void {
    if (!this.bar) return;
    // a marker sits on an existing bar: never later than the newest one
    const time = Math.min(m.time as number, this.bar.time) as UTCTimestamp;
    this.marks.push({ ...m, time });
    this.marks.sort((a, b) => (a.time as number) - (b.time as number));
    if (this.marks.length > 500) this.marks.splice(0, this.marks.length - 500);
    this.markers?.setMarkers(this.marks);
    this.host.dataset.markers = String(this.marks.length);
  }

  signal(tMs: number, action: string): void {
    const long = action === 'long';
    if (action === 'exit') this.mark({ time: this.bucket(tMs), position: 'aboveBar', shape: 'square', color: '#5b6675', text: '청산 신호' });
    else this.mark({ time: this.bucket(tMs), position: long ? 'belowBar' : 'aboveBar', shape: long ? 'arrowUp' : 'arrowDown', color: long ? LONG : SHORT, text: long ? '매수 신호' : '매도 신호' });
  }

  fill(tMs: number, side: 'buy' | 'sell', kind: 'entry' | 'exit', pnl?: number): void {
    const text = kind === 'exit' && pnl !== undefined ? `${pnl >= 0 ? '+' : ''}${Math.round(pnl)}` : side === 'buy' ? '매수 체결' : '매도 체결';
    this.mark({ time: this.bucket(tMs), position: side === 'buy' ? 'belowBar' : 'aboveBar', shape: 'circle', color: side === 'buy' ? LONG : SHORT, text });
  }
}
