import { AppError } from '../errors.js';
import type { Json } from '../store/port.js';
import { ledgerOp, transferKeys, type TransferInput } from './ledger.js';
import type { LedgerOp } from './ledger-batch.js';
import type { LedgerWriter } from './ledger-writer.js';
import { RK, receiptWrites } from './receipts.js';

/**
 * The ledger's own commands, the same in every process (ledger-writer.ts): `transfers`, a linked
 * group of transfers (all or none, TigerBeetle's `linked`) with an optional receipt appended to the
 * chain when the group is new (a replay of the same ids appends nothing).
 *
 * Arguments (JSON): `{transfers: [{id, debit, credit, amount: "<minor units>", code, pending?, meta?}],
 * receipt?: {kind, user, ref}}`; the result `{transfers: [ids], replayed, receipt_hash}`.
 */

export interface TransfersArgs {
  transfers: { id: string; debit: string; credit: string; amount: string; code: string; pending?: boolean; meta?: Json }[];
  receipt?: { kind: string; user: string | null; ref: string };
}

const MAX_GROUP = 64;

function parseArgs(args: Json): { moves: TransferInput[]; receipt?: TransfersArgs['receipt'] } {
  const a = args as unknown as TransfersArgs;
  if (!a || typeof a !== 'object' || !Array.isArray(a.transfers) || a.transfers.length === 0 || a.transfers.length > MAX_GROUP) {
    throw new AppError('invalid', 'invalid_transfers', `a group holds 1 to ${MAX_GROUP} transfers`);
  }
  const moves = a.transfers.map((t) => {
    if (!t || typeof t.amount !== 'string' || !/^\d{1,31}$/.test(t.amount)) throw new AppError('invalid', 'invalid_amount', 'an amount is a decimal string of minor units');
    const m: TransferInput = { id: String(t.id), debit: String(t.debit), credit: String(t.credit), amount: BigInt(t.amount), code: String(t.code) };
    if (t.pending) m.pending = true;
    if (t.meta !== undefined) m.meta = t.meta;
    return m;
  });
  return a.receipt ? { moves, receipt: a.receipt } : { moves };
}

export function transfersOp(args: Json, now: () => number = Date.now): LedgerOp<Json> {
  const { moves, receipt } = parseArgs(args);
  return ledgerOp<Json>(now, [...transferKeys(moves), ...(receipt ? [RK.head] : [])], (tx, get) => {
    const ids = moves.map((m) => tx.transfer(m).id);
    const replayed = tx.replayed.length === moves.length;
    if (!receipt || replayed) return { result: { transfers: ids, replayed, receipt_hash: null } };
    const amount = moves.reduce((s, m) => s + m.amount, 0n).toString();
    const r = receiptWrites(get(RK.head), { kind: receipt.kind, user: receipt.user, amount, transfers: ids, ref: receipt.ref, ts: now() });
    return { writes: r.writes, result: { transfers: ids, replayed, receipt_hash: r.hash } };
  });
}

/** The JSON arguments of a `transfers` command. */
export function transfersArgs(moves: TransferInput[], receipt?: TransfersArgs['receipt']): Json {
  const transfers = moves.map((m) => ({
    id: m.id, debit: m.debit, credit: m.credit, amount: m.amount.toString(), code: m.code,
    ...(m.pending ? { pending: true } : {}), ...(m.meta !== undefined ? { meta: m.meta } : {}),
  }));
  return (receipt ? { transfers, receipt } : { transfers }) as unknown as Json;
}

export function registerLedgerCommands(writer: LedgerWriter): void {
  writer.register('transfers', (args) => transfersOp(args));
}
