import DOMPurify from 'dompurify';
import { marked } from 'marked';
import { WebsocketProvider } from 'y-websocket';
import * as Y from 'yjs';
import { LiveTopics, el } from '../common/live.js';
import { lineDiff, splitSlides } from './slides.js';

interface DocSummary { slug: string; title: string; category: string; version: number; modified: number; author: string; size: number }
interface Doc extends DocSummary { content: string }
interface Peer { id: string; name: string; color: string }

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const live = new LiveTopics();
const editor = $<HTMLTextAreaElement>('editor');
const meInput = $<HTMLInputElement>('me');
meInput.value = localStorage.getItem('maru.name') ?? `user${Math.floor(Math.random() * 1000)}`;
meInput.onchange = () => localStorage.setItem('maru.name', meInput.value);

/** Sanitized markdown: no script in a document ever runs. */
const render = (md: string) => DOMPurify.sanitize(marked.parse(md, { async: false }) as string);

async function api<T = any>(path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(path, body === undefined ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as T };
}

// ---- list, categories, search -------------------------------------------------------------------
async function loadList() {
  const cat = $<HTMLSelectElement>('category').value;
  const { body } = await api<{ docs: DocSummary[]; categories: Record<string, number> }>(`/api/md/docs${cat ? `?category=${encodeURIComponent(cat)}` : ''}`);
  const sel = $<HTMLSelectElement>('category');
  const keep = sel.value;
  sel.replaceChildren(el('option', { value: '' }, '모든 분류'), ...Object.entries(body.categories).map(([c, n]) => el('option', { value: c }, `${c} (${n})`)));
  sel.value = keep;
  $('doc-list').replaceChildren(...body.docs.map((d) => {
    const li = el('li', { 'data-slug': d.slug }, d.title, el('small', {}, `${d.category} · v${d.version}`));
    li.onclick = () => (location.hash = d.slug);
    return li;
  }));
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
    const { body } = await api<{ results: { slug: string; title_html: string; snippet: string }[] }>(`/api/md/search?q=${encodeURIComponent(q)}`);
    $('results').replaceChildren(...body.results.map((r) => {
      const li = el('li', { 'data-slug': r.slug });
      li.innerHTML = DOMPurify.sanitize(`<b>${r.title_html}</b><small>${r.snippet}</small>`);
      li.onclick = () => (location.hash = r.slug);
      return li;
    }));
  }, 200);
};
$('new-doc').onclick = async () => {
  const slug = prompt('slug (a-z 0-9 한글 _ -)');
  if (!slug) return;
  const category = prompt('분류 category', 'general') ?? 'general';
  const r = await api('/api/md/save', { slug, category, content: `# ${slug}\n`, baseVersion: 0, author: meInput.value });
  if (r.status !== 200) return alert(r.body.error?.message ?? r.status);
  location.hash = slug;
};

// ---- the open document ----------------------------------------------------------------------
interface Open { slug: string; doc: Y.Doc; text: Y.Text; provider: WebsocketProvider; presenceId?: string; heartbeat?: number; off: () => void; base: Doc }
let cur: Open | undefined;
let lockToken: string | undefined;
let peers: Peer[] = [];

function syncEditorFromY() {
  if (!cur) return;
  const value = cur.text.toString();
  if (editor.value !== value) {
    const s = Y.createRelativePositionFromTypeIndex(cur.text, Math.min(editor.selectionStart, editor.value.length));
    editor.value = value;
    const abs = Y.createAbsolutePositionFromRelativePosition(s, cur.doc);
    if (abs && document.activeElement === editor) editor.setSelectionRange(abs.index, abs.index);
  }
  $('preview').innerHTML = render(value);
  drawCursors();
}

editor.oninput = () => {
  if (!cur) return;
  const text = cur.text;
  const a = text.toString();
  const b = editor.value;
  let s = 0;
  while (s < a.length && s < b.length && a[s] === b[s]) s++;
  let e = 0;
  while (e < a.length - s && e < b.length - s && a[a.length - 1 - e] === b[b.length - 1 - e]) e++;
  cur.doc.transact(() => {
    if (a.length - s - e > 0) text.delete(s, a.length - s - e);
    if (b.length - s - e > 0) text.insert(s, b.slice(s, b.length - e));
  }, 'local');
  publishCursor();
};
const publishCursor = () => {
  if (!cur) return;
  const rel = Y.createRelativePositionFromTypeIndex(cur.text, editor.selectionStart);
  cur.provider.awareness.setLocalStateField('cursor', Y.relativePositionToJSON(rel));
};
editor.onselect = editor.onkeyup = editor.onclick = publishCursor;

