import { LiveTopics, el, getJson } from '../common/live.js';

interface Stats { members: number; cultures: number; total_ru: number; progress: number; stage: string }
interface Maturity { days_left: number; progress: number; stage: string; end_year: number; today: string }
interface Principle { number: number; text: string | null; configured: boolean; source: string }
interface Reserve {
  balance: number;
  maturity_shortfall: number;
  ecosystem_realizable: number;
  reserve_coverage_pct: number | null;
  combined_coverage_pct: number | null;
  note: string | null;
}
interface Simulation {
  assumptions: { text: string };
  final: { reserve_coverage_pct: number | null; combined_coverage_pct: number | null; remainder_pct: number | null };
}
interface Spec {
  grades: { grade: number; name: string; threshold: number; multiplier_pct: number }[];
  stages: { stage: string; from_year: number; to_year: number | null; coin_pct: number; maturity_multiple: number }[];
}
interface RewardEvent {
  type: 'work' | 'exchange' | 'member' | 'culture';
  id: string;
  at: string;
  stats: Stats;
  [k: string]: unknown;
}

const $ = (id: string) => document.getElementById(id)!;
const nf = new Intl.NumberFormat('ko-KR', { maximumFractionDigits: 2 });
const pct = (v: number | null) => (v === null ? '—' : `${nf.format(v)}%`);
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
  $('progress-text').textContent = `${nf.format(m.progress)}% elapsed · ${m.today}`;
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
    el('p', { class: 'muted' }, r.note ?? `shortfall ${nf.format(r.maturity_shortfall)} · reserve ${nf.format(r.balance)} · ecosystem realizable ${nf.format(r.ecosystem_realizable)}`),
  );
}

function renderSimulation(s: Simulation): void {
  $('simulation').replaceChildren(
    bar('reserve alone', s.final.reserve_coverage_pct, COLORS.reserve),
    bar('reserve + ecosystem', s.final.combined_coverage_pct, COLORS.ecosystem),
    el('p', { class: 'muted' }, `${s.assumptions.text} Remainder ${pct(s.final.remainder_pct)} from growth of ecosystem value.`),
  );
}

function renderPrinciples(list: Principle[]): void {
  $('principles').replaceChildren(
    ...list.map((p) =>
      el('li', { class: p.configured ? '' : 'unset', value: String(p.number) }, p.text ?? 'not configured by the operator'),
    ),
  );
}

function renderTables(spec: Spec, stage: string): void {
  $('grades').replaceChildren(
    el('tr', {}, el('th', {}, '#'), el('th', {}, 'name'), el('th', {}, 'score ≥'), el('th', {}, 'multiplier')),
    ...spec.grades.map((g) =>
      el('tr', {}, el('td', {}, String(g.grade)), el('td', {}, g.name), el('td', {}, nf.format(g.threshold)), el('td', {}, `${g.multiplier_pct}%`)),
    ),
  );
  $('stages').replaceChildren(
    el('tr', {}, el('th', {}, 'stage'), el('th', {}, 'years'), el('th', {}, 'coin'), el('th', {}, 'maturity ×')),
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
      return `${ev.id} earned ${nf.format(ev.earned_ru as number)} RU (grade ${ev.new_grade}, ${ev.new_total_kc} units) · 3x ${nf.format(ev.create_3x as number)}`;
    case 'exchange':
      return `${ev.id} exchanged ${nf.format(ev.ru_burned as number)} RU → ${nf.format(ev.cu_minted as number)} CU (${ev.stage})`;
    case 'member':
      return `new member ${ev.name as string} (${ev.id})`;
    default:
      return `new cultural zone ${ev.name as string} (${ev.country as string}/${ev.lang as string})`;
  }
}

async function refreshReserve(): Promise<void> {
  renderReserve(await getJson<Reserve>('/api/reward/reserve'));
}

async function main(): Promise<void> {
  renderSplit();
  const [stats, maturity, declare, spec, reserve, sim] = await Promise.all([
    getJson<Stats>('/stats'),
    getJson<Maturity>('/maturity'),
    getJson<{ principles: Principle[] }>('/declare'),
    getJson<Spec>('/spec'),
    getJson<Reserve>('/api/reward/reserve'),
    getJson<Simulation>('/api/reward/simulation'),
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
  document.querySelector('main')!.prepend(el('p', { class: 'card error' }, `Could not load the dashboard: ${(err as Error).message}`));
});
