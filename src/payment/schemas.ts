import { z } from 'zod';
import { MAX_AMOUNT } from './ledger.js';
import { WEEK_RE } from './rules.js';

/** Inputs and answers of the payment relay's routes (docs/payment.md), as /openapi.json declares them. */

/** Where the payment relay's routes live: each route module declares its paths below it (hub.group). */
export const TOKEN_API = '/api/token';

export const units = z.union([z.string().regex(/^\d{1,31}$/, 'must be a positive integer (minor units)'), z.number().int().positive().max(Number.MAX_SAFE_INTEGER)]).transform((v, ctx) => {
  const b = BigInt(v);
  if (b <= 0n || b > MAX_AMOUNT) {
    ctx.addIssue({ code: 'custom', message: `must be a positive integer of at most ${MAX_AMOUNT}` });
    return z.NEVER;
  }
  return b;
});
export const id = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1 to 64 of A-Z a-z 0-9 _ . -');
export const week = z.string().regex(WEEK_RE, 'must be an ISO week YYYY-Www');
export const reason = z.string().trim().min(1).max(500);

// answers (docs/payment.md). Amounts are strings of minor units; records the relay stores as it
// received or computed them (a transfer, a receipt, a payout run) are described by their main fields.
export const record = (description: string) => z.object({}).loose().describe(description);
const pageInfo = z.object({ offset: z.number().int(), limit: z.number().int(), total: z.number().int() });
export const A = {
  challenges: z.object({ challenges: z.array(z.object({ challenge_id: z.string() }).loose()) }),
  wallet: z.object({ balance: z.string(), learning_credit: z.string(), collateral: z.string(), decimals: z.number().int(), history: z.array(record('a transfer')), page: pageInfo }).loose(),
  receipts: z.object({ receipts: z.array(z.object({ receipt_hash: z.string() }).loose()), page: pageInfo }),
  receipt: z.object({ proof: z.unknown() }).loose().describe('a chained receipt, its chain link and (when the chain answers) its inclusion proof'),
  ledgerCheck: z.object({
    ledger: z.object({ ok: z.boolean(), transfers: z.number().int(), accounts: z.number().int(), debits: z.string(), credits: z.string(), mismatches: z.array(z.unknown()) }).loose(),
    receipts: z.object({ ok: z.boolean(), count: z.number().int(), broken: z.string().optional() }),
  }),
  reviews: z.object({ reviews: z.array(record('a payout review')) }),
  warnings: z.object({ warnings: z.array(z.unknown()) }),
  event: z.object({ applied: z.boolean(), state: z.string(), outcome: z.string().optional() }),
  treeHead: z.object({ sth: z.object({ tree_size: z.number().int(), timestamp: z.number().int(), root: z.string(), signature: z.string() }), previous: z.unknown(), consistency: z.array(z.string()) }).loose(),
  effect: record('the effect of the request (the same answer again for a repeated Idempotency-Key)'),
  statement: z.object({
    account: z.string(), from: z.number().int(), to: z.number().int(), opening: z.string(), closing: z.string(), credits: z.string(), debits: z.string(),
    transfers: z.array(record('a transfer with its signed change and the running balance')),
  }).describe('an account statement (or text/csv with format=csv)'),
};