function drawCursors() {
  if (!cur) return;
  const value = cur.text.toString();
  const marks: { i: number; name: string; color: string }[] = [];
  cur.provider.awareness.getStates().forEach((st: any, id: number) => {
    if (id === cur!.doc.clientID || !st.cursor || !st.user) return;
    const abs = Y.createAbsolutePositionFromRelativePosition(Y.createRelativePositionFromJSON(st.cursor), cur!.doc);
    if (abs) marks.push({ i: abs.index, name: String(st.user.name), color: String(st.user.color) });
  });
  marks.sort((x, y) => x.i - y.i);
  const mirror = $('mirror');
  const parts: Node[] = [];
  let at = 0;
  for (const m of marks) {
    parts.push(document.createTextNode(value.slice(at, m.i)));
    const c = el('span', { class: 'caret', 'data-name': m.name });
    c.style.borderColor = m.color;
    c.style.background = m.color;
    parts.push(c);
    at = m.i;
  }
  parts.push(document.createTextNode(value.slice(at)));
  mirror.replaceChildren(...parts);
  mirror.scrollTop = editor.scrollTop;
}
editor.onscroll = () => ($('mirror').scrollTop = editor.scrollTop);

function drawPresence() {
  $('presence').replaceChildren(...peers.map((p) => {
    const a = el('span', { class: 'avatar', title: p.name, 'data-name': p.name });
    a.style.background = p.color;
    a.textContent = p.name.slice(0, 2);
    return a;
  }));
}

async function showLock() {
  if (!cur) return;
  const { body } = await api(`/api/md/lock/${cur.slug}`);
  const mine = body.locked && lockToken;
  $('lock-state').className = 'lock' + (body.locked ? ' on' : '');
  $('lock-state').textContent = body.locked ? `🔒 ${body.holder} ~${new Date(body.expires_at).toLocaleTimeString()}` : '🔓';
  $('lock-btn').textContent = mine ? '잠금 해제' : '잠금';
  editor.readOnly = !!body.locked && !mine;
}
$('lock-btn').onclick = async () => {
  if (!cur) return;
  if (lockToken) {
    await api('/api/md/unlock', { slug: cur.slug, token: lockToken });
    lockToken = undefined;
  } else {
    const r = await api('/api/md/lock', { slug: cur.slug, holder: meInput.value });
    if (r.status === 200) lockToken = r.body.token;
    else alert(r.body.error.message);
  }
  void showLock();
};

