// The wallet page (issues 23 and 27): sign-in at the configured bank, balances, buying a challenge
// (confirmed first), its peg, payout requests, the account statement with its CSV, off-ramps followed
// until the bank settles them, and the chain checked here: the signed tree head, its consistency with
// the last head this browser verified, and each receipt's inclusion proof (chain.ts).
import '../common/not-configured.js'; // first: a hub without payment peers gets a message, not failing calls
import { api, token, user } from './api.js';
import { checkHead, verifyReceipt } from './chain.js';
import { confirmAction } from './confirm.js';
import { codeName, decimal, errorText, krw, tokens, when } from './format.js';
import { setupOfframp } from './offramp.js';
import { addStatementAccounts, setupStatement } from './statement.js';

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
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
  const c = await api('GET', '/api/token/config');
  const login = c.status === 200 ? (c.body.sso_login_url as string | null) : null;
  if (!login) {
    $('signin-message').textContent = c.status === 200 ? '은행 로그인이 설정되어 있지 않습니다 (BANKING_URL).' : errorText(c.body, c.status, '로그인 준비');
    return;
  }
  location.href = `${login}?return=${encodeURIComponent(`${location.origin}/wallet`)}`;
});

/** What the wallet holds now (minor units), for the confirmations' "balance after". */
let held: { wallet: bigint; credit: bigint } | null = null;

async function refresh() {
  if (!token) return;
  const rs = await api('GET', '/api/token/receipts?limit=20');
  if (rs.status === 200) for (const r of [...rs.body.receipts].reverse()) addReceipt(r.receipt_hash, `${codeName(r.kind)} ${tokens(r.amount)}`);
  const w = await api('GET', '/api/token/wallet?limit=50');
  if (w.status !== 200) return void say(errorText(w.body, w.status, '지갑 조회'));
  held = { wallet: BigInt(w.body.balance), credit: BigInt(w.body.learning_credit) };
  $('balance').textContent = tokens(w.body.balance);
  $('credit').textContent = tokens(w.body.learning_credit);
  $('collateral').textContent = tokens(w.body.collateral);
  $('history').replaceChildren(
    ...w.body.history.map((t: { ts: number; code: string; amount: string; debit: string }) => {
      const tr = document.createElement('tr');
      const out = t.debit.startsWith(`u:${user}:`);
      for (const s of [when(t.ts), codeName(t.code), tokens(t.amount), out ? '출금' : '입금']) tr.append(Object.assign(document.createElement('td'), { textContent: s }));
      return tr;
    }),
  );
  const mine = await api('GET', '/api/token/my/challenges');
  if (mine.status === 200) {
    const list = mine.body.challenges as { id: string; kind: string; peg: { peg_rate: string } }[];
    addStatementAccounts(list.map((c) => ({ id: c.id, name: `${c.kind} (${c.id})` })));
    // the peg of each kind the user holds (the latest challenge of that kind first)
    for (const c of [...list].reverse()) {
      const cell = document.querySelector(`tr[data-challenge="${CSS.escape(c.kind)}"] .peg`);
      if (cell) cell.textContent = decimal(c.peg.peg_rate);
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
  const list = await api('GET', '/api/token/challenges');
  if (list.status !== 200) return void say(errorText(list.body, list.status, '챌린지 조회'));
  $('challenges').replaceChildren(
    ...list.body.challenges.map((c: { challenge_id: string; name: string; account_size: number; entry_fee: string }) => {
      const tr = document.createElement('tr');
      tr.dataset.challenge = c.challenge_id;
      tr.innerHTML = '<td class="name"></td><td class="num"></td><td class="num"></td><td class="peg">-</td><td><button type="button">구매</button></td>';
      const tds = tr.querySelectorAll('td');
      tds[0]!.textContent = c.name;
      tds[1]!.textContent = c.account_size.toLocaleString('ko-KR');
      tds[2]!.textContent = tokens(c.entry_fee);
      const button = tr.querySelector('button')!;
      button.setAttribute('aria-label', `${c.name} 구매`);
      button.addEventListener('click', async () => {
        const fee = BigInt(c.entry_fee);
        const rows: [string, string][] = [['참가비', `${tokens(fee)} 토큰`]];
        if (held) {
          const fromCredit = held.credit < fee ? held.credit : fee;
          rows.push(['학습 크레딧에서', `${tokens(fromCredit)} 토큰`], ['지갑에서', `${tokens(fee - fromCredit)} 토큰`], ['구매 후 지갑 잔액', `${tokens(held.wallet - (fee - fromCredit))} 토큰`]);
        }
        if (!(await confirmAction(`${c.name} 챌린지를 구매할까요?`, rows, '구매'))) return void say('구매를 취소했습니다.');
        const r = await api('POST', '/api/token/challenge/buy', { challenge_id: c.challenge_id, user_id: user });
        if (r.status === 200) {
          say(`${c.name} 구매 완료: 브로커 계좌 ${r.body.broker_account}`);
          addReceipt(r.body.receipt_hash, `${codeName('challenge_purchase')} ${tokens(c.entry_fee)}`);
        } else say(errorText(r.body, r.status, '구매'));
        await refresh();
      });
      return tr;
    }),
  );
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
  const r = await api('POST', '/api/token/onramp', { amount_krw: Number($<HTMLInputElement>('krw').value), method: $<HTMLSelectElement>('method').value }, { accept: 'application/json' });
  if (r.status !== 200 || !r.body.location) return void say(errorText(r.body, r.status, '충전'));
  const rows: [string, string][] = [
    ['충전 금액', krw(Number($<HTMLInputElement>('krw').value))],
    ['적용 페그', `1 USD = ${decimal(String(r.body.peg_rate))} 토큰`],
    ['원/달러 환율', '은행이 결제 화면에서 정합니다'],
  ];
  if (held) rows.push(['현재 지갑 잔액', `${tokens(held.wallet)} 토큰`]);
  if (await confirmAction('은행에서 충전할까요?', rows, '은행 결제로 이동')) location.href = r.body.location;
  else say('충전을 취소했습니다.');
});

$('payout').addEventListener('submit', async (e) => {
  e.preventDefault();
  const r = await api('POST', '/api/token/payout/request', { week: $<HTMLInputElement>('week').value });
  if (r.status === 200) {
    say(`수익 지급 ${r.body.status}: ${tokens(r.body.amount)} 토큰`);
    if (r.body.receipt_hash) addReceipt(r.body.receipt_hash, `${codeName('payout')} ${tokens(r.body.amount)}`);
  } else say(errorText(r.body, r.status, '수익 지급 요청'));
  await refresh();
});

if (token) {
  setupStatement();
  setupOfframp(() => held?.wallet ?? null, refresh);
  void challenges().then(refresh).then(chainCheck).finally(() => (document.body.dataset.ready = '1'));
} else {
  document.body.dataset.ready = '1';
}
