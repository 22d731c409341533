/** The rental partner's dashboard (doc 1 §1): counters, filter, table with expandable rows, per-document checks, live. */
import { ApiError, problemText, type Answer } from '../common/api.js';
import { Session } from '../common/auth.js';
import { demoSignIn } from '../common/demo-sign-in.js';
import { LiveTopics } from '../common/live.js';
import { byId as $, el, kstDate } from '../common/ui.js';
import { BUILDING_LABELS, DOC_LABELS, DOC_TYPES, STATUS_LABELS } from '../../src/rental/catalog.js';

interface DocEntry { filename: string; size: number; mediaType: string; check: 'approved' | 'rejected' | null; reason: string | null; url?: string }
interface App extends Answer<'GET', '/api/subscriptions/:ref'> {
  id: string; receiptNo: string; type: string; product?: { code: string; badge: string; name: string }; organization: string; department: string;
  contactName: string; contactPhone: string; email: string | null; buildingType: string | null; remarks: string; status: string;
  monthlyFee?: number; termMonths?: number; totalFee?: number; documents?: Record<string, DocEntry | null>; createdAt: string;
  source?: 'form' | 'chat';
}
type ListAnswer = Omit<Answer<'GET', '/api/partner/applications'>, 'items'> & { items: App[] };

/** The partner's token, kept for this tab (web/common/auth.ts); a 401 anywhere shows the login again. */
const session = new Session('partner:token');
await demoSignIn(session); // a signed-in link from the demo tour (DEMO=1 only)
// states, documents and building types by the catalogue's own labels (src/rental/catalog.ts), as the server names them
const STATUS: Record<string, string> = STATUS_LABELS;
const DOCS: [string, string][] = DOC_TYPES.map((d) => [d, DOC_LABELS[d]]);
const BUILDING: Record<string, string> = BUILDING_LABELS;
const SOURCE: Record<string, string> = { form: '신청서', chat: '상담' };
const won = (n: number | undefined) => (n === undefined ? '-' : `${n.toLocaleString('ko-KR')}원`);
const date = (iso: string) => kstDate(iso);
let page = 1;
const open = new Set<string>();

const api = session.api;

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

function query() {
  return { status: $<HTMLSelectElement>('status').value, q: $<HTMLInputElement>('q').value.trim(), source: $<HTMLSelectElement>('source').value };
}

let refocus: string | undefined;

async function load(): Promise<void> {
  let list: ListAnswer;
  try {
    list = (await api.get('/api/partner/applications', { query: { ...query(), page } })) as ListAnswer;
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 401)) $('error').textContent = problemText(err);
    return;
  }
  $('error').textContent = '';
  for (const k of ['total', 'pending', 'documents_submitted', 'under_review', 'approved', 'rejected']) $(`c-${k}`).textContent = String((list.counters as Record<string, number>)[k] ?? 0);
  $('page-info').textContent = `${list.page} / ${list.pages} (${list.matched})`;
  $<HTMLButtonElement>('prev').disabled = list.page <= 1;
  $<HTMLButtonElement>('next').disabled = list.page >= list.pages;
  const rows = $('rows');
  rows.replaceChildren();
  for (const a of list.items) {
    // the receipt number is the row's button (a table row itself may not carry aria-expanded)
    const expand = el('button', { type: 'button', class: 'expand', 'aria-expanded': String(open.has(a.id)), 'aria-label': `${a.receiptNo} 상세 · details` }, a.receiptNo);
    const tr = el('tr', { class: 'app', 'data-id': a.id, 'data-status': a.status },
      el('td', {}, expand),
      el('td', {}, el('span', { class: `badge ${a.product?.badge ?? ''}`, title: a.product?.name ?? '' }, a.product ? `${a.product.code} ${a.product.badge}` : a.type)),
      el('td', { class: 'source', 'data-source': a.source ?? 'form' }, SOURCE[a.source ?? 'form']),
      el('td', {}, a.organization || '-'), el('td', {}, a.contactName || '-'), el('td', {}, a.contactPhone),
      el('td', { class: 'status' }, STATUS[a.status] ?? a.status), el('td', {}, date(a.createdAt)));
    const toggle = () => {
      refocus = a.id;
      if (open.has(a.id)) open.delete(a.id);
      else open.add(a.id);
      void load();
    };
    // the whole row opens it by pointer; the button by keyboard (Enter and Space are a button's own)
    tr.addEventListener('click', toggle);
    rows.append(tr);
    if (open.has(a.id)) rows.append(detail(a));
  }
  // the row drawn again keeps the keyboard where it was
  if (refocus) rows.querySelector<HTMLElement>(`tr[data-id="${CSS.escape(refocus)}"] button.expand`)?.focus();
  refocus = undefined;
  document.body.dataset.ready = 'true';
}

