import type { Bus } from '../bus.js';
import type { Clock } from '../clock.js';
import { conflict, notFound } from '../errors.js';
import { decodeList } from '../store/codec.js';
import type { Store, Write } from '../store/port.js';
import { AUDIT_CAP, CHECKINS_CAP, CONFLICTS_CAP, K, OFFLINE_SCAN_TTL_MS, RESERVATION_AUDIT_CAP, SHOW_AUDIT_CAP, SHOW_CONFLICTS_CAP } from './keys.js';
import {
  auditEntries,
  brief,
  CHECKIN_TOPIC,
  checkInEvent,
  checkInEvents,
  DEFAULT_SCANNER,
  iso,
  offlineConflicts,
  offlineResults,
  reservations,
  ticketCodes,
  ticketTopic,
  type AttemptResult,
  type AuditEntry,
  type CheckInEvent,
  type CheckInInput,
  type CheckInMark,
  type OfflineConflict,
  type OfflineResult,
  type OfflineScan,
  type ReservationRecord,
} from './records.js';

type Outcome =
  | { kind: 'ok'; r: ReservationRecord; mark: CheckInMark; replayed: boolean }
  | { kind: 'already_redeemed'; r: ReservationRecord }
  | { kind: 'canceled'; r: ReservationRecord }
  | { kind: 'invalid' }
  | { kind: 'conflict'; r: ReservationRecord; conflict: OfflineConflict }
  /** An offline scan settled before (a re-sent batch): its first result, nothing written. */
  | { kind: 'settled'; result: OfflineResult };

