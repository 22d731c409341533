import { codec } from '../store/codec.js';
import type { CheckInMark, DoorScan, ReservationRecord, ScanType } from './records.js';

/**
 * The door (pretix's check-in lists): a show has several lists (main gate, VIP, backstage, one per
 * day), each admitting some of the show's tickets (by seat range or ticket kind) under its own
 * rules, and each ticket keeps, per list, the scans made on it (entries and exits, reverted ones
 * marked). Everything here is pure: the rules are applied inside the ticket's atomic update
 * (src/ticket/checkin.ts), so they hold across processes and for offline uploads alike.
 */

/** Every show has this list, implicitly: the one old scanners (a body with `code` only) check in on. */
export const MAIN_LIST_ID = 'main';
export const LIST_ID_RE = /^(main|cl_[A-Za-z0-9_-]{10})$/;
/** At most this many lists per show, and scans kept per ticket and list (oldest dropped first). */
export const MAX_LISTS = 20;
export const MAX_SCANS_PER_LIST = 50;

export interface SeatRange {
  from: string;
  to: string;
}

export interface CheckInList {
  id: string;
  show_id: string;
  name: string;
  /** Which tickets the list admits: null = every kind / every seat; both given = both must match. */
  kinds: string[] | null;
  seats: SeatRange[] | null;
  /** pretix: a ticket may enter again while it is inside (no exit between). */
  allow_multiple_entries: boolean;
  /** pretix: a ticket may enter again after an exit scan. */
  allow_entry_after_exit: boolean;
  valid_from: string | null;
  valid_until: string | null;
  /** Scanner devices (ids) that may scan on this list; empty = any scanner device. Staff always may. */
  devices: string[];
  /** The show's default list: where a scan that names no list goes. */
  is_default: boolean;
  created_at: string | null;
}

export type { DoorScan, ScanType } from './records.js';

/** A show's stored lists: `{lists: CheckInList[]}`. */
export const checkInLists = codec<{ lists: CheckInList[] }>('check-in lists', {
  fields: { lists: (v) => Array.isArray(v) && v.every((l) => l !== null && typeof l === 'object' && typeof (l as { id?: unknown }).id === 'string') },
});
export const storedLists = (raw: Parameters<typeof checkInLists.decode>[0]) => checkInLists.decode(raw)?.lists ?? [];

/** The implicit main list: admits every ticket, pretix's default rules (one entry; re-entry after an exit). */
export function mainList(showId: string, isDefault: boolean): CheckInList {
  return {
    id: MAIN_LIST_ID,
    show_id: showId,
    name: '정문 · Main',
    kinds: null,
    seats: null,
    allow_multiple_entries: false,
    allow_entry_after_exit: true,
    valid_from: null,
    valid_until: null,
    devices: [],
    is_default: isDefault,
    created_at: null,
  };
}

/** The show's lists as stored, with the main list first (implicit unless stored) and exactly one default. */
export function showLists(showId: string, stored: CheckInList[]): CheckInList[] {
  const hasDefault = stored.some((l) => l.is_default);
  const main = stored.find((l) => l.id === MAIN_LIST_ID) ?? mainList(showId, !hasDefault);
  return [main, ...stored.filter((l) => l.id !== MAIN_LIST_ID)];
}

export const defaultList = (lists: CheckInList[]) => lists.find((l) => l.is_default) ?? lists[0]!;

const natural = new Intl.Collator('en', { numeric: true, sensitivity: 'base' });
/** Seats compare in natural order, letters ignoring case ("A-9" < "A-10" < "B-1"). */
export const compareSeats = (a: string, b: string) => natural.compare(a, b);

/** The ticket kind when booking named none. */
export const DEFAULT_KIND = 'standard';

export function admits(list: CheckInList, r: Pick<ReservationRecord, 'seat'> & { kind?: string | undefined }): boolean {
  if (list.kinds && !list.kinds.includes(r.kind ?? DEFAULT_KIND)) return false;
  if (list.seats && !list.seats.some((s) => compareSeats(s.from, r.seat) <= 0 && compareSeats(r.seat, s.to) <= 0)) return false;
  return true;
}

/** Within the list's validity at `at` (ms); `before` / `after` say which side it fell off. */
export function validity(list: CheckInList, at: number): 'ok' | 'before' | 'after' {
  if (list.valid_from !== null && at < Date.parse(list.valid_from)) return 'before';
  if (list.valid_until !== null && at > Date.parse(list.valid_until)) return 'after';
  return 'ok';
}

/** A rule that contradicts itself, or null: valid until before valid from; a seat range ending before it starts. */
export function contradiction(l: Pick<CheckInList, 'valid_from' | 'valid_until' | 'seats'>): { field: string; message: string } | null {
  if (l.valid_from !== null && l.valid_until !== null && Date.parse(l.valid_until) < Date.parse(l.valid_from)) {
    return { field: 'valid_until', message: `valid_until ${l.valid_until} is before valid_from ${l.valid_from}` };
  }
  for (const [i, s] of (l.seats ?? []).entries()) {
    if (compareSeats(s.from, s.to) > 0) return { field: `seats.${i}`, message: `seat range ${s.from}..${s.to} ends before it starts` };
  }
  return null;
}

/** The scans of a ticket per list. A ticket checked in before lists existed has its one check-in on the main list. */
export function doorOf(r: ReservationRecord): Record<string, DoorScan[]> {
  if (r.door) return r.door;
  if (r.checkin) return { [MAIN_LIST_ID]: [{ ...r.checkin, id: `legacy-${r.id}`, type: 'entry', list_id: MAIN_LIST_ID }] };
  return {};
}

