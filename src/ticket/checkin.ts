import type { Bus } from '../bus.js';
import type { Clock } from '../clock.js';
import { AppError, conflict, notFound } from '../errors.js';
import {
  admits,
  checkInLists,
  storedLists,
  defaultList,
  doorOf,
  doorDelta,
  doorEvent,
  doorTopic,
  scanView,
  entryVerdict,
  findScan,
  firstOn,
  insideOn,
  replayOf,
  showLists,
  withDoor,
  withRevert,
  withScan,
  type CheckInList,
  type DoorScan,
  type ScanType,
} from './door.js';
import { decodeList } from '../store/codec.js';
import type { Json, Store, Write } from '../store/port.js';
import { AUDIT_CAP, CHECKINS_CAP, CONFLICTS_CAP, K, NT, OFFLINE_SCAN_TTL_MS, RESERVATION_AUDIT_CAP, SHOW_AUDIT_CAP, SHOW_CONFLICTS_CAP, type ShowKeys } from './keys.js';
import { across, keysOfShow, locateByCode, locateById, newestAcross, type Located } from './locate.js';
import {
  auditEntries,
  brief,
  CHECKIN_TOPIC,
  checkInEvent,
  checkInEvents,
  DEFAULT_SCANNER,
  iso,
  randomId,
  offlineConflicts,
  offlineResults,
  reservations,
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
  | { kind: 'ok'; r: ReservationRecord; mark: CheckInMark; scan: DoorScan; list: CheckInList; replayed: boolean }
  | { kind: 'already_redeemed' | 'canceled' | 'invalid_time' | 'not_inside'; r: ReservationRecord; list: CheckInList }
  | { kind: 'product'; r: ReservationRecord; list: CheckInList | null }
  | { kind: 'device_refused'; list: CheckInList }
  | { kind: 'invalid' }
  | { kind: 'conflict'; r: ReservationRecord; conflict: OfflineConflict }
  /** An offline scan settled before (a re-sent batch): its first result, nothing written. */
  | { kind: 'settled'; result: OfflineResult };

/** The door counters a scan or an undo moves: checked in, people inside the show and on each list. */
function counterWrites(k: ShowKeys, showId: string, delta: ReturnType<typeof doorDelta>): Write[] {
  const w: Write[] = [];
  if (delta.checked_in !== 0) w.push({ op: 'incr', key: k.count('checked_in'), by: delta.checked_in });
  if (delta.show !== 0) w.push({ op: 'incr', key: K.showInside(showId), by: delta.show });
  for (const [listId, by] of Object.entries(delta.lists)) w.push({ op: 'incr', key: K.listInside(showId, listId), by });
  return w;
}

/** Check-in (pretix's model): the one atomic transition, its audit trail and the lists. */
export class CheckIns {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly bus: Bus,
  ) {}

  /** POST /api/checkin: by ticket code. */
  async checkInByCode(code: string, input: CheckInInput) {
    const at = await locateByCode(this.store, code);
    return this.checkIn(at, at?.id, code, 'code', input);
  }

  /** POST /api/tickets/:id/checkin: by reservation id (kept for backward compatibility). */
  async checkInById(id: string, input: CheckInInput) {
    return this.checkIn(await locateById(this.store, id), id, null, 'id', input);
  }

  /**
   * The state machine entry_allowed -> checked_in, in one atomic update of the reservation that
   * also appends the audit entry (and, on success, the check-in list): N simultaneous check-ins of
   * one ticket give exactly one 201 on any number of processes sharing the store. Answers (pretix):
   * 201 ok; 409 already_redeemed with the first check-in's time, scanner and gate; 409 canceled;
   * 404 invalid. A retry carrying the nonce of the successful check-in gets that success again
   * (201, replayed: true) instead of already_redeemed.
   */
  private async checkIn(at: Located | undefined, id: string | undefined, code: string | null, via: 'code' | 'id', input: CheckInInput) {
    const outcome = await this.decide(at, id, code, via, input);
    switch (outcome.kind) {
      case 'invalid': {
        const what = via === 'code' ? `code ${code}` : `reservation ${id}`;
        throw notFound('invalid', `no ticket with ${what}`, via === 'code' ? { code } : { reservation_id: id });
      }
      case 'device_refused':
        throw new AppError('forbidden', 'device_not_on_list', `this scanner device may not scan on list ${outcome.list.id}`, { list_id: outcome.list.id });
      case 'product':
        throw conflict('product', outcome.list ? `ticket ${outcome.r.code} is not admitted by list ${outcome.list.name}` : `ticket ${outcome.r.code}'s show has no list ${input.list_id}`, {
          list_id: outcome.list?.id ?? input.list_id ?? null,
          ticket: { ...brief(outcome.r), holder: outcome.r.holder },
        });
      case 'invalid_time':
        throw conflict('invalid_time', `list ${outcome.list.name} admits only from ${outcome.list.valid_from ?? '-'} until ${outcome.list.valid_until ?? '-'}`, {
          list_id: outcome.list.id,
          valid_from: outcome.list.valid_from,
          valid_until: outcome.list.valid_until,
          ticket: { ...brief(outcome.r), holder: outcome.r.holder },
        });
      case 'not_inside':
        throw conflict('not_inside', `ticket ${outcome.r.code} is not inside on list ${outcome.list.name}: no exit without an entry`, {
          list_id: outcome.list.id,
          ticket: { ...brief(outcome.r), holder: outcome.r.holder },
        });
      case 'canceled':
        throw conflict('canceled', `ticket ${outcome.r.code} is cancelled`, {
          cancelled_at: outcome.r.cancelled_at,
          ticket: { ...brief(outcome.r), holder: outcome.r.holder },
        });
      case 'already_redeemed': {
        const first = firstOn(doorOf(outcome.r)[outcome.list.id]) ?? outcome.r.checkin!;
        throw conflict('already_redeemed', `ticket ${outcome.r.code} was already checked in at ${first.at}`, {
          first_checkin: { at: first.at, scanner: first.scanner, gate: first.gate },
          list_id: outcome.list.id,
          ticket: { ...brief(outcome.r), holder: outcome.r.holder },
        });
      }
      case 'ok': {
        const m = outcome.mark;
        return {
          status: 'ok' as const,
          replayed: outcome.replayed,
          ticket: { ...brief(outcome.r), holder: outcome.r.holder },
          checkin: { at: m.at, scanner: m.scanner, gate: m.gate, nonce: m.nonce, id: outcome.scan.id, type: outcome.scan.type, list_id: outcome.list.id },
          list: { id: outcome.list.id, name: outcome.list.name },
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
    const at = await locateByCode(this.store, scan.code);
    const outcome = await this.decide(at, at?.id, scan.code, 'code', { ...input, nonce: scan.id, source: scan.source, list_id: scan.list_id }, scan);
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
    if (!opts.show_id) return newestAcross(this.store, across(K.conflicts), opts.limit, (v) => decodeList(offlineConflicts, [v])[0]);
    const key = (await keysOfShow(this.store, opts.show_id)).showConflicts;
    return decodeList(offlineConflicts, await this.store.range(key, -opts.limit, -1)).reverse();
  }

  /** The one transition behind both check-in routes and offline scans; audits every attempt. */
  private async decide(located: Located | undefined, id: string | undefined, code: string | null, via: 'code' | 'id', input: CheckInInput & { device?: string }, offline?: OfflineScan): Promise<Outcome> {
    const now = this.clock.now();
    // an offline scan counts from when the door scanned it (never later than its arrival)
    const at = offline ? Math.min(Date.parse(offline.scanned_at), now) : now;
    const type: ScanType = input.type ?? 'entry';
    const mark: CheckInMark = {
      at: iso(at),
      scanner: input.scanner ?? DEFAULT_SCANNER,
      gate: input.gate ?? null,
      nonce: input.nonce ?? null,
      source: input.source ?? (via === 'id' ? 'api' : 'manual'),
    };
    const entry = (result: AttemptResult, r?: ReservationRecord, replayed = false, more: Partial<AuditEntry> = {}): AuditEntry => ({
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
      type,
      ...(input.list_id ? { list_id: input.list_id } : {}),
      ...(offline ? { offline: { id: offline.id, scanned_at: offline.scanned_at, received_at: iso(now) } } : {}),
      ...more,
    });
    // a ticket never changes show: its show's layout names every key the update reads and writes
    const k = located?.keys;
    const device = input.device ?? 'unknown';
    const scanKey = offline ? (k ? k.offlineScan(device, offline.id) : NT.offlineScan(device, offline.id)) : undefined;
    /** The offline scan's record, written with its outcome so a re-sent scan is settled once. */
    const settled = (result: OfflineResult): Write[] => (scanKey ? [{ op: 'set', key: scanKey, value: offlineResults.encode(result), ttlMs: OFFLINE_SCAN_TTL_MS }] : []);

    let outcome: Outcome = { kind: 'invalid' };
    if (located && k) {
      const showId = located.showId;
      outcome = await this.store.update([k.reservation(located.id), K.showLists(showId), ...(scanKey ? [scanKey] : [])], ([cur, rawLists, prior]): { writes: Write[]; result: Outcome } => {
        const settledBefore = offlineResults.decode(prior);
        if (settledBefore) return { writes: [], result: { kind: 'settled', result: settledBefore } };
        if (!cur) return { writes: [], result: { kind: 'invalid' } };
        const r = reservations.decode(cur)!;
        const lists = showLists(r.show_id, storedLists(rawLists));
        const list = input.list_id ? lists.find((l) => l.id === input.list_id) : defaultList(lists);
        const audit = (e: AuditEntry): Write[] => [
          { op: 'push', key: k.audit, value: auditEntries.encode(e), cap: AUDIT_CAP },
          { op: 'push', key: k.reservationAudit(r.id), value: auditEntries.encode(e), cap: RESERVATION_AUDIT_CAP },
          { op: 'push', key: k.showAudit, value: auditEntries.encode(e), cap: SHOW_AUDIT_CAP },
        ];
        // a list of another show (or none such): the ticket is not on it
        if (!list) return { writes: audit(entry('product', r)), result: { kind: 'product', r, list: null } };
        if (input.device_id && list.devices.length > 0 && !list.devices.includes(input.device_id)) {
          return { writes: [], result: { kind: 'device_refused', list } };
        }
        const onList = { list_id: list.id };
        const door = doorOf(r);
        const replay = replayOf(r, list.id, type, mark.nonce);
        const verdict = r.status === 'cancelled' ? 'canceled' : type === 'entry' ? entryVerdict(list, r, at) : !admits(list, r) ? 'product' : insideOn(door[list.id]) ? 'ok' : 'not_inside';
        if (offline && verdict !== 'ok' && verdict !== 'not_inside' && !replay) {
          // admitted at an offline door although the list's rules refuse it: a conflict for staff
          const reason = verdict;
          const stood = firstOn(door[list.id]) ?? (verdict === 'already_redeemed' ? r.checkin : null);
          const first = stood ? { at: stood.at, scanner: stood.scanner, gate: stood.gate, offline: stood.offline === true } : null;
          const c: OfflineConflict = {
            at: mark.at, received_at: iso(now), reason, code: r.code, reservation_id: r.id, show_id: r.show_id, seat: r.seat,
            scanner: mark.scanner, gate: mark.gate, offline_id: offline.id, client: input.client ?? null,
            first_checkin: first, cancelled_at: r.cancelled_at, list_id: list.id,
          };
          const result: OfflineResult = { id: offline.id, result: 'conflict', replayed: false, ticket: brief(r), conflict: c };
          return {
            writes: [
              ...audit(entry('conflict', r, false, { ...onList, conflict: { reason, first_checkin: first } })),
              { op: 'push', key: k.conflicts, value: offlineConflicts.encode(c), cap: CONFLICTS_CAP },
              { op: 'push', key: k.showConflicts, value: offlineConflicts.encode(c), cap: SHOW_CONFLICTS_CAP },
              ...settled(result),
            ],
            result: { kind: 'conflict', r, conflict: c },
          };
        }
        if (replay) {
          const again: Write[] = offline ? settled({ id: offline.id, result: 'ok', replayed: false, ticket: brief(r), checkin: { at: replay.at, scanner: replay.scanner, gate: replay.gate } }) : [];
          return { writes: [...audit(entry('ok', r, true, { ...onList, scan_id: replay.id })), ...again], result: { kind: 'ok', r, mark: replay, scan: replay, list, replayed: true } };
        }
        if (verdict !== 'ok') {
          return { writes: audit(entry(verdict, r, false, onList)), result: { kind: verdict, r, list } };
        }
        const scan: DoorScan = { ...mark, ...(offline ? { offline: true } : {}), id: randomId('sc_'), type, list_id: list.id };
        const after = withScan(door, scan);
        const next = withDoor(r, after);
        const delta = doorDelta(door, after);
        const event = { ...checkInEvent(next, mark), list_id: list.id, scan_id: scan.id };
        const done: OfflineResult | undefined = offline && { id: offline.id, result: 'ok', replayed: false, ticket: brief(next), checkin: { at: mark.at, scanner: mark.scanner, gate: mark.gate } };
        return {
          writes: [
            { op: 'set', key: k.reservation(r.id), value: reservations.encode(next) },
            ...audit(entry('ok', next, false, { ...onList, scan_id: scan.id })),
            ...(type === 'entry' ? [{ op: 'push', key: k.checkins, value: checkInEvents.encode(event), cap: CHECKINS_CAP } as Write] : []),
            ...counterWrites(k, r.show_id, delta),
            ...(done ? settled(done) : []),
          ],
          result: { kind: 'ok', r: next, mark, scan, list, replayed: false },
        };
      });
    }

    if (outcome.kind === 'invalid') {
      // no ticket, so no show: the attempt goes to the audit list of attempts without one
      if (!scanKey) await this.store.push(NT.audit, auditEntries.encode(entry('invalid')), AUDIT_CAP);
      else {
        // an unknown code sent as an offline scan: audited once, however often it is re-sent
        const result: OfflineResult = { id: offline!.id, result: 'invalid', replayed: false };
        outcome = await this.store.update([scanKey], ([prior]): { writes: Write[]; result: Outcome } => {
          const settledBefore = offlineResults.decode(prior);
          return settledBefore
            ? { writes: [], result: { kind: 'settled', result: settledBefore } }
            : { writes: [{ op: 'push', key: NT.audit, value: auditEntries.encode(entry('invalid')), cap: AUDIT_CAP }, ...settled(result)], result: { kind: 'invalid' } };
        });
      }
    }
    if (outcome.kind === 'ok' && !outcome.replayed) {
      const { r, mark: m, scan, list } = outcome;
      if (scan.type === 'entry') {
        const event = { ...checkInEvent(r, m), list_id: list.id, scan_id: scan.id };
        this.bus.emit(CHECKIN_TOPIC, checkInEvents.encode(event));
        this.bus.emit(ticketTopic(r.code), checkInEvents.encode(event));
      }
      this.bus.emit(doorTopic(r.show_id), doorEvent(r, scan, list.id));
    }
    return outcome;
  }

  /**
   * Undoes one successful scan (pretix's reverted check-in), by staff with a reason: the scan stays
   * in the ticket's history marked reverted, a new audit entry (result `reverted`) says who and why,
   * and the door counters move back, in one atomic update of the ticket. Refused, with nothing
   * changed: an unknown ticket or scan (404), a scan of another list, an undo of an undo, a scan
   * already undone (409).
   */
  async revert(input: { show_id: string; list_id: string; reservation_id: string; scan_id: string; reason: string; by: string; client?: string | undefined }) {
    const now = iso(this.clock.now());
    const undoId = randomId('rv_');
    const located = await locateById(this.store, input.reservation_id);
    const k = located?.keys;
    const done = await this.store.update(k && located.showId === input.show_id ? [k.reservation(input.reservation_id), K.showLists(input.show_id)] : [], ([cur, rawLists]) => {
      const r = reservations.decode(cur);
      if (!k) throw notFound('invalid', `no ticket ${input.reservation_id} in show ${input.show_id}`, { reservation_id: input.reservation_id });
      if (!r || r.show_id !== input.show_id) throw notFound('invalid', `no ticket ${input.reservation_id} in show ${input.show_id}`, { reservation_id: input.reservation_id });
      const list = showLists(r.show_id, storedLists(rawLists)).find((l) => l.id === input.list_id);
      if (!list) throw notFound('list_not_found', `no check-in list ${input.list_id} in show ${input.show_id}`, { list_id: input.list_id });
      const found = findScan(r, input.scan_id);
      if (!found) throw notFound('scan_not_found', `ticket ${r.code} has no scan ${input.scan_id}`, { scan_id: input.scan_id });
      if (found.asUndo) throw conflict('not_revertible', `${input.scan_id} is an undo; an undo cannot be undone (scan the ticket again)`, { scan_id: input.scan_id });
      if (found.scan.list_id !== list.id) {
        throw conflict('wrong_list', `scan ${input.scan_id} was made on list ${found.scan.list_id}, not ${list.id}`, { scan_id: input.scan_id, list_id: found.scan.list_id });
      }
      if (found.scan.reverted) throw conflict('already_reverted', `scan ${input.scan_id} was already undone at ${found.scan.reverted.at}`, { reverted: found.scan.reverted });
      const door = doorOf(r);
      const reverted = { id: undoId, at: now, by: input.by, reason: input.reason };
      const after = withRevert(door, list.id, input.scan_id, reverted);
      const next = withDoor(r, after);
      const e: AuditEntry = {
        at: now, result: 'reverted', code: r.code, reservation_id: r.id, scanner: input.by, gate: null, source: 'manual', nonce: null,
        client: input.client ?? null, via: 'id', replayed: false, type: 'revert', list_id: list.id, scan_id: undoId, reverts: input.scan_id, reason: input.reason,
      };
      return {
        writes: [
          { op: 'set', key: k.reservation(r.id), value: reservations.encode(next) },
          { op: 'push', key: k.audit, value: auditEntries.encode(e), cap: AUDIT_CAP },
          { op: 'push', key: k.reservationAudit(r.id), value: auditEntries.encode(e), cap: RESERVATION_AUDIT_CAP },
          { op: 'push', key: k.showAudit, value: auditEntries.encode(e), cap: SHOW_AUDIT_CAP },
          ...counterWrites(k, r.show_id, doorDelta(door, after)),
        ] as Write[],
        result: { r: next, scan: { ...found.scan, reverted }, list },
      };
    });
    this.bus.emit(doorTopic(done.r.show_id), doorEvent(done.r, done.scan, done.list.id));
    // the holder's page: what the ticket is now (checked in still, or entry allowed again)
    this.bus.emit(ticketTopic(done.r.code), { type: 'checkin_reverted', status: done.r.status, checked_in_at: done.r.checkin?.at ?? null, at: now });
    return {
      status: 'reverted' as const,
      undo: { id: undoId, at: now, by: input.by, reason: input.reason, reverts: input.scan_id },
      scan: scanView(done.scan),
      ticket: { ...brief(done.r), holder: done.r.holder },
    };
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
    // no ticket looked up, so no show: the audit list of attempts without one
    await this.store.push(NT.audit, auditEntries.encode(e), AUDIT_CAP);
  }

  /** Successful check-ins, newest first. */
  async recentCheckIns(limit: number): Promise<CheckInEvent[]> {
    return newestAcross(this.store, across(K.checkins), limit, (v) => checkInEvents.decode(v));
  }

  /** Audit entries (every attempt), newest first; of one reservation, or of one show's tickets, when given. */
  async auditLog(opts: { limit: number; reservation_id?: string | undefined; show_id?: string | undefined }): Promise<AuditEntry[]> {
    const decode = (v: Json) => auditEntries.decode(v);
    let key: string;
    if (opts.reservation_id) key = (await locateById(this.store, opts.reservation_id))?.keys.reservationAudit(opts.reservation_id) ?? K.reservationAudit(opts.reservation_id);
    else if (opts.show_id) key = (await keysOfShow(this.store, opts.show_id)).showAudit;
    else return newestAcross(this.store, across(K.audit), opts.limit, decode);
    return (await this.store.range(key, -opts.limit, -1)).map((v) => decode(v)!).reverse();
  }
}