/** Check-in (pretix's model): the one atomic transition, its audit trail and the lists. */
export class CheckIns {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly bus: Bus,
  ) {}

  /** POST /api/checkin: by ticket code. */
  async checkInByCode(code: string, input: CheckInInput) {
    const id = ticketCodes.decode(await this.store.get(K.code(code)));
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
    const outcome = await this.decide(id, code, via, input);
    switch (outcome.kind) {
      case 'invalid': {
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
        const m = outcome.mark;
        return {
          status: 'ok' as const,
          replayed: outcome.replayed,
          ticket: brief(outcome.r),
          checkin: { at: m.at, scanner: m.scanner, gate: m.gate, nonce: m.nonce },
        };
      }
      default:
        throw new Error(`unexpected check-in outcome ${outcome.kind}`);
    }
  }

  /**
   * An offline scan (docs/ticket.md, "Offline mode"), settled by the same transition as an online
   * check-in, in the same atomic update, which also writes the scan's record (`K.offlineScan`): a
   * re-sent scan gets its first result and writes nothing. The scan's id is its nonce. A ticket
   * already checked in by another scan, or cancelled, is not admitted twice: the scan becomes a
   * conflict, kept in the audit (result `conflict`) and the conflict lists, with both scans.
   */
  async settleOffline(scan: OfflineScan, input: CheckInInput & { device: string }): Promise<OfflineResult> {
    const id = ticketCodes.decode(await this.store.get(K.code(scan.code)));
    const outcome = await this.decide(id, scan.code, 'code', { ...input, nonce: scan.id, source: scan.source }, scan);
    switch (outcome.kind) {
      case 'settled':
        return { ...outcome.result, replayed: true };
      case 'ok':
        return { id: scan.id, result: 'ok', replayed: outcome.replayed, ticket: brief(outcome.r), checkin: { at: outcome.mark.at, scanner: outcome.mark.scanner, gate: outcome.mark.gate } };
      case 'conflict':
        return { id: scan.id, result: 'conflict', replayed: false, ticket: brief(outcome.r), conflict: outcome.conflict };
      default:
        return { id: scan.id, result: 'invalid', replayed: false };
    }
  }

  /** Conflicts of offline scans, newest first; of one show's tickets when given. */
  async conflicts(opts: { limit: number; show_id?: string | undefined }): Promise<OfflineConflict[]> {
    const key = opts.show_id ? K.showConflicts(opts.show_id) : K.conflicts;
    return decodeList(offlineConflicts, await this.store.range(key, -opts.limit, -1)).reverse();
  }

  /** The one transition behind both check-in routes and offline scans; audits every attempt. */
  private async decide(id: string | undefined, code: string | null, via: 'code' | 'id', input: CheckInInput & { device?: string }, offline?: OfflineScan): Promise<Outcome> {
    const now = this.clock.now();
    // an offline scan counts from when the door scanned it (never later than its arrival)
    const at = offline ? Math.min(Date.parse(offline.scanned_at), now) : now;
    const mark: CheckInMark = {
      at: iso(at),
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
      ...(offline ? { offline: { id: offline.id, scanned_at: offline.scanned_at, received_at: iso(now) } } : {}),
    });
    const scanKey = offline ? K.offlineScan(input.device ?? 'unknown', offline.id) : undefined;
    /** The offline scan's record, written with its outcome so a re-sent scan is settled once. */
    const settled = (result: OfflineResult): Write[] => (scanKey ? [{ op: 'set', key: scanKey, value: offlineResults.encode(result), ttlMs: OFFLINE_SCAN_TTL_MS }] : []);

    let outcome: Outcome = { kind: 'invalid' };
    if (id !== undefined) {
      outcome = await this.store.update([K.reservation(id), ...(scanKey ? [scanKey] : [])], ([cur, prior]): { writes: Write[]; result: Outcome } => {
        const settledBefore = offlineResults.decode(prior);
        if (settledBefore) return { writes: [], result: { kind: 'settled', result: settledBefore } };
        if (!cur) return { writes: [], result: { kind: 'invalid' } };
        const r = reservations.decode(cur)!;
        const audit = (e: AuditEntry): Write[] => [
          { op: 'push', key: K.audit, value: auditEntries.encode(e), cap: AUDIT_CAP },
          { op: 'push', key: K.reservationAudit(r.id), value: auditEntries.encode(e), cap: RESERVATION_AUDIT_CAP },
          { op: 'push', key: K.showAudit(r.show_id), value: auditEntries.encode(e), cap: SHOW_AUDIT_CAP },
        ];
        const replay = r.status === 'checked_in' && mark.nonce !== null && r.checkin?.nonce === mark.nonce;
        if (offline && r.status !== 'entry_allowed' && !replay) {
          // admitted at an offline door although already in (or cancelled): a conflict for staff
          const reason = r.status === 'cancelled' ? 'canceled' : 'already_redeemed';
          const first = r.checkin ? { at: r.checkin.at, scanner: r.checkin.scanner, gate: r.checkin.gate, offline: r.checkin.offline === true } : null;
          const c: OfflineConflict = {
            at: mark.at, received_at: iso(now), reason, code: r.code, reservation_id: r.id, show_id: r.show_id, seat: r.seat,
            scanner: mark.scanner, gate: mark.gate, offline_id: offline.id, client: input.client ?? null,
            first_checkin: first, cancelled_at: r.cancelled_at,
          };
          const result: OfflineResult = { id: offline.id, result: 'conflict', replayed: false, ticket: brief(r), conflict: c };
          return {
            writes: [
              ...audit({ ...entry('conflict', r), conflict: { reason, first_checkin: first } }),
              { op: 'push', key: K.conflicts, value: offlineConflicts.encode(c), cap: CONFLICTS_CAP },
              { op: 'push', key: K.showConflicts(r.show_id), value: offlineConflicts.encode(c), cap: SHOW_CONFLICTS_CAP },
              ...settled(result),
            ],
            result: { kind: 'conflict', r, conflict: c },
          };
        }
        if (r.status === 'cancelled') return { writes: audit(entry('canceled', r)), result: { kind: 'canceled', r } };
        if (r.status === 'checked_in') {
          if (replay) {
            const m = r.checkin!;
            const again: Write[] = offline ? settled({ id: offline.id, result: 'ok', replayed: false, ticket: brief(r), checkin: { at: m.at, scanner: m.scanner, gate: m.gate } }) : [];
            return { writes: [...audit(entry('ok', r, true)), ...again], result: { kind: 'ok', r, mark: m, replayed: true } };
          }
          return { writes: audit(entry('already_redeemed', r)), result: { kind: 'already_redeemed', r } };
        }
        const kept: CheckInMark = offline ? { ...mark, offline: true } : mark;
        const next: ReservationRecord = { ...r, status: 'checked_in', checkin: kept };
        const event = checkInEvent(next, mark);
        const done: OfflineResult | undefined = offline && { id: offline.id, result: 'ok', replayed: false, ticket: brief(next), checkin: { at: mark.at, scanner: mark.scanner, gate: mark.gate } };
        return {
          writes: [
            { op: 'set', key: K.reservation(r.id), value: reservations.encode(next) },
            ...audit(entry('ok', next)),
            { op: 'push', key: K.checkins, value: checkInEvents.encode(event), cap: CHECKINS_CAP },
            { op: 'incr', key: K.count(r.show_id, 'checked_in'), by: 1 },
            ...(done ? settled(done) : []),
          ],
          result: { kind: 'ok', r: next, mark, replayed: false },
        };
      });
    }

    if (outcome.kind === 'invalid') {
      if (!scanKey) await this.store.push(K.audit, auditEntries.encode(entry('invalid')), AUDIT_CAP);
      else {
        // an unknown code sent as an offline scan: audited once, however often it is re-sent
        const result: OfflineResult = { id: offline!.id, result: 'invalid', replayed: false };
        outcome = await this.store.update([scanKey], ([prior]): { writes: Write[]; result: Outcome } => {
          const settledBefore = offlineResults.decode(prior);
          return settledBefore
            ? { writes: [], result: { kind: 'settled', result: settledBefore } }
            : { writes: [{ op: 'push', key: K.audit, value: auditEntries.encode(entry('invalid')), cap: AUDIT_CAP }, ...settled(result)], result: { kind: 'invalid' } };
        });
      }
    }
    if (outcome.kind === 'ok' && !outcome.replayed) {
      const event = checkInEvent(outcome.r, outcome.mark);
      this.bus.emit(CHECKIN_TOPIC, checkInEvents.encode(event));
      this.bus.emit(ticketTopic(outcome.r.code), checkInEvents.encode(event));
    }
    return outcome;
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

  /** Audit entries (every attempt), newest first; of one reservation, or of one show's tickets, when given. */
  async auditLog(opts: { limit: number; reservation_id?: string | undefined; show_id?: string | undefined }): Promise<AuditEntry[]> {
    const key = opts.reservation_id ? K.reservationAudit(opts.reservation_id) : opts.show_id ? K.showAudit(opts.show_id) : K.audit;
    return (await this.store.range(key, -opts.limit, -1)).map((v) => auditEntries.decode(v)!).reverse();
  }
}
