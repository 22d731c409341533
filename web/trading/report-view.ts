import { candleChecksum, candleRows, candlesFor } from '../../src/trading/candles.js';
import type { ExitRow } from '../../src/trading/stats.js';
import type { SymbolId, Timeframe } from '../../src/trading/symbols.js';
import { el } from '../common/live.js';
import { kst, kstSpan } from '../common/time.js';
import { candleChart, equityChart } from './charts.js';
import { calmar, duration, longestDrawdown, sortino, tradesCsv, type EquityPoint, type Trade } from './report.js';
import { num, pct, strategyWords, usd } from './words.js';

/** The backtest report: parameters, figures, candles with trades, equity with drawdown, trade list. */
export interface BacktestAnswer {
  strategy: string;
  params: Record<string, unknown>;
  settings: Record<string, unknown>;
  candles: { seed: number; symbol: string; timeframe: string; count: number; checksum: string; from: string; to: string };
  metrics: Record<string, number>;
  /** backtesting.py's statistics (null where it gives NaN); absent from older answers. */
  stats?: Record<string, number | string | null>;
  /** Exits by reason (freqtrade's table). */
  exits?: ExitRow[];
  equity_curve: EquityPoint[];
  trades: Trade[];
  trades_total: number;
}

export type { ExitRow };

/** Exit reasons in a trader's words. */
const REASON_WORDS: Record<string, string> = {
  signal: '신호 signal',
  stop_loss: '손절 stop loss',
  take_profit: '익절 take profit',
  risk: '위험 한도 risk stop',
  end: '데이터 끝 end of data',
};

export const PAGE_SIZE = 25;
/** Candle and trade times in KST with the year (web/common/time.ts). */
const when = (iso: string) => kst(iso);

function kv(caption: string, rows: [string, string][], attrs: Record<string, string> = {}): HTMLTableElement {
  return el('table', { class: 'kv', ...attrs }, el('caption', {}, caption), el('tbody', {}, ...rows.map(([k, v]) => el('tr', {}, el('th', { scope: 'row' }, k), el('td', { 'data-key': k }, v)))));
}