async function open(slug: string) {
  close();
  const r = await api<{ doc: Doc }>(`/api/md/doc/${encodeURIComponent(slug)}`);
  if (r.status !== 200) return;
  const doc = new Y.Doc();
  const provider = new WebsocketProvider(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/yjs`, slug, doc, { disableBc: true });
  const text = doc.getText('content');
  const offTopic = live.on(`md:${slug}`, (m: any) => {
    if (m.type === 'presence') (peers = m.peers, drawPresence());
    if (m.type === 'lock') {
      if (m.state === 'expired' || m.state === 'released') lockToken = undefined;
      void showLock();
    }
    if (m.type === 'saved' && cur) {
      $('doc-meta').textContent = `v${m.version} · ${m.author}${m.author !== meInput.value ? ' 님이 저장함' : ''}`;
      cur.base.version = m.version;
      void loadList();
    }
  }, () => (void showLock(), void loadList()));
  cur = { slug, doc, text, provider, off: offTopic, base: r.body.doc };
  text.observe(() => syncEditorFromY());
  provider.awareness.on('change', drawCursors);
  provider.on('sync', (ok: boolean) => ok && syncEditorFromY());
  $('editor-card').hidden = false;
  $('doc-title').textContent = r.body.doc.title;
  $('doc-meta').textContent = `v${r.body.doc.version} · ${r.body.doc.category}`;
  const join = async () => {
    if (!cur) return;
    const p = await api('/api/md/presence', { slug, name: meInput.value, id: cur.presenceId });
    cur.presenceId = p.body.id;
    peers = p.body.peers;
    provider.awareness.setLocalStateField('user', { name: meInput.value, color: p.body.color });
    drawPresence();
  };
  await join();
  cur.heartbeat = window.setInterval(join, 15_000);
  void showLock();
}

function close() {
  if (!cur) return;
  if (cur.presenceId) navigator.sendBeacon?.('/api/md/presence/leave', new Blob([JSON.stringify({ slug: cur.slug, id: cur.presenceId })], { type: 'application/json' }));
  clearInterval(cur.heartbeat);
  cur.off();
  cur.provider.destroy();
  cur.doc.destroy();
  cur = undefined;
  lockToken = undefined;
}
window.addEventListener('beforeunload', close);

// ---- explicit save with baseVersion, conflict -> merge screen -----------------------------------
async function saveVersion(content: string, baseVersion: number) {
  if (!cur) return;
  const r = await api('/api/md/save', { slug: cur.slug, content, baseVersion, author: meInput.value, lockToken });
  if (r.status === 409) {
    const d = r.body.error.details;
    $('merge').hidden = false;
    $('merge-info').textContent = `서버 v${d.current_version} (내 기준 v${d.base_version})`;
    $('theirs').textContent = d.content;
    $<HTMLTextAreaElement>('mine').value = content;
    drawDiff($('merge-diff'), d.content, content);
    $('merge-save').onclick = () => {
      $('merge').hidden = true;
      void saveVersion($<HTMLTextAreaElement>('mine').value, d.current_version);
    };
    return;
  }
  if (r.status !== 200) return alert(r.body.error?.message ?? r.status);
  cur.base = r.body.doc;
}
$('save-btn').onclick = () => cur && void saveVersion(editor.value, cur.base.version);
$('merge-cancel').onclick = () => ($('merge').hidden = true);

function drawDiff(target: HTMLElement, a: string, b: string) {
  target.replaceChildren(...lineDiff(a, b).map((d) => el('span', { class: d.op === '+' ? 'add' : d.op === '-' ? 'del' : '' }, `${d.op} ${d.line}\n`)));
}

// ---- history ----------------------------------------------------------------------------------
$('history-btn').onclick = async () => {
  if (!cur) return;
  const slug = cur.slug;
  const h = await api(`/api/md/history/${slug}`);
  $('history').hidden = false;
  $('versions').replaceChildren(...h.body.versions.map((v: any) => {
    const show = el('button', { type: 'button' }, '비교');
    show.onclick = async () => {
      const full = await api(`/api/md/history/${slug}/${v.version}`);
      drawDiff($('diff'), full.body.version.content, editor.value);
    };
    const restore = el('button', { type: 'button' }, '복원');
    restore.onclick = async () => {
      const r = await api('/api/md/restore', { slug, version: v.version, author: meInput.value, lockToken });
      if (r.status !== 200) alert(r.body.error.message);
    };
    return el('li', { 'data-version': String(v.version) }, `v${v.version} · ${v.author} · ${new Date(v.modified).toLocaleString()} `, show, ' ', restore);
  }));
};

// ---- statistics --------------------------------------------------------------------------------
$('show-stats').onclick = async () => {
  const { body: s } = await api('/api/md/stats');
  $('stats').hidden = false;
  const max = Math.max(1, ...Object.values(s.categories as Record<string, number>));
  $('stats-body').replaceChildren(
    el('div', { class: 'grid' }, ...Object.entries({ 문서: s.totals.documents, '이번 주': s.totals.documents_this_week, 분류: s.totals.categories, '평균 크기': `${s.totals.average_size} B`, 잠금: s.locks }).map(([k, v]) => el('div', {}, el('div', { class: 'label' }, k), el('div', { class: 'figure', 'data-stat': k }, String(v))))),
    el('div', { class: 'bars' }, ...Object.entries(s.categories as Record<string, number>).map(([c, n]) => {
      const bar = el('span', { class: 'b' });
      bar.style.width = `${(n / max) * 12}rem`;
      return el('div', {}, el('span', {}, c), bar, el('span', {}, String(n)));
    })),
    el('ol', { id: 'recent' }, ...s.recent.map((d: any) => el('li', {}, `${d.title} · ${d.author} · ${new Date(d.modified).toLocaleString()}`))),
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
  slides = splitSlides(editor.value);
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
live.onConnection((on) => $('conn').classList.toggle('on', on));
live.on('md:all', () => void loadList(), () => void loadList());
window.addEventListener('hashchange', () => void open(decodeURIComponent(location.hash.slice(1))));
await loadList();
if (location.hash.length > 1) await open(decodeURIComponent(location.hash.slice(1)));
document.body.dataset.ready = 'true';
