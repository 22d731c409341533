// The statement of one of the user's accounts for a period: opening balance, each transfer with its
// running balance, closing balance, the tie-out (opening + credits - debits = closing = last running
// balance), and the CSV the route gives.
import { problemText } from '../common/api.js';
import { relay } from './session.js';
import { codeName, kstDate, kstMidnight, nextDay, showTokens, tokens, when } from './format.js';

import { byId as $ } from '../common/ui.js';

/** The chosen account and period: [from 00:00 KST, the day after `to` 00:00 KST). */
function period(format: 'json' | 'csv') {
  const account = $<HTMLSelectElement>('st-account').value;
  const from = kstMidnight($<HTMLInputElement>('st-from').value);
  const to = kstMidnight(nextDay($<HTMLInputElement>('st-to').value || '1970-01-01'));
  return { account, from, to, format };
}

function setPeriod(kind: 'month' | 'last-month' | 'week') {
  const today = kstDate(Date.now());
  const [y, m] = today.split('-').map(Number) as [number, number];
  if (kind === 'month') {
    $<HTMLInputElement>('st-from').value = `${today.slice(0, 8)}01`;
    $<HTMLInputElement>('st-to').value = today;
  } else if (kind === 'last-month') {
    const py = m === 1 ? y - 1 : y;
    const pm = m === 1 ? 12 : m - 1;
    const first = `${py}-${String(pm).padStart(2, '0')}-01`;
    $<HTMLInputElement>('st-from').value = first;
    $<HTMLInputElement>('st-to').value = new Date(Date.parse(`${today.slice(0, 8)}01T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10);
  } else {
    const dow = (new Date(`${today}T00:00:00Z`).getUTCDay() + 6) % 7;
    $<HTMLInputElement>('st-from').value = new Date(Date.parse(`${today}T00:00:00Z`) - dow * 86_400_000).toISOString().slice(0, 10);
    $<HTMLInputElement>('st-to').value = today;
  }
}

const cell = (text: string, cls = '') => Object.assign(document.createElement('td'), { textContent: text, className: cls });
/** A cell with an amount rounded for people, the exact one on hover; empty for none. */
const money = (units: bigint | null, cls: string) => (units === null ? cell('', cls) : showTokens(cell('', cls), units));

async function show() {
  const out = $('st-message');
  out.textContent = '불러오는 중…';
  let answer: unknown;
  try {
    answer = await relay.get('/api/token/statement', { query: period('json') });
  } catch (err) {
    out.textContent = problemText(err);
    $('st-result').hidden = true;
    return;
  }
  const s = answer as { opening: string; closing: string; credits: string; debits: string; transfers: { id: string; ts: number; code: string; status: string; change: string; pending_change: string; balance: string }[] };
  out.textContent = '';
  showTokens($('st-opening'), s.opening);
  showTokens($('st-credits'), s.credits);
  showTokens($('st-debits'), s.debits);
  showTokens($('st-closing'), s.closing);
  const rows = s.transfers.map((t) => {
    const tr = document.createElement('tr');
    const ch = BigInt(t.change);
    const pending = t.status === 'pending' ? ` (보류 ${tokens(t.pending_change)})` : t.status === 'void' ? ' (보류 해제)' : '';
    tr.append(cell(when(t.ts)), cell(`${codeName(t.code)}${pending}`), money(ch > 0n ? ch : null, 'num'), money(ch < 0n ? -ch : null, 'num'), money(BigInt(t.balance), 'num balance'));
    return tr;
  });
  if (!rows.length) {
    const tr = document.createElement('tr');
    const td = cell('이 기간에는 거래가 없습니다.');
    td.colSpan = 5;
    tr.append(td);
    rows.push(tr);
  }
  $('st-rows').replaceChildren(...rows);
  // the tie-out: the sums and the running balance both land on the closing balance
  const last = s.transfers.length ? BigInt(s.transfers[s.transfers.length - 1]!.balance) : BigInt(s.opening);
  const ties = BigInt(s.opening) + BigInt(s.credits) - BigInt(s.debits) === BigInt(s.closing) && last === BigInt(s.closing);
  const tie = $('st-tie');
  tie.textContent = ties ? '합계 일치: 기초 잔액 + 입금 − 출금 = 기말 잔액' : '합계 불일치: 명세서의 합계가 기말 잔액과 맞지 않습니다';
  tie.className = ties ? 'ok' : 'bad';
  $('st-result').hidden = false;
}

async function downloadCsv() {
  let res: Response;
  try {
    res = await relay.response('GET', '/api/token/statement', { query: period('csv') });
  } catch (err) {
    $('st-message').textContent = problemText(err);
    return;
  }
  const url = URL.createObjectURL(await res.blob());
  const a = Object.assign(document.createElement('a'), { href: url, download: `statement-${$<HTMLSelectElement>('st-account').value}-${$<HTMLInputElement>('st-from').value}-${$<HTMLInputElement>('st-to').value}.csv` });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** Wires the statement form (this month by default). */
export function setupStatement() {
  setPeriod('month');
  for (const b of document.querySelectorAll<HTMLButtonElement>('[data-period]')) b.addEventListener('click', () => (setPeriod(b.dataset.period as 'month'), void show()));
  $('statement').addEventListener('submit', (e) => (e.preventDefault(), void show()));
  $('st-csv').addEventListener('click', () => void downloadCsv());
}

/** Adds the user's challenges (their collateral sub-accounts) to the account choice. */
export function addStatementAccounts(challenges: { id: string; name: string }[]) {
  const sel = $<HTMLSelectElement>('st-account');
  for (const c of challenges) {
    if (sel.querySelector(`option[value="${CSS.escape(c.id)}"]`)) continue;
    sel.append(Object.assign(document.createElement('option'), { value: c.id, textContent: `담보: ${c.name}` }));
  }
}
