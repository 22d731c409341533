/** The guided conversation page: choices as buttons, free text, cards, the receipt number. */

interface Card {
  type: 'product' | 'upsell' | 'receipt' | 'progress' | 'callback' | 'share';
  [k: string]: unknown;
}
interface Turn {
  session: string;
  stage: string;
  stageCode: number;
  bot: string;
  choices: string[];
  card?: Card;
  receiptNo?: string;
}

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const STAGE_TEXT: Record<string, string> = {
  greet: '인사', need: '필요 파악', recommend: '추천', collect: '정보 입력', received: '접수',
  track: '진행 조회', upsell: '추가 제안', referral: '추천 코드', sharing: '공유', handoff: '상담원 연결',
};
const KEY = 'maru:chat:session';
const won = new Intl.NumberFormat('ko-KR');
let session = sessionStorage.getItem(KEY) ?? '';
let busy = false;

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

function renderCard(card: Card): void {
  const el = li('card', '');
  el.dataset.card = card.type;
  switch (card.type) {
    case 'product':
      el.append(p('card-title', `${card.name}`), p('card-meta', `상품 코드 ${card.code} · ${card.categoryLabel}`), p('card-meta', `${card.summary}`), p('card-fee', `월 ${won.format(card.monthlyFee as number)}원`));
      break;
    case 'upsell':
      el.append(p('card-title', `${card.name}`), p('card-meta', `상품 코드 ${card.code} · ${card.baseName}에 추가`), p('card-meta', `${card.summary}`), p('card-fee', `월 +${won.format(card.monthlyFee as number)}원`));
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

function render(t: Turn): void {
  session = t.session;
  sessionStorage.setItem(KEY, session);
  $('stage').textContent = `${t.stageCode}. ${STAGE_TEXT[t.stage] ?? t.stage}`;
  $('stage').dataset.stage = t.stage;
  li('bot', t.bot);
  if (t.card) renderCard(t.card);
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
}

async function api(path: string, body?: unknown): Promise<Turn> {
  const res = await fetch(path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw Object.assign(new Error(data?.error?.message ?? `HTTP ${res.status}`), { status: res.status, code: data?.error?.code });
  return data as Turn;
}

function showError(e: unknown): void {
  $('error').textContent = `잠시 문제가 생겼어요. 다시 시도해 주세요. (${(e as Error).message})`;
  $('error').hidden = false;
}

async function send(answer: { choice?: string; message?: string }, echo: string): Promise<void> {
  if (busy) return;
  busy = true;
  $('error').hidden = true;
  li('me', echo);
  try {
    render(await api('/api/chat', { session, ...answer }));
  } catch (e) {
    if ((e as { code?: string }).code === 'session_not_found') await start();
    else showError(e);
  } finally {
    busy = false;
  }
}

async function start(): Promise<void> {
  $('log').replaceChildren();
  const ref = new URLSearchParams(location.search).get('ref') ?? undefined;
  const subject = new URLSearchParams(location.search).get('subject') ?? '상담';
  try {
    render(await api('/api/chat/start', { subject, ...(ref ? { referralCode: ref } : {}) }));
  } catch (e) {
    if (ref && (e as { status?: number }).status !== 429) {
      // an unknown or malformed code: start without it
      render(await api('/api/chat/start', { subject }));
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

(async () => {
  if (session) {
    try {
      render(await api(`/api/chat/${encodeURIComponent(session)}`));
      return;
    } catch {
      sessionStorage.removeItem(KEY);
    }
  }
  await start();
})();
export {};
