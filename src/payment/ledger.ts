import { AppError } from '../errors.js';
import type { Json, Store, Write } from '../store/port.js';
import { ledgerBatcher, type LedgerOp, type ValueView } from './ledger-batch.js';

/**
 * The token ledger, in TigerBeetle's model, kept on the Store (docs/payment.md "Ledger").
 *
 * - An account holds four bigint totals (debits/credits, posted/pending), stored as decimal strings.
 *   Every account except the boundary account is credit-normal and may not have its debits
 *   (posted + pending) exceed its posted credits: it never goes below zero.
 * - A transfer moves a positive integer amount of token minor units from a debit account to a
 *   credit account. It is immutable; its id is its idempotency key: the same id with the same
 *   fields returns the first result and changes nothing, the same id with other fields is 409.
 * - A pending transfer (two-phase) reserves the amount; it resolves at most once, by a NEW posting
 *   transfer (the whole amount) or a voiding one (TigerBeetle's post_pending_transfer /
 *   void_pending_transfer). No stored transfer is ever rewritten: which transfer resolved a hold is
 *   kept under its own key (`K.resolution`), and every balance is the fold of the log.
 * - Everything given to one LedgerTx lands in one `store.update`: linked transfers are all or
 *   nothing, together with whatever else the caller writes (receipts, idempotency records, outbox).
 *   Concurrent ledger steps share that update: they are batched (ledger-batch.ts), each applied
 *   over what the steps before it in the batch wrote, each failing alone.
 */

export const TOKEN_DECIMALS = 6;
export const UNIT = 10n ** BigInt(TOKEN_DECIMALS);
/** The largest single amount accepted (10^30 minor units): far beyond 2^53, bounded all the same. */
export const MAX_AMOUNT = 10n ** 30n;
export const BOUNDARY_ACCOUNT = 'bank';
/** System accounts (no user). */
export const SYSTEM_ACCOUNTS = ['bank', 'escrow', 'collateral_pool', 'hedge_pool', 'operating'] as const;

export const K = {
  account: (id: string) => `pay:acct:${id}`,
  transfer: (id: string) => `pay:xfer:${id}`,
  /** The id of the transfer that posted or voided a pending one (written once, beside the log). */
  resolution: (pendingId: string) => `pay:xres:${pendingId}`,
  /** Every transfer id, scored by its time: the log balances are recomputed from. */
  log: 'pay:log',
  /** Transfer ids touching an account, scored by time: its history. */
  history: (account: string) => `pay:hist:${account}`,
  accounts: 'pay:accounts',
};

export const userAccount = (user: string, kind: 'wallet' | 'credit' | 'collateral') => `u:${user}:${kind}`;
/**
 * A funded challenge's collateral: a sub-account of the collateral pool per challenge, so a
 * deduction lowers that challenge's own figure and a refund pays back exactly what it still holds.
 */
export const collateralAccount = (challengeId: string) => `collateral_pool:${challengeId}`;

export interface Account {
  id: string;
  debits_posted: bigint;
  credits_posted: bigint;
  debits_pending: bigint;
  credits_pending: bigint;
}

export type TransferStatus = 'posted' | 'pending' | 'pending_posted' | 'pending_voided' | 'post' | 'void';

export interface Transfer {
  id: string;
  debit: string;
  credit: string;
  amount: bigint;
  /** What the movement is ('challenge_fee', 'payout', 'onramp', ...). */
  code: string;
  /**
   * 'posted' (single phase), 'pending' (a hold; it stays so: its resolution is a new transfer), or a
   * resolution ('post' / 'void'). 'pending_posted' / 'pending_voided' are read from older stores only.
   */
  status: TransferStatus;
  pending_id?: string;
  ts: number;
  meta?: Json;
}

export interface TransferInput {
  id: string;
  debit: string;
  credit: string;
  amount: bigint;
  code: string;
  pending?: boolean;
  meta?: Json;
}

export interface ResolveInput {
  id: string;
  pending_id: string;
  action: 'post' | 'void';
}

export const isBoundary = (account: string) => account === BOUNDARY_ACCOUNT;

export function balanceOf(a: Account): bigint {
  return a.credits_posted - a.debits_posted;
}
/** What can still be spent: posted balance less pending debits. */
export function availableOf(a: Account): bigint {
  return a.credits_posted - a.debits_posted - a.debits_pending;
}

