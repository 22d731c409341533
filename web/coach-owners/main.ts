/**
 * Staff register and edit coaching owners, see their actions by status and points, and copy each
 * owner's personal link to /coach (docs/coach.md). The link carries the owner header in the URL
 * fragment, which the browser never sends to the server.
 */
import { ApiError, problemText, type Answer } from '../common/api.js';
import { mountSignIn, Session } from '../common/auth.js';
import { byId as $, el } from '../common/ui.js';
import { addRow, clearErrors, MESSAGES, readForm, setRows, showError, showRefusal, type ActionRow } from './form.js';

type Registered = Answer<'GET', '/api/coach/owners/:ownerId'>;

const PAGE = 20;
const session = new Session('coach-owners:token');
const points = (n: number) => `${n.toLocaleString('ko-KR')}점`;
let offset = 0;
/** The owner being edited (undefined: the form registers a new one). */
let editing: string | undefined;

const api = session.api;

const ready = () => void (document.body.dataset.ready = 'true');

const fail = (err: unknown) => {
  $('form-result').textContent = '';
  $('error').textContent = err instanceof ApiError && err.status === 403 ? '스태프 권한이 필요합니다. · Staff role needed.' : `요청이 거절되었습니다. · ${problemText(err)}`;
};

export const linkOf = (header: string) => `${location.origin}/coach#owner=${encodeURIComponent(header)}`;

function showLink(ownerId: string, header: string): void {
  $('link-owner').textContent = ownerId;
  $<HTMLInputElement>('owner-link').value = linkOf(header);
  $('link-status').textContent = '';
  $('link-box').hidden = false;
  $('link-box').dataset.owner = ownerId;
}

async function copyLink(): Promise<void> {
  const input = $<HTMLInputElement>('owner-link');
  try {
    await navigator.clipboard.writeText(input.value);
    $('link-status').textContent = '링크를 복사했습니다. 대상자에게 보내 주세요. · Link copied: send it to the owner.';
  } catch {
    input.select();
    $('link-status').textContent = '복사하지 못했습니다. 선택된 링크를 직접 복사해 주세요. · Could not copy: the link is selected, copy it yourself.';
  }
}

async function loadOwners(): Promise<void> {
  const { owners, total } = await api.get('/api/coach/owners', { query: { limit: PAGE, offset } });
  if (owners.length === 0 && offset > 0) {
    offset = Math.max(0, offset - PAGE);
    return loadOwners();
  }
  $('owners').replaceChildren(
    ...owners.map((o) => {
      const edit = el('button', { type: 'button', class: 'secondary', 'data-act': 'edit', 'aria-label': `${o.ownerId} 수정 · edit` }, '수정 · edit');
      edit.addEventListener('click', () => void startEdit(o.ownerId).catch(fail));
      const link = el('button', { type: 'button', 'data-act': 'link', 'aria-label': `${o.ownerId} 링크 · link` }, '링크 · link');
      link.addEventListener('click', () => {
        showLink(o.ownerId, o.header);
        $('owner-link').focus();
        $<HTMLInputElement>('owner-link').select();
      });
      const counts = `대기 ${o.actions.대기} · 진행 ${o.actions.진행} · 완료 ${o.actions.완료}`;
      return el(
        'tr',
        { 'data-owner': o.ownerId },
        el('td', { 'data-label': '코칭 ID · owner' }, o.ownerId),
        el('td', { class: 'vision', 'data-label': '비전 · vision' }, o.vision ?? el('span', { class: 'muted' }, '비전 없음 · none')),
        el('td', { 'data-label': '실천 · actions' }, el('span', { class: 'counts', title: 'not started · in progress · done' }, counts)),
        el('td', { class: 'points', 'data-label': '점수 · points' }, points(o.points)),
        el('td', { 'data-label': '작업 · actions' }, el('div', { class: 'ops' }, edit, link)),
      );
    }),
  );
  $('empty').hidden = total > 0;
  $('range').textContent = total ? `${offset + 1}–${offset + owners.length} / 총 ${total}명 · of ${total}` : '';
  $<HTMLButtonElement>('prev').disabled = offset === 0;
  $<HTMLButtonElement>('next').disabled = offset + owners.length >= total;
}

