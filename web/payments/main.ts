/**
 * The payments back office (operators; docs/payment.md): payout reviews held for a person with
 * approve and reject, a transfer's reversal with its reason, statements of the operator accounts,
 * the daily settlement against the bank with every difference, and the chain's alarms. Every call
 * is one of the relay's /api/token/ops/* routes, through the pages' client (web/common/api.ts).
 */
import { ApiError, problemText } from '../common/api.js';
import { mountSignIn, Session } from '../common/auth.js';
import { byId as $, checkForm, el, kst, kstDate, markRefusal, notice, units } from '../common/ui.js';

/** Token amounts are minor units with six decimals (src/payment/ledger.ts TOKEN_DECIMALS). */
const DECIMALS = 6;
const amount = (minor: unknown) => (typeof minor === 'string' && /^-?\d+$/.test(minor) ? units(minor, DECIMALS) : String(minor ?? '—'));
/** The operator accounts (src/payment/statements.ts OPERATOR_ACCOUNTS), by their Korean names. */
const ACCOUNTS: [string, string][] = [
  ['escrow', '에스크로 escrow'],
  ['operating', '운영 operating'],
  ['hedge_pool', '헤지 풀 hedge_pool'],
  ['bank', '은행 경계 bank'],
  ['collateral_pool', '담보 풀 collateral_pool'],
];
const REVIEW_STATE: Record<string, string> = { open: '처리 대기', approved: '승인됨', rejected: '반려됨', expired: '기한 지남' };
const REVIEW_REASON: Record<string, string> = {
  violation_last_7_days: '최근 7일 안의 위반',
  circuit_breaker: '하루 지급 한도 초과',
  large_amount: '큰 금액',
};

const session = new Session('payments:token');
const api = session.api;
const ready = () => void (document.body.dataset.ready = 'true');
const say = (text: string) => notice($('notice'), 'ok', text);
const fail = (err: unknown) => notice($('notice'), 'error', problemText(err));

interface Review {
  id: string;
  user: string;
  week: string;
  amount: string;
  reason: string;
  state: string;
  created_at: number;
  expires_at?: number;
}

// ---- payout reviews --------------------------------------------------------------------------------

async function loadReviews(): Promise<void> {
  const state = $<HTMLSelectElement>('reviews-state').value as 'open' | 'all';
  const { reviews } = await api.get('/api/token/ops/reviews', { query: { state } });
  const rows = (reviews as unknown as Review[]).map((r) => {
    const cell = el('td');
    if (r.state === 'open') {
      const reason = el('input', { 'aria-label': `${r.id} 처리 사유 · reason`, placeholder: '사유 · reason', maxlength: '500', 'data-review': r.id });
      const approve = el('button', { type: 'button', class: 'approve', 'data-act': 'approve' }, '승인 · approve');
      const reject = el('button', { type: 'button', class: 'reject', 'data-act': 'reject' }, '반려 · reject');
      approve.addEventListener('click', () => void decide(r.id, 'approve', reason));
      reject.addEventListener('click', () => void decide(r.id, 'reject', reason));
      cell.append(el('div', { class: 'decide' }, reason, approve, reject));
    } else cell.append('—');
    return el(
      'tr',
      { 'data-review': r.id, 'data-state': r.state },
      el('td', {}, el('code', {}, r.id)),
      el('td', {}, r.user),
      el('td', { class: 'num' }, amount(r.amount)),
      el('td', {}, REVIEW_REASON[r.reason] ?? r.reason),
      el('td', {}, REVIEW_STATE[r.state] ?? r.state),
      el('td', {}, r.expires_at ? kst(r.expires_at) : '—'),
      cell,
    );
  });
  $('reviews').replaceChildren(...(rows.length ? rows : [el('tr', {}, el('td', { colspan: '7', class: 'muted' }, '처리할 심사가 없습니다 · nothing to review'))]));
}

