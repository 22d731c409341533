import { Session, mountSignIn } from '../common/auth.js';
import { demoSignIn } from '../common/demo-sign-in.js';
import { LiveTopics, el } from '../common/live.js';
import { LiveCandles } from './charts.js';
import { fanChart } from './fan.js';
import { COLORS, lineChart, plot } from './svgchart.js';
import { heatmap, type OptimizeRow } from './heatmap.js';
import { renderBacktest, type BacktestAnswer } from './report-view.js';
import { kstSpan, kstTime } from '../common/time.js';
import { jobStateWords, logWords, metricText, metricWords, pct, reasonWords, stateWords, strategyWords, usd } from './words.js';

/** The trading dashboard: live programs (SSE /api/program/stream) and the backtest lab (job progress on WebSocket job:<id>). */

type State = 'created' | 'running' | 'paused' | 'stopped';
interface Stats {
  bars: number; trades: number; wins: number; realized_pnl: number; equity: number; pnl: number; day_pnl: number;
  open_positions: number; position: string; last_price: number | null; blocked: number;
}
interface Program { id: string; name: string; strategy: string; symbol: string; state: State; reason: string | null; settings: { capital: number }; stats: Stats }
interface JsonSchema { properties?: Record<string, { type?: string; minimum?: number; maximum?: number; default?: number }> }
interface StrategyForm { id: string; name: string; description: string; params: JsonSchema; defaults: Record<string, number> }
interface ListAnswer { programs: Program[]; statistics: Record<string, number>; strategies: StrategyForm[]; symbols: string[]; moves: Record<string, { from: State[] }> }
interface LogEntry { t: number; level: string; code: string; message: string }
interface Signal { t: number; action: string; price: number }
interface TickEntry { program: string; price: number | null; equity: number; pnl: number; position: string; open_positions: number }

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const nf = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });
/** Log and signal times: KST, the zone written (web/common/time.ts). */
const time = (t: number) => kstTime(t);

let info: ListAnswer;
const programs = new Map<string, Program>();
let selected: string | null = null;
let equity: { t: number; equity: number }[] = [];
const liveCandles = new LiveCandles($('live-candles'));

/** Programs belong to the trader who signed in (an operator sees all); the token stays in this tab. */
const session = new Session('trading:token');
await demoSignIn(session); // a signed-in link from the demo tour (DEMO=1 only)

async function getJson<T>(url: string): Promise<T> {
  const res = await session.fetch(url);
  const body = await res.json();
  if (!res.ok) throw new Error(body?.error?.message ?? `${res.status}`);
  return body as T;
}

async function send(path: string, body: unknown): Promise<any> {
  const res = await session.fetch(path, { body });
  const out = await res.json();
  if (!res.ok) {
    const issues = out?.error?.details?.issues as { field: string; message: string }[] | undefined;
    throw Object.assign(new Error(issues?.length ? issues.map((i) => `${i.field}: ${i.message}`).join('; ') : (out?.error?.message ?? `${res.status}`)), { code: out?.error?.code as string | undefined });
  }
  return out;
}

// ---- programs -----------------------------------------------------------------------------------

function money(v: number): HTMLElement {
  return el('span', { class: v > 0 ? 'pos' : v < 0 ? 'neg' : '' }, nf.format(v));
}

