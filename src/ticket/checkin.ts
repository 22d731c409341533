import type { Bus } from '../bus.js';
import type { Clock } from '../clock.js';
import { conflict, notFound } from '../errors.js';
import type { Store, Write } from '../store/port.js';
import { AUDIT_CAP, CHECKINS_CAP, K, RESERVATION_AUDIT_CAP } from './keys.js';
import {
  auditEntries,
  brief,
  CHECKIN_TOPIC,
  checkInEvent,
  checkInEvents,
  DEFAULT_SCANNER,
  iso,
  reservations,
  ticketTopic,
  type AttemptResult,
  type AuditEntry,
  type CheckInEvent,
  type CheckInInput,
  type CheckInMark,
  type ReservationRecord,
} from './records.js';

type Outcome =
  | { kind: 'ok'; r: ReservationRecord; mark: CheckInMark; replayed: boolean }
  | { kind: 'already_redeemed'; r: ReservationRecord }
  | { kind: 'canceled'; r: ReservationRecord }
  | { kind: 'invalid' };

/** Check-in (pretix's model): the one atomic transition, its audit trail and the lists. */
export class CheckIns {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly bus: Bus,
  ) {}

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
        const r = reservations.decode(cur)!;
        const audit = (e: AuditEntry): Write[] => [
          { op: 'push', key: K.audit, value: auditEntries.encode(e), cap: AUDIT_CAP },
          { op: 'push', key: K.reservationAudit(r.id), value: auditEntries.encode(e), cap: RESERVATION_AUDIT_CAP },
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
            { op: 'set', key: K.reservation(r.id), value: reservations.encode(next) },
            ...audit(entry('ok', next)),
            { op: 'push', key: K.checkins, value: checkInEvents.encode(event), cap: CHECKINS_CAP },
            { op: 'incr', key: K.count(r.show_id, 'checked_in'), by: 1 },
          ],
          result: { kind: 'ok', r: next, mark, replayed: false },
        };
      });
    }

    switch (outcome.kind) {
      case 'invalid': {
        await this.store.push(K.audit, auditEntries.encode(entry('invalid')), AUDIT_CAP);
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
          this.bus.emit(CHECKIN_TOPIC, checkInEvents.encode(event));
          this.bus.emit(ticketTopic(outcome.r.code), checkInEvents.encode(event));
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
    await this.store.push(K.audit, auditEntries.encode(e), AUDIT_CAP);
  }

  /** Successful check-ins, newest first. */
  async recentCheckIns(limit: number): Promise<CheckInEvent[]> {
    return (await this.store.range(K.checkins, -limit, -1)).map((v) => checkInEvents.decode(v)!).reverse();
  }

  /** Audit entries (every attempt), newest first; of one reservation when given. */
  async auditLog(opts: { limit: number; reservation_id?: string | undefined }): Promise<AuditEntry[]> {
    const key = opts.reservation_id ? K.reservationAudit(opts.reservation_id) : K.audit;
    return (await this.store.range(key, -opts.limit, -1)).map((v) => auditEntries.decode(v)!).reverse();
  }
}
