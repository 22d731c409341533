/** Operators manage accounts (roles, password, disable) and scanner device tokens (docs/auth.md). */
import { mountSignIn, Session } from '../common/auth.js';
import { el } from '../common/live.js';

interface Account { user: string; name: string; roles: string[]; disabled: boolean; createdAt: string }
interface Device { id: string; gate: string; name: string; issuedBy: string; createdAt: string; expiresAt: string }

const ROLES: [string, string][] = [['operator', '운영자'], ['staff', '스태프'], ['partner', '파트너'], ['editor', '편집자'], ['trader', '트레이더']];
const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const session = new Session('accounts:token');
const when = (iso: string) => new Intl.DateTimeFormat('ko-KR', { dateStyle: 'short', timeStyle: 'short', timeZone: 'Asia/Seoul' }).format(new Date(iso));

async function answer<T>(res: Response): Promise<T> {
  const body = (await res.json().catch(() => ({}))) as { error?: { message?: string } };
  if (!res.ok) throw new Error(body.error?.message ?? `HTTP ${res.status}`);
  return body as T;
}

const ready = () => void (document.body.dataset.ready = 'true');

const fail = (err: unknown) => {
  $('error').textContent = (err as Error).message;
};
/** A new action starts with no message of an earlier one beside it (the error, and the form's own result). */
const clear = (...results: string[]) => {
  $('error').textContent = '';
  for (const id of results) $(id).replaceChildren();
};

function roleBoxes(container: HTMLElement, prefix: string, checked: string[]): () => string[] {
  const boxes = ROLES.map(([role, ko]) => {
    const box = el('input', { type: 'checkbox', id: `${prefix}-${role}`, value: role });
    box.checked = checked.includes(role);
    container.append(el('label', { for: `${prefix}-${role}` }, box, `${ko} ${role}`));
    return box;
  });
  return () => boxes.filter((b) => b.checked).map((b) => b.value);
}

async function loadAccounts(): Promise<void> {
  const { accounts } = await answer<{ accounts: Account[] }>(await session.fetch('/api/auth/accounts'));
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

async function change(user: string, body: Record<string, unknown>, done: string): Promise<void> {
  clear('new-result');
  try {
    await answer(await session.fetch(`/api/auth/accounts/${encodeURIComponent(user)}`, { method: 'PUT', body }));
    $('new-result').textContent = done;
    await loadAccounts();
  } catch (err) {
    fail(err);
  }
}

async function loadDevices(): Promise<void> {
  const { devices } = await answer<{ devices: Device[] }>(await session.fetch('/api/auth/devices'));
  $('devices').replaceChildren(
    ...devices.map((d) => {
      const revoke = el('button', { type: 'button', class: 'reject' }, '해지 · revoke');
      revoke.addEventListener('click', () => {
        clear();
        session
          .fetch(`/api/auth/devices/${d.id}`, { method: 'DELETE' })
          .then(answer)
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
  session
    .fetch('/api/auth/accounts', { body })
    .then((r) => answer<Account>(r))
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
  session
    .fetch('/api/auth/devices', { body })
    .then((r) => answer<{ token: string; device: Device }>(r))
    .then(async ({ token, device }) => {
      // shown once: the hub keeps only its hash
      $('device-result').replaceChildren(
        `${device.name} @ ${device.gate}: 이 토큰은 한 번만 표시됩니다 · shown once: `,
        el('span', { class: 'token', id: 'device-token' }, token),
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