function renderRow(p: Program): HTMLTableRowElement {
  const moves = info.moves;
  const btn = (move: string, label: string, enabled: boolean) => {
    const b = el('button', { type: 'button', class: 'small', 'data-move': move }, label);
    b.disabled = !enabled;
    return b;
  };
  const tr = el(
    'tr',
    { 'data-id': p.id, class: p.id === selected ? 'selected' : '' },
    // data-label: the column's name, written before the value where a phone shows each program as a card
    el('td', { class: 'name' }, p.name),
    el('td', { 'data-label': '전략', 'data-strategy': p.strategy }, strategyWords(p.strategy)),
    el('td', { 'data-label': '종목' }, p.symbol),
    el('td', { 'data-label': '상태' }, el('span', { class: 'state', 'data-state': p.state }, stateWords(p.state) + (p.reason && p.state !== 'running' ? ` (${reasonWords(p.reason)})` : ''))),
    el('td', { class: 'pnl', 'data-label': '손익 P&L' }, money(p.stats.pnl)),
    el('td', { class: 'equity', 'data-label': '자산' }, nf.format(p.stats.equity)),
    el('td', { 'data-label': '체결' }, String(p.stats.trades)),
    el('td', { class: 'position', 'data-label': '포지션' }, `${p.stats.position}${p.stats.open_positions > 1 ? ` ×${p.stats.open_positions}` : ''}`),
    el(
      'td',
      { class: 'moves' },
      btn('start', '시작 start', moves.start!.from.includes(p.state)),
      btn('pause', '일시정지 pause', moves.pause!.from.includes(p.state)),
      btn('stop', '정지 stop', moves.stop!.from.includes(p.state)),
      btn('delete', '삭제 delete', true),
    ),
  );
  return tr;
}

function renderPrograms(): void {
  const body = $('programs');
  body.replaceChildren(...[...programs.values()].map(renderRow));
  if (programs.size === 0) body.append(el('tr', {}, el('td', { colspan: '9', class: 'muted' }, 'no program yet: create one')));
  const all = [...programs.values()];
  setFig('total', all.length);
  setFig('running', all.filter((p) => p.state === 'running').length);
  setFig('pnl', Math.round(all.reduce((a, p) => a + p.stats.pnl, 0) * 100) / 100);
  setFig('trades', all.reduce((a, p) => a + p.stats.trades, 0));
}

function setFig(name: string, v: number): void {
  const n = document.querySelector(`[data-fig="${name}"]`);
  if (n) n.textContent = nf.format(v);
}

async function loadList(): Promise<void> {
  info = await getJson<ListAnswer>('/api/program/list');
  programs.clear();
  for (const p of info.programs) programs.set(p.id, p);
  if (selected && !programs.has(selected)) select(null);
  renderPrograms();
}

$('programs').addEventListener('click', async (ev) => {
  const target = ev.target as HTMLElement;
  const tr = target.closest('tr[data-id]') as HTMLElement | null;
  if (!tr) return;
  const id = tr.dataset.id!;
  const move = (target.closest('button[data-move]') as HTMLElement | null)?.dataset.move;
  $('programs-error').textContent = '';
  if (!move) return void select(id);
  try {
    await send(`/api/program/${move}`, { id });
    await loadList();
  } catch (err) {
    $('programs-error').textContent = (err as Error).message;
  }
});

async function select(id: string | null): Promise<void> {
  selected = id;
  for (const tr of document.querySelectorAll<HTMLElement>('#programs tr[data-id]')) tr.classList.toggle('selected', tr.dataset.id === id);
  $('detail-name').textContent = id ? (programs.get(id)?.name ?? id) : '— select a program';
  $('log').replaceChildren();
  $('signals').replaceChildren();
  equity = [];
  drawEquity();
  liveCandles.reset();
  if (!id) return;
  const [logs, recent] = await Promise.all([
    getJson<{ logs: LogEntry[]; signals: Signal[]; equity: { t: number; equity: number }[] }>(`/api/program/logs/${id}`),
    getJson<{ bars: { t: number; o: number; h: number; l: number; c: number }[] }>(`/api/program/bars/${id}`),
  ]);
  if (selected !== id) return;
  liveCandles.history(recent.bars);
  for (const l of logs.logs) addLog(l);
  for (const s of logs.signals) addSignal(s);
  equity = logs.equity;
  drawEquity();
}

