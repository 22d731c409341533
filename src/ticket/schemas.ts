import { z } from 'zod';
import { CODE_ALPHABET, parseCode } from './code.js';
import { RESERVATION_ID_RE, SHOW_ID_RE } from './service.js';
import { label } from '../text.js';
import { qInt } from '../hub/declare.js';

/** The request and answer schemas of the ticket routes (src/ticket/routes.ts; docs/ticket.md). */

export const codeMessage = `must be TK- followed by 8 characters of ${CODE_ALPHABET}`;
/** A ticket code as typed or scanned; normalised to "TK-XXXXXXXX" (see parseCode). */
export const ticketCode = z
  .string()
  .max(64)
  .transform((s, ctx) => {
    const code = parseCode(s);
    if (!code) {
      ctx.addIssue({ code: 'custom', message: codeMessage });
      return z.NEVER;
    }
    return code;
  });
export const reservationId = z.string().regex(RESERVATION_ID_RE, 'must be a reservation id (r_ and 10 characters)');
export const showId = z.string().regex(SHOW_ID_RE, 'must be a show id (s_ and 10 characters)');
export const nonce = z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'must be 1 to 64 of A-Z a-z 0-9 _ . : -');

/** What a scanner may say about itself; every field optional. */
export const scanFields = {
  nonce: nonce.optional(),
  scanner: label(64).optional(),
  gate: label(64).optional(),
};
export const checkInBody = z.object({ code: z.string().max(256), source: z.enum(['camera', 'manual']).default('manual'), ...scanFields }).strict();
export const checkInByIdBody = z.object(scanFields).strict().optional();

// answers (docs/ticket.md)
export const nullable = z.string().nullable();
export const status = z.enum(['entry_allowed', 'checked_in', 'cancelled']);
export const source = z.enum(['camera', 'manual', 'api']);
export const show = z.object({ id: z.string(), name: z.string(), venue: z.string(), date: z.string(), created_at: z.string() }).loose();
export const brief = z.object({ reservation_id: z.string(), code: z.string(), show_id: z.string(), show_name: z.string(), venue: z.string(), date: z.string(), seat: z.string(), status });
export const ticketView = z.object({
  reservation_id: z.string(),
  code: z.string(),
  show_id: z.string(),
  show_name: z.string(),
  venue: z.string(),
  date: z.string(),
  seat: z.string(),
  amount_paid: z.number(),
  holder: nullable,
  status,
  checked_in_at: nullable,
  checked_in_by: z.object({ scanner: z.string(), gate: nullable }).nullable(),
  cancelled_at: nullable,
  qr_code: z.string(),
  qr_image: z.string(),
  bingo_cards: z.array(z.object({}).loose()),
  page_url: z.string(),
});
export const checkedIn = z.object({
  status: z.literal('ok'),
  replayed: z.boolean(),
  ticket: brief,
  checkin: z.object({ at: z.string(), scanner: z.string(), gate: nullable, nonce: nullable }),
});
export const cancelled = brief.extend({ cancelled_at: nullable, cancel_reason: nullable });
export const checkInEvent = brief.omit({ status: true }).extend({ type: z.literal('checkin'), at: z.string(), scanner: z.string(), gate: nullable, source }).loose();
export const pageInfo = z.strictObject({ limit: z.number().int(), offset: z.number().int(), total: z.number().int() });
export const counters = z.strictObject({ tickets: z.number().int(), checked_in: z.number().int(), cancelled: z.number().int() });
export const showSummary = show.extend({ counts: counters });
export const bookingRow = z.strictObject({
  reservation_id: z.string(),
  code: z.string(),
  seat: z.string(),
  holder: nullable,
  amount_paid: z.number(),
  status,
  created_at: z.string(),
  checked_in_at: nullable,
  checked_in_by: z.object({ scanner: z.string(), gate: nullable }).nullable(),
  cancelled_at: nullable,
  cancel_reason: nullable,
  page_url: z.string(),
});
/** Paged lists: at most 100 a page, offsets up to 100 000. */
export const pageQuery = { limit: qInt({ min: 1, max: 100 }).default(50), offset: qInt({ min: 0, max: 100_000 }).default(0) };
export const auditEntry = z
  .object({ at: z.string(), result: z.string(), code: nullable, reservation_id: nullable, scanner: z.string(), gate: nullable, source, nonce: nullable, via: z.enum(['code', 'id']), replayed: z.boolean() })
  .loose();


// ---- offline mode (docs/ticket.md, "Offline mode") ----------------------------------------------
/** At most this many offline scans in one upload; a device with more sends them in turns. */
export const MAX_OFFLINE_BATCH = 200;
export const offlineScan = z
  .object({
    id: nonce,
    code: ticketCode,
    scanned_at: z.iso.datetime({ offset: true }),
    source: z.enum(['camera', 'manual']).default('manual'),
  })
  .strict();
export const offlineBatch = z.object({ scans: z.array(offlineScan).min(1).max(MAX_OFFLINE_BATCH) }).strict();
const firstCheckin = z.object({ at: z.string(), scanner: z.string(), gate: nullable, offline: z.boolean() }).nullable();
export const conflictRecord = z.strictObject({
  at: z.string(),
  received_at: z.string(),
  reason: z.enum(['already_redeemed', 'canceled']),
  code: z.string(),
  reservation_id: z.string(),
  show_id: z.string(),
  seat: z.string(),
  scanner: z.string(),
  gate: nullable,
  offline_id: z.string(),
  client: nullable,
  first_checkin: firstCheckin,
  cancelled_at: nullable,
});
export const offlineResults = z.strictObject({
  results: z.array(
    z.strictObject({
      id: z.string(),
      result: z.enum(['ok', 'conflict', 'invalid']),
      replayed: z.boolean(),
      ticket: brief.optional(),
      checkin: z.strictObject({ at: z.string(), scanner: z.string(), gate: nullable }).optional(),
      conflict: conflictRecord.optional(),
    }),
  ),
});
export const signedList = z.strictObject({
  alg: z.literal('Ed25519'),
  key_id: z.string(),
  public_key: z.string(),
  payload: z.string(),
  signature: z.string(),
  version: z.string(),
});
