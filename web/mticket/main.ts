import { publicApi, problemText, type Answer } from '../common/api.js';
import type { BingoCard as ServerBingoCard } from '../../src/ticket/bingo.js';
import { LiveTopics } from '../common/live.js';
import { byId as $, el } from '../common/ui.js';
import { kst } from '../common/time.js';
import { theme } from '../../src/ticket/themes.js';

type Ticket = Answer<'GET', '/api/mticket/:qrCode'>;
// the cards as the service makes them (the answer's schema leaves their fields open)
type BingoCard = ServerBingoCard;

const STATUS_TEXT: Record<Ticket['status'], string> = {
  entry_allowed: '입장 가능 · entry allowed',
  checked_in: '입장 완료 · checked in',
  cancelled: '취소됨 · cancelled',
};
const won = new Intl.NumberFormat('ko-KR', { style: 'currency', currency: 'KRW' });
/** An instant in KST with the zone (web/common/time.ts); a date without a time stays that date. */
const when = (s: string) => (/T/.test(s) ? kst(s) : s);

const code = decodeURIComponent(location.pathname.split('/').pop() ?? '');

function renderStatus(t: Pick<Ticket, 'status' | 'checked_in_at'>): void {
  const s = $('status');
  s.textContent = STATUS_TEXT[t.status];
  s.dataset.status = t.status;
  (document.querySelector('.stub') as HTMLElement).dataset.status = t.status;
  $('checked-in').textContent = t.checked_in_at ? `입장 시각 checked in at ${when(t.checked_in_at)}` : '';
  // a cancelled ticket shows no scannable code at all
  const cancelled = t.status === 'cancelled';
  $('qr-box').hidden = cancelled;
  $('void').hidden = !cancelled;
  if (cancelled) ($('qr') as HTMLImageElement).removeAttribute('src');
}

/** Marks are the holder's own game: kept in this browser only. */
function markKey(card: BingoCard) {
  return `bingo:${code}:${card.no}`;
}

function lines(marked: boolean[][]): boolean {
  const n = 5;
  for (let i = 0; i < n; i++) {
    if (marked[i]!.every(Boolean)) return true;
    if (marked.every((row) => row[i])) return true;
  }
  return marked.every((row, i) => row[i]) || marked.every((row, i) => row[n - 1 - i]);
}

function renderCard(card: BingoCard): HTMLElement {
  const saved: number[] = JSON.parse(localStorage.getItem(markKey(card)) ?? '[]');
  const marked = card.cells.map((row, r) => row.map((_, c) => (r === 2 && c === 2) || saved.includes(r * 5 + c)));
  const box = el('article', { class: 'bingo', 'data-kind': card.kind, 'data-card': String(card.no) });
  const table = el('table', { 'aria-label': `빙고 카드 ${card.no} · bingo card ${card.no}` });
  table.append(el('thead', {}, el('tr', {}, ...card.header.map((h) => el('th', { scope: 'col' }, h)))));
  const body = el('tbody');
  card.cells.forEach((row, r) => {
    const tr = el('tr');
    row.forEach((cell, c) => {
      const free = r === 2 && c === 2;
      const td = el('td', { class: free ? 'free' : marked[r]![c] ? 'marked' : '' });
      if (free) td.append(cell);
      else {
        // a button per cell: Tab reaches it, Enter or Space marks it, the state is announced
        const b = el('button', { type: 'button', 'aria-pressed': String(marked[r]![c]), 'aria-label': `${card.header[c]} ${cell}` }, cell);
        b.addEventListener('click', () => {
          marked[r]![c] = !marked[r]![c];
          td.classList.toggle('marked', marked[r]![c]);
          b.setAttribute('aria-pressed', String(marked[r]![c]));
          const list = marked.flatMap((row2, rr) => row2.map((m, cc) => (m && !(rr === 2 && cc === 2) ? rr * 5 + cc : -1))).filter((i) => i >= 0);
          localStorage.setItem(markKey(card), JSON.stringify(list));
          box.classList.toggle('won', lines(marked));
        });
        td.append(b);
      }
      tr.append(td);
    });
    body.append(tr);
  });
  table.append(body);
  box.classList.toggle('won', lines(marked));
  // the theme by its name (the hub's own list), not its code
  box.append(el('h2', { 'data-theme': card.theme }, `빙고 ${card.no} · ${theme(card.theme)?.name ?? card.theme}`), table);
  return box;
}