function addLog(l: LogEntry): void {
  $('log').prepend(el('li', { 'data-level': l.level, 'data-code': l.code }, `${time(l.t)} ${logWords(l)}`));
}
function addSignal(s: Signal): void {
  $('signals').prepend(el('li', { 'data-action': s.action }, `${time(s.t)} ${s.action} @ ${nf.format(s.price)}`));
}

function drawEquity(): void {
  const chart = $('equity-chart') as unknown as SVGSVGElement;
  chart.replaceChildren();
  const pts = equity.slice(-300);
  chart.dataset.points = String(pts.length);
  if (pts.length < 2) return;
  plot(chart, [pts]);
}

// ---- create form ----------------------------------------------------------------------------------

function fillParams(): void {
  const s = info.strategies.find((x) => x.id === ($('cf-strategy') as HTMLSelectElement).value)!;
  $('cf-description').textContent = s.description;
  const set = $('cf-params');
  set.replaceChildren(el('legend', {}, '파라미터 parameters'));
  for (const [name, p] of Object.entries(s.params.properties ?? {})) {
    const input = el('input', {
      type: 'number',
      name: `param.${name}`,
      step: p.type === 'integer' ? '1' : 'any',
      value: String(s.defaults[name] ?? p.default ?? ''),
      ...(p.minimum !== undefined ? { min: String(p.minimum) } : {}),
      ...(p.maximum !== undefined ? { max: String(p.maximum) } : {}),
    });
    set.append(el('label', {}, `${name} `, input));
  }
}

function options(select: HTMLSelectElement, values: { value: string; label: string }[]): void {
  select.replaceChildren(...values.map((v) => el('option', { value: v.value }, v.label)));
}

$('create-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const f = new FormData(ev.target as HTMLFormElement);
  const params: Record<string, number> = {};
  const settings: Record<string, unknown> = {};
  for (const [k, v] of f.entries()) {
    if (k.startsWith('param.') && v !== '') params[k.slice(6)] = Number(v);
  }
  for (const k of ['daily_loss_limit', 'max_positions', 'daily_trade_limit', 'contracts']) {
    const v = f.get(k);
    if (v !== null && v !== '') settings[k] = Number(v);
  }
  const a = String(f.get('schedule_start') ?? '');
  const b = String(f.get('schedule_end') ?? '');
  if (a || b) settings.schedule = { start: a, end: b };
  $('cf-error').textContent = '';
  try {
    const name = String(f.get('name') ?? '').trim();
    const out = await send('/api/program/create', { ...(name ? { name } : {}), strategy: f.get('strategy'), symbol: f.get('symbol'), params, settings });
    await loadList();
    await select(out.program.id);
  } catch (err) {
    $('cf-error').textContent = (err as Error).message;
  }
});

// ---- the stream -----------------------------------------------------------------------------------

let stream: EventSource | undefined;