const big = (v: Json | undefined): bigint => (typeof v === 'string' && /^-?\d+$/.test(v) ? BigInt(v) : 0n);

export function parseAccount(id: string, v: Json | undefined): Account {
  const o = v && typeof v === 'object' && !Array.isArray(v) ? v : {};
  return {
    id,
    debits_posted: big(o.debits_posted),
    credits_posted: big(o.credits_posted),
    debits_pending: big(o.debits_pending),
    credits_pending: big(o.credits_pending),
  };
}

/**
 * Accounts as an update wrote them, by the very object written: the next step of a batch reads that
 * object back and takes a copy of the totals instead of parsing four decimal strings again.
 */
const written = new WeakMap<object, Account>();

export function accountJson(a: Account): Json {
  const o = {
    id: a.id,
    debits_posted: a.debits_posted.toString(),
    credits_posted: a.credits_posted.toString(),
    debits_pending: a.debits_pending.toString(),
    credits_pending: a.credits_pending.toString(),
  };
  written.set(o, { ...a });
  return o;
}

/** An account read in an update: a copy of what a step before it wrote, else parsed. */
function accountFrom(id: string, v: Json | undefined): Account {
  const hit = v && typeof v === 'object' ? written.get(v) : undefined;
  return hit && hit.id === id ? { ...hit } : parseAccount(id, v);
}

export function transferJson(t: Transfer): { [key: string]: Json } {
  const o: { [key: string]: Json } = {
    id: t.id,
    debit: t.debit,
    credit: t.credit,
    amount: t.amount.toString(),
    code: t.code,
    status: t.status,
    ts: t.ts,
  };
  if (t.pending_id !== undefined) o.pending_id = t.pending_id;
  if (t.meta !== undefined) o.meta = t.meta;
  return o;
}

export function parseTransfer(v: Json | undefined): Transfer | undefined {
  if (!v || typeof v !== 'object' || Array.isArray(v) || typeof v.id !== 'string') return undefined;
  const t: Transfer = {
    id: v.id,
    debit: String(v.debit),
    credit: String(v.credit),
    amount: big(v.amount),
    code: String(v.code),
    status: v.status as TransferStatus,
    ts: Number(v.ts),
  };
  if (typeof v.pending_id === 'string') t.pending_id = v.pending_id;
  if (v.meta !== undefined) t.meta = v.meta;
  return t;
}

const ACCOUNT_RE = /^[A-Za-z0-9_:.-]{1,160}$/;
const ID_RE = /^[A-Za-z0-9_:.-]{1,200}$/;

export function checkAmount(amount: bigint): void {
  if (amount <= 0n || amount > MAX_AMOUNT) {
    throw new AppError('invalid', 'invalid_amount', `an amount must be a positive integer of at most ${MAX_AMOUNT} minor units`);
  }
}

/** Keys a resolution reads besides the pending transfer's two accounts. */
export function resolveKeys(pendingId: string, id: string): string[] {
  return [K.transfer(pendingId), K.transfer(id), K.resolution(pendingId)];
}

/** Keys a set of transfers reads (accounts and the transfers themselves). */
export function transferKeys(transfers: TransferInput[]): string[] {
  const keys = new Set<string>();
  for (const t of transfers) {
    keys.add(K.transfer(t.id));
    keys.add(K.account(t.debit));
    keys.add(K.account(t.credit));
  }
  return [...keys];
}

function sameFields(a: Transfer, b: TransferInput | ResolveInput): boolean {
  if ('pending_id' in b && 'action' in b) return a.pending_id === b.pending_id && a.status === b.action;
  const i = b as TransferInput;
  return (
    a.debit === i.debit &&
    a.credit === i.credit &&
    a.amount === i.amount &&
    a.code === i.code &&
    (a.status === 'pending' || a.status === 'pending_posted' || a.status === 'pending_voided') === Boolean(i.pending)
  );
}

/**
 * One atomic ledger step. Built over the values an update read (by key); transfer() and resolve()
 * check and apply in memory, throwing an AppError on any refusal (nothing is written then);
 * writes() gives what to put into the update's plan.
 */
