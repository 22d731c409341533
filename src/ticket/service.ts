import type { Bus } from '../bus.js';
import type { Clock } from '../clock.js';
import { AppError, conflict, notFound } from '../errors.js';
import type { Json, Store, Write } from '../store/port.js';
import { CARDS_AT_BOOKING, MAX_CARDS, cryptoRng, generateCards, hasCards, theme as findTheme, type Rng } from './bingo.js';
import { CheckIns } from './checkin.js';
import { showCounts, type ShowCounts } from './counts.js';
import { generateCode } from './code.js';
import { K, S, showKeys } from './keys.js';
import { locateByCode, locateById, type Located } from './locate.js';
import { checkInLists, contradiction, storedLists, defaultList, MAX_LISTS, showLists, type CheckInList, type SeatRange } from './door.js';
import { listBookings, listShows, type Page } from './lists.js';
import { OfflineLists, type SignedList } from './offline.js';
import { qrImage } from './qr.js';
import {
  brief,
  doorState,
  iso,
  randomId,
  reservations,
  shows,
  ticketTopic,
  type AuditEntry,
  type BookInput,
  type CheckInEvent,
  type CheckInInput,
  type OfflineConflict,
  type OfflineResult,
  type OfflineScan,
  type ReservationRecord,
  type ShowRecord,
} from './records.js';

export * from './records.js';

export interface TicketServiceOptions {
  store: Store;
  clock: Clock;
  bus: Bus;
  /** Randomness of bingo cards; default crypto. Ticket codes always come from crypto. */
  rng?: Rng;
}

const BOOK_ATTEMPTS = 8;

export class TicketService {
  private readonly store: Store;
  private readonly clock: Clock;
  private readonly bus: Bus;
  private readonly rng: Rng;
  private readonly checkins: CheckIns;
  private readonly lists: OfflineLists;
  /** Card sets written by the lazy migration in this process (tests and metrics). */
  cardMigrations = 0;

  constructor(opts: TicketServiceOptions) {
    this.store = opts.store;
    this.clock = opts.clock;
    this.bus = opts.bus;
    this.rng = opts.rng ?? cryptoRng;
    this.checkins = new CheckIns(this.store, this.clock, this.bus);
    this.lists = new OfflineLists(this.store, this.clock);
  }

  // ---- shows and booking ---------------------------------------------------------------------

  async createShow(input: { name: string; venue: string; date: string }): Promise<ShowRecord> {
    const now = this.clock.now();
    const show: ShowRecord = { id: randomId('s_'), ...input, created_at: iso(now) };
    // the show's layout (keys.ts): every key of its tickets in its aggregate, the list of shows in its partition
    await this.store.update([K.show(show.id)], () => ({
      writes: [
        { op: 'set', key: K.show(show.id), value: shows.encode(show) },
        { op: 'set', key: K.showPartitioned(show.id), value: 1 },
        { op: 'index', key: S.shows(show.id), member: show.id, score: now },
        { op: 'set', key: S.count(show.id, 'tickets'), value: 0 },
      ],
      result: undefined,
    }));
    return show;
  }

