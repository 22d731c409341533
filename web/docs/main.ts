import DOMPurify from 'dompurify';
import { marked } from 'marked';
import { WebsocketProvider } from 'y-websocket';
import { Awareness } from 'y-protocols/awareness';
import * as Y from 'yjs';
import { ApiError, problemText, type Answer, type Body } from '../common/api.js';
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

type Doc = Answer<'GET', '/api/md/doc/:slug'>['doc'];
type Visibility = Body<'POST', '/api/md/access'>['visibility'] & string;

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
/** Reading is open; writing, locks, presence and live co-editing need a signed-in editor. */
const session = new Session('docs:token');
await demoSignIn(session); // a signed-in link from the demo tour (DEMO=1 only)
/**
 * A share link (`/docs?share=<token>#<slug>`, docs/collab.md "Share links") opens its document
 * without an account: its token is the credential of every request while nobody is signed in.
 */
const shareToken = new URLSearchParams(location.search).get('share') ?? undefined;
const credential = () => session.token ?? shareToken;
const live = new LiveTopics(undefined, credential, () => void session.restore());
/** The header's indicator follows the sockets' real state, from the first one on (status.ts). */
const conn = new ConnectionIndicator($('conn'));
live.onConnection((open) => conn.setTopics(open));
const saveState = new SaveIndicator($('save-state'));
const canEdit = () => !!session.me?.roles.some((r) => r === 'editor' || r === 'operator');
const isOperator = () => !!session.me?.roles.includes('operator');
/** What the caller may do with the open document (GET /api/md/access/:slug). */
interface Rights { read: boolean; comment: boolean; write: boolean; manage: boolean }
let rights: Rights = { read: true, comment: false, write: false, manage: false };
/** Whether the open document is this person's to change: an editor the document's access lets write. */
const canWrite = () => canEdit() && rights.write;

/** Sanitized markdown: no script in a document ever runs. */
const render = (md: string) => DOMPurify.sanitize(marked.parse(md, { async: false }) as string);

/**
 * A document's images (`/api/md/images/<slug>/<id>`, docs/collab.md "Images") are read with this
 * page's credential (an <img> cannot send it): through the client, kept as object URLs by address.
 */
