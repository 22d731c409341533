import { partitionKey, partitionKeyFor, partitionOf } from '../store/port.js';

/**
 * Store keys of mobile ticketing. One place, so the layout is easy to read and to migrate.
 *
 * Two layouts (docs/partitions.md). A show created since the partitions is one aggregate: its
 * reservations, seats, counters, lists, audit trails and offline scans are all `ticket:show:<id>:...`
 * (`S` below), so a booking, a cancel, a check-in or an undo is one update of one partition; the
 * lists across shows (shows, reservations, every attempt, check-ins, conflicts) are one per
 * partition, written beside the show and merged on read. A show created before (no
 * `ticket:show:<id>:partitioned` marker) keeps the global layout (`K`), read and written as before
 * (one Redis only). The pointers from a code or a reservation id to the show are written before the
 * booking, on their own (`K.code`, `K.ridShow`).
 */
const P = 'ticket:';

export const K = {
  /** Show record: id, name, venue, date, created_at. */
  show: (id: string) => `${P}show:${id}`,
  /** The show's check-in lists (CheckInList[]; the main list is implicit until stored). */
  showLists: (showId: string) => `${P}show:${showId}:lists`,
  /** People inside: of the show (on any list), and of one list (integers, added to in the scan's update). */
  showInside: (showId: string) => `${P}show:${showId}:inside`,
  listInside: (showId: string, listId: string) => `${P}show:${showId}:list:${listId}:inside`,
  /** Index of every show, score = creation time. */
  shows: `${P}shows`,
  /** Reservation record (the ticket): see ReservationRecord. */
  reservation: (id: string) => `${P}reservation:${id}`,
  /** Index of every reservation, score = creation time. */
  reservations: `${P}reservations`,
  /** Index of one show's reservations (cancelled ones included), score = creation time; written with the booking. */
  showReservations: (showId: string) => `${P}show-reservations:${showId}`,
  /**
   * Marker: the show's reservation index holds every reservation of the show. Written at creation;
   * a show created before the index gets it (and its index) from one pass over every reservation.
   */
  showIndexed: (showId: string) => `${P}show-indexed:${showId}`,
  /** Capped list of check-in attempts on one show's tickets, oldest first (written with the attempt). */
  showAudit: (showId: string) => `${P}audit-show:${showId}`,
  /**
   * Ticket code -> reservation id (global layout: written once, with the reservation); or
   * `{show_id, id}` (a show's layout: written once, before the booking, on its own).
   */
  code: (code: string) => `${P}code:${code}`,
  /** Reservation id -> its show's id (a show's layout: written before the booking, on its own). */
  ridShow: (id: string) => `${P}rid:${id}`,
  /** Marker: the show keeps the show's layout (`S`). Written at creation. */
  showPartitioned: (showId: string) => `${P}show:${showId}:partitioned`,
  /** Seat of a show -> reservation id holding it (freed on cancel). */
  seat: (showId: string, seat: string) => `${P}seat:${showId}:${seat}`,
  /** Capped list of every check-in attempt, oldest first (AuditEntry). */
  audit: `${P}audit`,
  /** Capped list of one reservation's check-in attempts. */
  reservationAudit: (id: string) => `${P}audit:${id}`,
  /** Capped list of successful check-ins, oldest first (CheckInEvent). */
  checkins: `${P}checkins`,
  /** Door counters of one show (integers, added to in the update that changes a ticket). */
  count: (showId: string, what: 'tickets' | 'checked_in' | 'cancelled') => `${P}count:${showId}:${what}`,
  /** Capped list of offline-scan conflicts, oldest first (OfflineConflict); and of one show's. */
  conflicts: `${P}conflicts`,
  showConflicts: (showId: string) => `${P}conflicts-show:${showId}`,
  /** One settled offline scan of a device (its result), so a re-sent scan is settled once. */
  offlineScan: (device: string, id: string) => `${P}offline-scan:${device}:${id}`,
  /** The Ed25519 key pair that signs the offline check-in lists (made once, on first use). */
  listSigningKey: `${P}list-signing-key`,
} as const;