function newOwnerForm(): void {
  editing = undefined;
  clearErrors();
  $<HTMLFormElement>('owner-form').reset();
  $<HTMLInputElement>('owner-id').readOnly = false;
  $('form-title').textContent = '새 대상자 등록 · register an owner';
  $('save').textContent = '등록 · register';
  $('edit-note').hidden = true;
  $('cancel-edit').hidden = true;
  setRows([]);
  addRow();
}

async function startEdit(ownerId: string): Promise<void> {
  const o: Registered = await api.get('/api/coach/owners/:ownerId', { params: { ownerId } });
  editing = o.ownerId;
  clearErrors();
  $('form-result').textContent = '';
  $<HTMLInputElement>('owner-id').value = o.ownerId;
  $<HTMLInputElement>('owner-id').readOnly = true;
  $<HTMLTextAreaElement>('vision').value = o.vision ?? '';
  setRows(o.actions);
  $('form-title').textContent = `${o.ownerId} 수정 · edit ${o.ownerId}`;
  $('save').textContent = '저장 · save';
  $('edit-note').hidden = false;
  $('cancel-edit').hidden = false;
  showLink(o.ownerId, o.header);
  $('owner-form').scrollIntoView({ block: 'start' });
  $('vision').focus();
}

async function save(): Promise<void> {
  $('error').textContent = '';
  $('form-result').textContent = '';
  const read = readForm();
  if (!read) return;
  const { ownerId, body } = read;
  // a new registration must not replace an owner someone registered before (the PUT would)
  if (editing === undefined) {
    const existing = await api.get('/api/coach/owners/:ownerId', { params: { ownerId } }).then(
      () => true,
      (err: unknown) => {
        if (err instanceof ApiError && err.status === 404) return false;
        throw err;
      },
    );
    if (existing) {
      showError({ kind: 'ownerId' }, MESSAGES.ownerTaken);
      $('edit-existing').hidden = false;
      $('edit-existing').dataset.owner = ownerId;
      $('owner-id').focus();
      return;
    }
  }
  $<HTMLButtonElement>('save').disabled = true;
  try {
    const o = await api.put('/api/coach/owners/:ownerId', { params: { ownerId }, body });
    const created = editing === undefined;
    $('form-result').textContent = created
      ? `${o.ownerId}: 등록했습니다 (실천 ${o.actions.length}개). 아래 링크를 보내 주세요. · registered; send the link below.`
      : `${o.ownerId}: 저장했습니다 (실천 ${o.actions.length}개). · saved.`;
    showLink(o.ownerId, o.header);
    if (created) {
      offset = 0;
      await startEdit(o.ownerId);
      $('form-result').textContent = `${o.ownerId}: 등록했습니다 (실천 ${o.actions.length}개). 링크를 보내 주세요. · registered; send the link.`;
    } else {
      setRows(o.actions);
    }
    await loadOwners();
  } catch (err) {
    if (err instanceof ApiError && err.status === 400 && showRefusal({ code: err.code, message: err.serverMessage, details: err.details as never })) return;
    fail(err);
  } finally {
    $<HTMLButtonElement>('save').disabled = false;
  }
}

$('owner-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  void save().catch(fail);
});
$('add-action').addEventListener('click', () => {
  const li = addRow();
  (li.querySelector('.title') as HTMLElement).focus();
});
$('cancel-edit').addEventListener('click', () => {
  newOwnerForm();
  $('owner-id').focus();
});
$('edit-existing').addEventListener('click', () => void startEdit($('edit-existing').dataset.owner ?? '').catch(fail));
$('copy-link').addEventListener('click', () => void copyLink());
$('prev').addEventListener('click', () => {
  offset = Math.max(0, offset - PAGE);
  void loadOwners().catch(fail);
});
$('next').addEventListener('click', () => {
  offset += PAGE;
  void loadOwners().catch(fail);
});

session.onChange((me) => {
  const staff = !!me && (me.roles.includes('staff') || me.roles.includes('operator'));
  $('board').hidden = !staff;
  $('need').hidden = staff;
  document.body.dataset.auth = staff ? 'staff' : me ? 'other' : 'none';
  // ready (for the tests) once the first view is drawn: the owners for staff, else the sign-in
  if (staff) void loadOwners().catch(fail).finally(ready);
  else ready();
});
newOwnerForm();
mountSignIn($('signin'), session, 'staff');
void session.restore();
