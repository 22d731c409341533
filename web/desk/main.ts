/**
 * The agent desk: staff see the conversations waiting for a person, every recent conversation's
 * transcript and the values it collected, and this week's stage funnel; an agent takes one, answers
 * live in the customer's chat and hands it back to the guide. Lists and the open conversation follow
 * the hub's topics (`desk`, `chat:<session>`).
 */
import type { DeskEntry as Entry, LineView as Line } from '../../src/chat/service.js';
import { STAGE_LABELS } from '../../src/chat/stages.js';
import { problemText } from '../common/api.js';
import { mountSignIn, Session } from '../common/auth.js';
import { LiveTopics } from '../common/live.js';
import { byId as $, el } from '../common/ui.js';

interface Conversation extends Entry {
  values: Record<string, unknown>;
  transcript: Line[];
  transcriptMax: number;
}
const STAGE_TEXT: Record<string, string> = STAGE_LABELS;
const STATUS_TEXT = { waiting: '대기 중 · waiting', held: '응대 중 · answering', none: '안내 중 · with the guide' } as const;
const REASON_TEXT = { asked: '고객 요청 · asked', misunderstood: '반복 오해 · misunderstood' } as const;
const VALUE_TEXT: Record<string, string> = {
  subject: '주제', source: '경로', need: '필요', needText: '고객 표현', product: '상품', name: '성함', contact: '연락처',
  email: '이메일', memo: '요청 사항', referralCode: '추천 코드', receiptNo: '접수번호', callbackNo: '콜백 접수', upsellAccepted: '추가 제안 수락',
};
const BY_TEXT = { customer: '고객', bot: '안내', agent: '상담원', note: '' } as const;
const time = new Intl.DateTimeFormat('ko-KR', { timeZone: 'Asia/Seoul', hour: '2-digit', minute: '2-digit' });

const session = new Session('desk:token');
const live = new LiveTopics(undefined, () => session.token, () => void session.restore());
let me: { id: string } | undefined;
let open: Conversation | undefined;
let stopConv: (() => void) | undefined;

function error(text: string): void {
  $('error').textContent = text;
}

const api = session.api;

function row(e: Entry): HTMLLIElement {
  const who = e.name ?? e.subject;
  const what =
    e.status === 'none'
      ? `${e.stageCode}. ${STAGE_TEXT[e.stage] ?? e.stage} · ${time.format(new Date(e.at))}`
      : `${STATUS_TEXT[e.status]}${e.agent ? ` (${e.agent.name})` : ''} · ${e.reason ? REASON_TEXT[e.reason] : ''} · ${STAGE_TEXT[e.returnTo ?? ''] ?? ''}에서`;
  const b = el('button', { type: 'button', 'data-session': e.session, 'data-status': e.status }, el('span', { class: 'who' }, who), el('span', { class: 'what' }, what));
  if (open?.session === e.session) b.setAttribute('aria-current', 'true');
  b.addEventListener('click', () => void show(e.session));
  return el('li', {}, b);
}

async function loadLists(): Promise<void> {
  try {
    const [lists, funnel] = await Promise.all([api.get('/api/desk'), api.get('/api/desk/funnel')]);
    $('inbox').replaceChildren(...lists.desk.map(row));
    $('inbox-empty').hidden = lists.desk.length > 0;
    $('recent').replaceChildren(...lists.recent.map(row));
    $('funnel-week').textContent = `${funnel.week} (월–일, KST)`;
    $('funnel').replaceChildren(
      ...funnel.stages.map((s) =>
        el('tr', { 'data-stage': s.stage }, el('td', {}, `${s.stageCode}. ${STAGE_TEXT[s.stage] ?? s.stage}`), el('td', { class: 'num' }, String(s.sessions))),
      ),
    );
  } catch (e) {
    error(problemText(e));
  }
}

function lineItem(l: Line): HTMLLIElement {
  const by = l.by === 'agent' ? `${BY_TEXT.agent} ${l.agent ?? ''}` : BY_TEXT[l.by];
  return el('li', { class: l.by }, ...(by ? [el('span', { class: 'by' }, `${by} · ${time.format(new Date(l.at))}`)] : []), el('span', { class: 'text' }, l.text));
}