async function main(): Promise<void> {
  let t: Ticket;
  try {
    t = await publicApi.get('/api/mticket/:qrCode', { params: { qrCode: code } });
  } catch (err) {
    $('loading').hidden = true;
    const e = $('error');
    e.hidden = false;
    e.textContent = `티켓을 찾을 수 없습니다 · ${problemText(err)}`;
    document.body.dataset.ready = 'error';
    return;
  }
  document.title = `${t.show_name} · ${t.seat}`;
  $('loading').hidden = true;
  $('details').hidden = false;
  $('show-name').textContent = t.show_name;
  $('holder').textContent = t.holder ?? '—';
  $('venue').textContent = t.venue;
  $('date').textContent = when(t.date);
  $('seat').textContent = t.seat;
  $('amount').textContent = won.format(t.amount_paid);
  ($('qr') as HTMLImageElement).src = t.qr_image;
  $('code').textContent = t.qr_code;
  renderStatus(t);
  $('cards').replaceChildren(...(t.bingo_cards as unknown as BingoCard[]).map(renderCard));
  document.body.dataset.ready = 'true';
  const offline = () => ($('offline').hidden = navigator.onLine);
  window.addEventListener('online', offline);
  window.addEventListener('offline', offline);
  offline();
  keepForOffline(t.code);

  // the ticket turns "checked in" (or "cancelled") the moment a gate scans it
  const live = new LiveTopics();
  live.on(`mticket:${t.code}`, (data) => {
    const ev = data as { type: string; at: string };
    if (ev.type === 'checkin') renderStatus({ status: 'checked_in', checked_in_at: ev.at });
    if (ev.type === 'cancelled') renderStatus({ status: 'cancelled', checked_in_at: null });
    // staff undid a scan at the door: the ticket is as the undo left it (entry allowed again, say)
    if (ev.type === 'checkin_reverted') {
      const back = data as { status: Ticket['status']; checked_in_at: string | null };
      renderStatus({ status: back.status, checked_in_at: back.checked_in_at });
    }
  });
  // a change made before the subscription was in place (between the load and the socket, or while
  // the socket was down) is read again each time the socket (re)connects
  live.onConnection((up) => {
    document.body.dataset.live = up ? 'on' : 'off';
    if (up)
      void publicApi.get('/api/mticket/:qrCode', { params: { qrCode: code } }).then(
        // a ticket's status only moves on from entry_allowed: an answer older than a live event is dropped
        (fresh) => fresh.status !== 'entry_allowed' && $('status').dataset.status === 'entry_allowed' && renderStatus(fresh),
        () => undefined,
      );
  });
}

/** Asks the service worker to keep this ticket (page, data, code image, scripts and styles) for offline use. */
function keepForOffline(ticketCode: string): void {
  if (!('serviceWorker' in navigator)) return;
  const assets = [...document.querySelectorAll<HTMLLinkElement | HTMLScriptElement>('link[rel=stylesheet], script[src]')].map((n) =>
    new URL('href' in n ? n.href : n.src).pathname,
  );
  navigator.serviceWorker.addEventListener('message', (e) => {
    if ((e.data as { type?: string })?.type === 'kept') document.body.dataset.offlineReady = 'true';
  });
  // the web font's slices this ticket's text uses are kept too, so Korean renders offline on a phone
  // with no Korean font of its own (the slices are known once the fonts have loaded)
  // (the page's whole text, the hidden offline notice included, in both weights, so what shows only offline is covered)
  const text = document.body.textContent ?? '';
  const faces = Promise.all(['400', '700'].map((w) => document.fonts.load(`${w} 16px "Noto Sans KR"`, text).catch(() => [])));
  void Promise.all([navigator.serviceWorker.ready, faces.then(() => document.fonts.ready)]).then(([reg]) => {
    const urls = [location.pathname, `/api/mticket/${encodeURIComponent(ticketCode)}`, ...assets, ...fontFiles()];
    reg.active?.postMessage({ type: 'keep', urls });
  });
}

/** The font files this page has loaded (the web font's unicode-range slices and the emoji font), by path. */
function fontFiles(): string[] {
  const paths = performance
    .getEntriesByType('resource')
    .map((e) => new URL(e.name).pathname)
    .filter((p) => p.startsWith('/assets/') && p.endsWith('.woff2'));
  return [...new Set(paths)].slice(0, FONT_FILES_KEPT);
}
const FONT_FILES_KEPT = 40;

// the service worker keeps the last ticket shown, so the page still opens when the phone is offline
if ('serviceWorker' in navigator) void navigator.serviceWorker.register('/mticket-sw.js', { scope: '/mticket/' }).catch(() => undefined);
void main();