const MESSAGES: Record<string, string> = {
  application_closed: '승인된 신청의 서류는 더 바꿀 수 없습니다.',
  document_missing: '아직 제출되지 않은 서류입니다.',
  invalid_body: '입력을 확인하세요.',
  unauthorized: '다시 로그인하세요.',
  rate_limited: '요청이 많습니다. 잠시 후 다시 시도하세요.',
};
const problem = (err: unknown) => (err instanceof ApiError && MESSAGES[err.code]) || problemText(err);
const INLINE = ['application/pdf', 'image/jpeg', 'image/png'];
const size = (n: number) => (n >= 1_048_576 ? `${(n / 1_048_576).toFixed(1)} MB` : `${Math.max(1, Math.round(n / 1024))} KB`);

function detail(a: App): HTMLTableRowElement {
  const docs = el('div', { class: 'docs' });
  const closed = a.status === 'approved';
  for (const [field, label] of DOCS) {
    const d = a.documents?.[field] ?? null;
    const row = el('div', { class: 'doc', 'data-doc': field, 'data-check': d?.check ?? 'none' }, el('b', {}, label), d ? `${d.filename} (${size(d.size)})` : '미제출 · not uploaded');
    if (d) {
      const inline = INLINE.includes(d.mediaType);
      const view = el('button', { type: 'button', class: 'link view' }, inline ? '미리보기 · preview' : '내려받기 · download');
      const preview = el('div', { class: 'preview', hidden: '' });
      view.addEventListener('click', () => void viewFile(d, preview));
      const msg = el('p', { class: 'error doc-error', role: 'alert' });
      const ok = el('button', { type: 'button', class: 'approve' }, '승인 · approve');
      const no = el('button', { type: 'button', class: 'reject' }, '반려 · reject');
      const reason = el('input', { 'aria-label': `${label} 반려 사유 · reason`, placeholder: '반려 사유 · reason', maxlength: '500' });
      // only what can happen: nothing on an approved application, no second approval
      if (closed || d.check === 'approved') ok.setAttribute('disabled', '');
      if (closed) for (const x of [no, reason]) x.setAttribute('disabled', '');
      ok.addEventListener('click', () => void check(a.id, field, 'approved', undefined, msg));
      no.addEventListener('click', () => void check(a.id, field, 'rejected', reason.value.trim(), msg));
      row.append(el('span', { class: 'check' }, d.check === 'approved' ? '승인됨' : d.check === 'rejected' ? `반려됨 (${d.reason ?? ''})` : '미확인'), view, ok, reason, no, msg, preview);
      if (!inline) row.append(el('small', { class: 'muted' }, '한글(HWP) 파일은 내려받아 한컴오피스 또는 한컴독스에서 확인하세요.'));
    }
    docs.append(row);
  }
  return el('tr', { class: 'detail' }, el('td', { colspan: '8' },
    el('p', { class: 'product' }, a.product ? `${a.product.code} ${a.product.name}` : a.type),
    el('p', {}, [a.organization, a.department, a.contactName, a.email, a.buildingType ? `건물 유형: ${BUILDING[a.buildingType] ?? a.buildingType}` : '', `접수 경로: ${SOURCE[a.source ?? 'form']}`].filter(Boolean).join(' · ')),
    el('p', {}, `월 ${won(a.monthlyFee)} · ${a.termMonths ?? '-'}개월 · 총 ${won(a.totalFee)}`),
    closed ? el('p', { class: 'muted' }, '승인된 신청입니다. 서류 판정은 더 바꿀 수 없습니다.') : '',
    a.remarks ? el('p', {}, a.remarks) : '', docs));
}

