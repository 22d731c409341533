/** The rental partner's dashboard (doc 1 §1): counters, filter, table with expandable rows, per-document checks, live. */
import { Session } from '../common/auth.js';
import { el, LiveTopics } from '../common/live.js';

interface DocEntry { filename: string; size: number; mediaType: string; check: 'approved' | 'rejected' | null; reason: string | null; url?: string }
interface App {
  id: string; receiptNo: string; type: string; product?: { code: string; badge: string; name: string }; organization: string; department: string;
  contactName: string; contactPhone: string; email: string | null; buildingType: string | null; remarks: string; status: string;
  monthlyFee?: number; termMonths?: number; totalFee?: number; documents?: Record<string, DocEntry | null>; createdAt: string;
  source?: 'form' | 'chat';
}
interface ListAnswer { items: App[]; page: number; pages: number; matched: number; counters: Record<string, number> }

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
/** The partner's token, kept for this tab (web/common/auth.ts); a 401 anywhere shows the login again. */
const session = new Session('partner:token');
const STATUS: Record<string, string> = { pending: '대기', documents_submitted: '서류 제출', under_review: '심사 중', approved: '승인', rejected: '반려' };
const DOCS: [string, string][] = [['bizCard', '명함'], ['uniqueNumber', '고유번호증'], ['internalResolution', '내부 결의서']];
const BUILDING: Record<string, string> = { school: '학교', office: '관공서·청사', welfare: '복지·보육시설', culture: '문화·체육시설', other: '기타' };
const SOURCE: Record<string, string> = { form: '신청서', chat: '상담' };
const won = (n: number | undefined) => (n === undefined ? '-' : `${n.toLocaleString('ko-KR')}원`);
const date = (iso: string) => new Intl.DateTimeFormat('ko-KR', { dateStyle: 'short', timeZone: 'Asia/Seoul' }).format(new Date(iso));
let page = 1;
const open = new Set<string>();

const api = (path: string, init: { method?: string; body?: unknown } = {}) => session.fetch(path, init);

function signedOut(): void {
  $('login').hidden = false;
  $('board').hidden = true;
  $('logout').hidden = true;
  document.body.dataset.auth = 'none';
}

function signedIn(): void {
  $('login').hidden = true;
  $('board').hidden = false;
  $('logout').hidden = false;
  document.body.dataset.auth = 'partner';
  live.reauthenticate();
  void load();
}

function query(extra = ''): string {
  const p = new URLSearchParams();
  const status = $<HTMLSelectElement>('status').value;
  const q = $<HTMLInputElement>('q').value.trim();
  const source = $<HTMLSelectElement>('source').value;
  if (status) p.set('status', status);
  if (source) p.set('source', source);
  if (q) p.set('q', q);
  return p.toString() + extra;
}

async function load(): Promise<void> {
  const res = await api(`/api/partner/applications?${query(`&page=${page}`)}`);
  if (!res.ok) {
    if (res.status !== 401) $('error').textContent = ((await res.json()) as any)?.error?.message ?? `HTTP ${res.status}`;
    return;
  }
  const list = (await res.json()) as ListAnswer;
  for (const k of ['total', 'pending', 'documents_submitted', 'approved']) $(`c-${k}`).textContent = String(list.counters[k] ?? 0);
  $('page-info').textContent = `${list.page} / ${list.pages} (${list.matched})`;
  $<HTMLButtonElement>('prev').disabled = list.page <= 1;
  $<HTMLButtonElement>('next').disabled = list.page >= list.pages;
  const rows = $('rows');
  rows.replaceChildren();
  for (const a of list.items) {
    const tr = el('tr', { class: 'app', tabindex: '0', 'data-id': a.id, 'data-status': a.status, 'aria-expanded': String(open.has(a.id)) },
      el('td', {}, a.receiptNo),
      el('td', {}, el('span', { class: `badge ${a.product?.badge ?? ''}`, title: a.product?.name ?? '' }, a.product ? `${a.product.code} ${a.product.badge}` : a.type)),
      el('td', { class: 'source', 'data-source': a.source ?? 'form' }, SOURCE[a.source ?? 'form']),
      el('td', {}, a.organization || '-'), el('td', {}, a.contactName || '-'), el('td', {}, a.contactPhone),
      el('td', { class: 'status' }, STATUS[a.status] ?? a.status), el('td', {}, date(a.createdAt)));
    const toggle = () => {
      if (open.has(a.id)) open.delete(a.id);
      else open.add(a.id);
      void load();
    };
    tr.addEventListener('click', toggle);
    tr.addEventListener('keydown', (e) => (e.key === 'Enter' || e.key === ' ') && (e.preventDefault(), toggle()));
    rows.append(tr);
    if (open.has(a.id)) rows.append(detail(a));
  }
  document.body.dataset.ready = 'true';
}

