import { problemText, publicApi } from '../common/api.js';
import { byId as $, el } from '../common/ui.js';

interface Demo {
  tickets: { code: string; page_url: string }[];
  documents: { slug: string; page_url: string }[];
  programs: string[];
  members: string[];
  rental: { applications: string[]; receipts: string[]; applicant_key?: string };
  chat: { sessions: { stage: string; session: string }[]; receipts: string[]; referral_code?: string };
  coach: { owner: string; header: string }[];
  wallet?: {
    user: string;
    sign_in_url: string;
    challenge?: string;
    program?: string;
    payouts?: { paid: { week: string }; held: { week: string; review?: string } };
  };
  accounts: { user: string; roles: string[] }[];
}

interface Card {
  id: string;
  title: string;
  ko: string;
  en: string;
  /** `as`: a signed-in link for that demo account (shown when the tour holds the run's key). */
  links: { href: string; label: string; external?: boolean; as?: string }[];
  signIn: string;
}

// The guided tour: one card per service, built from what the demo seeded (GET /api/demo), with
// signed-in links for the demo accounts when the tour was opened from the address the demo printed.
function cards(d: Demo): Card[] {
  const rejected = d.rental.receipts[3];
  return [
    {
      id: 'reward',
      title: '보상 · reward plan',
      ko: `회원 ${d.members.length}명의 등급, 적립된 RU와 준비금을 실시간으로 봅니다.`,
      en: `The ${d.members.length} members' grades, credited RU and the reserve pool, live.`,
      links: [{ href: '/', label: '보상 대시보드 · reward dashboard' }],
      signIn: '로그인 없음 · no sign-in',
    },
    {
      id: 'ticket',
      title: '티켓 · mobile tickets',
      ko: '티켓을 휴대폰에서 열고, 스캐너에서 코드를 입력해 입장 처리해 보세요. 한 장은 이미 입장했습니다.',
      en: 'Open a ticket on a phone, then check it in at the scanner by typing its code. One is already checked in.',
      links: [
        ...d.tickets.map((t) => ({ href: t.page_url, label: t.code })),
        { href: '/scan', label: '입장 스캐너 · door scanner' },
        { href: '/scan', label: 'demo-staff로 로그인된 스캐너 · scanner signed in as demo-staff', as: 'demo-staff' },
        { href: '/shows', label: 'demo-staff로 로그인된 예매 관리 · bookings signed in as demo-staff', as: 'demo-staff' },
      ],
      signIn: 'demo-staff (/scan)',
    },
    {
      id: 'trading',
      title: '트레이딩 · trading programs',
      ko: `실행 중인 프로그램 ${d.programs.length}개의 신호와 거래를 실시간으로 보고, 백테스트를 돌려 보세요.`,
      en: `Watch the ${d.programs.length} running programs' signals and trades live, and run a backtest.`,
      links: [
        { href: '/trading', label: '트레이딩 대시보드 · trading dashboard' },
        { href: '/trading', label: 'demo-trader로 로그인된 대시보드 · dashboard signed in as demo-trader', as: 'demo-trader' },
      ],
      signIn: 'demo-trader',
    },
    {
      id: 'collab',
      title: '문서 · documents',
      ko: '문서를 고치고 버전 이력의 차이를 비교해 보세요. 두 창에서 열면 함께 편집됩니다.',
      en: 'Edit a document and compare its versions; open it in two windows to co-edit.',
      links: [
        ...d.documents.map((x) => ({ href: x.page_url, label: x.slug })),
        ...d.documents.slice(0, 1).map((x) => ({ href: x.page_url, label: `demo-editor로 로그인해 ${x.slug} 편집 · edit ${x.slug} signed in as demo-editor`, as: 'demo-editor' })),
      ],
      signIn: 'demo-editor',
    },
    {
      id: 'rental',
      title: '렌탈 · rental review',
      ko: `모든 상태의 신청 ${d.rental.receipts.length}건이 있습니다. 검토자로 서류를 열어 승인하거나 반려하고, 반려된 신청은 신청자로 서류를 다시 올려 보세요.`,
      en: `${d.rental.receipts.length} applications in every status. As the partner, open and approve or reject documents; as the applicant of the rejected one, upload its document again.`,
      links: [
        { href: '/partner.html?user=demo-partner', label: '검토 화면 · partner review' },
        { href: '/partner.html?user=demo-partner', label: 'demo-partner로 로그인된 검토 화면 · review signed in as demo-partner', as: 'demo-partner' },
        ...(rejected && d.rental.applicant_key ? [{ href: `/applicant.html#receipt=${rejected}&key=${d.rental.applicant_key}`, label: `신청자 ${rejected} · applicant` }] : []),
        { href: '/rental.html', label: '새 신청 · new application' },
      ],
      signIn: 'demo-partner (검토 · review); 신청자는 링크의 접수번호와 키 · the applicant by the link’s receipt and key',
    },
    {
      id: 'chat',
      title: '상담 · guided conversation',
      ko: `추천 코드 ${d.chat.referral_code ?? ''}로 상담을 시작해 신청까지 가 보세요. 접수번호 ${d.chat.receipts.join(', ')}가 이미 등록되어 있습니다.`,
      en: `Start a conversation with the referral code ${d.chat.referral_code ?? ''} and go as far as a receipt. Receipts ${d.chat.receipts.join(', ')} are registered.`,
      links: [
        ...(d.chat.referral_code ? [{ href: `/chat?ref=${d.chat.referral_code}`, label: `추천 코드로 상담 · chat with ${d.chat.referral_code}` }] : []),
        { href: '/chat', label: '상담 시작 · start a conversation' },
      ],
      signIn: '로그인 없음 · no sign-in',
    },
    {
      id: 'coach',
      title: '코칭 · coaching',
      ko: '비전과 네 단계(티 옴 타 음)의 행동, 오늘의 카드를 보고, 행동을 완료해 점수를 받아 보세요.',
      en: 'See the vision, the actions in the four phases (티 옴 타 음) and the card of the day; complete an action to earn its points.',
      links: d.coach.map((c) => ({ href: `/coach#owner=${encodeURIComponent(c.header)}`, label: c.owner })),
      signIn: `X-Service-Owner: ${d.coach.map((c) => c.owner).join(', ')} (링크에 포함 · in the link)`,
    },
    {
      id: 'payment',
      title: '지갑 · wallet',
      ko: d.wallet
        ? `은행 모의 서버로 로그인하면 충전된 잔액, 구매한 챌린지와 영수증이 보입니다. 충전도 해 보세요.${payouts(d, 'ko')}`
        : '결제 릴레이가 설정된 외부 은행을 쓰고 있어 데모 지갑은 없습니다.',
      en: d.wallet
        ? `Sign in through the bank stand-in to see the topped-up balance, the bought challenge and its receipts; try an on-ramp.${payouts(d, 'en')}`
        : 'The payment relay runs on configured peers, so there is no demo wallet.',
      links: d.wallet
        ? [
            { href: d.wallet.sign_in_url, label: `${d.wallet.user}로 로그인 · sign in as ${d.wallet.user}`, external: true },
            { href: '/wallet', label: '지갑 · wallet' },
          ]
        : [{ href: '/wallet', label: '지갑 · wallet' }],
      signIn: d.wallet ? `${d.wallet.user} (은행 모의 서버 · bank stand-in)` : '-',
    },
  ];
}

