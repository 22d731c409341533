import { AppError } from '../errors.js';
import type { Store } from '../store/port.js';
import { K, collateralAccount, parseTransfer, userAccount, type Transfer } from './ledger.js';
import { PK, challengeRecords } from './service.js';

/**
 * Account statements (docs/payment.md "Statements"): for one account and a period [from, to), the
 * opening balance (the fold of every earlier transfer), every transfer of the period with its
 * running balance, and the closing balance. Balances are posted balances (credits - debits); a hold
 * shows with its pending change and leaves the balance alone until the transfer that posts it.
 * Folded from the account's history in the log, so a statement ending now closes on the stored
 * balance, which the ledger check ties to the log.
 */

export const MAX_STATEMENT_ROWS = 5_000;
export const MAX_PERIOD_MS = 400 * 86_400_000;
/** Operator accounts (system ones) a statement is asked for by name. */
export const OPERATOR_ACCOUNTS = ['escrow', 'operating', 'hedge_pool', 'bank', 'collateral_pool'] as const;

export interface StatementRow {
  id: string;
  ts: number;
  code: string;
  status: string;
  debit: string;
  credit: string;
  amount: string;
  /** The signed change of the posted balance. */
  change: string;
  /** The signed change of the pending (held) amount. */
  pending_change: string;
  balance: string;
  pending_id?: string;
  reverses?: string;
}

export interface Statement {
  account: string;
  from: number;
  to: number;
  opening: string;
  closing: string;
  credits: string;
  debits: string;
  transfers: StatementRow[];
}

/** What a transfer does to one account's posted balance and pending amount. */
function effect(t: Transfer, account: string): { posted: bigint; pending: bigint } {
  const sign = t.credit === account ? 1n : t.debit === account ? -1n : 0n;
  if (t.status === 'posted' || t.status === 'post') return { posted: sign * t.amount, pending: t.status === 'post' ? -sign * t.amount : 0n };
  if (t.status === 'void') return { posted: 0n, pending: -sign * t.amount };
  return { posted: 0n, pending: sign * t.amount };
}

export function parsePeriod(from: string, to: string): { from: number; to: number } {
  const f = Date.parse(from);
  const t = Date.parse(to);
  if (!Number.isFinite(f) || !Number.isFinite(t)) throw new AppError('invalid', 'invalid_period', 'from and to are ISO 8601 dates or times (UTC)');
  if (t <= f) throw new AppError('invalid', 'invalid_period', 'the period ends before it starts', { from, to });
  if (t - f > MAX_PERIOD_MS) throw new AppError('invalid', 'period_too_long', 'a statement covers at most 400 days', { max_days: 400 });
  return { from: f, to: t };
}

/** The statement of one account over [from, to). */
export async function statement(store: Store, account: string, from: number, to: number, batch = 1_000): Promise<Statement> {
  const key = K.history(account);
  let opening = 0n;
  for (let offset = 0; ; offset += batch) {
    const ids = await store.indexRange(key, { max: from - 1, offset, limit: batch });
    const recs = await store.getMany(ids.map((e) => K.transfer(e.member)));
    for (const v of recs) {
      const t = parseTransfer(v);
      if (t) opening += effect(t, account).posted;
    }
    if (ids.length < batch) break;
  }
  const ids = await store.indexRange(key, { min: from, max: to - 1, limit: MAX_STATEMENT_ROWS + 1 });
  if (ids.length > MAX_STATEMENT_ROWS) {
    throw new AppError('invalid', 'period_too_long', `more than ${MAX_STATEMENT_ROWS} transfers in the period; ask for a shorter one`, { max_rows: MAX_STATEMENT_ROWS });
  }
  const recs = await store.getMany(ids.map((e) => K.transfer(e.member)));
  let balance = opening;
  let credits = 0n;
  let debits = 0n;
  const rows: StatementRow[] = [];
  for (const v of recs) {
    const t = parseTransfer(v);
    if (!t) continue;
    const fx = effect(t, account);
    balance += fx.posted;
    if (fx.posted > 0n) credits += fx.posted;
    else debits -= fx.posted;
    const row: StatementRow = {
      id: t.id, ts: t.ts, code: t.code, status: t.status, debit: t.debit, credit: t.credit, amount: t.amount.toString(),
      change: fx.posted.toString(), pending_change: fx.pending.toString(), balance: balance.toString(),
    };
    if (t.pending_id) row.pending_id = t.pending_id;
    const rev = (t.meta as { reverses?: unknown } | undefined)?.reverses;
    if (typeof rev === 'string') row.reverses = rev;
    rows.push(row);
  }
  return { account, from, to, opening: opening.toString(), closing: balance.toString(), credits: credits.toString(), debits: debits.toString(), transfers: rows };
}

const csvCell = (v: string | number | undefined) => {
  const s = v === undefined ? '' : String(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

/** The statement as CSV: an opening row, one row per transfer with its running balance, a closing row. */
export function statementCsv(s: Statement): string {
  const head = ['row', 'time', 'transfer', 'code', 'status', 'debit', 'credit', 'amount', 'change', 'pending_change', 'balance', 'pending_id', 'reverses'];
  const lines = [head.join(',')];
  lines.push(['opening', new Date(s.from).toISOString(), '', '', '', '', '', '', '', '', s.opening, '', ''].map(csvCell).join(','));
  for (const r of s.transfers) {
    lines.push(['transfer', new Date(r.ts).toISOString(), r.id, r.code, r.status, r.debit, r.credit, r.amount, r.change, r.pending_change, r.balance, r.pending_id, r.reverses].map(csvCell).join(','));
  }
  lines.push(['closing', new Date(s.to).toISOString(), '', '', '', '', '', '', '', '', s.closing, '', ''].map(csvCell).join(','));
  return `${lines.join('\r\n')}\r\n`;
}

/**
 * A user's account named in a statement request: `wallet`, `credit`, `collateral` (the older single
 * collateral account), or a challenge id (its collateral sub-account). Another user's challenge reads
 * as 404; a full account id of someone else or a system account is 403.
 */
export async function userStatementAccount(store: Store, user: string, name: string): Promise<string> {
  if (name === 'wallet' || name === 'credit' || name === 'collateral') return userAccount(user, name);
  if (name.startsWith('u:')) {
    const own = ['wallet', 'credit', 'collateral'].map((k) => userAccount(user, k as 'wallet'));
    if (own.includes(name)) return name;
    throw new AppError('forbidden', 'forbidden', 'a statement of another user\'s account is for operators only');
  }
  if ((OPERATOR_ACCOUNTS as readonly string[]).includes(name)) throw new AppError('forbidden', 'forbidden', `${name} is an operator account`);
  const id = name.startsWith('collateral_pool:') ? name.slice('collateral_pool:'.length) : name;
  const c = challengeRecords.decode(await store.get(PK.challenge(id)));
  if (!c || c.user !== user) throw new AppError('not_found', 'account_not_found', `no account ${name}`);
  return collateralAccount(id);
}

/** An account an operator names: any account the ledger knows. */
export async function knownAccount(store: Store, name: string): Promise<string> {
  if ((OPERATOR_ACCOUNTS as readonly string[]).includes(name) && name !== 'collateral_pool') return name;
  if ((await store.get(K.account(name))) === undefined) throw new AppError('not_found', 'account_not_found', `no account ${name}`);
  return name;
}