const live = (scans: DoorScan[] | undefined) => (scans ?? []).filter((s) => !s.reverted);

/** Inside on a list: its last scan that stands is an entry. */
export const insideOn = (scans: DoorScan[] | undefined) => live(scans).at(-1)?.type === 'entry';
export const insideAny = (door: Record<string, DoorScan[]>) => Object.values(door).some(insideOn);
/** The first entry that stands, over every list (the ticket's check-in), or null. */
export function firstEntry(door: Record<string, DoorScan[]>): DoorScan | null {
  let first: DoorScan | null = null;
  for (const scans of Object.values(door)) {
    const e = live(scans).find((s) => s.type === 'entry');
    if (e && (!first || e.at < first.at)) first = e;
  }
  return first;
}

export type EntryVerdict = 'ok' | 'already_redeemed' | 'product' | 'invalid_time';

/**
 * pretix's entry rule on one list: a ticket not admitted by the list is `product`; outside the
 * validity `invalid_time`; with no entry that stands, admitted; else admitted again only if the list
 * allows multiple entries, or allows entry after exit and the ticket's last scan is an exit.
 */
export function entryVerdict(list: CheckInList, r: ReservationRecord, at: number): EntryVerdict {
  if (!admits(list, r)) return 'product';
  if (validity(list, at) !== 'ok') return 'invalid_time';
  const scans = live(doorOf(r)[list.id]);
  if (!scans.some((s) => s.type === 'entry')) return 'ok';
  if (list.allow_multiple_entries) return 'ok';
  if (list.allow_entry_after_exit && scans.at(-1)!.type === 'exit') return 'ok';
  return 'already_redeemed';
}

/** The scan on this list that a retry with `nonce` repeats, if it stands. */
export function replayOf(r: ReservationRecord, listId: string, type: ScanType, nonce: string | null): DoorScan | undefined {
  if (nonce === null) return undefined;
  return live(doorOf(r)[listId]).find((s) => s.nonce === nonce && s.type === type);
}

/** Where a scan id is found on a ticket: the scan, the undo that reverted it, or nothing. */
export function findScan(r: ReservationRecord, scanId: string): { scan: DoorScan; asUndo: boolean } | undefined {
  for (const scans of Object.values(doorOf(r))) {
    for (const s of scans) {
      if (s.id === scanId) return { scan: s, asUndo: false };
      if (s.reverted?.id === scanId) return { scan: s, asUndo: true };
    }
  }
  return undefined;
}

/** The changes of the door counters between two states of a ticket (per list inside, show inside, checked in). */
export function doorDelta(before: Record<string, DoorScan[]>, after: Record<string, DoorScan[]>) {
  const lists: Record<string, number> = {};
  for (const id of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const d = Number(insideOn(after[id])) - Number(insideOn(before[id]));
    if (d !== 0) lists[id] = d;
  }
  return {
    lists,
    show: Number(insideAny(after)) - Number(insideAny(before)),
    checked_in: Number(firstEntry(after) !== null) - Number(firstEntry(before) !== null),
  };
}

/** Appends a scan, keeping the last MAX_SCANS_PER_LIST of the list. */
export function withScan(door: Record<string, DoorScan[]>, scan: DoorScan): Record<string, DoorScan[]> {
  return { ...door, [scan.list_id]: [...(door[scan.list_id] ?? []), scan].slice(-MAX_SCANS_PER_LIST) };
}

export function withRevert(door: Record<string, DoorScan[]>, listId: string, scanId: string, reverted: NonNullable<DoorScan['reverted']>) {
  return { ...door, [listId]: (door[listId] ?? []).map((s) => (s.id === scanId ? { ...s, reverted } : s)) };
}

/** The first entry on one list that stands. */
export const firstOn = (scans: DoorScan[] | undefined) => live(scans).find((s) => s.type === 'entry') ?? null;

/** The ticket after its scans changed: checked in while some entry stands (its first is the check-in), else entry allowed. */
export function withDoor(r: ReservationRecord, door: Record<string, DoorScan[]>): ReservationRecord {
  const first = firstEntry(door);
  const checkin: CheckInMark | null = first
    ? { at: first.at, scanner: first.scanner, gate: first.gate, nonce: first.nonce, source: first.source, ...(first.offline ? { offline: true } : {}) }
    : null;
  return { ...r, door, checkin, status: r.status === 'cancelled' ? 'cancelled' : first ? 'checked_in' : 'entry_allowed' };
}

/** Bus topic of one show's door: entries, exits and undos, for the scanners and the back office. */
export const doorTopic = (showId: string) => `door:${showId}`;

export function scanView(s: DoorScan) {
  return { id: s.id, type: s.type, list_id: s.list_id, at: s.at, scanner: s.scanner, gate: s.gate, reverted: s.reverted ?? null };
}

/** What a door event says: the scan (or the undo: `reverted` set) and the ticket's seat; the counters are read anew. */
export function doorEvent(r: ReservationRecord, s: DoorScan, listId: string) {
  return {
    type: s.reverted ? ('revert' as const) : s.type,
    show_id: r.show_id,
    list_id: listId,
    reservation_id: r.id,
    code: r.code,
    seat: r.seat,
    scan: scanView(s),
    status: r.status,
  };
}