/** The keys of a show created since the partitions: all in the show's aggregate, or per partition beside it. */
export const S = {
  reservation: (showId: string, id: string) => `${P}show:${showId}:res:${id}`,
  reservationAudit: (showId: string, id: string) => `${P}show:${showId}:res:${id}:audit`,
  seat: (showId: string, seat: string) => `${P}show:${showId}:seat:${seat}`,
  count: (showId: string, what: 'tickets' | 'checked_in' | 'cancelled') => `${P}show:${showId}:count:${what}`,
  showReservations: (showId: string) => `${P}show:${showId}:reservations`,
  showAudit: (showId: string) => `${P}show:${showId}:audit`,
  showConflicts: (showId: string) => `${P}show:${showId}:conflicts`,
  offlineScan: (showId: string, device: string, id: string) => `${P}show:${showId}:offline-scan:${device}:${id}`,
  /** The lists across shows, in the partition of the show (`ticket:audit:{#p}` ...). */
  shows: (showId: string) => partitionKeyFor(K.shows, K.show(showId)),
  reservations: (showId: string) => partitionKeyFor(K.reservations, K.show(showId)),
  audit: (showId: string) => partitionKeyFor(K.audit, K.show(showId)),
  checkins: (showId: string) => partitionKeyFor(K.checkins, K.show(showId)),
  conflicts: (showId: string) => partitionKeyFor(K.conflicts, K.show(showId)),
} as const;

/**
 * Attempts that name no ticket (an unknown code or id, a malformed code, a rate-limited try) have no
 * show: they go to one partition's audit list (that of the global list's name), an unknown code's
 * offline scan record beside it, so they keep their order.
 */
const NO_TICKET = partitionOf(K.audit);
export const NT = {
  audit: partitionKey(K.audit, NO_TICKET),
  offlineScan: (device: string, id: string) => partitionKey(`${P}offline-scan:${device}:${id}`, NO_TICKET),
} as const;

export type Layout = 'show' | 'global';

/** The keys of one show's tickets in its layout (the same names for both). */
export interface ShowKeys {
  layout: Layout;
  reservation(id: string): string;
  reservationAudit(id: string): string;
  seat(seat: string): string;
  count(what: 'tickets' | 'checked_in' | 'cancelled'): string;
  showReservations: string;
  showAudit: string;
  showConflicts: string;
  offlineScan(device: string, id: string): string;
  reservations: string;
  audit: string;
  checkins: string;
  conflicts: string;
}

export function showKeys(showId: string, layout: Layout): ShowKeys {
  if (layout === 'show') {
    return {
      layout,
      reservation: (id) => S.reservation(showId, id),
      reservationAudit: (id) => S.reservationAudit(showId, id),
      seat: (seat) => S.seat(showId, seat),
      count: (what) => S.count(showId, what),
      showReservations: S.showReservations(showId),
      showAudit: S.showAudit(showId),
      showConflicts: S.showConflicts(showId),
      offlineScan: (device, id) => S.offlineScan(showId, device, id),
      reservations: S.reservations(showId),
      audit: S.audit(showId),
      checkins: S.checkins(showId),
      conflicts: S.conflicts(showId),
    };
  }
  return {
    layout,
    reservation: (id) => K.reservation(id),
    reservationAudit: (id) => K.reservationAudit(id),
    seat: (seat) => K.seat(showId, seat),
    count: (what) => K.count(showId, what),
    showReservations: K.showReservations(showId),
    showAudit: K.showAudit(showId),
    showConflicts: K.showConflicts(showId),
    offlineScan: (device, id) => K.offlineScan(device, id),
    reservations: K.reservations,
    audit: K.audit,
    checkins: K.checkins,
    conflicts: K.conflicts,
  };
}

export const AUDIT_CAP = 100_000;
export const RESERVATION_AUDIT_CAP = 1_000;
export const CHECKINS_CAP = 10_000;
export const SHOW_AUDIT_CAP = 10_000;
export const CONFLICTS_CAP = 10_000;
export const SHOW_CONFLICTS_CAP = 10_000;
/** How long the hub remembers a settled offline scan (a device re-sending it later gets its result). */
export const OFFLINE_SCAN_TTL_MS = 30 * 24 * 3600_000;