const IMAGE_ADDRESS = /^\/api\/md\/images\/([^/?#]+)\/([a-f0-9]{16})$/;
const imageUrls = new Map<string, Promise<string | undefined>>();
function imageUrl(address: string): Promise<string | undefined> {
  let url = imageUrls.get(address);
  if (!url) {
    const m = IMAGE_ADDRESS.exec(address)!;
    url = api
      .response('GET', '/api/md/images/:slug/:id', { params: { slug: decodeURIComponent(m[1]!), id: m[2]! } })
      .then(async (res) => URL.createObjectURL(await res.blob()))
      .catch(() => (imageUrls.delete(address), undefined));
    imageUrls.set(address, url);
  }
  return url;
}
/** Shows sanitized markdown in `host`; its own images are loaded through the client, never by the <img> itself. */
function renderInto(host: HTMLElement, md: string): void {
  // a template's images are not loaded: their address is swapped before they reach the page
  const t = document.createElement('template');
  t.innerHTML = render(md);
  for (const img of t.content.querySelectorAll('img')) {
    const address = img.getAttribute('src') ?? '';
    if (!IMAGE_ADDRESS.test(address)) continue;
    img.removeAttribute('src');
    img.dataset.image = address;
    void imageUrl(address).then((url) => {
      if (url) img.src = url;
      else img.dataset.missing = 'true';
    });
  }
  host.replaceChildren(t.content);
}

/**
 * The one client of the API (web/common/api.ts) with the signed-in token or, while nobody is signed
 * in, the share link's: a refused session token shows the sign-in form, a refused link token is the
 * link's end (LINK_ENDED).
 */
const api = session.client(() => shareToken);

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
const LINK_ENDED = '이 공유 링크는 더 이상 유효하지 않습니다 · this share link is no longer valid';
/** A refusal for a person: in Korean by its code (messages.ts), with the fields a 400 names. */
function errorText(err: unknown): string {
  // through a share link, a refused credential is the link's end (revoked or expired)
  if (err instanceof ApiError && err.status === 401 && !session.token && shareToken) return LINK_ENDED;
  const text = problemText(err);
  const fields = err instanceof ApiError ? Object.entries(err.fields).map(([f, m]) => `${f}: ${m}`).join('; ') : '';
  return fields ? `${text} (${fields})` : text;
}
/** A call whose refusal is shown in the notice: its answer, or undefined once the notice says why. */
async function told<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (err) {
    notice(errorText(err));
    return undefined;
  }
}

// ---- list, categories, search -------------------------------------------------------------------
async function loadList() {
  const cat = $<HTMLSelectElement>('category').value;
  const r = await told(api.get('/api/md/docs', { query: { category: cat || undefined } }));
  if (!r) return;
  const sel = $<HTMLSelectElement>('category');
  const keep = sel.value;
  sel.replaceChildren(el('option', { value: '' }, '모든 분류'), ...Object.entries(r.categories).map(([c, n]) => el('option', { value: c }, `${c} (${n})`)));
  sel.value = keep;
  $('doc-list').replaceChildren(...r.docs.map((d) => el('li', { 'data-slug': d.slug }, el('a', { href: `#${encodeURIComponent(d.slug)}` }, d.title), el('small', {}, `${d.category} · v${d.version}`))));
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
    const r = await told(api.get('/api/md/search', { query: { q } }));
    if (!r) return;
    if (r.results.length === 0) return $('results').replaceChildren(el('li', { class: 'muted' }, '결과 없음 · no results'));
    $('results').replaceChildren(...r.results.map((x) => {
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
  const visibility = $<HTMLSelectElement>('new-visibility').value as Visibility;
  try {
    await api.post('/api/md/save', { body: { slug, category, content: `# ${slug}\n`, baseVersion: 0, visibility } });
  } catch (err) {
    return void ($('new-error').textContent = errorText(err));
  }
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
 * times before any room synced in this page (refused by a proxy, say), or has not synced within
 * LIVE_WAIT_MS. Once a room has synced here, WebSockets are known to pass: a socket that drops is
 * waited for (up to LIVE_WAIT_MS), not given up on after its first refusals.
 */
const LIVE_WAIT_MS = 15_000;
const LIVE_FAILURES = 2;
let roomReached = false;
let cur: Open | undefined;
let peers: Peer[] = [];

let previewQueued = false;
function queuePreview() {
  if (previewQueued) return;
  previewQueued = true;
  requestAnimationFrame(() => {
    previewQueued = false;
    if (cur) renderInto($('preview'), cur.editor.text());
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
  const body = await api.get('/api/md/lock/:slug', { params: { slug: cur.slug } }).catch(() => undefined);
  // a later look (a newer event) supersedes this answer
  if (!body || !cur || asked !== lockAsked) return;
  const me = session.me;
  // a held lock names its holder and its end
  const held = body.locked && body.holder !== undefined && body.expires_at !== undefined
    ? { holder: body.holder, holder_name: body.holder_name, expires_at: body.expires_at, expires: body.expires ?? Date.parse(body.expires_at) }
    : undefined;
  lockMine = !!(held && me && held.holder === me.id);
  lockOther = !!held && !lockMine;
  const who = held ? (held.holder_name ?? held.holder) : '';
  $('lock-state').className = 'lock' + (held ? ' on' : '');
  $('lock-state').textContent = held
    ? `잠김: ${lockMine ? '내 잠금' : who} · ${kstTime(held.expires_at, { seconds: false })}까지`
    : '잠금 없음';
  const breakable = lockOther && isOperator();
  $('lock-btn').textContent = lockMine ? '잠금 해제' : breakable ? '잠금 풀기 · break' : '잠금';
  const why = !canEdit() ? '편집자로 로그인하세요 · sign in as an editor' : lockOther ? `${who} 님이 잠갔습니다 · locked by ${who}` : '';
  $<HTMLButtonElement>('lock-btn').disabled = !canWrite() || (lockOther && !breakable);
  $<HTMLButtonElement>('save-btn').disabled = !canWrite() || lockOther || cur.mode === 'loading';
  const readOnly = canEdit() && !rights.write ? '읽기 전용 문서입니다 · you may only read this document' : '';
  for (const id of ['lock-btn', 'save-btn']) $(id).title = $<HTMLButtonElement>(id).disabled ? readOnly || why : '';
  cur.editor.setEditable(canWrite() && !lockOther && !!cur.provider && cur.mode !== 'loading');
  $('editor-card').dataset.locked = lockOther ? 'other' : lockMine ? 'mine' : 'none';
  clearTimeout(lockCheck);
  if (lockOther && held) {
    showHeld($('lock-note'), held);
    lockHeldBy = { who, until: held.expires };
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
  const r = await told(api.post(lockMine || lockOther ? '/api/md/unlock' : '/api/md/lock', { body: { slug: cur.slug } }));
  void showLock(r && 'broken' in r && r.broken ? { state: 'broken' } : undefined);
};

/** The note above the editor for a reader or a share link, and the share button for the owner. */
function showAccess() {
  const note = $('access-note');
  const viaLink = !session.token && !!shareToken;
  note.hidden = rights.write || (!canEdit() && !viaLink);
  note.textContent = viaLink
    ? '공유 링크로 보는 중: 읽기 전용 · viewing through a share link: read-only'
    : '읽기 전용: 이 문서를 읽을 수만 있습니다 · read-only: you may read this document but not change it';
  $('share-btn').hidden = !rights.manage;
  if (!rights.manage) $('share').hidden = true;
}

// ---- share: visibility, named people, share links (the owner or an operator) -------------------
const ids = (v: string) => v.split(/[,\s]+/).map((x) => x.trim()).filter(Boolean);
async function loadShare() {
  if (!cur) return;
  const slug = cur.slug;
  const [a, l] = await Promise.all([told(api.get('/api/md/access/:slug', { params: { slug } })), told(api.get('/api/md/links/:slug', { params: { slug } }))]);
  if (!a) return;
  $<HTMLSelectElement>('visibility').value = a.access.visibility;
  $<HTMLInputElement>('editors').value = a.access.editors.join(', ');
  $<HTMLInputElement>('readers').value = a.access.readers.join(', ');
  if (!l) return;
  $('links').replaceChildren(...l.links.map((k) => {
    const revoke = el('button', { type: 'button', class: 'secondary' }, '취소 revoke');
    revoke.onclick = async () => {
      if (!(await told(api.post('/api/md/links/revoke', { body: { slug, id: k.id } })))) return;
      notice('링크를 취소했습니다 · link revoked', 'info');
      void loadShare();
    };
    const until = k.expires_at ? `${kst(Date.parse(k.expires_at))}까지 · until then` : '만료 없음 · no expiry';
    return el('li', { 'data-link': k.id }, `${k.role === 'comment' ? '댓글 comment' : '읽기 read'} · ${until} · ${kst(k.created)}`, revoke);
  }));
}
$('share-btn').onclick = () => {
  const open = $('share').hidden;
  $('share').hidden = !open;
  $('share-btn').setAttribute('aria-expanded', String(open));
  $('link-made').hidden = true;
  if (open) {
    void loadShare();
    $('share').scrollIntoView({ block: 'nearest' });
  }
};
$('share-close').onclick = () => (($('share').hidden = true), $('share-btn').setAttribute('aria-expanded', 'false'));
$<HTMLFormElement>('access-form').onsubmit = async (ev) => {
  ev.preventDefault();
  if (!cur) return;
  $('access-error').textContent = '';
  try {
    await api.post('/api/md/access', {
      body: {
        slug: cur.slug,
        visibility: $<HTMLSelectElement>('visibility').value as Visibility,
        editors: ids($<HTMLInputElement>('editors').value),
        readers: ids($<HTMLInputElement>('readers').value),
      },
    });
  } catch (err) {
    return void ($('access-error').textContent = errorText(err));
  }
  notice('공유 설정을 저장했습니다 · access saved', 'info');
  void loadShare();
};
$<HTMLFormElement>('link-form').onsubmit = async (ev) => {
  ev.preventDefault();
  if (!cur) return;
  const expiry = $<HTMLSelectElement>('link-expiry').value;
  const slug = cur.slug;
  const r = await told(api.post('/api/md/links', { body: { slug, role: $<HTMLSelectElement>('link-role').value as 'read' | 'comment', ...(expiry ? { expires_in_s: Number(expiry) } : {}) } }));
  if (!r) return;
  $('link-made').hidden = false;
  $<HTMLInputElement>('link-url').value = `${location.origin}/docs?share=${encodeURIComponent(r.token)}#${encodeURIComponent(slug)}`;
  void loadShare();
};

// ---- comments: threads on ranges of the text (docs/collab.md "Comments") -------------------------
type CThread = Answer<'GET', '/api/md/comments/:slug'>['threads'][number];
type CReply = Pick<CThread, 'author_name' | 'created' | 'body'>;
async function loadComments() {
  if (!cur) return;
  const slug = cur.slug;
  const r = await api.get('/api/md/comments/:slug', { params: { slug } }).catch(() => undefined);
  if (!r || cur?.slug !== slug) return;
  $('comment-form').hidden = !rights.comment;
  $('threads').replaceChildren(...r.threads.map((t) => {
    const quote = el('blockquote', { 'data-orphaned': String(t.at.orphaned) }, t.at.orphaned ? `${t.anchor.quote} (원문 없음 · text gone)` : (t.at.text ?? ''));
    const line = (x: CReply) => el('p', {}, el('b', {}, x.author_name), ` · ${kst(x.created)} · `, x.body);
    const item = el('li', { 'data-thread': t.id, 'data-resolved': String(t.resolved) }, quote, line(t), el('ol', { class: 'replies' }, ...t.replies.map((x) => el('li', {}, line(x)))));
    if (rights.comment) {
      const input = el('input', { 'aria-label': '답글 reply', maxlength: '2000' }) as HTMLInputElement;
      const send = el('button', { type: 'submit', class: 'secondary' }, '답글 reply');
      const form = el('form', {}, input, send);
      form.onsubmit = async (ev) => {
        ev.preventDefault();
        await told(api.post('/api/md/comments/reply', { body: { slug, thread: t.id, body: input.value } }));
      };
      const toggle = el('button', { type: 'button', class: 'secondary', 'data-action': t.resolved ? 'reopen' : 'resolve' }, t.resolved ? '다시 열기 reopen' : '해결 resolve');
      toggle.onclick = async () => {
        await told(api.post('/api/md/comments/resolve', { body: { slug, thread: t.id, resolved: !t.resolved } }));
      };
      item.append(form, toggle);
    }
    return item;
  }));
}
/** The comment form names the text a comment will be attached to; with none selected it cannot be sent. */
function showCommentTarget(selected: string) {
  const quote = selected.length > 80 ? `${selected.slice(0, 80)}…` : selected;
  $('comment-target').textContent = quote ? `«${quote}»` : '댓글을 달 글을 본문에서 선택하세요 · select text in the document';
  $('comment-target').dataset.selected = String(!!quote);
  $<HTMLButtonElement>('comment-send').disabled = !quote;
}
showCommentTarget('');
$<HTMLFormElement>('comment-form').onsubmit = async (ev) => {
  ev.preventDefault();
  if (!cur) return;
  $('comment-error').textContent = '';
  const { from, to } = cur.editor.view.state.selection.main;
  if (from === to) return void ($('comment-error').textContent = '댓글을 달 글을 먼저 선택하세요 · select the text to comment on first');
  try {
    await api.post('/api/md/comments', { body: { slug: cur.slug, body: $<HTMLTextAreaElement>('comment-body').value, range: { from, to } } });
  } catch (err) {
    return void ($('comment-error').textContent = errorText(err));
  }
  $<HTMLTextAreaElement>('comment-body').value = '';
};

let opening = 0;
async function open(slug: string) {
  close();
  const mine = ++opening;
  if (!slug) return;
  // a document opened for editing is not live until its co-editing socket has synced
  if (canEdit()) conn.setCoedit('connecting');
  const [r, a] = await Promise.all([
    api.get('/api/md/doc/:slug', { params: { slug } }).then((x) => ({ ok: true as const, doc: x.doc }), (err: unknown) => ({ ok: false as const, err })),
    api.get('/api/md/access/:slug', { params: { slug } }).catch(() => undefined),
  ]);
  // a later open (or a close) superseded this one while the document was fetched
  if (mine !== opening) return;
  if (!r.ok) {
    conn.setCoedit(undefined);
    return notice(`${slug}: ${errorText(r.err)}`);
  }
  rights = a ? a.can : { read: true, comment: false, write: false, manage: false };
  showAccess();
  showCommentTarget('');
  $('threads').replaceChildren();
  $('comment-form').hidden = !rights.comment;
  const doc = new Y.Doc();
  const text = doc.getText('content');
  // live co-editing needs an editor's token; the browser cannot set headers on a WebSocket, so it
  // travels as the access_token query parameter (docs/collab.md). Signed out: the saved text, read-only.
  // a reader (or a share link) follows the room read-only: it sees every edit, the hub refuses its own
  const token = credential();
  const provider = (canEdit() || (!session.token && !!shareToken)) && token
    ? new WebsocketProvider(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/yjs`, slug, doc, { disableBc: true, params: { access_token: token } })
    : undefined;
  if (!provider) text.insert(0, r.doc.content);
  const awareness = provider?.awareness ?? new Awareness(doc);
  const editorHost = $('editor');
  editorHost.replaceChildren();
  // until the room has synced, the editor shows the saved text (a copy outside the room), read-only
  const stored = provider ? new Y.Doc() : undefined;
  stored?.getText('content').insert(0, r.doc.content);
  const editor = bindEditor(editorHost, stored ? stored.getText('content') : text, stored ? new Awareness(stored) : awareness, { onChange: queuePreview, onSelect: showCommentTarget, editable: false });
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
    if (m.type === 'comment') {
      void loadComments();
      // a person mentioned is told, in the page
      if (Array.isArray(m.mentions) && session.me && m.mentions.includes(session.me.id) && m.author !== session.me.id) {
        notice(`${m.author_name ?? m.author} 님이 댓글에서 나를 언급했습니다 · you were mentioned in a comment`, 'info');
      }
    }
  }, () => (void showLock(), void loadList(), void loadComments()), () => void loadComments());
  const opened: Open = { slug, doc, provider, awareness, editor, off: offTopic, base: r.doc, mode: provider ? 'loading' : 'live', stored };
  cur = opened;
  if (provider) followSocket(opened, provider);
  if (provider) opened.liveWait = window.setTimeout(() => editSavedText(opened), LIVE_WAIT_MS);
  // the hub ends the socket of a token that is no longer valid (4401, final for the provider): the
  // session check shows the sign-in form, and the document reopens read-only
  provider?.on('connection-close', (ev: CloseEvent | null) => {
    if (ev?.code === WS_CLOSE_INVALID_TOKEN && !session.token && shareToken) notice(LINK_ENDED);
    else if (ev?.code === WS_CLOSE_INVALID_TOKEN) void session.restore();
    // 4403: the document's access changed (no longer readable, or a change refused): reopen as it is now
    else if (ev?.code === 4403 && cur === opened) void open(slug);
  });
  queuePreview();
  void loadComments();
  $('editor-card').hidden = false;
  $('doc-title').textContent = r.doc.title;
  $('doc-meta').textContent = `v${r.doc.version} · ${r.doc.category}`;
  for (const li of $('doc-list').children) (li as HTMLElement).toggleAttribute('aria-current', (li as HTMLElement).dataset.slug === slug);
  const join = async () => {
    // a reader sees who is here without appearing among them
    if (cur !== opened || !provider || !canWrite()) return;
    const p = await api.post('/api/md/presence', { body: { slug, id: opened.presenceId } }).catch(() => undefined);
    if (!p || cur !== opened) return;
    opened.presenceId = p.id;
    peers = p.peers;
    // remote carets carry the same name as the presence list (the display name, told apart from a namesake's)
    const me = session.me;
    const label = people(peers).find((x) => x.user === me?.id)?.label ?? displayName({ name: me?.name, user: me?.id });
    provider.awareness.setLocalStateField('user', { name: label, color: p.color, colorLight: `${p.color}33` });
    drawPresence();
  };
  // the page may have moved on (another document, or leaving) while presence was asked for
  if (provider && canWrite()) {
    await join();
    if (cur !== opened) return;
    opened.heartbeat = window.setInterval(join, 15_000);
  } else {
    const p = await api.get('/api/md/presence/:slug', { params: { slug } }).catch(() => undefined);
    if (cur !== opened) return;
    peers = p?.peers ?? [];
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
  // editable at once only for a writer without another's lock (as last seen); showLock confirms
  opened.editor = bindEditor(host, opened.doc.getText('content'), opened.awareness, { onChange: queuePreview, onSelect: showCommentTarget, editable: canWrite() && !lockOther });
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
    if (opened.mode === 'loading' && !roomReached && ++failures >= LIVE_FAILURES) editSavedText(opened);
  });
  provider.on('sync', async (synced: boolean) => {
    if (cur !== opened || !synced || opened.mode === 'http') return;
    roomReached = true;
    if (opened.mode === 'loading') followRoom(opened);
    set('live');
    queuePreview();
    const r = await api.get('/api/md/doc/:slug', { params: { slug: opened.slug } }).catch(() => undefined);
    if (r && cur === opened && provider.synced) opened.base.version = Math.max(opened.base.version, r.doc.version);
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
  // a beacon cannot carry the bearer token: a keepalive request outlives the page just the same
  if (cur.presenceId) void api.post('/api/md/presence/leave', { body: { slug: cur.slug, id: cur.presenceId }, keepalive: true }).catch(() => undefined);
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
  rights = { read: true, comment: false, write: false, manage: false };
  $('share').hidden = true;
}
window.addEventListener('beforeunload', close);

// ---- images: pasted or dropped into the editor (docs/collab.md "Images") ------------------------
/** Sends each file through the hub's upload pipeline and puts its image in the text at the cursor. */
async function addImages(files: File[]) {
  const opened = cur;
  if (!opened) return;
  if (!canWrite() || opened.mode === 'loading') return notice('이 문서에 그림을 넣을 수 없습니다 · you may not add images to this document');
  for (const file of files) {
    const form = new FormData();
    form.append('slug', opened.slug);
    form.append('image', file, file.name || 'image.png');
    $('image-state').textContent = `그림 올리는 중 · uploading ${file.name}`;
    let made: Answer<'POST', '/api/md/images'>;
    try {
      made = await api.upload('POST', '/api/md/images', { form, onProgress: (share) => ($('image-state').textContent = `그림 올리는 중 · uploading ${Math.round(share * 100)}%`) });
    } catch (err) {
      $('image-state').textContent = '';
      notice(`그림 · image: ${errorText(err)}`);
      continue;
    }
    $('image-state').textContent = '';
    if (cur !== opened) return;
    const alt = (file.name || 'image').replace(/\.[a-z0-9]+$/i, '').replace(/[[\]]/g, '');
    const view = opened.editor.view;
    view.dispatch(view.state.replaceSelection(`![${alt}](${made.url})\n`));
  }
}
/** A paste or a drop that carries files: the editor does not take it as text; the files go up as images. */
const takeFiles = (ev: Event, list: FileList | null | undefined) => {
  const files = [...(list ?? [])];
  if (files.length === 0) return;
  ev.preventDefault();
  ev.stopPropagation();
  void addImages(files);
};
$('editor').addEventListener('paste', (ev) => takeFiles(ev, ev.clipboardData?.files), true);
$('editor').addEventListener('dragover', (ev) => {
  if (ev.dataTransfer?.types.includes('Files')) ev.preventDefault();
}, true);
$('editor').addEventListener('drop', (ev) => takeFiles(ev, ev.dataTransfer?.files), true);

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
  let r: Answer<'POST', '/api/md/save'>;
  try {
    r = await api.post('/api/md/save', { body: { slug: opened.slug, content, baseVersion } });
  } catch (err) {
    if (cur !== opened) return;
    if (err instanceof ApiError && err.status === 409 && err.code === 'version_conflict') {
      const d = err.details as Conflict;
      // the other save already holds exactly this text: nothing to merge
      if (d.content === content) return saveVersion(content, d.current_version);
      showMerge(content, d);
      saveState.conflict(d.current_version);
      return;
    }
    saveState.failed(errorText(err));
    return notice(`저장 실패 · save failed: ${errorText(err)}`);
  }
  if (cur !== opened) return;
  const doc = r.doc;
  opened.base = doc;
  $('merge').hidden = true;
  if (!opened.provider?.synced) await open(opened.slug);
  saveState.saved(doc.version, doc.modified);
  notice(`v${doc.version} 저장됨 · saved`, 'info');
}
/** The details of a 409 version_conflict (docs/collab.md). */
interface Conflict { current_version: number; base_version: number; content: string; author?: string }
function showMerge(content: string, d: Conflict) {
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
  const h = await told(api.get('/api/md/history/:slug', { params: { slug } }));
  if (!h) return;
  $('history').hidden = false;
  $('diff').replaceChildren();
  $('versions').replaceChildren(...h.versions.map((v) => {
    const show = el('button', { type: 'button', class: 'secondary' }, '비교');
    show.onclick = async () => {
      const full = await told(api.get('/api/md/history/:slug/:version', { params: { slug, version: String(v.version) } }));
      if (!full) return;
      renderDiff($('diff'), full.version.content, cur?.editor.text() ?? '', [`v${v.version}`, '지금 now']);
    };
    const restore = el('button', { type: 'button', class: 'secondary' }, '복원');
    restore.onclick = async () => {
      const r = await told(api.post('/api/md/restore', { body: { slug, version: v.version } }));
      if (r) notice(`v${v.version}을 새 버전으로 복원함 · restored`, 'info');
    };
    // this version as a file: its markdown, or one standalone HTML page (sanitised by the hub)
    const file = (format: 'md' | 'html', label: string) => {
      const input = { params: { slug }, query: { format, version: v.version } };
      const link = el('a', { href: api.url('GET', '/api/md/export/:slug', input), download: '', class: 'export', 'data-format': format }, label);
      // the file is asked for with this page's credential (a private document, a share link), then saved
      link.onclick = async (ev) => {
        ev.preventDefault();
        const res = await told(api.response('GET', '/api/md/export/:slug', input));
        if (!res) return;
        const named = /filename\*=UTF-8''([^;]+)/.exec(res.headers.get('content-disposition') ?? '')?.[1];
        const name = named ? decodeURIComponent(named) : `${slug}-v${v.version}.${format}`;
        const save = el('a', { href: URL.createObjectURL(await res.blob()), download: name });
        save.click();
        setTimeout(() => URL.revokeObjectURL(save.href), 10_000);
      };
      return link;
    };
    return el('li', { 'data-version': String(v.version) }, `v${v.version} · ${v.author} · ${kst(v.modified)} `, show, ' ', restore, ' ', file('md', 'MD 내보내기'), ' ', file('html', 'HTML 내보내기'));
  }));
  $('history').scrollIntoView({ block: 'nearest' });
};

// ---- statistics --------------------------------------------------------------------------------
$('show-stats').onclick = async () => {
  const s = await told(api.get('/api/md/stats'));
  if (!s) return;
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
  renderInto($('slide'), slides[slideAt] ?? '');
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
  live.reauthenticate();
  // the list shows what this person may read
  if (known) void loadList();
  if (known && location.hash.length > 1) void open(decodeURIComponent(location.hash.slice(1)));
});
await session.restore();
known = true;
live.on('md:all', () => void loadList(), () => void loadList());
window.addEventListener('hashchange', () => void open(decodeURIComponent(location.hash.slice(1))));
await loadList();
if (location.hash.length > 1) await open(decodeURIComponent(location.hash.slice(1)));
document.body.dataset.ready = 'true';
