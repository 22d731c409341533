import type { Json, Store } from '../store/port.js';
import { K, accountJson, availableOf, isBoundary, parseAccount, parseTransfer, type Account, type Transfer } from './ledger.js';

/** The ledger check (the ops route and the operator command): balances recomputed from the transfer log. */

export interface CheckReport {
  ok: boolean;
  transfers: number;
  accounts: number;
  /** Sum of all debits and of all credits (posted), which must be equal. */
  debits: string;
  credits: string;
  /** Accounts whose stored totals differ from the log, or (non-boundary) below zero. */
  mismatches: { account: string; stored: Json; recomputed: Json }[];
  negative: string[];
}

/**
 * One transfer's effect on its two accounts: the fold the stored totals must equal. A hold adds to
 * the pending totals (for ever: it is never rewritten); its posting or voiding transfer takes the
 * amount off them again, and a posting adds it to the posted totals.
 */
export function foldTransfer(t: Transfer, d: Account, c: Account): void {
  if (t.status === 'posted' || t.status === 'post') {
    d.debits_posted += t.amount;
    c.credits_posted += t.amount;
  }
  if (t.status === 'pending' || t.status === 'pending_posted' || t.status === 'pending_voided') {
    d.debits_pending += t.amount;
    c.credits_pending += t.amount;
  } else if (t.status === 'post' || t.status === 'void') {
    d.debits_pending -= t.amount;
    c.credits_pending -= t.amount;
  }
}

/** Recomputes every account's totals from the transfer log and compares them with the stored ones. */
export async function checkLedger(store: Store, batch = 500): Promise<CheckReport> {
  const totals = new Map<string, Account>();
  const get = (id: string) => {
    let a = totals.get(id);
    if (!a) totals.set(id, (a = parseAccount(id, undefined)));
    return a;
  };
  let n = 0;
  for (let offset = 0; ; offset += batch) {
    const ids = await store.indexRange(K.log, { offset, limit: batch });
    if (ids.length === 0) break;
    const recs = await store.getMany(ids.map((e) => K.transfer(e.member)));
    for (const v of recs) {
      const t = parseTransfer(v);
      if (!t) continue;
      n++;
      const d = get(t.debit);
      const c = get(t.credit);
      foldTransfer(t, d, c);
    }
    if (ids.length < batch) break;
  }
  const accountIds = (await store.indexRange(K.accounts)).map((e) => e.member);
  for (const id of accountIds) get(id);
  const stored = await store.getMany([...totals.keys()].map((id) => K.account(id)));
  const report: CheckReport = { ok: true, transfers: n, accounts: totals.size, debits: '0', credits: '0', mismatches: [], negative: [] };
  let debits = 0n;
  let credits = 0n;
  [...totals.values()].forEach((re, i) => {
    const st = parseAccount(re.id, stored[i]);
    debits += re.debits_posted;
    credits += re.credits_posted;
    if (
      st.debits_posted !== re.debits_posted ||
      st.credits_posted !== re.credits_posted ||
      st.debits_pending !== re.debits_pending ||
      st.credits_pending !== re.credits_pending
    ) {
      report.mismatches.push({ account: re.id, stored: accountJson(st), recomputed: accountJson(re) });
    }
    if (!isBoundary(re.id) && availableOf(re) < 0n) report.negative.push(re.id);
  });
  report.debits = debits.toString();
  report.credits = credits.toString();
  report.ok = report.mismatches.length === 0 && report.negative.length === 0 && debits === credits;
  return report;
}
