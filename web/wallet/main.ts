// The wallet page: sign-in at the configured bank, balances, buying a challenge
// (confirmed first), its peg, payout requests, the account statement with its CSV, off-ramps followed
// until the bank settles them, and the chain checked here: the signed tree head, its consistency with
// the last head this browser verified, and each receipt's inclusion proof (chain.ts).
import '../common/not-configured.js'; // first: a hub without payment peers gets a message, not failing calls
import { problemText, publicApi, type Answer } from '../common/api.js';
import { checkHead, verifyReceipt } from './chain.js';
import { confirmAction, type Row } from './confirm.js';
import { codeName, decimal, exactTokens, krw, showTokens, tokens, when } from './format.js';
import { relay, token, user } from './session.js';
import { setupOfframp } from './offramp.js';
import { addStatementAccounts, setupStatement } from './statement.js';

import { byId as $ } from '../common/ui.js';
const say = (s: string) => ($('message').textContent = s);

$('who').textContent = user ? `${user} 님으로 로그인됨` : '로그인하지 않음';
$('signin').hidden = Boolean(token);
$('account').hidden = !token;
$('signout').hidden = !token;
$('signout').addEventListener('click', () => {
  sessionStorage.removeItem('sso');
  location.reload();
});
$('signin-go').addEventListener('click', async () => {
  let login: string | null;
  try {
    login = (await publicApi.get('/api/token/config')).sso_login_url;
  } catch (err) {
    $('signin-message').textContent = problemText(err);
    return;
  }
  if (!login) {
    $('signin-message').textContent = '은행 로그인이 설정되어 있지 않습니다 (BANKING_URL).';
    return;
  }
  location.href = `${login}?return=${encodeURIComponent(`${location.origin}/wallet`)}`;
});

/** What the wallet holds now (minor units), for the confirmations' "balance after". */
let held: { wallet: bigint; credit: bigint } | null = null;

async function refresh() {
  if (!token) return;
  const rs = await relay.get('/api/token/receipts', { query: { limit: 20 } }).catch(() => undefined);
  for (const r of [...(rs?.receipts ?? [])].reverse()) addReceipt(r.receipt_hash, `${codeName(String(r.kind))} ${tokens(String(r.amount))}`);
  let w: Answer<'GET', '/api/token/wallet'>;
  try {
    w = await relay.get('/api/token/wallet', { query: { limit: 50 } });
  } catch (err) {
    return void say(problemText(err));
  }
  held = { wallet: BigInt(w.balance), credit: BigInt(w.learning_credit) };
  showTokens($('balance'), w.balance);
  showTokens($('credit'), w.learning_credit);
  showTokens($('collateral'), w.collateral);
  $('history').replaceChildren(
    ...(w.history as unknown as { ts: number; code: string; amount: string; debit: string }[]).map((t) => {
      const tr = document.createElement('tr');
      const out = t.debit.startsWith(`u:${user}:`);
      for (const s of [when(t.ts), codeName(t.code), '', out ? '출금' : '입금']) tr.append(Object.assign(document.createElement('td'), { textContent: s }));
      showTokens(tr.children[2] as HTMLElement, t.amount);
      return tr;
    }),
  );
  const mine = await relay.get('/api/token/my/challenges').catch(() => undefined);
  if (mine) {
    const list = mine.challenges as { id: string; kind: string; state?: string; peg: { peg_rate: string } }[];
    addStatementAccounts(list.map((c) => ({ id: c.id, name: `${c.kind} (${c.id})` })));
    // the peg of each kind the user holds (the latest challenge of that kind first)
    for (const c of [...list].reverse()) {
      const cell = document.querySelector<HTMLElement>(`tr[data-challenge="${CSS.escape(c.kind)}"] .peg`);
      if (cell) {
        cell.textContent = decimal(c.peg.peg_rate);
        cell.title = `내 챌린지 ${c.id}의 페그: 1 USD = ${c.peg.peg_rate} 토큰`;
      }
    }
    // a challenge already running is not offered for sale again: its row says so instead
    for (const c of list) {
      if (c.state !== 'active' && c.state !== 'funded') continue;
      const action = document.querySelector(`tr[data-challenge="${CSS.escape(c.kind)}"] td:last-child`);
      if (action && action.querySelector('button')) action.replaceChildren(Object.assign(document.createElement('span'), { className: 'running', textContent: '진행 중 · running' }));
    }
  }
}

function addReceipt(hash: string, label = '') {
  if (document.querySelector(`#receipts li[data-hash="${hash}"]`)) return;
  const li = document.createElement('li');
  li.className = 'receipt';
  li.dataset.hash = hash;
  li.innerHTML = '<code></code> <span class="kind"></span> <button type="button">검증</button> <span class="result" role="status"></span>';
  li.querySelector('code')!.textContent = `${hash.slice(0, 16)}…`;
  li.querySelector('.kind')!.textContent = label;
  li.querySelector('button')!.setAttribute('aria-label', `영수증 ${hash.slice(0, 8)} 검증`);
  li.querySelector('button')!.addEventListener('click', async () => {
    const out = li.querySelector<HTMLElement>('.result')!;
    out.textContent = '검증 중…';
    const r = await verifyReceipt(hash);
    out.textContent = r.text;
    out.className = `result ${r.ok ? 'ok' : 'bad'}`;
    li.dataset.verified = r.ok ? 'yes' : 'no';
  });
  $('receipts').prepend(li);
}

