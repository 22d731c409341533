import { mergedIndexCount, mergedIndexRange, type Store, type Write } from '../store/port.js';
import { countByScan, type ShowCounts } from './counts.js';
import { K } from './keys.js';
import { across, keysOfShow, keysOfShows } from './locate.js';
import { doorState, reservations, shows, type ReservationRecord, type ShowRecord, type TicketStatus } from './records.js';

/**
 * The back office's lists: shows (newest first, with their door counters) and the bookings of one
 * show (newest first, optionally filtered by holder or seat), both paged by limit and offset.
 */

export interface Page {
  limit: number;
  offset: number;
}

export interface PageInfo extends Page {
  total: number;
}

export type ShowSummary = ShowRecord & { counts: Omit<ShowCounts, 'show_id'> };

/** One booking as the back office lists it. */
export interface BookingRow {
  reservation_id: string;
  code: string;
  seat: string;
  holder: string | null;
  amount_paid: number;
  status: TicketStatus;
  created_at: string;
  checked_in_at: string | null;
  checked_in_by: { scanner: string; gate: string | null } | null;
  cancelled_at: string | null;
  cancel_reason: string | null;
  page_url: string;
}

const BATCH = 500;

export function bookingRow(r: ReservationRecord): BookingRow {
  return {
    reservation_id: r.id,
    code: r.code,
    seat: r.seat,
    holder: r.holder,
    amount_paid: r.amount_paid,
    status: r.status,
    created_at: r.created_at,
    cancel_reason: r.cancel_reason,
    ...doorState(r),
  };
}

/** Shows, newest first, each with its door counters (three store counters; a scan for shows older than them). */
export async function listShows(store: Store, page: Page): Promise<{ shows: ShowSummary[]; page: PageInfo }> {
  // the shows' lists of every partition, and the global one of before them
  const [entries, total] = await Promise.all([
    mergedIndexRange(store, across(K.shows), { reverse: true, limit: page.limit, offset: page.offset }),
    mergedIndexCount(store, across(K.shows)),
  ]);
  const ids = entries.map((e) => e.member);
  const records = await store.getMany(ids.map((id) => K.show(id)));
  const keys = await keysOfShows(store, ids);
  const counters = await store.getMany(keys.flatMap((k) => [k.count('tickets'), k.count('checked_in'), k.count('cancelled')]));
  const out: ShowSummary[] = [];
  for (let i = 0; i < ids.length; i++) {
    const show = shows.decode(records[i]);
    if (!show) continue;
    const [tickets, checkedIn, cancelled] = counters.slice(i * 3, i * 3 + 3);
    const counts =
      typeof tickets === 'number'
        ? { tickets, checked_in: typeof checkedIn === 'number' ? checkedIn : 0, cancelled: typeof cancelled === 'number' ? cancelled : 0 }
        : await countByScan(store, show.id);
    out.push({ ...show, counts: { tickets: counts.tickets, checked_in: counts.checked_in, cancelled: counts.cancelled } });
  }
  return { shows: out, page: { ...page, total } };
}

/**
 * Makes sure the show's reservation index is complete. Shows created since the index existed are
 * marked at creation and every booking writes its entry in the booking's own update. An older show
 * is indexed once: one pass over every reservation finds its own, whose entries are written with
 * the marker. A booking made during the pass writes its own entry, so none is lost; the entries
 * are the same whoever writes them (member = reservation id, score = booking time).
 */
export async function ensureShowIndex(store: Store, showId: string): Promise<void> {
  // a show of its own layout (keys.ts) is indexed from its creation
  const [indexed, partitioned] = await store.getMany([K.showIndexed(showId), K.showPartitioned(showId)]);
  if (indexed !== undefined || partitioned !== undefined) return;
  const entries = await store.indexRange(K.reservations);
  const writes: Write[] = [];
  for (let i = 0; i < entries.length; i += BATCH) {
    const slice = entries.slice(i, i + BATCH);
    const recs = reservations.decodeMany(await store.getMany(slice.map((e) => K.reservation(e.member))));
    recs.forEach((r, j) => {
      if (r?.show_id === showId) writes.push({ op: 'index', key: K.showReservations(showId), member: slice[j]!.member, score: slice[j]!.score });
    });
  }
  writes.push({ op: 'set', key: K.showIndexed(showId), value: 1 });
  await store.update([], () => ({ writes, result: undefined }));
}

const fold = (s: string) => s.normalize('NFC').toLocaleLowerCase('ko-KR');

/**
 * One show's bookings, newest first. Without `q`, one page of the index; with `q` (a piece of the
 * holder's name or of the seat, case-insensitive), the show's bookings are read in batches and the
 * page is cut from the matches, so a filtered list costs one pass over the show.
 */
export async function listBookings(store: Store, showId: string, page: Page & { q?: string | undefined }): Promise<{ tickets: BookingRow[]; page: PageInfo }> {
  await ensureShowIndex(store, showId);
  const k = await keysOfShow(store, showId);
  const key = k.showReservations;
  const info = { limit: page.limit, offset: page.offset };
  if (!page.q) {
    const [entries, total] = await Promise.all([store.indexRange(key, { reverse: true, limit: page.limit, offset: page.offset }), store.indexCount(key)]);
    const recs = await store.getMany(entries.map((e) => k.reservation(e.member)));
    const tickets = recs.map((raw) => reservations.decode(raw)).filter((r): r is ReservationRecord => !!r).map(bookingRow);
    return { tickets, page: { ...info, total } };
  }
  const q = fold(page.q);
  const matches: BookingRow[] = [];
  let total = 0;
  for (let offset = 0; ; offset += BATCH) {
    const entries = await store.indexRange(key, { reverse: true, limit: BATCH, offset });
    if (entries.length === 0) break;
    const recs = await store.getMany(entries.map((e) => k.reservation(e.member)));
    for (const raw of recs) {
      const r = reservations.decode(raw);
      if (!r || !(fold(r.seat).includes(q) || (r.holder !== null && fold(r.holder).includes(q)))) continue;
      if (total >= page.offset && matches.length < page.limit) matches.push(bookingRow(r));
      total++;
    }
    if (entries.length < BATCH) break;
  }
  return { tickets: matches, page: { ...info, total } };
}
