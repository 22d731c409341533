import { randomBytes } from 'node:crypto';
import { codec, F, plain, optional } from '../store/codec.js';
import type { BingoCard } from './bingo.js';

/**
 * The records of ticketing as they are stored (shows, reservations, the check-in list and the
 * audit), their codecs, and the small views the check-in answers and events carry.
 */

/** Bus topic of every successful check-in: all open scanner pages listen. */
export const CHECKIN_TOPIC = 'checkins';
/** Bus topic of one ticket's changes (`mticket:TK-...`): the holder's ticket page listens. */
export const ticketTopic = (code: string) => `mticket:${code}`;

/** The document's three states: entry allowed, checked in, cancelled. */
export type TicketStatus = 'entry_allowed' | 'checked_in' | 'cancelled';
/** How the code reached the server: a camera scan, typed by staff, or another system by id. */
export type CheckInSource = 'camera' | 'manual' | 'api';
/** Audit results: pretix's answers, plus the two refusals that happen before a ticket is looked up. */
export type AttemptResult =
  | 'ok' | 'already_redeemed' | 'canceled' | 'invalid' | 'malformed' | 'rate_limited' | 'conflict'
  /** The door's list rules (pretix): not on this list, outside its validity, an exit of a ticket not inside, an undo. */
  | 'product' | 'invalid_time' | 'not_inside' | 'reverted';

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
  /** Set when the check-in was made at a door without network and uploaded later. */
  offline?: boolean;
}

export type ScanType = 'entry' | 'exit';

/** One successful scan of a ticket on a check-in list (src/ticket/door.ts), as the ticket keeps it. */
export interface DoorScan extends CheckInMark {
  id: string;
  type: ScanType;
  list_id: string;
  /** Set by an undo (a new audit entry says who and why; the scan itself stays). */
  reverted?: { id: string; at: string; by: string; reason: string } | undefined;
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
  /** The first entry that stands, on any list (null when none, or every one was undone). */
  checkin: CheckInMark | null;
  /** The ticket kind lists admit by (booking's `kind`; absent = "standard"). */
  kind?: string;
  /** Scans per check-in list (src/ticket/door.ts); absent on tickets never scanned since lists existed. */
  door?: Record<string, DoorScan[]>;
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
  /** An offline scan: its id, when the door scanned it, when the hub received it. */
  offline?: { id: string; scanned_at: string; received_at: string };
  /** The check-in list and the kind of scan (absent on entries older than lists: the main list, an entry). */
  list_id?: string;
  type?: ScanType | 'revert';
  /** The successful scan's id (an undo names it); on an undo, the undo's own id and what it reverts, and why. */
  scan_id?: string;
  reverts?: string;
  reason?: string;
  /** Result `conflict`: why, and the check-in that came first. */
  conflict?: { reason: ConflictReason; first_checkin: OfflineConflict['first_checkin'] };
}

/** One check-in made at a door without network, uploaded later (POST /api/checkin/offline). */
export interface OfflineScan {
  /** Made by the device, unique per scan: the check-in's nonce; a re-sent scan is settled once. */
  id: string;
  code: string;
  /** When the door scanned it (the device's clock). */
  scanned_at: string;
  source: 'camera' | 'manual';
  /** The check-in list it was scanned on (absent: the show's default list). */
  list_id?: string | undefined;
}

/** Why an offline admission stands refused: the hub's answer had it been online (pretix's reasons). */
export type ConflictReason = 'already_redeemed' | 'canceled' | 'product' | 'invalid_time';

/** An offline scan of a ticket that was already in (or cancelled): both scans, for staff. */
export interface OfflineConflict {
  /** When this (the later settled) scan was made, and when it reached the hub. */
  at: string;
  received_at: string;
  reason: ConflictReason;
  code: string;
  reservation_id: string;
  show_id: string;
  seat: string;
  scanner: string;
  gate: string | null;
  offline_id: string;
  client: string | null;
  /** The check-in that stands (null for a ticket cancelled before any check-in). */
  first_checkin: { at: string; scanner: string; gate: string | null; offline: boolean } | null;
  cancelled_at: string | null;
  /** The check-in list the scan was made on (absent on conflicts older than lists: the main list). */
  list_id?: string;
}

