/**
 * Staff back office (docs/ticket.md): shows with their door counters, a show's bookings (search,
 * book, the holder's mobile ticket link, cancel with a reason) and its check-in audit.
 */
import { problemText, type Answer } from '../common/api.js';
import { mountSignIn, Session } from '../common/auth.js';
import { demoSignIn } from '../common/demo-sign-in.js';
import { el, LiveTopics } from '../common/live.js';
import { amount, kstInput, resultText, showDate, statusText, when, type Booking } from './format.js';

import { byId as $ } from '../common/ui.js';

type Show = Answer<'GET', '/api/shows/:id'>;
type PageInfo = Answer<'GET', '/api/shows'>['page'];

const SHOWS_PAGE = 20;
const BOOKINGS_PAGE = 20;
const session = new Session('shows:token');
const api = session.api;
await demoSignIn(session); // a signed-in link from the demo tour (DEMO=1 only)
const state = { showsOffset: 0, show: undefined as Show | undefined, offset: 0, q: '', cancelling: undefined as Booking | undefined };


const say = (text: string) => {
  $('error').textContent = '';
  $('status').textContent = text;
};
/** A failure in Korean, and no success of an earlier action left beside it (the booked box goes). */
const fail = (err: unknown) => {
  $('status').textContent = '';
  $('booked').hidden = true;
  $('error').textContent = problemText(err);
};

/** Previous / next buttons and "21–40 / 57" for a paged list. */
function pager(container: HTMLElement, page: PageInfo, go: (offset: number) => void, what: string): void {
  container.replaceChildren();
  if (page.total === 0) return;
  const from = page.offset + 1;
  const to = Math.min(page.offset + page.limit, page.total);
  const prev = el('button', { type: 'button', class: 'secondary', 'aria-label': `이전 ${what} · previous ${what}` }, '← 이전 · previous');
  const next = el('button', { type: 'button', class: 'secondary', 'aria-label': `다음 ${what} · next ${what}` }, '다음 · next →');
  prev.disabled = page.offset === 0;
  next.disabled = to >= page.total;
  prev.addEventListener('click', () => go(Math.max(0, page.offset - page.limit)));
  next.addEventListener('click', () => go(page.offset + page.limit));
  container.append(prev, el('span', { class: 'muted small' }, `${from}–${to} / ${page.total}`), next);
}

// ---- the list of shows ---------------------------------------------------------------------------

async function loadShows(): Promise<void> {
  const { shows, page } = await api.get('/api/shows', { query: { limit: SHOWS_PAGE, offset: state.showsOffset } });
  $('shows').replaceChildren(
    ...(shows.length
      ? shows.map((s) =>
          el(
            'tr',
            { 'data-show': s.id },
            el('th', { scope: 'row' }, el('a', { href: `#show/${s.id}` }, s.name)),
            el('td', {}, s.venue),
            el('td', {}, showDate(s.date)),
            el('td', { class: 'num', 'data-count': 'tickets' }, String(s.counts.tickets)),
            el('td', { class: 'num', 'data-count': 'checked_in' }, String(s.counts.checked_in)),
            el('td', { class: 'num', 'data-count': 'cancelled' }, String(s.counts.cancelled)),
          ),
        )
      : [el('tr', {}, el('td', { colspan: '6', class: 'muted' }, '아직 공연이 없습니다 · no shows yet'))]),
  );
  pager($('shows-pager'), page, (offset) => {
    state.showsOffset = offset;
    void loadShows().catch(fail);
  }, '공연 shows');
}

$('new-show').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const body = { name: $<HTMLInputElement>('show-name').value.trim(), venue: $<HTMLInputElement>('show-venue').value.trim(), date: kstInput($<HTMLInputElement>('show-date').value) };
  api
    .post('/api/shows', { body })
    .then((show) => {
      (ev.target as HTMLFormElement).reset();
      say(`${show.name}: 만들었습니다 · show created`);
      location.hash = `#show/${show.id}`;
    })
    .catch(fail);
});

// ---- one show ------------------------------------------------------------------------------------

async function loadCounts(id: string): Promise<void> {
  const c = await api.get('/api/shows/:id/counts', { params: { id } });
  $('c-tickets').textContent = String(c.tickets);
  $('c-checked').textContent = String(c.checked_in);
  $('c-cancelled').textContent = String(c.cancelled);
}

function bookingRow(b: Booking): HTMLTableRowElement {
  const link = el('a', { href: b.page_url, target: '_blank', rel: 'noopener', class: 'code', 'aria-label': `${b.seat} 모바일 티켓 · mobile ticket ${b.code}` }, b.code);
  const actions = el('td', {});
  if (b.status === 'entry_allowed') {
    const cancel = el('button', { type: 'button', class: 'danger', 'data-act': 'cancel', 'aria-label': `${b.seat} 예매 취소 · cancel booking ${b.seat}` }, '취소 · cancel');
    cancel.addEventListener('click', () => openCancel(b));
    actions.append(cancel);
  }
  return el(
    'tr',
    { 'data-reservation': b.reservation_id, 'data-status': b.status },
    el('th', { scope: 'row' }, b.seat),
    el('td', {}, b.holder ?? '—'),
    el('td', { class: 'num' }, amount(b.amount_paid)),
    el('td', { class: `status ${b.status}` }, statusText(b)),
    el('td', {}, link),
    actions,
  );
}