function drawConversation(c: Conversation): void {
  open = c;
  $('conv').hidden = false;
  $('conv-title').textContent = `${c.name ?? '고객'} · ${c.subject}`;
  const badge = $('conv-status');
  badge.dataset.status = c.status;
  badge.textContent = `${STATUS_TEXT[c.status]}${c.agent ? ` · ${c.agent.name}` : ''}`;
  $('conv-meta').textContent = `${c.stageCode}. ${STAGE_TEXT[c.stage] ?? c.stage}${c.returnTo ? ` (돌아갈 단계 ${STAGE_TEXT[c.returnTo] ?? c.returnTo})` : ''} · 최근 ${c.transcriptMax}줄 보관 · ${c.session}`;
  $('values').replaceChildren(
    ...Object.entries(c.values).flatMap(([k, v]) => [el('dt', {}, VALUE_TEXT[k] ?? k), el('dd', { 'data-field': k }, v === null ? '없음' : typeof v === 'boolean' ? (v ? '예' : '아니요') : String(v))]),
  );
  $('transcript').replaceChildren(...c.transcript.map(lineItem));
  $('transcript').scrollTop = $('transcript').scrollHeight;
  const mine = c.status === 'held' && c.agent?.id === me?.id;
  $<HTMLButtonElement>('take').hidden = c.status !== 'waiting';
  $<HTMLButtonElement>('hand-back').hidden = !mine;
  $('answer').hidden = !mine;
  for (const b of document.querySelectorAll<HTMLButtonElement>('#inbox button, #recent button')) {
    if (b.dataset.session === c.session) b.setAttribute('aria-current', 'true');
    else b.removeAttribute('aria-current');
  }
}

async function show(id: string): Promise<void> {
  error('');
  try {
    const c = (await api.get('/api/desk/:session', { params: { session: id } })) as unknown as Conversation;
    if (open?.session !== id) {
      stopConv?.();
      stopConv = live.on(`chat:${id}`, (data) => {
        const m = data as { kind: string; line?: Line };
        if (m.kind === 'line' && m.line && open?.session === id) {
          $('transcript').append(lineItem(m.line));
          $('transcript').scrollTop = $('transcript').scrollHeight;
        } else if (open?.session === id) void refresh();
      });
    }
    drawConversation(c);
  } catch (e) {
    error(problemText(e));
  }
}

async function refresh(): Promise<void> {
  if (open) drawConversation((await api.get('/api/desk/:session', { params: { session: open.session } })) as unknown as Conversation);
}

async function act(path: 'take' | 'return'): Promise<void> {
  if (!open) return;
  error('');
  try {
    const params = { session: open.session };
    await (path === 'take' ? api.post('/api/desk/:session/take', { params }) : api.post('/api/desk/:session/return', { params }));
    await refresh();
    await loadLists();
  } catch (e) {
    error(problemText(e));
  }
}

$('take').addEventListener('click', () => void act('take'));
$('hand-back').addEventListener('click', () => void act('return'));
$('answer').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const input = $<HTMLInputElement>('answer-text');
  const text = input.value.trim();
  if (!text || !open) return;
  error('');
  void api
    .post('/api/desk/:session/messages', { params: { session: open.session }, body: { text } })
    .then(() => (input.value = ''))
    .catch((e: unknown) => error(problemText(e)));
});

let listTimer: ReturnType<typeof setTimeout> | undefined;
live.on('desk', () => {
  // several changes at once are read once
  clearTimeout(listTimer);
  listTimer = setTimeout(() => void loadLists(), 150);
});
live.onConnection((on) => $('conn').classList.toggle('on', on));

mountSignIn($('signin'), session, 'staff');
session.onChange((who) => {
  const staff = !!who && who.roles.some((r) => r === 'staff' || r === 'operator');
  me = staff ? who : undefined;
  $('need').hidden = staff;
  $('board').hidden = !staff;
  document.body.dataset.auth = staff ? 'staff' : 'none';
  if (staff) {
    live.reauthenticate();
    void loadLists().then(() => {
      const asked = new URLSearchParams(location.search).get('session');
      if (asked && !open) void show(asked);
    });
  }
});
void session.restore().finally(() => (document.body.dataset.ready = 'true'));
