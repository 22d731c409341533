/**
 * The applicant's page: with the receipt number and the access key, the application's status, each
 * document's result and reason, and the upload of a missing or rejected document. The key travels
 * in the address's fragment (#receipt=…&key=…), never to the server's logs.
 */
import { ApiError, publicApi, problemText, type Answer } from '../common/api.js';
import { byId as $, el, kst } from '../common/ui.js';
import { BUILDING_LABELS, DOC_LABELS, DOC_TYPES } from '../../src/rental/catalog.js';

interface DocEntry { filename: string; size: number; mediaType: string; check: 'approved' | 'rejected' | null; reason: string | null; uploadedAt: string }
interface App extends Answer<'GET', '/api/subscriptions/:ref'> {
  id: string; receiptNo: string; type: string; status: string; organization: string; department: string; contactName: string; contactPhone: string;
  buildingType: string | null; createdAt: string; product?: { code: string; name: string }; monthlyFee?: number; termMonths?: number; totalFee?: number;
  documents?: Record<string, DocEntry | null>;
}

const STATUS: Record<string, string> = { pending: '서류 제출 대기', documents_submitted: '서류 제출 완료', under_review: '검토 중', approved: '승인', rejected: '서류 보완 요청' };
const HELP: Record<string, string> = {
  pending: '아래에서 빠진 서류를 올려 주세요. 세 가지 서류가 모두 제출되면 검토가 시작됩니다.',
  documents_submitted: '서류가 모두 제출되었습니다. 파트너가 검토를 시작하면 알려 드립니다.',
  under_review: '파트너가 서류를 검토하고 있습니다.',
  approved: '신청이 승인되었습니다. 담당자가 설치 일정을 안내해 드립니다.',
  rejected: '반려된 서류를 사유에 맞게 다시 올려 주세요. 다시 올리면 검토가 이어집니다.',
};
// the documents and building types by the catalogue's own labels (src/rental/catalog.ts)
const DOCS: [string, string][] = DOC_TYPES.map((d) => [d, DOC_LABELS[d]]);
const BUILDING: Record<string, string> = BUILDING_LABELS;
const ACCEPT = ['.hwp', '.hwpx', '.pdf', '.jpg', '.jpeg', '.png'];
const MAX_BYTES = 20 * 1024 * 1024;
const won = (n: number | undefined) => (n === undefined ? '-' : `${n.toLocaleString('ko-KR')}원`);
const when = (iso: string) => kst(iso);
const MESSAGES: Record<string, string> = {
  invalid_key: '조회 키가 접수번호와 맞지 않습니다.',
  subscription_not_found: '그 접수번호의 신청이 없습니다.',
  invalid_params: '접수번호는 R261122-000042 같은 모양입니다.',
  invalid_query: '조회 키를 입력하세요.',
  document_approved: '승인된 서류는 바꿀 수 없습니다.',
  application_closed: '승인된 신청의 서류는 바꿀 수 없습니다.',
  unsupported_file_type: '받지 않는 파일 형식입니다 (hwp, hwpx, pdf, jpg, png).',
  type_mismatch: '파일 이름의 확장자와 내용이 맞지 않습니다.',
  infected: '파일에서 악성 코드가 발견되어 받지 않았습니다.',
  payload_too_large: '파일이 너무 큽니다 (20 MB 이하).',
  rate_limited: '요청이 많습니다. 잠시 후 다시 시도하세요.',
};
let current: { receipt: string; key: string } | undefined;

/** A refusal in this page's own words where it has them, else the client's Korean message. */
function problem(err: unknown): string {
  return (err instanceof ApiError && MESSAGES[err.code]) || problemText(err);
}

/** Checks a chosen file at once: kind and size, in Korean. */
export function fileProblem(f: File): string | undefined {
  const ext = f.name.includes('.') ? f.name.slice(f.name.lastIndexOf('.')).toLowerCase() : '';
  if (!ACCEPT.includes(ext)) return `${ACCEPT.join(', ')} 파일만 올릴 수 있습니다.`;
  if (f.size > MAX_BYTES) return '20 MB 이하의 파일만 올릴 수 있습니다.';
  if (f.size === 0) return '빈 파일입니다.';
  return undefined;
}

async function open(receipt: string, key: string): Promise<void> {
  $('find-error').textContent = '';
  let a: App;
  try {
    a = (await publicApi.get('/api/subscriptions/:ref', { params: { ref: receipt }, query: { key } })) as App;
  } catch (err) {
    $('find-error').textContent = problem(err);
    $('app').hidden = true;
    document.body.dataset.ready = 'true';
    return;
  }
  current = { receipt, key };
  history.replaceState(null, '', `#receipt=${encodeURIComponent(receipt)}&key=${encodeURIComponent(key)}`);
  show(a);
}

