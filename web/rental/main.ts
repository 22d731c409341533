/** The rental application form (doc 1 §1): products and fees from the catalogue, three documents, upload progress. */
import { ApiError, publicApi, problemText, type Answer } from '../common/api.js';
import { byId as $, copyButton, el, markFields, won } from '../common/ui.js';
import type { catalogue as catalogueOf } from '../../src/rental/catalog.js';

// the catalogue as the service builds it (its answer's schema leaves the product fields open)
type Catalogue = ReturnType<typeof catalogueOf>;
type Product = Catalogue['products'][number];

const ACCEPT = ['.hwp', '.hwpx', '.pdf', '.jpg', '.jpeg', '.png'];
const MAX_BYTES = 20 * 1024 * 1024;
let catalogue: Catalogue;

function selected(): Product {
  const type = (document.querySelector('input[name="type"]:checked') as HTMLInputElement | null)?.value;
  return catalogue.products.find((p) => p.type === type) ?? catalogue.products[0]!;
}

function feeOf(p: Product): number {
  const bt = $<HTMLSelectElement>('buildingType').value;
  return (bt && p.fees?.[bt]) || p.monthlyFee;
}

function showFee(): void {
  const fee = feeOf(selected());
  $('fee').textContent = won(fee);
  $('total').textContent = `${won(fee * catalogue.termMonths)} (${catalogue.termMonths}개월)`;
}

async function load(): Promise<void> {
  catalogue = (await publicApi.get('/api/rental/products')) as Catalogue;
  const box = $('products');
  for (const p of catalogue.products) {
    const input = el('input', { type: 'radio', name: 'type', value: p.type, id: `type-${p.type}` });
    if (p.preselected) input.checked = true;
    input.addEventListener('change', showFee);
    box.append(el('label', { for: `type-${p.type}` }, input, el('span', {}, el('b', {}, `${p.code} `), p.name, el('br'), el('small', { class: 'muted' }, `월 ${won(p.monthlyFee)}${p.fees ? '부터' : ''}`))));
  }
  if (!document.querySelector('input[name="type"]:checked')) (box.querySelector('input') as HTMLInputElement).checked = true;
  const bt = $<HTMLSelectElement>('buildingType');
  bt.append(el('option', { value: '' }, '선택 안 함 · not chosen'));
  for (const b of catalogue.buildingTypes) bt.append(el('option', { value: b.value }, b.label));
  bt.addEventListener('change', showFee);
  for (const d of catalogue.documents) {
    const input = el('input', { type: 'file', id: d.field, name: d.field, accept: ACCEPT.join(','), 'aria-describedby': `${d.field}-error` });
    const err = el('p', { class: 'error', id: `${d.field}-error`, role: 'alert' });
    // checked as the file is chosen, in Korean
    // a file of the wrong kind or size is refused as it is picked: the field is emptied and marked
    input.addEventListener('change', () => {
      const f = input.files?.[0];
      const why = f ? fileProblem(d.label, f) : undefined;
      err.textContent = why ?? '';
      if (why) {
        input.value = '';
        input.setAttribute('aria-invalid', 'true');
      } else input.removeAttribute('aria-invalid');
    });
    $('documents').append(el('label', { for: d.field }, d.label, input), err);
  }
  showFee();
  document.body.dataset.ready = 'true';
}

/**
 * Checks what the browser can check before sending: the required fields given (each missing one
 * marked aria-invalid with its message beside it), files of an accepted kind and size.
 */
function precheck(): string | undefined {
  const missing: Record<string, string> = {};
  for (const field of $('apply').querySelectorAll<HTMLInputElement>('input[required]')) {
    if (!field.value.trim()) missing[field.name] = `${LABELS[field.name] ?? field.name}을(를) 입력하세요 · required`;
  }
  markFields($('apply'), missing);
  if (missing.contactPhone) return '연락처를 입력하세요 · contact phone is required';
  for (const d of catalogue.documents) {
    const f = $<HTMLInputElement>(d.field).files?.[0];
    const why = f && fileProblem(d.label, f);
    if (why) return why;
  }
  return undefined;
}

function fileProblem(label: string, f: File): string | undefined {
  const ext = f.name.includes('.') ? f.name.slice(f.name.lastIndexOf('.')).toLowerCase() : '';
  if (!ACCEPT.includes(ext)) return `${label}: ${ACCEPT.join(' ')} 파일만 받습니다`;
  if (f.size > MAX_BYTES) return `${label}: 20 MB 이하만 받습니다`;
  if (f.size === 0) return `${label}: 빈 파일입니다`;
  return undefined;
}

