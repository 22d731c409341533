/**
 * The guided conversation page: choices as buttons, free text, cards, the receipt number. When a
 * person takes the conversation at the desk, their answers arrive live on the conversation's topic
 * (`chat:<session>`) and the page says who answers, and when the guide answers again.
 */
import { STAGE_LABELS } from '../../src/chat/stages.js';
import { ApiError, publicApi, problemText, type Answer } from '../common/api.js';
import { LiveTopics } from '../common/live.js';
import { byId as $ } from '../common/ui.js';

type Turn = Answer<'POST', '/api/chat'>;
type Card = NonNullable<Turn['card']>;
type Line = Answer<'GET', '/api/chat/:session/transcript'>['transcript'][number];

const STAGE_TEXT: Record<string, string> = STAGE_LABELS;
const KEY = 'maru:chat:session';
const won = new Intl.NumberFormat('ko-KR');
let session = sessionStorage.getItem(KEY) ?? '';
let busy = false;
let answering = false;
let live: LiveTopics | undefined;
let listening = '';
let stopListening: (() => void) | undefined;

function li(cls: string, text: string): HTMLLIElement {
  const el = document.createElement('li');
  el.className = cls;
  el.textContent = text;
  $('log').append(el);
  el.scrollIntoView({ block: 'end' });
  return el;
}

function p(cls: string, text: string): HTMLParagraphElement {
  const el = document.createElement('p');
  el.className = cls;
  el.textContent = text;
  return el;
}

/** The summary before registration: each line as a term and its value. */
function summary(card: Card): HTMLDListElement {
  const dl = document.createElement('dl');
  dl.className = 'summary';
  const need = card.needText ? `${String(card.need)} (${String(card.needText)})` : String(card.need);
  const rows: [string, string, string][] = [
    ['name', '성함', String(card.name)],
    ['contact', '연락처', String(card.contact)],
    ['email', '이메일', card.email ? String(card.email) : '없음'],
    ['product', '상품', String(card.product)],
    ['need', '필요', need],
    ['memo', '요청 사항', card.memo ? String(card.memo) : '없음'],
  ];
  if (card.referralCode) rows.push(['referral', '추천 코드', String(card.referralCode)]);
  for (const [key, term, value] of rows) {
    const dt = document.createElement('dt');
    dt.textContent = term;
    const dd = document.createElement('dd');
    dd.textContent = value;
    dd.dataset.field = key;
    dl.append(dt, dd);
  }
  return dl;
}

function renderCard(card: Card): void {
  const el = li('card', '');
  el.dataset.card = card.type;
  switch (card.type) {
    case 'product':
      // the product by its name only: its rule number is no name a customer knows it by
      el.append(p('card-title', `${card.name}`), p('card-meta', `${card.categoryLabel} · ${card.summary}`), p('card-fee', `월 ${won.format(card.monthlyFee as number)}원`));
      break;
    case 'upsell':
      el.append(p('card-title', `${card.name}`), p('card-meta', `${card.baseName}에 추가 · ${card.summary}`), p('card-fee', `월 +${won.format(card.monthlyFee as number)}원`));
      break;
    case 'receipt':
    case 'callback':
      el.append(p('card-title', card.type === 'receipt' ? '접수 완료' : '상담원 연결 요청'), p('card-fee', `${card.receiptNo}`));
      if (card.type === 'receipt' && typeof card.pageUrl === 'string') {
        el.append(p('card-meta', `조회 키 (한 번만 표시됩니다): ${String(card.accessKey ?? '')}`));
        const a = document.createElement('a');
        a.href = card.pageUrl;
        a.target = '_blank';
        a.rel = 'noopener';
        a.className = 'track';
        a.textContent = '신청 조회 · 서류 제출';
        el.append(a);
      }
      break;
    case 'summary':
      el.append(p('card-title', '신청 내용'), summary(card));
      break;
    case 'progress':
      el.append(p('card-title', `진행 상황: ${card.label}`), p('card-meta', `접수번호 ${card.receiptNo}`));
      break;
    case 'share': {
      el.append(p('card-title', `${card.title}`), p('card-meta', `${card.text}`));
      const url = new URL(String(card.url), location.origin).toString();
      const share = document.createElement('button');
      share.type = 'button';
      share.textContent = '공유하기';
      share.onclick = async () => {
        const nav = navigator as Navigator & { share?: (d: ShareData) => Promise<void> };
        if (nav.share) await nav.share({ title: String(card.title), text: String(card.text), url }).catch(() => undefined);
        else await navigator.clipboard?.writeText(url).then(() => (share.textContent = '링크 복사됨'), () => undefined);
      };
      el.append(share);
      break;
    }
  }
}

/** Who answers: the guide, a person being waited for, or a person by name. */
function person(t: Turn): void {
  const box = $('person');
  const was = answering;
  answering = t.desk?.status === 'answering';
  box.dataset.status = t.desk?.status ?? (was ? 'returned' : 'guide');
  if (t.desk?.status === 'answering') box.textContent = `상담원 ${t.desk.agent}님이 답변하고 있어요.`;
  else if (t.desk?.status === 'waiting') box.textContent = '상담원을 기다리고 있어요. 연결되면 여기에서 바로 답변해 드려요.';
  else if (was) box.textContent = '상담원 상담이 끝났어요. 다시 안내가 이어져요.';
  box.hidden = !t.desk && !was;
  $<HTMLInputElement>('message').placeholder = answering ? '상담원에게 메시지 보내기' : '직접 입력하기';
}