export function renderBacktest(target: HTMLElement, r: BacktestAnswer): void {
  const m = r.metrics;
  const st = r.stats;
  const stat = (k: string) => (typeof st?.[k] === 'number' ? (st[k] as number) : null);
  const longest = longestDrawdown(r.equity_curve);
  const dur = (v: number | null) => (v === null ? '—' : duration(v));
  const figures: [string, string][] = [
    ['순손익 net profit', usd(m.net_profit)],
    ['총 수익률 total return', pct(m.total_return, 2)],
    ['연 수익률 annual return', pct(m.annual_return)],
    ['거래 수 trades', String(m.trades)],
    ['승률 win rate', pct(m.win_rate)],
    ['손익비 profit factor', num(m.profit_factor)],
    ['평균 거래 average trade', usd(m.avg_trade)],
    ['최고 / 최저 거래 best / worst', `${usd(m.best_trade)} / ${usd(m.worst_trade)}`],
    ['샤프 Sharpe', num(m.sharpe)],
    // backtesting.py's Sortino and Calmar from the server; an answer without them: the page's own
    ['소르티노 Sortino', num(st ? stat('sortino_ratio') : sortino(r.equity_curve))],
    ['칼마 Calmar', num(st ? stat('calmar_ratio') : calmar(m.annual_return ?? 0, m.max_drawdown ?? 0))],
    ['최대 낙폭 max drawdown', `${pct(m.max_drawdown, 2)} (${usd(m.max_drawdown_usd)})`],
    ['최장 낙폭 기간 longest drawdown', longest ? `${duration(longest.ms)}${longest.recovered ? '' : ' (미회복 not recovered)'}` : '—'],
    ['시장 노출 exposure', pct(m.exposure)],
    ['수수료 commission', usd(m.commission)],
    ['SQN', num(m.sqn)],
  ];
  if (st) {
    figures.push(
      ['연 변동성 annual volatility', pct(stat('annual_volatility'))],
      ['샤프 (backtesting.py) Sharpe ratio', num(stat('sharpe_ratio'))],
      ['보유 수익률 buy & hold return', pct(stat('buy_and_hold_return'), 2)],
      ['평균 낙폭 average drawdown', `${pct(stat('avg_drawdown'), 2)} · ${dur(stat('avg_drawdown_duration_ms'))}`],
      ['최고 자산 equity peak', usd(stat('equity_peak'))],
      ['기대값 expectancy', pct(stat('expectancy'), 3)],
      ['평균 / 최장 보유 trade duration', `${dur(stat('avg_trade_duration_ms'))} / ${dur(stat('max_trade_duration_ms'))}`],
    );
  }
  const exits = r.exits
    ? el(
        'div',
        { class: 'scroll', tabindex: '0', role: 'region', 'aria-label': '청산 사유 exits by reason' },
        el(
          'table',
          { class: 'trades', id: 'bt-exits' },
          el('caption', {}, '청산 사유 exits by reason'),
          el('thead', {}, el('tr', {}, ...['사유 reason', '청산 exits', '승 / 무 / 패', '승률 win rate', '평균 수익률 avg return', '손익 P&L', '수익률 return'].map((h) => el('th', { scope: 'col' }, h)))),
          el(
            'tbody',
            {},
            ...r.exits.map((e) =>
              el(
                'tr',
                { 'data-reason': e.reason },
                el('th', { scope: 'row' }, REASON_WORDS[e.reason] ?? e.reason),
                el('td', {}, String(e.exits)),
                el('td', {}, `${e.wins} / ${e.draws} / ${e.losses}`),
                el('td', {}, pct(e.win_rate)),
                el('td', {}, pct(e.avg_return, 3)),
                el('td', { class: e.total_pnl >= 0 ? 'pos' : 'neg' }, usd(e.total_pnl)),
                el('td', {}, pct(e.total_return, 2)),
              ),
            ),
          ),
        ),
      )
    : null;
  const params: [string, string][] = [...Object.entries(r.params), ...Object.entries(r.settings)].map(([k, v]) => [k, String(v)]);

  const candleBox = el('div', { class: 'lw', id: 'bt-candles', role: 'group', 'aria-label': `${r.candles.symbol} ${r.candles.timeframe} 캔들과 매매 표시 candles with trades` });
  const equityBox = el('div', { class: 'lw tall', id: 'bt-equity', role: 'group', 'aria-label': '자산과 낙폭 equity and drawdown' });
  const trades = el('div', { id: 'bt-trades' });
  const csv = el('button', { type: 'button', id: 'bt-csv', class: 'ghost' }, 'CSV 내보내기 export');
  csv.addEventListener('click', () => {
    const a = el('a', { href: URL.createObjectURL(new Blob([tradesCsv(r.trades)], { type: 'text/csv;charset=utf-8' })), download: `backtest-${r.strategy}-${r.candles.symbol}-${r.candles.timeframe}-${r.candles.seed}.csv` });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
  });

  target.replaceChildren(
    el('h3', {}, `백테스트 ${strategyWords(r.strategy)} · ${r.candles.symbol} ${r.candles.timeframe} · ${kstSpan(r.candles.from, r.candles.to)}`),
    el('div', { class: 'report' }, kv('성과 performance', figures, { id: 'bt-metrics' }), kv('파라미터 parameters', params, { id: 'bt-params' })),
    ...(exits ? [exits] : []),
    candleBox,
    equityBox,
    el('div', { class: 'row' }, el('h3', {}, `거래 목록 trades (${r.trades.length}${r.trades_total > r.trades.length ? ` / ${r.trades_total}` : ''})`), csv),
    trades,
  );

  const cs = candlesFor({ seed: r.candles.seed, symbol: r.candles.symbol as SymbolId, timeframe: r.candles.timeframe as Timeframe, count: r.candles.count });
  if (candleChecksum(cs) === r.candles.checksum) candleChart(candleBox, candleRows(cs), r.trades);
  else candleBox.replaceChildren(el('p', { class: 'error' }, '캔들을 다시 만들 수 없습니다 (checksum mismatch)'));
  equityChart(equityBox, r.equity_curve);
  showTrades(trades, r.trades, 0);
}

/** One page of the trade list, with previous/next and the page number. */
function showTrades(box: HTMLElement, list: Trade[], page: number): void {
  const pages = Math.max(1, Math.ceil(list.length / PAGE_SIZE));
  const from = page * PAGE_SIZE;
  const rows = list.slice(from, from + PAGE_SIZE).map((t, i) =>
    el(
      'tr',
      {},
      el('td', {}, String(from + i + 1)),
      el('td', { class: t.side }, t.side === 'long' ? '매수 long' : '매도 short'),
      el('td', {}, when(t.entry_time)),
      el('td', {}, when(t.exit_time)),
      el('td', {}, num(t.entry_price)),
      el('td', {}, num(t.exit_price)),
      el('td', {}, String(t.contracts)),
      el('td', { class: t.pnl >= 0 ? 'pos' : 'neg' }, usd(t.pnl)),
      el('td', {}, t.reason),
    ),
  );
  const prev = el('button', { type: 'button', class: 'small', 'data-page': 'prev' }, '← 이전');
  const next = el('button', { type: 'button', class: 'small', 'data-page': 'next' }, '다음 →');
  prev.disabled = page === 0;
  next.disabled = page >= pages - 1;
  prev.addEventListener('click', () => showTrades(box, list, page - 1));
  next.addEventListener('click', () => showTrades(box, list, page + 1));
  box.replaceChildren(
    el(
      'div',
      { class: 'scroll', tabindex: '0', role: 'region', 'aria-label': '거래 목록 trade list' },
      el(
        'table',
        { class: 'trades' },
        el('thead', {}, el('tr', {}, ...['#', '방향 side', '진입 entry', '청산 exit', '진입가', '청산가', '계약', '손익 P&L', '사유 reason'].map((h) => el('th', { scope: 'col' }, h)))),
        el('tbody', {}, ...rows),
      ),
    ),
    el('div', { class: 'row pager' }, prev, el('span', { class: 'muted', id: 'bt-page', 'aria-live': 'polite' }, `${page + 1} / ${pages}`), next),
  );
}
