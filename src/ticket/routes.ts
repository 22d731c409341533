import { z } from 'zod';
import { route, validate, Reply, qInt, qText, type Hub, type RequestContext } from '../hub/declare.js';
import { THEME_IDS } from './bingo.js';
import { parseCode } from './code.js';
import { CHECKIN_TOPIC, type CheckInInput, type TicketService } from './service.js';
import { AppError } from '../errors.js';
import { label } from '../text.js';
import {
  auditEntry,
  bookingRow,
  brief,
  cancelled,
  checkedIn,
  checkInBody,
  checkInByIdBody,
  checkInEvent,
  checkInList,
  doorCounts,
  listId,
  newList,
  revertBody,
  reverted,
  ticketKind,
  conflictRecord,
  offlineBatch,
  offlineResults,
  pageInfo,
  pageQuery,
  reservationId,
  show,
  showId,
  showSummary,
  signedList,
  ticketCode,
  ticketView,
} from './schemas.js';

export { ticketCode } from './schemas.js';

export interface Limit {
  limit: number;
  windowMs: number;
}

/** Per-client limits (docs/ticket.md). Counted in the Store, so they hold across processes. */
export interface TicketLimits {
  /** Typed codes (POST /api/checkin whose source is not "camera"): the guessing path. */
  manual: Limit;
  /** Every check-in attempt of a client, scanned or typed, on both check-in routes. */
  checkin: Limit;
  /** Ticket lookups (GET /api/mticket/:qrCode and its QR image). */
  lookup: Limit;
  /** Offline list downloads and offline scan uploads of a device. */
  offline: Limit;
}

export const DEFAULT_TICKET_LIMITS: TicketLimits = {
  manual: { limit: 20, windowMs: 60_000 },
  checkin: { limit: 600, windowMs: 60_000 },
  lookup: { limit: 120, windowMs: 60_000 },
  offline: { limit: 60, windowMs: 60_000 },
};

export interface TicketRoutesOptions {
  service: TicketService;
  limits?: Partial<TicketLimits>;
}

/**
 * Who a check-in counts against: the scanner device (or staff account) from its token, so the
 * limits of one door device do not starve the others on a venue's one shared address.
 */
const client = (ctx: RequestContext) => (ctx.identity ? `${ctx.identity.kind}:${ctx.identity.id}` : ctx.remoteAddress);

/** Check-in, cancel and the audit are staff actions; a scanner device token may check in and read the list. */
const STAFF = { roles: ['staff'] } as const;
const SCANNER = { roles: ['staff', 'scanner'] } as const;

/** The scanner and gate of a check-in: a device's from its token (with its id, which lists may name); staff may name them. */
function scanOrigin(ctx: RequestContext, body: { scanner?: string; gate?: string }) {
  const who = ctx.identity!;
  if (who.kind === 'device') return { scanner: who.name, gate: who.gate, device_id: who.id };
  return { scanner: body.scanner ?? who.name, gate: body.gate };
}

/** The routes of this file as data (hub.mount): their types are what the pages' client reads (web/common/api.ts). */
export type TicketRoutes = ReturnType<typeof registerTicketRoutes>;