/** The conversation's live topic: a person's answers, the take and the hand-back. */
function listen(id: string): void {
  if (listening === id) return;
  stopListening?.();
  listening = id;
  live ??= new LiveTopics();
  stopListening = live.on(`chat:${id}`, (data) => {
    const m = data as { kind: string; line?: Line; answer?: Turn };
    if (m.kind === 'line' && m.line && (m.line.by === 'agent' || m.line.by === 'note')) {
      const el = li(m.line.by === 'agent' ? 'agent' : 'note', m.line.text);
      if (m.line.by === 'agent') el.dataset.agent = m.line.agent ?? '';
    } else if (m.kind === 'desk' && m.answer) {
      render(m.answer, false);
    } else if (m.kind === 'returned' && m.answer) {
      render(m.answer);
    }
  });
}

function render(t: Turn, bubble = true): void {
  session = t.session;
  sessionStorage.setItem(KEY, session);
  listen(session);
  $('stage').textContent = `${t.stageCode}. ${STAGE_TEXT[t.stage] ?? t.stage}`;
  $('stage').dataset.stage = t.stage;
  // while a person answers, the guide's "a person is answering" is said once, in the banner
  const quiet = !bubble || (answering && t.desk?.status === 'answering');
  person(t);
  if (!quiet) li('bot', t.bot);
  // a person taking over changes who answers, not what was shown: no card again
  if (t.card && bubble) renderCard(t.card);
  if (t.receiptNo) {
    $('receipt-no').textContent = t.receiptNo;
    $('receipt').hidden = false;
  } else {
    $('receipt').hidden = true;
  }
  const box = $('choices');
  box.replaceChildren(
    ...t.choices.map((c) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = c;
      if (c === '상담원 연결') b.className = 'person';
      b.onclick = () => send({ choice: c }, c);
      return b;
    }),
  );
  // at the confirmation inside collect, the summary and its buttons come into view on any width
  if (t.card?.type === 'summary' && bubble) box.scrollIntoView({ block: 'end' });
}

function showError(e: unknown): void {
  $('error').textContent = `잠시 문제가 생겼어요. 다시 시도해 주세요. (${problemText(e)})`;
  $('error').hidden = false;
}

async function send(answer: { choice?: string; message?: string }, echo: string): Promise<void> {
  if (busy) return;
  busy = true;
  $('error').hidden = true;
  li('me', echo);
  try {
    render(await publicApi.post('/api/chat', { body: { session, ...answer } }));
  } catch (e) {
    if (e instanceof ApiError && e.code === 'session_not_found') await start();
    else showError(e);
  } finally {
    busy = false;
  }
}

async function start(): Promise<void> {
  $('log').replaceChildren();
  answering = false;
  const ref = new URLSearchParams(location.search).get('ref') ?? undefined;
  const subject = new URLSearchParams(location.search).get('subject') ?? '상담';
  try {
    render(await publicApi.post('/api/chat/start', { body: { subject, ...(ref ? { referralCode: ref } : {}) } }));
  } catch (e) {
    if (ref && !(e instanceof ApiError && e.status === 429)) {
      // an unknown or malformed code: start without it, and say so
      try {
        const t = await publicApi.post('/api/chat/start', { body: { subject } });
        li('note', `추천 코드(${ref.slice(0, 40)})를 확인하지 못해 코드 없이 상담을 시작할게요.`);
        render(t);
      } catch (again) {
        showError(again);
      }
    } else showError(e);
  }
}

$('say').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const input = $<HTMLInputElement>('message');
  const text = input.value.trim();
  if (!text) return;
  input.value = '';
  void send({ message: text }, text);
});
$('restart').addEventListener('click', () => {
  sessionStorage.removeItem(KEY);
  void start();
});

/** After a reload: the conversation so far, from its transcript (the guide's last words come with the answer). */
async function replay(id: string, t: Turn): Promise<void> {
  const { transcript } = await publicApi.get('/api/chat/:session/transcript', { params: { session: id } }).catch(() => ({ transcript: [] as Line[] }));
  const last = transcript.at(-1);
  const lines = last?.by === 'bot' && last.text === t.bot ? transcript.slice(0, -1) : transcript;
  for (const l of lines) {
    const el = li(l.by === 'customer' ? 'me' : l.by, l.text);
    if (l.by === 'agent') el.dataset.agent = l.agent ?? '';
  }
}

void (async () => {
  if (session) {
    try {
      const t = await publicApi.get('/api/chat/:session', { params: { session } });
      await replay(session, t);
      render(t);
      return;
    } catch {
      sessionStorage.removeItem(KEY);
    }
  }
  await start();
})().finally(() => (document.body.dataset.ready = 'true')); // for the tests: the first turn is drawn
