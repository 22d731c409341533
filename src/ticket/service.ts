import { randomBytes } from 'node:crypto';
import type { Bus } from '../bus.js';
import type { Clock } from '../clock.js';
import { AppError, conflict, notFound } from '../errors.js';
import type { Json, Store, Write } from '../store/port.js';
import {
  CARDS_AT_BOOKING,
  MAX_CARDS,
  cryptoRng,
  generateCards,
  hasCards,
  theme as findTheme,
  type BingoCard,
  type Rng,
} from './bingo.js';
import { generateCode } from './code.js';
import { AUDIT_CAP, CHECKINS_CAP, K, RESERVATION_AUDIT_CAP } from './keys.js';
import { qrImage } from './qr.js';

/** Bus topic of every successful check-in: all open scanner pages listen. */
export const CHECKIN_TOPIC = 'checkins';
/** Bus topic of one ticket's changes (`mticket:TK-...`): the holder's ticket page listens. */
export const ticketTopic = (code: string) => `mticket:${code}`;

/** The document's three states: entry allowed, checked in, cancelled. */
export type TicketStatus = 'entry_allowed' | 'checked_in' | 'cancelled';
/** How the code reached the server: a camera scan, typed by staff, or another system by id. */
export type CheckInSource = 'camera' | 'manual' | 'api';
/** Audit results: pretix's answers, plus the two refusals that happen before a ticket is looked up. */
export type AttemptResult = 'ok' | 'already_redeemed' | 'canceled' | 'invalid' | 'malformed' | 'rate_limited';

export interface ShowRecord {
  id: string;
  name: string;
  venue: string;
  /** ISO date (2026-12-24) or date-time with offset, as given at creation. */
  date: string;
  created_at: string;
}

export interface CheckInMark {
  at: string;
  scanner: string;
  gate: string | null;
  nonce: string | null;
  source: CheckInSource;
}

/** A reservation is the ticket: one seat of one show, with its code and bingo cards. */
export interface ReservationRecord {
  id: string;
  code: string;
  show_id: string;
  show_name: string;
  venue: string;
  date: string;
  seat: string;
  amount_paid: number;
  holder: string | null;
  status: TicketStatus;
  created_at: string;
  /** Absent or null on reservations made before cards existed: filled on first lookup. */
  bingo_cards?: BingoCard[] | null;
  checkin: CheckInMark | null;
  cancelled_at: string | null;
  cancel_reason: string | null;
}

export interface AuditEntry {
  at: string;
  result: AttemptResult;
  /** The normalised code; for malformed input, the first 32 characters as received. */
  code: string | null;
  reservation_id: string | null;
  scanner: string;
  gate: string | null;
  source: CheckInSource;
  nonce: string | null;
  /** Remote address of the request. */
  client: string | null;
  /** Which route: by code (POST /api/checkin) or by reservation id (POST /api/tickets/:id/checkin). */
  via: 'code' | 'id';
  replayed: boolean;
}

export interface CheckInEvent {
  type: 'checkin';
  reservation_id: string;
  code: string;
  show_id: string;
  show_name: string;
  venue: string;
  date: string;
  seat: string;
  at: string;
  scanner: string;
  gate: string | null;
  source: CheckInSource;
}

export interface CheckInInput {
  nonce?: string | undefined;
  scanner?: string | undefined;
  gate?: string | undefined;
  source?: CheckInSource | undefined;
  client?: string | undefined;
}

export interface BookInput {
  show_id: string;
  seat: string;
  amount_paid: number;
  holder?: string | undefined;
  theme?: string | undefined;
}

export interface TicketServiceOptions {
  store: Store;
  clock: Clock;
  bus: Bus;
  /** Randomness of bingo cards; default crypto. Ticket codes always come from crypto. */
  rng?: Rng;
}

const iso = (ms: number) => new Date(ms).toISOString();
const randomId = (prefix: string) => prefix + randomBytes(8).toString('base64url').slice(0, 10);
const asJson = (v: unknown) => v as Json;
const DEFAULT_SCANNER = 'unnamed';
const BOOK_ATTEMPTS = 8;

export const RESERVATION_ID_RE = /^r_[A-Za-z0-9_-]{10}$/;
export const SHOW_ID_RE = /^s_[A-Za-z0-9_-]{10}$/;