export class LedgerTx {
  private readonly accounts = new Map<string, Account>();
  private readonly transfers = new Map<string, Transfer>();
  private readonly dirtyAccounts = new Set<string>();
  private readonly newTransfers: Transfer[] = [];
  /** Resolutions made by this update (pending id -> the resolving transfer). */
  private readonly resolutions = new Map<string, { id: string; action: 'post' | 'void' }>();
  /** Transfers given again with the same fields (replays). */
  readonly replayed: string[] = [];

  constructor(
    private readonly values: ValueView,
    private readonly now: number,
  ) {}

  account(id: string): Account {
    let a = this.accounts.get(id);
    if (!a) {
      const key = K.account(id);
      if (!this.values.has(key)) throw new Error(`ledger: account ${id} was not read by this update`);
      a = accountFrom(id, this.values.get(key));
      this.accounts.set(id, a);
    }
    return a;
  }

  existing(id: string): Transfer | undefined {
    const got = this.transfers.get(id);
    if (got) return got;
    const key = K.transfer(id);
    if (!this.values.has(key)) throw new Error(`ledger: transfer ${id} was not read by this update`);
    const t = parseTransfer(this.values.get(key));
    if (t) this.transfers.set(id, t);
    return t;
  }

  /**
   * Which transfer resolved a hold, if any: this update's own, the stored resolution key, or (in
   * stores written before holds stayed unchanged) the hold's own old status.
   */
  resolvedBy(p: Transfer): { id: string; action: 'post' | 'void' } | undefined {
    const mine = this.resolutions.get(p.id);
    if (mine) return mine;
    const key = K.resolution(p.id);
    if (!this.values.has(key)) throw new Error(`ledger: resolution of ${p.id} was not read by this update`);
    const v = this.values.get(key);
    if (v && typeof v === 'object' && !Array.isArray(v) && typeof v.id === 'string') return { id: v.id, action: v.action === 'post' ? 'post' : 'void' };
    if (p.status === 'pending_posted') return { id: '?', action: 'post' };
    if (p.status === 'pending_voided') return { id: '?', action: 'void' };
    return undefined;
  }

  /** Applies one transfer; returns it (the first one when the id was already used with the same fields). */
  transfer(input: TransferInput): Transfer {
    if (!ID_RE.test(input.id)) throw new AppError('invalid', 'invalid_transfer_id', 'a transfer id is 1 to 200 of A-Z a-z 0-9 _ : . -');
    if (!ACCOUNT_RE.test(input.debit) || !ACCOUNT_RE.test(input.credit)) throw new AppError('invalid', 'invalid_account', 'bad account id');
    if (input.debit === input.credit) throw new AppError('invalid', 'same_account', 'debit and credit accounts must differ');
    checkAmount(input.amount);
    const prior = this.existing(input.id);
    if (prior) {
      if (!sameFields(prior, input)) throw new AppError('conflict', 'transfer_id_conflict', `transfer ${input.id} exists with other fields`);
      this.replayed.push(input.id);
      return prior;
    }
    const debit = this.account(input.debit);
    const credit = this.account(input.credit);
    if (!isBoundary(debit.id) && availableOf(debit) < input.amount) {
      throw new AppError('conflict', 'insufficient_balance', `account ${debit.id} lacks ${input.amount - availableOf(debit)} minor units`, {
        account: debit.id,
        shortfall: (input.amount - availableOf(debit)).toString(),
      });
    }
    if (input.pending) {
      debit.debits_pending += input.amount;
      credit.credits_pending += input.amount;
    } else {
      debit.debits_posted += input.amount;
      credit.credits_posted += input.amount;
    }
    const t: Transfer = {
      id: input.id,
      debit: debit.id,
      credit: credit.id,
      amount: input.amount,
      code: input.code,
      status: input.pending ? 'pending' : 'posted',
      ts: this.now,
    };
    if (input.meta !== undefined) t.meta = input.meta;
    this.dirtyAccounts.add(debit.id).add(credit.id);
    this.transfers.set(t.id, t);
    this.newTransfers.push(t);
    return t;
  }