async function decide(id: string, action: 'approve' | 'reject', reasonInput: HTMLInputElement): Promise<void> {
  const reason = reasonInput.value.trim();
  if (!reason) {
    reasonInput.setAttribute('aria-invalid', 'true');
    reasonInput.focus();
    return notice($('notice'), 'error', '처리 사유를 입력하세요 · a reason is required');
  }
  reasonInput.removeAttribute('aria-invalid');
  try {
    await api.post('/api/token/ops/reviews/:id/:action', { params: { id, action }, body: { reason } });
    say(`${id}: ${action === 'approve' ? '승인했습니다 · approved' : '반려했습니다 · rejected'}`);
    await loadReviews();
  } catch (err) {
    fail(err);
  }
}

// ---- reversal ----------------------------------------------------------------------------------------

$('reverse').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const form = $<HTMLFormElement>('reverse');
  $('reverse-result').textContent = '';
  if (!checkForm(form, { id: '이체 ID', reason: '사유' })) return;
  const id = $<HTMLInputElement>('reverse-id').value.trim();
  const reason = $<HTMLInputElement>('reverse-reason').value.trim();
  api
    .post('/api/token/ops/transfers/:id/reverse', { params: { id }, body: { reason } })
    .then((r) => {
      const answer = r as { reversal?: { id?: string }; receipt_hash?: string };
      form.reset();
      say(`${id}: 되돌렸습니다 · reversed`);
      $('reverse-result').textContent = `되돌림 이체 reversal ${answer.reversal?.id ?? ''}${answer.receipt_hash ? ` · 영수증 receipt ${answer.receipt_hash.slice(0, 16)}…` : ''}`;
    })
    .catch((err: unknown) => {
      markRefusal(form, err);
      fail(err);
    });
});

// ---- operator account statements --------------------------------------------------------------------

const kstMidnight = (day: string) => `${day}T00:00:00+09:00`;
const nextDay = (day: string) => new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);

$('statement').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const form = $<HTMLFormElement>('statement');
  if (!checkForm(form, { from: '시작일', to: '종료일' })) return;
  const account = $<HTMLSelectElement>('st-account').value;
  const from = $<HTMLInputElement>('st-from').value;
  const to = $<HTMLInputElement>('st-to').value;
  api
    .get('/api/token/ops/statement', { query: { account, from: kstMidnight(from), to: kstMidnight(nextDay(to)) } })
    .then((s) => {
      notice($('notice'), 'ok', '');
      $('st-summary').textContent = `${account}: 기초 opening ${amount(s.opening)} · 입금 credits ${amount(s.credits)} · 출금 debits ${amount(s.debits)} · 기말 closing ${amount(s.closing)} (${from} – ${to}, KST)`;
      const rows = (s.transfers as Record<string, unknown>[]).map((t) =>
        el(
          'tr',
          {},
          el('td', {}, typeof t.ts === 'number' || typeof t.ts === 'string' ? kst(t.ts) : '—'),
          el('td', {}, el('code', {}, String(t.id ?? ''))),
          el('td', {}, String(t.code ?? '')),
          el('td', { class: 'num' }, amount(t.change)),
          el('td', { class: 'num' }, amount(t.balance)),
        ),
      );
      $('st-rows').replaceChildren(...(rows.length ? rows : [el('tr', {}, el('td', { colspan: '5', class: 'muted' }, '거래가 없습니다 · no transfers'))]));
    })
    .catch((err: unknown) => {
      markRefusal(form, err);
      fail(err);
    });
});

// ---- daily settlement ----------------------------------------------------------------------------------

$('settlement').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const form = $<HTMLFormElement>('settlement');
  if (!checkForm(form, { date: '날짜' })) return;
  const date = $<HTMLInputElement>('settle-date').value;
  api
    .get('/api/token/ops/settlement', { query: { date } })
    .then((r) => {
      notice($('notice'), 'ok', '');
      const summary = $('settle-summary');
      summary.replaceChildren(
        el('span', { class: r.balanced ? 'balanced' : 'unbalanced' }, r.balanced ? '일치 · balanced' : `불일치 · ${r.differences.length}건 차이`),
        ` — 허브 hub: 입금 ${r.hub.onramps.count}건 ${r.hub.onramps.sum_krw.toLocaleString('ko-KR')}원, 출금 ${r.hub.offramps.count}건 · 은행 bank: 입금 ${r.bank.onramps.count}건 ${r.bank.onramps.sum_krw.toLocaleString('ko-KR')}원, 출금 ${r.bank.offramps.count}건`,
      );
      const rows = r.differences.map((d) => el('tr', { 'data-kind': d.kind }, el('td', {}, d.kind), el('td', {}, el('code', {}, d.id)), el('td', {}, el('code', {}, JSON.stringify(d.hub ?? null))), el('td', {}, el('code', {}, JSON.stringify(d.bank ?? null)))));
      $('settle-rows').replaceChildren(...(rows.length ? rows : [el('tr', {}, el('td', { colspan: '4', class: 'muted' }, '차이가 없습니다 · no differences'))]));
    })
    .catch((err: unknown) => {
      if (err instanceof ApiError && err.code === 'banking_not_configured') $('settle-summary').textContent = problemText(err);
      fail(err);
    });
  void loadDifferences();
});

