/** Store keys of mobile ticketing. One place, so the layout is easy to read and to migrate. */
const P = 'ticket:';

export const K = {
  /** Show record: id, name, venue, date, created_at. */
  show: (id: string) => `${P}show:${id}`,
  /** Index of every show, score = creation time. */
  shows: `${P}shows`,
  /** Reservation record (the ticket): see ReservationRecord. */
  reservation: (id: string) => `${P}reservation:${id}`,
  /** Index of every reservation, score = creation time. */
  reservations: `${P}reservations`,
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
} as const;

export const AUDIT_CAP = 100_000;
export const RESERVATION_AUDIT_CAP = 1_000;
export const CHECKINS_CAP = 10_000;