  async show(id: string): Promise<ShowRecord> {
    const show = shows.decode(await this.store.get(K.show(id)));
    if (!show) throw notFound('show_not_found', `no show ${id}`);
    return show;
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
    const [showNow, mark] = await this.store.getMany([K.show(input.show_id), K.showPartitioned(input.show_id)]);
    if (showNow === undefined) throw notFound('show_not_found', `no show ${input.show_id}`);
    const partitioned = mark !== undefined;
    const k = showKeys(input.show_id, partitioned ? 'show' : 'global');
    for (let attempt = 1; attempt <= BOOK_ATTEMPTS; attempt++) {
      const code = generateCode();
      const id = randomId('r_');
      if (partitioned) {
        // the pointers of the code and the id to the show, each on its own, before the booking (a
        // code already drawn is drawn again); a booking refused removes them again
        if (!(await this.store.set(K.code(code), { show_id: input.show_id, id }, { ifAbsent: true }))) continue;
        await this.store.set(K.ridShow(id), input.show_id);
      }
      const keys = [K.show(input.show_id), k.seat(input.seat), ...(partitioned ? [] : [K.code(code)])];
      let r: ReservationRecord | undefined;
      try {
        r = await this.store.update(keys, ([show, seatHolder, codeTaken]) => {
          if (!show) throw notFound('show_not_found', `no show ${input.show_id}`);
          if (seatHolder !== undefined) {
            throw conflict('seat_taken', `seat ${input.seat} of this show is already booked`, { seat: input.seat });
          }
          if (codeTaken !== undefined) return { writes: [], result: undefined };
          const s = shows.decode(show)!;
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
            ...(input.kind ? { kind: input.kind } : {}),
            status: 'entry_allowed',
            created_at: iso(now),
            bingo_cards: cards,
            checkin: null,
            cancelled_at: null,
            cancel_reason: null,
          };
          const writes: Write[] = [
            { op: 'set', key: k.reservation(id), value: reservations.encode(rec) },
            ...(partitioned ? [] : [{ op: 'set', key: K.code(code), value: id } as Write]),
            { op: 'set', key: k.seat(input.seat), value: id },
            { op: 'index', key: k.reservations, member: id, score: now },
            { op: 'index', key: k.showReservations, member: id, score: now },
            { op: 'incr', key: k.count('tickets'), by: 1 },
          ];
          return { writes, result: rec };
        });
      } catch (err) {
        if (partitioned) await Promise.all([this.store.del(K.code(code)), this.store.del(K.ridShow(id))]);
        throw err;
      }
      if (r) return r;
      // a code collision (about one in 10^11 per existing ticket): draw again
    }
    throw new AppError('unavailable', 'code_space_busy', 'could not draw an unused ticket code');
  }

  // ---- the ticket ----------------------------------------------------------------------------

  /** The ticket behind a code, with its QR image; a reservation without cards gets them now. */
  async ticket(code: string) {
    const at = await this.locateCode(code);
    return this.view(await this.withCards(await this.record(at, () => notFound('invalid', `no ticket with code ${code}`, { code })), at));
  }

  /** The PNG of a ticket's QR code (404 invalid for an unknown code). */
  async qrPng(code: string): Promise<Buffer> {
    await this.byCode(code);
    return (await qrImage(code)).png;
  }

  /** Adds one card (up to 4) to a ticket; 409 cards_full beyond that. */
  async addCard(code: string, themeId?: string) {
    if (themeId !== undefined && !findTheme(themeId)) throw new AppError('invalid', 'unknown_theme', `no bingo theme ${themeId}`);
    const at = await this.locateCode(code);
    const r0 = await this.withCards(await this.record(at, () => notFound('invalid', `no ticket with code ${code}`, { code })), at);
    const cardTheme = themeId ?? r0.bingo_cards?.[0]?.theme;
    const [card] = generateCards(1, this.rng, cardTheme, (r0.bingo_cards?.length ?? 0) + 1);
    const key = at.keys.reservation(r0.id);
    const r = await this.store.update([key], ([cur]) => {
      const rec = reservations.decode(cur)!;
      const have = rec.bingo_cards ?? [];
      if (have.length >= MAX_CARDS) {
        throw conflict('cards_full', `a ticket carries at most ${MAX_CARDS} bingo cards`, { max: MAX_CARDS });
      }
      const next: ReservationRecord = { ...rec, bingo_cards: [...have, { ...card!, no: have.length + 1 }] };
      return { writes: [{ op: 'set', key, value: reservations.encode(next) }], result: next };
    });
    return this.view(r);
  }

  /** Lookup by reservation id (the backward-compatible routes). 404 invalid when unknown. */
  async reservation(id: string): Promise<ReservationRecord> {
    const gone = () => notFound('invalid', `no ticket for reservation ${id}`, { reservation_id: id });
    const at = await locateById(this.store, id);
    if (!at) throw gone();
    return this.record(at, gone);
  }

  private async byCode(code: string): Promise<ReservationRecord> {
    return this.record(await this.locateCode(code), () => notFound('invalid', `no ticket with code ${code}`, { code }));
  }

  private async locateCode(code: string): Promise<Located> {
    const at = await locateByCode(this.store, code);
    if (!at) throw notFound('invalid', `no ticket with code ${code}`, { code });
    return at;
  }

  /** The record of a located reservation, or `gone()` thrown. */
  private async record(at: Located, gone: () => Error): Promise<ReservationRecord> {
    const r = reservations.decode(await this.store.get(at.keys.reservation(at.id)));
    if (!r) throw gone();
    return r;
  }

  /**
   * The document's start-up migration (reservation.bingo_cards added when missing), done lazily:
   * a reservation without cards gets 2 on its first lookup. Candidates are drawn outside the atomic
   * update; inside it, cards already present win, so concurrent first lookups (on one process or
   * many) write exactly one set and all return it.
   */
  private async withCards(r: ReservationRecord, at: Located): Promise<ReservationRecord> {
    if (hasCards(r.bingo_cards)) return r;
    const candidates = generateCards(CARDS_AT_BOOKING, this.rng);
    const key = at.keys.reservation(r.id);
    const { rec, created } = await this.store.update([key], ([cur]) => {
      if (!cur) throw notFound('invalid', `no ticket for reservation ${r.id}`);
      const rec = reservations.decode(cur)!;
      if (hasCards(rec.bingo_cards)) return { writes: [], result: { rec, created: false } };
      const next: ReservationRecord = { ...rec, bingo_cards: candidates };
      return { writes: [{ op: 'set', key, value: reservations.encode(next) }], result: { rec: next, created: true } };
    });
    if (created) this.cardMigrations++;
    return rec;
  }

  private async view(r: ReservationRecord) {
    const qr = await qrImage(r.code);
    return {
      ...brief(r),
      amount_paid: r.amount_paid,
      holder: r.holder,
      ...doorState(r),
      qr_code: r.code,
      qr_image: qr.dataUrl,
      bingo_cards: r.bingo_cards ?? [],
    };
  }

  // ---- check-in ------------------------------------------------------------------------------

  /** POST /api/checkin: by ticket code. */
  checkInByCode(code: string, input: CheckInInput) {
    return this.checkins.checkInByCode(code, input);
  }

  /** POST /api/tickets/:id/checkin: by reservation id (kept for backward compatibility). */
  checkInById(id: string, input: CheckInInput) {
    return this.checkins.checkInById(id, input);
  }

  /** Audits an attempt refused before any ticket was looked up (malformed code, rate limit). */
  recordRefusal(result: 'malformed' | 'rate_limited', input: CheckInInput & { code?: string | null; reservation_id?: string | null; via: 'code' | 'id' }): Promise<void> {
    return this.checkins.recordRefusal(result, input);
  }

  // ---- offline mode (docs/ticket.md, "Offline mode") ----------------------------------------------

  /** The signed offline check-in list of one show. 404 show_not_found, 413 list_too_large. */
  async checkInList(showId: string, listId?: string, deviceId?: string): Promise<SignedList & { version: string }> {
    const show = await this.show(showId);
    if (listId === undefined) return this.lists.list(show);
    const list = (await this.checkInLists(showId)).lists.find((l) => l.id === listId);
    if (!list) throw notFound('list_not_found', `no check-in list ${listId} in show ${showId}`, { list_id: listId });
    if (deviceId !== undefined && list.devices.length > 0 && !list.devices.includes(deviceId)) {
      throw new AppError('forbidden', 'device_not_on_list', `this scanner device may not scan on list ${listId}`, { list_id: listId });
    }
    return this.lists.list(show, list);
  }

  /**
   * Settles a device's offline scans one after another, in the order given, each through the
   * check-in transition (exactly once per scan id and device); a result for each.
   */
  async settleOffline(scans: OfflineScan[], input: CheckInInput & { device: string }): Promise<OfflineResult[]> {
    const out: OfflineResult[] = [];
    for (const scan of scans) out.push(await this.checkins.settleOffline(scan, input));
    return out;
  }

  /** Offline-scan conflicts, newest first; of one show when given (404 for an unknown show). */
  async conflicts(opts: { limit: number; show_id?: string | undefined }): Promise<OfflineConflict[]> {
    if (opts.show_id) await this.show(opts.show_id);
    return this.checkins.conflicts(opts);
  }

  // ---- cancel --------------------------------------------------------------------------------

  /**
   * entry_allowed -> cancelled (frees the seat). Cancelling a cancelled ticket changes nothing and
   * answers the same; a checked-in ticket cannot be cancelled (409 already_redeemed).
   */
  async cancel(id: string, reason?: string) {
    const at = iso(this.clock.now());
    const where = await locateById(this.store, id);
    if (!where) throw notFound('invalid', `no ticket for reservation ${id}`, { reservation_id: id });
    const k = where.keys;
    const { r, changed } = await this.store.update([k.reservation(id)], ([cur]) => {
      if (!cur) throw notFound('invalid', `no ticket for reservation ${id}`, { reservation_id: id });
      const rec = reservations.decode(cur)!;
      if (rec.status === 'cancelled') return { writes: [], result: { r: rec, changed: false } };
      if (rec.status === 'checked_in') {
        throw conflict('already_redeemed', 'a checked-in ticket cannot be cancelled', {
          first_checkin: { at: rec.checkin!.at, scanner: rec.checkin!.scanner, gate: rec.checkin!.gate },
        });
      }
      const next: ReservationRecord = { ...rec, status: 'cancelled', cancelled_at: at, cancel_reason: reason ?? null };
      return {
        writes: [
          { op: 'set', key: k.reservation(id), value: reservations.encode(next) },
          { op: 'del', key: k.seat(rec.seat) },
          { op: 'incr', key: k.count('tickets'), by: -1 },
          { op: 'incr', key: k.count('cancelled'), by: 1 },
        ],
        result: { r: next, changed: true },
      };
    });
    if (changed) this.publish(ticketTopic(r.code), { type: 'cancelled', code: r.code, at });
    return { ...brief(r), cancelled_at: r.cancelled_at, cancel_reason: r.cancel_reason };
  }

  /** The door counter of a show: tickets (not cancelled), checked in, cancelled. 404 for an unknown show. */
  async counts(showId: string): Promise<ShowCounts> {
    await this.show(showId);
    return showCounts(this.store, showId);
  }

  // ---- lists ---------------------------------------------------------------------------------

  /** Shows, newest first, with their door counters. */
  shows(page: Page) {
    return listShows(this.store, page);
  }

  /** One show's bookings, newest first, optionally those whose holder or seat contains `q`. 404 for an unknown show. */
  async bookings(showId: string, page: Page & { q?: string | undefined }) {
    await this.show(showId);
    return listBookings(this.store, showId, page);
  }

  // ---- check-in lists (src/ticket/door.ts) ------------------------------------------------------

  /** The show's check-in lists, the main list first; 404 show_not_found. */
  async checkInLists(showId: string): Promise<{ show_id: string; default_list_id: string; lists: CheckInList[] }> {
    const [show, raw] = await this.store.getMany([K.show(showId), K.showLists(showId)]);
    if (!shows.decode(show)) throw notFound('show_not_found', `no show ${showId}`);
    const lists = showLists(showId, storedLists(raw));
    return { show_id: showId, default_list_id: defaultList(lists).id, lists };
  }

  /**
   * Adds a check-in list to a show (one atomic update of the show's lists). A rule that contradicts
   * itself (valid until before valid from, a seat range ending before it starts) is 400 invalid_rule;
   * `is_default` moves the show's default to it. At most MAX_LISTS lists (409 too_many_lists).
   */
  async createCheckInList(showId: string, input: {
    name: string; kinds?: string[] | undefined; seats?: SeatRange[] | undefined; allow_multiple_entries?: boolean | undefined; allow_entry_after_exit?: boolean | undefined;
    valid_from?: string | undefined; valid_until?: string | undefined; devices?: string[] | undefined; is_default?: boolean | undefined;
  }): Promise<CheckInList> {
    const list: CheckInList = {
      id: randomId('cl_'),
      show_id: showId,
      name: input.name,
      kinds: input.kinds ?? null,
      seats: input.seats ?? null,
      allow_multiple_entries: input.allow_multiple_entries ?? false,
      allow_entry_after_exit: input.allow_entry_after_exit ?? true,
      valid_from: input.valid_from ? iso(Date.parse(input.valid_from)) : null,
      valid_until: input.valid_until ? iso(Date.parse(input.valid_until)) : null,
      devices: input.devices ?? [],
      is_default: input.is_default ?? false,
      created_at: iso(this.clock.now()),
    };
    const bad = contradiction(list);
    if (bad) throw new AppError('invalid', 'invalid_rule', bad.message, { field: bad.field });
    return this.store.update([K.show(showId), K.showLists(showId)], ([show, raw]) => {
      if (!shows.decode(show)) throw notFound('show_not_found', `no show ${showId}`);
      const stored = storedLists(raw);
      if (stored.filter((l) => l.id !== 'main').length >= MAX_LISTS - 1) throw conflict('too_many_lists', `a show has at most ${MAX_LISTS} check-in lists`, { max: MAX_LISTS });
      const all = showLists(showId, stored);
      // the main list is stored once another list takes the default, so it keeps its rules but not the default
      const kept = list.is_default ? all.map((l) => ({ ...l, is_default: false })) : stored;
      const next = [...kept, list];
      return { writes: [{ op: 'set', key: K.showLists(showId), value: checkInLists.encode({ lists: next }) }] as Write[], result: list };
    });
  }

  /** People inside now: the show's (on any list) and each list's, read from the counters the scans move. */
  async door(showId: string) {
    const { lists, default_list_id } = await this.checkInLists(showId);
    const values = await this.store.getMany([K.showInside(showId), ...lists.map((l) => K.listInside(showId, l.id))]);
    const n = (v: unknown) => (typeof v === 'number' ? v : 0);
    return {
      show_id: showId,
      default_list_id,
      inside: n(values[0]),
      lists: lists.map((l, i) => ({ id: l.id, name: l.name, inside: n(values[i + 1]) })),
    };
  }

  /** Undoes a scan (staff, with a reason): see CheckIns.revert. */
  async revertScan(input: Parameters<CheckIns['revert']>[0]) {
    return this.checkins.revert(input);
  }

  /** Successful check-ins, newest first. */
  recentCheckIns(limit: number): Promise<CheckInEvent[]> {
    return this.checkins.recentCheckIns(limit);
  }

  /** Audit entries (every attempt), newest first; of one reservation, or of one show's tickets, when given. */
  auditLog(opts: { limit: number; reservation_id?: string | undefined; show_id?: string | undefined }): Promise<AuditEntry[]> {
    return this.checkins.auditLog(opts);
  }

  private publish(topic: string, message: unknown): void {
    this.bus.emit(topic, message as Json);
  }
}