async function loadDifferences(): Promise<void> {
  try {
    const { differences } = await api.get('/api/token/ops/reconcile/differences');
    $('differences').replaceChildren(
      ...(differences.length
        ? (differences as Record<string, unknown>[]).map((d) => el('li', {}, `${typeof d.ts === 'number' ? kst(d.ts) : ''} · ${String(d.type ?? '')} · ${String(d.code ?? '')} · ${String(d.message ?? '')}`))
        : [el('li', { class: 'muted' }, '없습니다 · none')]),
    );
  } catch (err) {
    $('differences').replaceChildren(el('li', { class: 'muted' }, problemText(err)));
  }
}

// ---- chain alarms and payout warnings --------------------------------------------------------------

async function loadAlarms(): Promise<void> {
  // each list says its own refusal (a hub without a chain has no alarms route to ask)
  const failed = (err: unknown) => [{ failed: problemText(err) }] as Record<string, unknown>[];
  const [alarms, warnings] = await Promise.all([
    api.get('/api/token/ops/chain/alarms').then((a) => a.alarms as Record<string, unknown>[], failed),
    api.get('/api/token/ops/warnings').then((w) => w.warnings as Record<string, unknown>[], failed),
  ]);
  const line = (r: Record<string, unknown>, text: () => string) => (typeof r.failed === 'string' ? el('li', { class: 'muted' }, r.failed) : el('li', { 'data-code': String(r.code ?? '') }, text()));
  $('alarms').replaceChildren(
    ...(alarms.length
      ? alarms.map((a) => line(a, () => `${typeof a.ts === 'number' ? kst(a.ts) : ''} · ${String(a.code ?? '')} · ${String(a.source ?? '')} · ${String(a.message ?? '')}`))
      : [el('li', { class: 'muted' }, '경보가 없습니다 · no alarms')]),
  );
  $('warnings').replaceChildren(
    ...(warnings.length
      ? warnings.map((w) => line(w, () => `${typeof w.ts === 'number' ? kst(w.ts) : ''} · ${String(w.user ?? '')} · ${String(w.week ?? '')} · ${REVIEW_REASON[String(w.reason)] ?? String(w.reason ?? '')}`))
      : [el('li', { class: 'muted' }, '경고가 없습니다 · no warnings')]),
  );
}

// ---- the page ----------------------------------------------------------------------------------------

for (const [value, label] of ACCOUNTS) $('st-account').append(el('option', { value }, label));
const today = kstDate(Date.now());
$<HTMLInputElement>('st-from').value = `${today.slice(0, 8)}01`;
$<HTMLInputElement>('st-to').value = today;
$<HTMLInputElement>('settle-date').value = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
$('reviews-state').addEventListener('change', () => void loadReviews().catch(fail));
$('alarms-reload').addEventListener('click', () => void loadAlarms().catch(fail));

session.onChange((me) => {
  const operator = !!me?.roles.includes('operator');
  $('board').hidden = !operator;
  $('need').hidden = operator;
  document.body.dataset.auth = operator ? 'operator' : me ? 'other' : 'none';
  // ready (for the tests) once the first view is drawn: the reviews and alarms for an operator
  if (operator) void Promise.all([loadReviews(), loadAlarms(), loadDifferences()]).catch(fail).finally(ready);
  else ready();
});
mountSignIn($('signin'), session, 'operator');
void session.restore();