/** The signed-in trader's programs (an operator's: all); EventSource cannot set headers, so the token goes as access_token. */
function connectStream(): void {
  stream?.close();
  const es = (stream = new EventSource(`/api/program/stream?access_token=${encodeURIComponent(session.token ?? '')}`));
  es.onopen = () => $('conn').classList.add('on');
  es.onerror = () => $('conn').classList.remove('on');
  let reload: number | undefined;
  const later = () => {
    clearTimeout(reload);
    // a reload that fails (signed out meanwhile: the session shows the sign-in form) says so in place
    reload = window.setTimeout(() => void loadList().catch((err) => void ($('programs-error').textContent = session.token ? String(err instanceof Error ? err.message : err) : '트레이더로 로그인하세요 · sign in as a trader')), 150);
  };
  // the events missed while disconnected are no longer known: reload what the page shows
  es.addEventListener('reset', () => later());
  // the hub ends the stream of a token that is no longer valid: stop, and let the session check
  // show the sign-in form (signing in again reconnects)
  es.addEventListener('closed', () => {
    es.close();
    $('conn').classList.remove('on');
    void session.restore();
  });
  es.addEventListener('status', (e) => {
    const ev = JSON.parse(e.data);
    if (ev.program === selected) addLog({ t: ev.t, level: ev.reason === 'daily_loss_limit' ? 'warn' : 'info', code: ev.state, message: `${ev.previous} -> ${ev.state}${ev.reason && ev.reason !== ev.state ? ` (${ev.reason})` : ''}` });
    later();
  });
  es.addEventListener('signal', (e) => {
    const ev = JSON.parse(e.data);
    if (ev.program === selected) {
      addSignal(ev);
      liveCandles.signal(ev.t, ev.action);
    }
  });
  es.addEventListener('trade', (e) => {
    const ev = JSON.parse(e.data);
    if (ev.program === selected) {
      liveCandles.fill(ev.t, ev.side, ev.kind, ev.pnl);
      addLog({ t: ev.t, level: 'info', code: 'trade', message: `${ev.kind} ${ev.side} ${ev.contracts} @ ${nf.format(ev.price)}${ev.pnl !== undefined ? ` P&L ${nf.format(ev.pnl)}${ev.reason ? ` (${ev.reason})` : ''}` : ''}` });
    }
    const p = programs.get(ev.program);
    if (p) p.stats.trades += ev.kind === 'exit' ? 1 : 0;
  });
  es.addEventListener('tick', (e) => {
    const tick = JSON.parse(e.data) as { t: number; programs: TickEntry[] };
    for (const x of tick.programs) {
      const p = programs.get(x.program);
      if (!p) continue;
      p.stats.equity = x.equity;
      p.stats.pnl = x.pnl;
      p.stats.position = x.position;
      p.stats.open_positions = x.open_positions;
      if (x.program === selected) {
        liveCandles.tick(tick.t, x.price);
        equity.push({ t: tick.t, equity: x.equity });
        drawEquity();
      }
    }
    renderPrograms();
  });
}

// ---- backtest lab ---------------------------------------------------------------------------------

const live = new LiveTopics();
let running: string | null = null;

function labBase(): Record<string, unknown> {
  const f = new FormData($('lab-form') as HTMLFormElement);
  return { symbol: f.get('symbol'), timeframe: f.get('timeframe'), count: Number(f.get('count')), seed: Number(f.get('seed')) };
}
const labStrategy = () => ($('lab-strategy') as HTMLSelectElement).value;
/** A walk-forward window as readable dates: "2026-01-02 09:00 – 2026-01-04 13:15 KST". */
const span = (from: string, to: string) => kstSpan(from, to);
const labObjective = () => ($('lab-objective') as HTMLSelectElement).value;

