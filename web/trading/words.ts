/**
 * The program log in a trader's words: the server's entries name bars by number and the process
 * that drives a program; the page says what happened to the program instead (no process ids, no
 * bar numbers).
 */
export interface LogLine { t: number; level: string; code: string; message: string }

const STATE: Record<string, string> = {
  created: '만듦 · created',
  running: '실행 중 · running',
  paused: '일시정지 · paused',
  stopped: '정지 · stopped',
  error: '오류 · error',
  deleted: '삭제됨 · deleted',
};
const REASON: Record<string, string> = {
  daily_loss_limit: '일일 손실 한도 도달 · daily loss limit reached',
  daily_trade_limit: '오늘 진입 횟수 한도 · daily entry limit',
  max_positions: '최대 포지션 수 · position limit',
  schedule: '거래 시간 밖 · outside trading hours',
  risk: '리스크 규칙 · risk rule',
  deleted: '삭제 · deleted',
  stop_loss: '손절 · stop-loss',
  take_profit: '익절 · take-profit',
  signal: '신호 · signal',
};
export const reasonWords = (r: string) => REASON[r] ?? r.replace(/_/g, ' ');
export const stateWords = (s: string) => STATE[s] ?? s;

/** A job's state (its progress on `job:<id>`). */
const JOB_STATE: Record<string, string> = {
  queued: '대기 중 · queued',
  running: '계산 중 · running',
  done: '완료 · done',
  cancelled: '취소됨 · cancelled',
  failed: '실패 · failed',
};
export const jobStateWords = (s: string) => JOB_STATE[s] ?? s;

/** The five strategies, in Korean first (the English name after it, as on the rest of the page). */
const STRATEGY: Record<string, string> = {
  ema_cross: 'EMA 교차 · EMA cross',
  rsi_rebound: 'RSI 반등 · RSI rebound',
  breakout: '돌파 · breakout',
  mean_reversion: '평균 회귀 · mean reversion',
  triple_sync: '3중 시간대 동조 · triple timeframe sync',
};
export const strategyWords = (id: string) => STRATEGY[id] ?? id.replace(/_/g, ' ');

export function logWords(l: LogLine): string {
  const m = l.message;
  if (l.code === 'claimed') {
    const restored = /(\d+) open position/.exec(m);
    return `시장을 따라가는 중 · following the market${restored ? `; 열린 포지션 ${restored[1]}개 복원 · ${restored[1]} open position(s) restored` : ''}`;
  }
  if (l.code === 'gap') {
    const bars = /bars (\d+)-(\d+)/.exec(m);
    const n = bars ? Number(bars[2]) - Number(bars[1]) + 1 : undefined;
    return `서버가 멈춘 동안의 봉${n ? ` ${n}개` : ''}를 건너뜀 · ${n ?? 'some'} bar(s) skipped while the server was down`;
  }
  const move = /^(\w+) -> (\w+)(?: \(([^)]*)\))?/.exec(m);
  if (move && STATE[move[2]!]) {
    return `${stateWords(move[1]!)} → ${stateWords(move[2]!)}${move[3] ? ` (${reasonWords(move[3])})` : ''}`;
  }
  const blocked = /^(\w+) entry blocked: (\w+) \(([^)]*)\)/.exec(m);
  if (blocked) return `${blocked[1]} 진입 막힘 · entry blocked: ${reasonWords(blocked[2]!)} (${blocked[3]})`;
  // anything else: the message without "bar N" numbers or process names
  return m.replace(/ from bar \d+/g, '').replace(/;? ?processes bars after \S+/g, '');
}

/** The figures of a backtest, compare or optimize answer: a Korean label (the English after it, as on the rest of the page). */
const METRIC: Record<string, string> = {
  trades: '거래 수 trades',
  win_rate: '승률 win rate',
  profit_factor: '손익비 profit factor',
  net_profit: '순손익 net profit',
  sharpe: '샤프 Sharpe',
  sqn: 'SQN',
  max_drawdown: '최대 낙폭 max drawdown',
  total_return: '총 수익률 total return',
  final_equity: '최종 자산 final equity',
};
export const metricWords = (key: string) => METRIC[key] ?? key.replace(/_/g, ' ');

export const pct = (v: number | null | undefined, digits = 1) => (v == null || !Number.isFinite(v) ? '—' : `${(v * 100).toFixed(digits)}%`);
export const num = (v: number | null | undefined, digits = 2) => (v == null || !Number.isFinite(v) ? '—' : v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }));
export const usd = (v: number | null | undefined) => (v == null || !Number.isFinite(v) ? '—' : `${v < 0 ? '−' : ''}$${Math.abs(v).toLocaleString('en-US', { maximumFractionDigits: 2, minimumFractionDigits: 2 })}`);

/** A figure in its own unit: ratios as percentages, money in dollars, counts whole. */
export function metricText(key: string, v: number | null | undefined): string {
  if (key === 'win_rate' || key === 'max_drawdown' || key === 'total_return' || key === 'exposure') return pct(v);
  if (key === 'net_profit' || key === 'final_equity' || key === 'max_drawdown_usd') return usd(v);
  if (key === 'trades') return v == null ? '—' : String(v);
  return num(v);
}
