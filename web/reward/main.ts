import { publicApi, problemText, type Answer } from '../common/api.js';
import { LiveTopics } from '../common/live.js';
import type { buildSpec } from '../../src/reward/guide.js';
import { byId as $, el } from '../common/ui.js';

type Stats = Answer<'GET', '/stats'>;
type Maturity = Answer<'GET', '/maturity'>;
type Principle = Answer<'GET', '/declare'>['principles'][number];
type Reserve = Answer<'GET', '/api/reward/reserve'>;
type Simulation = Answer<'GET', '/api/reward/simulation'>;
// the spec as the service builds it (its answer's schema leaves the tables open)
type Spec = ReturnType<typeof buildSpec>;
interface RewardEvent {
  type: 'work' | 'exchange' | 'member' | 'culture';
  id: string;
  at: string;
  stats: Stats;
  [k: string]: unknown;
}

const nf = new Intl.NumberFormat('ko-KR', { maximumFractionDigits: 2 });
/** A rate; none (null: nothing to cover yet) is said in words, not as a code or a dash. */
const pct = (v: number | null) => (v === null ? '부족분 없음 · nothing to cover' : `${nf.format(v)}%`);
const COLORS = { member: 'var(--member)', ecosystem: 'var(--eco)', reserve: 'var(--reserve)' };

function setFigure(name: string, value: number | string): void {
  const node = document.querySelector<HTMLElement>(`[data-fig="${name}"]`);
  if (node) node.textContent = typeof value === 'number' ? nf.format(value) : value;
}

function renderStats(s: Stats): void {
  setFigure('members', s.members);
  setFigure('cultures', s.cultures);
  setFigure('total_ru', s.total_ru);
  $('stage-badge').textContent = s.stage;
}

function renderMaturity(m: Maturity, spec: Spec): void {
  setFigure('days_left', m.days_left);
  $('progress-text').textContent = `${nf.format(m.progress)}% 지남 · elapsed · ${m.today}`;
  const tl = $('timeline');
  tl.replaceChildren();
  // the plan runs 2026..2038: one segment per stage, sized by its years inside the plan
  const planStart = 2026.26;
  const planEnd = 2038.75;
  for (const s of spec.stages) {
    const from = Math.max(s.from_year, planStart);
    const to = Math.min((s.to_year ?? m.end_year) + 1, planEnd);
    const seg = el('div', { class: `seg${s.stage === m.stage ? ' current' : ''}`, title: `${s.stage}: coin ${s.coin_pct}%` }, `${s.stage} ×${s.coin_pct / 100}`);
    seg.style.width = `${((to - from) / (planEnd - planStart)) * 100}%`;
    tl.append(seg);
  }
  const now = el('div', { class: 'now', title: `${m.progress}%` });
  now.style.left = `${m.progress}%`;
  tl.append(now);
}

function renderSplit(): void {
  const svg = $('split-donut');
  const parts: [keyof typeof COLORS, string][] = [
    ['member', '회원 member 1x'],
    ['ecosystem', '생태계 ecosystem ledger 1x'],
    ['reserve', '적립 reserve pool 1x'],
  ];
  const r = 46;
  const c = 2 * Math.PI * r;
  svg.innerHTML = parts
    .map(
      ([k], i) =>
        `<circle r="${r}" cx="60" cy="60" fill="none" stroke="${COLORS[k]}" stroke-width="20" stroke-dasharray="${c / 3 - 2} ${c}" stroke-dashoffset="${-(c / 3) * i}" transform="rotate(-90 60 60)"/>`,
    )
    .join('') + '<text x="60" y="66" text-anchor="middle" font-size="18" font-weight="700">3x</text>';
  $('split-legend').replaceChildren(
    ...parts.map(([k, label]) => {
      const swatch = el('i');
      swatch.style.background = COLORS[k];
      return el('li', {}, swatch, label);
    }),
  );
}

function bar(label: string, value: number | null, color: string): HTMLElement {
  const fill = el('div', { class: 'fill' });
  fill.style.width = `${Math.min(100, value ?? 0)}%`;
  fill.style.background = color;
  return el('div', { class: 'bar' }, el('div', { class: 'row' }, el('span', {}, label), el('strong', {}, pct(value))), el('div', { class: 'track' }, fill));
}

function renderReserve(r: Reserve): void {
  $('coverage').replaceChildren(
    bar('적립금 단독 reserve alone', r.reserve_coverage_pct, COLORS.reserve),
    bar('적립금 + 생태계 reserve + ecosystem', r.combined_coverage_pct, COLORS.ecosystem),
    el('p', { class: 'muted', id: 'coverage-note' }, reserveNote(r)),
  );
}