/** What the device learns of each offline scan it uploaded. */
export interface OfflineResult {
  id: string;
  result: 'ok' | 'conflict' | 'invalid';
  /** True when this scan had been settled before (the batch was sent again). */
  replayed: boolean;
  ticket?: TicketBrief;
  checkin?: { at: string; scanner: string; gate: string | null };
  conflict?: OfflineConflict;
}

/** A successful check-in as scanner pages see it: the ticket's brief without its status, and the mark. */
export type CheckInEvent = { type: 'checkin' } & Omit<TicketBrief, 'status'> & Omit<CheckInMark, 'nonce'>;

export interface CheckInInput {
  nonce?: string | undefined;
  scanner?: string | undefined;
  gate?: string | undefined;
  source?: CheckInSource | undefined;
  client?: string | undefined;
  /** The check-in list (default: the show's default list) and entry or exit (default: entry). */
  list_id?: string | undefined;
  type?: ScanType | undefined;
  /** The scanning device's id, when a device scans (a list may admit only its own devices). */
  device_id?: string | undefined;
}

export interface BookInput {
  show_id: string;
  seat: string;
  amount_paid: number;
  holder?: string | undefined;
  theme?: string | undefined;
  kind?: string | undefined;
}

export const iso = (ms: number) => new Date(ms).toISOString();
export const randomId = (prefix: string) => prefix + randomBytes(8).toString('base64url').slice(0, 10);
export const DEFAULT_SCANNER = 'unnamed';

export const RESERVATION_ID_RE = /^r_[A-Za-z0-9_-]{10}$/;
export const SHOW_ID_RE = /^s_[A-Za-z0-9_-]{10}$/;

export const shows = codec<ShowRecord>('show', (r) => typeof r.id === 'string' && typeof r.name === 'string');
export const reservations = codec<ReservationRecord>('reservation', (r) => typeof r.id === 'string' && typeof r.code === 'string' && typeof r.status === 'string');
export const auditEntries = codec<AuditEntry>('check-in audit entry', (r) => typeof r.result === 'string' && typeof r.at === 'string');
export const checkInEvents = codec<CheckInEvent>('check-in', (r) => r.type === 'checkin');
/** Ticket code -> reservation id. */
export const ticketCodes = plain<string>('ticket code', F.str);
/** A settled offline scan's result, kept so a re-sent scan gets it again. */
export const offlineResults = codec<OfflineResult>('offline scan result', {
  fields: { id: F.str, result: (v) => v === 'ok' || v === 'conflict' || v === 'invalid', replayed: (v) => typeof v === 'boolean', ticket: optional(F.obj), checkin: optional(F.obj), conflict: optional(F.obj) },
});
export const offlineConflicts = codec<OfflineConflict>('offline-scan conflict', {
  fields: {
    at: F.str, received_at: F.str, reason: (v) => v === 'already_redeemed' || v === 'canceled' || v === 'product' || v === 'invalid_time', code: F.str, reservation_id: F.str, show_id: F.str, seat: F.str,
    scanner: F.str, gate: F.strOrNull, offline_id: F.str, client: F.strOrNull, first_checkin: (v) => v === null || F.obj(v), cancelled_at: optional(F.strOrNull), list_id: optional(F.str),
  },
});

/** The short view of a ticket that check-in answers and events carry. */
export type TicketBrief = { reservation_id: string } & Pick<ReservationRecord, 'code' | 'show_id' | 'show_name' | 'venue' | 'date' | 'seat' | 'status'>;

export function brief(r: ReservationRecord): TicketBrief {
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

/** What the door did with a ticket, and where its page is: the same in a ticket's view and a booking row. */
export function doorState(r: ReservationRecord) {
  return {
    checked_in_at: r.checkin?.at ?? null,
    checked_in_by: r.checkin ? { scanner: r.checkin.scanner, gate: r.checkin.gate } : null,
    cancelled_at: r.cancelled_at,
    page_url: `/mticket/${r.code}`,
  };
}

export function checkInEvent(r: ReservationRecord, m: CheckInMark): CheckInEvent {
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