type Outcome =
  | { kind: 'ok'; r: ReservationRecord; mark: CheckInMark; replayed: boolean }
  | { kind: 'already_redeemed'; r: ReservationRecord }
  | { kind: 'canceled'; r: ReservationRecord }
  | { kind: 'invalid' };

export class TicketService {
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly bus: Bus;
  private readonly rng: Rng;
  /** Card sets written by the lazy migration in this process (tests and metrics). */
  cardMigrations = 0;

  constructor(opts: TicketServiceOptions) {
    this.store = opts.store;
    this.clock = opts.clock;
    this.bus = opts.bus;
    this.rng = opts.rng ?? cryptoRng;
  }

  // ---- shows and booking ---------------------------------------------------------------------

  async createShow(input: { name: string; venue: string; date: string }): Promise<ShowRecord> {
    const now = this.clock.now();
    const show: ShowRecord = { id: randomId('s_'), ...input, created_at: iso(now) };
    await this.store.update([K.show(show.id)], () => ({
      writes: [
        { op: 'set', key: K.show(show.id), value: asJson(show) },
        { op: 'index', key: K.shows, member: show.id, score: now },
      ],
      result: undefined,
    }));
    return show;
  }

  async show(id: string): Promise<ShowRecord> {
    const show = await this.store.get<Json>(K.show(id));
    if (!show) throw notFound('show_not_found', `no show ${id}`);
    return show as unknown as ShowRecord;
  }

  /**
   * Books one seat: creates the reservation with a fresh code and 2 bingo cards, atomically with the
   * code index and the seat claim. 404 show_not_found, 409 seat_taken, 400 unknown_theme.
   */
  async book(input: BookInput) {
    return this.view(await this.reserve(input));
  }

  /** book() without the QR image: the stored reservation record. */
  async reserve(input: BookInput): Promise<ReservationRecord> {
    if (input.theme !== undefined && !findTheme(input.theme)) {
      throw new AppError('invalid', 'unknown_theme', `no bingo theme ${input.theme}`);
    }
    const now = this.clock.now();
    const cards = generateCards(CARDS_AT_BOOKING, this.rng, input.theme);
    for (let attempt = 1; attempt <= BOOK_ATTEMPTS; attempt++) {
      const code = generateCode();
      const id = randomId('r_');
      const keys = [K.show(input.show_id), K.seat(input.show_id, input.seat), K.code(code)];
      const r = await this.store.update(keys, ([show, seatHolder, codeTaken]) => {
        if (!show) throw notFound('show_not_found', `no show ${input.show_id}`);
        if (seatHolder !== undefined) {
          throw conflict('seat_taken', `seat ${input.seat} of this show is already booked`, { seat: input.seat });
        }
        if (codeTaken !== undefined) return { writes: [], result: undefined };
        const s = show as unknown as ShowRecord;
        const rec: ReservationRecord = {
          id,
          code,
          show_id: s.id,
          show_name: s.name,
          venue: s.venue,
          date: s.date,
          seat: input.seat,
          amount_paid: input.amount_paid,
          holder: input.holder ?? null,
          status: 'entry_allowed',
          created_at: iso(now),
          bingo_cards: cards,
          checkin: null,
          cancelled_at: null,
          cancel_reason: null,
        };
        const writes: Write[] = [
          { op: 'set', key: K.reservation(id), value: asJson(rec) },
          { op: 'set', key: K.code(code), value: id },
          { op: 'set', key: K.seat(s.id, input.seat), value: id },
          { op: 'index', key: K.reservations, member: id, score: now },
        ];
        return { writes, result: rec };
      });
      if (r) return r;
      // a code collision (about one in 10^11 per existing ticket): draw again
    }
    throw new AppError('unavailable', 'code_space_busy', 'could not draw an unused ticket code');
  }

  // ---- the ticket ----------------------------------------------------------------------------

  /** The ticket behind a code, with its QR image; a reservation without cards gets them now. */
  async ticket(code: string) {
    return this.view(await this.withCards(await this.byCode(code)));
  }