/** What the coverage figures rest on, in people's words (the service's own note is for developers). */
function reserveNote(r: Reserve): string {
  if (r.reserve_coverage_pct === null || r.maturity_shortfall <= 0) {
    return '아직 만기에 갚아야 할 부족분이 없어 충당률을 셀 수 없습니다. 첫 보상이 생기면 나타납니다. · Nothing is owed at maturity yet, so there is no coverage to show until the first reward.';
  }
  return `만기 부족분 ${nf.format(r.maturity_shortfall)} · 적립금 ${nf.format(r.balance)} · 생태계 실현 가능 가치 ${nf.format(r.ecosystem_realizable)}`;
}

function renderSimulation(s: Simulation): void {
  $('simulation').replaceChildren(
    bar('적립금 단독 reserve alone', s.final.reserve_coverage_pct, COLORS.reserve),
    bar('적립금 + 생태계 reserve + ecosystem', s.final.combined_coverage_pct, COLORS.ecosystem),
    el('p', { class: 'muted' }, `${s.assumptions.text} 나머지 ${pct(s.final.remainder_pct)}는 생태계 가치의 성장에서 채웁니다 · remainder from growth of ecosystem value.`),
  );
}

function renderPrinciples(list: Principle[]): void {
  $('principles').replaceChildren(
    ...list.map((p) =>
      el('li', { class: p.configured ? '' : 'unset', value: String(p.number) }, p.text ?? '운영자가 아직 정하지 않았습니다 · not configured by the operator'),
    ),
  );
}

function renderTables(spec: Spec, stage: string): void {
  $('grades').replaceChildren(
    el('tr', {}, el('th', {}, '#'), el('th', {}, '이름 · name'), el('th', {}, '점수 ≥ · score'), el('th', {}, '배수 · multiplier')),
    ...spec.grades.map((g) =>
      el('tr', {}, el('td', {}, String(g.grade)), el('td', {}, g.name), el('td', {}, nf.format(g.threshold)), el('td', {}, `${g.multiplier_pct}%`)),
    ),
  );
  $('stages').replaceChildren(
    el('tr', {}, el('th', {}, '단계 · stage'), el('th', {}, '연도 · years'), el('th', {}, '코인 · coin'), el('th', {}, '만기 배수 · maturity ×')),
    ...spec.stages.map((s) =>
      el(
        'tr',
        { class: s.stage === stage ? 'current' : '' },
        el('td', {}, s.stage),
        el('td', {}, s.to_year ? `${s.from_year}–${s.to_year}` : `${s.from_year}+`),
        el('td', {}, `${s.coin_pct}%`),
        el('td', {}, `×${s.maturity_multiple}`),
      ),
    ),
  );
}

function describe(ev: RewardEvent): string {
  switch (ev.type) {
    case 'work':
      return `${ev.id}: ${nf.format(ev.earned_ru as number)} RU 적립 (등급 ${ev.new_grade}, 누적 ${ev.new_total_kc} 단위, 만든 가치 ${nf.format(ev.create_3x as number)}) · earned ${nf.format(ev.earned_ru as number)} RU`;
    case 'exchange':
      return `${ev.id}: ${nf.format(ev.ru_burned as number)} RU를 ${nf.format(ev.cu_minted as number)} CU로 교환 (${ev.stage} 단계) · exchanged`;
    case 'member':
      return `새 회원 ${ev.name as string} (${ev.id}) · new member`;
    default:
      return `새 문화권 ${ev.name as string} (${ev.country as string}/${ev.lang as string}) · new cultural zone`;
  }
}

async function refreshReserve(): Promise<void> {
  renderReserve(await publicApi.get('/api/reward/reserve'));
}

async function main(): Promise<void> {
  renderSplit();
  const [stats, maturity, declare, spec, reserve, sim] = await Promise.all([
    publicApi.get('/stats'),
    publicApi.get('/maturity'),
    publicApi.get('/declare'),
    publicApi.get('/spec') as Promise<Spec>,
    publicApi.get('/api/reward/reserve'),
    publicApi.get('/api/reward/simulation'),
  ]);
  renderStats(stats);
  renderMaturity(maturity, spec);
  renderPrinciples(declare.principles);
  renderTables(spec, stats.stage);
  renderReserve(reserve);
  renderSimulation(sim);

  const live = new LiveTopics();
  live.onConnection((on) => $('conn').classList.toggle('on', on));
  const feed = $('feed');
  live.on('reward', (data) => {
    const ev = data as RewardEvent;
    renderStats(ev.stats);
    if (feed.querySelector('.muted')) feed.replaceChildren();
    const time = new Date(ev.at).toLocaleTimeString('en-GB', { timeZone: 'Asia/Seoul' }); // KST, HH:MM:SS
    feed.prepend(el('li', { 'data-type': ev.type }, `${time} · ${describe(ev)}`));
    while (feed.children.length > 50) feed.lastElementChild!.remove();
    if (ev.type === 'work' || ev.type === 'exchange') void refreshReserve();
  });
  document.body.dataset.ready = 'true';
}

main().catch((err) => {
  document.querySelector('main')!.prepend(el('p', { class: 'card error' }, `대시보드를 불러오지 못했습니다 · ${problemText(err)}`));
});