async function loadBookings(id: string): Promise<void> {
  const { tickets, page } = await api.get('/api/shows/:id/tickets', { params: { id }, query: { limit: BOOKINGS_PAGE, offset: state.offset, q: state.q || undefined } });
  $('bookings').replaceChildren(
    ...(tickets.length ? tickets.map(bookingRow) : [el('tr', {}, el('td', { colspan: '6', class: 'muted' }, state.q ? '찾는 예매가 없습니다 · no matching bookings' : '아직 예매가 없습니다 · no bookings yet'))]),
  );
  pager($('bookings-pager'), page, (offset) => {
    state.offset = offset;
    void loadBookings(id).catch(fail);
  }, '예매 bookings');
}

async function loadAudit(id: string): Promise<void> {
  const { entries } = await api.get('/api/checkins/audit', { query: { show_id: id, limit: 50 } });
  $('audit').replaceChildren(
    ...(entries.length
      ? entries.map((e) => el('tr', { 'data-result': e.result }, el('td', {}, when(e.at)), el('td', {}, resultText(e.result)), el('td', { class: 'code' }, e.code ?? '—'), el('td', {}, e.scanner), el('td', {}, e.gate ?? '—')))
      : [el('tr', {}, el('td', { colspan: '5', class: 'muted' }, '입장 기록이 없습니다 · no check-in attempts yet'))]),
  );
}

// ---- the door: check-in lists, people inside (live on door:<show>) ------------------------------
async function loadDoor(id: string): Promise<void> {
  const [{ lists }, door] = await Promise.all([
    api.get('/api/shows/:id/lists', { params: { id } }),
    api.get('/api/shows/:id/door', { params: { id } }),
  ]);
  $('c-inside').textContent = String(door.inside);
  const inside = new Map(door.lists.map((l) => [l.id, l.inside]));
  $('lists').replaceChildren(
    ...lists.map((l) => {
      const admits = [l.seats?.map((s) => `${s.from}–${s.to}`).join(', '), l.kinds?.join(', ')].filter(Boolean).join(' · ') || '전체 · all tickets';
      const rules = [
        l.allow_multiple_entries ? '여러 번 입장 · multiple entries' : '한 번 입장 · one entry',
        l.allow_entry_after_exit ? '퇴장 후 재입장 · re-entry after exit' : '재입장 없음 · no re-entry',
        l.valid_from || l.valid_until ? `${l.valid_from ? when(l.valid_from) : ''} ~ ${l.valid_until ? when(l.valid_until) : ''}` : '',
      ].filter(Boolean).join(' · ');
      return el(
        'tr',
        { 'data-list': l.id },
        el('td', {}, `${l.name}${l.is_default ? ' (기본 · default)' : ''}`),
        el('td', {}, admits),
        el('td', {}, rules),
        el('td', { class: 'num inside' }, String(inside.get(l.id) ?? 0)),
        el('td', {}, el('a', { href: `/scan?show=${encodeURIComponent(id)}&list=${encodeURIComponent(l.id)}` }, '스캐너 열기 · open scanner')),
      );
    }),
  );
}
const live = new LiveTopics(undefined, () => session.token, () => void session.restore());
const followed = new Set<string>();
function followDoor(id: string): void {
  if (followed.has(id)) return;
  followed.add(id);
  const again = () => {
    if (state.show?.id === id) void Promise.all([loadDoor(id), loadCounts(id), loadAudit(id)]).catch(fail);
  };
  live.on(`door:${id}`, again, again);
}
$('new-list').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const show = state.show;
  if (!show) return;
  const v = (id: string) => $<HTMLInputElement>(id).value.trim();
  const from = v('list-from');
  const to = v('list-to') || from;
  const kinds = v('list-kinds').split(',').map((k) => k.trim()).filter(Boolean);
  const body = {
    name: v('list-name'),
    ...(from ? { seats: [{ from, to }] } : {}),
    ...(kinds.length ? { kinds } : {}),
    ...(v('list-from-time') ? { valid_from: kstInput(v('list-from-time')) } : {}),
    ...(v('list-until-time') ? { valid_until: kstInput(v('list-until-time')) } : {}),
    allow_multiple_entries: $<HTMLInputElement>('list-multiple').checked,
    allow_entry_after_exit: $<HTMLInputElement>('list-after-exit').checked,
    is_default: $<HTMLInputElement>('list-default').checked,
  };
  api
    .post('/api/shows/:id/lists', { params: { id: show.id }, body })
    .then(async (l) => {
      (ev.target as HTMLFormElement).reset();
      say(`${l.name}: 명단 추가 · list added`);
      await loadDoor(show.id);
    })
    .catch(fail);
});

