import { z } from 'zod';
import { Reply, type Hub } from '../hub/declare.js';
import { ACCESS_KEY_RE, RECEIPT_RE, type IntakeService } from '../intake/index.js';
import { receiptMail } from './mails.js';

/**
 * The preserved mail route of the intake service: the holder of a receipt's access key has its
 * receipt mail sent again (any intake type: rental, conversation, consultation). The intake service
 * queues it in the outbox in one atomic write with the record's resend counter.
 */
export interface IntakeMailRoutesOptions {
  intake: IntakeService;
  /** Resends per receipt and hour (default 3). */
  perReceiptPerHour?: number;
}

/** k***@example.kr */
const maskEmail = (e: string) => e.replace(/^(.)[^@]*@/, (_m, c: string) => `${c}***@`);

export function registerIntakeMailRoutes(hub: Hub, opts: IntakeMailRoutesOptions): void {
  const { intake } = opts;
  const perReceipt = hub.rateLimit('intake-resend', {
    limit: opts.perReceiptPerHour ?? 3,
    windowMs: 3_600_000,
    key: (ctx) => (ctx.params as { ref?: string }).ref,
  });
  hub.route({
    method: 'POST',
    path: '/api/subscriptions/:ref/mail',
    params: z.object({ ref: z.string().regex(RECEIPT_RE, 'must be a receipt number such as R261122-000042') }),
    query: z.object({ key: z.string().regex(ACCESS_KEY_RE, 'must be the access key given at registration') }).strict(),
    guards: [perReceipt],
    response: { 202: z.object({ receiptNo: z.string(), to: z.string(), resend: z.number().int() }) },
    cacheControl: 'no-store',
    handler: async (ctx) => {
      const { record, resend } = await intake.resendMail(ctx.params.ref, ctx.query.key, receiptMail);
      return Reply.json({ receiptNo: record.receiptNo, to: maskEmail(record.email!), resend }, 202);
    },
  });
}