/** The seeded payouts, in a sentence. */
function payouts(d: Demo, lang: 'ko' | 'en'): string {
  const p = d.wallet?.payouts;
  if (!p) return '';
  return lang === 'ko'
    ? ` 수익 지급: ${p.paid.week} 주는 지급 완료, ${p.held.week} 주는 규칙 위반으로 검토 대기(${p.held.review ?? ''}, 운영자 admin이 승인 또는 반려).`
    : ` Payouts: week ${p.paid.week} paid, week ${p.held.week} held for review after a rule violation (${p.held.review ?? ''}, for the operator admin to approve or reject).`;
}

// The tour key (printed in the tour's address at the demo start): kept for this tab, taken out of the address
const KEY = 'demo:key';
const fromHash = new URLSearchParams(location.hash.slice(1)).get('key');
if (fromHash) {
  sessionStorage.setItem(KEY, fromHash);
  history.replaceState(null, '', location.pathname);
}
const tourKey = sessionStorage.getItem(KEY);

/** Opens `href` signed in as `user`: a one-time ticket, traded by the page (web/common/demo-sign-in.ts). */
async function openSignedIn(href: string, user: string): Promise<void> {
  const body = await publicApi.post('/api/demo/sign-in', { headers: { 'x-demo-key': tourKey ?? '' }, body: { user } });
  location.assign(`${href}${href.includes('#') ? '&' : '#'}demo-sign-in=${body.ticket}`);
}

function link(l: Card['links'][number]): HTMLElement {
  const a = el('a', { href: l.href, ...(l.external ? { rel: 'noopener' } : {}), ...(l.as ? { 'data-sign-in': l.as, class: 'signed-in' } : {}) }, l.label);
  if (l.as) {
    const as = l.as;
    a.addEventListener('click', (ev) => {
      ev.preventDefault();
      openSignedIn(l.href, as).catch((err: unknown) => {
        $('error').textContent = `로그인된 링크를 열지 못했습니다 · could not open the signed-in link (${problemText(err)})`;
      });
    });
  }
  return el('li', {}, a);
}

$('key-note').hidden = Boolean(tourKey);
try {
  const d = (await publicApi.get('/api/demo')) as Demo;
  $('accounts').textContent = d.accounts.map((a) => `${a.user} (${a.roles.join(', ')})`).join(' · ');
  $('tour').replaceChildren(
    ...cards(d).map((c) =>
      el(
        'section',
        { class: 'card', id: `tour-${c.id}`, 'aria-labelledby': `tour-${c.id}-h` },
        el('h2', { id: `tour-${c.id}-h` }, c.title),
        el('p', { class: 'small', lang: 'ko' }, c.ko),
        el('p', { class: 'small muted', lang: 'en' }, c.en),
        el('ul', { class: 'links' }, ...c.links.filter((l) => !l.as || tourKey).map(link)),
        el('p', { class: 'small signin-line' }, `로그인 · sign in: ${c.signIn}`),
      ),
    ),
  );
} catch (err) {
  $('error').textContent = `데모 정보를 불러오지 못했습니다 · could not load the demo (${problemText(err)})`;
}
document.body.dataset.ready = 'true'; // for the tests: the cards (or the error) are drawn