function detail(a: App): HTMLTableRowElement {
  const docs = el('div', { class: 'docs' });
  for (const [field, label] of DOCS) {
    const d = a.documents?.[field] ?? null;
    const row = el('div', { class: 'doc', 'data-doc': field, 'data-check': d?.check ?? 'none' }, el('b', {}, label), d ? d.filename : '미제출 · not uploaded');
    if (d) {
      const view = el('button', { type: 'button', class: 'link' }, '보기 · view');
      view.addEventListener('click', () => void viewFile(d));
      const ok = el('button', { type: 'button', class: 'approve' }, '승인 · approve');
      const no = el('button', { type: 'button', class: 'reject' }, '반려 · reject');
      const reason = el('input', { 'aria-label': `${label} 반려 사유 · reason`, placeholder: '반려 사유 · reason', maxlength: '500' });
      ok.addEventListener('click', () => void check(a.id, field, 'approved'));
      no.addEventListener('click', () => void check(a.id, field, 'rejected', reason.value.trim()));
      row.append(el('span', { class: 'check' }, d.check === 'approved' ? '승인됨' : d.check === 'rejected' ? `반려됨 (${d.reason ?? ''})` : '미확인'), view, ok, reason, no);
    }
    docs.append(row);
  }
  return el('tr', { class: 'detail' }, el('td', { colspan: '8' },
    el('p', { class: 'product' }, a.product ? `${a.product.code} ${a.product.name}` : a.type),
    el('p', {}, [a.organization, a.department, a.contactName, a.email, a.buildingType ? `건물 유형: ${BUILDING[a.buildingType] ?? a.buildingType}` : '', `접수 경로: ${SOURCE[a.source ?? 'form']}`].filter(Boolean).join(' · ')),
    el('p', {}, `월 ${won(a.monthlyFee)} · ${a.termMonths ?? '-'}개월 · 총 ${won(a.totalFee)}`),
    a.remarks ? el('p', {}, a.remarks) : '', docs));
}

async function check(id: string, doc: string, result: 'approved' | 'rejected', reason?: string): Promise<void> {
  $('error').textContent = '';
  if (result === 'rejected' && !reason) {
    $('error').textContent = '반려 사유를 입력하세요 · a reason is required to reject';
    return;
  }
  const res = await api(`/api/partner/applications/${id}/documents/${doc}/check`, { method: 'PUT', body: reason ? { result, reason } : { result } });
  if (!res.ok) $('error').textContent = ((await res.json()) as any)?.error?.message ?? `HTTP ${res.status}`;
  await load();
}

async function viewFile(d: DocEntry): Promise<void> {
  if (!d.url) return;
  const res = await api(d.url);
  if (!res.ok) return;
  const url = URL.createObjectURL(await res.blob());
  const a = el('a', { href: url, download: d.filename });
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 30_000);
}

async function csv(): Promise<void> {
  const res = await api(`/api/partner/applications?${query('&format=csv')}`);
  if (!res.ok) return;
  const url = URL.createObjectURL(await res.blob());
  el('a', { href: url, download: 'rental-applications.csv' }).click();
  setTimeout(() => URL.revokeObjectURL(url), 30_000);
}

const live = new LiveTopics(undefined, () => session.token, () => void session.restore());
session.onChange((me) => (me ? signedIn() : signedOut()));
live.onConnection((on) => $('conn').classList.toggle('on', on));
live.on('rental:partner', () => void load());

$('login').addEventListener('submit', (ev) => {
  ev.preventDefault();
  $('login-error').textContent = '';
  void (async () => {
    const res = await fetch('/api/partner/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ password: $<HTMLInputElement>('password').value }) });
    const body = (await res.json()) as any;
    if (!res.ok) {
      $('login-error').textContent = body?.error?.message ?? `HTTP ${res.status}`;
      return;
    }
    $<HTMLInputElement>('password').value = '';
    await session.adopt(body.token);
  })();
});
$('logout').addEventListener('click', () => {
  // the partner's own logout route, so the partner audit records it; then the token is forgotten here
  void api('/api/partner/logout', { method: 'POST' }).finally(() => {
    session.token = undefined;
    session.me = undefined;
    signedOut();
  });
});
$('filters').addEventListener('submit', (ev) => {
  ev.preventDefault();
  page = 1;
  void load();
});
$('status').addEventListener('change', () => ((page = 1), void load()));
$('source').addEventListener('change', () => ((page = 1), void load()));
$('prev').addEventListener('click', () => ((page = Math.max(1, page - 1)), void load()));
$('next').addEventListener('click', () => ((page += 1), void load()));
$('csv').addEventListener('click', () => void csv());

void session.restore().then((me) => {
  if (!me) document.body.dataset.ready = 'true';
});