async function runJob(path: string, body: Record<string, unknown>): Promise<any> {
  const job = `ui-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const bar = $('lab-progress') as HTMLProgressElement;
  bar.value = 0;
  bar.max = 1;
  $('lab-progress-text').textContent = 'starting…';
  $('lab-error').textContent = '';
  const off = live.on(`job:${job}`, (d) => {
    const p = d as { done: number; total: number; state: string };
    bar.max = p.total || 1;
    bar.value = p.done;
    $('lab-progress-text').textContent = `${p.done} / ${p.total} ${jobStateWords(p.state)}`;
  });
  running = job;
  ($('bt-cancel') as HTMLButtonElement).disabled = false;
  document.body.dataset.job = 'running';
  try {
    const out = await send(path, { ...body, job_id: job });
    bar.value = bar.max;
    $('lab-progress-text').textContent = 'done';
    return out;
  } catch (err) {
    // a job cancelled on purpose is not an error
    if ((err as { code?: string }).code === 'cancelled') {
      $('lab-progress-text').textContent = '취소됨 · cancelled';
      document.body.dataset.jobResult = 'cancelled';
    } else {
      $('lab-error').textContent = (err as Error).message;
      $('lab-progress-text').textContent = '';
    }
    return null;
  } finally {
    off();
    running = null;
    ($('bt-cancel') as HTMLButtonElement).disabled = true;
    document.body.dataset.job = 'idle';
  }
}

/** A result table; a heading given as [label, key] shows the label and keeps the API's key in its title. */
function table(head: (string | [string, string])[], rows: (string | number | Node)[][], attrs: Record<string, string> = {}): HTMLTableElement {
  return el(
    'table',
    attrs,
    el('thead', {}, el('tr', {}, ...head.map((h) => (typeof h === 'string' ? el('th', { scope: 'col' }, h) : el('th', { scope: 'col', title: h[1], 'data-key': h[1] }, h[0]))))),
    el('tbody', {}, ...rows.map((r) => el('tr', {}, ...r.map((c) => el('td', {}, typeof c === 'number' ? nf.format(c) : c))))),
  );
}


const METRICS = ['trades', 'win_rate', 'profit_factor', 'net_profit', 'sharpe', 'max_drawdown'] as const;

$('bt-run').addEventListener('click', async () => {
  const r = await runJob('/api/program/backtest', { ...labBase(), strategy: labStrategy(), equity_points: 2000, trades_limit: 10_000 });
  if (!r) return;
  renderBacktest($('lab-result'), r as BacktestAnswer);
});

$('bt-compare').addEventListener('click', async () => {
  const r = await runJob('/api/program/backtest-compare', { ...labBase(), objective: labObjective(), equity_points: 150 });
  if (!r) return;
  // the chart draws the strategies in the table's (ranked) order, so each row's swatch is its line's colour
  const ranked = r.ranking as { index: number; strategy: string; score: number }[];
  const swatch = (k: number) => {
    const s = el('span', { class: 'swatch', 'aria-hidden': 'true' });
    s.style.background = COLORS[k % COLORS.length]!;
    return el('span', {}, s, String(k + 1));
  };
  $('lab-result').replaceChildren(
    // the candles' checksum is for tools, not people: kept in the heading's data, not its words
    el('h3', { 'data-candles': r.candles.checksum }, `비교 compare · 목표 objective ${metricWords(r.objective)} · ${r.candles.symbol} ${r.candles.timeframe}`),
    table(
      ['순위 rank', '전략 strategy', [`점수 score (${metricWords(r.objective)})`, 'score'], ...METRICS.map((m): [string, string] => [metricWords(m), m])],
      // the score of max_drawdown is its negative (higher is better): shown as the drawdown itself
      ranked.map((x, i) => [swatch(i), strategyWords(x.strategy), metricText(r.objective, r.objective === 'max_drawdown' ? -x.score : x.score), ...METRICS.map((m) => metricText(m, r.results[x.index].metrics[m]))]),
      { id: 'compare-table' },
    ),
    lineChart('compare-chart', ranked.map((x) => r.results[x.index].equity_curve)),
  );
});

$('bt-optimize').addEventListener('click', async () => {
  const strategy = labStrategy();
  const r = await runJob('/api/program/optimize', { ...labBase(), strategy, objective: labObjective() });
  if (!r) return;
  const obj = r.objective as string;
  const heat = heatmap(r.results as OptimizeRow[], obj);
  $('lab-result').replaceChildren(
    el('h3', {}, `최적화 optimize ${strategy}: 조합 ${r.combinations} combinations (${r.skipped} skipped), 목표 ${metricWords(obj)}; 최적 best ${Object.entries(r.best.params as Record<string, number>).map(([k, v]) => `${k}=${v}`).join(', ')}`),
    heat,
  );
});

$('bt-walk').addEventListener('click', async () => {
  const base = labBase();
  const count = base.count as number;
  const r = await runJob('/api/program/walkforward', {
    ...base,
    strategy: labStrategy(),
    in_sample: Math.floor(count * 0.3),
    out_of_sample: Math.floor(count * 0.1),
  });
  if (!r) return;
  const s = r.summary;
  $('lab-result').replaceChildren(
    el('h3', {}, `워크포워드 walk-forward: 구간 ${s.windows} windows, 견고성 robustness ${nf.format(s.robustness_score)}, 검증 순손익 OOS net ${usd(s.oos_net_profit)}`),
    table(
      ['구간 window', '학습 구간 in-sample', '최적 파라미터 best params', ['학습 순손익 IS net', 'in_sample.net_profit'], '검증 구간 out-of-sample', ['검증 순손익 OOS net', 'out_of_sample.net_profit'], ['효율 efficiency', 'efficiency']],
      r.windows.map((w: any) => [w.index + 1, span(w.in_sample.from, w.in_sample.to), Object.entries(w.in_sample.best_params as Record<string, number>).map(([k, v]) => `${k}=${v}`).join(', '), usd(w.in_sample.metrics.net_profit), span(w.out_of_sample.from, w.out_of_sample.to), usd(w.out_of_sample.metrics.net_profit), w.efficiency == null ? '—' : pct(w.efficiency)]),
      { id: 'wf-table' },
    ),
  );
});

$('bt-mc').addEventListener('click', async () => {
  const r = await runJob('/api/program/montecarlo', { ...labBase(), strategy: labStrategy(), runs: 500 });
  if (!r) return;
  const fe = r.final_equity as Record<string, number>;
  const bm = r.backtest.metrics ?? r.backtest;
  const fan = fanChart(bm.final_equity - bm.net_profit, fe, r.lowest_equity as Record<string, number>, r.trades);
  $('lab-result').replaceChildren(
    el('h3', {}, `몬테카를로 Monte Carlo: 거래 ${r.trades}건을 ${r.runs}번 섞음 (${r.runs} shuffles of ${r.trades} trades), 파산 확률 probability of ruin ${pct(r.probability_of_ruin)}`),
    fan,
    table(['', 'p5', 'p25', 'p50', 'p75', 'p95'], [
      [metricWords('final_equity'), ...(['p5', 'p25', 'p50', 'p75', 'p95'] as const).map((k) => usd(fe[k]))],
      [metricWords('max_drawdown'), ...(['p5', 'p25', 'p50', 'p75', 'p95'] as const).map((k) => pct(r.max_drawdown[k] as number))],
    ], { id: 'mc-table' }),
  );
});

$('bt-cancel').addEventListener('click', () => {
  if (running) void session.fetch(`/api/program/jobs/${running}/cancel`, { method: 'POST' });
});

// ---- start ----------------------------------------------------------------------------------------

let started = false;

/** Runs once a trader is signed in: the forms come from the list answer. */
async function start(): Promise<void> {
  await loadList();
  connectStream();
  if (started) return;
  started = true;
  const strategies = info.strategies.map((s) => ({ value: s.id, label: strategyWords(s.id) }));
  const symbols = info.symbols.map((s) => ({ value: s, label: s }));
  options($('cf-strategy') as HTMLSelectElement, strategies);
  options($('cf-symbol') as HTMLSelectElement, symbols);
  options($('lab-strategy') as HTMLSelectElement, strategies);
  options($('lab-symbol') as HTMLSelectElement, symbols);
  $('cf-strategy').addEventListener('change', fillParams);
  fillParams();
  document.body.dataset.ready = 'true';
}

function main(): void {
  mountSignIn($('signin'), session, 'trader');
  session.onChange((me) => {
    $('programs-error').textContent = me ? '' : '트레이더로 로그인하세요 · sign in as a trader';
    if (!me) {
      // signed out (here, or the token refused by any request): the stream ends and says so
      stream?.close();
      stream = undefined;
      $('conn').classList.remove('on');
      programs.clear();
      if (info) renderPrograms();
      // the signed-out view is drawn ('true' stays for a trader's forms, which start() marks)
      document.body.dataset.ready ??= 'signed-out';
      return;
    }
    void start().catch((err) => {
      $('programs-error').textContent = String(err instanceof Error ? err.message : err);
    });
  });
  void session.restore();
}

main();
