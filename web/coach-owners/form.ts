/**
 * The owner form: owner id, vision and the action rows (title, phase, reward), checked here as the
 * service checks them (src/coach/routes.ts), and the service's refusals shown next to their field.
 */
import { el } from '../common/live.js';

export type Phase = '티' | '옴' | '타' | '음';
export interface ActionRow { id: string; title: string; phase: Phase; reward: number; status?: string }
export interface OwnerBody { vision?: string; actions: { id: string; title: string; phase: Phase; reward: number }[] }

const PHASES: [Phase, string][] = [['티', '티 · Ti'], ['옴', '옴 · Om'], ['타', '타 · Ta'], ['음', '음 · Eum']];
export const OWNER_ID_RE = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_ACTIONS = 50;
const MAX_REWARD = 1_000_000;
const STATUS_LABEL: Record<string, string> = { 대기: '대기 · not started', 진행: '진행 · in progress', 완료: '완료 · done' };

/** What each field must be, in Korean first. */
export const MESSAGES = {
  ownerId: '코칭 ID는 영문·숫자·_·- 1~64자로 써 주세요. · 1 to 64 of A-Z a-z 0-9 _ -',
  ownerTaken: '이미 등록된 코칭 ID입니다. 새로 등록하면 덮어쓰게 되니 수정해 주세요. · Already registered: edit it instead.',
  vision: '비전은 300자 이하로 써 주세요. · At most 300 characters.',
  actions: '실천은 50개까지 등록할 수 있습니다. · At most 50 actions.',
  title: '실천 제목을 1~120자로 써 주세요. · A title of 1 to 120 characters.',
  phase: '단계는 티·옴·타·음 중 하나입니다. · One of 티 옴 타 음.',
  reward: '보상은 0~1,000,000 사이의 정수입니다. · A whole number from 0 to 1,000,000.',
  duplicate: '같은 실천이 두 번 들어 있습니다. · This action appears twice.',
  timeZone: '시간대가 올바르지 않습니다. · Not a valid time zone.',
} as const;

import { byId as $ } from '../common/ui.js';
const rows = () => [...$('action-rows').querySelectorAll<HTMLLIElement>('li')];
const part = <T extends HTMLElement>(li: HTMLLIElement, cls: string) => li.querySelector(`.${cls}`) as T;

let serial = 0;
/** An id for a new row that no row of the form has (kept rows keep theirs: that keeps their status). */
function freshId(): string {
  const taken = new Set(rows().map((li) => li.dataset.id));
  let id: string;
  do id = `a${++serial}`;
  while (taken.has(id));
  return id;
}

function renumber(): void {
  rows().forEach((li, i) => {
    const n = i + 1;
    part<HTMLInputElement>(li, 'title').setAttribute('aria-label', `실천 ${n} 제목 · action ${n} title`);
    part<HTMLSelectElement>(li, 'phase').setAttribute('aria-label', `실천 ${n} 단계 · action ${n} phase`);
    part<HTMLInputElement>(li, 'reward').setAttribute('aria-label', `실천 ${n} 보상 점수 · action ${n} reward points`);
    part<HTMLButtonElement>(li, 'remove').setAttribute('aria-label', `실천 ${n} 삭제 · remove action ${n}`);
  });
  $<HTMLButtonElement>('add-action').disabled = rows().length >= MAX_ACTIONS;
}

export function addRow(a?: ActionRow): HTMLLIElement {
  const id = a?.id ?? freshId();
  const li = el('li', { 'data-id': id, 'data-phase': a?.phase ?? '티' });
  const errId = `row-${id}-error`;
  const title = el('input', { class: 'title', maxlength: '120', placeholder: '예: 아침 산책 20분 · e.g. a 20-minute walk', 'aria-describedby': errId, autocomplete: 'off' });
  title.value = a?.title ?? '';
  const phase = el('select', { class: 'phase', 'aria-describedby': errId });
  for (const [v, label] of PHASES) phase.append(el('option', { value: v }, label));
  phase.value = a?.phase ?? '티';
  phase.addEventListener('change', () => (li.dataset.phase = phase.value));
  const reward = el('input', { class: 'reward', type: 'number', min: '0', max: String(MAX_REWARD), step: '1', inputmode: 'numeric', 'aria-describedby': errId });
  reward.value = String(a?.reward ?? 10);
  const status = el('span', { class: 'status' }, a?.status ? STATUS_LABEL[a.status] ?? a.status : '새 실천 · new');
  const remove = el('button', { type: 'button', class: 'remove' }, '삭제 · remove');
  remove.addEventListener('click', () => {
    const next = li.nextElementSibling ?? li.previousElementSibling;
    li.remove();
    renumber();
    ((next?.querySelector('.title') as HTMLElement | null) ?? $('add-action')).focus();
  });
  li.append(title, phase, reward, status, remove, el('p', { class: 'error small err', id: errId }));
  $('action-rows').append(li);
  renumber();
  return li;
}

