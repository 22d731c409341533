import type { Store } from '../store/port.js';
import { checkLedger, type CheckReport } from './check.js';
import { verifyReceiptChain } from './receipts.js';
import { knownAccount, statement, userStatementAccount, type Statement } from './statements.js';

/**
 * The relay's books as the routes read them: statements of an account over a period and the
 * operator's check of the ledger and the receipt chain. Built over the store by relay.ts; the
 * routes get these reads, never the store.
 */
export class PaymentBooks {
  constructor(private readonly store: Store) {}

  /** The statement of `account` over [from, to) (statements.ts). */
  statement(account: string, from: number, to: number): Promise<Statement> {
    return statement(this.store, account, from, to);
  }

  /** The ledger account of one of `user`'s accounts (wallet, credit, collateral or a challenge id of theirs). */
  userStatementAccount(user: string, name: string): Promise<string> {
    return userStatementAccount(this.store, user, name);
  }

  /** Any known ledger account (an operator's statement). */
  knownAccount(name: string): Promise<string> {
    return knownAccount(this.store, name);
  }

  /** The ledger's invariants and the receipt chain, checked from the store (GET /ops/ledger/check). */
  async check(): Promise<{ ledger: CheckReport; receipts: Awaited<ReturnType<typeof verifyReceiptChain>> }> {
    return { ledger: await checkLedger(this.store), receipts: await verifyReceiptChain(this.store) };
  }
}
