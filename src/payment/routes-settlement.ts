import { z } from 'zod';
import { AppError } from '../errors.js';
import { route, type Hub } from '../hub/declare.js';
import type { Settlement } from './settlement.js';
import { TOKEN_API } from './schemas.js';

/**
 * The payment relay's daily settlement report (docs/payment.md "Daily settlement"), operators only:
 * the `bank` boundary account's payments of a UTC day against the bank's own list and totals.
 */

const difference = z.object({
  kind: z.enum(['missing_at_hub', 'missing_at_bank', 'amount_mismatch', 'status_mismatch']),
  payment: z.enum(['onramp', 'offramp']),
  id: z.string(),
  hub: z.unknown(),
  bank: z.unknown(),
});
const totals = z.object({ onramps: z.object({ count: z.number().int(), sum_krw: z.number() }).loose(), offramps: z.object({ count: z.number().int(), sum: z.string() }).loose() }).loose();

export function registerSettlementRoutes(hub: Hub, opts: { settlement?: Settlement }) {
  const settlement = route({
    method: 'GET',
    path: '/ops/settlement',
    auth: { roles: ['operator'] },
    query: z.object({ date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a UTC day YYYY-MM-DD') }).strict(),
    response: z.object({ date: z.string(), balanced: z.boolean(), hub: totals, bank: totals, differences: z.array(difference) }).loose(),
    summary: 'The day\'s settlement: the bank boundary account\'s payments of a UTC day (dated by the bank\'s clock) against the bank\'s own list and totals, every difference listed',
    handler: async (ctx) => {
      if (!opts.settlement) throw new AppError('unavailable', 'banking_not_configured', 'BANKING_URL is not configured');
      return opts.settlement.report(ctx.query.date);
    },
  });

  return hub.mount(TOKEN_API, {
    settlement,
  });
}
