import { Session, mountSignIn } from '../common/auth.js';
import { demoSignIn } from '../common/demo-sign-in.js';
import { LiveTopics } from '../common/live.js';
import { ApiError, problemText, type Answer, type Body } from '../common/api.js';
import { byId, copyButton, el, kstSpan, kstTime, notice, problem } from '../common/ui.js';
import { LiveCandles } from './charts.js';
import { fanChart } from './fan.js';
import { COLORS, lineChart, plot } from './svgchart.js';
import { heatmap, type OptimizeRow } from './heatmap.js';
import { renderBacktest, type BacktestAnswer } from './report-view.js';
import { jobStateWords, logWords, metricText, metricWords, pct, reasonWords, stateWords, strategyWords, usd } from './words.js';

/** The trading dashboard: live programs (SSE /api/program/stream) and the backtest lab (job progress on WebSocket job:<id>). */

// wire types: the answers the routes declare (src/trading/routes-programs.ts), read through the client
type ListAnswer = Answer<'GET', '/api/program/list'>;
type Program = ListAnswer['programs'][number];
type LogEntry = Answer<'GET', '/api/program/logs/:id'>['logs'][number];
type Signal = Pick<Answer<'GET', '/api/program/logs/:id'>['signals'][number], 't' | 'action' | 'price'>;
/** A strategy's parameters as the list answer describes them (JSON Schema, declared as a record there). */
interface JsonSchema { properties?: Record<string, { type?: string; minimum?: number; maximum?: number; default?: number }> }
/** The stream's tick entries (an SSE event: no answer schema). */
interface TickEntry { program: string; price: number | null; equity: number; pnl: number; position: Program['stats']['position']; open_positions: number }

const nf = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });
/** Log and signal times: KST, the zone written (web/common/time.ts). */
const time = (t: number) => kstTime(t);

let info: ListAnswer;
const programs = new Map<string, Program>();
let selected: string | null = null;
let equity: { t: number; equity: number }[] = [];
const liveCandles = new LiveCandles(byId('live-candles'));

/** Programs belong to the trader who signed in (an operator sees all); the token stays in this tab. */
const session = new Session('trading:token');
await demoSignIn(session); // a signed-in link from the demo tour (DEMO=1 only)

/** The API with the session's token (web/common/api.ts): every call of this page goes through it. */
const api = session.api;

/** A refusal for a person: its message, and the fields a 400 names (the lab's bodies are built from forms). */
function refusal(err: unknown): string {
  const fields = err instanceof ApiError ? Object.entries(err.fields) : [];
  return fields.length ? `${problemText(err)} (${fields.map(([f, m]) => `${f}: ${m}`).join('; ')})` : problemText(err);
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
  const body = byId('programs');
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
  info = await api.get('/api/program/list');
  programs.clear();
  for (const p of info.programs) programs.set(p.id, p);
  if (selected && !programs.has(selected)) select(null);
  renderPrograms();
}

byId('programs').addEventListener('click', async (ev) => {
  const target = ev.target as HTMLElement;
  const tr = target.closest('tr[data-id]') as HTMLElement | null;
  if (!tr) return;
  const id = tr.dataset.id!;
  const move = (target.closest('button[data-move]') as HTMLElement | null)?.dataset.move as 'start' | 'pause' | 'stop' | 'delete' | undefined;
  notice(byId('programs-error'), 'error', '');
  if (!move) return void select(id);
  try {
    await api.post(`/api/program/${move}`, { body: { id } });
    await loadList();
  } catch (err) {
    problem(byId('programs-error'), err);
  }
});

async function select(id: string | null): Promise<void> {
  selected = id;
  for (const tr of document.querySelectorAll<HTMLElement>('#programs tr[data-id]')) tr.classList.toggle('selected', tr.dataset.id === id);
  byId('detail-name').textContent = id ? (programs.get(id)?.name ?? id) : '— select a program';
  byId('log').replaceChildren();
  byId('signals').replaceChildren();
  equity = [];
  drawEquity();
  liveCandles.reset();
  void showAlert(id);
  if (!id) return;
  const [logs, recent] = await Promise.all([
    api.get('/api/program/logs/:id', { params: { id } }),
    api.get('/api/program/bars/:id', { params: { id } }),
  ]);
  if (selected !== id) return;
  liveCandles.history(recent.bars);
  for (const l of logs.logs) addLog(l);
  for (const s of logs.signals) addSignal(s);
  equity = logs.equity;
  drawEquity();
}

