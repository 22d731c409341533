import { z } from 'zod';
import { AppError } from '../errors.js';
import { Reply, type Hub } from '../hub/index.js';
import { ACCESS_KEY_RE, RECEIPT_RE, type IntakeService } from '../intake/service.js';
import { mailWrites } from '../mail/mailer.js';
import { receiptMail } from '../rental/mails.js';
import type { Store } from '../store/port.js';

/**
 * The preserved mail route of the intake service: the holder of a receipt's access key has its
 * receipt mail sent again (any intake type: rental, conversation, consultation). The mail is queued
 * in the outbox in one atomic write with the record's resend counter.
 */
export interface IntakeMailRoutesOptions {
  intake: IntakeService;
  /** The resend counter and the outbox mail are written together (one atomic store write). */
  store: Store;
  /** The mail's queue time. */
  now: () => number;
  /** Resends per receipt and hour (default 3). */
  perReceiptPerHour?: number;
}

const resendCounter = (id: string) => `intake:resend:${id}`;

/** k***@example.kr */
const maskEmail = (e: string) => e.replace(/^(.)[^@]*@/, (_m, c: string) => `${c}***@`);

export function registerIntakeMailRoutes(hub: Hub, opts: IntakeMailRoutesOptions): void {
  const { intake, store } = opts;
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
      const seen = await intake.track(ctx.params.ref, ctx.query.key); // 404 / 403 invalid_key
      const rec = await intake.require(String(seen.id));
      if (!rec.email) throw new AppError('conflict', 'no_email', 'this receipt has no e-mail address to send to');
      const counter = resendCounter(rec.id);
      const n = await store.update<number>([counter], ([cur]) => {
        const next = (typeof cur === 'number' ? cur : 0) + 1;
        return {
          writes: [{ op: 'set', key: counter, value: next }, ...mailWrites(`intake:${rec.id}:resend:${next}`, receiptMail(rec), opts.now())],
          result: next,
        };
      });
      return Reply.json({ receiptNo: rec.receiptNo, to: maskEmail(rec.email), resend: n }, 202);
    },
  });
}