async function challenges() {
  let list: Answer<'GET', '/api/token/challenges'>;
  try {
    list = await relay.get('/api/token/challenges');
  } catch (err) {
    return void say(problemText(err));
  }
  $('challenges').replaceChildren(
    ...(list.challenges as { challenge_id: string; name: string; account_size: number; entry_fee: string }[]).map((c) => {
      const tr = document.createElement('tr');
      tr.dataset.challenge = c.challenge_id;
      tr.innerHTML = '<td class="name"></td><td class="num"></td><td class="num"></td><td class="peg" title="페그(1 USD당 토큰)는 구매하는 순간의 시세로 정해져 그 챌린지에 고정됩니다">구매 시 확정</td><td><button type="button">구매</button></td>';
      const tds = tr.querySelectorAll('td');
      tds[0]!.textContent = c.name;
      tds[1]!.textContent = c.account_size.toLocaleString('ko-KR');
      showTokens(tds[2]!, c.entry_fee);
      const button = tr.querySelector('button')!;
      button.setAttribute('aria-label', `${c.name} 구매`);
      button.addEventListener('click', () => void buy(c.challenge_id, c.name));
      return tr;
    }),
  );
}

/**
 * A purchase: the hub's quote first (GET /api/token/challenge/quote: amount, fee, total, where it
 * comes from, the peg a purchase now fixes), confirmed by the person, then bought.
 */
async function buy(challengeId: string, name: string) {
  let q: Answer<'GET', '/api/token/challenge/quote'>;
  try {
    q = await relay.get('/api/token/challenge/quote', { query: { challenge_id: challengeId } });
  } catch (err) {
    return void say(problemText(err));
  }
  const amount = (units: string, key: string): Row => [key, `${exactTokens(units)} 토큰`, units];
  const rows: Row[] = [
    amount(q.amount, '참가비'),
    amount(q.fee, '구매 수수료'),
    ['적용 페그', `1 USD = ${decimal(q.peg_rate)} 토큰 (지금 시세, 구매하는 순간 확정)`],
    amount(q.total, '합계'),
    amount(q.from_credit, '학습 크레딧에서'),
    amount(q.from_wallet, '지갑에서'),
    amount(q.wallet_after, '구매 후 지갑 잔액'),
  ];
  if (!q.sufficient) {
    rows.push(['잔액', '지갑 잔액이 모자랍니다. 먼저 충전하세요.']);
    await confirmAction(`${name} 견적 · 잔액 부족`, rows, '닫기', { okOnly: true });
    return void say('잔액이 부족합니다.');
  }
  if (!(await confirmAction(`${name} 챌린지를 구매할까요?`, rows, '구매'))) return void say('구매를 취소했습니다.');
  try {
    const r = (await relay.post('/api/token/challenge/buy', { body: { challenge_id: challengeId, user_id: user } })) as { broker_account?: string; receipt_hash?: string };
    say(`${name} 구매 완료: 브로커 계좌 ${r.broker_account}`);
    if (r.receipt_hash) addReceipt(r.receipt_hash, `${codeName('challenge_purchase')} ${tokens(q.total)}`);
  } catch (err) {
    say(problemText(err));
  }
  await refresh();
}

async function chainCheck() {
  const out = $('chain-result');
  out.textContent = '검증 중…';
  const r = await checkHead();
  out.textContent = r.text;
  out.className = r.ok ? 'ok' : 'bad';
  out.dataset.verified = r.ok ? 'yes' : 'no';
}
$('chain-check').addEventListener('click', () => void chainCheck());

$('onramp').addEventListener('submit', async (e) => {
  e.preventDefault();
  let r: { location?: string; peg_rate?: string };
  try {
    r = (await relay.post('/api/token/onramp', {
      body: { amount_krw: Number($<HTMLInputElement>('krw').value), method: $<HTMLSelectElement>('method').value as 'card' | 'transfer' },
      headers: { accept: 'application/json' },
    })) as typeof r;
  } catch (err) {
    return void say(problemText(err));
  }
  if (!r.location) return void say('은행 결제 주소를 받지 못했습니다. 잠시 뒤에 다시 시도하세요.');
  const location_ = r.location;
  const rows: Row[] = [
    ['충전 금액', krw(Number($<HTMLInputElement>('krw').value))],
    ['적용 페그', `1 USD = ${decimal(String(r.peg_rate))} 토큰`],
    ['원/달러 환율', '은행이 결제 화면에서 정합니다'],
  ];
  if (held) rows.push(['현재 지갑 잔액', `${tokens(held.wallet)} 토큰`]);
  if (await confirmAction('은행에서 충전할까요?', rows, '은행 결제로 이동')) location.href = location_;
  else say('충전을 취소했습니다.');
});

$('payout').addEventListener('submit', async (e) => {
  e.preventDefault();
  try {
    const r = (await relay.post('/api/token/payout/request', { body: { week: $<HTMLInputElement>('week').value } })) as { status?: string; amount?: string; receipt_hash?: string };
    say(`수익 지급 ${r.status}: ${tokens(r.amount ?? '0')} 토큰`);
    if (r.receipt_hash) addReceipt(r.receipt_hash, `${codeName('payout')} ${tokens(r.amount ?? '0')}`);
  } catch (err) {
    say(problemText(err));
  }
  await refresh();
});

if (token) {
  setupStatement();
  setupOfframp(() => held?.wallet ?? null, refresh);
  void challenges().then(refresh).then(chainCheck).finally(() => (document.body.dataset.ready = 'true'));
} else {
  document.body.dataset.ready = 'true';
}
