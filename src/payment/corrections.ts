import { AppError } from '../errors.js';
import type { Json, Store, Write } from '../store/port.js';
import { Idempotency as Idem } from '../idempotency.js';
import { K, ledgerUpdate, parseTransfer, transferJson } from './ledger.js';
import { RK, receiptWrites } from './receipts.js';
import { auditWrite, type Effect, type PaymentService } from './service.js';

/**
 * Corrections without rewriting (docs/payment.md "Corrections"): an operator reverses a posted payout
 * (or a posted payout hold's posting) or an on-ramp credit by a NEW transfer, `reversal:{original}`,
 * from the original's credit account back to its debit account, linked to the original, with the
 * reason and the operator's identity. Once per transfer (the id is the lock); a reversal, a hold, any
 * other kind of transfer or an unknown id is refused with nothing moved.
 */

/** Transfer codes an operator may reverse. */
export const REVERSIBLE = ['payout', 'payout_platform', 'onramp'] as const;

export const reversalId = (original: string) => `reversal:${original}`;

const userOf = (account: string) => /^u:(.+):(?:wallet|credit|collateral)$/.exec(account)?.[1];

export class Corrections {
  constructor(
    private readonly svc: PaymentService,
    private readonly store: Store,
  ) {}

  /** `operator` is the operator's account id (kept in the reversal's meta and the audit entry). */
  async reverse(originalId: string, operator: string, reason: string, e: Effect = {}): Promise<Json> {
    const store = this.store;
    const orig = parseTransfer(await store.get(K.transfer(originalId)));
    if (!orig) throw new AppError('not_found', 'transfer_not_found', `no transfer ${originalId}`);
    const id = reversalId(originalId);
    const now = this.svc.now();
    const keys = [K.transfer(originalId), K.transfer(id), K.account(orig.debit), K.account(orig.credit), RK.head, ...(e.ticket ? [e.ticket.storeKey] : [])];
    return ledgerUpdate(store, () => now, keys, (tx, get) => {
      const replay = e.ticket && Idem.done(get(e.ticket.storeKey));
      if (replay) return { result: replay.body };
      if (orig.code === 'reversal') throw new AppError('conflict', 'reversal_of_reversal', `transfer ${originalId} is itself a reversal; post a new transfer instead`);
      if (orig.status === 'pending' || orig.status === 'pending_posted' || orig.status === 'pending_voided') {
        throw new AppError('conflict', 'transfer_pending', `transfer ${originalId} is a hold; approve or reject its review instead`);
      }
      if (orig.status === 'void') throw new AppError('conflict', 'not_reversible', `transfer ${originalId} voided a hold and moved nothing`);
      if (!(REVERSIBLE as readonly string[]).includes(orig.code)) {
        throw new AppError('conflict', 'not_reversible', `a ${orig.code} transfer is not reversed by an operator`, { reversible: [...REVERSIBLE] });
      }
      const prior = tx.existing(id);
      if (prior) throw new AppError('conflict', 'already_reversed', `transfer ${originalId} was already reversed`, { reversal: transferJson(prior) });
      const meta = { reverses: originalId, reason, by: operator };
      const t = tx.transfer({ id, debit: orig.credit, credit: orig.debit, amount: orig.amount, code: 'reversal', meta });
      const user = userOf(orig.credit) ?? userOf(orig.debit) ?? null;
      const r = receiptWrites(get(RK.head), { kind: 'reversal', user, amount: orig.amount.toString(), transfers: [id], ref: originalId, ts: now });
      const body = { reversal: transferJson(t), original: originalId, receipt_hash: r.hash };
      const writes: Write[] = [...r.writes, auditWrite({ action: 'reverse', transfer: originalId, reversal: id, amount: orig.amount.toString(), by: operator, reason, ts: now })];
      if (e.ticket) writes.push(...this.svc.finishWrites(e, { status: 200, body }));
      return { writes, result: body as Json };
    });
  }
}
