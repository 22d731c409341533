import DOMPurify from 'dompurify';
import { marked } from 'marked';
import { WebsocketProvider } from 'y-websocket';
import { Awareness } from 'y-protocols/awareness';
import * as Y from 'yjs';
import { Session, mountSignIn } from '../common/auth.js';
import { demoSignIn } from '../common/demo-sign-in.js';
import { WS_CLOSE_INVALID_TOKEN } from '../../src/hub/credentials.js';
import { LiveTopics, el } from '../common/live.js';
import { kst, kstTime } from '../common/time.js';
import { renderDiff } from './diffview.js';
import { bindEditor, type BoundEditor } from './editor.js';
import { hideNote, showHeld, showReleased } from './lock-note.js';
import { displayName, drawPeople, people, type Peer } from './people.js';
import { splitSlides } from './slides.js';
import { ConnectionIndicator, SaveIndicator, type SocketState } from './status.js';

interface DocSummary { slug: string; title: string; category: string; version: number; modified: number; author: string; size: number }
interface Doc extends DocSummary { content: string }

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const live = new LiveTopics();
/** The header's indicator follows the sockets' real state, from the first one on (status.ts). */
const conn = new ConnectionIndicator($('conn'));
live.onConnection((open) => conn.setTopics(open));
const saveState = new SaveIndicator($('save-state'));
/** Reading is open; writing, locks, presence and live co-editing need a signed-in editor. */
const session = new Session('docs:token');
await demoSignIn(session); // a signed-in link from the demo tour (DEMO=1 only)
const canEdit = () => !!session.me?.roles.some((r) => r === 'editor' || r === 'operator');
const isOperator = () => !!session.me?.roles.includes('operator');

/** Sanitized markdown: no script in a document ever runs. */
const render = (md: string) => DOMPurify.sanitize(marked.parse(md, { async: false }) as string);

async function api<T = any>(path: string, body?: unknown): Promise<{ status: number; body: T }> {
  try {
    const res = await session.fetch(path, body === undefined ? {} : { method: 'POST', body });
    return { status: res.status, body: (await res.json()) as T };
  } catch {
    return { status: 0, body: { error: { code: 'network', message: '서버에 연결할 수 없습니다 · cannot reach the server' } } as T };
  }
}

// ---- messages in the page (never alert()) ------------------------------------------------------
let noticeTimer: number | undefined;
function notice(text: string, kind: 'error' | 'info' = 'error'): void {
  const n = $('notice');
  n.textContent = text;
  n.dataset.kind = kind;
  n.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = window.setTimeout(() => (n.hidden = true), 8000);
}
const errorText = (r: { status: number; body: any }) => r.body?.error?.message ?? `HTTP ${r.status}`;

// ---- list, categories, search -------------------------------------------------------------------
async function loadList() {
  const cat = $<HTMLSelectElement>('category').value;
  const r = await api<{ docs: DocSummary[]; categories: Record<string, number> }>(`/api/md/docs${cat ? `?category=${encodeURIComponent(cat)}` : ''}`);
  if (r.status !== 200) return notice(errorText(r));
  const sel = $<HTMLSelectElement>('category');
  const keep = sel.value;
  sel.replaceChildren(el('option', { value: '' }, '모든 분류'), ...Object.entries(r.body.categories).map(([c, n]) => el('option', { value: c }, `${c} (${n})`)));
  sel.value = keep;
  $('doc-list').replaceChildren(...r.body.docs.map((d) => el('li', { 'data-slug': d.slug }, el('a', { href: `#${encodeURIComponent(d.slug)}` }, d.title), el('small', {}, `${d.category} · v${d.version}`))));
}
$('category').onchange = () => void loadList();
let searchTimer: number | undefined;
$<HTMLInputElement>('search').oninput = (e) => {
  clearTimeout(searchTimer);
  const q = (e.target as HTMLInputElement).value.trim();
  searchTimer = window.setTimeout(async () => {
    $('results').hidden = !q;
    $('doc-list').hidden = !!q;
    if (!q) return;
    const r = await api<{ results: { slug: string; title_html: string; snippet: string }[] }>(`/api/md/search?q=${encodeURIComponent(q)}`);
    if (r.status !== 200) return notice(errorText(r));
    if (r.body.results.length === 0) return $('results').replaceChildren(el('li', { class: 'muted' }, '결과 없음 · no results'));
    $('results').replaceChildren(...r.body.results.map((x) => {
      const a = el('a', { href: `#${encodeURIComponent(x.slug)}` });
      a.innerHTML = DOMPurify.sanitize(`<b>${x.title_html}</b><small>${x.snippet}</small>`);
      return el('li', { 'data-slug': x.slug }, a);
    }));
  }, 200);
};