function show(a: App): void {
  $('app').hidden = false;
  $('app-receipt').textContent = a.receiptNo;
  const status = $('status');
  status.textContent = STATUS[a.status] ?? a.status;
  status.dataset.status = a.status;
  $('status-help').textContent = HELP[a.status] ?? '';
  $('product').textContent = a.product ? `${a.product.code} ${a.product.name}` : '-';
  $('organization').textContent = [a.organization, a.department].filter(Boolean).join(' ') || '-';
  $('contact').textContent = [a.contactName, a.contactPhone].filter(Boolean).join(' · ');
  $('building').textContent = a.buildingType ? (BUILDING[a.buildingType] ?? a.buildingType) : '선택 안 함';
  $('fee').textContent = a.monthlyFee === undefined ? '-' : `${won(a.monthlyFee)} × ${a.termMonths}개월 = ${won(a.totalFee)}`;
  $('created').textContent = when(a.createdAt);
  const list = $('docs');
  list.replaceChildren();
  // receipts of other kinds (a consultation) carry no documents
  list.hidden = !a.documents;
  $('docs-title').hidden = !a.documents;
  if (!a.documents) return void (document.body.dataset.ready = 'true');
  for (const [field, label] of DOCS) {
    const d = a.documents?.[field] ?? null;
    const result = !d ? '미제출' : d.check === 'approved' ? '승인' : d.check === 'rejected' ? '반려' : '검토 대기';
    const li = el('li', { 'data-doc': field, 'data-check': d?.check ?? (d ? 'waiting' : 'missing') },
      el('b', {}, label), el('span', { class: 'result' }, result));
    if (d) li.append(el('span', { class: 'muted' }, `${d.filename} · ${when(d.uploadedAt)}`));
    if (d?.check === 'rejected') li.append(el('span', { class: 'reason' }, `반려 사유: ${d.reason ?? '-'}`));
    const canUpload = a.status !== 'approved' && d?.check !== 'approved';
    if (canUpload) {
      const id = `file-${field}`;
      const input = el('input', { type: 'file', id, accept: ACCEPT.join(',') });
      const err = el('p', { class: 'error', role: 'alert', id: `${id}-error` });
      const send = el('button', { type: 'button', id: `send-${field}`, disabled: '' }, d ? '다시 올리기' : '올리기');
      input.addEventListener('change', () => {
        const f = input.files?.[0];
        const why = f ? fileProblem(f) : '파일을 고르세요.';
        err.textContent = why ?? '';
        send.toggleAttribute('disabled', why !== undefined);
      });
      send.addEventListener('click', () => void upload(a.id, field, label, input, err, send));
      li.append(el('label', { for: id }, `${label} ${d ? '새 파일' : '파일'}`, input), err, send);
    }
    list.append(li);
  }
  document.body.dataset.ready = 'true';
}

async function upload(id: string, field: string, label: string, input: HTMLInputElement, err: HTMLElement, send: HTMLElement): Promise<void> {
  const f = input.files?.[0];
  if (!f || !current) return;
  send.setAttribute('disabled', '');
  $('notice').textContent = '';
  const form = new FormData();
  form.append(field, f, f.name);
  let a: App;
  try {
    a = (await publicApi.upload('PUT', '/api/subscriptions/:ref/documents/:docType', { params: { ref: id, docType: field }, query: { key: current.key }, form })) as App;
  } catch (e) {
    err.textContent = problem(e);
    send.removeAttribute('disabled');
    return;
  }
  show(a);
  $('notice').textContent = `${label}을(를) 올렸습니다.`;
}

$('find').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const receipt = $<HTMLInputElement>('receipt').value.trim().toUpperCase();
  const key = $<HTMLInputElement>('key').value.trim();
  if (!receipt || !key) {
    $('find-error').textContent = '접수번호와 조회 키를 모두 입력하세요.';
    return;
  }
  void open(receipt, key);
});

const hash = new URLSearchParams(location.hash.slice(1));
const r = hash.get('receipt') ?? new URLSearchParams(location.search).get('receipt');
if (r) $<HTMLInputElement>('receipt').value = r;
const k = hash.get('key');
if (r && k) {
  $<HTMLInputElement>('key').value = k;
  void open(r, k);
} else document.body.dataset.ready = 'true';
