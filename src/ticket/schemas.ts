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
export const listId = z.string().regex(/^(main|cl_[A-Za-z0-9_-]{10})$/, 'must be a check-in list id (main, or cl_ and 10 characters)');
/** Optional on both check-in routes: the list (default: the show's default list) and entry or exit (default: entry). */
export const doorFields = { list_id: listId.optional(), type: z.enum(['entry', 'exit']).optional() };
export const checkInBody = z.object({ code: z.string().max(256), source: z.enum(['camera', 'manual']).default('manual'), ...scanFields, ...doorFields }).strict();
export const checkInByIdBody = z.object({ ...scanFields, ...doorFields }).strict().optional();
export const ticketKind = z.string().regex(/^[a-z0-9_-]{1,32}$/, 'must be 1 to 32 of a-z 0-9 _ -');
const seatText = z.string().trim().regex(/^[\p{L}\p{N}][\p{L}\p{N} ._-]{0,31}$/u, 'must be 1 to 32 letters, digits, space . _ -');
export const seatRange = z.strictObject({ from: seatText, to: seatText });
const instant = z.iso.datetime({ offset: true });
/** A new check-in list; a rule that contradicts itself is refused by the service (400 invalid_rule). */
export const newList = z.strictObject({
  name: label(100),
  kinds: z.array(ticketKind).min(1).max(20).optional(),
  seats: z.array(seatRange).min(1).max(50).optional(),
  allow_multiple_entries: z.boolean().optional(),
  allow_entry_after_exit: z.boolean().optional(),
  valid_from: instant.optional(),
  valid_until: instant.optional(),
  devices: z.array(z.string().regex(/^d_[0-9a-f]{12}$/, 'must be a device id (d_ and 12 hex digits)')).max(100).optional(),
  is_default: z.boolean().optional(),
});
export const checkInList = z.strictObject({
  id: z.string(),
  show_id: z.string(),
  name: z.string(),
  kinds: z.array(z.string()).nullable(),
  seats: z.array(z.strictObject({ from: z.string(), to: z.string() })).nullable(),
  allow_multiple_entries: z.boolean(),
  allow_entry_after_exit: z.boolean(),
  valid_from: z.string().nullable(),
  valid_until: z.string().nullable(),
  devices: z.array(z.string()),
  is_default: z.boolean(),
  created_at: z.string().nullable(),
});
export const revertBody = z.strictObject({
  reservation_id: z.string().regex(RESERVATION_ID_RE, 'must be a reservation id (r_ and 10 characters)'),
  scan_id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be a scan id'),
  reason: label(200),
});
const scanView = z.strictObject({
  id: z.string(),
  type: z.enum(['entry', 'exit']),
  list_id: z.string(),
  at: z.string(),
  scanner: z.string(),
  gate: z.string().nullable(),
  reverted: z.strictObject({ id: z.string(), at: z.string(), by: z.string(), reason: z.string() }).nullable(),
});

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
  /** The brief and the holder's name: the door may ask to see it. */
  ticket: brief.extend({ holder: nullable }),
  checkin: z.object({ at: z.string(), scanner: z.string(), gate: nullable, nonce: nullable, id: z.string(), type: z.enum(['entry', 'exit']), list_id: z.string() }),
  list: z.object({ id: z.string(), name: z.string() }),
});
export const reverted = z.strictObject({
  status: z.literal('reverted'),
  undo: z.strictObject({ id: z.string(), at: z.string(), by: z.string(), reason: z.string(), reverts: z.string() }),
  scan: scanView,
  ticket: brief.extend({ holder: nullable }),
});
export const doorCounts = z.strictObject({
  show_id: z.string(),
  default_list_id: z.string(),
  inside: z.number().int(),
  lists: z.array(z.strictObject({ id: z.string(), name: z.string(), inside: z.number().int() })),
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
    /** The check-in list the door scanned on (default: the show's default list). */
    list_id: listId.optional(),
  })
  .strict();
export const offlineBatch = z.object({ scans: z.array(offlineScan).min(1).max(MAX_OFFLINE_BATCH) }).strict();
const firstCheckin = z.object({ at: z.string(), scanner: z.string(), gate: nullable, offline: z.boolean() }).nullable();
export const conflictRecord = z.strictObject({
  at: z.string(),
  received_at: z.string(),
  reason: z.enum(['already_redeemed', 'canceled', 'product', 'invalid_time']),
  list_id: z.string().optional(),
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
