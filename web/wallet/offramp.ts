// Off-ramps: withdrawing tokens to the bank (confirmed first: amount, fee, what the bank pays, the
// balance after) and each off-ramp's status, polled until the bank settles it (paid) or rejects it
// (returned to the wallet with its fee).
import { offrampFee } from '../../src/payment/rules.js';
import { problemText } from '../common/api.js';
import { confirmAction } from './confirm.js';
import { parseTokens, exactTokens, tokens, when } from './format.js';
import { relay, user } from './session.js';

import { byId as $ } from '../common/ui.js';
const KEY = () => `wallet:offramps:${user}`;
const POLL_MS = 2_000;

interface Kept {
  id: string;
  amount: string;
  net: string;
  ts: number;
}
const kept = (): Kept[] => {
  try {
    return JSON.parse(localStorage.getItem(KEY()) ?? '[]') as Kept[];
  } catch {
    return [];
  }
};

const STATES: Record<string, [string, string]> = {
  sent: ['은행 처리 대기 중', 'pending'],
  paid: ['지급 완료', 'ok'],
  returned: ['은행이 거절하여 지갑으로 반환됨 (수수료 포함)', 'bad'],
};

function row(o: Kept): HTMLLIElement {
  let li = document.querySelector<HTMLLIElement>(`#offramps li[data-offramp="${o.id}"]`);
  if (li) return li;
  li = document.createElement('li');
  li.dataset.offramp = o.id;
  li.innerHTML = '<span class="what"></span> · <span class="state" role="status"></span>';
  li.querySelector('.what')!.textContent = `${when(o.ts)} 출금 ${tokens(o.amount)} 토큰 (은행 입금 ${tokens(o.net)})`;
  $('offramps').prepend(li);
  return li;
}

/** Polls one off-ramp until the bank has settled it. */
async function track(o: Kept, onSettled: () => void) {
  const li = row(o);
  const state = li.querySelector<HTMLElement>('.state')!;
  for (;;) {
    try {
      const r = (await relay.get('/api/token/offramp/:id', { params: { id: o.id } })) as { state?: string; reason?: string };
      const [text, cls] = STATES[r.state ?? ''] ?? [String(r.state), ''];
      state.textContent = r.reason ? `${text} (은행 사유: ${r.reason})` : text;
      li.dataset.state = r.state ?? '';
      state.className = `state ${cls}`;
      if (r.state !== 'sent') return onSettled();
    } catch (err) {
      state.textContent = problemText(err);
    }
    await new Promise((res) => setTimeout(res, POLL_MS));
  }
}

/** Wires the off-ramp form; `balance` reads the wallet's balance now, `refresh` redraws the wallet. */
export function setupOfframp(balance: () => bigint | null, refresh: () => Promise<void>) {
  for (const o of kept()) void track(o, () => void refresh());
  $('offramp').addEventListener('submit', async (e) => {
    e.preventDefault();
    const msg = $('offramp-message');
    const amount = parseTokens($<HTMLInputElement>('offramp-amount').value);
    if (amount === null || amount <= 0n) {
      msg.textContent = '출금할 토큰 수량을 숫자로 입력해 주세요 (소수점 아래 6자리까지).';
      return;
    }
    const fee = offrampFee(amount);
    const now = balance();
    const rows: [string, string][] = [
      ['출금 금액', `${exactTokens(amount)} 토큰`],
      ['수수료 (1.4%)', `${exactTokens(fee)} 토큰`],
      ['은행 입금액', `${exactTokens(amount - fee)} 토큰`],
    ];
    if (now !== null) rows.push(['출금 후 지갑 잔액', `${tokens(now - amount)} 토큰`]);
    if (!(await confirmAction('은행으로 출금할까요?', rows, '출금'))) {
      msg.textContent = '출금을 취소했습니다.';
      return;
    }
    let r: { offramp: string; amount: string; fee: string; net: string };
    try {
      r = (await relay.post('/api/token/offramp', { body: { amount: amount.toString() } })) as typeof r;
    } catch (err) {
      msg.textContent = problemText(err);
      return;
    }
    const o: Kept = { id: r.offramp, amount: r.amount, net: r.net, ts: Date.now() };
    localStorage.setItem(KEY(), JSON.stringify([...kept(), o].slice(-20)));
    void track(o, () => void refresh());
    msg.textContent = `출금을 요청했습니다: ${tokens(r.amount)} 토큰 (수수료 ${tokens(r.fee)}).`;
    await refresh();
  });
}