// ---- new document: a form in the page -------------------------------------------------------------
const newForm = $<HTMLFormElement>('new-form');
const toggleNew = (open: boolean) => {
  newForm.hidden = !open;
  $('new-doc').setAttribute('aria-expanded', String(open));
  $('new-error').textContent = '';
  if (open) $('new-slug').focus();
};
$('new-doc').onclick = () => toggleNew(newForm.hidden);
$('new-cancel').onclick = () => toggleNew(false);
newForm.onsubmit = async (ev) => {
  ev.preventDefault();
  const slug = $<HTMLInputElement>('new-slug').value.trim();
  const category = $<HTMLInputElement>('new-category').value.trim() || 'general';
  if (!slug) return void ($('new-error').textContent = '주소를 입력하세요 · enter a slug');
  const r = await api('/api/md/save', { slug, category, content: `# ${slug}\n`, baseVersion: 0 });
  if (r.status !== 200) return void ($('new-error').textContent = errorText(r));
  toggleNew(false);
  $<HTMLInputElement>('new-slug').value = '';
  location.hash = slug;
};

// ---- the open document ----------------------------------------------------------------------
/**
 * An open document. `mode`: `loading` while the live room has not synced yet (the editor shows the
 * saved text, read-only, and nothing can be saved: a text that does not hold the stored content is
 * never presented for editing); `live` once it has synced (the editor follows the room); `http` when
 * the room could not be reached (LIVE_FAILURES, LIVE_WAIT_MS) (the editor holds the saved text loaded over
 * HTTP, and a save is built on its version, so someone else's later save is a conflict).
 */
interface Open { slug: string; doc: Y.Doc; provider?: WebsocketProvider; awareness: Awareness; editor: BoundEditor; presenceId?: string; heartbeat?: number; off: () => void; base: Doc; mode: 'loading' | 'live' | 'http'; stored?: Y.Doc; liveWait?: number }
/**
 * An editor edits the saved text over HTTP when the live room's socket has closed LIVE_FAILURES
 * times before it ever synced (refused by a proxy, say), or has not synced within LIVE_WAIT_MS.
 */
const LIVE_WAIT_MS = 15_000;
const LIVE_FAILURES = 2;
let cur: Open | undefined;
let peers: Peer[] = [];

let previewQueued = false;
function queuePreview() {
  if (previewQueued) return;
  previewQueued = true;
  requestAnimationFrame(() => {
    previewQueued = false;
    if (cur) $('preview').innerHTML = render(cur.editor.text());
  });
}

const drawPresence = () => drawPeople($('presence'), peers, session.me?.id);

/**
 * Lock state. The lock belongs to the signed-in identity: someone else's lock makes the editor
 * read-only and disables lock and save (an operator keeps the button, to break it), and the note
 * beside the editor says who holds it until when, then that it was released; signed out,
 * everything is read-only.
 */