export function setRows(actions: ActionRow[]): void {
  $('action-rows').replaceChildren();
  for (const a of actions) addRow(a);
  renumber();
}

/** Clears every message and invalid mark. */
export function clearErrors(): void {
  for (const e of document.querySelectorAll<HTMLElement>('#owner-form p.error')) e.textContent = '';
  for (const e of document.querySelectorAll('#owner-form [aria-invalid]')) e.removeAttribute('aria-invalid');
  $('edit-existing').hidden = true;
}

function mark(field: HTMLElement, message: string, box: HTMLElement): void {
  field.setAttribute('aria-invalid', 'true');
  box.textContent = box.textContent ? `${box.textContent} ${message}` : message;
}

export type FieldRef = { kind: 'ownerId' | 'vision' | 'actions' } | { kind: 'title' | 'phase' | 'reward' | 'row'; index: number };

/** Shows `message` next to the field; answers whether it found the field. */
export function showError(ref: FieldRef, message: string): boolean {
  if (ref.kind === 'ownerId') mark($('owner-id'), message, $('owner-id-error'));
  else if (ref.kind === 'vision') mark($('vision'), message, $('vision-error'));
  else if (ref.kind === 'actions') mark($('actions-box'), message, $('actions-error'));
  else if ('index' in ref) {
    const li = rows()[ref.index];
    if (!li) return false;
    const field = ref.kind === 'row' ? part<HTMLInputElement>(li, 'title') : part<HTMLElement>(li, ref.kind);
    mark(field, message, part(li, 'err'));
  }
  return true;
}

/** Focuses the first field marked invalid. */
export function focusFirstError(): void {
  document.querySelector<HTMLElement>('#owner-form [aria-invalid="true"]')?.focus();
}

/** The body to send, or undefined after showing what is wrong (the service's own rules). */
export function readForm(): { ownerId: string; body: OwnerBody } | undefined {
  clearErrors();
  let ok = true;
  const ownerId = $<HTMLInputElement>('owner-id').value.trim();
  if (!OWNER_ID_RE.test(ownerId)) ok = !showError({ kind: 'ownerId' }, MESSAGES.ownerId);
  const vision = $<HTMLTextAreaElement>('vision').value.trim();
  if (vision.length > 300) ok = !showError({ kind: 'vision' }, MESSAGES.vision);
  const list = rows();
  if (list.length > MAX_ACTIONS) ok = !showError({ kind: 'actions' }, MESSAGES.actions);
  const actions = list.map((li, index) => {
    const title = part<HTMLInputElement>(li, 'title').value.trim();
    const phase = part<HTMLSelectElement>(li, 'phase').value as Phase;
    const raw = part<HTMLInputElement>(li, 'reward').value.trim();
    const reward = /^\d{1,7}$/.test(raw) ? Number(raw) : NaN;
    if (title.length < 1 || title.length > 120) ok = !showError({ kind: 'title', index }, MESSAGES.title);
    if (!PHASES.some(([p]) => p === phase)) ok = !showError({ kind: 'phase', index }, MESSAGES.phase);
    if (!Number.isInteger(reward) || reward < 0 || reward > MAX_REWARD) ok = !showError({ kind: 'reward', index }, MESSAGES.reward);
    return { id: li.dataset.id!, title, phase, reward };
  });
  if (!ok) {
    focusFirstError();
    return undefined;
  }
  return { ownerId, body: { ...(vision ? { vision } : {}), actions } };
}

interface Refusal { code?: string; message?: string; details?: { issues?: { field: string; message: string }[]; actionId?: string } }

/**
 * Puts a 400 of the service next to its fields: `actions.2.reward` → the third row's reward, in
 * Korean with the service's words after it. Answers false when no field matched (shown as a whole).
 */
export function showRefusal(err: Refusal): boolean {
  clearErrors();
  let shown = false;
  if (err.code === 'duplicate_action' && err.details?.actionId) {
    const index = rows().findIndex((li) => li.dataset.id === err.details!.actionId);
    shown = showError({ kind: 'row', index }, `${MESSAGES.duplicate} (${err.message ?? ''})`);
  }
  for (const issue of err.details?.issues ?? []) {
    const [head, n, leaf] = issue.field.split('.');
    const say = (ko: string) => `${ko} (${issue.field}: ${issue.message})`;
    if (head === 'ownerId') shown = showError({ kind: 'ownerId' }, say(MESSAGES.ownerId)) || shown;
    else if (head === 'vision') shown = showError({ kind: 'vision' }, say(MESSAGES.vision)) || shown;
    else if (head === 'timeZone') shown = showError({ kind: 'vision' }, say(MESSAGES.timeZone)) || shown;
    else if (head === 'actions' && n !== undefined && (leaf === 'title' || leaf === 'phase' || leaf === 'reward')) {
      shown = showError({ kind: leaf, index: Number(n) }, say(MESSAGES[leaf])) || shown;
    } else if (head === 'actions') shown = showError({ kind: 'actions' }, say(MESSAGES.actions)) || shown;
  }
  focusFirstError();
  return shown;
}