const LABELS: Record<string, string> = { contactPhone: '연락처', email: '이메일', organization: '기관명', department: '부서', contactName: '담당자', remarks: '비고', buildingType: '건물 유형' };
/** The server's refusal in Korean, naming the field or document by its label. */
function serverProblem(err: { code?: string; details?: { field?: string; issues?: { field: string }[] } } | undefined, status: number): string {
  const field = err?.details?.field ?? err?.details?.issues?.[0]?.field ?? '';
  const label = LABELS[field] ?? catalogue.documents.find((d) => d.field === field)?.label ?? '';
  switch (err?.code) {
    case 'invalid_body': return `${label || '입력'}을(를) 확인하세요.`;
    case 'unsupported_file_type': case 'type_mismatch': return `${label || '서류'}: hwp, hwpx, pdf, jpg, png 파일만 받습니다 (확장자와 내용이 맞아야 합니다).`;
    case 'infected': return `${label || '서류'}: 악성 코드가 발견되어 받지 않았습니다.`;
    case 'payload_too_large': return '파일이 너무 큽니다 (20 MB 이하).';
    case 'rate_limited': return '신청이 많습니다. 잠시 후 다시 시도하세요.';
    case 'idempotency_in_progress': return '앞서 보낸 신청을 처리하고 있습니다. 잠시 후 다시 신청하세요.';
    default: return `신청을 받지 못했습니다 (${status}). 잠시 후 다시 시도하세요.`;
  }
}

/**
 * The Idempotency-Key of the submission being made: sent again when the same form is submitted again
 * after a network error or a 5xx (whose application may have been made), so the hub makes one
 * application and answers the first one's receipt; any change to the form starts a new one.
 */
let attemptKey: string | undefined;

function submit(ev: Event): void {
  ev.preventDefault();
  const problem = precheck();
  $('error').textContent = problem ?? '';
  if (problem) return;
  const form = new FormData();
  form.append('type', selected().type);
  form.append('applicantType', 'government');
  for (const id of ['organization', 'department', 'contactName', 'contactPhone', 'email', 'buildingType', 'remarks']) {
    const v = ($(id) as HTMLInputElement).value.trim();
    if (v) form.append(id, v);
  }
  for (const d of catalogue.documents) {
    const f = $<HTMLInputElement>(d.field).files?.[0];
    if (f) form.append(d.field, f, f.name);
  }
  const bar = $<HTMLProgressElement>('progress');
  bar.hidden = false;
  bar.value = 0;
  $<HTMLButtonElement>('submit').disabled = true;
  // getRandomValues, not randomUUID: the page may be served over plain HTTP on a LAN address
  attemptKey ??= Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
  publicApi
    .upload('POST', '/api/subscriptions', { form, idempotencyKey: attemptKey, onProgress: (share) => (bar.value = Math.round(share * 100)) })
    .then((body) => {
      $<HTMLButtonElement>('submit').disabled = false;
      attemptKey = undefined;
      bar.value = 100;
      $('apply').hidden = true;
      $('done').hidden = false;
      $('receipt').textContent = body.receiptNo;
      const monthly = Number((body as { monthlyFee?: number }).monthlyFee ?? 0);
      $('done-fee').textContent = won(monthly);
      $('done-total').textContent = `${won(monthly * catalogue.termMonths)} (${catalogue.termMonths}개월)`;
      $('access-key').textContent = body.accessKey;
      $('access-key-copy').replaceChildren(copyButton(() => body.accessKey, '접근 키 복사 · copy key'));
      $<HTMLAnchorElement>('track').href = `/applicant.html#receipt=${encodeURIComponent(body.receiptNo)}&key=${encodeURIComponent(body.accessKey)}`;
    })
    .catch((err: unknown) => {
      $<HTMLButtonElement>('submit').disabled = false;
      if (!(err instanceof ApiError)) {
        $('error').textContent = problemText(err);
        return;
      }
      // a refusal is final: the corrected form is a new submission (a 5xx may have made one: same key)
      if (err.status > 0 && err.status < 500 && err.code !== 'idempotency_in_progress') attemptKey = undefined;
      $('error').textContent = err.status === 0 ? problemText(err) : serverProblem({ code: err.code, details: err.details as never }, err.status);
      markFields($('apply'), err.fields);
    });
}

$('apply').addEventListener('submit', submit);
$('print').addEventListener('click', () => {
  document.body.classList.add('printing');
  window.print();
  document.body.classList.remove('printing');
});
for (const type of ['input', 'change']) $('apply').addEventListener(type, () => (attemptKey = undefined));
void load().catch((err: unknown) => {
  $('error').textContent = problemText(err);
});
