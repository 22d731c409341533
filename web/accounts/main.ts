/** Operators manage accounts (roles, password, disable) and scanner device tokens (docs/auth.md). */
import { problemText, type Answer, type Body } from '../common/api.js';
import { mountSignIn, Session } from '../common/auth.js';
import { byId as $, copyButton, el, kst } from '../common/ui.js';

type Device = Answer<'GET', '/api/auth/devices'>['devices'][number];
type Role = Body<'POST', '/api/auth/accounts'>['roles'][number];

const ROLES: [string, string][] = [['operator', '운영자'], ['staff', '스태프'], ['partner', '파트너'], ['editor', '편집자'], ['trader', '트레이더']];
const session = new Session('accounts:token');
const api = session.api;
const when = (iso: string) => kst(iso);

const ready = () => void (document.body.dataset.ready = 'true');

/** A failure replaces any success message still shown (no stale "saved" beside the error). */
const fail = (err: unknown) => {
  for (const id of ['new-result', 'device-result']) $(id).replaceChildren();
  $('error').textContent = problemText(err);
};
/** A new action starts with no message of an earlier one beside it (the error, and the form's own result). */
const clear = (...results: string[]) => {
  $('error').textContent = '';
  for (const id of results) $(id).replaceChildren();
};

function roleBoxes(container: HTMLElement, prefix: string, checked: string[]): () => Role[] {
  const boxes = ROLES.map(([role, ko]) => {
    const box = el('input', { type: 'checkbox', id: `${prefix}-${role}`, value: role });
    // the default too, so a form's reset after a creation keeps the roles it started with
    box.checked = box.defaultChecked = checked.includes(role);
    container.append(el('label', { for: `${prefix}-${role}` }, box, `${ko} ${role}`));
    return box;
  });
  return () => boxes.filter((b) => b.checked).map((b) => b.value as Role);
}

async function loadAccounts(): Promise<void> {
  const { accounts } = await api.get('/api/auth/accounts');
  $('accounts').replaceChildren(
    ...accounts.map((a) => {
      const roles = el('fieldset', { class: 'roles', 'aria-label': `${a.user} roles` });
      const picked = roleBoxes(roles, `r-${a.user}`, a.roles);
      const save = el('button', { type: 'button', 'data-act': 'roles' }, '역할 저장 · save roles');
      save.addEventListener('click', () => void change(a.user, { roles: picked() }, `${a.user}: 역할 저장됨 · roles saved`));
      const toggle = el('button', { type: 'button', 'data-act': 'toggle' }, a.disabled ? '사용 · enable' : '사용 중지 · disable');
      toggle.addEventListener('click', () => void change(a.user, { disabled: !a.disabled }, `${a.user}: ${a.disabled ? '사용 · enabled' : '중지됨 · disabled'}`));
      const pw = el('input', { type: 'password', minlength: '8', autocomplete: 'new-password', 'aria-label': `${a.user} 새 비밀번호 new password`, placeholder: '새 비밀번호 new password' });
      const reset = el('button', { type: 'button', 'data-act': 'password' }, '비밀번호 변경 · set password');
      reset.addEventListener('click', () => void change(a.user, { password: pw.value }, `${a.user}: 비밀번호 변경됨 · password set`));
      return el(
        'tr',
        { 'data-user': a.user },
        el('td', {}, a.user),
        el('td', {}, a.name),
        el('td', {}, roles),
        el('td', {}, a.disabled ? '중지 disabled' : '사용 active'),
        el('td', {}, el('div', { class: 'actions' }, save, toggle, pw, reset)),
      );
    }),
  );
}

async function change(user: string, body: { roles?: Role[]; disabled?: boolean; password?: string }, done: string): Promise<void> {
  clear('new-result');
  try {
    await api.put('/api/auth/accounts/:user', { params: { user }, body });
    $('new-result').textContent = done;
    await loadAccounts();
  } catch (err) {
    fail(err);
  }
}

async function loadDevices(): Promise<void> {
  const { devices } = await api.get('/api/auth/devices');
  $('devices').replaceChildren(
    ...devices.map((d) => {
      const revoke = el('button', { type: 'button', class: 'reject' }, '해지 · revoke');
      revoke.addEventListener('click', () => {
        clear();
        api
          .delete('/api/auth/devices/:id', { params: { id: d.id } })
          .then(loadDevices)
          .catch(fail);
      });
      return el('tr', { 'data-device': d.id }, el('td', {}, `${d.name} (${d.id})`), el('td', {}, d.gate), el('td', {}, `${when(d.createdAt)} · ${d.issuedBy}`), el('td', {}, when(d.expiresAt)), el('td', {}, revoke));
    }),
  );
}

const newRoles = roleBoxes($('new-roles'), 'new', ['staff']);
$('new-account').addEventListener('submit', (ev) => {
  ev.preventDefault();
  clear('new-result');
  const body = { user: $<HTMLInputElement>('new-user').value.trim(), password: $<HTMLInputElement>('new-password').value, roles: newRoles(), ...($<HTMLInputElement>('new-name').value.trim() ? { name: $<HTMLInputElement>('new-name').value.trim() } : {}) };
  api
    .post('/api/auth/accounts', { body })
    .then(async (a) => {
      $('new-result').textContent = `${a.user}: 만들었습니다 · created (${a.roles.join(', ')})`;
      (ev.target as HTMLFormElement).reset();
      await loadAccounts();
    })
    .catch(fail);
});

$('new-device').addEventListener('submit', (ev) => {
  ev.preventDefault();
  clear('device-result');
  const body = { gate: $<HTMLInputElement>('device-gate').value.trim(), name: $<HTMLInputElement>('device-name').value.trim() };
  api
    .post('/api/auth/devices', { body })
    .then(async ({ token, device }: { token: string; device: Device }) => {
      // shown once: the hub keeps only its hash
      $('device-result').replaceChildren(
        `${device.name} @ ${device.gate}: 이 토큰은 한 번만 표시됩니다 · shown once: `,
        el('span', { class: 'token', id: 'device-token' }, token),
        ' ',
        copyButton(() => token, '토큰 복사 · copy token'),
      );
      (ev.target as HTMLFormElement).reset();
      await loadDevices();
    })
    .catch(fail);
});

session.onChange((me) => {
  const operator = !!me?.roles.includes('operator');
  $('board').hidden = !operator;
  $('need').hidden = operator;
  document.body.dataset.auth = operator ? 'operator' : me ? 'other' : 'none';
  // ready (for the tests) once the first view is drawn: the lists for an operator, else the sign-in
  if (operator) void Promise.all([loadAccounts(), loadDevices()]).catch(fail).finally(ready);
  else ready();
});
mountSignIn($('signin'), session, 'operator');
void session.restore();