function addLog(l: LogEntry): void {
  byId('log').prepend(el('li', { 'data-level': l.level, 'data-code': l.code }, `${time(l.t)} ${logWords(l)}`));
}
function addSignal(s: Signal): void {
  byId('signals').prepend(el('li', { 'data-action': s.action }, `${time(s.t)} ${s.action} @ ${nf.format(s.price)}`));
}

function drawEquity(): void {
  const chart = byId('equity-chart') as unknown as SVGSVGElement;
  chart.replaceChildren();
  const pts = equity.slice(-300);
  chart.dataset.points = String(pts.length);
  if (pts.length < 2) return;
  plot(chart, [pts]);
}

// ---- create form ----------------------------------------------------------------------------------

function fillParams(): void {
  const s = info.strategies.find((x) => x.id === (byId('cf-strategy') as HTMLSelectElement).value)!;
  byId('cf-description').textContent = s.description;
  const set = byId('cf-params');
  set.replaceChildren(el('legend', {}, '파라미터 parameters'));
  for (const [name, p] of Object.entries((s.params as JsonSchema).properties ?? {})) {
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

byId('create-form').addEventListener('submit', async (ev) => {
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
  notice(byId('cf-error'), 'error', '');
  try {
    const name = String(f.get('name') ?? '').trim();
    const body = { ...(name ? { name } : {}), strategy: f.get('strategy'), symbol: f.get('symbol'), params, settings } as Body<'POST', '/api/program/create'>;
    const out = await api.post('/api/program/create', { body });
    await loadList();
    await select(out.program.id);
  } catch (err) {
    notice(byId('cf-error'), 'error', refusal(err));
  }
});

// ---- the selected program's alert (PUT/GET/DELETE /api/program/alert/:id) --------------------------

/** The alert routes declare no answer schema (docs/trading.md "Alerts"): `{alert}`, the secret only when set. */
interface Alert { program: string; url: string; events: ('signal' | 'trade' | 'status')[]; secret?: string; created_by: string; created_at: string }
const ALERT_EVENT_WORDS: Record<string, string> = { signal: '신호', trade: '체결', status: '상태 변경' };
let alertOf: string | null = null;

function alertShown(alert: Alert | undefined): void {
  const box = byId('alert-current');
  (byId('alert-remove') as HTMLButtonElement).disabled = !alert;
  box.dataset.state = alert ? 'set' : 'none';
  if (!alert) {
    box.textContent = '설정된 알림이 없습니다.';
    return;
  }
  box.replaceChildren('현재 알림: ', el('code', { id: 'alert-current-url' }, alert.url), ` · ${alert.events.map((e) => ALERT_EVENT_WORDS[e] ?? e).join(', ')} · ${kstTime(Date.parse(alert.created_at))} 설정`);
  (byId('alert-url') as HTMLInputElement).value = alert.url;
  for (const b of document.querySelectorAll<HTMLInputElement>('#alert-events input')) b.checked = alert.events.includes(b.value as Alert['events'][number]);
}

/** The program's alert, read when it is selected (none: 404 alert_not_found, shown as no alert). */
async function showAlert(id: string | null): Promise<void> {
  alertOf = id;
  const section = byId('alert');
  section.hidden = !id;
  byId('alert-secret').hidden = true;
  notice(byId('alert-notice'), 'info', '');
  if (!id) return;
  try {
    const { alert } = (await api.get('/api/program/alert/:id', { params: { id } })) as { alert: Alert };
    if (alertOf === id) alertShown(alert);
  } catch (err) {
    if (alertOf !== id) return;
    if (err instanceof ApiError && err.code === 'alert_not_found') alertShown(undefined);
    else problem(byId('alert-notice'), err);
  }
}

byId('alert-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const id = alertOf;
  if (!id) return;
  const url = byId<HTMLInputElement>('alert-url');
  const events = [...document.querySelectorAll<HTMLInputElement>('#alert-events input:checked')].map((b) => b.value as Alert['events'][number]);
  url.removeAttribute('aria-invalid');
  if (!url.value.trim() || !url.checkValidity()) {
    url.setAttribute('aria-invalid', 'true');
    notice(byId('alert-notice'), 'error', 'http 또는 https로 시작하는 웹훅 주소를 적으세요.');
    return url.focus();
  }
  if (events.length === 0) return notice(byId('alert-notice'), 'error', '보낼 알림을 하나 이상 고르세요.');
  try {
    const { alert } = (await api.put('/api/program/alert/:id', { params: { id }, body: { url: url.value.trim(), events } })) as { alert: Alert };
    if (alertOf !== id) return;
    alertShown(alert);
    // the secret comes in this answer only: shown once, with a copy button
    byId('alert-secret-value').textContent = alert.secret ?? '';
    byId('alert-secret-copy').replaceChildren(copyButton(() => alert.secret ?? '', '비밀 키 복사'));
    byId('alert-secret').hidden = !alert.secret;
    notice(byId('alert-notice'), 'ok', '알림을 저장했습니다. 비밀 키는 다시 보이지 않습니다.');
  } catch (err) {
    if (err instanceof ApiError && err.fields.url) url.setAttribute('aria-invalid', 'true');
    problem(byId('alert-notice'), err);
  }
});

byId('alert-remove').addEventListener('click', async () => {
  const id = alertOf;
  if (!id) return;
  try {
    await api.delete('/api/program/alert/:id', { params: { id } });
    if (alertOf !== id) return;
    alertShown(undefined);
    byId('alert-secret').hidden = true;
    notice(byId('alert-notice'), 'ok', '알림을 삭제했습니다.');
  } catch (err) {
    problem(byId('alert-notice'), err);
  }
});

// ---- the stream -----------------------------------------------------------------------------------

let stream: EventSource | undefined;

/** The signed-in trader's programs (an operator's: all); EventSource cannot set headers, so the token goes as access_token. */
function connectStream(): void {
  stream?.close();
  const es = (stream = new EventSource(`/api/program/stream?access_token=${encodeURIComponent(session.token ?? '')}`));
  es.onopen = () => byId('conn').classList.add('on');
  es.onerror = () => byId('conn').classList.remove('on');
  let reload: number | undefined;
  const later = () => {
    clearTimeout(reload);
    // a reload that fails (signed out meanwhile: the session shows the sign-in form) says so in place
    reload = window.setTimeout(() => void loadList().catch((err) => (session.token ? problem(byId('programs-error'), err) : notice(byId('programs-error'), 'info', '트레이더로 로그인하세요 · sign in as a trader'))), 150);
  };
  // the events missed while disconnected are no longer known: reload what the page shows
  es.addEventListener('reset', () => later());
  // the hub ends the stream of a token that is no longer valid: stop, and let the session check
  // show the sign-in form (signing in again reconnects)
  es.addEventListener('closed', () => {
    es.close();
    byId('conn').classList.remove('on');
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
  const f = new FormData(byId('lab-form') as HTMLFormElement);
  // a data set of the trader's names its own symbol, timeframe and bars
  const dataset = f.get('dataset');
  if (dataset) return { dataset, seed: Number(f.get('seed')) };
  return { symbol: f.get('symbol'), timeframe: f.get('timeframe'), count: Number(f.get('count')), seed: Number(f.get('seed')) };
}
/** The bars a walk-forward splits: the data set's, or the count asked for. */
const labBars = (): number => {
  const ds = datasets.find((d) => d.id === (byId('lab-data') as HTMLSelectElement).value);
  return ds ? ds.bars : Number(new FormData(byId('lab-form') as HTMLFormElement).get('count'));
};
const labStrategy = () => (byId('lab-strategy') as HTMLSelectElement).value;
/** A walk-forward window as readable dates: "2026-01-02 09:00 – 2026-01-04 13:15 KST". */
const span = (from: string, to: string) => kstSpan(from, to);
const labObjective = () => (byId('lab-objective') as HTMLSelectElement).value;

/** The lab's five analyses: their bodies are built from the lab's form (checked by the route's schema). */
type LabPath = '/api/program/backtest' | '/api/program/backtest-compare' | '/api/program/optimize' | '/api/program/walkforward' | '/api/program/montecarlo';

async function runJob(path: LabPath, body: Record<string, unknown>): Promise<any> {
  const job = `ui-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const bar = byId('lab-progress') as HTMLProgressElement;
  bar.value = 0;
  bar.max = 1;
  byId('lab-progress-text').textContent = 'starting…';
  notice(byId('lab-error'), 'error', '');
  const off = live.on(`job:${job}`, (d) => {
    const p = d as { done: number; total: number; state: string };
    bar.max = p.total || 1;
    bar.value = p.done;
    byId('lab-progress-text').textContent = `${p.done} / ${p.total} ${jobStateWords(p.state)}`;
  });
  running = job;
  (byId('bt-cancel') as HTMLButtonElement).disabled = false;
  document.body.dataset.job = 'running';
  try {
    const out = await api.post(path, { body: { ...body, job_id: job } as Body<'POST', LabPath> });
    bar.value = bar.max;
    byId('lab-progress-text').textContent = 'done';
    void loadRuns(); // the run was kept
    return out;
  } catch (err) {
    // a job cancelled on purpose is not an error
    if (err instanceof ApiError && err.code === 'cancelled') {
      byId('lab-progress-text').textContent = '취소됨 · cancelled';
      document.body.dataset.jobResult = 'cancelled';
    } else {
      notice(byId('lab-error'), 'error', refusal(err));
      byId('lab-progress-text').textContent = '';
    }
    return null;
  } finally {
    off();
    running = null;
    (byId('bt-cancel') as HTMLButtonElement).disabled = true;
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

byId('bt-run').addEventListener('click', async () => {
  const r = await runJob('/api/program/backtest', { ...labBase(), strategy: labStrategy(), equity_points: 2000, trades_limit: 10_000 });
  if (!r) return;
  renderBacktest(byId('lab-result'), r as BacktestAnswer);
});

byId('bt-compare').addEventListener('click', async () => {
  const r = await runJob('/api/program/backtest-compare', { ...labBase(), objective: labObjective(), equity_points: 150 });
  if (r) renderCompare(r);
});

function renderCompare(r: any): void {
  // the chart draws the strategies in the table's (ranked) order, so each row's swatch is its line's colour
  const ranked = r.ranking as { index: number; strategy: string; score: number }[];
  const swatch = (k: number) => {
    const s = el('span', { class: 'swatch', 'aria-hidden': 'true' });
    s.style.background = COLORS[k % COLORS.length]!;
    return el('span', {}, s, String(k + 1));
  };
  byId('lab-result').replaceChildren(
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
}

byId('bt-optimize').addEventListener('click', async () => {
  const constraint = (byId('lab-constraint') as HTMLInputElement).value.trim();
  const r = await runJob('/api/program/optimize', { ...labBase(), strategy: labStrategy(), objective: labObjective(), ...(constraint ? { constraint } : {}) });
  if (r) renderOptimize(r);
});

function renderOptimize(r: any): void {
  const obj = r.objective as string;
  const heat = heatmap(r.results as OptimizeRow[], obj);
  const best = r.best ? Object.entries(r.best.params as Record<string, number>).map(([k, v]) => `${k}=${v}`).join(', ') : '—';
  byId('lab-result').replaceChildren(
    el('h3', { 'data-best': best }, `최적화 optimize ${r.strategy}: 조합 ${r.combinations} combinations (${r.skipped} skipped${r.constraint ? `, ${r.constrained} outside ${r.constraint}` : ''}), 목표 ${metricWords(obj)}; 최적 best ${best}`),
    heat,
  );
}

byId('bt-walk').addEventListener('click', async () => {
  const count = labBars();
  const r = await runJob('/api/program/walkforward', {
    ...labBase(),
    strategy: labStrategy(),
    in_sample: Math.floor(count * 0.3),
    out_of_sample: Math.floor(count * 0.1),
  });
  if (r) renderWalk(r);
});

function renderWalk(r: any): void {
  const s = r.summary;
  byId('lab-result').replaceChildren(
    el('h3', {}, `워크포워드 walk-forward: 구간 ${s.windows} windows, 견고성 robustness ${nf.format(s.robustness_score)}, 검증 순손익 OOS net ${usd(s.oos_net_profit)}`),
    table(
      ['구간 window', '학습 구간 in-sample', '최적 파라미터 best params', ['학습 순손익 IS net', 'in_sample.net_profit'], '검증 구간 out-of-sample', ['검증 순손익 OOS net', 'out_of_sample.net_profit'], ['효율 efficiency', 'efficiency']],
      r.windows.map((w: any) => [w.index + 1, span(w.in_sample.from, w.in_sample.to), Object.entries(w.in_sample.best_params as Record<string, number>).map(([k, v]) => `${k}=${v}`).join(', '), usd(w.in_sample.metrics.net_profit), span(w.out_of_sample.from, w.out_of_sample.to), usd(w.out_of_sample.metrics.net_profit), w.efficiency == null ? '—' : pct(w.efficiency)]),
      { id: 'wf-table' },
    ),
  );
}

byId('bt-mc').addEventListener('click', async () => {
  const r = await runJob('/api/program/montecarlo', { ...labBase(), strategy: labStrategy(), runs: 500 });
  if (r) renderMonteCarlo(r);
});

function renderMonteCarlo(r: any): void {
  const fe = r.final_equity as Record<string, number>;
  const bm = r.backtest.metrics ?? r.backtest;
  const fan = fanChart(bm.final_equity - bm.net_profit, fe, r.lowest_equity as Record<string, number>, r.trades);
  byId('lab-result').replaceChildren(
    el('h3', {}, `몬테카를로 Monte Carlo: 거래 ${r.trades}건을 ${r.runs}번 섞음 (${r.runs} shuffles of ${r.trades} trades), 파산 확률 probability of ruin ${pct(r.probability_of_ruin)}`),
    fan,
    table(['', 'p5', 'p25', 'p50', 'p75', 'p95'], [
      [metricWords('final_equity'), ...(['p5', 'p25', 'p50', 'p75', 'p95'] as const).map((k) => usd(fe[k]))],
      [metricWords('max_drawdown'), ...(['p5', 'p25', 'p50', 'p75', 'p95'] as const).map((k) => pct(r.max_drawdown[k] as number))],
    ], { id: 'mc-table' }),
  );
}

// ---- my data sets and saved runs ------------------------------------------------------------------

// the data set and saved-run routes declare no answer schema (docs/trading.md "Data sets", "Saved runs")
interface Dataset { id: string; name: string; symbol: string; timeframe: string; bars: number; first: string; last: string; gaps: { count: number; missing_bars: number }; hash: string }
interface RunSummary { id: string; kind: string; created_at: string; strategy: string | null; candles: { symbol?: string; timeframe?: string; count?: number; dataset?: string }; figures: Record<string, number | null> }
let datasets: Dataset[] = [];
let savedRuns: RunSummary[] = [];

async function loadDatasets(): Promise<void> {
  datasets = ((await api.get('/api/program/datasets')) as { datasets: Dataset[] }).datasets;
  byId('ds-list').replaceChildren(
    ...datasets.map((d) => {
      const del = el('button', { type: 'button', class: 'small ghost', 'data-delete': d.id }, '삭제 delete');
      del.addEventListener('click', async () => {
        try {
          await api.delete('/api/program/datasets/:id', { params: { id: d.id } });
        } catch (err) {
          problem(byId('ds-error'), err);
        }
        await loadDatasets();
      });
      return el(
        'tr',
        { 'data-id': d.id },
        el('td', { class: 'name' }, d.name),
        el('td', { 'data-label': '계약' }, `${d.symbol} ${d.timeframe}`),
        el('td', { 'data-label': '봉 bars', 'data-bars': String(d.bars) }, nf.format(d.bars)),
        el('td', { 'data-label': '기간' }, span(d.first, d.last)),
        el('td', { 'data-label': '빈 구간 gaps' }, d.gaps.count ? `${nf.format(d.gaps.count)} (${nf.format(d.gaps.missing_bars)} bars)` : '없음 none'),
        el('td', { 'data-label': 'hash', title: d.hash }, el('code', {}, d.hash.slice(0, 12))),
        el('td', {}, del),
      );
    }),
  );
  const pick = byId('lab-data') as HTMLSelectElement;
  const was = pick.value;
  options(pick, [{ value: '', label: '합성 시세 synthetic' }, ...datasets.map((d) => ({ value: d.id, label: `${d.name} (${d.symbol} ${d.timeframe}, ${nf.format(d.bars)})` }))]);
  if (datasets.some((d) => d.id === was)) pick.value = was;
}

byId('ds-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const form = new FormData(ev.target as HTMLFormElement);
  if (!form.get('timeframe')) form.delete('timeframe');
  notice(byId('ds-error'), 'error', '');
  let out: { dataset: Dataset };
  try {
    out = (await api.upload('POST', '/api/program/datasets', { form })) as { dataset: Dataset };
  } catch (err) {
    // a refused CSV names its problems by kind (details.problems): the counts follow the message
    // and the first bad line as the server names it (line number, problem, values)
    const details = err instanceof ApiError ? (err.details as { problems?: Record<string, number>; first?: unknown } | undefined) : undefined;
    const line = details?.first && err instanceof ApiError ? ` — ${err.serverMessage}` : '';
    const counts = details?.problems && !line.includes('problem') ? ` [${Object.entries(details.problems).map(([k, v]) => `${k} ${v}`).join(', ')}]` : '';
    notice(byId('ds-error'), 'error', `${refusal(err)}${line}${counts}`);
    return;
  }
  (ev.target as HTMLFormElement).reset();
  await loadDatasets();
  (byId('lab-data') as HTMLSelectElement).value = out.dataset.id;
});

const dataName = (c: RunSummary['candles']) => (c.dataset ? (datasets.find((d) => d.id === c.dataset)?.name ?? c.dataset) : `${c.symbol} ${c.timeframe} × ${c.count}`);
const KIND_WORDS: Record<string, string> = { backtest: '백테스트 backtest', compare: '비교 compare', optimize: '최적화 optimize', walkforward: '워크포워드 walk-forward', montecarlo: '몬테카를로 Monte Carlo' };
const fig = (v: number | null | undefined, k: string) => (v == null ? '—' : k === 'net_profit' ? usd(v) : nf.format(v));

async function loadRuns(): Promise<void> {
  savedRuns = ((await api.get('/api/program/runs')) as { runs: RunSummary[] }).runs;
  byId('runs-list').replaceChildren(
    ...savedRuns.map((r) => {
      const pickBox = el('input', { type: 'checkbox', 'data-pick': r.id, 'aria-label': `${KIND_WORDS[r.kind]} ${r.created_at} 비교 compare` });
      const open = el('button', { type: 'button', class: 'small', 'data-open': r.id }, '열기 open');
      open.addEventListener('click', () => void openRun(r.id));
      const del = el('button', { type: 'button', class: 'small ghost', 'data-delete': r.id }, '삭제 delete');
      del.addEventListener('click', async () => {
        try {
          await api.delete('/api/program/runs/:id', { params: { id: r.id } });
        } catch (err) {
          problem(byId('runs-error'), err);
        }
        await loadRuns();
      });
      const buttons: HTMLElement[] = [open];
      if (r.strategy && r.kind !== 'compare' && r.kind !== 'walkforward') {
        const go = el('button', { type: 'button', class: 'small', 'data-program': r.id }, '프로그램 시작 start a program');
        go.addEventListener('click', () => void programFromRun(r.id));
        buttons.push(go);
      }
      buttons.push(del);
      return el(
        'tr',
        { 'data-id': r.id, 'data-kind': r.kind },
        el('td', {}, pickBox),
        el('td', { 'data-label': '시각' }, kstTime(Date.parse(r.created_at))),
        el('td', { 'data-label': '종류' }, KIND_WORDS[r.kind] ?? r.kind),
        el('td', { 'data-label': '전략' }, r.strategy ? strategyWords(r.strategy) : '—'),
        el('td', { 'data-label': '데이터' }, dataName(r.candles)),
        el('td', { 'data-label': '순손익', 'data-key': 'net_profit' }, fig(r.figures.net_profit, 'net_profit')),
        el('td', { 'data-label': 'Sharpe' }, fig(r.figures.sharpe, 'sharpe')),
        el('td', { 'data-label': '체결' }, fig(r.figures.trades, 'trades')),
        el('td', {}, ...buttons),
      );
    }),
  );
}

async function openRun(id: string): Promise<void> {
  byId('runs-error').textContent = '';
  const { run } = (await api.get('/api/program/runs/:id', { params: { id } })) as { run: RunSummary & { result: any; trimmed: string[] } };
  const r = run.result;
  document.body.dataset.openRun = id;
  if (run.trimmed.includes('result')) {
    byId('lab-result').replaceChildren(el('p', { class: 'muted' }, '이 실행의 결과는 너무 커서 수치만 저장됨 · only the figures of this run were kept'));
  } else if (run.kind === 'backtest' && r.trades) renderBacktest(byId('lab-result'), r as BacktestAnswer);
  else if (run.kind === 'compare') renderCompare(r);
  else if (run.kind === 'optimize' && r.results) renderOptimize(r);
  else if (run.kind === 'walkforward' && r.windows) renderWalk(r);
  else if (run.kind === 'montecarlo') renderMonteCarlo(r);
  byId('lab-result').prepend(el('p', { class: 'muted', id: 'opened-run' }, `저장된 실행 saved run ${KIND_WORDS[run.kind]} · ${kstTime(Date.parse(run.created_at))} · ${dataName(run.candles)}`));
  byId('lab').scrollIntoView();
}

/** A live program with the run's strategy, parameters (the best for an optimization), settings and contract. */
async function programFromRun(id: string): Promise<void> {
  notice(byId('runs-error'), 'error', '');
  try {
    const { run } = (await api.get('/api/program/runs/:id', { params: { id } })) as { run: RunSummary & { request: any; result: any } };
    const params = run.kind === 'optimize' ? run.result.best?.params : run.result.params ?? run.request.params;
    const body = {
      name: `${run.strategy} · ${id.slice(2, 8)}`,
      strategy: run.strategy,
      symbol: run.candles.symbol,
      params: params ?? {},
      settings: run.request.settings ?? {},
    } as Body<'POST', '/api/program/create'>;
    const { program } = await api.post('/api/program/create', { body });
    await api.post('/api/program/start', { body: { id: program.id } });
    await loadList();
    document.body.dataset.programFromRun = program.id;
  } catch (err) {
    notice(byId('runs-error'), 'error', refusal(err));
  }
}

byId('runs-compare').addEventListener('click', () => {
  const picked = [...document.querySelectorAll<HTMLInputElement>('#runs-list input[data-pick]:checked')].map((b) => savedRuns.find((r) => r.id === b.dataset.pick)!).filter(Boolean);
  if (picked.length < 2) {
    notice(byId('runs-error'), 'error', '둘 이상 고르세요 · pick two or more runs');
    return;
  }
  notice(byId('runs-error'), 'error', '');
  const keys = [...new Set(picked.flatMap((r) => Object.keys(r.figures)))];
  byId('runs-side').replaceChildren(
    table(
      ['', ...picked.map((r) => `${KIND_WORDS[r.kind]} ${kstTime(Date.parse(r.created_at))}`)],
      [
        ['전략 strategy', ...picked.map((r) => (r.strategy ? strategyWords(r.strategy) : '—'))],
        ['데이터 data', ...picked.map((r) => dataName(r.candles))],
        ...keys.map((k) => [metricWords(k), ...picked.map((r) => fig(r.figures[k], k))]),
      ],
      { id: 'runs-side-table' },
    ),
  );
});

byId('bt-cancel').addEventListener('click', () => {
  if (running) void api.post('/api/program/jobs/:id/cancel', { params: { id: running } }).catch((err: unknown) => problem(byId('lab-error'), err));
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
  options(byId('cf-strategy') as HTMLSelectElement, strategies);
  options(byId('cf-symbol') as HTMLSelectElement, symbols);
  options(byId('lab-strategy') as HTMLSelectElement, strategies);
  options(byId('lab-symbol') as HTMLSelectElement, symbols);
  options(byId('ds-symbol') as HTMLSelectElement, symbols);
  await Promise.all([loadDatasets(), loadRuns()]);
  byId('cf-strategy').addEventListener('change', fillParams);
  fillParams();
  document.body.dataset.ready = 'true';
}

function main(): void {
  mountSignIn(byId('signin'), session, 'trader');
  session.onChange((me) => {
    byId('programs-error').textContent = me ? '' : '트레이더로 로그인하세요 · sign in as a trader';
    if (!me) {
      // signed out (here, or the token refused by any request): the stream ends and says so
      stream?.close();
      stream = undefined;
      byId('conn').classList.remove('on');
      programs.clear();
      if (info) renderPrograms();
      // the signed-out view is drawn ('true' stays for a trader's forms, which start() marks)
      document.body.dataset.ready ??= 'signed-out';
      return;
    }
    void start().catch((err) => problem(byId('programs-error'), err));
  });
  void session.restore();
}

main();