async function check(id: string, doc: string, result: 'approved' | 'rejected', reason: string | undefined, msg: HTMLElement): Promise<void> {
  msg.textContent = '';
  if (result === 'rejected' && !reason) {
    msg.textContent = '반려 사유를 입력하세요.';
    return;
  }
  try {
    await api.put('/api/partner/applications/:id/documents/:docType/check', { params: { id, docType: doc }, body: reason ? { result, reason } : { result } });
  } catch (err) {
    msg.textContent = problem(err);
    return;
  }
  await load();
}

/** PDF and images open inline under the document; other kinds (HWP) are downloaded. */
async function viewFile(d: DocEntry, box: HTMLElement): Promise<void> {
  // the document's address is /api/uploads/<subId>/<filename>
  const [subId, filename] = d.url?.split('/').slice(3).map(decodeURIComponent) ?? [];
  if (!subId || !filename) return;
  const res = await api.response('GET', '/api/uploads/:subId/:filename', { params: { subId, filename } }).catch(() => undefined);
  if (!res) return;
  const url = URL.createObjectURL(await res.blob());
  if (INLINE.includes(d.mediaType)) {
    box.replaceChildren(d.mediaType === 'application/pdf'
      ? el('iframe', { src: url, title: `${d.filename} 미리보기` })
      : el('img', { src: url, alt: `${d.filename} 미리보기` }));
    box.hidden = false;
    return;
  }
  el('a', { href: url, download: d.filename }).click();
  setTimeout(() => URL.revokeObjectURL(url), 30_000);
}

async function csv(): Promise<void> {
  const res = await api.response('GET', '/api/partner/applications', { query: { ...query(), format: 'csv' } }).catch(() => undefined);
  if (!res) return;
  const url = URL.createObjectURL(await res.blob());
  el('a', { href: url, download: 'rental-applications.csv' }).click();
  setTimeout(() => URL.revokeObjectURL(url), 30_000);
}

const live = new LiveTopics(undefined, () => session.token, () => void session.restore());
session.onChange((me) => (me ? signedIn() : signedOut()));
live.onConnection((on) => $('conn').classList.toggle('on', on));
live.on('rental:partner', () => void load());

// ?user= fills the sign-in name (the demo tour links /partner.html?user=demo-partner)
const asked = new URLSearchParams(location.search).get('user');
if (asked) $<HTMLInputElement>('partner-user').value = asked;
$('login').addEventListener('submit', (ev) => {
  ev.preventDefault();
  $('login-error').textContent = '';
  void (async () => {
    // the rental partner signs in on its own route (recorded in the partner audit); another account
    // with the partner role (the demo's demo-partner) through the common sign-in
    const user = $<HTMLInputElement>('partner-user').value.trim();
    const password = $<HTMLInputElement>('password').value;
    const own = user === '' || user === 'partner';
    let token: string;
    try {
      ({ token } = own ? await api.post('/api/partner/login', { body: { password } }) : await api.post('/api/auth/login', { body: { user, password } }));
    } catch (err) {
      $('login-error').textContent = problemText(err);
      return;
    }
    $<HTMLInputElement>('password').value = '';
    await session.adopt(token);
  })();
});
$('logout').addEventListener('click', () => {
  // the partner's own logout route, so the partner audit records it; then the token is forgotten here
  void api.post('/api/partner/logout').catch(() => undefined).finally(() => {
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