let lockMine = false;
let lockOther = false;
/** The other person's lock the note shows (to say whose lock was released, and whether it ran out). */
let lockHeldBy: { who: string; until: number } | undefined;
let lockCheck: number | undefined;
let lockAsked = 0;
async function showLock(event?: { state?: string }) {
  if (!cur) return;
  const asked = ++lockAsked;
  const r = await api(`/api/md/lock/${encodeURIComponent(cur.slug)}`);
  // a later look (a newer event) supersedes this answer
  if (r.status !== 200 || !cur || asked !== lockAsked) return;
  const body = r.body;
  const me = session.me;
  lockMine = !!(body.locked && me && body.holder === me.id);
  lockOther = !!body.locked && !lockMine;
  const who = body.holder_name ?? body.holder;
  $('lock-state').className = 'lock' + (body.locked ? ' on' : '');
  $('lock-state').textContent = body.locked
    ? `잠김: ${lockMine ? '내 잠금' : who} · ${kstTime(body.expires_at, { seconds: false })}까지`
    : '잠금 없음';
  const breakable = lockOther && isOperator();
  $('lock-btn').textContent = lockMine ? '잠금 해제' : breakable ? '잠금 풀기 · break' : '잠금';
  const why = !canEdit() ? '편집자로 로그인하세요 · sign in as an editor' : lockOther ? `${who} 님이 잠갔습니다 · locked by ${who}` : '';
  $<HTMLButtonElement>('lock-btn').disabled = !canEdit() || (lockOther && !breakable);
  $<HTMLButtonElement>('save-btn').disabled = !canEdit() || lockOther || cur.mode === 'loading';
  for (const id of ['lock-btn', 'save-btn']) $(id).title = $<HTMLButtonElement>(id).disabled ? why : '';
  cur.editor.setEditable(canEdit() && !lockOther && !!cur.provider && cur.mode !== 'loading');
  $('editor-card').dataset.locked = lockOther ? 'other' : lockMine ? 'mine' : 'none';
  clearTimeout(lockCheck);
  if (lockOther) {
    showHeld($('lock-note'), body);
    lockHeldBy = { who, until: body.expires };
    // its expiry is checked when due too, in case the page does not hear of it (socket down)
    lockCheck = window.setTimeout(() => void showLock(), Math.max(1000, (body.remaining_ms ?? 0) + 500));
  } else if (lockHeldBy !== undefined) {
    // no event (a check when due, a reconnect): past its end it ran out, else it was released
    const how = event?.state ?? (Date.now() >= lockHeldBy.until ? 'expired' : 'released');
    showReleased($('lock-note'), lockHeldBy.who, how, Date.now(), canEdit());
    lockHeldBy = undefined;
  } else if (lockMine || $('lock-note').dataset.state !== 'released') {
    hideNote($('lock-note'));
  }
}
$('lock-btn').onclick = async () => {
  if (!cur) return;
  const r = await api(lockMine || lockOther ? '/api/md/unlock' : '/api/md/lock', { slug: cur.slug });
  if (r.status !== 200) notice(errorText(r));
  void showLock(r.body?.broken ? { state: 'broken' } : undefined);
};