const refreshShow = (id: string) => {
  followDoor(id);
  return Promise.all([loadCounts(id), loadBookings(id), loadAudit(id), loadDoor(id)]);
};

async function openShow(id: string): Promise<void> {
  const show = await api.get('/api/shows/:id', { params: { id } });
  if (state.show?.id !== show.id) {
    state.offset = 0;
    state.q = '';
    $<HTMLInputElement>('q').value = '';
    $('booked').hidden = true;
  }
  state.show = show;
  $('detail-title').textContent = show.name;
  $('detail-meta').textContent = `${show.venue} · ${showDate(show.date)}`;
  await refreshShow(show.id);
}

$('book').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const show = state.show;
  if (!show) return;
  const holder = $<HTMLInputElement>('book-holder').value.trim();
  const theme = $<HTMLSelectElement>('book-theme').value;
  const body = { show_id: show.id, seat: $<HTMLInputElement>('book-seat').value.trim(), amount_paid: Number($<HTMLInputElement>('book-amount').value), ...(holder ? { holder } : {}), ...(theme ? { theme } : {}) };
  $('booked').hidden = true;
  api
    .post('/api/reservations', { body })
    .then(async (t) => {
      (ev.target as HTMLFormElement).reset();
      const url = new URL(t.page_url, location.origin).href;
      $('booked-title').textContent = `${t.seat} · ${t.holder ?? '—'} · ${amount(t.amount_paid)} — 예매 완료 · booked (${t.code})`;
      const a = $<HTMLAnchorElement>('booked-link');
      a.href = url;
      a.textContent = url;
      $('booked').hidden = false;
      say(`${t.seat}: 예매 완료 · booked`);
      state.offset = 0;
      await refreshShow(show.id);
    })
    .catch(fail);
});

$('copy-link').addEventListener('click', () => {
  const url = $<HTMLAnchorElement>('booked-link').href;
  navigator.clipboard
    .writeText(url)
    .then(() => say('링크를 복사했습니다 · link copied'))
    .catch(() => say(`복사할 수 없습니다. 링크를 직접 선택하세요 · could not copy: select the link (${url})`));
});

$('search').addEventListener('submit', (ev) => {
  ev.preventDefault();
  if (!state.show) return;
  state.q = $<HTMLInputElement>('q').value.trim();
  state.offset = 0;
  void loadBookings(state.show.id).catch(fail);
});

// ---- cancel, behind a confirmation dialog ---------------------------------------------------------

const dialog = $<HTMLDialogElement>('cancel-dialog');
let returnFocus: HTMLElement | null = null;

function openCancel(b: Booking): void {
  state.cancelling = b;
  returnFocus = document.activeElement as HTMLElement | null;
  $('cancel-what').textContent = `${b.seat} · ${b.holder ?? '—'} · ${amount(b.amount_paid)} (${b.code})`;
  $<HTMLInputElement>('cancel-reason').value = '';
  dialog.showModal();
  $('cancel-reason').focus();
}

$('cancel-keep').addEventListener('click', () => dialog.close());
dialog.addEventListener('close', () => {
  state.cancelling = undefined;
  if (returnFocus?.isConnected) returnFocus.focus();
  else $('bookings-title').focus();
});

$('cancel-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const b = state.cancelling;
  const show = state.show;
  if (!b || !show) return dialog.close();
  const reason = $<HTMLInputElement>('cancel-reason').value.trim();
  api
    .post('/api/tickets/:id/cancel', { params: { id: b.reservation_id }, body: { reason } })
    .then(async () => {
      returnFocus = $('bookings-title');
      dialog.close();
      say(`${b.seat}: 취소했습니다 · cancelled (${reason})`);
      await refreshShow(show.id);
    })
    .catch((err) => {
      dialog.close();
      fail(err);
    });
});

// ---- which view ----------------------------------------------------------------------------------

const staff = () => !!session.me?.roles.some((r) => r === 'staff' || r === 'operator');

async function route(): Promise<void> {
  if (!staff()) return;
  const m = /^#show\/(s_[A-Za-z0-9_-]{10})$/.exec(location.hash);
  $('board').hidden = !!m;
  $('detail').hidden = !m;
  try {
    if (m) {
      await openShow(m[1]!);
      $('detail-title').focus();
    } else {
      state.show = undefined;
      await loadShows();
    }
  } catch (err) {
    fail(err);
  }
  document.body.dataset.ready = 'true';
}

$('back').addEventListener('click', () => {
  location.hash = '';
});
window.addEventListener('hashchange', () => void route());

session.onChange((me) => {
  const ok = staff();
  $('need').hidden = ok;
  if (!ok) {
    $('board').hidden = true;
    $('detail').hidden = true;
  }
  document.body.dataset.auth = ok ? 'staff' : me ? 'other' : 'none';
  live.reauthenticate();
  if (ok) void route();
  else document.body.dataset.ready = 'true';
});
mountSignIn($('signin'), session, 'staff');
void session.restore();