  /** Posts or voids a pending transfer, at most once. The accounts of the pending transfer must have been read. */
  resolve(input: ResolveInput): Transfer {
    if (!ID_RE.test(input.id)) throw new AppError('invalid', 'invalid_transfer_id', 'bad transfer id');
    const prior = this.existing(input.id);
    if (prior) {
      if (!sameFields(prior, input)) throw new AppError('conflict', 'transfer_id_conflict', `transfer ${input.id} exists with other fields`);
      this.replayed.push(input.id);
      return prior;
    }
    const p = this.existing(input.pending_id);
    if (!p || (p.status !== 'pending' && p.status !== 'pending_posted' && p.status !== 'pending_voided')) {
      throw new AppError('not_found', 'pending_not_found', `no pending transfer ${input.pending_id}`);
    }
    const by = this.resolvedBy(p);
    if (by) {
      const what = by.action === 'post' ? 'posted' : 'voided';
      throw new AppError('conflict', 'pending_resolved', `pending transfer ${p.id} is already ${what}`, { resolved_by: by.id });
    }
    const debit = this.account(p.debit);
    const credit = this.account(p.credit);
    debit.debits_pending -= p.amount;
    credit.credits_pending -= p.amount;
    if (input.action === 'post') {
      debit.debits_posted += p.amount;
      credit.credits_posted += p.amount;
    }
    this.resolutions.set(p.id, { id: input.id, action: input.action });
    const t: Transfer = {
      id: input.id,
      debit: p.debit,
      credit: p.credit,
      amount: p.amount,
      code: p.code,
      status: input.action,
      pending_id: p.id,
      ts: this.now,
    };
    this.dirtyAccounts.add(debit.id).add(credit.id);
    this.transfers.set(t.id, t);
    this.newTransfers.push(t);
    return t;
  }

  get changed(): boolean {
    return this.newTransfers.length > 0;
  }

  writes(): Write[] {
    const out: Write[] = [];
    for (const id of this.dirtyAccounts) {
      const a = this.accounts.get(id)!;
      out.push({ op: 'set', key: K.account(id), value: accountJson(a) });
      if (this.values.get(K.account(id)) === undefined) out.push({ op: 'index', key: K.accounts, member: id, score: 0 });
    }
    for (const [pending, r] of this.resolutions) out.push({ op: 'set', key: K.resolution(pending), value: { id: r.id, action: r.action } });
    for (const t of this.newTransfers) {
      out.push({ op: 'set', key: K.transfer(t.id), value: transferJson(t) });
      out.push({ op: 'index', key: K.log, member: t.id, score: t.ts });
      // a resolution is history of the hold it resolves; the hold itself shows in both accounts' history
      out.push({ op: 'index', key: K.history(t.debit), member: t.id, score: t.ts });
      out.push({ op: 'index', key: K.history(t.credit), member: t.id, score: t.ts });
    }
    return out;
  }
}

/** The ledger step `fn` over `keys` as an op of a batch (see ledger-batch.ts). */
export function ledgerOp<R>(
  now: () => number,
  keys: string[],
  fn: (tx: LedgerTx, get: (key: string) => Json | undefined) => { writes?: Write[]; result: R },
): LedgerOp<R> {
  return {
    keys: [...new Set(keys)],
    apply: (view) => {
      const tx = new LedgerTx(view, now());
      const r = fn(tx, (k) => {
        if (!view.has(k)) throw new Error(`ledger update: key ${k} was not read`);
        return view.get(k);
      });
      const own = r.writes ?? [];
      const writes = tx.writes();
      for (const w of own) writes.push(w);
      return { writes, result: r.result };
    },
  };
}

/**
 * Reads `keys`, runs `fn` over a LedgerTx and the raw values, writes the ledger's writes plus `fn`'s
 * own: atomically, in the batch of the store's ledger (one `store.update` for every step asked for
 * meanwhile; `fn` sees what the steps before it in the batch wrote). `fn` must be free of side
 * effects: it may run more than once.
 */
export function ledgerUpdate<R>(
  store: Store,
  now: () => number,
  keys: string[],
  fn: (tx: LedgerTx, get: (key: string) => Json | undefined) => { writes?: Write[]; result: R },
): Promise<R> {
  return ledgerBatcher(store).run(ledgerOp(now, keys, fn));
}

export async function readAccount(store: Store, id: string): Promise<Account> {
  return parseAccount(id, await store.get(K.account(id)));
}