let opening = 0;
async function open(slug: string) {
  close();
  const mine = ++opening;
  if (!slug) return;
  // a document opened for editing is not live until its co-editing socket has synced
  if (canEdit()) conn.setCoedit('connecting');
  const r = await api<{ doc: Doc }>(`/api/md/doc/${encodeURIComponent(slug)}`);
  // a later open (or a close) superseded this one while the document was fetched
  if (mine !== opening) return;
  if (r.status !== 200) {
    conn.setCoedit(undefined);
    return notice(errorText(r));
  }
  const doc = new Y.Doc();
  const text = doc.getText('content');
  // live co-editing needs an editor's token; the browser cannot set headers on a WebSocket, so it
  // travels as the access_token query parameter (docs/collab.md). Signed out: the saved text, read-only.
  const token = session.token;
  const provider = canEdit() && token
    ? new WebsocketProvider(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/yjs`, slug, doc, { disableBc: true, params: { access_token: token } })
    : undefined;
  if (!provider) text.insert(0, r.body.doc.content);
  const awareness = provider?.awareness ?? new Awareness(doc);
  const editorHost = $('editor');
  editorHost.replaceChildren();
  // until the room has synced, the editor shows the saved text (a copy outside the room), read-only
  const stored = provider ? new Y.Doc() : undefined;
  stored?.getText('content').insert(0, r.body.doc.content);
  const editor = bindEditor(editorHost, stored ? stored.getText('content') : text, stored ? new Awareness(stored) : awareness, queuePreview);
  editor.setEditable(false);
  const offTopic = live.on(`md:${slug}`, (m: any) => {
    if (m.type === 'presence') (peers = m.peers, drawPresence());
    if (m.type === 'lock') void showLock(m);
    if (m.type === 'saved' && cur) {
      $('doc-meta').textContent = `v${m.version} · ${m.author}${m.author !== session.me?.id ? ' 님이 저장함' : ''}`;
      // the text in this editor contains a saved version only while it follows the room (the live
      // socket synced): then a save builds on that version. Otherwise (offline) the base stays the
      // version this text was built on, and a save after someone else's is a conflict (merge screen).
      if (cur.provider?.synced) cur.base.version = Math.max(cur.base.version, m.version);
      void loadList();
    }
    if (m.type === 'deleted') notice('이 문서는 삭제되었습니다 · this document was deleted', 'info');
  }, () => (void showLock(), void loadList()));
  const opened: Open = { slug, doc, provider, awareness, editor, off: offTopic, base: r.body.doc, mode: provider ? 'loading' : 'live', stored };
  cur = opened;
  if (provider) followSocket(opened, provider);
  if (provider) opened.liveWait = window.setTimeout(() => editSavedText(opened), LIVE_WAIT_MS);
  // the hub ends the socket of a token that is no longer valid (4401, final for the provider): the
  // session check shows the sign-in form, and the document reopens read-only
  provider?.on('connection-close', (ev: CloseEvent | null) => {
    if (ev?.code === WS_CLOSE_INVALID_TOKEN) void session.restore();
  });
  queuePreview();
  $('editor-card').hidden = false;
  $('doc-title').textContent = r.body.doc.title;
  $('doc-meta').textContent = `v${r.body.doc.version} · ${r.body.doc.category}`;
  for (const li of $('doc-list').children) (li as HTMLElement).toggleAttribute('aria-current', (li as HTMLElement).dataset.slug === slug);
  const join = async () => {
    if (cur !== opened || !provider) return;
    const p = await api('/api/md/presence', { slug, id: opened.presenceId });
    if (p.status !== 200 || cur !== opened) return;
    opened.presenceId = p.body.id;
    peers = p.body.peers;
    // remote carets carry the same name as the presence list (the display name, told apart from a namesake's)
    const me = session.me;
    const label = people(peers).find((x) => x.user === me?.id)?.label ?? displayName({ name: me?.name, user: me?.id });
    provider.awareness.setLocalStateField('user', { name: label, color: p.body.color, colorLight: `${p.body.color}33` });
    drawPresence();
  };
  // the page may have moved on (another document, or leaving) while presence was asked for
  if (provider) {
    await join();
    if (cur !== opened) return;
    opened.heartbeat = window.setInterval(join, 15_000);
  } else {
    const p = await api<{ peers: Peer[] }>(`/api/md/presence/${encodeURIComponent(slug)}`);
    if (cur !== opened) return;
    peers = p.status === 200 ? p.body.peers : [];
    drawPresence();
  }
  void showLock();
}

/** The room has synced: the editor leaves the saved copy and follows the room's text. */
function followRoom(opened: Open) {
  clearTimeout(opened.liveWait);
  opened.mode = 'live';
  opened.editor.destroy();
  opened.stored?.destroy();
  opened.stored = undefined;
  const host = $('editor');
  host.replaceChildren();
  opened.editor = bindEditor(host, opened.doc.getText('content'), opened.awareness, queuePreview);
  queuePreview();
  void showLock();
}

/**
 * The room could not be reached in time (a proxy that blocks WebSockets, say): the page stops
 * trying, and the editor edits the saved text loaded over HTTP; a save is built on that version.
 */
function editSavedText(opened: Open) {
  if (cur !== opened || opened.mode !== 'loading') return;
  opened.mode = 'http';
  opened.provider?.destroy();
  conn.setCoedit('offline');
  notice('실시간 공동 편집에 연결할 수 없어 저장된 내용을 편집합니다. 저장하면 그 사이 다른 사람의 저장과 비교합니다 · live co-editing is unreachable: editing the saved text; a save is checked against anyone else\'s', 'info');
  void showLock();
}

/**
 * The co-editing socket of an open document: its state goes to the header's indicator, and each
 * time it has synced, the editor's text contains every version saved so far, so the base of the
 * next save is the document's current version.
 */
function followSocket(opened: Open, provider: WebsocketProvider) {
  let state: SocketState = 'connecting';
  const set = (s: SocketState) => {
    state = s;
    if (cur === opened) conn.setCoedit(s);
  };
  set('connecting');
  // a socket that closed (or never opened) is offline, reconnecting, until it has synced again
  provider.on('status', ({ status }: { status: string }) => {
    if (status === 'disconnected') set('offline');
    else if (status === 'connecting' && state !== 'offline') set('connecting');
  });
  let failures = 0;
  provider.on('connection-close', () => {
    set('offline');
    if (opened.mode === 'loading' && ++failures >= LIVE_FAILURES) editSavedText(opened);
  });
  provider.on('sync', async (synced: boolean) => {
    if (cur !== opened || !synced || opened.mode === 'http') return;
    if (opened.mode === 'loading') followRoom(opened);
    set('live');
    queuePreview();
    const r = await api<{ doc: Doc }>(`/api/md/doc/${encodeURIComponent(opened.slug)}`);
    if (r.status === 200 && cur === opened && provider.synced) opened.base.version = Math.max(opened.base.version, r.body.doc.version);
  });
}

function close() {
  opening++;
  conn.setCoedit(undefined);
  saveState.reset();
  clearTimeout(lockCheck);
  lockHeldBy = undefined;
  hideNote($('lock-note'));
  if (!cur) return;
  // a beacon cannot carry the bearer token: a keepalive fetch outlives the page just the same
  if (cur.presenceId) void fetch('/api/md/presence/leave', { method: 'POST', keepalive: true, headers: session.headers(true), body: JSON.stringify({ slug: cur.slug, id: cur.presenceId }) }).catch(() => undefined);
  clearInterval(cur.heartbeat);
  cur.off();
  clearTimeout(cur.liveWait);
  cur.editor.destroy();
  cur.stored?.destroy();
  cur.provider?.destroy();
  if (!cur.provider) cur.awareness.destroy();
  cur.doc.destroy();
  cur = undefined;
  lockMine = lockOther = false;
}
window.addEventListener('beforeunload', close);

// narrow screens show the editor or the preview, switched by one button
$('view-toggle').onclick = () => {
  const panes = $('panes');
  const preview = panes.dataset.view !== 'preview';
  panes.dataset.view = preview ? 'preview' : 'edit';
  $('view-toggle').setAttribute('aria-pressed', String(preview));
  $('view-toggle').textContent = preview ? '편집' : '미리보기';
};

// ---- explicit save with baseVersion, conflict -> merge screen -----------------------------------
/**
 * Saves `content` as a version built on `baseVersion` (the version the editor's text was built on:
 * see the `saved` handler and followSocket). A save someone else's save overtook is a 409
 * version_conflict: the merge screen shows their text beside yours. A save made while the live
 * socket was not synced reopens the document afterwards: the saved text comes back from the room,
 * and the edits this page had not yet sent are not merged in a second time.
 */
async function saveVersion(content: string, baseVersion: number) {
  const opened = cur;
  if (!opened) return;
  saveState.saving();
  const r = await api('/api/md/save', { slug: opened.slug, content, baseVersion });
  if (cur !== opened) return;
  if (r.status === 409 && r.body.error?.code === 'version_conflict') {
    const d = r.body.error.details;
    // the other save already holds exactly this text: nothing to merge
    if (d.content === content) return saveVersion(content, d.current_version);
    showMerge(content, d);
    saveState.conflict(d.current_version);
    return;
  }
  if (r.status !== 200) {
    saveState.failed(errorText(r));
    return notice(`저장 실패 · save failed: ${errorText(r)}`);
  }
  const doc = r.body.doc as Doc;
  opened.base = doc;
  $('merge').hidden = true;
  if (!opened.provider?.synced) await open(opened.slug);
  saveState.saved(doc.version, doc.modified);
  notice(`v${doc.version} 저장됨 · saved`, 'info');
}
function showMerge(content: string, d: { current_version: number; base_version: number; content: string; author?: string }) {
  $('merge').hidden = false;
  const by = d.author ? ` · ${d.author}` : '';
  $('merge-info').textContent = `서버 v${d.current_version}${by} (내 기준 v${d.base_version}) · someone saved v${d.current_version} after v${d.base_version}, which yours is built on`;
  const mine = $<HTMLTextAreaElement>('mine');
  mine.value = content;
  const heads: [string, string] = [`서버 server v${d.current_version}`, '내 것 mine'];
  renderDiff($('merge-diff'), d.content, content, heads);
  mine.oninput = () => renderDiff($('merge-diff'), d.content, mine.value, heads);
  $('merge-save').onclick = () => void saveVersion(mine.value, d.current_version);
  $('merge').scrollIntoView({ block: 'nearest' });
}
$('save-btn').onclick = () => cur && void saveVersion(cur.editor.text(), cur.base.version);
$('merge-cancel').onclick = () => ($('merge').hidden = true);

// ---- history: side-by-side diff against the current text ----------------------------------------
$('history-btn').onclick = async () => {
  if (!cur) return;
  const slug = cur.slug;
  const h = await api(`/api/md/history/${encodeURIComponent(slug)}`);
  if (h.status !== 200) return notice(errorText(h));
  $('history').hidden = false;
  $('diff').replaceChildren();
  $('versions').replaceChildren(...h.body.versions.map((v: any) => {
    const show = el('button', { type: 'button', class: 'secondary' }, '비교');
    show.onclick = async () => {
      const full = await api(`/api/md/history/${encodeURIComponent(slug)}/${v.version}`);
      if (full.status !== 200) return notice(errorText(full));
      renderDiff($('diff'), full.body.version.content, cur?.editor.text() ?? '', [`v${v.version}`, '지금 now']);
    };
    const restore = el('button', { type: 'button', class: 'secondary' }, '복원');
    restore.onclick = async () => {
      const r = await api('/api/md/restore', { slug, version: v.version });
      if (r.status !== 200) notice(errorText(r));
      else notice(`v${v.version}을 새 버전으로 복원함 · restored`, 'info');
    };
    // this version as a file: its markdown, or one standalone HTML page (sanitised by the hub)
    const file = (format: 'md' | 'html', label: string) =>
      el('a', { href: `/api/md/export/${encodeURIComponent(slug)}?format=${format}&version=${v.version}`, download: '', class: 'export', 'data-format': format }, label);
    return el('li', { 'data-version': String(v.version) }, `v${v.version} · ${v.author} · ${kst(v.modified)} `, show, ' ', restore, ' ', file('md', 'MD 내보내기'), ' ', file('html', 'HTML 내보내기'));
  }));
  $('history').scrollIntoView({ block: 'nearest' });
};

// ---- statistics --------------------------------------------------------------------------------
$('show-stats').onclick = async () => {
  const r = await api('/api/md/stats');
  if (r.status !== 200) return notice(errorText(r));
  const s = r.body;
  $('stats').hidden = false;
  const max = Math.max(1, ...Object.values(s.categories as Record<string, number>));
  $('stats-body').replaceChildren(
    el('div', { class: 'grid' }, ...Object.entries({ 문서: s.totals.documents, '이번 주': s.totals.documents_this_week, 분류: s.totals.categories, '평균 크기': `${s.totals.average_size} B`, 잠금: s.locks }).map(([k, v]) => el('div', {}, el('div', { class: 'label' }, k), el('div', { class: 'figure', 'data-stat': k }, String(v))))),
    el('div', { class: 'bars' }, ...Object.entries(s.categories as Record<string, number>).map(([c, n]) => {
      const bar = el('span', { class: 'b' });
      bar.style.width = `${(n / max) * 12}rem`;
      return el('div', {}, el('span', {}, c), bar, el('span', {}, String(n)));
    })),
    el('ol', { id: 'recent' }, ...s.recent.map((d: any) => el('li', {}, `${d.title} · ${d.author} · ${kst(d.modified)}`))),
  );
};

// ---- presentation mode ---------------------------------------------------------------------------
let slides: string[] = [];
let slideAt = 0;
const showSlide = () => {
  $('slide').innerHTML = render(slides[slideAt] ?? '');
  $('slide-no').textContent = `${slideAt + 1} / ${slides.length}`;
  $('slides').dataset.index = String(slideAt);
};
$('present-btn').onclick = () => {
  slides = splitSlides(cur?.editor.text() ?? '');
  slideAt = 0;
  $('slides').hidden = false;
  showSlide();
};
document.addEventListener('keydown', (e) => {
  if ($('slides').hidden) return;
  if (e.key === 'ArrowRight' || e.key === ' ') slideAt = Math.min(slides.length - 1, slideAt + 1);
  else if (e.key === 'ArrowLeft') slideAt = Math.max(0, slideAt - 1);
  else if (e.key === 'Escape') return void ($('slides').hidden = true);
  else return;
  e.preventDefault();
  showSlide();
});

// ---- boot --------------------------------------------------------------------------------------
mountSignIn($('signin'), session, 'editor');
/** Signing in or out reopens the document: live co-editing with the new identity, or read-only. */
const showRights = () => {
  $<HTMLButtonElement>('new-doc').disabled = !canEdit();
  if (canEdit()) return; // saving and locking are enabled by the lock's answer (showLock)
  // signed out: at once, not after the lock's answer, no button on the page writes
  for (const id of ['save-btn', 'lock-btn']) $<HTMLButtonElement>(id).disabled = true;
  toggleNew(false);
};
let known = false;
session.onChange(() => {
  showRights();
  if (known && location.hash.length > 1) void open(decodeURIComponent(location.hash.slice(1)));
});
await session.restore();
known = true;
live.on('md:all', () => void loadList(), () => void loadList());
window.addEventListener('hashchange', () => void open(decodeURIComponent(location.hash.slice(1))));
await loadList();
if (location.hash.length > 1) await open(decodeURIComponent(location.hash.slice(1)));
document.body.dataset.ready = 'true';