export function registerTicketRoutes(hub: Hub, opts: TicketRoutesOptions) {
  const { service } = opts;
  const limits = { ...DEFAULT_TICKET_LIMITS, ...opts.limits };
  hub.topic({
    name: CHECKIN_TOPIC,
    policy: 'close',
    history: 1000,
    authorize: (_topic, who) => (!who ? 'unauthorized' : who.roles.some((r) => r === 'staff' || r === 'scanner' || r === 'operator') ? 'ok' : 'forbidden'),
  });
  hub.topic({
    name: 'mticket:*',
    policy: 'drop',
    history: 50,
    // one ticket's changes: the topic exists while the ticket does (its code is the holder's secret)
    authorize: async (topic) => {
      const code = topic.slice('mticket:'.length);
      if (parseCode(code) !== code) return 'unknown';
      try {
        await service.ticket(code);
        return 'ok';
      } catch (err) {
        if (err instanceof AppError && err.status === 404) return 'unknown';
        throw err;
      }
    },
  });

  const refusedByLimit = (ctx: RequestContext, via: 'code' | 'id') => {
    const body = (ctx.body ?? {}) as Partial<z.output<typeof checkInBody>>;
    return service.recordRefusal('rate_limited', {
      via,
      code: via === 'code' ? (parseCode(body.code ?? '') ?? body.code ?? null) : null,
      reservation_id: via === 'id' ? ((ctx.params as { id?: string }).id ?? null) : null,
      ...scanOrigin(ctx, body),
      nonce: body.nonce,
      source: via === 'code' ? body.source : 'api',
      client: client(ctx),
    });
  };
  const manualLimit = hub.rateLimit('ticket-manual', {
    ...limits.manual,
    key: (ctx) => ((ctx.body as { source?: string } | undefined)?.source === 'camera' ? undefined : client(ctx)),
    onLimited: (ctx) => refusedByLimit(ctx, 'code'),
  });
  const checkinLimit = (via: 'code' | 'id') =>
    hub.rateLimit('ticket-checkin', { ...limits.checkin, onLimited: (ctx) => refusedByLimit(ctx, via) });
  const lookupLimit = hub.rateLimit('ticket-lookup', limits.lookup);
  const offlineLimit = hub.rateLimit('ticket-offline', { ...limits.offline, key: client });

  // ---- pages ---------------------------------------------------------------------------------
  hub.page('/mticket/:code', '/mticket.html', {
    title: '모바일 티켓 · Mobile ticket',
    description: '휴대폰용 티켓: QR 코드, 공연 정보, 빙고 카드.',
    params: z.object({ code: ticketCode }),
  });
  hub.page('/scan', '/scan.html', {
    title: '입장 스캐너 · Check-in scanner',
    description: '직원용 입장 스캐너: 카메라 QR 스캔, 코드 직접 입력, 실시간 입장 목록.',
  });
  hub.page('/shows', '/shows.html', {
    title: '공연·예매 관리 · Shows and bookings',
    description: '직원용 관리 화면: 공연별 입장 집계, 예매, 티켓 링크, 취소, 입장 기록.',
  });

  // ---- shows and booking ---------------------------------------------------------------------
  const postShows = route({
    method: 'POST',
    path: '/shows',
    auth: STAFF,
    body: {
      schema: z
        .object({
          name: label(200),
          venue: label(200),
          date: z.union([z.iso.date(), z.iso.datetime({ offset: true })]),
        })
        .strict(),
    },
    response: { 201: show },
    handler: async (ctx) => Reply.json(await service.createShow(ctx.body), 201),
  });
  const getShows = route({
    method: 'GET',
    path: '/shows',
    auth: STAFF,
    query: z.object(pageQuery).strict(),
    response: z.object({ shows: z.array(showSummary), page: pageInfo }),
    summary: 'Shows, newest first, with their door counters (paged)',
    cacheControl: 'no-store',
    handler: (ctx) => service.shows(ctx.query),
  });
  const getShowsByIdTickets = route({
    method: 'GET',
    path: '/shows/:id/tickets',
    auth: STAFF,
    params: z.object({ id: showId }),
    query: z.object({ ...pageQuery, q: qText(100).optional() }).strict(),
    response: z.object({ tickets: z.array(bookingRow), page: pageInfo }),
    summary: 'One show\'s bookings, newest first, optionally those whose holder or seat contains q (paged)',
    cacheControl: 'no-store',
    handler: (ctx) => service.bookings(ctx.params.id, ctx.query),
  });
  const getShowsById = route({
    method: 'GET',
    path: '/shows/:id',
    params: z.object({ id: showId }),
    response: show,
    handler: (ctx) => service.show(ctx.params.id),
  });
  const postReservations = route({
    method: 'POST',
    path: '/reservations',
    auth: STAFF,
    body: {
      schema: z
        .object({
          show_id: showId,
          seat: z.string().trim().regex(/^[\p{L}\p{N}][\p{L}\p{N} ._-]{0,31}$/u, 'must be 1 to 32 letters, digits, space . _ -'),
          amount_paid: z.number().int().min(0).max(100_000_000),
          holder: label(100).optional(),
          theme: z.enum(THEME_IDS).optional(),
          kind: ticketKind.optional(),
        })
        .strict(),
    },
    response: { 201: ticketView },
    handler: async (ctx) => Reply.json(await service.book(ctx.body), 201),
  });

  // ---- the ticket ----------------------------------------------------------------------------
  const getMticketByQrCode = route({
    method: 'GET',
    path: '/mticket/:qrCode',
    params: z.object({ qrCode: ticketCode }),
    guards: [lookupLimit],
    response: ticketView,
    cacheControl: 'no-store',
    handler: (ctx) => service.ticket(ctx.params.qrCode),
  });
  const getMticketByQrCodeQrPng = route({
    method: 'GET',
    path: '/mticket/:qrCode/qr.png',
    params: z.object({ qrCode: ticketCode }),
    guards: [lookupLimit],
    summary: 'The QR code of a ticket as a PNG image',
    handler: async (ctx) =>
      new Reply(200, await service.qrPng(ctx.params.qrCode), 'image/png', { 'cache-control': 'private, max-age=86400' }),
  });
  const postMticketByQrCodeCards = route({
    method: 'POST',
    path: '/mticket/:qrCode/cards',
    params: z.object({ qrCode: ticketCode }),
    body: { schema: z.object({ theme: z.enum(THEME_IDS).optional() }).strict().optional(), optional: true },
    guards: [lookupLimit],
    response: { 201: ticketView },
    handler: async (ctx) => Reply.json(await service.addCard(ctx.params.qrCode, ctx.body?.theme), 201),
  });

  // ---- check-in ------------------------------------------------------------------------------
  const postCheckin = route({
    method: 'POST',
    path: '/checkin',
    auth: SCANNER,
    body: { schema: checkInBody },
    guards: [checkinLimit('code'), manualLimit],
    response: { 201: checkedIn },
    cacheControl: 'no-store',
    handler: async (ctx) => {
      const b = ctx.body;
      const input: CheckInInput = { nonce: b.nonce, ...scanOrigin(ctx, b), source: b.source, client: client(ctx), list_id: b.list_id, type: b.type };
      const code = parseCode(b.code);
      if (!code) {
        // a malformed code is an attempt too: audit it, then the usual 400 naming the field
        await service.recordRefusal('malformed', { ...input, code: b.code, via: 'code' });
        validate(z.object({ code: ticketCode }), { code: b.code }, 'body');
      }
      return Reply.json(await service.checkInByCode(code!, input), 201);
    },
  });
  const postTicketsByIdCheckin = route({
    method: 'POST',
    path: '/tickets/:id/checkin',
    params: z.object({ id: reservationId }),
    auth: SCANNER,
    body: { schema: checkInByIdBody, optional: true },
    guards: [checkinLimit('id')],
    response: { 201: checkedIn },
    cacheControl: 'no-store',
    handler: async (ctx) => {
      const b = ctx.body ?? {};
      const input: CheckInInput = { nonce: b.nonce, ...scanOrigin(ctx, b), source: 'api', client: client(ctx), list_id: b.list_id, type: b.type };
      return Reply.json(await service.checkInById(ctx.params.id, input), 201);
    },
  });
  const postTicketsByIdCancel = route({
    method: 'POST',
    path: '/tickets/:id/cancel',
    auth: STAFF,
    params: z.object({ id: reservationId }),
    body: { schema: z.object({ reason: label(200).optional() }).strict().optional(), optional: true },
    response: cancelled,
    cacheControl: 'no-store',
    handler: (ctx) => service.cancel(ctx.params.id, ctx.body?.reason),
  });
  // the scanner page's door counter: checked in over tickets of one show
  const getShowsByIdCounts = route({
    method: 'GET',
    path: '/shows/:id/counts',
    auth: SCANNER,
    params: z.object({ id: showId }),
    response: z.strictObject({ show_id: z.string(), tickets: z.number().int(), checked_in: z.number().int(), cancelled: z.number().int() }),
    cacheControl: 'no-store',
    handler: (ctx) => service.counts(ctx.params.id),
  });
  const getCheckins = route({
    method: 'GET',
    path: '/checkins',
    auth: SCANNER,
    query: z.object({ limit: qInt({ min: 1, max: 500 }).optional() }).strict(),
    response: z.object({ checkins: z.array(checkInEvent) }),
    cacheControl: 'no-store',
    handler: async (ctx) => ({ checkins: await service.recentCheckIns(ctx.query.limit ?? 50) }),
  });
  const getCheckinsAudit = route({
    method: 'GET',
    path: '/checkins/audit',
    auth: STAFF,
    query: z
      .object({ limit: qInt({ min: 1, max: 1000 }).optional(), reservation_id: reservationId.optional(), show_id: showId.optional() })
      .strict()
      .refine((q) => !(q.reservation_id && q.show_id), { message: 'give reservation_id or show_id, not both', path: ['show_id'] }),
    response: z.object({ entries: z.array(auditEntry) }),
    cacheControl: 'no-store',
    handler: async (ctx) => ({
      entries: await service.auditLog({ limit: ctx.query.limit ?? 100, reservation_id: ctx.query.reservation_id, show_id: ctx.query.show_id }),
    }),
  });
  // ---- check-in lists, people inside, undo (docs/ticket.md, "The door") ---------------------------
  hub.topic({
    name: 'door:*',
    policy: 'close',
    history: 1000,
    // one show's entries, exits and undos: the scanners and the back office
    authorize: async (topic, who) => {
      if (!who) return 'unauthorized';
      if (!who.roles.some((r) => r === 'staff' || r === 'scanner')) return 'forbidden';
      const id = topic.slice('door:'.length);
      if (!showId.safeParse(id).success) return 'unknown';
      try {
        await service.show(id);
        return 'ok';
      } catch (err) {
        if (err instanceof AppError && err.status === 404) return 'unknown';
        throw err;
      }
    },
  });
  const getShowsByIdLists = route({
    method: 'GET',
    path: '/shows/:id/lists',
    auth: SCANNER,
    params: z.object({ id: showId }),
    response: z.strictObject({ show_id: z.string(), default_list_id: z.string(), lists: z.array(checkInList) }),
    summary: 'The show\'s check-in lists (the main list first) with their rules',
    cacheControl: 'no-store',
    handler: (ctx) => service.checkInLists(ctx.params.id),
  });
  const postShowsByIdLists = route({
    method: 'POST',
    path: '/shows/:id/lists',
    auth: STAFF,
    params: z.object({ id: showId }),
    body: { schema: newList },
    response: { 201: checkInList },
    summary: 'Adds a check-in list: which tickets it admits (seat ranges, kinds), its rules, validity and devices',
    cacheControl: 'no-store',
    handler: async (ctx) => Reply.json(await service.createCheckInList(ctx.params.id, ctx.body), 201),
  });
  const getShowsByIdDoor = route({
    method: 'GET',
    path: '/shows/:id/door',
    auth: SCANNER,
    params: z.object({ id: showId }),
    response: doorCounts,
    summary: 'People inside now: the show\'s and each check-in list\'s',
    cacheControl: 'no-store',
    handler: (ctx) => service.door(ctx.params.id),
  });
  const postShowsByIdListsByListRevert = route({
    method: 'POST',
    path: '/shows/:id/lists/:list/revert',
    auth: STAFF,
    params: z.object({ id: showId, list: listId }),
    body: { schema: revertBody },
    response: reverted,
    summary: 'Undoes one scan of this list (staff, with a reason): a new audit entry; the counters move back',
    cacheControl: 'no-store',
    handler: (ctx) =>
      service.revertScan({ show_id: ctx.params.id, list_id: ctx.params.list, ...ctx.body, by: ctx.identity!.name, client: client(ctx) }),
  });

  // ---- offline mode (docs/ticket.md, "Offline mode") ----------------------------------------------
  const getCheckinList = route({
    method: 'GET',
    path: '/checkin/list',
    auth: SCANNER,
    query: z.object({ show_id: showId, list_id: listId.optional() }).strict(),
    guards: [offlineLimit],
    response: signedList,
    summary: 'The signed offline check-in list of one show (hashed codes, status, seat; no names), or of one check-in list with its rules; ETag = version',
    cacheControl: 'no-store',
    handler: async (ctx) => {
      const who = ctx.identity!;
      const list = await service.checkInList(ctx.query.show_id, ctx.query.list_id, who.kind === 'device' ? who.id : undefined);
      const etag = `"${list.version}"`;
      const asked = ctx.headers['if-none-match'];
      if (asked !== undefined && asked.split(',').some((t) => t.trim().replace(/^W\//, '') === etag)) return Reply.empty(304, { etag });
      return Reply.json(list, 200, { etag });
    },
  });
  const postCheckinOffline = route({
    method: 'POST',
    path: '/checkin/offline',
    auth: SCANNER,
    body: { schema: offlineBatch },
    guards: [offlineLimit],
    response: offlineResults,
    summary: 'Uploads scans made without network; each is settled in order, exactly once, with a result (ok, conflict, invalid)',
    cacheControl: 'no-store',
    handler: async (ctx) => {
      const origin = scanOrigin(ctx, {});
      const results = await service.settleOffline(ctx.body.scans, { ...origin, client: client(ctx), device: client(ctx) });
      return { results };
    },
  });
  const getCheckinConflicts = route({
    method: 'GET',
    path: '/checkin/conflicts',
    auth: STAFF,
    query: z.object({ limit: qInt({ min: 1, max: 1000 }).optional(), show_id: showId.optional() }).strict(),
    response: z.object({ conflicts: z.array(conflictRecord) }),
    summary: 'Offline scans of tickets that were already in or cancelled (both scans), newest first',
    cacheControl: 'no-store',
    handler: async (ctx) => ({ conflicts: await service.conflicts({ limit: ctx.query.limit ?? 100, show_id: ctx.query.show_id }) }),
  });
  return hub.mount('/api', {
    postShows,
    getShows,
    getShowsByIdTickets,
    getShowsById,
    postReservations,
    getMticketByQrCode,
    getMticketByQrCodeQrPng,
    postMticketByQrCodeCards,
    postCheckin,
    postTicketsByIdCheckin,
    postTicketsByIdCancel,
    getShowsByIdCounts,
    getCheckins,
    getCheckinsAudit,
    getShowsByIdLists,
    postShowsByIdLists,
    getShowsByIdDoor,
    postShowsByIdListsByListRevert,
    getCheckinList,
    postCheckinOffline,
    getCheckinConflicts,
  });
}
