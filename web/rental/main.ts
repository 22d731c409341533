/** The rental application form (doc 1 §1): products and fees from the catalogue, three documents, upload progress. */
import { el } from '../common/live.js';

interface Product { type: string; code: string; badge: string; name: string; preselected?: boolean; monthlyFee: number; fees?: Record<string, number> }
interface Catalogue { termMonths: number; products: Product[]; buildingTypes: { value: string; label: string }[]; documents: { field: string; label: string }[] }

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const won = (n: number) => `${n.toLocaleString('ko-KR')}원`;
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
  const res = await fetch('/api/rental/products', { headers: { accept: 'application/json' } });
  catalogue = (await res.json()) as Catalogue;
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
    const input = el('input', { type: 'file', id: d.field, name: d.field, accept: ACCEPT.join(',') });
    $('documents').append(el('label', { for: d.field }, `${d.label} (${d.field})`, input));
  }
  showFee();
  document.body.dataset.ready = 'true';
}

/** Checks what the browser can check before sending: phone given, files of an accepted kind and size. */
function precheck(): string | undefined {
  if (!$<HTMLInputElement>('contactPhone').value.trim()) return '연락처를 입력하세요 · contact phone is required';
  for (const d of catalogue.documents) {
    const f = $<HTMLInputElement>(d.field).files?.[0];
    if (!f) continue;
    const ext = f.name.slice(f.name.lastIndexOf('.')).toLowerCase();
    if (!ACCEPT.includes(ext)) return `${d.label}: ${ACCEPT.join(' ')} 파일만 받습니다`;
    if (f.size > MAX_BYTES) return `${d.label}: 20 MB 이하만 받습니다`;
  }
  return undefined;
}

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
  const xhr = new XMLHttpRequest();
  const bar = $<HTMLProgressElement>('progress');
  bar.hidden = false;
  bar.value = 0;
  $<HTMLButtonElement>('submit').disabled = true;
  xhr.upload.onprogress = (e) => {
    if (e.lengthComputable) bar.value = Math.round((e.loaded / e.total) * 100);
  };
  xhr.onload = () => {
    $<HTMLButtonElement>('submit').disabled = false;
    let body: any;
    try {
      body = JSON.parse(xhr.responseText);
    } catch {
      body = undefined;
    }
    if (xhr.status !== 201) {
      $('error').textContent = body?.error?.message ?? `HTTP ${xhr.status}`;
      return;
    }
    bar.value = 100;
    $('apply').hidden = true;
    $('done').hidden = false;
    $('receipt').textContent = body.receiptNo;
    $('done-fee').textContent = won(body.monthlyFee);
    $('access-key').textContent = body.accessKey;
    $<HTMLAnchorElement>('track').href = `/applicant.html#receipt=${encodeURIComponent(body.receiptNo)}&key=${encodeURIComponent(body.accessKey)}`;
  };
  xhr.onerror = () => {
    $<HTMLButtonElement>('submit').disabled = false;
    $('error').textContent = '서버에 연결할 수 없습니다 · network error';
  };
  xhr.open('POST', '/api/subscriptions');
  xhr.setRequestHeader('accept', 'application/json');
  xhr.send(form);
}

$('apply').addEventListener('submit', submit);
void load().catch((err) => {
  $('error').textContent = String(err);
});