  /** The PNG of a ticket's QR code (404 invalid for an unknown code). */
  async qrPng(code: string): Promise<Buffer> {
    await this.byCode(code);
    return (await qrImage(code)).png;
  }

  /** Adds one card (up to 4) to a ticket; 409 cards_full beyond that. */
  async addCard(code: string, themeId?: string) {
    if (themeId !== undefined && !findTheme(themeId)) throw new AppError('invalid', 'unknown_theme', `no bingo theme ${themeId}`);
    const r0 = await this.withCards(await this.byCode(code));
    const cardTheme = themeId ?? r0.bingo_cards?.[0]?.theme;
    const [card] = generateCards(1, this.rng, cardTheme, (r0.bingo_cards?.length ?? 0) + 1);
    const r = await this.store.update([K.reservation(r0.id)], ([cur]) => {
      const rec = cur as unknown as ReservationRecord;
      const have = rec.bingo_cards ?? [];
      if (have.length >= MAX_CARDS) {
        throw conflict('cards_full', `a ticket carries at most ${MAX_CARDS} bingo cards`, { max: MAX_CARDS });
      }
      const next: ReservationRecord = { ...rec, bingo_cards: [...have, { ...card!, no: have.length + 1 }] };
      return { writes: [{ op: 'set', key: K.reservation(rec.id), value: asJson(next) }], result: next };
    });
    return this.view(r);
  }

  /** Lookup by reservation id (the backward-compatible routes). 404 invalid when unknown. */
  async reservation(id: string): Promise<ReservationRecord> {
    const r = await this.store.get<Json>(K.reservation(id));
    if (!r) throw notFound('invalid', `no ticket for reservation ${id}`, { reservation_id: id });
    return r as unknown as ReservationRecord;
  }

  private async byCode(code: string): Promise<ReservationRecord> {
    const id = await this.store.get<string>(K.code(code));
    const r = id === undefined ? undefined : await this.store.get<Json>(K.reservation(id));
    if (!r) throw notFound('invalid', `no ticket with code ${code}`, { code });
    return r as unknown as ReservationRecord;
  }

  /**
   * The document's start-up migration (reservation.bingo_cards added when missing), done lazily:
   * a reservation without cards gets 2 on its first lookup. Candidates are drawn outside the atomic
   * update; inside it, cards already present win, so concurrent first lookups (on one process or
   * many) write exactly one set and all return it.
   */
  private async withCards(r: ReservationRecord): Promise<ReservationRecord> {
    if (hasCards(r.bingo_cards)) return r;
    const candidates = generateCards(CARDS_AT_BOOKING, this.rng);
    const { rec, created } = await this.store.update([K.reservation(r.id)], ([cur]) => {
      if (!cur) throw notFound('invalid', `no ticket for reservation ${r.id}`);
      const rec = cur as unknown as ReservationRecord;
      if (hasCards(rec.bingo_cards)) return { writes: [], result: { rec, created: false } };
      const next: ReservationRecord = { ...rec, bingo_cards: candidates };
      return { writes: [{ op: 'set', key: K.reservation(rec.id), value: asJson(next) }], result: { rec: next, created: true } };
    });
    if (created) this.cardMigrations++;
    return rec;
  }

  private async view(r: ReservationRecord) {
    const qr = await qrImage(r.code);
    return {
      reservation_id: r.id,
      code: r.code,
      show_id: r.show_id,
      show_name: r.show_name,
      venue: r.venue,
      date: r.date,
      seat: r.seat,
      amount_paid: r.amount_paid,
      holder: r.holder,
      status: r.status,
      checked_in_at: r.checkin?.at ?? null,
      checked_in_by: r.checkin ? { scanner: r.checkin.scanner, gate: r.checkin.gate } : null,
      cancelled_at: r.cancelled_at,
      qr_code: r.code,
      qr_image: qr.dataUrl,
      bingo_cards: r.bingo_cards ?? [],
      page_url: `/mticket/${r.code}`,
    };
  }

  // ---- check-in ------------------------------------------------------------------------------

  /** POST /api/checkin: by ticket code. */
  async checkInByCode(code: string, input: CheckInInput) {
    const id = await this.store.get<string>(K.code(code));
    return this.checkIn(id, code, 'code', input);
  }

