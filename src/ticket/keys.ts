/** Store keys of mobile ticketing. One place, so the layout is easy to read and to migrate. */
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
  /** Ticket code -> reservation id (written once, with the reservation). */
  code: (code: string) => `${P}code:${code}`,
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

export const AUDIT_CAP = 100_000;
export const RESERVATION_AUDIT_CAP = 1_000;
export const CHECKINS_CAP = 10_000;
export const SHOW_AUDIT_CAP = 10_000;
export const CONFLICTS_CAP = 10_000;
export const SHOW_CONFLICTS_CAP = 10_000;
/** How long the hub remembers a settled offline scan (a device re-sending it later gets its result). */
export const OFFLINE_SCAN_TTL_MS = 30 * 24 * 3600_000;