  /** POST /api/tickets/:id/checkin: by reservation id (kept for backward compatibility). */
  async checkInById(id: string, input: CheckInInput) {
    return this.checkIn(id, null, 'id', input);
  }

  /**
   * The state machine entry_allowed -> checked_in, in one atomic update of the reservation that
   * also appends the audit entry (and, on success, the check-in list): N simultaneous check-ins of
   * one ticket give exactly one 201 on any number of processes sharing the store. Answers (pretix):
   * 201 ok; 409 already_redeemed with the first check-in's time, scanner and gate; 409 canceled;
   * 404 invalid. A retry carrying the nonce of the successful check-in gets that success again
   * (201, replayed: true) instead of already_redeemed.
   */
  private async checkIn(id: string | undefined, code: string | null, via: 'code' | 'id', input: CheckInInput) {
    const now = this.clock.now();
    const mark: CheckInMark = {
      at: iso(now),
      scanner: input.scanner ?? DEFAULT_SCANNER,
      gate: input.gate ?? null,
      nonce: input.nonce ?? null,
      source: input.source ?? (via === 'id' ? 'api' : 'manual'),
    };
    const entry = (result: AttemptResult, r?: ReservationRecord, replayed = false): AuditEntry => ({
      at: mark.at,
      result,
      code: r?.code ?? code,
      reservation_id: r?.id ?? (via === 'id' ? (id ?? null) : null),
      scanner: mark.scanner,
      gate: mark.gate,
      source: mark.source,
      nonce: mark.nonce,
      client: input.client ?? null,
      via,
      replayed,
    });

    let outcome: Outcome = { kind: 'invalid' };
    if (id !== undefined) {
      outcome = await this.store.update([K.reservation(id)], ([cur]): { writes: Write[]; result: Outcome } => {
        if (!cur) return { writes: [], result: { kind: 'invalid' } };
        const r = cur as unknown as ReservationRecord;
        const audit = (e: AuditEntry): Write[] => [
          { op: 'push', key: K.audit, value: asJson(e), cap: AUDIT_CAP },
          { op: 'push', key: K.reservationAudit(r.id), value: asJson(e), cap: RESERVATION_AUDIT_CAP },
        ];
        if (r.status === 'cancelled') return { writes: audit(entry('canceled', r)), result: { kind: 'canceled', r } };
        if (r.status === 'checked_in') {
          if (mark.nonce !== null && r.checkin?.nonce === mark.nonce) {
            return { writes: audit(entry('ok', r, true)), result: { kind: 'ok', r, mark: r.checkin, replayed: true } };
          }
          return { writes: audit(entry('already_redeemed', r)), result: { kind: 'already_redeemed', r } };
        }
        const next: ReservationRecord = { ...r, status: 'checked_in', checkin: mark };
        const event = checkInEvent(next, mark);
        return {
          writes: [
            { op: 'set', key: K.reservation(r.id), value: asJson(next) },
            ...audit(entry('ok', next)),
            { op: 'push', key: K.checkins, value: asJson(event), cap: CHECKINS_CAP },
          ],
          result: { kind: 'ok', r: next, mark, replayed: false },
        };
      });
    }

    switch (outcome.kind) {
      case 'invalid': {
        await this.store.push(K.audit, asJson(entry('invalid')), AUDIT_CAP);
        const what = via === 'code' ? `code ${code}` : `reservation ${id}`;
        throw notFound('invalid', `no ticket with ${what}`, via === 'code' ? { code } : { reservation_id: id });
      }
      case 'canceled':
        throw conflict('canceled', `ticket ${outcome.r.code} is cancelled`, {
          cancelled_at: outcome.r.cancelled_at,
          ticket: brief(outcome.r),
        });
      case 'already_redeemed': {
        const first = outcome.r.checkin!;
        throw conflict('already_redeemed', `ticket ${outcome.r.code} was already checked in at ${first.at}`, {
          first_checkin: { at: first.at, scanner: first.scanner, gate: first.gate },
          ticket: brief(outcome.r),
        });
      }
      case 'ok': {
        if (!outcome.replayed) {
          const event = checkInEvent(outcome.r, outcome.mark);
          this.publish(CHECKIN_TOPIC, event);
          this.publish(ticketTopic(outcome.r.code), event);
        }
        const m = outcome.mark;
        return {
          status: 'ok' as const,
          replayed: outcome.replayed,
          ticket: brief(outcome.r),
          checkin: { at: m.at, scanner: m.scanner, gate: m.gate, nonce: m.nonce },
        };
      }
    }
  }

  /** Audits an attempt refused before any ticket was looked up (malformed code, rate limit). */
  async recordRefusal(
    result: 'malformed' | 'rate_limited',
    input: CheckInInput & { code?: string | null; reservation_id?: string | null; via: 'code' | 'id' },
  ): Promise<void> {
    const e: AuditEntry = {
      at: iso(this.clock.now()),
      result,
      code: input.code === undefined || input.code === null ? null : String(input.code).slice(0, 32),
      reservation_id: input.reservation_id ?? null,
      scanner: input.scanner ?? DEFAULT_SCANNER,
      gate: input.gate ?? null,
      source: input.source ?? (input.via === 'id' ? 'api' : 'manual'),
      nonce: input.nonce ?? null,
      client: input.client ?? null,
      via: input.via,
      replayed: false,
    };
    await this.store.push(K.audit, asJson(e), AUDIT_CAP);
  }

  // ---- cancel --------------------------------------------------------------------------------

  /**
   * entry_allowed -> cancelled (frees the seat). Cancelling a cancelled ticket changes nothing and
   * answers the same; a checked-in ticket cannot be cancelled (409 already_redeemed).
   */
  async cancel(id: string, reason?: string) {
    const at = iso(this.clock.now());
    const { r, changed } = await this.store.update([K.reservation(id)], ([cur]) => {
      if (!cur) throw notFound('invalid', `no ticket for reservation ${id}`, { reservation_id: id });
      const rec = cur as unknown as ReservationRecord;
      if (rec.status === 'cancelled') return { writes: [], result: { r: rec, changed: false } };
      if (rec.status === 'checked_in') {
        throw conflict('already_redeemed', 'a checked-in ticket cannot be cancelled', {
          first_checkin: { at: rec.checkin!.at, scanner: rec.checkin!.scanner, gate: rec.checkin!.gate },
        });
      }
      const next: ReservationRecord = { ...rec, status: 'cancelled', cancelled_at: at, cancel_reason: reason ?? null };
      return {
        writes: [
          { op: 'set', key: K.reservation(id), value: asJson(next) },
          { op: 'del', key: K.seat(rec.show_id, rec.seat) },
        ],
        result: { r: next, changed: true },
      };
    });
    if (changed) this.publish(ticketTopic(r.code), { type: 'cancelled', code: r.code, at });
    return { ...brief(r), cancelled_at: r.cancelled_at, cancel_reason: r.cancel_reason };
  }

  // ---- lists ---------------------------------------------------------------------------------

  /** Successful check-ins, newest first. */
  async recentCheckIns(limit: number): Promise<CheckInEvent[]> {
    const list = await this.store.range<Json>(K.checkins, -limit, -1);
    return (list as unknown as CheckInEvent[]).reverse();
  }

  /** Audit entries (every attempt), newest first; of one reservation when given. */
  async auditLog(opts: { limit: number; reservation_id?: string | undefined }): Promise<AuditEntry[]> {
    const key = opts.reservation_id ? K.reservationAudit(opts.reservation_id) : K.audit;
    const list = await this.store.range<Json>(key, -opts.limit, -1);
    return (list as unknown as AuditEntry[]).reverse();
  }

  private publish(topic: string, message: unknown): void {
    this.bus.emit(topic, asJson(message));
  }
}

function brief(r: ReservationRecord) {
  return {
    reservation_id: r.id,
    code: r.code,
    show_id: r.show_id,
    show_name: r.show_name,
    venue: r.venue,
    date: r.date,
    seat: r.seat,
    status: r.status,
  };
}

function checkInEvent(r: ReservationRecord, m: CheckInMark): CheckInEvent {
  const { status: _status, ...ticket } = brief(r);
  return {
    type: 'checkin',
    ...ticket,
    at: m.at,
    scanner: m.scanner,
    gate: m.gate,
    source: m.source,
  };
}
